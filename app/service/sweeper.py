"""The background tasks of a served collection: the consistency check, once at start-up
(NEARDUP_STARTUP_CHECK) and every NEARDUP_CHECK_INTERVAL seconds (off by default), and
the expiry sweeper: one bounded sweep of due documents (sweep) per tick
(NEARDUP_EXPIRY_INTERVAL)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from app.core import metrics
from app.core.errors import Busy, NeardupError, Unavailable
from app.index import Index, records
from app.index.check import CheckReport, check, check_ids
from app.index.expiry import GRACE_MS, now_ms
from app.service.runtime import UncheckedIndex

log = logging.getLogger("neardup")
# Slept between batches of records, so a pass never takes Redis from the traffic.
PAUSE_S = 0.005
RETRY_S = 1.0
DEFAULT_SWEEP_BATCH = 100
# Removals of one sweep run side by side.
SIDE_BY_SIDE = 8


def _repaired(report: CheckReport) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in report.repaired.items() if n) or "nothing"


def _said_ids(what: str, name: str, report: CheckReport, started: float) -> None:
    """Log an id check with repair (check_ids): what ran it, on which collection, what it
    found and mended; a warning when it found anything."""
    log.log(
        logging.INFO if report.clean else logging.WARNING,
        "%s of %r: %d ids, %d without a record, in %.2f s; repaired %s",
        what,
        name,
        report.ids,
        report.found["dangling_ids"],
        time.monotonic() - started,
        _repaired(report),
    )


async def sweep_forever(index: Index, interval: float) -> None:
    """Check and repair the collection every interval seconds until cancelled."""
    while True:
        await asyncio.sleep(interval)
        try:
            if isinstance(index, UncheckedIndex):  # opened while Redis was away
                await index.check()
            report = await check(index, repair=True, pause=PAUSE_S)
        except Unavailable as exc:
            log.warning("consistency check skipped: %s", exc)
            continue
        if not report.clean:
            log.warning("consistency check repaired %s", _repaired(report))


async def sweep(index: Index, at_ms: int | None = None, most: int = DEFAULT_SWEEP_BATCH) -> int:
    """Remove up to `most` documents due by at_ms (now), each as DELETE does, under its
    id's lock (Index.expire); returns how many documents were removed.

    Bounded work: one read of the queue (app.index.expiry), one of the records, then
    one delete each.
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


async def expire_tick(index: Index, batch: int) -> int:
    """One tick of the expiry sweeper on one collection: at most batch due documents
    removed (sweep); 0 while Redis is away."""
    try:
        if isinstance(index, UncheckedIndex):  # opened while Redis was away
            await index.check()
        return await sweep(index, most=batch)
    except (Unavailable, Busy) as exc:  # a writer holding an id: the next tick retries
        log.warning("expiry sweep skipped: %s", exc)
        return 0


async def _mend_ids(index: Index) -> None:
    """The id check with repair, for a collection where a refused write could not take back
    the ids it had mapped (Redis failed mid-write): they would answer nothing and count
    as documents until a check."""
    started = time.monotonic()
    # Unmarked before the scan, not after it: a write that fails while the scan runs
    # (after it passed that write's ids) marks the store again for the next tick.
    index.store.ids_to_check = False
    try:
        report = await check_ids(index, repair=True)
    except (Unavailable, Busy) as exc:  # the next tick tries again
        index.store.ids_to_check = True
        log.warning("id check after a failed write skipped: %s", exc)
        return
    _said_ids("id check after a failed write", index.store.collection, report, started)


async def expire_forever(
    indexes: Callable[[], Awaitable[Sequence[Index]]], interval: float, batch: int
) -> None:
    """Sweep expired documents of every collection indexes() names until cancelled, one
    tick each in turn: while a tick comes back full (a backlog) the next follows at
    once, otherwise the sweeper sleeps interval seconds."""
    while True:
        try:
            found = await indexes()
        except Unavailable as exc:
            log.warning("expiry sweep skipped: %s", exc)
            found = []
        full = False
        for index in found:
            full = await expire_tick(index, batch) >= batch or full
            if index.store.ids_to_check:
                await _mend_ids(index)
        await asyncio.sleep(PAUSE_S if full else interval)  # a pause leaves room for traffic


class StartupCheck:
    """The pass a service makes before it reports ready: ids a crash left mapped to a
    handle whose record was never written are dropped before /readyz says yes, so its
    document count is what GET can read. Only that kind (``check_ids``, one EXISTS per
    id): the rest a crash can leave answers nothing and waits for the full check. The
    other collections there are (a write into one made with POST /collections is cut by
    a crash as one into the default one is) get the same pass right after, while the
    service already serves: readiness does not wait for every collection on the Redis."""

    def __init__(self, enabled: bool) -> None:
        self.report: CheckReport | None = None
        self._first = asyncio.Event()  # set once the service's own collection is checked
        if not enabled:
            self._first.set()

    @property
    def done(self) -> bool:
        """Whether the service's own collection is checked (or no check was asked)."""
        return self._first.is_set()

    async def first_checked(self, task: asyncio.Task[None], timeout: float) -> None:
        """Wait until run() (in task) has checked the service's own collection, or ended,
        or timeout passed: the other collections it goes on to are not waited for (on a
        Redis with collections made for billions of ids each took seconds)."""
        first = asyncio.ensure_future(self._first.wait())
        try:
            await asyncio.wait([task, first], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            first.cancel()

    async def run(
        self, index: Index, others: Callable[[], Awaitable[Sequence[Index]]] | None = None
    ) -> None:
        """Check and repair once, waiting for Redis if it is away; logs what it did.
        others: the service's other collections (after the default one, index)."""
        self.report = await self._one(index, index.store.collection)
        self._first.set()
        for other in await self._others(others, index):
            try:
                await self._one(other, other.store.collection)
            except NeardupError as exc:  # one that cannot be opened stops no other
                log.warning(
                    "start-up consistency check of %r skipped: %s", other.store.collection, exc
                )

    async def _others(
        self, others: Callable[[], Awaitable[Sequence[Index]]] | None, index: Index
    ) -> Sequence[Index]:
        while others is not None:
            try:
                return [i for i in await others() if i is not index]
            except Unavailable:
                await asyncio.sleep(RETRY_S)
            except NeardupError as exc:  # a collection that cannot be opened
                log.warning("start-up consistency check of the other collections: %s", exc)
                return []
        return []

    async def _one(self, index: Index, name: str) -> CheckReport:
        started = time.monotonic()
        waited = False
        while True:
            try:
                if isinstance(index, UncheckedIndex):
                    await index.check()
                report = await check_ids(index, repair=True)
                break
            except Unavailable as exc:
                if not waited:  # once: /readyz tells the rest
                    log.warning("start-up consistency check waits: %s", exc)
                waited = True
                await asyncio.sleep(RETRY_S)
        _said_ids("start-up consistency check", name, report, started)
        return report
