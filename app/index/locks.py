"""How a write takes its lock: every writer of an id (ingest, replace, delete, expiry,
repair) holds that id's lock from before it reads the id's handle until its last step.

So the id -> handle mapping changes only under the lock, and an id has at most one
live handle: a writer can never attach a record to a handle that a concurrent delete
has already unmapped. (Locking the handle instead, after looking it up, left exactly
that window.) Handles are never reused, so an unmapped handle is unreachable for good;
``app.index.check`` finds and removes whatever of one a crash left behind.
"""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.core import metrics
from app.index.errors import BusyError
from app.store import Store, replication_at_end

# How long a lock lives unreleased (a writer that died holding it).
LOCK_TTL_MS = 10_000
# How long a writer waits for the locks of its ids before it answers Busy.
LOCK_WAIT_S = 10.0


@asynccontextmanager
async def locked(store: Store, ids: list[str]) -> AsyncIterator[None]:
    """Hold the write locks of these ids: no other writer changes them meanwhile. A
    replication shortfall (NEARDUP_MIN_REPLICAS) of any step is raised once the write
    is done and its locks are released, never between its steps."""
    with replication_at_end():
        token = await _lock(store, ids)
        try:
            yield
        finally:
            held = await store.unlock(ids, token)
            if not all(held):
                # Expired mid-write (LOCK_TTL_MS), so another writer may have
                # overlapped. Nothing is retried: the consistency check
                # (app.index.check) cleans a handle that lost its id.
                metrics.LOCKS_EXPIRED.inc(held.count(False))


async def _lock(store: Store, ids: list[str]) -> bytes:
    """Take the write locks of all ids, waiting for other writers.

    All or nothing: a writer that cannot take every lock releases the ones
    it took before it waits, so two batches sharing ids cannot deadlock.
    """
    token = uuid.uuid4().bytes + os.getpid().to_bytes(4, "little")
    wanted = list(dict.fromkeys(ids))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LOCK_WAIT_S
    delay = 0.002
    while True:
        got = await store.try_lock(wanted, token, LOCK_TTL_MS)
        if all(got):
            return token
        await store.unlock([h for h, ok in zip(wanted, got, strict=True) if ok], token)
        if loop.time() > deadline:
            raise BusyError("another request kept writing the same document; retry")
        await asyncio.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.05)
