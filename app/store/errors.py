"""What the store raises, and how a redis-py error becomes one of them."""

from __future__ import annotations

from redis.exceptions import (
    AskError,
    ClusterError,
    ReadOnlyError,
    RedisClusterException,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.core import errors


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


def translate(exc: Exception) -> StoreError | StoreUnavailableError:
    """The store's error for a redis-py exception or error reply: unavailable when
    retrying may pass, else a StoreError."""
    if isinstance(exc, _UNAVAILABLE) or str(exc).startswith(_UNAVAILABLE_REPLIES):
        return StoreUnavailableError(f"Redis is unavailable: {exc}")
    return StoreError(f"Redis error: {exc}")
