"""Liveness and readiness."""

from __future__ import annotations

import contextlib

from fastapi import APIRouter, Request, Response

from app import kernel
from app.api.deps import get_index
from app.api.problems import RETRY_AFTER, ProblemResponse, problem
from app.api.routing import Route
from app.core import metrics
from app.core.errors import Unavailable
from app.service.runtime import tell_evicting
from app.service.supervisor import down_reason

router = APIRouter(tags=["health"], route_class=Route)


_OK = b'{"status":"ok"}'


@router.get("/healthz", response_model=dict[str, str])
async def healthz(request: Request) -> Response:
    """The process is up (it does not ask Redis), and its embedded Redis, if any, can run."""
    data_dir = request.app.state.supervised_dir
    if data_dir is not None and (why := down_reason(data_dir)) is not None:
        return problem(503, "Unhealthy", why)
    return Response(_OK, media_type="application/json")  # the same answer, not re-validated


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "description": "the Prometheus text exposition format",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
async def prometheus(request: Request) -> Response:
    """Prometheus metrics: requests, latency, candidates, verification, Redis, documents."""
    index = request.app.state.index
    # Without Redis the other metrics are still worth serving.
    with contextlib.suppress(Unavailable):
        metrics.DOCUMENTS.set(await index.count())
        memory = await index.store.memory()
        metrics.REDIS_USED_MEMORY.set(memory.used)
        metrics.REDIS_EVICTING.set(memory.evicting is not None)
        metrics.REDIS_MAX_MEMORY.set(memory.limit)
    body, content_type = metrics.render()
    return Response(body, media_type=content_type)


@router.get("/readyz", response_model=None)
async def readyz(request: Request) -> dict[str, object] | ProblemResponse:
    """Redis answers, the kernel is loaded and the start-up check is done: the service
    can take traffic."""
    try:
        index = await get_index(request)  # checks a collection opened while Redis was down
        await index.ping()
    except Unavailable as exc:
        return problem(503, "Not ready", str(exc), headers=RETRY_AFTER)
    if not request.app.state.startup_check.done:
        return problem(
            503,
            "Not ready",
            "the start-up consistency check is running (it repairs what a crash left "
            "behind); ready when it ends",
            headers=RETRY_AFTER,
        )
    body: dict[str, object] = {
        "status": "ready",
        "simd": kernel.simd_level(),
        "documents": await index.count(),
    }
    # A policy set while the service runs (CONFIG SET) is seen here, not only at start-up.
    with contextlib.suppress(Unavailable):  # INFO refused (some managed services)
        said = (await index.store.memory()).evicting
        if said is not None:
            body["warnings"] = [said]
            tell_evicting(said)
    return body
