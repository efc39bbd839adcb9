"""Request and response bodies."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, create_model, model_validator

from app.core.settings import COLLECTION_RULE, Settings
from app.index.html import PLAIN, ContentType, text_of
from app.index.ids import check_id
from app.index.writes import MAX_BATCH
from app.service.collections import PARAMETERS

MAX_LIMIT = 1000


def check_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Metadata must be storable as JSON: integers within 64 bits, valid Unicode."""
    if value is not None:
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError as exc:
            raise ValueError(f"metadata cannot be stored as JSON: {exc}") from None
    return value


DocId = Annotated[str, AfterValidator(check_id)]
Metadata = Annotated[dict[str, Any] | None, AfterValidator(check_metadata)]
Threshold = Annotated[float, Field(gt=0.0, le=1.0)]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT)]


class _In(BaseModel):
    # Unknown fields are named in a 422; JSON types are taken as sent (true is not a limit).
    model_config = ConfigDict(extra="forbid", strict=True)


CONTENT_TYPE_DOC = (
    "text/html: text is a page; its main text is extracted (menus, footers and banners "
    "dropped) and that is what is indexed and what passage offsets refer to"
)


class _Text(_In):
    """A body with a text that may be HTML: after validation, text is what to index."""

    text: str = Field(description="the document text (UTF-8), or a page with text/html")
    content_type: ContentType = Field(PLAIN, description=CONTENT_TYPE_DOC)

    @model_validator(mode="after")
    def _extract(self) -> _Text:
        self.text = text_of(self.text, self.content_type)  # HTMLError: a 422 naming the field
        return self


TTL_DOC = "seconds until the document stops answering and is removed (an integer > 0)"
EXPIRES_DOC = (
    "when the document stops answering and is removed: RFC 3339 with an offset, in the "
    "future; give ttl or expires_at, not both (neither: the collection's default_ttl)"
)


def parse_expiry(value: str) -> datetime:
    """An RFC 3339 time with an offset (Z or +hh:mm)."""
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None or "T" not in value.upper():
        raise ValueError(
            f"expires_at {value!r} is not an RFC 3339 time with an offset, "
            "e.g. 2030-01-31T12:00:00Z"
        )
    return when


def rfc3339(ms: int) -> str:
    """An expiry (ms since the epoch) as RFC 3339 in UTC, to the millisecond."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


class _Expiring(_In):
    ttl: int | None = Field(None, gt=0, description=TTL_DOC)
    expires_at: str | None = Field(None, description=EXPIRES_DOC, examples=["2030-01-31T12:00:00Z"])

    @model_validator(mode="after")
    def _one_expiry(self) -> _Expiring:
        if self.ttl is not None and self.expires_at is not None:
            raise ValueError("give ttl or expires_at, not both")
        if self.expires_at is not None and parse_expiry(self.expires_at).timestamp() <= time.time():
            raise ValueError(f"expires_at {self.expires_at} is in the past; give a later time")
        return self

    def expires_ms(self) -> int | None:
        """When it expires, ms since the epoch; None: the collection's default."""
        if self.ttl is not None:
            return time.time_ns() // 1_000_000 + 1000 * self.ttl
        if self.expires_at is not None:
            return int(parse_expiry(self.expires_at).timestamp() * 1000)
        return None


class DocumentIn(_Text, _Expiring):
    id: DocId | None = Field(None, description="1-512 bytes; generated when absent")
    metadata: Metadata = Field(None, description="any JSON object, stored as is")


class DocumentPut(_Text, _Expiring):
    metadata: Metadata = None


class BatchIn(_In):
    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_BATCH)


Measure = Literal["jaccard", "containment"]
MEASURE_DOC = (
    "jaccard: stored documents that resemble the text as a whole (threshold: least "
    "Jaccard, default the collection's); containment: stored documents that hold "
    "passages of it (every one sharing a passage of at least the collection's "
    "passage_words words; threshold, when given: least share of the text's shingles "
    "found in one source)"
)
EVIDENCE_DOC = "with measure=containment, list each source's passages with their offsets"


FILTER_DOC = (
    "only documents whose metadata has each of these fields with exactly this value; "
    "applied to verified matches before the limit"
)
FILTER_EXAMPLE = {"metadata": {"host": "example.com"}}


class FilterIn(_In):
    metadata: dict[str, Any] = Field(
        description="field -> the exact JSON value it must have (at least one field)",
        examples=[{"host": "example.com", "lang": "en"}],
    )


LIMIT_DOC = (
    "most results: default 10 for jaccard; for containment, every source found (each "
    "holds a passage of at least the collection's passage_words words)"
)


class SimilarIn(_Text):
    threshold: Threshold | None = None
    limit: Limit | None = Field(None, description=LIMIT_DOC)
    measure: Measure = Field("jaccard", description=MEASURE_DOC)
    # Strict: 0 or "no" for a flag is a mistake to name, not a false to guess.
    evidence: bool = Field(False, strict=True, description=EVIDENCE_DOC)
    filter: FilterIn | None = Field(None, description=FILTER_DOC, examples=[FILTER_EXAMPLE])
    return_text: bool = Field(
        False,
        strict=True,
        description="answer the indexed text too (with text/html: the "
        "extracted text, which passage offsets refer to)",
    )

    @model_validator(mode="after")
    def _evidence_needs_containment(self) -> SimilarIn:
        check_measure(self.measure, self.evidence)
        return self


def check_measure(measure: str, evidence: bool) -> None:
    """Refuse evidence for a measure that has none."""
    if evidence and measure != "containment":
        raise ValueError("evidence=true needs measure=containment (Jaccard has no passages)")


class Match(BaseModel):
    id: str
    similarity: float


TEXT_OUT_DOC = "with return_text=true: the text as indexed (offsets refer to it)"


class SimilarOut(BaseModel):
    id: str | None = None
    threshold: float
    results: list[Match]
    candidates: int = Field(description="LSH candidates verified for this answer")
    capped: bool = Field(description="true when the candidate cap cut the candidates")
    text: str | None = Field(None, description=TEXT_OUT_DOC)


class PassageOut(BaseModel):
    query_start: int = Field(description="code-point offset into the query text (inclusive)")
    query_end: int = Field(description="code-point offset into the query text (exclusive)")
    source_start: int = Field(description="code-point offset into the source as ingested")
    source_end: int = Field(description="code-point offset into the source (exclusive)")


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


class DeleteIn(_In):
    ids: list[DocId] | None = Field(
        None, min_length=1, max_length=MAX_BATCH, description="delete these documents"
    )
    filter: FilterIn | None = Field(
        None, description="delete every document whose metadata matches, a step at a time"
    )
    cursor: str | None = Field(
        None, description="with filter: the cursor the previous step answered (omit to start)"
    )
    step: int = Field(1000, ge=1, le=10_000, description="with filter: records scanned per call")

    @model_validator(mode="after")
    def _one_of(self) -> DeleteIn:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give exactly one of ids and filter")
        if self.ids is not None and self.cursor is not None:
            raise ValueError("cursor goes with filter, not with ids")
        return self


class DeleteOut(BaseModel):
    deleted: int = Field(description="documents deleted by this call")
    scanned: int = Field(description="records looked at (ids: the ids given)")
    cursor: str | None = Field(
        description="with filter: pass it back for the next step; null when the scan is done"
    )


class ImportIn(_In):
    header: dict[str, Any] = Field(description="the export's first line")
    documents: list[dict[str, Any]] = Field(
        min_length=1, max_length=MAX_BATCH, description="export lines after the header"
    )


class ImportOut(BaseModel):
    created: int
    updated: int


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str


def _collection_in() -> type[BaseModel]:
    """POST /collections: a name and the collection's parameters, each optional (the
    service's setting when absent). The fields are app.service.collections.PARAMETERS,
    typed as the settings are, so a new collection parameter needs no edit here."""
    fields: dict[str, Any] = {
        "name": (str, Field(description=f"the collection's name: {COLLECTION_RULE}")),
    }
    for name in PARAMETERS:
        setting = Settings.model_fields[name]
        fields[name] = (
            setting.annotation | None,  # type: ignore[operator]
            Field(None, description=f"default: the service's NEARDUP_{name.upper()}"),
        )
    return create_model("CollectionIn", __base__=_In, **fields)


CollectionIn = _collection_in()
