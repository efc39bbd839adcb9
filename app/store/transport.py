"""How a store's commands reach Redis: the interface of the two transports.

SingleTransport (single.py) speaks to one server, ClusterTransport (cluster.py)
to the masters of a Redis Cluster; Store.connect picks one by URL and the store
never asks which. Both send a batch of single-key commands as packed RESP in
one exchange (one per master on a cluster, sent at once), so a query stays one
round trip per step and node touched, and parse the replies in bulk (resp.py).

With ``min_replicas`` (NEARDUP_MIN_REPLICAS) every write exchange ends with
``WAIT`` on each master it wrote to, on the same connection as its writes
(WAIT only counts the writes of its own connection), and a write that too few
replicas acknowledged is a ReplicationError (a 503): applied, perhaps not
replicated, worth retrying. Within ``replication_at_end`` (a write protocol of several
exchanges, under its ids' locks) the error is held until the protocol is done.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, ClassVar

from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException, RedisError, ResponseError

from app.core import metrics
from app.store.errors import ReplicationError, StoreUnavailableError, translate
from app.store.resp import Batch, Command, encode
from app.store.scripts import Script

# Redis's own time per command (or per key of a multi-key command), added to an
# exchange's time limit so a large batch is not cut off by a limit meant for one.
SECONDS_PER_COMMAND = 20e-6

# The replication shortfalls held by the innermost replication_at_end of this task.
_HELD: ContextVar[list[ReplicationError] | None] = ContextVar("replication_held", default=None)


def fall_short(error: ReplicationError) -> None:
    """Raise a write's replication shortfall, or hold it for the replication_at_end
    around the write."""
    held = _HELD.get()
    if held is None:
        raise error
    held.append(error)


@contextmanager
def replication_at_end() -> Iterator[None]:
    """Within: a write exchange that too few replicas acknowledged raises nothing, and the
    first such ReplicationError is raised when the block ends without another error. So a
    write of several exchanges (its locks, band entries, record, id, unlock) is applied
    whole before its caller hears of the shortfall: raised at once, it stopped the write
    midway (a deleted record whose id stayed mapped; a replacing write that left the old
    version and new band entries). A block within another defers to the outer one."""
    if _HELD.get() is not None:
        yield
        return
    held: list[ReplicationError] = []
    token = _HELD.set(held)
    try:
        yield
    finally:
        _HELD.reset(token)
    if held:
        raise held[0]


def client_options(timeout: float, min_replicas: int, replica_timeout: float) -> dict[str, Any]:
    """redis-py client options for a store.

    A command fails after one timeout, never more, so retries stay off (said
    explicitly: redis-py's Redis() default is ten, RedisCluster's three, and
    any retry of a connection error would also retry a timed-out handshake)
    and the 503 tells the caller to retry instead. A pooled connection to a
    Redis that restarted needs no retry: it is seen closed when handed out, and
    reconnected. With min_replicas, a write may wait replica_timeout for its
    replicas (WAIT) on top of the usual timeout, so the socket timeout allows both.
    """
    return {
        "socket_timeout": timeout + (replica_timeout if min_replicas else 0.0),
        "socket_connect_timeout": timeout,
        "decode_responses": False,
        "health_check_interval": 0,
        "max_connections": 256,
        "retry": Retry(NoBackoff(), 0),
    }


class Transport(ABC):
    """Sends a store's commands to Redis and answers their replies, errors translated
    (app.store.errors)."""

    cluster: ClassVar[bool]

    def __init__(
        self, client: Any, *, timeout: float, min_replicas: int, replica_timeout: float
    ) -> None:
        self.client = client  # redis-py's client, for what is not on the hot path
        self.timeout = timeout
        self.min_replicas = min_replicas
        self.replica_timeout = replica_timeout

    @abstractmethod
    async def commands(self, commands: Sequence[Command], write: bool = False) -> list[Any]:
        """Each single-key command's reply, in order, in one exchange (one per master
        on a cluster, all at once).

        A write waits for min_replicas; any error reply raises.
        """

    @abstractmethod
    async def send(self, batch: Batch, write: bool = False) -> list[Any]:
        """commands() for a batch made in one piece: packed on a single server."""

    @abstractmethod
    async def eval(
        self, script: Script, calls: Sequence[Command], write: bool = False, weight: int = 0
    ) -> list[Any]:
        """The script's reply to each call of (keys..., args...), in one exchange; weight
        is the work the calls ask of Redis in commands, when more than one a call."""

    async def ping(self) -> bool:
        """Whether Redis answers (every master of a cluster).

        A pooled connection that Redis dropped (a restart, CLIENT KILL) can be handed
        out before its close is seen; the failed one is reconnected, so one more try
        tells a blip from a Redis that is away, and readiness does not flap. Only a
        failure that came at once is tried again: one that took the timeout is Redis
        not answering, and a probe waits one timeout, never two."""
        started = time.monotonic()
        try:
            return await self._ping()
        except StoreUnavailableError as exc:
            quick = time.monotonic() - started < self.timeout / 2
            if not quick or not isinstance(exc.__cause__, RedisConnectionError):
                raise
            return await self._ping()

    @abstractmethod
    async def _ping(self) -> bool:
        """One PING (of every master of a cluster)."""

    @abstractmethod
    async def fewest_replicas(self) -> int:
        """The number of replicas connected to the master with the fewest."""

    @abstractmethod
    async def _fsync_always(self) -> list[dict[Any, Any]]:
        """CONFIG SET appendfsync always wherever writes may land; each such node's
        appendonly setting (CONFIG GET)."""

    async def close(self) -> None:
        await self.client.aclose()

    async def info(self, section: str) -> dict[str, Any]:
        info: dict[str, Any] = await self.run(self.client.info(section))
        return info

    async def masters_info(self, section: str) -> list[dict[str, Any]]:
        """INFO section of every master: the one Redis, or each master of a cluster."""
        return [await self.info(section)]

    async def fsync_always(self) -> str | None:
        """Ask Redis to fsync its append-only file before every reply.

        Returns None when that is in force, else why not (CONFIG refused, as
        managed Redis services do, or the append-only file switched off).
        """
        try:
            aofs = await self._fsync_always()
        except ResponseError as exc:
            return f"CONFIG SET appendfsync always was refused ({exc})"
        except (RedisError, RedisClusterException, OSError) as exc:
            raise translate(exc) from exc
        if any(a.get(b"appendonly", a.get("appendonly")) not in (b"yes", "yes") for a in aofs):
            return "appendonly is off, so nothing is written to disk before a reply"
        return None

    async def key_count(self) -> int:
        """How many keys the Redis holds (DBSIZE; summed over a cluster's masters)."""
        return int(await self.run(self.client.dbsize()))

    def scan(self, pattern: bytes) -> AsyncGenerator[bytes, None]:
        """Every key that matches pattern (SCAN; on every master of a cluster), in no order."""
        return self._translated(self.client.scan_iter(match=pattern, count=1000))

    def hscan(self, key: bytes, count: int) -> AsyncGenerator[tuple[bytes, bytes], None]:
        """Every field and value of a HASH (HSCAN, count at a time), in no order."""
        return self._translated(self.client.hscan_iter(key, count=count))

    async def _translated(self, iterator: Any) -> AsyncGenerator[Any, None]:
        """iterator's items, its errors translated as run's are (a SCAN that timed out
        is Redis unavailable, a 503, not an error of redis-py's reaching a route)."""
        try:
            async for item in iterator:
                yield item
        except (RedisError, RedisClusterException, OSError) as exc:
            raise self._failed(exc) from exc
        finally:
            await iterator.aclose()

    def _failed(self, exc: Exception) -> Exception:
        error = translate(exc)
        if isinstance(error, StoreUnavailableError):
            self.unavailable()
        return error

    async def run(self, coro: Any, op: str = "command") -> Any:
        """Await one redis-py call, timed, its errors translated."""
        started = time.perf_counter()
        try:
            return await coro
        except (RedisError, RedisClusterException, OSError) as exc:
            raise self._failed(exc) from exc
        finally:
            metrics.REDIS_SECONDS.labels(op).observe(time.perf_counter() - started)

    def unavailable(self) -> None:  # noqa: B027 - a hook; one server has nothing to do
        """Called after an error that may mean Redis's topology changed."""

    def waits(self, write: bool) -> bool:
        """Whether an exchange ends with WAIT: a write with min_replicas, unless a step
        before it in the same replication_at_end fell short already (its answer is that
        503 whatever this one gets: a write of many steps would wait each one out)."""
        return write and bool(self.min_replicas) and not _HELD.get()

    def wait_command(self) -> bytes:
        """RESP of the WAIT that makes a write wait for min_replicas."""
        timeout_ms = max(1, round(self.replica_timeout * 1000))
        return encode(b"WAIT", b"%d" % self.min_replicas, b"%d" % timeout_ms)

    def check_acked(self, acked: Sequence[Any]) -> None:
        """Refuse a write that fewer replicas than required acknowledged (WAIT replies; an
        error reply, as from a node that is no longer a master, counts as none)."""
        counts = [a if isinstance(a, int) else 0 for a in acked]
        if counts and min(counts) < self.min_replicas:
            fall_short(
                ReplicationError(
                    f"the write was applied, but only {min(counts)} of the "
                    f"{self.min_replicas} replicas required (NEARDUP_MIN_REPLICAS) "
                    f"acknowledged it within {self.replica_timeout:g} s, so it may not "
                    "survive a failover; retry"
                )
            )
