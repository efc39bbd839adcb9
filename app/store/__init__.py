"""The one Redis speaker: a collection's keys, and every command sent to Redis.

store.py holds the domain operations (ids.py the id map's, bands.py band
memberships', templates.py site templates', checks.py stored checks'), layout.py
where each thing lives, scripts/ the Lua scripts, resp.py the packed encoding and
bulk reply reading, single.py and cluster.py the two transports (one interface,
transport.py, chosen at connect), errors.py what the store raises.
"""

from app.store.bands import ForeignEntry
from app.store.errors import ReplicationError, StoreError, StoreFullError, StoreUnavailableError
from app.store.layout import (
    ANCHOR_SALT,
    ANCHOR_SPREAD,
    MAX_INLINE,
    PLACE_BITS,
    buckets_for,
    id_buckets_for,
)
from app.store.store import Candidates, Memory, Store
from app.store.transport import replication_at_end

__all__ = [
    "ANCHOR_SALT",
    "ANCHOR_SPREAD",
    "MAX_INLINE",
    "PLACE_BITS",
    "Candidates",
    "ForeignEntry",
    "Memory",
    "ReplicationError",
    "Store",
    "StoreError",
    "StoreFullError",
    "StoreUnavailableError",
    "buckets_for",
    "id_buckets_for",
    "replication_at_end",
]
