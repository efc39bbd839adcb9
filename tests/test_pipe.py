"""app.store.pipe: small exchanges of one turn share a write and each gets its own replies,
on a real redis-server, through failures, timeouts and cancellations."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis._parsers import _AsyncRESP2Parser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from app.store import pipe as pipe_module
from app.store import resp
from app.store.errors import StoreUnavailableError
from app.store.pipe import Pipe
from app.store.resp import encode
from app.store.single import SingleTransport


def _connector(client: aioredis.Redis) -> Any:
    async def connect() -> Any:
        conn = client.connection_pool.make_connection()
        await conn.connect()
        return conn

    return connect


def _keys(n: int) -> list[bytes]:
    head = uuid.uuid4().hex.encode()
    return [b"test-pipe-%s-%d" % (head, i) for i in range(n)]


def test_exchanges_of_one_turn_go_in_one_write_and_get_their_own_replies(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fifty exchanges started together are written once, and each gets the replies to
    its own commands (a SET then a GET of its own key), an error reply only its own."""
    writes: list[int] = []
    write_now = resp.write_now

    def counted(conn: Any, payload: bytes) -> None:
        writes.append(len(payload))
        write_now(conn, payload)

    monkeypatch.setattr(resp, "write_now", counted)

    async def run() -> list[list[Any]]:
        client = aioredis.Redis.from_url(redis_url)
        p = Pipe(_connector(client))
        keys = _keys(50)
        try:
            await p.exchange(encode(b"PING"), 1)  # connected, as a serving worker's is
            writes.clear()
            calls = []
            for i, key in enumerate(keys):
                cmds = [encode(b"SET", key, b"v%d" % i), encode(b"GET", key)]
                if i == 7:  # a wrong-type error for this one alone
                    cmds.append(encode(b"LPUSH", key, b"x"))
                calls.append(p.exchange(b"".join(cmds), len(cmds)))
            return await asyncio.gather(*calls)
        finally:
            await p.close()
            await client.delete(*keys)
            await client.aclose()

    replies = asyncio.run(asyncio.wait_for(run(), 30))
    assert len(writes) == 1
    for i, got in enumerate(replies):
        assert got[:2] == [b"OK", b"v%d" % i]
        if i == 7:
            assert isinstance(got[2], ResponseError)
        else:
            assert len(got) == 2


def test_a_cancelled_exchange_leaves_the_next_ones_in_step(redis_url: str) -> None:
    """An exchange cancelled before its replies came has them dropped: the exchanges after
    it, on the same connection, get their own."""

    async def run() -> tuple[list[Any], list[Any]]:
        client = aioredis.Redis.from_url(redis_url)
        p = Pipe(_connector(client))
        a, b = _keys(2)
        try:
            await client.set(a, b"a")
            await client.set(b, b"b")
            # The first waits for Redis in a script (DEBUG SLEEP is refused in scripts on
            # some builds): a busy loop of a few ms; it is cancelled meanwhile.
            slow = asyncio.ensure_future(
                p.exchange(
                    encode(
                        b"EVAL", b"local t = 0 for i = 1, 3000000 do t = t + i end return t", b"0"
                    ),
                    1,
                )
            )
            await asyncio.sleep(0)
            await asyncio.sleep(0.001)
            slow.cancel()
            got_a = await p.exchange(encode(b"GET", a), 1)
            got_b = await p.exchange(encode(b"GET", b) + encode(b"GET", a), 2)
            return got_a, got_b
        finally:
            await p.close()
            await client.delete(a, b)
            await client.aclose()

    got_a, got_b = asyncio.run(asyncio.wait_for(run(), 30))
    assert got_a == [b"a"]
    assert got_b == [b"b", b"a"]


def test_a_drop_with_a_write_pending_then_a_reconnect_loses_no_payload(redis_url: str) -> None:
    """A drop (another exchange timed out on a dead connection) while this turn's write is
    still pending, then
    a reconnect that needs no wait (an idle connection ready): the exchange queued after
    it is written on the new connection and gets its own reply, and so do later ones
    (found by review: the pending write was dropped, and every later reply went to the
    exchange before it)."""

    async def run() -> tuple[Any, Any, Any]:
        client = aioredis.Redis.from_url(redis_url)
        a, b, c = _keys(3)
        await client.mset({a: b"A", b: b"B", c: b"C"})
        ready = []
        for _ in range(3):
            conn = client.connection_pool.make_connection()
            await conn.connect()
            ready.append(conn)

        async def connect() -> Any:
            return ready.pop()

        p = Pipe(connect)
        try:
            await p.exchange(encode(b"PING"), 1)

            async def first() -> Any:
                try:
                    return await p.exchange(encode(b"GET", a), 1)
                except RedisConnectionError as exc:
                    return exc

            async def drop() -> None:
                p.timed_out(0.0)  # as a connection quiet for longer than any budget

            tasks = [asyncio.ensure_future(f()) for f in (first, drop)]
            tasks.append(asyncio.ensure_future(p.exchange(encode(b"GET", b), 1)))
            got_a = await tasks[0]
            got_b = await asyncio.wait_for(tasks[2], 2)
            got_c = await asyncio.wait_for(p.exchange(encode(b"GET", c), 1), 2)
            return got_a, got_b, got_c
        finally:
            await p.close()
            await client.delete(a, b, c)
            for conn in ready:
                await conn.disconnect()
            await client.aclose()

    got_a, got_b, got_c = asyncio.run(asyncio.wait_for(run(), 30))
    assert isinstance(got_a, RedisConnectionError)
    assert (got_b, got_c) == ([b"B"], [b"C"])


def test_a_killed_connection_fails_its_waiters_and_the_next_exchange_reconnects(
    redis_url: str,
) -> None:
    """When Redis closes the pipe's connection, what waited on it fails with a connection
    error (never another exchange's replies), and the next exchange works on a new one."""

    async def run() -> tuple[BaseException | list[Any], list[Any]]:
        client = aioredis.Redis.from_url(redis_url)
        p = Pipe(_connector(client))
        (key,) = _keys(1)
        try:
            await client.set(key, b"k")
            name = b"pipe-" + uuid.uuid4().hex.encode()
            await p.exchange(encode(b"CLIENT", b"SETNAME", name), 1)
            # A blocking pop that never gets a value keeps a waiter on the connection.
            waiting = asyncio.ensure_future(p.exchange(encode(b"BLPOP", key + b"-list", b"0"), 1))
            await asyncio.sleep(0.05)
            await client.execute_command(
                "CLIENT", "KILL", "SKIPME", "yes", "ID", await _id(client, name)
            )
            try:
                failed: BaseException | list[Any] = await asyncio.wait_for(waiting, 5)
            except RedisConnectionError as exc:
                failed = exc
            after = await p.exchange(encode(b"GET", key), 1)
            return failed, after
        finally:
            await p.close()
            await client.delete(key)
            await client.aclose()

    failed, after = asyncio.run(asyncio.wait_for(run(), 30))
    assert isinstance(failed, RedisConnectionError)
    assert after == [b"k"]


async def _id(client: aioredis.Redis, name: bytes) -> str:
    for line in (await client.execute_command("CLIENT", "LIST")).decode().splitlines():
        fields = dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
        if fields.get("name") == name.decode():
            return fields["id"]
    raise AssertionError(f"no client named {name!r}")


def test_a_timed_out_exchange_resets_the_pipe_and_later_ones_get_their_own_replies(
    redis_url: str,
) -> None:
    """A transport exchange that Redis does not answer in time is a 503 (unavailable);
    the replies that come late never reach the exchanges after it."""

    async def run() -> tuple[BaseException | None, list[Any]]:
        transport = SingleTransport.connect(redis_url, 0.2, 0, 1.0)
        (key,) = _keys(1)
        try:
            await transport.commands([(b"SET", key, b"late")])
            # Redis holds every client's commands for 0.6 s: this exchange's replies come
            # after its 0.2 s, on the connection the later exchanges would share.
            other = aioredis.Redis.from_url(redis_url)
            await other.execute_command("CLIENT", "PAUSE", "600")
            await other.aclose()
            error = None
            try:
                await transport.commands([(b"ECHO", b"late")])
            except StoreUnavailableError as exc:
                error = exc
            await asyncio.sleep(0.6)
            transport.timeout = 5.0  # what follows checks replies, not speed
            after = await transport.commands([(b"GET", key), (b"ECHO", b"mine")])
            return error, after
        finally:
            await transport.commands([(b"DEL", key)])
            await transport.close()

    error, after = asyncio.run(asyncio.wait_for(run(), 30))
    assert isinstance(error, StoreUnavailableError)
    assert after == [b"late", b"mine"]


def test_large_exchanges_do_not_share_the_pipe() -> None:
    """An exchange past the pipe's bounds (an ingest's band commands) goes on a connection
    of its own, so it does not hold up the queries behind it."""
    one = encode(b"HSETNX", b"k", b"f", b"v")
    assert Pipe.fits(one * 3, 3)
    assert not Pipe.fits(one * (pipe_module.MAX_REPLIES + 1), pipe_module.MAX_REPLIES + 1)
    assert not Pipe.fits(encode(b"SET", b"k", b"x" * pipe_module.MAX_BYTES), 1)


def test_without_hiredis_the_transport_sends_on_connections_of_its_own(redis_url: str) -> None:
    """redis-py's own parser cannot be read reply by reply as data comes: the pipe steps
    aside and every exchange still gets its replies."""

    async def run() -> tuple[list[Any], bool]:
        transport = SingleTransport.connect(redis_url, 2.0, 0, 1.0)
        transport._bulk.connection_pool.connection_kwargs["parser_class"] = _AsyncRESP2Parser
        (key,) = _keys(1)
        try:
            got = await asyncio.gather(
                *(transport.commands([(b"ECHO", b"%d" % i)]) for i in range(10))
            )
            return [g[0] for g in got], transport._lane.pipe.usable
        finally:
            await transport.commands([(b"DEL", key)])
            await transport.close()

    got, usable = asyncio.run(asyncio.wait_for(run(), 30))
    assert got == [b"%d" % i for i in range(10)]
    assert usable is False


def test_one_timeout_leaves_the_others_their_own_time(redis_url: str) -> None:
    """Redis holds every command for 3 s: the exchange sent first gives up at its 2 s,
    and one sent 1.6 s later, still inside its own 2 s, gets its reply when Redis goes
    on (the first's late reply is dropped in turn), as on connections of their own.
    (Four times the service's 0.5 s, so a loaded machine's stall fits in the margin.)"""

    async def run() -> tuple[Any, Any]:
        transport = SingleTransport.connect(redis_url, 2.0, 0, 1.0)
        other = aioredis.Redis.from_url(redis_url)
        try:
            await transport.commands([(b"PING",)])
            await other.execute_command("CLIENT", "PAUSE", "3000")

            async def first() -> Any:
                try:
                    return await transport.commands([(b"ECHO", b"first")])
                except StoreUnavailableError as exc:
                    return exc

            async def second() -> Any:
                await asyncio.sleep(1.6)
                return await transport.commands([(b"ECHO", b"second")])

            return tuple(await asyncio.gather(first(), second()))  # type: ignore[return-value]
        finally:
            await other.aclose()
            await transport.close()

    got_first, got_second = asyncio.run(asyncio.wait_for(run(), 30))
    assert isinstance(got_first, StoreUnavailableError)
    assert got_second == [b"second"]


def test_a_connection_quiet_past_twice_the_budget_is_dropped(redis_url: str) -> None:
    """Redis holds every command for 1.5 s, far past the 0.2 s budget: the exchanges sent
    meanwhile all fail (503), the connection is dropped once nothing has come on it for
    twice the budget (so waiters do not pile up on it), and once Redis goes on a new
    connection answers."""

    async def run() -> tuple[list[Any], bool, list[Any]]:
        transport = SingleTransport.connect(redis_url, 0.2, 0, 1.0)
        other = aioredis.Redis.from_url(redis_url)
        try:
            await transport.commands([(b"PING",)])
            before = transport._lane.pipe._conn
            await other.execute_command("CLIENT", "PAUSE", "1500")

            async def one(i: int) -> Any:
                await asyncio.sleep(0.05 * i)
                try:
                    return await transport.commands([(b"ECHO", b"%d" % i)])
                except StoreUnavailableError as exc:
                    return exc

            during = await asyncio.gather(*(one(i) for i in range(12)))
            dropped = transport._lane.pipe._conn is not before
            await asyncio.sleep(1.6)
            transport.timeout = 5.0  # what follows checks replies, not speed
            after = await transport.commands([(b"ECHO", b"after")])
            return during, dropped, after
        finally:
            await other.aclose()
            await transport.close()

    during, dropped, after = asyncio.run(asyncio.wait_for(run(), 30))
    assert all(isinstance(d, StoreUnavailableError) for d in during), during
    assert dropped
    assert after == [b"after"]


class _Blackhole:
    """A TCP proxy to Redis's unix socket that, once swallow() is called, silently drops
    everything on the connections open then (a peer gone without a FIN); new ones work."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.dead: set[asyncio.StreamWriter] = set()
        self.open: set[asyncio.StreamWriter] = set()
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"redis://127.0.0.1:{port}/0"

    def swallow(self) -> None:
        self.dead |= self.open

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.socket_path)
        self.open.add(writer)

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                if writer not in self.dead:
                    dst.write(data)

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))

    async def close(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.open:
            writer.close()


def test_a_silent_connection_is_dropped_when_request_deadlines_come_first(
    redis_url: str,
) -> None:
    """When every exchange is cancelled by a request deadline shorter than the Redis
    timeout, a connection on which nothing comes any more is still dropped once it has
    been quiet for twice the budget, and the exchanges after it are answered."""

    async def run() -> list[bool]:
        proxy = _Blackhole(redis_url.removeprefix("unix://"))
        transport = SingleTransport.connect(await proxy.start(), 0.3, 0, 1.0)
        answered = []
        try:
            assert await transport.commands([(b"ECHO", b"up")]) == [b"up"]
            proxy.swallow()
            for _ in range(30):
                try:
                    async with asyncio.timeout(0.1):  # the request's deadline
                        answered.append(await transport.commands([(b"ECHO", b"x")]) == [b"x"])
                except TimeoutError:
                    answered.append(False)
        finally:
            await transport.close()
            await proxy.close()
        return answered

    answered = asyncio.run(run())
    assert not answered[0] and any(answered), answered
    # Answered again after about twice the budget (~0.6 s, six exchanges), and from then on.
    first = answered.index(True)
    assert all(answered[first:]), answered


def test_a_close_while_an_exchange_connects_leaves_no_connection(redis_url: str) -> None:
    """An exchange still connecting when its transport is closed (Redis busy for a while)
    fails instead of opening a connection and a reader nothing will close."""

    async def run() -> tuple[BaseException | None, Any, Any]:
        transport = SingleTransport.connect(redis_url, 5.0, 0, 1.0)
        other = aioredis.Redis.from_url(redis_url)
        # Asleep far longer than the steps below take, however loaded the machine.
        sleeping = asyncio.create_task(other.execute_command("DEBUG", "SLEEP", "2"))
        await asyncio.sleep(0.05)  # Redis is asleep: the exchange's handshake waits
        exchange = asyncio.create_task(transport.commands([(b"ECHO", b"late")]))
        await asyncio.sleep(0.05)
        await transport.close()
        error = None
        try:
            await exchange
        except StoreUnavailableError as exc:
            error = exc
        await sleeping
        await other.aclose()
        lane = transport._lane  # type: ignore[attr-defined]
        return error, lane.pipe._conn, lane.pipe._reader

    error, conn, reader = asyncio.run(run())
    assert error is not None and conn is None and reader is None
