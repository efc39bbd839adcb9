"""POST/PUT/GET/DELETE /documents: ingest, read and remove documents."""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from app.api import answers, replies, schemas
from app.api.answers import ingest_status
from app.api.deps import get_index
from app.api.problems import ProblemResponse, problem
from app.api.routes.similar import similar_out
from app.api.routing import Route
from app.core.errors import Invalid
from app.index import Document, Index, IngestResult
from app.index.expiry import rfc3339
from app.index.formats import FileError
from app.index.html import HTMLError
from app.index.sites import no_words

router = APIRouter(tags=["documents"], route_class=Route)
IndexDep = Annotated[Index, Depends(get_index)]
PathId = schemas.PathId
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": replies.Problem, "description": "unknown id"}
}


def _ingest_out(r: IngestResult, threshold: float | None) -> replies.IngestOut:
    if r.error is not None:
        raise no_words(r.error)
    similar = None
    if r.similar is not None and threshold is not None:
        similar = similar_out(r.similar, threshold)
    return replies.IngestOut(id=r.id, shingles=r.shingles, created=r.created, similar=similar)


@router.post("/documents", status_code=201, response_model=replies.IngestOut)
async def ingest(
    body: schemas.DocumentIn,
    index: IndexDep,
    similar: Annotated[bool, Query(description="also return near-duplicates found")] = False,
    threshold: Annotated[schemas.Threshold | None, Query()] = None,
    limit: Annotated[
        schemas.Limit | None, Query(description=f"default {answers.DEFAULT_LIMIT}")
    ] = None,
) -> replies.IngestOut:
    """Store a document; with ?similar=true also its near-duplicates before it was stored."""
    if not similar and (threshold is not None or limit is not None):
        # Taken and ignored, they would read as a search that found nothing.
        raise Invalid("threshold and limit are read only with similar=true: add it or drop them")
    limit = answers.DEFAULT_LIMIT if limit is None else limit
    doc = Document(await body.extracted(), body.id, body.metadata, body.expires_ms(), body.is_html)
    (result,) = await index.ingest([doc], similar=similar, threshold=threshold, limit=limit)
    used = index.check_threshold(threshold) if similar else None
    return _ingest_out(result, used)


async def _item_text(item: schemas.DocumentIn) -> str | FileError | HTMLError:
    """A batch item's text, or why its file or page cannot be read: that item's error, as
    a text with no words is, and the rest of the batch is stored."""
    try:
        return await item.extracted()
    except (FileError, HTMLError) as exc:
        return exc


@router.post("/documents/batch", response_model=replies.BatchOut)
async def ingest_batch(body: schemas.BatchIn, index: IndexDep) -> replies.BatchOut:
    """Store up to 1000 documents; one status per document, in request order."""
    # Files and pages are read at once, as many as there are extraction workers; a plain
    # text is taken as it is (a task each for hundreds of texts cost more than their checks).
    texts: list[str | FileError | HTMLError | None] = [
        d.text if d.read else None for d in body.documents
    ]
    unread = [i for i, t in enumerate(texts) if t is None]
    got = await asyncio.gather(*(_item_text(body.documents[i]) for i in unread))
    for i, item in zip(unread, got, strict=True):
        texts[i] = item
    docs = [
        Document(text, d.id, d.metadata, d.expires_ms(), d.is_html)
        for text, d in zip(texts, body.documents, strict=True)
        if isinstance(text, str)
    ]
    stored = iter(await index.ingest(docs))
    items = []
    for text, d in zip(texts, body.documents, strict=True):
        if isinstance(text, str):
            r = next(stored)
            items.append(
                replies.BatchItemOut(
                    id=r.id, status=ingest_status(r), shingles=r.shingles, error=r.error
                )
            )
        else:
            # an item sent without an id gets one, as a text with no words does in ingest
            name = d.id if d.id is not None else uuid.uuid4().hex
            items.append(replies.BatchItemOut(id=name, status="error", shingles=0, error=str(text)))
    return replies.BatchOut(
        created=sum(i.status == "created" for i in items),
        updated=sum(i.status == "updated" for i in items),
        errors=sum(i.status == "error" for i in items),
        results=items,
    )


@router.put(
    "/documents/{doc_id:docid}",
    response_model=replies.IngestOut,
    responses={201: {"model": replies.IngestOut, "description": "created"}},
)
async def upsert(
    doc_id: PathId, body: schemas.DocumentPut, index: IndexDep, response: Response
) -> replies.IngestOut:
    """Create or replace the document with this id: 201 when new, 200 when replaced."""
    doc = Document(await body.extracted(), doc_id, body.metadata, body.expires_ms(), body.is_html)
    (result,) = await index.ingest([doc])
    response.status_code = 201 if result.created else 200
    return _ingest_out(result, None)


@router.get(
    "/documents/{doc_id:docid}",
    response_model=replies.DocumentOut,
    response_model_exclude_unset=True,  # `text` only when the collection keeps texts
    responses=NOT_FOUND,
)
async def read(doc_id: PathId, index: IndexDep) -> replies.DocumentOut | ProblemResponse:
    """The stored record of a document, with its text when the collection keeps texts."""
    found = await index.read(doc_id)
    if found is None:
        return problem(404, "Not found", f"no document with id {doc_id!r}")
    rec, text = found
    out = replies.DocumentOut(id=rec.id, shingles=rec.shingles, metadata=rec.metadata)
    if rec.expires_ms:
        out.expires_at = rfc3339(rec.expires_ms)
    if index.params.keep_text:
        out.text = text  # null when a crash left another version's text (see app.index.texts)
    return out


@router.delete("/documents/{doc_id:docid}", status_code=204, responses=NOT_FOUND)
async def delete(doc_id: PathId, index: IndexDep) -> Response:
    """Remove a document and its index entries."""
    if not await index.delete(doc_id):
        return problem(404, "Not found", f"no document with id {doc_id!r}")
    return Response(status_code=204)
