"""The one module that speaks Redis.

Key layout, every key under ``nd:{collection}:``:

    config        STRING  JSON of the collection's fixed sketch parameters
    next          STRING  INCR counter handing out integer document handles
    ids           HASH    external id -> handle
    d:{handle}    STRING  packed document record (app.records)
    l:{handle}    STRING  short-lived write lock token for one document
    b:{key}       SET     handles whose signature has this band key (8 raw bytes)

No command spans two of these keys, and every Lua script touches one key, so
the same code runs against Redis Cluster (``redis+cluster://`` URLs): a
batch of commands there is split into one pipeline per master (band
memberships and record reads by _cluster_exchange, the rest by redis-py),
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
import math
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import numpy as np
import redis.asyncio as aioredis
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
# After a cluster error, the slot map is re-read at most this often.
REFRESH_INTERVAL_S = 0.2


class StoreUnavailableError(Exception):
    """Redis cannot be reached or did not answer in time; worth retrying."""


class ReplicationError(StoreUnavailableError):
    """A write was applied but fewer replicas than required acknowledged it in time."""


class StoreError(Exception):
    """Redis answered with an error that retrying will not fix."""


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


def _resp(*args: bytes) -> bytes:
    """One command in the Redis protocol (RESP), ready to send."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")


@dataclass(frozen=True)
class ClusterURL:
    """What a redis+cluster:// URL names: startup nodes and credentials."""

    nodes: tuple[tuple[str, int], ...]
    username: str | None
    password: str | None
    ssl: bool


def parse_cluster_url(url: str) -> ClusterURL | None:
    """The parts of a redis+cluster://[user:password@]host:port[,host:port...] URL.

    None for any other URL; ValueError, saying what is wrong, for a malformed one.
    rediss+cluster:// is the same over TLS.
    """
    scheme = next((s for s in CLUSTER_SCHEMES if url.startswith(s)), None)
    if scheme is None:
        return None
    rest = url[len(scheme) :].split("/", 1)[0].split("?", 1)[0]
    userinfo, _, hosts = rest.rpartition("@")
    username = password = None
    if userinfo:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    nodes = []
    for part in hosts.split(","):
        host, colon, port = part.strip().rpartition(":")
        host = host.strip("[]")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"{scheme}host:port[,host:port...] expected, got node {part.strip()!r}"
            )
        nodes.append((host, int(port)))
    return ClusterURL(tuple(nodes), username, password, scheme.startswith("rediss"))


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
        self._timeout = timeout
        self._prefix = f"nd:{collection}:".encode()
        self._ids = self._prefix + b"ids"
        self._min_replicas = min_replicas
        self._replica_timeout = replica_timeout
        self._refresh: asyncio.Task[None] | None = None
        self._refreshed_at = 0.0

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
            await self._bulk.aclose()

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

    @staticmethod
    def _pack(command: bytes, keys: Iterable[bytes], arg: bytes) -> list[bytes]:
        """RESP of `command key arg` for each key."""
        head = b"*3\r\n$%d\r\n%s\r\n$" % (len(command), command)
        tail = b"\r\n$%d\r\n%s\r\n" % (len(arg), arg)
        return [head + b"%d\r\n" % len(k) + k + tail for k in keys]

    def _wait_command(self) -> bytes:
        """RESP of the WAIT that makes a write wait for min_replicas."""
        timeout_ms = max(1, round(self._replica_timeout * 1000))
        return _resp(b"WAIT", b"%d" % self._min_replicas, b"%d" % timeout_ms)

    async def _exchange(
        self, parts: list[bytes], write: bool = False, weight: int = 0
    ) -> list[Any]:
        """Send packed single-key commands in one write and read their replies (hiredis).

        redis-py spends ~15 us of Python per pipelined command and arms a timer
        per reply; band memberships are tens of commands per document, so on
        one server they go this way. On a cluster (commands split per node)
        they go through redis-py's cluster pipeline. A write with
        min_replicas ends with WAIT on the same connection.
        """
        if not parts:
            return []
        if self._bulk is None:
            raise RuntimeError("packed exchanges need a single Redis server")
        if write and self._min_replicas:
            parts = [*parts, self._wait_command()]
        started = time.perf_counter()
        pool = self._bulk.connection_pool
        conn = None
        # ~20 us of Redis work per command, or per key of a multi-key command.
        budget = self._timeout + 20e-6 * max(weight, len(parts))
        if write and self._min_replicas:
            budget += self._replica_timeout
        try:
            # Connecting is inside the timer: this client has no socket timeout.
            async with asyncio.timeout(budget):
                conn = await pool.get_connection()
                try:
                    await conn.send_packed_command(b"".join(parts), check_health=False)
                    replies = [await conn.read_response() for _ in parts]
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
                await pool.release(conn)
            metrics.REDIS_SECONDS.labels("pipeline").observe(time.perf_counter() - started)
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
        map that changed while it ran, makes it a ReplicationError, like _write.
        """
        if not commands:
            return []
        slots = [key_slot(c[1]) for c in commands]
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
                    for _ in parts:
                        try:
                            replies.append(await conn.read_response(timeout=math.inf))
                        except ResponseError as exc:  # the connection stays in step
                            replies.append(exc)
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

    async def _write(self, build: Callable[[Any], object], keys: Sequence[bytes]) -> list[Any]:
        """A pipeline of writes to keys; with min_replicas, acknowledged once replicated.

        WAIT counts only the writes made on its own connection, so it goes at
        the end of the same pipeline: once, or on a cluster once per master
        the keys live on (redis-py sends each master's share of a pipeline
        on one connection, in order). If the slot map changed while the
        pipeline ran (a redirect, a failover), some writes may have gone
        where no WAIT followed them, so that is a ReplicationError as well.
        """
        if not self._min_replicas:
            return await self._pipeline(build)
        pipe = self._r.pipeline(transaction=False)
        build(pipe)
        sent = len(pipe)
        if not sent:
            return []
        timeout_ms = max(1, round(self._replica_timeout * 1000))
        if self._cluster:
            slots = {key_slot(k) for k in keys}
            before = await self._masters_of(slots)
            masters = {node.name: node for node in before.values()}
            for node in masters.values():
                pipe.execute_command("WAIT", self._min_replicas, timeout_ms, target_nodes=node)
        else:
            pipe.execute_command("WAIT", self._min_replicas, timeout_ms)
        replies = await self._run(pipe.execute(), "pipeline")
        acked = [int(n) for n in replies[sent:]]
        if self._cluster:
            after = await self._masters_of(slots)
            if any(after[s].name != before[s].name for s in slots):
                raise self._slots_moved()
        self._check_acked(acked)
        return replies[:sent]

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
        stored = await self._run(self._r.get(key))
        if stored is None:
            await self._write(lambda p: p.set(key, proposed, nx=True), [key])
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
            counter = self._prefix + b"next"
            (last,) = await self._write(lambda p: p.incrby(counter, len(missing)), [counter])
            first = last - len(missing) + 1
            wanted = {ids[i]: first + n for n, i in enumerate(missing)}
            await self._write(
                lambda p: [p.hsetnx(self._ids, doc_id, h) for doc_id, h in wanted.items()],
                [self._ids],
            )
            settled = await self.handles([ids[i] for i in missing])
            for i, h in zip(missing, settled, strict=True):
                known[i] = h
        if any(h is None for h in known):  # deleted between the two reads
            return await self.assign_handles(ids)
        return [int(h) for h in known]  # type: ignore[arg-type]

    async def forget_ids(self, ids: Sequence[str], handles: Sequence[int]) -> None:
        """Drop id -> handle mappings that still point at these handles."""
        await self._write(
            lambda p: [
                p.eval(_FORGET_ID, 1, self._ids, i, h) for i, h in zip(ids, handles, strict=True)
            ],
            [self._ids],
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
        keys = [self._doc(int(h)) for h in handles]
        if self._cluster:  # one GET per key, one exchange per master
            return await self._cluster_exchange([(b"GET", k) for k in keys])
        # One MGET; through _exchange so a large reply is bounded by one timer.
        (values,) = await self._exchange([_resp(b"MGET", *keys)], weight=len(keys))
        return list(values)

    async def put_records(self, records: Sequence[tuple[int, bytes]]) -> None:
        keys = [self._doc(h) for h, _ in records]
        await self._write(
            lambda p: [p.set(k, raw) for k, (_, raw) in zip(keys, records, strict=True)], keys
        )

    async def delete_records(self, handles: Sequence[int]) -> None:
        keys = [self._doc(h) for h in handles]
        await self._write(lambda p: [p.delete(k) for k in keys], keys)

    # band memberships ---------------------------------------------------------

    async def add_bands(self, memberships: Sequence[tuple[int, np.ndarray]]) -> None:
        """SADD each handle to the SET of each of its band keys."""
        await self._memberships(b"SADD", memberships)

    async def remove_bands(self, memberships: Sequence[tuple[int, np.ndarray]]) -> None:
        await self._memberships(b"SREM", memberships)

    async def _memberships(
        self, command: bytes, memberships: Sequence[tuple[int, np.ndarray]]
    ) -> None:
        if self._bulk is not None:
            parts: list[bytes] = []
            for h, keys in memberships:
                parts += self._pack(command, map(self.band_key, keys.tolist()), b"%d" % h)
            await self._exchange(parts, write=True)
            return
        await self._cluster_exchange(
            [
                (command, self.band_key(k), b"%d" % h)
                for h, keys in memberships
                for k in keys.tolist()
            ],
            write=True,
        )

    async def band_members(self, keys: np.ndarray, counts: Sequence[int]) -> list[list[bytes]]:
        """Up to counts[i] members of band key i's SET (all of a smaller SET).

        SRANDMEMBER with a count bounds the work a hot key can cause.
        """
        if self._bulk is not None:
            parts: list[bytes] = []
            for k, n in zip(keys.tolist(), counts, strict=True):
                parts += self._pack(b"SRANDMEMBER", [self.band_key(k)], b"%d" % n)
            return await self._exchange(parts)
        return await self._cluster_exchange(
            [
                (b"SRANDMEMBER", self.band_key(k), b"%d" % n)
                for k, n in zip(keys.tolist(), counts, strict=True)
            ]
        )

    async def band_cards(self, keys: np.ndarray) -> list[int]:
        """The number of members of each band key's SET."""
        return await self._pipeline(lambda p: [p.scard(self.band_key(k)) for k in keys.tolist()])
