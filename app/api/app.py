"""The FastAPI application: wiring of settings, Redis, the index and routes."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from app import __version__, kernel
from app.api import auth, openapi, problems, ratelimit
from app.api.edge import Edge
from app.api.problems import extend_openapi
from app.api.routes import (
    bulk,
    checks,
    collections,
    documents,
    duplicates,
    health,
    similar,
    sites,
    ui,
)
from app.api.routing import twins
from app.core.settings import Settings, load_settings
from app.index.formats import workers
from app.service import logs
from app.service.collections import Collections
from app.service.runtime import UncheckedIndex, open_index
from app.service.supervisor import supervised_dir
from app.service.sweeper import StartupCheck, expire_forever, sweep_forever

STARTUP_CHECK_WAIT_S = 5.0
CPU_THREADS = 4


def telemetry(enabled: bool) -> dict[str, Any]:
    """FastAPI's keyword for its native OpenTelemetry, off unless NEARDUP_OPENTELEMETRY.

    Left on, FastAPI asks the global providers on every request whether any is set up
    (2.3 µs a request here, of GET /similar's ~80 µs of HTTP handling), for spans nobody
    collects where neardup's own metrics are Prometheus' (/metrics). A FastAPI too old
    to have the keyword is not given it.
    """
    if enabled or "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    off = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    return {"telemetry": off}


def create_app(settings: Settings | None = None) -> FastAPI:
    """Build the service. Without NEARDUP_REDIS_URL it runs its own embedded Redis."""
    settings = settings or load_settings()
    logs.configure(settings.log_format, settings.log_level)
    # Batch buffers are reused instead of page-faulted in again for every request.
    kernel.tune_allocator()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # The threads CPU work runs in (asyncio.to_thread: alignments, large sketches),
        # bounded: a few heavy queries queue instead of each taking a thread, and the
        # event loop keeps serving the rest meanwhile.
        pool = ThreadPoolExecutor(CPU_THREADS, thread_name_prefix="neardup-cpu")
        asyncio.get_running_loop().set_default_executor(pool)
        # A Redis that is down at start-up means 503s until it is back, not a crash.
        async with open_index(settings, wait_for_redis=True) as index:
            app.state.index = index
            app.state.collections = Collections(index, settings)
            tasks = []
            if not app.state.startup_check.done:
                served = app.state.collections.served
                check = app.state.startup_check
                tasks.append(asyncio.create_task(check.run(index, served)))
                # A small collection is checked before the first request is taken; a large
                # one (or one whose Redis is away) goes on in the background while
                # /readyz answers 503, as do the other collections on the Redis.
                if not isinstance(index, UncheckedIndex):
                    await check.first_checked(tasks[0], STARTUP_CHECK_WAIT_S)
            tasks.append(
                asyncio.create_task(
                    expire_forever(
                        app.state.collections.served,
                        settings.expiry_interval,
                        settings.expiry_batch,
                    )
                )
            )
            if settings.check_interval:
                tasks.append(asyncio.create_task(sweep_forever(index, settings.check_interval)))
            try:
                yield
            finally:
                for task in tasks:
                    task.cancel()

    app = FastAPI(
        title="neardup",
        version=__version__,
        description="Near-duplicate document lookup: MinHash LSH on Redis, "
        "every answer verified by fingerprint Jaccard.",
        lifespan=lifespan,
        docs_url=None,  # served from packaged assets by app.api.openapi, not a CDN
        # A path the API does not have is a 404, not a 307 to another route: a check id
        # of slashes, or /documents/ with no id, went to the POST-only route.
        redirect_slashes=False,
        redoc_url=None,
        **telemetry(settings.opentelemetry),
    )
    openapi.install_docs(app)
    app.state.settings = settings
    # Files in: how many worker processes read PDF, DOCX and ODT files, and for how long.
    workers.configure(settings.extract_workers, settings.extract_timeout, settings.max_text_bytes)
    # /readyz waits for it: what a crash left is repaired before the service says ready.
    app.state.startup_check = StartupCheck(settings.startup_check)
    # /healthz fails while the supervisor of `neardup serve` cannot start the embedded Redis.
    app.state.supervised_dir = supervised_dir(settings.redis_url, settings.data_dir)
    problems.install(app)
    extend_openapi(app, openapi.document)
    # The schema's and the docs' own routes, none of them in the schema.
    docs_routes = list(app.router.routes)
    routers = (bulk, documents, similar, checks, sites, duplicates, health, ui, collections)
    for router in (r.router for r in routers):
        # The routes themselves, not include_router(): an included router is matched
        # through layers of per-request bookkeeping (twice for the router that has the
        # route), which cost more than the rest of a /healthz. The routers carry no
        # prefix, tags or dependencies of the inclusion, so the schema is the same.
        app.router.routes.extend(router.routes)
    # Every document, similar and duplicates route again under /collections/{name}:
    # the same handlers, whose get_index reads the name from the path.
    for r in (bulk, documents, similar, checks, sites, duplicates):
        app.router.routes.extend(twins(r.router.routes))
    # ...asked last: they match with whole regexes, and the router asked them before
    # every API route of every request. No path of theirs is an API route's, so the
    # order changes no match, and the schema (built in route order) leaves them out.
    del app.router.routes[: len(docs_routes)]
    app.router.routes.extend(docs_routes)
    keys = auth.install(app, settings)
    if settings.rate_limit:
        # Inside Edge: a request without a valid key is refused before it costs a token.
        burst = ratelimit.burst_of(settings.rate_limit, settings.rate_burst)
        app.add_middleware(ratelimit.RateLimit, rate=settings.rate_limit, burst=burst, keys=keys)
        extend_openapi(app, ratelimit.document)
    # Request id, log line and metrics; API keys; body limit; deadline: one layer.
    app.add_middleware(
        Edge,
        keys=keys,
        max_bytes=settings.max_body_bytes,
        timeout=settings.request_timeout,
        collection=settings.collection,
    )
    return app
