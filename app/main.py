"""The FastAPI application: wiring of settings, Redis, the index and routes."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from app import __version__
from app.api import documents, errors, health, similar
from app.api.limits import BodyLimit, Deadline
from app.config import Settings, load_settings
from app.embedded import EmbeddedRedis
from app.index import Index, Params
from app.storage import Store

log = logging.getLogger("neardup")


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. Without NEARDUP_REDIS_URL it runs its own embedded Redis."""
    settings = settings or load_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        embedded = None
        url = settings.redis_url
        if url is None:
            embedded = EmbeddedRedis(settings.data_dir, settings.durability).start()
            url = embedded.url
            log.info("embedded Redis on %s (data in %s)", url, settings.data_dir)
        store = Store.connect(url, settings.collection, settings.redis_timeout)
        params = Params.create(
            settings.shingle,
            settings.num_perm,
            settings.fingerprint_size,
            settings.seed,
            settings.threshold,
        )
        app.state.index = await Index.open(
            store, params, settings.candidate_cap, settings.max_text_bytes
        )
        try:
            yield
        finally:
            await store.close()
            if embedded is not None:
                embedded.stop()

    app = FastAPI(
        title="neardup",
        version=__version__,
        description="Near-duplicate document lookup: MinHash LSH on Redis, "
        "every answer verified by fingerprint Jaccard.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    errors.install(app)
    app.include_router(documents.router)
    app.include_router(similar.router)
    app.include_router(health.router)
    app.add_middleware(Deadline, timeout=settings.request_timeout)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    return app
