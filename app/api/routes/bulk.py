"""POST /documents/delete, GET /export and POST /import: many documents at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import StreamingResponse

from app.api import replies, schemas
from app.api.deps import get_index
from app.api.routing import Route
from app.core.jsonl import json_line
from app.index import Index
from app.index.filters import Filter
from app.index.removal import delete_ids, delete_where
from app.index.transfer import export, import_documents

router = APIRouter(route_class=Route)
IndexDep = Annotated[Index, Depends(get_index)]
NDJSON = "application/x-ndjson"

_DELETE_EXAMPLES = {
    "by ids": {"value": {"ids": ["https://example.com/a", "b"]}},
    "by filter": {"value": {"filter": {"metadata": {"host": "example.com"}}, "step": 1000}},
    "next step": {"value": {"filter": {"metadata": {"host": "example.com"}}, "cursor": "1001"}},
}
_EXPORT_LINES = {
    "format": "neardup-export",
    "version": 1,
    "params": {"shingle": "word:3", "num_perm": 128, "...": "..."},
}


@router.post(
    "/documents/delete",
    response_model=replies.DeleteOut,
    tags=["documents"],
)
async def delete_many(
    body: Annotated[schemas.DeleteIn, Body(openapi_examples=_DELETE_EXAMPLES)], index: IndexDep
) -> replies.DeleteOut:
    """Delete documents by ids (up to 1000), or those whose metadata matches a filter.

    By filter, each call scans `step` records in storage order and answers a cursor;
    call again with it until it is null. Every call does bounded work, and a client
    can stop and resume.
    """
    if body.ids is not None:
        n = await delete_ids(index, body.ids)
        return replies.DeleteOut(deleted=n, scanned=len(body.ids), cursor=None)
    assert body.filter is not None
    where = Filter.parse(body.filter.model_dump())
    done = await delete_where(index, where, body.cursor, body.step)
    return replies.DeleteOut(deleted=done.deleted, scanned=done.scanned, cursor=done.cursor)


@router.get(
    "/export",
    response_class=StreamingResponse,
    tags=["transfer"],
    responses={
        200: {
            "content": {NDJSON: {"example": _EXPORT_LINES}},
            "description": "a header line, then one line per document, oldest first",
        }
    },
)
async def export_all(
    index: IndexDep,
    filter: Annotated[
        str | None,
        Query(description=f"JSON: {schemas.FILTER_DOC}", examples=['{"metadata":{"lang":"en"}}']),
    ] = None,
) -> StreamingResponse:
    """Every document's id, metadata and sketches as JSON Lines, enough to rebuild the
    index with the same parameters without the texts (POST /import, `neardup import`)."""
    where = None if filter is None else Filter.parse(filter)
    await index.count()  # Redis away: a 503 now, not a 200 cut short

    async def lines() -> AsyncIterator[bytes]:
        async for item in export(index, where):
            yield json_line(item)

    return StreamingResponse(lines(), media_type=NDJSON)


@router.post(
    "/import",
    response_model=replies.ImportOut,
    tags=["transfer"],
)
async def import_batch(body: schemas.ImportIn, index: IndexDep) -> replies.ImportOut:
    """Store up to 1000 exported documents (replacing the same ids); the header must
    name this collection's sketch parameters. A bad line stores nothing of the call."""
    created, updated = await import_documents(index, body.header, body.documents)
    return replies.ImportOut(created=created, updated=updated)
