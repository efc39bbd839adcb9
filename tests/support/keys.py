"""Every Redis key of a collection, for tests that compare what a write left behind."""

from __future__ import annotations

from collections.abc import AsyncIterator

from app.store import Store


async def scan_keys(store: Store) -> AsyncIterator[bytes]:
    """Every key of store's collection (SCAN on every master)."""
    async for key in store.transport.scan(f"nd:{store.collection}:*".encode()):
        yield key
