"""The one Redis speaker: a collection's keys, and every command sent to Redis."""

from app.store.store import (
    MAX_INLINE,
    ReplicationError,
    Store,
    StoreError,
    StoreUnavailableError,
    buckets_for,
)

__all__ = [
    "MAX_INLINE",
    "ReplicationError",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "buckets_for",
]
