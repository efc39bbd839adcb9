"""Request bodies and the checks of what they hold (the answers: app.api.replies)."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import Path
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonDict
from pydantic_core import PydanticCustomError

from app.core.settings import COLLECTION_PATTERN, COLLECTION_RULE, Settings
from app.index import formats
from app.index.exclusions import detect
from app.index.expiry import MAX_TTL_S
from app.index.formats import workers
from app.index.html import HTML, PLAIN, HTMLError, check_page
from app.index.ids import MAX_ID_BYTES, check_id
from app.index.records import MAX_METADATA_BYTES, metadata_problem
from app.index.templates import site_problem
from app.index.trimming import Exclusions
from app.index.writes import MAX_BATCH
from app.service.collections import PARAMETERS

MAX_LIMIT = 1000


def check_metadata(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Metadata must be what a record keeps (records.metadata_problem)."""
    problem = metadata_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


DocId = Annotated[str, AfterValidator(check_id)]
# An id's rule (app.index.ids) in the schema: the pattern is exact for the characters;
# the bound is 512 bytes of UTF-8, which a schema can only say in characters.
# Any run of allowed characters but "." and ".." (spelt without a lookahead, which not
# every schema tool reads): a first character that is not a dot, or one dot and then
# one, or two dots and then at least one more.
_ID_CHAR = r"[^\u0000-\u001f\u007f-\u009f\u2028\u2029]"
_ID_HEAD = r"[^.\u0000-\u001f\u007f-\u009f\u2028\u2029]"
ID_PATTERN = rf"^(?:{_ID_HEAD}{_ID_CHAR}*|\.{_ID_HEAD}{_ID_CHAR}*|\.\.{_ID_CHAR}+)$"
ID_DOC = (
    f"a document id: 1 to {MAX_ID_BYTES} bytes of UTF-8 (maxLength counts characters: an "
    "id of multi-byte characters reaches the byte bound sooner), no control characters "
    "(Unicode Cc) and no U+2028/U+2029, not '.' or '..' (a URL path cannot name them); "
    "may contain '/'"
)
ID_SCHEMA: JsonDict = {"pattern": ID_PATTERN, "minLength": 1, "maxLength": MAX_ID_BYTES}
# A collection's name in the schema: exactly the rule app.index.collections checks.
COLLECTION_SCHEMA: JsonDict = {"pattern": COLLECTION_PATTERN, "minLength": 1, "maxLength": 64}
CollectionName = Annotated[
    str,
    Path(
        description=f"the collection's name: {COLLECTION_RULE}", json_schema_extra=COLLECTION_SCHEMA
    ),
]
PathId = Annotated[DocId, Path(description=ID_DOC, json_schema_extra=ID_SCHEMA)]
Metadata = Annotated[dict[str, Any] | None, AfterValidator(check_metadata)]
Threshold = Annotated[float, Field(gt=0.0, le=1.0, allow_inf_nan=False)]
# A query's: 0 is measure=containment's "no least share" (the threshold its answers echo
# by default); a Jaccard query refuses it with its own 422 (similarity.check_threshold).
QueryThreshold = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


def _integral(value: Any) -> Any:
    """5.0 as 5: JSON has one number type, and JSON Schema's integer holds 5.0 (the
    schema says integer); 5.5, "5" and true stay refused (strict)."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


# An integer field of a body: strict, save a number with no fraction written as 5.0.
Int = Annotated[int, BeforeValidator(_integral)]
# Bounds go before the validator that takes 5.0 as 5: after it, pydantic can only write
# them as unknown keywords ("ge", "le") that JSON Schema, and every client, ignores.
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT), BeforeValidator(_integral)]


class _In(BaseModel):
    # Unknown fields are named in a 422; JSON types are taken as sent (true is not a limit).
    model_config = ConfigDict(extra="forbid", strict=True)


CONTENT_TYPE_DOC = (
    "text/plain (the default) or text/html: the document is in text; with text/html its "
    "main text is extracted (menus, footers and banners dropped). application/pdf, "
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document (DOCX), "
    "application/vnd.oasis.opendocument.text (ODT) or application/rtf (RTF; text/rtf "
    "too): the file is in data, base64-encoded, and its text is extracted. The extracted "
    "text is what is indexed and what passage offsets refer to. Matched as a media "
    "type: case-insensitive, parameters such as charset ignored"
)
BodyType = Literal[
    "text/plain",
    "text/html",
    "application/pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.oasis.opendocument.text",
    "application/rtf",
]


def media_type(value: Any) -> Any:
    """A content_type as its bare media type: type/subtype lower-cased, parameters
    dropped (RFC 9110: media types are case-insensitive and may carry parameters, as
    "application/pdf; charset=binary" or a crawler's "text/html; charset=utf-8" do; the
    text arrives decoded, in JSON, so a charset has nothing left to say); another name of
    a file type (text/rtf) as the one the schema lists."""
    if isinstance(value, str):
        bare = value.split(";", 1)[0].strip().lower()
        return formats.ALIASES.get(bare, bare)
    return value


# A text with a word holds a character outside ASCII's non-alphanumerics and U+0080 to
# U+00A9 (controls, spaces, symbols): the closest pattern to "has a letter or digit"
# that a text with a word always matches (the kernel's Unicode tables decide the rest).
WORDY: JsonDict = {"minLength": 1, "pattern": "[^\\u0000-/:-@\\[-`{-\\u00a9]"}


class _Text(_In):
    """A body with a text, a page or a file: after validation `text` is what to index,
    except for a file, whose text `extracted()` gives (off the event loop)."""

    # First, so that text and data are checked against it (a field sees those before it).
    content_type: Annotated[BodyType, BeforeValidator(media_type)] = Field(
        PLAIN, description=CONTENT_TYPE_DOC
    )
    text: str | None = Field(
        None,
        validate_default=True,
        description="the document text (UTF-8), or a page with text/html; it must hold a "
        "word (a letter or digit)",
        json_schema_extra=WORDY,
    )
    data: str | None = Field(
        None,
        validate_default=True,
        description="with a file content_type: the file's bytes, base64-encoded",
        json_schema_extra={
            "contentEncoding": "base64",
            "minLength": 4,
            "pattern": "^[A-Za-z0-9+/\\s]*=?=?\\s*$",
        },
    )
    _file: bytes | None = PrivateAttr(None)
    _page: str | None = PrivateAttr(None)  # a text/html body as sent, until it is read
    # why the page is refused (not text, empty), raised when it is read: the route's 422,
    # or one batch item's error
    _refused: HTMLError | None = PrivateAttr(None)
    _quotes: list[str] | None = PrivateAttr(None)  # its <q>s and <blockquote>s, if wanted

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> JsonDict:
        """The schema says what validation does: a text (plain or a page) or a file, one
        of them, each with its content types in their plain lower-case spelling (any
        case and parameters pass too: a media type); a generated client or fuzzer then
        sends bodies that can pass.

        The alternatives sit in allOf beside the properties, not in a oneOf of the body's
        own: the same constraint in JSON Schema, but code generators (openapi-python-client)
        read a body's own oneOf as a union of its branches, which drops the properties
        (a generated DocumentIn had no id or metadata), or skip the operation."""
        schema: JsonDict = handler(core)
        one_of: list[Any] = []
        for kinds, given, absent in (
            ([PLAIN], "text", "data"),
            ([HTML], "text", "data"),
            (list(formats.FILE_TYPES), "data", "text"),
        ):
            enum: list[Any] = list(kinds)
            branch: JsonDict = {
                "required": [given] if kinds == [PLAIN] else [given, "content_type"],
                "properties": {given: {"type": "string"}, "content_type": {"enum": enum}},
                "not": {"required": [absent]},
            }
            one_of.append(branch)
        schema["allOf"] = [{"oneOf": one_of}]
        return schema

    @field_validator("text", "data")
    @classmethod
    def _one_of(cls, value: str | None, info: ValidationInfo) -> str | None:
        kind = info.data.get("content_type")
        if kind is None:
            return value  # content_type itself is wrong: that is the error to name
        wanted = "data" if kind in formats.FILE_TYPES else "text"
        if info.field_name == wanted and value is None:
            raise PydanticCustomError("missing", "Field required")
        if info.field_name != wanted and value is not None:
            raise ValueError(
                f"content_type {kind} takes the file in data (base64), not text"
                if wanted == "data"
                else f"content_type {kind} takes text; data goes with "
                f"{', '.join(formats.FILE_TYPES)}"
            )
        return value

    @model_validator(mode="after")
    def _extract(self) -> _Text:
        if self.data is not None:
            try:
                self._file = formats.decode(self.data)
            except formats.FileError as exc:
                raise FieldError("data", str(exc)) from None
            self.data = None  # the bytes are kept once
        elif self.content_type == HTML and self.text is not None:
            try:
                check_page(self.text)
            except HTMLError as exc:
                self._refused = exc
            self._page = self.text
        return self

    @property
    def read(self) -> bool:
        """Whether the text is here already: a plain text, nothing left to extract."""
        # One read of the private values, not three: each private attribute read goes
        # through pydantic's __getattr__, hundreds of times a batch.
        private = self.__pydantic_private__ or {}
        unread = private.get("_refused"), private.get("_file"), private.get("_page")
        return self.text is not None and unread == (None, None, None)

    async def extracted(self) -> str:
        """What to index: the text, or the page's main text or the file's text, read by a
        worker process (HTMLError or FileError, a 422, naming what is wrong)."""
        if self._refused is not None:
            raise self._refused
        if self._file is not None:
            self.text = await workers.shared().text(self.content_type, self._file)
            self._file = None
        elif self._page is not None:
            self.text, self._quotes = await workers.shared().page(self._page, self._quoting())
            self._page = None
        assert self.text is not None
        return self.text

    def _quoting(self) -> bool:
        """Whether a page's quotations are wanted too (read with the page)."""
        return False

    @property
    def is_html(self) -> bool:
        return self.content_type == HTML


TTL_DOC = (
    "seconds until the document stops answering and is removed (an integer > 0, at "
    f"most {MAX_TTL_S}: 100 years, NEARDUP_DEFAULT_TTL's bound)"
)
EXPIRES_DOC = (
    "when the document stops answering and is removed: RFC 3339 with an offset, in the "
    "future and at most 100 years from now; give ttl or expires_at, not both (neither: "
    "the collection's default_ttl)"
)


# The seconds of a time of day that is a leap second (23:59:60 in UTC).
_LEAP = re.compile(r"T\d{2}:\d{2}:(60)")
# RFC 3339's date-time (its section 5.6), upper-cased: seconds and an offset with a colon
# required, the extended format only. datetime.fromisoformat alone takes ISO 8601's
# other spellings too (no seconds, 20300101T000000Z), which other clients may not read.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})")


class FieldError(ValueError):
    """A validator's refusal of one field of the model: the 422 lists it at that field
    (app.api.problems), not at the whole body, which a model's validator is given."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def parse_expiry(value: str) -> datetime:
    """An RFC 3339 time with an offset (Z or +hh:mm; t and z in either case, and a leap
    second, :60, read as the second after :59)."""
    text = value.upper()  # RFC 3339's letters are T and Z, either case (its section 5.6)
    leap = _LEAP.search(text)
    if leap is not None:
        text = text[: leap.start(1)] + "59" + text[leap.end(1) :]
    try:
        when = datetime.fromisoformat(text)
        if leap is not None:
            when += timedelta(seconds=1)
    except (ValueError, OverflowError):
        when = None
    if when is None or when.tzinfo is None or not _RFC3339.fullmatch(value.upper()):
        raise FieldError(
            "expires_at",
            f"expires_at {value!r} is not an RFC 3339 time with an offset, "
            "e.g. 2030-01-31T12:00:00Z",
        )
    return when


class _Expiring(_In):
    # "ttl or expires_at, not both", said in the schema too (null is as good as absent).
    model_config = ConfigDict(
        json_schema_extra={
            "not": {
                "required": ["ttl", "expires_at"],
                "properties": {"ttl": {"type": "integer"}, "expires_at": {"type": "string"}},
            }
        }
    )
    # The bounds inside the optional type, before the validator (see Limit).
    ttl: Annotated[int, Field(gt=0, le=MAX_TTL_S), BeforeValidator(_integral)] | None = Field(
        None, description=TTL_DOC
    )
    expires_at: str | None = Field(
        None,
        description=EXPIRES_DOC,
        examples=["2030-01-31T12:00:00Z"],
        json_schema_extra={"format": "date-time"},
    )

    @model_validator(mode="after")
    def _one_expiry(self) -> _Expiring:
        if self.ttl is not None and self.expires_at is not None:
            raise ValueError("give ttl or expires_at, not both")
        if self.expires_at is not None and parse_expiry(self.expires_at).timestamp() <= time.time():
            raise FieldError(
                "expires_at", f"expires_at {self.expires_at} is in the past; give a later time"
            )
        if (
            self.expires_at is not None
            and parse_expiry(self.expires_at).timestamp() > time.time() + MAX_TTL_S
        ):
            raise FieldError(
                "expires_at",
                f"expires_at {self.expires_at} is more than 100 years ({MAX_TTL_S} s) from "
                "now; give an earlier time",
            )
        return self

    def expires_ms(self) -> int | None:
        """When it expires, ms since the epoch; None: the collection's default."""
        if self.ttl is not None:
            return time.time_ns() // 1_000_000 + 1000 * self.ttl
        if self.expires_at is not None:
            return int(parse_expiry(self.expires_at).timestamp() * 1000)
        return None


class DocumentIn(_Text, _Expiring):
    id: DocId | None = Field(
        None, description=f"{ID_DOC}; generated when absent", json_schema_extra=ID_SCHEMA
    )
    metadata: Metadata = Field(
        None, description=f"any JSON object of at most {MAX_METADATA_BYTES:,} bytes, stored as is"
    )


class DocumentPut(_Text, _Expiring):
    metadata: Metadata = Field(
        None, description=f"any JSON object of at most {MAX_METADATA_BYTES:,} bytes, stored as is"
    )


class BatchDocumentIn(DocumentIn):
    # A batch answers a text with no words as that item's error, in a 200: so the batch
    # schema does not refuse it (the schema says what is refused).
    text: str | None = Field(
        None,
        validate_default=True,
        description="the document text (UTF-8), or a page with text/html; one with no "
        "word (letter or digit) is answered as this item's error",
    )


class BatchIn(_In):
    documents: list[BatchDocumentIn] = Field(min_length=1, max_length=MAX_BATCH)


Measure = Literal["jaccard", "containment"]
# Where a query reads (app.store.reads): with NEARDUP_READ_FROM_REPLICAS, replicas too
# ("eventual"), or the masters only ("strong"); without it, always the masters.
Consistency = Literal["eventual", "strong"]
CONSISTENCY_DOC = (
    "strong: read from the Redis masters even when NEARDUP_READ_FROM_REPLICAS lets "
    "queries read from replicas (docs/deployment.md, reads from replicas)"
)
MEASURE_DOC = (
    "jaccard: stored documents that resemble the text as a whole (threshold: least "
    "Jaccard, default the collection's); containment: stored documents that hold "
    "passages of it (every one sharing a passage of at least the collection's "
    "passage_words words, or passages of a third of that or more holding as many together; "
    "threshold, when given: least share of the text's shingles "
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
        json_schema_extra={"minProperties": 1},
    )


EXCLUDE_DOC = (
    "with measure=containment: what not to count. quotes: text inside quotation marks "
    "(and a page's <blockquote> and <q>); bibliography: a trailing section headed "
    "References, Bibliography, Works Cited, Literaturverzeichnis, Références or the like; "
    "min_words: passages shorter than this many words. Set-aside spans are listed in "
    "`excluded`, and count neither in containment nor in coverage"
)


class ExcludeIn(_In):
    quotes: bool = Field(False, description="set aside text inside quotation marks")
    bibliography: bool = Field(False, description="set aside a trailing reference list")
    min_words: Annotated[int, Field(ge=0, le=100_000), BeforeValidator(_integral)] = Field(
        0, description="set aside shorter passages"
    )


SITE_DOC = (
    "with text/html: the page's site (as a stored page's metadata.site or its URL id's "
    "host), whose learned template is then not counted (docs/templates.md)"
)


LIMIT_DOC = (
    "most results: default 10 for jaccard; for containment, every source found (each "
    "holds a passage of at least the collection's passage_words words, or shorter ones "
    "holding as many together)"
)


class SimilarIn(_Text):
    # exclude sets passages aside: it needs measure=containment, said in the schema too.
    model_config = ConfigDict(
        json_schema_extra={
            "dependentSchemas": {
                "exclude": {
                    "required": ["measure"],
                    "properties": {"measure": {"const": "containment"}},
                }
            }
        }
    )
    site: str | None = Field(None, description=SITE_DOC, max_length=1000)
    threshold: QueryThreshold | None = None
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

    exclude: ExcludeIn | None = Field(None, description=EXCLUDE_DOC)

    @model_validator(mode="after")
    def _evidence_needs_containment(self) -> SimilarIn:
        check_measure(self.measure, self.evidence)
        self._check_options()
        return self

    def _check_options(self) -> None:
        """Refuse options the measure or the content type has no use for."""
        if self.exclude is not None and self.measure != "containment":
            raise FieldError(
                "exclude", "exclude needs measure=containment (Jaccard has no passages)"
            )
        if self.site is not None and not self.is_html:
            raise FieldError(
                "site", "site goes with content_type text/html (a template is read from pages)"
            )
        problem = None if self.site is None else site_problem(self.site)
        if problem is not None:
            raise FieldError("site", problem)

    def _quoting(self) -> bool:
        return self.exclude is not None and self.exclude.quotes

    def exclusions(self, text: str) -> Exclusions | None:
        """What exclude sets aside in the extracted text (after extracted(), which reads
        a page's quotations), or None without exclude."""
        if self.exclude is None:
            return None
        spans = detect(text, self.exclude.quotes, self.exclude.bibliography, self._quotes)
        return Exclusions(spans, self.exclude.min_words)


def check_measure(measure: str, evidence: bool) -> None:
    """Refuse evidence for a measure that has none."""
    if evidence and measure != "containment":
        raise FieldError(
            "evidence", "evidence=true needs measure=containment (Jaccard has no passages)"
        )


class DeleteIn(_In):
    ids: list[Annotated[DocId, Field(json_schema_extra=ID_SCHEMA)]] | None = Field(
        None, min_length=1, max_length=MAX_BATCH, description="delete these documents"
    )
    filter: FilterIn | None = Field(
        None, description="delete every document whose metadata matches, a step at a time"
    )
    cursor: str | None = Field(
        None, description="with filter: the cursor the previous step answered (omit to start)"
    )
    step: Annotated[int, Field(ge=1, le=10_000), BeforeValidator(_integral)] = Field(
        1000, description="with filter: records scanned per call"
    )

    # "exactly one of ids and filter; cursor only with filter", said in the schema too
    # (inside allOf, for code generators: see _Text.__get_pydantic_json_schema__).
    model_config = ConfigDict(
        json_schema_extra={
            "allOf": [
                {
                    "oneOf": [
                        {
                            "required": ["ids"],
                            "properties": {
                                "ids": {"type": "array"},
                                "filter": {"type": "null"},
                                "cursor": {"type": "null"},
                            },
                        },
                        {
                            "required": ["filter"],
                            "properties": {"filter": {"type": "object"}, "ids": {"type": "null"}},
                        },
                    ]
                }
            ]
        }
    )

    @model_validator(mode="after")
    def _one_of(self) -> DeleteIn:
        if (self.ids is None) == (self.filter is None):
            raise ValueError("give exactly one of ids and filter")
        if self.ids is not None and self.cursor is not None:
            raise ValueError("cursor goes with filter, not with ids")
        return self


_BASE64: JsonDict = {
    "type": "string",
    "pattern": "^[A-Za-z0-9+/]*={0,2}$",
    "contentEncoding": "base64",
}
# What app.index.transfer checks, said in the schema (it checks each line itself, so
# a line's problem is named with the line's id).
IMPORT_HEADER: JsonDict = {
    "properties": {
        "format": {"const": "neardup-export"},
        "version": {"const": 1},
        "params": {
            "type": "object",
            "description": "the sketch parameters of the exporting collection: each must "
            "equal the target collection's (GET /collections/{name}), else 422",
        },
    },
    "required": ["format", "version", "params"],
    "additionalProperties": False,
}
IMPORT_LINE: JsonDict = {
    "properties": {
        "id": {"type": "string", **ID_SCHEMA, "description": ID_DOC},
        "metadata": {"anyOf": [{"type": "object"}, {"type": "null"}]},
        "shingles": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1},
        "fingerprint": {
            **_BASE64,
            "description": "1 to fingerprint_size ascending little-endian u32 values",
        },
        "bands": {**_BASE64, "description": "exactly bands little-endian u64 values"},
        "passages": {
            **_BASE64,
            "description": "the passage layout, exactly when the collection keeps a passage "
            "index (passage_words > 0)",
        },
        "expires_ms": {
            "type": "integer",
            "minimum": 0,
            "description": "ms since the epoch, at most 100 years from now; absent: never",
        },
        "plain": {
            "type": "boolean",
            "description": "sent as text, not as a page: never a site's thin page; absent: false",
        },
    },
    "required": ["id", "shingles", "fingerprint", "bands"],
    "additionalProperties": False,
}


class ImportIn(_In):
    """Lines of an export (GET /export): sketches that only the collection's own
    parameters can have, so a made-up line is refused with a 422 saying why."""

    header: dict[str, Any] = Field(
        description="the export's first line", json_schema_extra=IMPORT_HEADER
    )
    documents: list[Annotated[dict[str, Any], Field(json_schema_extra=IMPORT_LINE)]] = Field(
        # One more than a batch: the export's end line may close a full last batch (it is
        # skipped; import_documents counts the documents).
        min_length=1,
        max_length=MAX_BATCH + 1,
        description="export lines after the header",
    )


# What a parameter's schema says beyond its setting's bounds: passage_words is 0 (no
# passage index) or at least a shingle's words (3 for word:3, more for longer shingles,
# which the answer's 422 names); fingerprint_bits is 24 or 32 (a validator's rule).
_PARAMETER_SCHEMAS: dict[str, dict[str, Any]] = {
    "passage_words": {"not": {"enum": [1, 2]}},
    "fingerprint_bits": {"enum": [24, 32]},
}


def _collection_in() -> type[BaseModel]:
    """POST /collections: a name and the collection's parameters, each optional (the
    service's setting when absent). The fields are app.service.collections.PARAMETERS,
    typed as the settings are, so a new collection parameter needs no edit here."""
    fields: dict[str, Any] = {
        "name": (
            str,
            Field(
                description=f"the collection's name: {COLLECTION_RULE}",
                json_schema_extra=COLLECTION_SCHEMA,
            ),
        ),
    }
    for name in PARAMETERS:
        setting = Settings.model_fields[name]
        # With the setting's own bounds (ge, le, ...), so the schema states them too.
        rules = [*setting.metadata]
        if setting.annotation is int:
            rules.append(BeforeValidator(_integral))
        typed: Any = Annotated[(setting.annotation, *rules)] if rules else setting.annotation
        said = f"default: the service's NEARDUP_{name.upper()}"
        extra = _PARAMETER_SCHEMAS.get(name)
        fields[name] = (typed | None, Field(None, description=said, json_schema_extra=extra))
    return create_model("CollectionIn", __base__=_In, **fields)


CollectionIn = _collection_in()


# ---------------------------------------------------------------- stored checks (POST /checks)

MAX_CHECK_TTL = 100 * 365 * 24 * 3600  # as NEARDUP_DEFAULT_TTL's bound
MAX_CHECKS_PAGE = 1000
CHECKS_CURSOR_DOC = "the `cursor` of the previous page: continue the list after it"
CHECK_TTL_DOC = "seconds the check is kept (default NEARDUP_CHECK_TTL, 30 days)"


class CheckIn(SimilarIn):
    """POST /similar's body, for a check kept as a report: containment with evidence and
    the text returned unless the body says otherwise, and how long to keep it."""

    measure: Measure = Field("containment", description=MEASURE_DOC)
    evidence: bool | None = Field(  # type: ignore[assignment]
        None, strict=True, description=EVIDENCE_DOC + " (default: true with containment)"
    )
    return_text: bool = Field(True, strict=True, description="answer the checked text too")
    ttl: Annotated[int, Field(gt=0, le=MAX_CHECK_TTL), BeforeValidator(_integral)] | None = Field(
        None, description=CHECK_TTL_DOC
    )
    metadata: Metadata = Field(
        None,
        description=f"any JSON object of at most {MAX_METADATA_BYTES:,} bytes, kept with the "
        "check and shown in the list of checks (who submitted it, for which assignment)",
    )

    # Replaces SimilarIn's validator of the same name: evidence left out follows the
    # measure; the other options are refused as POST /similar refuses them.
    @model_validator(mode="after")
    def _evidence_needs_containment(self) -> CheckIn:
        if self.evidence is None:
            self.evidence = self.measure == "containment"
        check_measure(self.measure, self.evidence)
        self._check_options()
        return self
