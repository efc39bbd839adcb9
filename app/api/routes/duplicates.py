"""GET /duplicates and /duplicates/groups: the whole collection's near-duplicates, streamed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from app.api import schemas
from app.api.answers import duplicate_lines
from app.api.deps import get_index
from app.index import Index

router = APIRouter(tags=["duplicates"])
IndexDep = Annotated[Index, Depends(get_index)]
NDJSON = "application/x-ndjson"


def _ndjson_doc(example: dict) -> dict:
    return {200: {"content": {NDJSON: {"example": example}}, "description": "one JSON per line"}}


async def _stream(
    index: Index,
    groups: bool,
    threshold: float | None,
    max_pairs: int | None = None,
    after: str | None = None,
) -> StreamingResponse:
    used = index.check_threshold(threshold)
    await index.count()  # Redis away: a 503 now, not a 200 cut short
    return StreamingResponse(
        duplicate_lines(index, groups, used, max_pairs, after), media_type=NDJSON
    )


@router.get(
    "/duplicates",
    response_class=StreamingResponse,
    responses=_ndjson_doc({"a": "older-id", "b": "newer-id", "similarity": 0.93}),
)
async def all_pairs(
    index: IndexDep,
    threshold: Annotated[schemas.Threshold | None, Query()] = None,
    max_pairs: Annotated[
        int | None,
        Query(ge=1, description="stop after this many pairs (default: no limit)"),
    ] = None,
    after: Annotated[
        str | None,
        Query(
            pattern=r"^[0-9]{1,10}:[0-9]{1,10}$",
            description="resume a cut stream: the `after` of its last line",
        ),
    ] = None,
) -> StreamingResponse:
    """Every verified near-duplicate pair in the collection, as NDJSON; a is the older.
    With max_pairs, a stream cut short ends with a line {"cut": true, "after": ...,
    "resume": ...} that says how to get the rest."""
    return await _stream(index, False, threshold, max_pairs, after)


@router.get(
    "/duplicates/groups",
    response_class=StreamingResponse,
    responses=_ndjson_doc({"canonical": "oldest-id", "members": ["oldest-id", "other-id"]}),
)
async def groups(
    index: IndexDep, threshold: Annotated[schemas.Threshold | None, Query()] = None
) -> StreamingResponse:
    """Connected groups of near-duplicates as NDJSON; canonical is the oldest member."""
    return await _stream(index, True, threshold)
