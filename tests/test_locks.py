"""Write locks (Store.try_lock and Store.unlock, which app/index/locks.py holds around
every write): taken only when free, released only by the token that holds them, on one
Redis and on a cluster."""

from __future__ import annotations

import asyncio

import pytest

from app.store import Store
from app.store.store import LOCKS_PER_CALL

pytestmark = pytest.mark.both_stores


@pytest.mark.parametrize("scripted", [True, False])
def test_unlock_releases_only_the_locks_its_token_still_holds(
    store_url: str, collection: str, scripted: bool
) -> None:
    """Of more ids than one unlock_many call takes, unlock frees exactly those its token
    still holds: an id locked by another writer stays locked and one whose lock expired
    reads as not held, whether the locks go in many-lock calls or one call each."""
    ids = [f"doc-{i}" for i in range(2 * LOCKS_PER_CALL + 7)] + ["ü/ß é"]

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        store.scripted = scripted and store.scripted  # a cluster always goes one by one
        try:
            assert await store.try_lock(ids[:-2], b"mine", 10_000) == [True] * (len(ids) - 2)
            assert await store.try_lock(ids[-2:-1], b"mine", 1) == [True]  # expires at once
            assert await store.try_lock(ids[-1:], b"theirs", 10_000) == [True]
            assert await store.try_lock(ids[:3], b"theirs", 10_000) == [False] * 3
            await asyncio.sleep(0.05)
            held = await store.unlock(ids, b"mine")
            assert held == [True] * (len(ids) - 2) + [False, False]
            # Every lock of "mine" is free again; "theirs" still holds its own.
            assert await store.try_lock(ids, b"next", 10_000) == [True] * (len(ids) - 1) + [False]
            assert await store.unlock(ids[-1:], b"theirs") == [True]
        finally:
            await store.close()

    asyncio.run(run())
