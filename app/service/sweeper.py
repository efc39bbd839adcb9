"""The background tasks of a served collection: the consistency check, once at start-up
(NEARDUP_STARTUP_CHECK) and every NEARDUP_CHECK_INTERVAL seconds (off by default), and
the expiry sweeper's tick (NEARDUP_EXPIRY_INTERVAL)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from app.core.errors import Busy, Unavailable
from app.index import Index, expiry
from app.index.check import CheckReport, check, check_ids
from app.service.runtime import UncheckedIndex

log = logging.getLogger("neardup")
# Slept between batches of records, so a pass never takes Redis from the traffic.
PAUSE_S = 0.005
RETRY_S = 1.0


def _repaired(report: CheckReport) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in report.repaired.items() if n) or "nothing"


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


async def expire_tick(index: Index, batch: int) -> int:
    """One tick of the expiry sweeper on one collection: at most batch due documents
    removed (app.index.expiry.sweep); 0 while Redis is away."""
    try:
        if isinstance(index, UncheckedIndex):  # opened while Redis was away
            await index.check()
        return await expiry.sweep(index, most=batch)
    except (Unavailable, Busy) as exc:  # a writer holding an id: the next tick retries
        log.warning("expiry sweep skipped: %s", exc)
        return 0


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
        await asyncio.sleep(PAUSE_S if full else interval)  # a pause leaves room for traffic


class StartupCheck:
    """The pass a service makes before it reports ready: ids a crash left mapped to a
    handle whose record was never written are dropped before /readyz says yes, so its
    document count is what GET can read. Only that kind (``check_ids``, one EXISTS per
    id): the rest a crash can leave answers nothing and waits for the full check."""

    def __init__(self, enabled: bool) -> None:
        self.done = not enabled
        self.report: CheckReport | None = None

    async def run(self, index: Index) -> None:
        """Check and repair once, waiting for Redis if it is away; logs what it did."""
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
        self.report, self.done = report, True
        log.log(
            logging.INFO if report.clean else logging.WARNING,
            "start-up consistency check: %d ids, %d without a record, in %.2f s; repaired %s",
            report.ids,
            report.found["dangling_ids"],
            time.monotonic() - started,
            _repaired(report),
        )
