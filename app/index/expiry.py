"""Document expiry: what is still alive at read time, and one bounded sweep.

Every record carries its own expiry (app.index.records), so a read that
verifies records drops an expired one in the same step: a document stops
answering the millisecond it expires, whether or not it has been swept yet.
The `exp` sorted set (handle by expiry time) is only the sweeper's queue: a
handle is queued before its record is written and taken off after its
record is gone, so a crash leaves at most an entry the next sweep settles.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from app.core import metrics
from app.core.settings import Settings
from app.index import records
from app.store import Store

if TYPE_CHECKING:
    from app.index.index import Index

# A queued handle without a record may be a first write in flight (queued, record not
# yet written); it is dropped only once it is due by more than a write lock lives.
GRACE_MS = 10_000
DEFAULT_SWEEP_BATCH = 100
# The longest a document may live, however its expiry is given: NEARDUP_DEFAULT_TTL's
# own bound (100 years), read from the setting so the two cannot drift.
MAX_TTL_S: int = next(
    m.le for m in Settings.model_fields["default_ttl"].metadata if getattr(m, "le", None)
)
# The last instant RFC 3339 (and Python's datetime) can say, 9999-12-31T23:59:59.999Z: an
# expiry stored past it by an older release is shown as this.
LATEST_MS = 253_402_300_799_999
SIDE_BY_SIDE = 8


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


async def sweep(index: Index, at_ms: int | None = None, most: int = DEFAULT_SWEEP_BATCH) -> int:
    """Remove up to `most` documents due by at_ms (now), each as DELETE does, under its
    id's lock (Index.expire); returns how many documents were removed.

    Bounded work: one read of the queue, one of the records, then one delete each.
    """
    at = now_ms() if at_ms is None else at_ms
    store = index.store
    due = await store.due_expiries(at, most)
    if not due:
        return 0
    raws = await store.records([h for h, _ in due])
    settled: list[int] = []
    removals: list[tuple[str, int]] = []
    for (h, due_ms), raw in zip(due, raws, strict=True):
        if raw is None:
            # Removed already (a delete, or a sweep cut off before its last step), or a
            # first write not yet at its record: that one is young, so it is left alone.
            if due_ms < at - GRACE_MS:
                settled.append(h)
            continue
        removals.append((records.id_of(raw), h))
    # A few side by side (each holds only its own id's lock), so a remote Redis's round
    # trips overlap; a few, so a tick never takes more connections than a request does.
    removed = 0
    for k in range(0, len(removals), SIDE_BY_SIDE):
        part = removals[k : k + SIDE_BY_SIDE]
        removed += sum(await asyncio.gather(*(index.expire(i, h, at) for i, h in part)))
    await store.drop_expiries(settled)
    if removed:
        metrics.DOCUMENTS_EXPIRED.inc(removed)
    return removed
