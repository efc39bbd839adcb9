"""The transport to one Redis server (redis://, rediss://, unix:// URLs)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from app.core import metrics
from app.store.errors import StoreUnavailableError, translate
from app.store.resp import Batch, Command, encode, roundtrip
from app.store.scripts import Script
from app.store.transport import SECONDS_PER_COMMAND, Transport, client_options

_EXCHANGE_SECONDS = metrics.REDIS_SECONDS.labels("pipeline")


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
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.disconnect()


class SingleTransport(Transport):
    """Every batch packed into one write on one connection, its replies read at once."""

    cluster = False

    def __init__(
        self,
        client: aioredis.Redis,
        bulk: aioredis.Redis,
        *,
        timeout: float,
        min_replicas: int = 0,
        replica_timeout: float = 1.0,
    ) -> None:
        super().__init__(
            client, timeout=timeout, min_replicas=min_replicas, replica_timeout=replica_timeout
        )
        # The same server without a per-reply socket timeout, for the packed
        # exchanges: one timer bounds a whole exchange instead of one armed per reply.
        self._bulk = bulk
        self._lane = _Lane(bulk.connection_pool)

    @classmethod
    def connect(
        cls, url: str, timeout: float, min_replicas: int, replica_timeout: float
    ) -> SingleTransport:
        options = client_options(timeout, min_replicas, replica_timeout)
        client = aioredis.Redis.from_url(url, **options)
        bulk = aioredis.Redis.from_url(url, **{**options, "socket_timeout": None})
        return cls(
            client,
            bulk,
            timeout=timeout,
            min_replicas=min_replicas,
            replica_timeout=replica_timeout,
        )

    async def commands(self, commands: Sequence[Command], write: bool = False) -> list[Any]:
        if not commands:
            return []
        parts = [encode(*c) for c in commands]
        return await self._exchange(parts, len(parts), len(parts), write)

    async def send(self, batch: Batch, write: bool = False) -> list[Any]:
        size = batch.size
        if not size:
            return []
        payload, count = batch.packed()
        return batch.replies(await self._exchange([payload], count, size, write))

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
        self, parts: list[bytes], count: int, weight: int, write: bool
    ) -> list[Any]:
        """Send packed commands in one write and read their count replies; weight is
        the work they ask of Redis, in commands (or keys of a multi-key command).
        A write with min_replicas ends with WAIT on the same connection."""
        wait = write and bool(self.min_replicas)
        if wait:
            parts, count = [*parts, self.wait_command()], count + 1
        started = time.perf_counter()
        lane = self._lane
        conn = None
        budget = self.timeout + SECONDS_PER_COMMAND * max(weight, count)
        if wait:
            budget += self.replica_timeout
        try:
            # Connecting is inside the timer: this client has no socket timeout.
            async with asyncio.timeout(budget):
                conn = await lane.get()
                replies = await roundtrip(conn, b"".join(parts), count)
        except TimeoutError as exc:
            raise StoreUnavailableError("Redis is unavailable: timeout") from exc
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

    async def ping(self) -> bool:
        return bool(await self.run(self.client.ping()))

    async def fewest_replicas(self) -> int:
        info = await self.run(self.client.info("replication"))
        return int(info.get("connected_slaves", 0))

    async def _fsync_always(self) -> list[dict[Any, Any]]:
        await self.client.config_set("appendfsync", "always")
        return [await self.client.config_get("appendonly")]

    async def close(self) -> None:
        await self.client.aclose()
        await self._lane.close()
        await self._bulk.aclose()
