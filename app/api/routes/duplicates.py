"""GET /duplicates and /duplicates/groups: the whole collection's near-duplicates, streamed."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse

from app.api import schemas
from app.api.answers import duplicate_lines
from app.api.deps import get_index
from app.api.routing import Route
from app.core.errors import Invalid
from app.index import Index
from app.store import reads

router = APIRouter(tags=["duplicates"], route_class=Route)
IndexDep = Annotated[Index, Depends(get_index)]
NDJSON = "application/x-ndjson"


def _ndjson_doc(example: dict) -> dict:
    return {200: {"content": {NDJSON: {"example": example}}, "description": "one JSON per line"}}


# A client that asks for checkpoints without saying how often gets one per this many.
DEFAULT_CHECKPOINTS = 1000
MAX_PAIRS = 2**53
CHECKPOINTS_DOC = (
    'write a line {"cursor": ..., "done": false} after about every this many pairs '
    '(groups), at least every second while a scan runs, and {"cursor": ..., "done": '
    "true} last: everything before a cursor line has been sent, so a client cut off "
    "resumes with cursor= the last one it read (a stream without its done line was cut)"
)
CURSOR_DOC = (
    "resume after a disconnect: the cursor of the last cursor line read (implies checkpoints)"
)


async def _stream(
    index: Index,
    groups: bool,
    threshold: float | None,
    max_pairs: int | None = None,
    after: str | None = None,
    checkpoints: int | None = None,
    cursor: str | None = None,
    resume: str = "/duplicates?",
) -> StreamingResponse:
    if cursor is not None:
        if after is not None:
            raise Invalid("give after or cursor, not both")
        after, checkpoints = cursor, checkpoints or DEFAULT_CHECKPOINTS
    used = index.check_threshold(threshold)
    await index.count()  # Redis away: a 503 now, not a 200 cut short
    return StreamingResponse(
        duplicate_lines(index, groups, used, max_pairs, after, checkpoints, resume),
        media_type=NDJSON,
    )


# The query parameters a cut stream's resume link sets itself.
_RESUME_SETS = frozenset(("threshold", "max_pairs", "after", "cursor"))


def _resume(request: Request) -> str:
    """A cut stream's resume link up to its own parameters: this request's path (its
    collection's) and its other query parameters (consistency, checkpoints)."""
    kept = [(k, v) for k, v in request.query_params.multi_items() if k not in _RESUME_SETS]
    return f"{request.url.path}?{urlencode(kept) + '&' if kept else ''}"


Consistency = Annotated[schemas.Consistency, Query(description=schemas.CONSISTENCY_DOC)]
Checkpoints = Annotated[int | None, Query(ge=1, le=1_000_000, description=CHECKPOINTS_DOC)]


@router.get(
    "/duplicates",
    response_class=StreamingResponse,
    responses=_ndjson_doc({"a": "older-id", "b": "newer-id", "similarity": 0.93}),
)
async def all_pairs(
    request: Request,
    index: IndexDep,
    threshold: Annotated[schemas.Threshold | None, Query()] = None,
    max_pairs: Annotated[
        int | None,
        # Bounded as every client number is: a count no scan reaches, within 2**53 so
        # that every JSON reader holds it exactly.
        Query(ge=1, le=MAX_PAIRS, description="stop after this many pairs (default: no limit)"),
    ] = None,
    after: Annotated[
        str | None,
        Query(
            pattern=r"^[0-9]{1,10}:[0-9]{1,10}$",
            description="resume a cut stream: the `after` of its last line",
        ),
    ] = None,
    checkpoints: Checkpoints = None,
    cursor: Annotated[
        str | None, Query(pattern=r"^[0-9]{1,10}:[0-9]{1,10}$", description=CURSOR_DOC)
    ] = None,
    consistency: Consistency = "eventual",
) -> StreamingResponse:
    """Every verified near-duplicate pair in the collection, as NDJSON; a is the older.
    With max_pairs, a stream cut short ends with a line {"cut": true, "after": ...,
    "resume": ...} that says how to get the rest. With checkpoints, cursor lines say
    where to resume after a disconnect."""
    reads.strong(consistency == "strong")
    return await _stream(
        index, False, threshold, max_pairs, after, checkpoints, cursor, _resume(request)
    )


@router.get(
    "/duplicates/groups",
    response_class=StreamingResponse,
    responses=_ndjson_doc({"canonical": "oldest-id", "members": ["oldest-id", "other-id"]}),
)
async def groups(
    index: IndexDep,
    threshold: Annotated[schemas.Threshold | None, Query()] = None,
    checkpoints: Checkpoints = None,
    cursor: Annotated[str | None, Query(pattern=r"^[0-9]{1,10}$", description=CURSOR_DOC)] = None,
    consistency: Consistency = "eventual",
) -> StreamingResponse:
    """Connected groups of near-duplicates as NDJSON; canonical is the oldest member.
    With checkpoints, cursor lines as for pairs: groups are computed from the whole
    collection before the first is written, so a resumed stream computes them again and
    writes those after the cursor (a cut during that first phase starts over)."""
    reads.strong(consistency == "strong")
    return await _stream(index, True, threshold, None, None, checkpoints, cursor)
