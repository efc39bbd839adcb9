"""GET /similar/{id} and POST /similar: verified near-duplicates."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Path, Query, Response

from app.api import schemas
from app.api.deps import get_index
from app.api.errors import problem
from app.index import Index, QueryResult

router = APIRouter(tags=["similar"])
IndexDep = Annotated[Index, Depends(get_index)]
# numpy scalars, should a result ever carry one, are written as plain numbers.
_DUMPS_OPTIONS = orjson.OPT_SERIALIZE_NUMPY


def similar_body(result: QueryResult, threshold: float, doc_id: str | None = None) -> dict:
    """The fields of schemas.SimilarOut, as plain data."""
    return {
        "id": doc_id,
        "threshold": threshold,
        "results": [{"id": m.id, "similarity": m.similarity} for m in result.results],
        "candidates": result.candidates,
        "capped": result.capped,
    }


def similar_out(
    result: QueryResult, threshold: float, doc_id: str | None = None
) -> schemas.SimilarOut:
    return schemas.SimilarOut.model_validate(similar_body(result, threshold, doc_id))


def _answer(body: dict[str, Any]) -> Response:
    # The hot routes: the body is written by orjson straight from the index's answer,
    # not built as a pydantic model and validated again against response_model (which
    # stays, for the schema).
    return Response(orjson.dumps(body, option=_DUMPS_OPTIONS), media_type="application/json")


@router.get(
    "/similar/{doc_id:docid}",
    response_model=schemas.SimilarOut,
    responses={404: {"model": schemas.Problem, "description": "unknown id"}},
)
async def similar_to_stored(
    doc_id: Annotated[schemas.DocId, Path(description="document id; may contain '/'")],
    index: IndexDep,
    threshold: Annotated[schemas.Threshold | None, Query()] = None,
    limit: Annotated[schemas.Limit, Query()] = 10,
) -> Response:
    """Stored near-duplicates of a stored document, most similar first, itself excluded."""
    used = index.check_threshold(threshold)
    result = await index.similar_to_id(doc_id, used, limit)
    if result is None:
        return problem(404, "Not found", f"no document with id {doc_id!r}")
    return _answer(similar_body(result, used, doc_id))


@router.post("/similar", response_model=schemas.SimilarOut)
async def similar_to_text(body: schemas.SimilarIn, index: IndexDep) -> Response:
    """Stored near-duplicates of a text that is not stored."""
    used = index.check_threshold(body.threshold)
    result = await index.similar_to_text(body.text, used, body.limit)
    return _answer(similar_body(result, used))
