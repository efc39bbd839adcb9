"""Liveness and readiness."""

from __future__ import annotations

import contextlib

from fastapi import APIRouter, Request, Response

from app import kernel, metrics
from app.api.deps import get_index
from app.api.errors import ProblemResponse, problem
from app.index import ConfigMismatchError
from app.storage import StoreError, StoreUnavailableError

router = APIRouter(tags=["health"])


_OK = b'{"status":"ok"}'


@router.get("/healthz", response_model=dict[str, str])
async def healthz() -> Response:
    """The process is up (it does not look at Redis)."""
    return Response(_OK, media_type="application/json")  # the same answer, not re-validated


@router.get("/metrics", response_class=Response)
async def prometheus(request: Request) -> Response:
    """Prometheus metrics: requests, latency, candidates, verification, Redis, documents."""
    index = request.app.state.index
    # Without Redis the other metrics are still worth serving.
    with contextlib.suppress(StoreUnavailableError, StoreError):
        metrics.DOCUMENTS.set(await index.count())
    body, content_type = metrics.render()
    return Response(body, media_type=content_type)


@router.get("/readyz", response_model=None)
async def readyz(request: Request) -> dict[str, object] | ProblemResponse:
    """Redis answers and the kernel is loaded: the service can take traffic."""
    try:
        index = await get_index(request)  # checks a collection opened while Redis was down
        await index.store.ping()
    except (StoreUnavailableError, StoreError, ConfigMismatchError) as exc:
        return problem(503, "Not ready", str(exc), headers={"Retry-After": "1"})
    return {"status": "ready", "simd": kernel.simd_level(), "documents": await index.count()}
