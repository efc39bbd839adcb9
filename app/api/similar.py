"""GET /similar/{id} and POST /similar: verified near-duplicates."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from app.api import schemas
from app.api.deps import get_index
from app.api.errors import ProblemResponse, problem
from app.index import Index, QueryResult

router = APIRouter(tags=["similar"])
IndexDep = Annotated[Index, Depends(get_index)]


def similar_out(
    result: QueryResult, threshold: float, doc_id: str | None = None
) -> schemas.SimilarOut:
    return schemas.SimilarOut(
        id=doc_id,
        threshold=threshold,
        results=[schemas.Match(id=m.id, similarity=m.similarity) for m in result.results],
        candidates=result.candidates,
        capped=result.capped,
    )


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
) -> schemas.SimilarOut | ProblemResponse:
    """Stored near-duplicates of a stored document, most similar first, itself excluded."""
    used = index.check_threshold(threshold)
    result = await index.similar_to_id(doc_id, used, limit)
    if result is None:
        return problem(404, "Not found", f"no document with id {doc_id!r}")
    return similar_out(result, used, doc_id)


@router.post("/similar", response_model=schemas.SimilarOut)
async def similar_to_text(body: schemas.SimilarIn, index: IndexDep) -> schemas.SimilarOut:
    """Stored near-duplicates of a text that is not stored."""
    used = index.check_threshold(body.threshold)
    result = await index.similar_to_text(body.text, used, body.limit)
    return similar_out(result, used)
