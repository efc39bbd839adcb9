"""The consistency check as a background task (NEARDUP_CHECK_INTERVAL, off by default)."""

from __future__ import annotations

import asyncio
import logging

from app.core.errors import Unavailable
from app.index import Index
from app.index.check import check
from app.service.runtime import UncheckedIndex

log = logging.getLogger("neardup")
# Slept between batches of records, so a pass never takes Redis from the traffic.
PAUSE_S = 0.005


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
            log.warning(
                "consistency check repaired %s",
                ", ".join(f"{n} {kind}" for kind, n in report.repaired.items() if n),
            )
