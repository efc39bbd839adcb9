"""Document expiry: what is still alive at read time.

Every record carries its own expiry (app.index.records), so a read that
verifies records drops an expired one in the same step: a document stops
answering the millisecond it expires, whether or not it has been swept yet.
The `exp` sorted set (handle by expiry time) is only the sweeper's queue: a
handle is queued before its record is written and taken off after its
record is gone, so a crash leaves at most an entry the next sweep settles.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

from app.core.settings import Settings
from app.index import records
from app.index.locks import LOCK_TTL_MS
from app.store import Store

# A queued handle without a record may be a first write in flight (queued, record not
# yet written); it is dropped only once it is due by more than a write lock lives.
GRACE_MS = LOCK_TTL_MS
# The longest a document may live, however its expiry is given: NEARDUP_DEFAULT_TTL's
# own bound (100 years), read from the setting so the two cannot drift.
MAX_TTL_S: int = next(
    m.le for m in Settings.model_fields["default_ttl"].metadata if getattr(m, "le", None)
)
# The last instant RFC 3339 (and Python's datetime) can say, 9999-12-31T23:59:59.999Z: an
# expiry stored past it by an older release is shown as this.
LATEST_MS = 253_402_300_799_999


def now_ms() -> int:
    """The wall-clock time expiries are compared with, in ms since the epoch."""
    return time.time_ns() // 1_000_000


def alive(raw: bytes, at_ms: int) -> bool:
    """Whether a record still answers at at_ms."""
    expires = records.expires_of(raw)
    return expires == 0 or expires > at_ms


def live(raws: Sequence[bytes | None], at_ms: int | None = None) -> list[bytes | None]:
    """The records as they answer now: an expired one reads as absent."""
    at = now_ms() if at_ms is None else at_ms
    return [r if r is not None and alive(r, at) else None for r in raws]


async def live_records(store: Store, handles: Sequence[int]) -> list[bytes | None]:
    """Store.records, with expired records read as absent: the read every answer uses."""
    return live(await store.records(handles))


def rfc3339(ms: int) -> str:
    """An expiry (ms since the epoch) as RFC 3339 in UTC, to the millisecond."""
    # Clamped: a record stored before expiries were bounded may say a year past 9999,
    # which datetime cannot hold; it still reads (`neardup check` reports it).
    ms = min(ms, LATEST_MS)
    return (
        datetime.fromtimestamp(ms // 1000, UTC)
        .replace(microsecond=ms % 1000 * 1000)
        .isoformat(timespec="milliseconds")[:-6]
        + "Z"
    )
