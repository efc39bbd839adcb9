"""What the store raises, and how a redis-py error becomes one of them."""

from __future__ import annotations

from redis.exceptions import (
    AskError,
    ClusterError,
    OutOfMemoryError,
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


class StoreFullError(errors.Full):
    """Redis refused a write for memory (OOM at maxmemory under `noeviction`)."""


class StoreError(errors.Unavailable):
    """Redis answered with an error that retrying will not fix (a 503: the store, not
    the request, is at fault)."""


class StoreAuthError(errors.Misconfigured):
    """Redis refuses this service's credentials: NEARDUP_REDIS_URL must carry them."""


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


# Redis' OOM reply (redis-py raises OutOfMemoryError for it); from inside a
# script it comes wrapped in the script's error, so its text is looked for too.
_OOM = "used memory > 'maxmemory'"


# Redis' replies to a client without (or with wrong) credentials.
_AUTH = (
    "NOAUTH",
    "WRONGPASS",
    "HELLO must be called with the client already authenticated",
    "invalid username-password pair",
    "Authentication required",
    "invalid password",
)


def translate(
    exc: Exception,
) -> StoreError | StoreUnavailableError | StoreFullError | StoreAuthError:
    """The store's error for a redis-py exception or error reply: full when Redis
    refuses writes for memory, a configuration error when it refuses the credentials,
    unavailable when retrying may pass, else a StoreError."""
    said = str(exc)
    if any(a in said for a in _AUTH):
        return StoreAuthError(
            f"Redis refuses this service's credentials ({said.strip()}): give the user and "
            "password in NEARDUP_REDIS_URL (redis://user:password@host:port/0, or "
            "redis://:password@host:port/0 without ACL users)"
        )
    if isinstance(exc, OutOfMemoryError) or _OOM in said:
        return StoreFullError(
            "Redis is out of memory (used_memory reached maxmemory) and refuses writes; "
            "nothing stored is lost and reads still work. Raise Redis' maxmemory "
            "(CONFIG SET maxmemory) or add cluster masters, then retry"
        )
    if isinstance(exc, _UNAVAILABLE) or said.startswith(_UNAVAILABLE_REPLIES):
        return StoreUnavailableError(f"Redis is unavailable: {exc}")
    return StoreError(f"Redis error: {exc}")
