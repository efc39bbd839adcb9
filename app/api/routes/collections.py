"""POST/GET/DELETE /collections: collections as resources, and what describes one.

Each collection has its own fixed parameters and its own keys in Redis
(app.index.collections); the document, similar and duplicates routes reach one
under /collections/{name}/... (app.api.app includes them twice).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request, Response

from app.api import schemas
from app.api.routing import Route
from app.core import metrics
from app.index import Index
from app.index.index import DEFAULT_CONTAINMENT, DISCOVERY_BUDGET
from app.store.layout import MAX_INLINE

router = APIRouter(tags=["collections"], route_class=Route)
Name = schemas.CollectionName


async def describe(index: Index, name: str) -> dict[str, Any]:
    """A collection's fixed parameters, its size, and the bounds of a query's work
    (GET /collections/{name}), and the defaults a query takes there, which the report
    page reads instead of typing them again."""
    return {
        "name": name,
        "documents": await index.count(),
        "parameters": asdict(index.params),
        "candidate_cap": index.candidate_cap,
        "defaults": {
            "threshold": {"jaccard": index.params.threshold, "containment": DEFAULT_CONTAINMENT},
            "limit": schemas.DEFAULT_LIMIT,
            "max_limit": schemas.MAX_LIMIT,
        },
        # A band with more documents than this is hot (kept in a sorted set of its own).
        "hot_band_size": MAX_INLINE,
        # A query reads every member of its bands while they hold at most this many
        # handles together; past it, an even share of each (its work stays bounded).
        "discovery_budget": DISCOVERY_BUDGET * index.candidate_cap,
        # What the cap did to this process's queries so far, every collection together
        # (the same as /metrics).
        "since_start": {
            "queries": _sample(metrics.CANDIDATES, "_count"),
            "capped": _sample(metrics.CANDIDATES_CAPPED, "_total"),
            "verified": _sample(metrics.CANDIDATES_VERIFIED, "_total"),
            "kept": _sample(metrics.CANDIDATES_KEPT, "_total"),
        },
    }


def _sample(metric: Any, suffix: str) -> int:
    """The value of an unlabelled metric's sample with this suffix (prometheus_client's
    public collect(), not its internals)."""
    return int(sum(s.value for f in metric.collect() for s in f.samples if s.name.endswith(suffix)))


@router.post(
    "/collections",
    status_code=201,
    response_model=dict[str, Any],
    responses={
        200: {"description": "it exists with these parameters already"},
        409: {"model": schemas.Problem, "description": "it exists with other parameters"},
    },
)
async def create(
    body: schemas.CollectionIn,  # type: ignore[valid-type]
    request: Request,
    response: Response,
) -> dict[str, Any]:
    """Make a collection; parameters not given are the service's settings. 201 when made,
    200 when it exists with the same parameters, 409 when with others."""
    given = body.model_dump(exclude_none=True)  # type: ignore[attr-defined]
    name = given.pop("name")
    index, created = await request.app.state.collections.create(name, given)
    response.status_code = 201 if created else 200
    return await describe(index, name)


@router.get("/collections", response_model=dict[str, Any])
async def listing(request: Request) -> dict[str, Any]:
    """Every collection with its number of documents, and which one is the default."""
    collections = request.app.state.collections
    return {"default": collections.settings.collection, "collections": await collections.listing()}


@router.get(
    "/collections/{collection}",
    response_model=dict[str, Any],
    responses={
        404: {"model": schemas.Problem, "description": "no such collection"},
        409: {"model": schemas.Problem, "description": "the collection is being deleted"},
    },
)
async def read(collection: Name, request: Request) -> dict[str, Any]:
    """A collection's parameters (bands and rows included), size and query bounds."""
    return await describe(await request.app.state.collections.get(collection), collection)


@router.delete(
    "/collections/{collection}",
    status_code=204,
    responses={
        404: {"model": schemas.Problem, "description": "no such collection"},
        409: {"model": schemas.Problem, "description": "the service's default collection"},
    },
)
async def delete(collection: Name, request: Request) -> Response:
    """Remove every key of a collection, a batch at a time; a delete that was cut off
    (a crash, a lost connection) is finished by sending it again."""
    await request.app.state.collections.delete(collection)
    return Response(status_code=204)
