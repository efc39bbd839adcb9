"""Where a read may go: a replica, when the request is a query and allows it.

Reads from replicas are opt-in twice: the service turns them on
(NEARDUP_READ_FROM_REPLICAS, given to the transport at connect), and each query
of the index marks its own reads as replica-safe (``replica_reads``). A request
asking ``consistency=strong`` marks itself ``strong``, which wins. Everything
else (writes, and every read a write makes under its locks) goes to the masters.

Even then a transport sends an exchange to a replica only when every command in it
is one of READ_ONLY: a command that writes never reaches a replica by mistake.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

# Commands that never write, and which a read-only replica therefore serves.
READ_ONLY = frozenset(
    {
        b"GET", b"MGET", b"GETRANGE", b"STRLEN", b"EXISTS", b"TYPE", b"PTTL", b"TTL",
        b"HGET", b"HMGET", b"HLEN", b"HEXISTS", b"HSTRLEN", b"HGETALL", b"HSCAN",
        b"ZRANGE", b"ZRANGEBYSCORE", b"ZREVRANGE", b"ZCARD", b"ZCOUNT", b"ZSCORE",
        b"ZMSCORE", b"ZRANK", b"SMEMBERS", b"SISMEMBER", b"SCARD", b"SCAN",
    }
)  # fmt: skip

_replica_ok: ContextVar[bool] = ContextVar("neardup_replica_reads", default=False)
_strong: ContextVar[bool] = ContextVar("neardup_strong_reads", default=False)


@contextlib.contextmanager
def replica_reads() -> Iterator[None]:
    """Within it, reads may go to replicas (when the store has them and the request
    did not ask for strong consistency)."""
    token = _replica_ok.set(True)
    try:
        yield
    finally:
        _replica_ok.reset(token)


def strong(on: bool = True) -> None:
    """Mark the current request (its task's context) as reading from masters only.

    Set for the rest of the task, not reset: a streamed answer reads after its
    route returned, and a mark that outlives its request can only send reads to
    the masters, the safe side.
    """
    if on:
        _strong.set(True)


def replica_allowed() -> bool:
    """Whether the reads made now may go to a replica."""
    return _replica_ok.get() and not _strong.get()
