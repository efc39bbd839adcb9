"""The one module that speaks Redis.

Key layout, every key under ``nd:{collection}:``:

    config        STRING  JSON of the collection's fixed sketch parameters
    next          STRING  INCR counter handing out integer document handles
    ids           HASH    external id -> handle
    d:{handle}    STRING  packed document record (app.index.records)
    l:{id}        STRING  short-lived write lock token for one external id
    B{bucket}     HASH    band key (8 raw bytes) -> its handles, 4 bytes each (uint32 LE);
                          once the band outgrew MAX_INLINE handles, SPILLED and its size
    S{bucket}key  ZSET    the handles of a spilled (hot) band key, scored by handle

A band key lives in bucket ``key >> (64 - bits)`` of ``2**bits`` buckets,
fixed when the collection is made (Params.band_buckets, sized from
NEARDUP_CAPACITY): a few dozen small fields per HASH keep Redis's compact
listpack encoding, so a band membership costs ~15 bytes instead of a whole
key (~75 bytes) per band per document. A bucket and its spilled sets share a
hash tag, so they share a cluster slot. A spilled set is sorted by handle
because a query reads a bounded window of it, in one O(log n) ZRANGE.

No command spans two slots, and every Lua script touches one slot, so
the same code runs against Redis Cluster (``redis+cluster://`` URLs). Every
batch of commands is packed by hand and its replies parsed in bulk by hiredis
(_exchange): on a cluster one such exchange per master (_cluster_exchange),
sent at once, so a query stays one round trip per step and node touched. Correctness
comes from write order (bands first, record last; delete record first) in
app.index.

With ``min_replicas`` (NEARDUP_MIN_REPLICAS) every write pipeline ends with
``WAIT`` on each master it wrote to, on the same connection as its writes
(WAIT only counts the writes of its own connection), and a write that too few
replicas acknowledged is a ReplicationError (a 503): applied, perhaps not
replicated, worth retrying.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import struct
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import hiredis
import numpy as np
import redis.asyncio as aioredis
from redis._parsers import hiredis as _redis_hiredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    ClusterError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.core import errors, metrics
from app.core.redis_url import parse_cluster_url

_UNLOCK = b"""
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_FORGET_ID = b"""
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""
# A band adds a document with HSETNX when it is new, else with this script:
# append to the inline handles, or move them all to the sorted set once there
# are more than ARGV[4] (keeps the HASH value small enough for a listpack).
# A spilled band's field holds SPILLED and the set's size, so one lookup
# tells a query how large every hot band is.
_BAND_ADD = rb"""
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) return 1 end
local spilled = string.sub(v, 1, 4) == '\255\255\255\255'
if not spilled then
  for i = 1, #v, 4 do
    if string.sub(v, i, i + 3) == ARGV[2] then return 0 end
  end
  if #v < 4 * tonumber(ARGV[4]) then
    redis.call('HSET', KEYS[1], ARGV[1], v .. ARGV[2])
    return 1
  end
  for i = 1, #v, 4 do
    local h = struct.unpack('<I4', v, i)
    redis.call('ZADD', KEYS[2], h, h)
  end
end
local added = redis.call('ZADD', KEYS[2], ARGV[3], ARGV[3])
local size = struct.pack('<I4', redis.call('ZCARD', KEYS[2]))
redis.call('HSET', KEYS[1], ARGV[1], '\255\255\255\255' .. size)
return added
"""
_BAND_REMOVE = rb"""
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
if string.sub(v, 1, 4) == '\255\255\255\255' then
  local removed = redis.call('ZREM', KEYS[2], ARGV[3])
  local left = redis.call('ZCARD', KEYS[2])
  if left == 0 then redis.call('HDEL', KEYS[1], ARGV[1])
  else redis.call('HSET', KEYS[1], ARGV[1], '\255\255\255\255' .. struct.pack('<I4', left)) end
  return removed
end
for i = 1, #v, 4 do
  if string.sub(v, i, i + 3) == ARGV[2] then
    local rest = string.sub(v, 1, i - 1) .. string.sub(v, i + 4)
    if #rest == 0 then redis.call('HDEL', KEYS[1], ARGV[1])
    else redis.call('HSET', KEYS[1], ARGV[1], rest) end
    return 1
  end
end
return 0
"""
_BAND_KEY = struct.Struct("<Q")
_HANDLE = struct.Struct("<I")
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# Handles a band keeps inline before it spills to a ZSET: 48 bytes, under
# Redis's default hash-max-listpack-value (64).
MAX_INLINE = 12
# Band entries per bucket HASH at the collection's capacity: under Redis's
# default hash-max-listpack-entries (128) with room to grow 2x past it.
ENTRIES_PER_BUCKET = 48
# A spilled band's field: this, which no handle is, then the set's size (uint32 LE).
SPILLED = b"\xff\xff\xff\xff"
MAX_HANDLE = 2**32 - 2
# Each script's key count and SHA1 (for EVALSHA), worked out once.
_SCRIPTS = {
    script: (numkeys, hashlib.sha1(script).hexdigest().encode())
    for script, numkeys in (
        (_UNLOCK, b"1"),
        (_FORGET_ID, b"1"),
        (_BAND_ADD, b"2"),
        (_BAND_REMOVE, b"2"),
    )
}


def buckets_for(entries: int) -> int:
    """The number of band buckets (a power of two) for this many band entries."""
    need = max(1, -(-entries // ENTRIES_PER_BUCKET))
    return min(1 << 24, max(16, 1 << (need - 1).bit_length()))


# After a cluster error, the slot map is re-read at most this often.
REFRESH_INTERVAL_S = 0.2


class StoreUnavailableError(errors.Unavailable):
    """Redis cannot be reached or did not answer in time; worth retrying."""


class ReplicationError(StoreUnavailableError):
    """A write was applied but fewer replicas than required acknowledged it in time."""


class StoreError(errors.Unavailable):
    """Redis answered with an error that retrying will not fix (a 503: the store, not
    the request, is at fault)."""


# Errors that pass once Redis is back or a cluster has settled: a failover
# (CLUSTERDOWN, MASTERDOWN, a master that now is a read-only replica),
# redirects that did not settle, slots not covered yet, a node still loading.
_UNAVAILABLE = (
    RedisConnectionError,
    RedisTimeoutError,
    OSError,
    ClusterError,
    TryAgainError,
    AskError,
    ReadOnlyError,
    RedisClusterException,
)
_UNAVAILABLE_REPLIES = ("NOREPLICAS", "LOADING", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN")


def _translate(exc: Exception) -> Exception:
    if isinstance(exc, _UNAVAILABLE) or str(exc).startswith(_UNAVAILABLE_REPLIES):
        return StoreUnavailableError(f"Redis is unavailable: {exc}")
    return StoreError(f"Redis error: {exc}")


_EXCHANGE_SECONDS = metrics.REDIS_SECONDS.labels("pipeline")
# What redis-py's hiredis reader answers while a reply is incomplete.
_INCOMPLETE = getattr(_redis_hiredis, "NOT_ENOUGH_DATA", False)


async def _read_replies(conn: Any, n: int) -> list[Any]:
    """The next n replies on a redis-py connection, error replies as exception objects.

    With hiredis (a dependency) they are parsed in bulk from its reader, at
    well under a microsecond each: redis-py's read_response costs ~5 us of
    Python per reply, which is most of a query's CPU when a band lookup is
    42 replies. Without it, one read_response per reply.
    """
    parser = getattr(conn, "_parser", None)
    reader = getattr(parser, "_reader", None)
    if not isinstance(reader, hiredis.Reader) or not hasattr(parser, "read_from_socket"):
        replies: list[Any] = []
        for _ in range(n):
            try:
                replies.append(await conn.read_response(timeout=math.inf))
            except ResponseError as exc:  # the connection stays in step
                replies.append(exc)
        return replies
    replies = []
    while len(replies) < n:
        reply = reader.gets()
        if reply is _INCOMPLETE:
            await parser.read_from_socket()  # type: ignore[union-attr]
        elif isinstance(reply, RedisConnectionError):
            raise reply
        else:
            replies.append(reply)
    return replies


class _Lane:
    """The connections of the packed exchanges: a stack of idle ones.

    Checked out like redis-py's pool does it (connect if not connected; a
    closed or dirty socket, say after Redis restarted, is reconnected), but
    without the pool's lock and observability events, which cost ~20 us an
    exchange, a few times a query. The pool only makes the connections, so
    they carry its URL, credentials and TLS settings.
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


def _resp(*args: bytes) -> bytes:
    """One command in the Redis protocol (RESP), ready to send."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


class Store:
    """One collection's keys on one Redis server."""

    def __init__(
        self,
        client: aioredis.Redis | RedisCluster,
        collection: str,
        *,
        min_replicas: int = 0,
        replica_timeout: float = 1.0,
        bulk: aioredis.Redis | None = None,
        timeout: float = 2.0,
    ) -> None:
        self._r: Any = client
        self._cluster = isinstance(client, RedisCluster)
        # The same server without a per-reply socket timeout, for _exchange:
        # one timer bounds a whole exchange instead of one armed per reply.
        self._bulk: aioredis.Redis | None = bulk
        self._lane = None if bulk is None else _Lane(bulk.connection_pool)
        self._timeout = timeout
        self._prefix = f"nd:{collection}:".encode()
        self._ids = self._prefix + b"ids"
        self._min_replicas = min_replicas
        self._replica_timeout = replica_timeout
        self._refresh: asyncio.Task[None] | None = None
        self._refreshed_at = 0.0
        self._bucket_shift = 64
        self._bucket_format = b"%x"
        self._nibble_shifts = np.zeros(1, dtype=np.uint64)
        self._templates: dict[tuple[bytes, bool], tuple[np.ndarray, int, int, int]] = {}

    def use_band_buckets(self, buckets: int) -> None:
        """Set the collection's number of band buckets (a power of two)."""
        if buckets < 1 or buckets & (buckets - 1):
            raise ValueError(f"band buckets must be a power of two, got {buckets}")
        bits = buckets.bit_length() - 1
        self._bucket_shift = 64 - bits
        digits = max(1, -(-bits // 4))
        self._bucket_format = b"%%0%dx" % digits
        self._nibble_shifts = np.arange(4 * (digits - 1), -1, -4, dtype=np.uint64)
        self._templates.clear()

    @classmethod
    def connect(
        cls,
        url: str,
        collection: str,
        timeout: float,
        *,
        min_replicas: int = 0,
        replica_timeout: float = 1.0,
    ) -> Store:
        """A store on the server at url (redis://, rediss:// or unix://), or on the
        Redis Cluster a redis+cluster://host:port[,host:port...] URL names.

        A command fails after one timeout, never more, so retries stay off
        (said explicitly: redis-py's Redis() default is ten, RedisCluster's
        three, and any retry of a connection error would also retry a
        timed-out handshake) and the 503 tells the caller to retry instead. A
        pooled connection to a Redis that restarted needs no retry: the pool
        sees the closed socket when it hands the connection out, and
        reconnects. On a cluster, an error that may mean the slots moved (a
        failover) makes the store re-read the slot map in the background
        (_refresh_topology), so requests after a failover find the new masters.

        With min_replicas, a write may wait replica_timeout for its replicas
        (WAIT) on top of the usual timeout, so the socket timeout allows both.
        """
        options: dict[str, Any] = {
            "socket_timeout": timeout + (replica_timeout if min_replicas else 0.0),
            "socket_connect_timeout": timeout,
            "decode_responses": False,
            "health_check_interval": 0,
            "max_connections": 256,
            "retry": Retry(NoBackoff(), 0),
        }
        cluster = parse_cluster_url(url)
        client: aioredis.Redis | RedisCluster
        bulk = None
        if cluster is None:
            client = aioredis.Redis.from_url(url, **options)
            bulk = aioredis.Redis.from_url(url, **{**options, "socket_timeout": None})
        else:
            client = RedisCluster(
                startup_nodes=[ClusterNode(host, port) for host, port in cluster.nodes],
                username=cluster.username,
                password=cluster.password,
                ssl=cluster.ssl,
                **options,
            )
        return cls(
            client,
            collection,
            min_replicas=min_replicas,
            replica_timeout=replica_timeout,
            bulk=bulk,
            timeout=timeout,
        )

    @property
    def cluster(self) -> bool:
        """Whether this store is on a Redis Cluster."""
        return self._cluster

    async def fsync_always(self) -> str | None:
        """Ask Redis to fsync its append-only file before every reply.

        Returns None when that is in force, else why not (CONFIG refused, as
        managed Redis services do, or the append-only file switched off).
        On a cluster every node is asked, replicas too (one may be promoted);
        redis-py would send CONFIG to one node only. Nodes that join later
        need it in their own configuration.
        """
        try:
            if self._cluster:
                every = {"target_nodes": RedisCluster.ALL_NODES}
                await self._r.config_set("appendfsync", "always", **every)
                aofs = list((await self._r.config_get("appendonly", **every)).values())
            else:
                await self._r.config_set("appendfsync", "always")
                aofs = [await self._r.config_get("appendonly")]
        except ResponseError as exc:
            return f"CONFIG SET appendfsync always was refused ({exc})"
        except (RedisError, RedisClusterException, OSError) as exc:
            raise _translate(exc) from exc
        if any(a.get(b"appendonly", a.get("appendonly")) not in (b"yes", "yes") for a in aofs):
            return "appendonly is off, so nothing is written to disk before a reply"
        return None

    async def close(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
        await self._r.aclose()
        if self._bulk is not None:
            await self._lane.close()  # type: ignore[union-attr]
            await self._bulk.aclose()

    # keys -----------------------------------------------------------------

    def _doc(self, handle: int) -> bytes:
        return self._prefix + b"d:%d" % handle

    def _lock(self, doc_id: str) -> bytes:
        return self._prefix + b"l:" + doc_id.encode()

    def _bucket(self, key: int) -> bytes:
        """The hash tag of a band key's bucket: the HASH and its spilled sets."""
        # A shift by 64 (one bucket) leaves 0 for every key.
        return b"{" + self._bucket_format % (key >> self._bucket_shift) + b"}"

    def _band_place(self, key: int) -> tuple[bytes, bytes, bytes]:
        """(bucket HASH, field, spill ZSET) of a 64-bit band key."""
        tag = self._bucket(key)
        field = _BAND_KEY.pack(key)
        return self._prefix + b"B" + tag, field, self._prefix + b"S" + tag + field

    # plumbing -------------------------------------------------------------

    async def _run(self, coro: Any, op: str = "command") -> Any:
        started = time.perf_counter()
        try:
            return await coro
        except (RedisError, RedisClusterException, OSError) as exc:
            error = _translate(exc)
            if isinstance(error, StoreUnavailableError):
                self._refresh_topology()
            raise error from exc
        finally:
            metrics.REDIS_SECONDS.labels(op).observe(time.perf_counter() - started)

    def _refresh_topology(self) -> None:
        """On a cluster, re-read the slot map in the background after an error.

        redis-py does so by itself only after a failed single command, not
        after a failed pipeline, and with retries off it never retries into
        the new map; so without this, pipelines would keep going to a master
        that died and whose replica took over. One refresh at a time, at most
        every REFRESH_INTERVAL_S; each is bounded by the socket timeouts.
        """
        if not self._cluster or (self._refresh is not None and not self._refresh.done()):
            return
        now = time.monotonic()
        if now - self._refreshed_at < REFRESH_INTERVAL_S:
            return
        self._refreshed_at = now
        self._refresh = asyncio.get_running_loop().create_task(self._reread_slots())

    async def _reread_slots(self) -> None:
        try:
            await self._r.nodes_manager.initialize()
        except Exception:  # the next failed request tries again
            self._refreshed_at = time.monotonic()

    def _slots_moved(self) -> ReplicationError:
        """What a write that waited for replicas gets when the slots moved under it."""
        self._refresh_topology()
        return ReplicationError(
            "the write was applied, but the cluster's slots moved while it ran, so "
            "it may not be replicated (NEARDUP_MIN_REPLICAS); retry"
        )

    def _check_acked(self, acked: Sequence[int]) -> None:
        """Refuse a write that fewer replicas than required acknowledged (WAIT replies)."""
        if min(acked) < self._min_replicas:
            raise ReplicationError(
                f"the write was applied, but only {min(acked)} of the "
                f"{self._min_replicas} replicas required (NEARDUP_MIN_REPLICAS) "
                f"acknowledged it within {self._replica_timeout:g} s, so it may not "
                "survive a failover; retry"
            )

    def _wait_command(self) -> bytes:
        """RESP of the WAIT that makes a write wait for min_replicas."""
        timeout_ms = max(1, round(self._replica_timeout * 1000))
        return _resp(b"WAIT", b"%d" % self._min_replicas, b"%d" % timeout_ms)

    async def _exchange(
        self, parts: list[bytes], write: bool = False, weight: int = 0, count: int | None = None
    ) -> list[Any]:
        """Send packed single-key commands in one write and read their replies (hiredis).

        redis-py spends ~15 us of Python per pipelined command and arms a timer
        per reply; band memberships are tens of commands per document, so on
        one server they go this way. On a cluster (commands split per node)
        they go through redis-py's cluster pipeline. A write with
        min_replicas ends with WAIT on the same connection. count is the number
        of commands in parts, when that is not one per part.
        """
        count = len(parts) if count is None else count
        if not count:
            return []
        if write and self._min_replicas:
            parts, count = [*parts, self._wait_command()], count + 1
        started = time.perf_counter()
        lane = self._lane
        if lane is None:
            raise RuntimeError("packed exchanges need a single Redis server")
        conn = None
        # ~20 us of Redis work per command, or per key of a multi-key command.
        budget = self._timeout + 20e-6 * max(weight, count)
        if write and self._min_replicas:
            budget += self._replica_timeout
        try:
            # Connecting is inside the timer: this client has no socket timeout.
            async with asyncio.timeout(budget):
                conn = await lane.get()
                try:
                    await conn.send_packed_command(b"".join(parts), check_health=False)
                    replies = await _read_replies(conn, count)
                except BaseException:
                    # Replies may be left unread on this connection: never reuse it.
                    await conn.disconnect()
                    raise
        except TimeoutError as exc:
            raise StoreUnavailableError("Redis is unavailable: timeout") from exc
        except (RedisError, OSError) as exc:
            raise _translate(exc) from exc
        finally:
            if conn is not None:
                lane.put(conn)
            _EXCHANGE_SECONDS.observe(time.perf_counter() - started)
        for reply in replies:
            if isinstance(reply, Exception):
                raise _translate(reply)
        if write and self._min_replicas:
            self._check_acked([int(replies.pop())])
        return replies

    async def _cluster_exchange(
        self, commands: Sequence[tuple[bytes, ...]], write: bool = False
    ) -> list[Any]:
        """_exchange on a cluster: single-key commands (name, key, args...) grouped by the
        master of each key's slot, one packed write and one read per master, all at once.

        redis-py's cluster pipeline does the same grouping with ~20 us of Python per
        command; this packs the commands itself and reads the replies through hiredis
        under one timer per master (read_response(timeout=inf) arms none per reply).
        Replies that redirect (MOVED, ASK, TRYAGAIN: a slot being moved) are sent again
        through redis-py, which follows them, and the slot map is re-read. A write with
        min_replicas ends with WAIT on each master's connection; a redirect, or a slot
        map that changed while it ran, makes it a ReplicationError.
        """
        if not commands:
            return []
        # The slot of a command's first key (EVAL's after the script and key count).
        slots = [key_slot(c[3] if c[0] == b"EVAL" else c[1]) for c in commands]
        before = await self._masters_of(set(slots))
        groups: dict[str, tuple[Any, list[int]]] = {}
        for i, slot in enumerate(slots):
            node = before[slot]
            groups.setdefault(node.name, (node, []))[1].append(i)
        wait = write and bool(self._min_replicas)
        started = time.perf_counter()
        try:
            answers = await asyncio.gather(
                *(
                    self._node_exchange(node, [commands[i] for i in idx], wait)
                    for node, idx in groups.values()
                )
            )
        except StoreUnavailableError:
            self._refresh_topology()
            raise
        finally:
            metrics.REDIS_SECONDS.labels("pipeline").observe(time.perf_counter() - started)
        replies: list[Any] = [None] * len(commands)
        acked = []
        for (_, idx), got in zip(groups.values(), answers, strict=True):
            if wait:
                acked.append(got.pop())
            for i, reply in zip(idx, got, strict=True):
                replies[i] = reply
        moved = [i for i, r in enumerate(replies) if isinstance(r, AskError | TryAgainError)]
        for reply in replies:
            if isinstance(reply, Exception) and not isinstance(reply, AskError | TryAgainError):
                error = _translate(reply)
                if isinstance(error, StoreUnavailableError):
                    self._refresh_topology()
                raise error
        if moved:
            if wait:
                raise self._slots_moved()
            self._refresh_topology()
            again = await self._pipeline(
                lambda p: [p.execute_command(commands[i][0].decode(), *commands[i][1:])
                           for i in moved]
            )  # fmt: skip
            for i, reply in zip(moved, again, strict=True):
                replies[i] = reply
        if wait:
            after = await self._masters_of(set(slots))
            if any(after[slot].name != before[slot].name for slot in after):
                raise self._slots_moved()
            self._check_acked(acked)
        return replies

    async def _node_exchange(
        self, node: Any, commands: Sequence[tuple[bytes, ...]], wait: bool
    ) -> list[Any]:
        """Commands sent to one cluster node in one write, every reply read (error
        replies as exception objects), then WAIT's count if wait."""
        parts = [_resp(*c) for c in commands]
        budget = self._timeout + 20e-6 * len(parts)
        if wait:
            parts.append(self._wait_command())
            budget += self._replica_timeout
        try:
            conn = node.acquire_connection()
        except RedisError as exc:  # MaxConnectionsError
            raise _translate(exc) from exc
        replies: list[Any] = []
        try:
            async with asyncio.timeout(budget):
                await node.disconnect_if_needed(conn)  # marked by a slot map refresh
                try:
                    await conn.send_packed_command(b"".join(parts), check_health=False)
                    replies = await _read_replies(conn, len(parts))
                except BaseException:
                    # Replies may be left unread on this connection: never reuse it.
                    await conn.disconnect()
                    raise
        except TimeoutError as exc:
            raise StoreUnavailableError(f"Redis is unavailable: timeout on {node.name}") from exc
        except (RedisError, OSError) as exc:
            raise _translate(exc) from exc
        finally:
            node.release(conn)
        return replies

    async def _pipeline(self, build: Callable[[Any], object]) -> list[Any]:
        pipe = self._r.pipeline(transaction=False)
        build(pipe)
        if not len(pipe):
            return []
        return await self._run(pipe.execute(), "pipeline")

    async def _masters_of(self, slots: set[int]) -> dict[int, Any]:
        """The master that owns each slot in the client's slot map (initialised first)."""
        await self._run(self._r.initialize())
        nodes = self._r.nodes_manager
        try:
            return {slot: nodes.get_node_from_slot(slot) for slot in slots}
        except (KeyError, RedisClusterException) as exc:  # a slot with no master yet
            self._refresh_topology()
            raise StoreUnavailableError(f"Redis Cluster has no master for a slot: {exc}") from exc

    async def ping(self) -> bool:
        if self._cluster:  # every master answers, not just one
            return bool(await self._run(self._r.ping(target_nodes=RedisCluster.PRIMARIES)))
        return bool(await self._run(self._r.ping()))

    async def fewest_replicas(self) -> int:
        """The number of replicas connected to the master with the fewest (each master)."""
        if self._cluster:
            infos = await self._run(
                self._r.info("replication", target_nodes=RedisCluster.PRIMARIES)
            )
            return min(int(i.get("connected_slaves", 0)) for i in infos.values())
        info = await self._run(self._r.info("replication"))
        return int(info.get("connected_slaves", 0))

    async def info(self, section: str) -> dict:
        return await self._run(self._r.info(section))

    # collection configuration --------------------------------------------

    async def config(self, proposed: bytes) -> bytes:
        """The collection's stored configuration, storing `proposed` if there is none.

        Creating it is a write like any other (WAIT with min_replicas); reading
        an existing one is not, so a service opens a collection whose replicas
        are away and can answer reads.
        """
        key = self._prefix + b"config"
        (stored,) = await self._commands([(b"GET", key)])
        if stored is None:
            await self._commands([(b"SET", key, proposed, b"NX")], write=True)
            (stored,) = await self._commands([(b"GET", key)])
        return stored if stored is not None else proposed

    # ids and handles ------------------------------------------------------

    async def handles(self, ids: Sequence[str]) -> list[int | None]:
        """The handle of each id, None where the id is unknown."""
        if not ids:
            return []
        (raw,) = await self._commands([(b"HMGET", self._ids, *(i.encode() for i in ids))])
        return [None if h is None else int(h) for h in raw]

    async def assign_handles(self, ids: Sequence[str]) -> list[int]:
        """A handle for each id, creating one where the id has none.

        HSETNX settles races: a concurrent writer of the same new id loses
        the field and takes the winner's handle.
        """
        known = await self.handles(ids)
        missing = [i for i, h in enumerate(known) if h is None]
        if missing:
            counter = self._prefix + b"next"
            (last,) = await self._commands([(b"INCRBY", counter, b"%d" % len(missing))], write=True)
            first = last - len(missing) + 1
            wanted = {ids[i]: first + n for n, i in enumerate(missing)}
            await self._commands(
                [(b"HSETNX", self._ids, i.encode(), b"%d" % h) for i, h in wanted.items()],
                write=True,
            )
            settled = await self.handles([ids[i] for i in missing])
            for i, h in zip(missing, settled, strict=True):
                known[i] = h
        if any(h is None for h in known):  # deleted between the two reads
            return await self.assign_handles(ids)
        return [int(h) for h in known]  # type: ignore[arg-type]

    async def forget_ids(self, ids: Sequence[str], handles: Sequence[int]) -> None:
        """Drop id -> handle mappings that still point at these handles."""
        await self._eval(
            _FORGET_ID,
            [(self._ids, i.encode(), b"%d" % h) for i, h in zip(ids, handles, strict=True)],
            write=True,
        )

    async def last_handle(self) -> int:
        """The largest handle handed out so far (0 for an empty collection)."""
        (raw,) = await self._commands([(b"GET", self._prefix + b"next")])
        return int(raw or 0)

    async def count_ids(self) -> int:
        (n,) = await self._commands([(b"HLEN", self._ids)])
        return int(n)

    # locks ----------------------------------------------------------------

    async def try_lock(self, ids: Sequence[str], token: bytes, ttl_ms: int) -> list[bool]:
        """Take the write lock of each id that is free; say which were taken."""
        ttl = b"%d" % ttl_ms
        got = await self._commands([(b"SET", self._lock(i), token, b"NX", b"PX", ttl) for i in ids])
        return [g is not None for g in got]

    async def unlock(self, ids: Sequence[str], token: bytes) -> list[bool]:
        """Release the locks token holds; say which were still held (not expired)."""
        held = await self._eval(_UNLOCK, [(self._lock(i), token) for i in ids])
        return [bool(h) for h in held]

    async def id_map(self, batch: int = 1000) -> AsyncIterator[tuple[str, int]]:
        """Every (id, handle) mapping, in no order, a batch at a time (HSCAN)."""
        async for doc_id, handle in self._r.hscan_iter(self._ids, count=batch):
            yield doc_id.decode(), int(handle)

    async def scan_keys(self) -> AsyncIterator[bytes]:
        """Every key of this collection (SCAN on every master), for checks and tests."""
        async for key in self._r.scan_iter(match=self._prefix + b"*", count=1000):
            yield key

    # records ----------------------------------------------------------------

    async def records(self, handles: Sequence[int]) -> list[bytes | None]:
        """The packed record of each handle, None where there is none."""
        if len(handles) == 0:
            return []
        if self._cluster:  # one GET per key, one exchange per master
            return await self._cluster_exchange([(b"GET", self._doc(int(h))) for h in handles])
        # One MGET; through _exchange so a large reply is bounded by one timer.
        head = self._prefix + b"d:"
        names = [b"%d" % h for h in handles]
        mget = b"*%d\r\n$4\r\nMGET\r\n" % (len(names) + 1) + b"".join(
            [b"$%d\r\n%s%s\r\n" % (len(head) + len(n), head, n) for n in names]
        )
        (values,) = await self._exchange([mget], weight=len(names))
        return list(values)

    async def put_records(self, records: Sequence[tuple[int, bytes]]) -> None:
        await self._commands([(b"SET", self._doc(h), raw) for h, raw in records], write=True)

    async def delete_records(self, handles: Sequence[int]) -> None:
        await self._commands([(b"DEL", self._doc(h)) for h in handles], write=True)

    # plumbing for the commands above -----------------------------------------

    async def _commands(
        self, commands: Sequence[tuple[bytes, ...]], write: bool = False
    ) -> list[Any]:
        """Single-slot commands in one exchange (one per master on a cluster)."""
        if not commands:
            return []
        if self._bulk is not None:
            return await self._exchange([_resp(*c) for c in commands], write=write)
        return await self._cluster_exchange(commands, write=write)

    async def _eval(
        self, script: bytes, calls: Sequence[tuple[bytes, ...]], write: bool = False
    ) -> list[Any]:
        """The script once per call of (key, [key,] args...): one key, or two when the
        script is a band script (they share a slot), in one exchange."""
        if not calls:
            return []
        numkeys, sha = _SCRIPTS[script]
        if self._bulk is None:  # EVAL: a cluster node may not have the script cached
            return await self._cluster_exchange(
                [(b"EVAL", script, numkeys, *c) for c in calls], write=write
            )
        # Loaded in the same exchange, so a restarted Redis has it again.
        parts = [_resp(b"SCRIPT", b"LOAD", script)]
        parts += [_resp(b"EVALSHA", sha, numkeys, *c) for c in calls]
        return (await self._exchange(parts, write=write))[1:]

    # band memberships ---------------------------------------------------------

    def _band_resp(self, command: bytes, keys: np.ndarray, handles: np.ndarray | None) -> bytes:
        """RESP of `command bucket field [handle]` for each band key, built at once.

        Every such command has the same length, so numpy tiles one template row
        and writes the bucket's hex digits, the field and the handle into their
        columns: a few microseconds for a document's 42 bands, where building
        each command in Python costs more than Redis takes to run it.
        """
        keys = np.ascontiguousarray(keys, dtype="<u8").ravel()
        template, at_digits, at_field, at_handle = self._band_template(command, handles is not None)
        digits = len(self._nibble_shifts)
        rows = np.empty((len(keys), len(template)), dtype=np.uint8)
        rows[:] = template
        buckets = keys >> np.uint64(self._bucket_shift) if self._bucket_shift < 64 else keys * 0
        nibbles = (buckets[:, None] >> self._nibble_shifts) & np.uint64(15)
        rows[:, at_digits : at_digits + digits] = _HEX[nibbles.astype(np.intp)]
        rows[:, at_field : at_field + 8] = keys.view(np.uint8).reshape(-1, 8)
        if handles is not None:
            packed = np.ascontiguousarray(handles, dtype="<u4")
            rows[:, at_handle : at_handle + 4] = packed.view(np.uint8).reshape(-1, 4)
        return rows.tobytes()

    def _band_template(self, command: bytes, with_handle: bool) -> tuple[np.ndarray, int, int, int]:
        """A _band_resp template row and where its digits, field and handle go (cached)."""
        cached = self._templates.get((command, with_handle))
        if cached is not None:
            return cached
        digits = len(self._nibble_shifts)
        bucket = self._prefix + b"B{" + b"0" * digits + b"}"
        args = [command, bucket, bytes(8)] + ([bytes(4)] if with_handle else [])
        template = np.frombuffer(_resp(*args), dtype=np.uint8)
        # "*n $len command" (n is one digit either way), "$len prefix B{", then the digits.
        at_digits = len(_resp(command)) + len(b"$%d\r\n" % len(bucket)) + len(self._prefix) + 2
        at_field = at_digits + digits + len(b"}\r\n$8\r\n")
        made = (template, at_digits, at_field, at_field + 8 + len(b"\r\n$4\r\n"))
        self._templates[command, with_handle] = made
        return made

    def _band_args(self, h: int, keys: Iterable[int]) -> list[tuple[bytes, ...]]:
        """The KEYS and ARGV of a band script for a handle and each band key."""
        packed, decimal, inline = _HANDLE.pack(h), b"%d" % h, b"%d" % MAX_INLINE
        places = map(self._band_place, keys)
        return [(bucket, spill, field, packed, decimal, inline) for bucket, field, spill in places]

    async def add_bands(self, memberships: Sequence[tuple[int, np.ndarray]]) -> None:
        """Add each handle to each of its band keys.

        HSETNX settles the usual case, a band nobody has yet, natively; only
        bands that already have members go through the _BAND_ADD script.
        """
        if not memberships:
            return
        for h, _ in memberships:
            if not 0 < h <= MAX_HANDLE:
                raise StoreError(f"handle {h} is out of range: the collection is full")
        keys = np.concatenate([k for _, k in memberships]).astype("<u8")
        handles = np.repeat([h for h, _ in memberships], [len(k) for _, k in memberships])
        if self._bulk is not None:
            payload = self._band_resp(b"HSETNX", keys, handles)
            created = await self._exchange([payload], write=True, count=len(keys))
        else:
            created = await self._cluster_exchange(
                [
                    (b"HSETNX", *self._band_place(k)[:2], _HANDLE.pack(h))
                    for k, h in zip(keys.tolist(), handles.tolist(), strict=True)
                ],
                write=True,
            )
        pairs = zip(keys.tolist(), handles.tolist(), created, strict=True)
        taken = [(h, k) for k, h, c in pairs if not c]
        await self._eval(
            _BAND_ADD, [a for h, k in taken for a in self._band_args(h, [k])], write=True
        )

    async def remove_bands(self, memberships: Sequence[tuple[int, np.ndarray]]) -> None:
        """Remove each handle from each of its band keys."""
        await self._eval(
            _BAND_REMOVE,
            [a for h, keys in memberships for a in self._band_args(h, keys.tolist())],
            write=True,
        )

    async def band_lookup(self, keys: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The inline handles of all the band keys, concatenated (uint32; a handle once
        per band that has it), and (position, size) of each spilled (hot) band key,
        whose handles band_window reads."""
        if self._bulk is not None:
            payload = self._band_resp(b"HGET", keys, None)
            values = await self._exchange([payload], count=len(keys))
        else:
            places = [self._band_place(k)[:2] for k in keys.tolist()]
            values = await self._cluster_exchange([(b"HGET", *place) for place in places])
        inline, hot = [], []
        for i, v in enumerate(values):
            if v is None:
                continue
            if v[:4] == SPILLED:
                hot.append((i, int.from_bytes(v[4:8], "little")))
            else:
                inline.append(v)
        return np.frombuffer(b"".join(inline), dtype="<u4"), hot

    async def band_window(
        self, keys: np.ndarray, starts: Sequence[int], counts: Sequence[int]
    ) -> list[np.ndarray]:
        """counts[i] handles of spilled band key i, from rank starts[i] in handle order.

        One O(log n) ZRANGE each, however hot the band: SRANDMEMBER costs ~1 us
        per member read.
        """
        commands = [
            (b"ZRANGE", self._band_place(k)[2], b"%d" % start, b"%d" % (start + n - 1))
            for k, start, n in zip(keys.tolist(), starts, counts, strict=True)
        ]
        return [
            np.fromiter(map(int, members), dtype=np.int64, count=len(members))
            for members in await self._commands(commands)
        ]

    async def band_memberships(self) -> AsyncIterator[tuple[int, list[int]]]:
        """Every band key with its handles, in no order: for checks and tools, not queries."""
        pattern = self._prefix + b"B{*}"
        async for bucket in self._r.scan_iter(match=pattern, count=1000):
            fields = await self._run(self._r.hgetall(bucket))
            for field, value in fields.items():
                key = _BAND_KEY.unpack(field)[0]
                if value[:4] != SPILLED:
                    yield key, np.frombuffer(value, dtype="<u4").tolist()
                else:
                    spill = self._band_place(key)[2]
                    members = await self._run(self._r.zrange(spill, 0, -1))
                    yield key, [int(m) for m in members]
