"""Liveness and readiness."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app import kernel
from app.api.errors import ProblemResponse, problem
from app.storage import StoreError, StoreUnavailableError

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up (it does not look at Redis)."""
    return {"status": "ok"}


@router.get("/readyz", response_model=None)
async def readyz(request: Request) -> dict[str, object] | ProblemResponse:
    """Redis answers and the kernel is loaded: the service can take traffic."""
    index = request.app.state.index
    try:
        await index.store.ping()
    except (StoreUnavailableError, StoreError) as exc:
        return problem(503, "Not ready", str(exc), headers={"Retry-After": "1"})
    return {"status": "ready", "simd": kernel.simd_level(), "documents": await index.count()}
