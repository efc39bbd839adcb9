"""The transport to one Redis server (redis://, rediss://, unix:// URLs)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from app.core import metrics
from app.core.deadlines import deadline_in
from app.store import reads
from app.store.errors import StoreError, StoreUnavailableError, translate
from app.store.pipe import NotPipelinable, Pipe
from app.store.replicas import judge_replica, master_of
from app.store.resp import Batch, Command, Eval, encode, roundtrip
from app.store.scripts import Script
from app.store.transport import SECONDS_PER_COMMAND, Transport, client_options

log = logging.getLogger("neardup")

_EXCHANGE_SECONDS = metrics.REDIS_SECONDS.labels("pipeline")
# A replica whose exchange failed gets no reads for this long (the master takes them).
REPLICA_DOWN_S = 5.0
# How often each replica is judged (app.store.replicas: in the background, while reads
# go to replicas).
ROLE_CHECK_S = 5.0


class _Lane:
    """The connections of the packed exchanges: a stack of idle ones.

    Checked out like redis-py's pool does it (connect if not connected; a
    closed or dirty socket, say after Redis restarted, is reconnected), but
    without the pool's lock and observability events, which cost more than the
    rest of an exchange's Python, a few times a query. The pool only makes the
    connections, so they carry its URL, credentials and TLS settings.
    """

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._idle: list[Any] = []
        # The small exchanges' shared connection (made by get, never put back).
        self.pipe = Pipe(self.get)

    async def get(self) -> Any:
        conn = self._idle.pop() if self._idle else self._pool.make_connection()
        try:
            if not conn.is_connected:
                await conn.connect()
            elif await conn.can_read():  # closed by the server, or replies left unread
                await conn.disconnect()
                await conn.connect()
        except BaseException:
            await conn.disconnect()
            raise
        return conn

    def put(self, conn: Any) -> None:
        self._idle.append(conn)

    async def close(self) -> None:
        await self.pipe.close()
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.disconnect()


class SingleTransport(Transport):
    """Every batch packed into one write on one connection, its replies read at once.

    With replicas (NEARDUP_REPLICA_URLS and NEARDUP_READ_FROM_REPLICAS), a read
    that app.store.reads allows goes to the master or a replica, whichever has
    been sent the fewest query commands; a replica that fails a read, or is not a
    replica connected to its master, is left out for a while and the master answers.
    """

    cluster = False

    def __init__(
        self,
        client: aioredis.Redis,
        bulk: aioredis.Redis,
        *,
        timeout: float,
        min_replicas: int = 0,
        replica_timeout: float = 1.0,
        replicas: Sequence[aioredis.Redis] = (),
    ) -> None:
        super().__init__(
            client, timeout=timeout, min_replicas=min_replicas, replica_timeout=replica_timeout
        )
        # The same server without a per-reply socket timeout, for the packed
        # exchanges: one timer bounds a whole exchange instead of one armed per reply.
        self._bulk = bulk
        self._lane = _Lane(bulk.connection_pool)
        self._replicas = list(replicas)
        # Where reads go in turn: the master, then each replica (same options as bulk).
        self._readers = [self._lane, *(_Lane(r.connection_pool) for r in self._replicas)]
        self._sent = [0] * len(self._readers)  # query commands sent to each, so far
        # When each reader may be sent reads again (monotonic s; 0: now): a replica that
        # failed an exchange, or that is not this master's replica in sync (judged every
        # ROLE_CHECK_S in the background), is left out, and the master takes its reads.
        self._down = [0.0] * len(self._readers)
        # As the last check found each (app.store.replicas): a replica is read only once
        # a check found it a replica of this master, in sync.
        self._role_ok = [True] + [False] * len(self._replicas)
        self._why: list[str | None] = [None] * len(self._readers)  # why each is left out
        self._roles_at = 0.0
        self._roles: asyncio.Task[None] | None = None
        # Whether each replica takes EVALSHA_RO (Redis 7+), as its last check found.
        self._scripts_ro: list[bool | None] = [None] * len(self._readers)
        self.replica_reads = 0  # exchanges a replica answered (bench, tests)

    @classmethod
    def connect(
        cls,
        url: str,
        timeout: float,
        min_replicas: int,
        replica_timeout: float,
        replica_urls: Sequence[str] = (),
    ) -> SingleTransport:
        options = client_options(timeout, min_replicas, replica_timeout)
        client = aioredis.Redis.from_url(url, **options)
        bulk = aioredis.Redis.from_url(url, **{**options, "socket_timeout": None})
        replicas = [
            aioredis.Redis.from_url(u, **{**options, "socket_timeout": None}) for u in replica_urls
        ]
        return cls(
            client,
            bulk,
            timeout=timeout,
            min_replicas=min_replicas,
            replica_timeout=replica_timeout,
            replicas=replicas,
        )

    def _reader(self, write: bool, read_only: bool, weight: int) -> _Lane | None:
        """The lane a read of weight commands goes to: a replica's, or None for the
        master's.

        The server that has been sent the fewest query commands so far: not in turn,
        since a query's exchanges come in a fixed order of very different sizes and
        taking turns would send the large ones to the same server every time; nor at
        random, whose shares wander by several percent over a few hundred exchanges.
        """
        if write or not self._replicas or not read_only or not reads.replica_allowed():
            return None
        now = time.monotonic()
        if now - self._roles_at > ROLE_CHECK_S and not self._checking():
            self._roles_at = now
            self._roles = asyncio.get_running_loop().create_task(self._check_roles())
        sent, down, ok = self._sent, self._down, self._role_ok
        for i in range(1, len(sent)):
            if down[i] and down[i] <= now:  # back from being left out
                down[i] = 0.0
                self._level(i)
        usable = (i for i in range(len(sent)) if i == 0 or (ok[i] and down[i] <= now))
        pick = min(usable, key=sent.__getitem__)
        sent[pick] += weight
        return self._readers[pick] if pick else None

    def _checking(self) -> bool:
        """Whether a check of the replicas runs on this loop: one at a time (one waiting
        on stopped replicas may outlast the period); one of a loop gone never ends."""
        roles = self._roles
        return (
            roles is not None
            and not roles.done()
            and roles.get_loop() is asyncio.get_running_loop()
        )

    def _level(self, i: int) -> None:
        """Reader i, back from being left out, starts level with the most-read of the
        others, so it does not take every read until its count catches up."""
        self._sent[i] = max(n for j, n in enumerate(self._sent) if j != i)

    def _left_out(self, lane: _Lane) -> None:
        """No reads to this replica for REPLICA_DOWN_S (then _reader levels it)."""
        self._down[self._readers.index(lane)] = time.monotonic() + REPLICA_DOWN_S

    async def _check_roles(self) -> None:
        """Leave out, until a check finds it well again, each replica that is not a
        replica of this master in sync (app.store.replicas: another master's, promoted,
        detached, resyncing, down); each change is logged with its reason. When the
        master's own INFO cannot be had (away, or refused by an ACL), no replica can be
        judged, so none is read until it can."""
        try:
            async with asyncio.timeout(self.timeout):
                master = await master_of(self.client)
        except Exception as exc:
            why = f"the master's INFO replication, to compare it with, failed ({_said(exc)})"
            for i in range(1, len(self._readers)):
                self._judged(i, why)
            return
        for i, replica in enumerate(self._replicas, 1):
            try:
                verdict = await judge_replica(replica, master, self.min_replicas > 0, self.timeout)
                self._scripts_ro[i] = verdict.read_only_scripts
                self._judged(i, verdict.why)
            except Exception as exc:  # down or refusing: left out as well
                self._judged(i, f"it does not answer ({_said(exc)})")

    def _judged(self, i: int, why: str | None) -> None:
        """Replica i found well (why None) or not, logged when that changed."""
        url = _shown(self._replicas[i - 1])
        if why is None and not self._role_ok[i]:  # back
            self._level(i)
            log.info("replica %s takes reads%s", url, " again" if self._why[i] else "")
        elif why is not None and why != self._why[i]:
            log.warning("replica %s is not read: %s; the master takes its reads", url, why)
        self._role_ok[i], self._why[i] = why is None, why

    async def _on_replica(
        self, lane: _Lane | None, read: Callable[[_Lane | None], Awaitable[list[Any]]]
    ) -> list[Any]:
        """read on lane; if that replica cannot answer, on the master instead, the replica
        left out for REPLICA_DOWN_S."""
        if lane is None:
            return await read(None)
        try:
            return await read(lane)
        except StoreUnavailableError:
            self._left_out(lane)
            return await read(None)

    async def commands(self, commands: Sequence[Command], write: bool = False) -> list[Any]:
        if not commands:
            return []
        parts = [encode(*c) for c in commands]
        read_only = all(c[0] in reads.READ_ONLY for c in commands)
        lane = self._reader(write, read_only, len(commands))
        return await self._on_replica(
            lane, lambda on: self._exchange(parts, len(parts), len(parts), write, on)
        )

    async def send(self, batch: Batch, write: bool = False) -> list[Any]:
        size = batch.size
        if not size:
            return []
        lane = self._reader(write, batch.read_only, size)
        if lane is not None and isinstance(batch, Eval):
            call = batch

            async def scripted(on: _Lane | None) -> list[Any]:
                if on is None:
                    payload, count = call.packed()
                    return call.replies(await self._exchange([payload], count, size, write))
                return await self._replica_eval(call, on)

            return await self._on_replica(lane, scripted)
        payload, count = batch.packed()
        return batch.replies(
            await self._on_replica(
                lane, lambda on: self._exchange([payload], count, size, write, on)
            )
        )

    async def _replica_eval(self, call: Eval, lane: _Lane) -> list[Any]:
        """A read script's call on a replica: after a NOSCRIPT (a replica has not
        loaded it yet), loaded and called again on the same replica."""
        if self._scripts_ro[self._readers.index(lane)]:
            call = call.read_only_call()
        try:
            payload, count = call.packed()
            return call.replies(await self._exchange([payload], count, call.size, False, lane))
        except StoreError as exc:
            if "No matching script" not in str(exc):
                raise
        payload, count = call.loading().packed()
        return call.replies(await self._exchange([payload], count, call.size, False, lane))

    async def eval(
        self, script: Script, calls: Sequence[Command], write: bool = False, weight: int = 0
    ) -> list[Any]:
        if not calls:
            return []
        # Loaded in the same exchange, so a restarted Redis has it again.
        parts = [encode(b"SCRIPT", b"LOAD", script.source)]
        parts += [encode(b"EVALSHA", script.sha, script.numkeys, *c) for c in calls]
        return (await self._exchange(parts, len(parts), weight, write))[1:]

    async def _exchange(
        self, parts: list[bytes], count: int, weight: int, write: bool, reader: _Lane | None = None
    ) -> list[Any]:
        """Send packed commands in one write and read their count replies; weight is
        the work they ask of Redis, in commands (or keys of a multi-key command).
        A write with min_replicas ends with WAIT on the same connection."""
        wait = self.waits(write)
        if wait:
            parts, count = [*parts, self.wait_command()], count + 1
        started = time.perf_counter()
        lane = self._lane if reader is None else reader
        if reader is not None:
            self.replica_reads += 1
        conn = None
        budget = self.timeout + SECONDS_PER_COMMAND * max(weight, count)
        if wait:
            budget += self.replica_timeout
        payload = b"".join(parts)
        piped = not wait and lane.pipe.usable and Pipe.fits(payload, count)
        try:
            # Connecting is inside the timer: this client has no socket timeout.
            async with deadline_in(budget):  # a timer per tick, not per exchange
                if piped:
                    try:
                        replies = await lane.pipe.exchange(payload, count)
                    except NotPipelinable:
                        piped = False
                if not piped:
                    conn = await lane.get()
                    replies = await roundtrip(conn, payload, count)
        except TimeoutError as exc:
            if piped:
                lane.pipe.timed_out(budget)
            raise StoreUnavailableError("Redis is unavailable: timeout") from exc
        except asyncio.CancelledError:
            if piped:  # a dead connection is found by whichever gives up first
                lane.pipe.timed_out(budget)
            raise
        except (RedisError, OSError) as exc:
            raise translate(exc) from exc
        finally:
            if conn is not None:
                lane.put(conn)
            _EXCHANGE_SECONDS.observe(time.perf_counter() - started)
        for reply in replies:
            if isinstance(reply, Exception):
                raise translate(reply)
        if wait:
            self.check_acked([int(replies.pop())])
        return replies

    async def _ping(self) -> bool:
        return bool(await self.run(self.client.ping()))

    async def fewest_replicas(self) -> int:
        info = await self.run(self.client.info("replication"))
        return int(info.get("connected_slaves", 0))

    async def _fsync_always(self) -> list[dict[Any, Any]]:
        await self.client.config_set("appendfsync", "always")
        return [await self.client.config_get("appendonly")]

    async def close(self) -> None:
        if self._roles is not None:
            self._roles.cancel()
        await self.client.aclose()
        for lane in self._readers:
            await lane.close()
        await self._bulk.aclose()
        for replica in self._replicas:
            await replica.aclose()


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _shown(client: aioredis.Redis) -> str:
    """A replica as a log line names it: its address, no credentials."""
    kwargs = client.connection_pool.connection_kwargs
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    return f"{kwargs.get('host')}:{kwargs.get('port')}/{kwargs.get('db', 0)}"
