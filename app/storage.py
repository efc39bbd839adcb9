"""The one module that speaks Redis.

Key layout, every key under ``nd:{collection}:``:

    config        STRING  JSON of the collection's fixed sketch parameters
    next          STRING  INCR counter handing out integer document handles
    ids           HASH    external id -> handle
    d:{handle}    STRING  packed document record (app.records)
    l:{handle}    STRING  short-lived write lock token for one document
    b:{key}       SET     handles whose signature has this band key (8 raw bytes)

No command spans two of these keys, and every Lua script touches one key, so
the same code can run against Redis Cluster. Correctness comes from write
order (bands first, record last; delete record first) in app.index.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app import metrics

_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_FORGET_ID = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""
_BAND_KEY = struct.Struct("<Q")


class StoreUnavailableError(Exception):
    """Redis cannot be reached or did not answer in time; worth retrying."""


class StoreError(Exception):
    """Redis answered with an error that retrying will not fix."""


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, RedisConnectionError | RedisTimeoutError | OSError):
        return StoreUnavailableError(f"Redis is unavailable: {exc}")
    return StoreError(f"Redis error: {exc}")


class Store:
    """One collection's keys on one Redis server."""

    def __init__(self, client: aioredis.Redis, collection: str) -> None:
        self._r = client
        self._prefix = f"nd:{collection}:".encode()
        self._ids = self._prefix + b"ids"

    @classmethod
    def connect(cls, url: str, collection: str, timeout: float) -> Store:
        """A store on the server at url (redis://, rediss:// or unix://).

        A command fails after one timeout, never more, so retries stay off
        (said explicitly: redis-py's Redis() default is ten, and any retry of
        a connection error would also retry a timed-out handshake) and the
        503 tells the caller to retry instead. A pooled
        connection to a Redis that restarted needs no retry: the pool sees
        the closed socket when it hands the connection out, and reconnects.
        """
        client = aioredis.Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            decode_responses=False,
            health_check_interval=0,
            max_connections=256,
            retry=Retry(NoBackoff(), 0),
        )
        return cls(client, collection)

    async def fsync_always(self) -> str | None:
        """Ask Redis to fsync its append-only file before every reply.

        Returns None when that is in force, else why not (CONFIG refused, as
        managed Redis services do, or the append-only file switched off).
        """
        try:
            await self._r.config_set("appendfsync", "always")
            aof: dict[Any, Any] = await self._r.config_get("appendonly")
        except ResponseError as exc:
            return f"CONFIG SET appendfsync always was refused ({exc})"
        except (RedisError, OSError) as exc:
            raise _translate(exc) from exc
        if aof.get(b"appendonly", aof.get("appendonly")) not in (b"yes", "yes"):
            return "appendonly is off, so nothing is written to disk before a reply"
        return None

    async def close(self) -> None:
        await self._r.aclose()

    # keys -----------------------------------------------------------------

    def _doc(self, handle: int) -> bytes:
        return self._prefix + b"d:%d" % handle

    def _lock(self, handle: int) -> bytes:
        return self._prefix + b"l:%d" % handle

    def band_key(self, key: int) -> bytes:
        """The Redis key of the SET for one 64-bit band key."""
        return self._prefix + b"b:" + _BAND_KEY.pack(key)

    # plumbing -------------------------------------------------------------

    async def _run(self, coro: Any, op: str = "command") -> Any:
        started = time.perf_counter()
        try:
            return await coro
        except (RedisError, OSError) as exc:
            raise _translate(exc) from exc
        finally:
            metrics.REDIS_SECONDS.labels(op).observe(time.perf_counter() - started)

    async def _pipeline(self, build: Callable[[Any], object]) -> list[Any]:
        pipe = self._r.pipeline(transaction=False)
        build(pipe)
        if not len(pipe):
            return []
        return await self._run(pipe.execute(), "pipeline")

    async def ping(self) -> bool:
        return bool(await self._run(self._r.ping()))

    async def info(self, section: str) -> dict:
        return await self._run(self._r.info(section))

    # collection configuration --------------------------------------------

    async def config(self, proposed: bytes) -> bytes:
        """The collection's stored configuration, storing `proposed` if there is none."""
        key = self._prefix + b"config"
        await self._run(self._r.set(key, proposed, nx=True))
        stored = await self._run(self._r.get(key))
        return stored if stored is not None else proposed

    # ids and handles ------------------------------------------------------

    async def handles(self, ids: Sequence[str]) -> list[int | None]:
        """The handle of each id, None where the id is unknown."""
        if not ids:
            return []
        raw = await self._run(self._r.hmget(self._ids, list(ids)))
        return [None if h is None else int(h) for h in raw]

    async def assign_handles(self, ids: Sequence[str]) -> list[int]:
        """A handle for each id, creating one where the id has none.

        HSETNX settles races: a concurrent writer of the same new id loses
        the field and takes the winner's handle.
        """
        known = await self.handles(ids)
        missing = [i for i, h in enumerate(known) if h is None]
        if missing:
            last = await self._run(self._r.incrby(self._prefix + b"next", len(missing)))
            first = last - len(missing) + 1
            wanted = {ids[i]: first + n for n, i in enumerate(missing)}
            await self._pipeline(
                lambda p: [p.hsetnx(self._ids, doc_id, h) for doc_id, h in wanted.items()]
            )
            settled = await self.handles([ids[i] for i in missing])
            for i, h in zip(missing, settled, strict=True):
                known[i] = h
        if any(h is None for h in known):  # deleted between the two reads
            return await self.assign_handles(ids)
        return [int(h) for h in known]  # type: ignore[arg-type]

    async def forget_ids(self, ids: Sequence[str], handles: Sequence[int]) -> None:
        """Drop id -> handle mappings that still point at these handles."""
        await self._pipeline(
            lambda p: [
                p.eval(_FORGET_ID, 1, self._ids, i, h) for i, h in zip(ids, handles, strict=True)
            ]
        )

    async def last_handle(self) -> int:
        """The largest handle handed out so far (0 for an empty collection)."""
        raw = await self._run(self._r.get(self._prefix + b"next"))
        return int(raw or 0)

    async def count_ids(self) -> int:
        return int(await self._run(self._r.hlen(self._ids)))

    # locks ----------------------------------------------------------------

    async def try_lock(self, handles: Sequence[int], token: bytes, ttl_ms: int) -> list[bool]:
        """Take the write lock of each handle that is free; say which were taken."""
        got = await self._pipeline(
            lambda p: [p.set(self._lock(h), token, nx=True, px=ttl_ms) for h in handles]
        )
        return [bool(g) for g in got]

    async def unlock(self, handles: Sequence[int], token: bytes) -> None:
        await self._pipeline(lambda p: [p.eval(_UNLOCK, 1, self._lock(h), token) for h in handles])

    # records ----------------------------------------------------------------

    async def records(self, handles: Sequence[int]) -> list[bytes | None]:
        """The packed record of each handle, None where there is none."""
        if len(handles) == 0:
            return []
        return await self._run(self._r.mget([self._doc(int(h)) for h in handles]))

    async def put_records(self, records: Sequence[tuple[int, bytes]]) -> None:
        await self._pipeline(lambda p: [p.set(self._doc(h), raw) for h, raw in records])

    async def delete_records(self, handles: Sequence[int]) -> None:
        if handles:
            await self._run(self._r.delete(*[self._doc(h) for h in handles]))

    # band memberships ---------------------------------------------------------

    async def add_bands(self, memberships: Sequence[tuple[int, np.ndarray]]) -> None:
        """SADD each handle to the SET of each of its band keys."""
        await self._pipeline(
            lambda p: [
                p.sadd(self.band_key(int(k)), h) for h, keys in memberships for k in keys.tolist()
            ]
        )

    async def remove_bands(self, memberships: Sequence[tuple[int, np.ndarray]]) -> None:
        await self._pipeline(
            lambda p: [
                p.srem(self.band_key(int(k)), h) for h, keys in memberships for k in keys.tolist()
            ]
        )

    async def band_members(self, keys: np.ndarray, per_band: int) -> list[list[bytes]]:
        """Up to per_band members of each band key's SET (all of a smaller SET).

        SRANDMEMBER with a count bounds the work a hot key can cause.
        """
        return await self._pipeline(
            lambda p: [p.srandmember(self.band_key(k), per_band) for k in keys.tolist()]
        )
