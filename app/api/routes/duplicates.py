"""GET /duplicates and /duplicates/groups: the whole collection's near-duplicates, streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

import orjson
from fastapi import APIRouter, Depends, Query
from fastapi.responses import StreamingResponse

from app.api import schemas
from app.api.answers import duplicate_answers
from app.api.deps import get_index
from app.index import Index

router = APIRouter(tags=["duplicates"])
IndexDep = Annotated[Index, Depends(get_index)]
NDJSON = "application/x-ndjson"


def _ndjson_doc(example: dict) -> dict:
    return {200: {"content": {NDJSON: {"example": example}}, "description": "one JSON per line"}}


async def _stream(index: Index, groups: bool, threshold: float | None) -> StreamingResponse:
    used = index.check_threshold(threshold)
    await index.count()  # Redis away: a 503 now, not a 200 cut short

    async def lines() -> AsyncIterator[bytes]:
        async for item in duplicate_answers(index, groups, used):
            yield orjson.dumps(item) + b"\n"

    return StreamingResponse(lines(), media_type=NDJSON)


@router.get(
    "/duplicates",
    response_class=StreamingResponse,
    responses=_ndjson_doc({"a": "older-id", "b": "newer-id", "similarity": 0.93}),
)
async def all_pairs(
    index: IndexDep, threshold: Annotated[schemas.Threshold | None, Query()] = None
) -> StreamingResponse:
    """Every verified near-duplicate pair in the collection, as NDJSON; a is the older."""
    return await _stream(index, False, threshold)


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
