"""Index: one collection's near-duplicate index, a façade over the rooms of app.index.

It knows nothing of HTTP. Each method hands its work to the room that does it:

    params.py       the collection's fixed parameters and how older configs read
    sketch.py       texts -> shingle counts, fingerprints, band keys, passage layouts
    candidates.py   how a query picks candidates (both paths, the hot-key budget)
    similarity.py   similarity queries: verify the candidates, rank them
    containment.py  containment queries: align passages (passages.py), rank sources
    ranking.py      the one ranking rule: best first, each id once
    writes.py       the write protocol (ingest rounds, one round's write order)
    locks.py        how a write takes its ids' locks
    documents.py    one document's reads, delete and expiry removal
    scan.py         the whole collection's pairs and groups
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TypeVar

from app.index import containment, documents, locks, records, similarity, writes
from app.index.filters import Filter
from app.index.params import Params
from app.index.passages import Layout
from app.index.pieces import DEFAULT_MAX_TEXT_BYTES, Pieces
from app.index.results import (
    ContainmentResult,
    Document,
    Group,
    IngestResult,
    Pair,
    QueryResult,
)
from app.index.scan import Cut, Mark, PairBlock, Scanner
from app.index.sites import Sites
from app.index.sketch import Sketched, passage_layouts
from app.index.trimming import Exclusions
from app.store import ReplicationError, Store, replication_at_end
from app.store.reads import replica_reads

_T = TypeVar("_T")


async def replica_steps(steps: AsyncIterator[_T]) -> AsyncIterator[_T]:
    """A scan's steps, each one's reads allowed on replicas (app.store.reads): marked
    per step, so the mark never outlives a step, whoever closes the stream."""
    while True:
        with replica_reads():
            try:
                step = await anext(steps)
            except StopAsyncIteration:
                return
        yield step


class Index:
    """One collection's near-duplicate index on a Store."""

    def __init__(
        self,
        store: Store,
        params: Params,
        candidate_cap: int,
        max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
        config: bytes | None = None,
    ) -> None:
        """config: the stored config the collection was opened from, which its writes
        check is still the stored one (None: they do not)."""
        self.store = store
        self.params = params
        store.use_band_buckets(
            params.band_buckets,
            params.short_anchors,
            params.short_fields,
            params.packed_spills,
            params.field_bytes,
            params.marks,
        )
        store.ids.use_buckets(params.id_buckets)
        self.candidate_cap = candidate_cap
        self.max_text_bytes = max_text_bytes
        self.pieces = Pieces(store, params, candidate_cap, max_text_bytes, config)
        self.sites = Sites(store, params.template_pages)

    @classmethod
    async def open(
        cls,
        store: Store,
        params: Params,
        candidate_cap: int,
        max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    ) -> Index:
        """Open the collection, creating it with params if it is new."""
        raw = await store.config(params.to_json_made())
        return cls(store, params.agreed(Params.stored(raw)), candidate_cap, max_text_bytes, raw)

    def passage_layouts(self, texts: Sequence[str]) -> list[Layout]:
        """Each text's anchors and words (app.index.passages), in two kernel calls."""
        return passage_layouts(self.params, texts)

    # queries (app.index.similarity, app.index.containment) ---------------------------

    def check_threshold(self, threshold: float | None) -> float:
        """The threshold a query uses, refusing one below the index's own."""
        return similarity.check_threshold(self.params, threshold)

    async def similar_to_text(
        self,
        text: str,
        threshold: float | None = None,
        limit: int = 10,
        where: Filter | None = None,
        site: str | None = None,
    ) -> QueryResult:
        """Stored near-duplicates of a text that is not stored (a page of site: its own
        text, app.index.sites)."""
        t = self.check_threshold(threshold)
        with replica_reads():
            return await similarity.similar_to_text(self.pieces, text, t, limit, where, site)

    async def similar_to_id(
        self,
        doc_id: str,
        threshold: float | None = None,
        limit: int = 10,
        where: Filter | None = None,
    ) -> QueryResult | None:
        """Near-duplicates of a stored document, or None if the id is unknown."""
        t = self.check_threshold(threshold)
        with replica_reads():
            return await similarity.similar_to_id(self.pieces, doc_id, t, limit, where)

    def check_containment(self, threshold: float | None) -> float:
        """The least containment a query reports, refusing what the index cannot answer."""
        return containment.check_containment(self.params, threshold)

    async def containment_of_text(
        self,
        text: str,
        threshold: float | None = None,
        limit: int | None = None,
        where: Filter | None = None,
        exclude: Exclusions | None = None,
        deadline: float | None = None,
        site: str | None = None,
        min_words: int | None = None,
    ) -> ContainmentResult:
        """Stored documents that hold passages of a text, with the passages: every one
        with a passage of at least min_words (default passage_words) words, or only
        those covering threshold of the text when given; limit None: all of them.
        Without what exclude sets aside (app.index.exclusions); past deadline
        (time.monotonic()), Overdue."""
        t = self.check_containment(threshold)
        with replica_reads():
            return await containment.containment_of_text(
                self.pieces, text, t, limit, where, exclude, deadline, site, min_words
            )

    async def containment_of_id(
        self,
        doc_id: str,
        threshold: float | None = None,
        limit: int | None = None,
        where: Filter | None = None,
        deadline: float | None = None,
        min_words: int | None = None,
    ) -> ContainmentResult | None:
        """Other stored documents that hold passages of a stored one (None: unknown id)."""
        t = self.check_containment(threshold)
        with replica_reads():
            return await containment.containment_of_id(
                self.pieces, doc_id, t, limit, where, deadline, min_words
            )

    # reads and removal (app.index.documents) ------------------------------------------

    async def get(self, doc_id: str) -> records.Record | None:
        return await documents.get(self.store, doc_id)

    async def read(self, doc_id: str) -> tuple[records.Record, str | None] | None:
        """A document's record and its kept text (None when the collection keeps none,
        or when a write that crashed left another version's text)."""
        return await documents.read(self.store, self.params, doc_id)

    async def delete(self, doc_id: str) -> bool:
        """Remove a document; False if there was none (or it had expired)."""
        return await documents.delete(self.store, self.params, doc_id)

    async def expire(self, doc_id: str, handle: int, at_ms: int) -> bool:
        """The sweeper's delete of one queued handle whose record names doc_id
        (app.index.documents.expire)."""
        return await documents.expire(self.store, self.params, doc_id, handle, at_ms)

    async def count(self) -> int:
        """The number of stored documents."""
        return await self.store.ids.count()

    async def ping(self) -> None:
        """Raise errors.Unavailable unless the store answers."""
        await self.store.ping()

    # writes (app.index.writes, app.index.locks) -----------------------------------------

    async def ingest(
        self,
        docs: Sequence[Document],
        *,
        similar: bool = False,
        threshold: float | None = None,
        limit: int = 10,
    ) -> list[IngestResult]:
        """Store documents (replacing any with the same id), one result each.

        With similar=True each result also carries the near-duplicates found
        before the document was stored. A text with no words is refused in
        its result and nothing of it is stored.
        """
        t = self.check_threshold(threshold) if similar else self.params.threshold
        results: list[IngestResult] | None = None
        try:
            with replication_at_end():  # every round written before a shortfall is raised
                results = await writes.ingest(self.pieces, docs, similar, t, limit)
        except ReplicationError as exc:
            if results is not None:  # applied whole: its answer names what it stored,
                # one entry a document in the request's order (None: refused, not stored)
                exc.applied_ids = [r.id if r.error is None else None for r in results]
            raise
        return results

    async def write(
        self,
        ids: list[str],
        items: list[tuple[int, dict | None]],
        sk: Sketched,
        bodies: list[str] | None = None,
        expires: list[int] | None = None,
        plain: list[bool] | None = None,
    ) -> list[bool]:
        """Write one round of sketched documents, each id once (app.index.writes.write)."""
        return await writes.write(
            self.store, self.params, ids, items, sk, bodies, expires, plain, self.pieces.config
        )

    def locked(self, ids: list[str]) -> AbstractAsyncContextManager[None]:
        """Hold the write locks of these ids: no other writer changes them meanwhile."""
        return locks.locked(self.store, ids)

    # corpus-wide (app.index.scan) -------------------------------------------------------

    async def duplicate_pair_blocks(
        self,
        threshold: float | None = None,
        max_pairs: int | None = None,
        after: str | None = None,
        marks: bool = False,
    ) -> AsyncIterator[PairBlock | Cut | Mark]:
        """Every verified near-duplicate pair once, in blocks by older document
        (app.index.scan); with max_pairs at most that many, then a Cut; with marks,
        Marks of progress between them."""
        t = self.check_threshold(threshold)
        scanner = Scanner(self.store, self.params.fingerprint_size)
        async for block in replica_steps(scanner.pairs(t, max_pairs, after, marks)):
            yield block

    async def duplicate_pairs(self, threshold: float | None = None) -> AsyncIterator[Pair]:
        """Every verified near-duplicate pair once, older document first."""
        async for block in self.duplicate_pair_blocks(threshold):
            assert isinstance(block, PairBlock)
            for b, b_id, sim in zip(
                block.b.tolist(), block.b_ids, block.similarity.tolist(), strict=True
            ):
                yield Pair(block.a, block.a_id, b, b_id, sim)

    async def duplicate_groups(
        self, threshold: float | None = None, after: int = 0
    ) -> AsyncIterator[Group]:
        """Connected groups of near-duplicates (exact components of the pair graph);
        the oldest member is canonical; with after, those whose canonical's handle is
        above it."""
        t = self.check_threshold(threshold)
        scanner = Scanner(self.store, self.params.fingerprint_size)
        async for handles, names in replica_steps(scanner.groups(t, after)):
            yield Group(names[0], names, handles[0])
