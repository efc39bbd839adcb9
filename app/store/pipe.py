"""Auto-pipelining: the small exchanges of one turn of the event loop share one write.

Under load a worker has tens of queries waiting on Redis at once, most of them one
EVALSHA (GET /similar/{id}) or a few commands. On a connection each, every exchange
costs the worker a send and a wake-up and Redis a read and a write. A Pipe queues
the exchanges started in one turn of the loop, writes them together on its one
connection at the end of the turn, and a reader task hands the replies back in the
order sent (Redis answers a connection's commands in order).

Large exchanges (an ingest's thousands of band commands) do not go through it: on a
shared connection they would hold up every query behind them, where Redis serves
separate connections in turns.

A waiter cancelled or timed out leaves its place in the queue and its replies are
dropped when they come, so the others keep their own time limits. A connection that
looks dead (nothing came on it for twice a timed-out exchange's budget, or too many
exchanges wait on it) and a failed one (a write or read error, a desync) are dropped,
failing every waiter with a connection error; the next exchange connects again.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError

from app.store import resp

# What goes through a pipe: exchanges of at most this many replies and payload bytes.
MAX_REPLIES = 32
MAX_BYTES = 16 * 1024
# When a timed-out exchange drops the connection: nothing came on it for this many times
# its budget, or more exchanges than this wait on it (Redis stopped, the socket alive).
STALL_FACTOR = 2.0
MAX_WAITING = 4096


# Disconnects of dropped connections still running.
_CLOSING: set[asyncio.Task[None]] = set()


async def _disconnect(conn: Any) -> None:
    try:
        await conn.disconnect()
    except Exception:  # a socket already gone: nothing left to close
        return


class NotPipelinable(Exception):
    """The connection's replies cannot be read as they come (redis-py without hiredis):
    the caller sends on a connection of its own instead."""


class _Call:
    __slots__ = ("count", "future", "replies")

    def __init__(self, count: int, future: asyncio.Future[list[Any]]) -> None:
        self.count = count
        self.replies: list[Any] = []
        self.future = future


class Pipe:
    """One connection that carries many exchanges at once (see the module's docstring).

    connect gives a connected redis-py connection (the lane's); a pipe disconnects
    the connection it drops, and never gives one back."""

    def __init__(self, connect: Callable[[], Awaitable[Any]]) -> None:
        self._connect = connect
        self._conn: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock: asyncio.Lock | None = None
        self._out: list[bytes] = []
        self._waiting: deque[_Call] = deque()
        self._scheduled = False
        self._reader: asyncio.Task[None] | None = None
        # When a reply last came, or the queue last started from empty (loop time).
        self._progress_at = 0.0
        self.usable = True  # False once a connection turned out not bulk_readable
        self._closed = False

    @staticmethod
    def fits(payload: bytes, count: int) -> bool:
        """Whether an exchange is small enough to share the pipe."""
        return count <= MAX_REPLIES and len(payload) <= MAX_BYTES

    async def exchange(self, payload: bytes, count: int) -> list[Any]:
        """Send payload (count commands) with whatever else this turn sends and return
        its count replies, error replies as exception objects."""
        loop = asyncio.get_running_loop()
        conn = self._conn if self._loop is loop else None
        if conn is None:
            conn = await self._connected(loop)
        future: asyncio.Future[list[Any]] = loop.create_future()
        if not self._waiting:
            self._progress_at = loop.time()
        self._waiting.append(_Call(count, future))
        self._out.append(payload)
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        return await future

    async def _connected(self, loop: asyncio.AbstractEventLoop) -> Any:
        if self._loop is not loop:
            # A new loop (tests): what the old one held belongs to it and is left as is.
            self._conn, self._reader, self._waiting, self._out = None, None, deque(), []
            self._scheduled = False
            self._loop, self._lock = loop, asyncio.Lock()
        assert self._lock is not None
        async with self._lock:
            if self._conn is None:
                conn = await self._connect()
                if self._closed:  # closed while this connected: nothing may be left open
                    await _disconnect(conn)
                    raise RedisConnectionError("the store is closed")
                if not resp.bulk_readable(conn):
                    self.usable = False
                    await conn.disconnect()
                    raise NotPipelinable
                self._conn = conn
                self._reader = loop.create_task(self._read(conn))
            return self._conn

    def _flush(self) -> None:
        # On the connection of now: one dropped since this was scheduled took its payloads
        # and waiters with it (_drop clears both), and what was queued after a reconnect
        # goes on the new one, with the waiters queued for it.
        self._scheduled = False
        out, self._out = self._out, []
        conn = self._conn
        if conn is None or not out:
            return
        try:
            resp.write_now(conn, b"".join(out))
        except Exception as exc:
            self._drop(exc)

    async def _read(self, conn: Any) -> None:
        try:
            while True:
                self._deliver(await resp.some_replies(conn))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if conn is self._conn:
                self._drop(exc)

    def _deliver(self, replies: list[Any]) -> None:
        waiting = self._waiting
        self._progress_at = asyncio.get_running_loop().time()
        for reply in replies:
            if not waiting or isinstance(reply, RedisConnectionError):
                raise (
                    reply
                    if isinstance(reply, Exception)
                    else RedisConnectionError("Redis sent a reply nothing waited for")
                )
            call = waiting[0]
            call.replies.append(reply)
            if len(call.replies) == call.count:
                waiting.popleft()
                if not call.future.done():  # else cancelled or timed out: dropped
                    call.future.set_result(call.replies)

    def timed_out(self, budget: float) -> None:
        """An exchange of budget seconds gave up (its timer fired, or its caller was
        cancelled first: a request deadline shorter than Redis's): drop the connection,
        failing every other waiter, only when it looks dead (see the module's docstring).
        Otherwise its late replies are dropped in turn and the others keep their own
        time limits."""
        if self._conn is None or not self._waiting:
            return
        quiet = asyncio.get_running_loop().time() - self._progress_at
        if quiet >= STALL_FACTOR * budget or len(self._waiting) > MAX_WAITING:
            self._drop(RedisConnectionError("Redis did not answer in time"))

    def _drop(self, exc: BaseException) -> asyncio.Task[None] | None:
        conn, self._conn = self._conn, None
        reader, self._reader = self._reader, None
        waiting, self._waiting = self._waiting, deque()
        self._out = []
        why = str(exc) or type(exc).__name__
        for call in waiting:
            if not call.future.done():  # each its own error: raised in its own task
                call.future.set_exception(RedisConnectionError(why))
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
        if conn is not None:
            # Not awaited here (a write error comes in a plain callback); held until done,
            # so it is not collected midway, and its own failure is the socket's end anyway.
            closing = asyncio.get_running_loop().create_task(_disconnect(conn))
            _CLOSING.add(closing)
            closing.add_done_callback(_CLOSING.discard)
            return closing
        return None

    async def close(self) -> None:
        """Fail what waits and disconnect (on the loop the connection belongs to); an
        exchange connecting meanwhile disconnects again."""
        self._closed = True
        if self._loop is asyncio.get_running_loop():
            closing = self._drop(RedisConnectionError("the store is closed"))
            if closing is not None:
                await closing
