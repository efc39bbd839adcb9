"""Opening a collection's index from settings: the service and the CLI share it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app.config import Settings
from app.embedded import EmbeddedRedis
from app.index import Index, Params
from app.storage import Store


def params_of(settings: Settings) -> Params:
    """The collection parameters the settings ask for."""
    return Params.create(
        settings.shingle,
        settings.num_perm,
        settings.fingerprint_size,
        settings.seed,
        settings.threshold,
    )


@asynccontextmanager
async def open_index(settings: Settings) -> AsyncIterator[Index]:
    """The configured collection's index, on NEARDUP_REDIS_URL or an embedded Redis."""
    embedded = None
    url = settings.redis_url
    if url is None:
        embedded = EmbeddedRedis(settings.data_dir, settings.durability).start()
        url = embedded.url
    store = Store.connect(url, settings.collection, settings.redis_timeout)
    try:
        yield await Index.open(
            store, params_of(settings), settings.candidate_cap, settings.max_text_bytes
        )
    finally:
        await store.close()
        if embedded is not None:
            embedded.stop()
