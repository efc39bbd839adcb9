"""What the index takes and answers: documents in, matches, pairs, groups and
containments out. Plain data, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.index.passages import Passage


@dataclass(frozen=True)
class Document:
    """A document to ingest; id None means the index names it."""

    text: str
    id: str | None = None
    metadata: dict | None = None
    # When it stops answering (ms since the epoch); None: the collection's default_ttl.
    expires_ms: int | None = None
    # Sent as text/html: its site's template is not its own text (app.index.sites).
    html: bool = False


@dataclass(frozen=True)
class Match:
    id: str
    similarity: float
    thin: bool = False  # little text of its own (app.index.templates.THIN_SHINGLES)


@dataclass(frozen=True)
class QueryResult:
    """Verified near-duplicates, best first, and what it took to find them."""

    results: list[Match]
    candidates: int
    capped: bool
    thin: bool = False  # the query had little text of its own


@dataclass(frozen=True)
class Pair:
    """A verified near-duplicate pair; a is the older document (smaller handle)."""

    a: int
    a_id: str
    b: int
    b_id: str
    similarity: float


@dataclass(frozen=True)
class Group:
    """Documents connected by near-duplicate pairs; canonical is the oldest."""

    canonical: str
    members: list[str]
    handle: int = 0  # the canonical's: groups stream in its order, so it is a resume point


@dataclass
class IngestResult:
    id: str
    shingles: int
    created: bool = False
    error: str | None = None
    similar: QueryResult | None = field(default=None)


@dataclass(frozen=True)
class Containment:
    """A source that holds passages of the query: how much of the query, and where."""

    id: str
    containment: float
    similarity: float
    passages: list[Passage]
    # Per passage, the words of its query span that held look-alike or invisible characters
    # (app.index.disguise); empty when none did or nobody asked (a stored document's query).
    disguised: tuple[int, ...] = ()


@dataclass(frozen=True)
class ContainmentResult:
    """Sources of a query's passages, most contained first, and what it took to find them."""

    results: list[Containment]
    candidates: int
    capped: bool
    # Query anchors too common in the collection (boilerplate) to read in full.
    common: int
    # The share of the query's shingles found in any of the results.
    coverage: float
