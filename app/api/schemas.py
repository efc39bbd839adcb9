"""Request and response bodies."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from app.index.ids import check_id

MAX_BATCH = 1000
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
    model_config = ConfigDict(extra="forbid")


class DocumentIn(_In):
    id: DocId | None = Field(None, description="1-512 bytes; generated when absent")
    text: str = Field(description="the document text (UTF-8)")
    metadata: Metadata = Field(None, description="any JSON object, stored as is")


class DocumentPut(_In):
    text: str
    metadata: Metadata = None


class BatchIn(_In):
    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_BATCH)


class SimilarIn(_In):
    text: str
    threshold: Threshold | None = None
    limit: Limit = 10


class Match(BaseModel):
    id: str
    similarity: float


class SimilarOut(BaseModel):
    id: str | None = None
    threshold: float
    results: list[Match]
    candidates: int = Field(description="LSH candidates verified for this answer")
    capped: bool = Field(description="true when the candidate cap cut the candidates")


class DocumentOut(BaseModel):
    id: str
    shingles: int
    metadata: dict[str, Any] | None = None


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


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str
