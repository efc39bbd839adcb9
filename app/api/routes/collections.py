"""POST/GET/DELETE /collections: collections as resources (described by
app.service.collections.describe).

Each collection has its own fixed parameters and its own keys in Redis
(app.index.collections); the document, similar and duplicates routes reach one
under /collections/{name}/... (app.api.app includes them twice).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from app.api import answers, replies, schemas
from app.api.routing import Route
from app.index import Index
from app.index.containment import DEFAULT_CONTAINMENT
from app.service.collections import describe

router = APIRouter(tags=["collections"], route_class=Route)
Name = schemas.CollectionName


async def _described(index: Index, name: str) -> dict[str, Any]:
    """describe()'s answer and the defaults a query takes there, which the report page
    reads instead of typing them again."""
    described = await describe(index, name)
    described["defaults"] = {
        "threshold": {"jaccard": index.params.threshold, "containment": DEFAULT_CONTAINMENT},
        "limit": answers.DEFAULT_LIMIT,
        "max_limit": schemas.MAX_LIMIT,
    }
    return described


@router.post(
    "/collections",
    status_code=201,
    response_model=dict[str, Any],
    responses={
        200: {"model": dict[str, Any], "description": "it exists with these parameters already"},
        409: {"model": replies.Problem, "description": "it exists with other parameters"},
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
    return await _described(index, name)


@router.get("/collections", response_model=dict[str, Any])
async def listing(request: Request) -> dict[str, Any]:
    """Every collection with its number of documents, and which one is the default."""
    collections = request.app.state.collections
    return {"default": collections.settings.collection, "collections": await collections.listing()}


@router.get(
    "/collections/{collection}",
    response_model=dict[str, Any],
    responses={
        404: {"model": replies.Problem, "description": "no such collection"},
        409: {"model": replies.Problem, "description": "the collection is being deleted"},
    },
)
async def read(collection: Name, request: Request) -> dict[str, Any]:
    """A collection's parameters (bands and rows included), size and query bounds."""
    return await _described(await request.app.state.collections.get(collection), collection)


@router.delete(
    "/collections/{collection}",
    status_code=204,
    responses={
        404: {"model": replies.Problem, "description": "no such collection"},
        409: {"model": replies.Problem, "description": "the service's default collection"},
    },
)
async def delete(collection: Name, request: Request) -> Response:
    """Remove every key of a collection, a batch at a time; a delete that was cut off
    (a crash, a lost connection) is finished by sending it again."""
    await request.app.state.collections.delete(collection)
    return Response(status_code=204)
