"""Response bodies: what the API answers, errors (RFC 9457 problems) included."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_serializer

THIN_DOC = "true when the page has little text of its own beside its site's template"


class Match(BaseModel):
    id: str
    similarity: float
    thin: bool | None = Field(None, description=THIN_DOC)


TEXT_OUT_DOC = "with return_text=true: the text as indexed (offsets refer to it)"


class SimilarOut(BaseModel):
    id: str | None = None
    threshold: float
    results: list[Match]
    candidates: int = Field(description="LSH candidates verified for this answer")
    capped: bool = Field(description="true when the candidate cap cut the candidates")
    thin: bool | None = Field(None, description=THIN_DOC)
    text: str | None = Field(None, description=TEXT_OUT_DOC)


class PassageOut(BaseModel):
    query_start: int = Field(description="code-point offset into the query text (inclusive)")
    query_end: int = Field(description="code-point offset into the query text (exclusive)")
    source_start: int = Field(description="code-point offset into the source as ingested")
    source_end: int = Field(description="code-point offset into the source (exclusive)")
    disguised: int | None = Field(
        None,
        ge=1,
        description="words of the query's span that held look-alike letters or invisible "
        "characters, folded away to find the passage (a flag: evidence of intent; on "
        "tokenizers 3 and 4 a look-alike counts only in a word mixing it with Latin "
        "letters); absent when none did, in a stored document's query, and in collections "
        "on tokenizer 1",
    )


class ExcludeOut(BaseModel):
    quotes: bool
    bibliography: bool
    min_words: int


class ExcludedOut(BaseModel):
    query_start: int = Field(description="code-point offset into the query text (inclusive)")
    query_end: int = Field(description="code-point offset into the query text (exclusive)")
    reason: Literal["quote", "bibliography", "short"]


class ContainmentMatch(BaseModel):
    id: str
    containment: float = Field(description="share of the query's shingles in passages of it")
    similarity: float = Field(description="fingerprint Jaccard of the two whole texts")
    passages: list[PassageOut] | None = Field(None, description="with evidence=true")


class ContainmentOut(BaseModel):
    id: str | None = None
    measure: Literal["containment"] = "containment"
    threshold: float = Field(
        description="least share of the query a source covers; 0: none given, every "
        "source with a passage of passage_words words is named"
    )
    results: list[ContainmentMatch]
    coverage: float = Field(description="share of the query's shingles found in any result")
    candidates: int = Field(description="sources whose passages were aligned")
    capped: bool = Field(description="true when the candidate cap cut the candidates")
    common: int = Field(
        description="passage anchors of the query too common in the collection to read in full"
    )
    text: str | None = Field(None, description=TEXT_OUT_DOC)
    excluded: list[ExcludedOut] | None = Field(
        None, description="with exclude: the spans of the text set aside, and why"
    )
    exclude: ExcludeOut | None = Field(
        None, description="with exclude: the exclusions applied, so a kept check shows them"
    )


class DocumentOut(BaseModel):
    id: str
    shingles: int
    metadata: dict[str, Any] | None = None
    # The text; only in collections that keep texts (NEARDUP_KEEP_TEXT).
    text: str | None = None
    expires_at: str | None = Field(default=None, description="RFC 3339 (UTC); absent: never")


class IngestOut(BaseModel):
    id: str
    shingles: int
    created: bool
    similar: SimilarOut | None = None

    @field_serializer("similar")
    def _as_post_similar(self, similar: SimilarOut | None) -> dict[str, Any] | None:
        """POST /similar's shape: fields its answer leaves out (thin, text) stay out."""
        return None if similar is None else similar.model_dump(exclude_unset=True)


class BatchItemOut(BaseModel):
    id: str
    status: str = Field(description="created, updated or error")
    shingles: int
    error: str | None = None


class BatchOut(BaseModel):
    created: int
    updated: int
    errors: int
    results: list[BatchItemOut]


class DeleteOut(BaseModel):
    deleted: int = Field(description="documents deleted by this call")
    scanned: int = Field(description="records looked at (ids: the ids given)")
    cursor: str | None = Field(
        description="with filter: pass it back for the next step; null when the scan is done"
    )


class ImportOut(BaseModel):
    created: int
    updated: int


class Refusal(BaseModel):
    """One refusal of a 422: where in the request (a field's dotted path, a query
    parameter, "body", "path", "query", or "request" for the request as a whole) and why."""

    field: str
    message: str


class Problem(BaseModel):
    """An error answer (RFC 9457 problem+json)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[Refusal] | None = Field(
        None, description="a 422's refusals, each with where it is and what to fix"
    )
    ids: list[str | None] | None = Field(
        None,
        description="a 503 of an ingest: each document's id in request order, null where "
        "it was refused (the others are stored)",
    )


class SourceChange(BaseModel):
    id: str = Field(description="a source of the stored answer")
    change: Literal["changed", "deleted"] = Field(
        description="changed: its record (text or metadata) was rewritten since the check; "
        "deleted: it answers no more"
    )


class CheckOut(BaseModel):
    id: str = Field(description="the check's id: 128 random bits, URL-safe base64")
    report: str = Field(description="the path of its report page")
    created_at: str = Field(description="RFC 3339 (UTC)")
    expires_at: str = Field(description="RFC 3339 (UTC); GET answers 404 from then on")
    answer: SimilarOut | ContainmentOut = Field(description="the answer, as POST /similar's")
    metadata: dict[str, Any] | None = Field(None, description="the metadata it was made with")
    changed_sources: list[SourceChange] = Field(
        description="sources whose records differ from when the check was made (GET)"
    )


class TopSource(BaseModel):
    id: str = Field(description="the source ranked first in the check's answer")
    containment: float | None = Field(None, description="its containment (containment checks)")
    similarity: float | None = Field(None, description="its Jaccard similarity (Jaccard checks)")


class CheckListed(BaseModel):
    id: str = Field(description="the check's id")
    report: str = Field(description="the path of its report page")
    created_at: str = Field(description="RFC 3339 (UTC)")
    expires_at: str = Field(description="RFC 3339 (UTC)")
    metadata: dict[str, Any] | None = Field(None, description="the metadata it was made with")
    measure: Literal["jaccard", "containment"] = Field(description="the check's measure")
    coverage: float | None = Field(
        None, description="the share of the text inside passages (containment checks)"
    )
    sources: int = Field(description="how many sources the answer named")
    top: TopSource | None = Field(None, description="the first of them, or null")
    characters: int = Field(description="the checked text's length in code points")


class CheckList(BaseModel):
    checks: list[CheckListed] = Field(description="stored checks, newest first")
    cursor: str | None = Field(
        description="pass as ?cursor= for the next page; null when this is the last"
    )
