"""Near-duplicate logic: sketch, band keys, candidates, verification, ranking.

It knows nothing of HTTP. Writes follow an order that needs no multi-key
transaction: band memberships first, the record last; a delete removes the
record first. A reader only trusts what a record says, so a crash between
steps never shows a half-written document, and re-sending repairs it.

Every write of an id (ingest, replace, delete) holds that id's lock from
before it reads the id's handle until its last step. So the id -> handle
mapping changes only under the lock, and an id has at most one live handle:
a writer can never attach a record to a handle that a concurrent delete has
already unmapped. (Locking the handle instead, after looking it up, left
exactly that window.) Handles are never reused, so an unmapped handle is
unreachable for good; ``app.index.check`` finds and removes whatever of one
a crash left behind.
"""

from __future__ import annotations

import asyncio
import os
import random
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from itertools import pairwise

import numpy as np
import orjson

from app import kernel
from app.core import errors, metrics
from app.core.shingles import parse_shingle
from app.index import records, texts
from app.index.align import Query, align
from app.index.expiry import live, live_records, now_ms
from app.index.filters import Filter
from app.index.lsh import BandPlan, plan_bands
from app.index.passages import Layout, Passage, covered_shingles, layouts_of, pack_batch
from app.index.scan import Cut, Mark, PairBlock, Scanner
from app.store import Candidates, Store, buckets_for

LOCK_TTL_MS = 10_000
LOCK_WAIT_S = 10.0
# Sketching runs on a worker thread (the kernel releases the GIL) once a
# request carries this much text; below it the thread hop costs more.
THREAD_TEXT_BYTES = 256 * 1024
DEFAULT_MAX_TEXT_BYTES = 8 * 1024 * 1024
# A query reads every member of its hot keys while they hold at most this many times
# candidate_cap handles together (4 bytes each in Redis: 10,000 at the default cap take
# about 2 ms); beyond it, a window of each (Index._candidates).
DISCOVERY_BUDGET = 50
# The most hot members a query reads inside Redis (the candidates script): Lua counts
# them several times slower than numpy, on Redis' one thread, so a query whose hot
# keys need more (boilerplate) reads them through the pipelines (Index._gather).
SCRIPT_HOT_MEMBERS = 1000
# A query's candidates (handles ascending), their live records, capped, and the hot
# keys read only in part (Index._gather).
_Gathered = tuple[np.ndarray, list[bytes | None], bool, int]
# Documents a collection's band buckets are sized for unless told otherwise.
DEFAULT_CAPACITY = 100_000
DEFAULT_PASSAGE_WORDS = 30
# Bits of a word's hash in new collections' passage layouts (app.index.align).
DEFAULT_PASSAGE_BITS = 8
# XORed into anchor hashes (app.index.passages) to make their keys in the band buckets.
ANCHOR_SALT = np.uint64(0x9E3779B97F4A7C15)
# An odd multiplier: moves a 32-bit anchor's bits into the top bits that pick its bucket.
ANCHOR_SPREAD = np.uint64(0xD6E8FEB86659FD93)
# About how many anchors a document has: buckets are sized for bands plus these.
ANCHORS_PER_DOCUMENT = 24
DEFAULT_CONTAINMENT = 0.1


class NoShinglesError(errors.Invalid):
    """A text has no words, so nothing can be compared with it."""

    title = "Text has no words"


class ThresholdError(errors.Invalid):
    """A query threshold the index cannot answer."""

    title = "Threshold out of range"


class TooLargeError(errors.TooLarge):
    """A text is over the configured size limit."""

    title = "Text too large"


class ExpiryError(errors.Invalid):
    """An expiry that has already passed."""

    title = "Expiry in the past"


class NoPassagesError(errors.Invalid):
    """A containment query on a collection that keeps no passage index."""

    title = "No passage index"


class BusyError(errors.Busy):
    """A document stayed locked by another writer for too long; retry."""


class ConfigMismatchError(errors.Misconfigured):
    """The collection in Redis was made with other sketch parameters."""


class DeletingError(errors.Conflict):
    """The collection is marked for deletion: no reads or writes any more."""


# The field of a stored config that marks its collection as being deleted.
DELETING = "deleting"


def _shares(sizes: Sequence[int], budget: int, most: int) -> list[int]:
    """How many members to read from sets of these sizes: at most `most` from each,
    about `budget` in all, evenly, what small sets leave over going to larger ones."""
    counts = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    for k, i in enumerate(order):
        counts[i] = max(1, min(sizes[i], most, left // (len(sizes) - k)))
        left -= counts[i]
    return counts


@dataclass(frozen=True)
class Params:
    """A collection's sketch and LSH parameters, fixed when it is created."""

    shingle: str
    num_perm: int
    fingerprint_size: int
    seed: int
    threshold: float
    bands: int
    rows: int
    # Fixed when the collection is made, from the capacity it was sized for.
    band_buckets: int
    # Every shared run of this many words is found by containment queries; 0 keeps
    # no passage index (collections made before passages existed).
    passage_words: int = DEFAULT_PASSAGE_WORDS
    # Whether each document's text is kept (compressed, app.index.texts), so a reviewer
    # can read a source beside the passages found in it.
    keep_text: bool = False
    # Seconds a document lives when its ingest names no expiry; 0: for ever (collections
    # made before expiry existed).
    default_ttl: int = 0
    # Bits of each word's hash in the passage layout (format 3, app.index.align); 0: the
    # 4-bit format 1 and its alignment (collections made before format 3).
    passage_bits: int = DEFAULT_PASSAGE_BITS

    @classmethod
    def create(
        cls,
        shingle: str,
        num_perm: int,
        fingerprint_size: int,
        seed: int,
        threshold: float,
        capacity: int = DEFAULT_CAPACITY,
        passage_words: int = DEFAULT_PASSAGE_WORDS,
        keep_text: bool = False,
        default_ttl: int = 0,
        passage_bits: int = DEFAULT_PASSAGE_BITS,
    ) -> Params:
        plan = plan_bands(threshold, num_perm)
        per_document = plan.bands + (ANCHORS_PER_DOCUMENT if passage_words else 0)
        buckets = buckets_for(capacity * per_document)
        return cls(
            shingle,
            num_perm,
            fingerprint_size,
            seed,
            threshold,
            plan.bands,
            plan.rows,
            buckets,
            passage_words,
            keep_text,
            default_ttl,
            passage_bits,
        )

    @property
    def passage_shingle(self) -> str:
        """The word shingles passages are winnowed over: the collection's own when it
        shingles words, else three words."""
        kind, _ = parse_shingle(self.shingle)
        return self.shingle if kind == "word" else "word:3"

    @property
    def plan(self) -> BandPlan:
        return plan_bands(self.threshold, self.num_perm)

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self), option=orjson.OPT_SORT_KEYS)

    @classmethod
    def stored(cls, raw: bytes) -> Params:
        """The parameters of a stored config (Store.config); a collection being deleted
        (app.index.collections) has none any more."""
        fields = orjson.loads(raw)
        if fields.pop(DELETING, False):
            raise DeletingError(
                "the collection is being deleted; DELETE it again to finish, then create it anew"
            )
        if "band_buckets" not in fields:
            raise ConfigMismatchError(
                "the collection was made by an older neardup that kept one Redis SET per "
                "band; ingest into a new NEARDUP_COLLECTION (or delete its nd:<name>:* keys)"
            )
        # A collection made before passages existed has no passage index.
        fields.setdefault("passage_words", 0)
        # ... and one made before texts could be kept keeps none.
        fields.setdefault("keep_text", False)
        # ... and one made before expiry existed keeps documents for ever.
        fields.setdefault("default_ttl", 0)
        # ... and one made before format 3 keeps 4-bit word hashes, aligned as then.
        fields.setdefault("passage_bits", 0)
        return cls(**fields)


@dataclass(frozen=True)
class Document:
    """A document to ingest; id None means the index names it."""

    text: str
    id: str | None = None
    metadata: dict | None = None
    # When it stops answering (ms since the epoch); None: the collection's default_ttl.
    expires_ms: int | None = None


@dataclass(frozen=True)
class Match:
    id: str
    similarity: float


@dataclass(frozen=True)
class QueryResult:
    """Verified near-duplicates, best first, and what it took to find them."""

    results: list[Match]
    candidates: int
    capped: bool


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


@dataclass(frozen=True)
class _Sketched:
    shingles: np.ndarray
    fp_values: np.ndarray
    fp_offsets: np.ndarray
    band_keys: np.ndarray
    layouts: list[Layout] | None = None
    # What an ingest writes of the passages, without a Layout per text: each text's
    # passage section packed by the kernel, and its anchor hashes (low 32 bits).
    packed: list[bytes] | None = None
    anchor_hashes: list[np.ndarray] | None = None

    def fingerprint(self, i: int) -> np.ndarray:
        return self.fp_values[int(self.fp_offsets[i]) : int(self.fp_offsets[i + 1])]

    def anchors(self, i: int) -> np.ndarray:
        """The passage index entries of text i (see anchor_keys)."""
        if self.anchor_hashes is not None:
            return anchor_keys(self.anchor_hashes[i])
        if self.layouts is None:
            return np.zeros(0, np.uint64)
        return anchor_keys(self.layouts[i].anchor_hashes)

    def passages(self, i: int) -> bytes:
        if self.packed is not None:
            return self.packed[i]
        return b"" if self.layouts is None else self.layouts[i].pack()


def _live(found: Candidates) -> _Gathered:
    """A script's candidates as _gather gives them: records expired since left out."""
    return found.handles, live(found.records), found.capped, found.cut


def anchor_keys(hashes: np.ndarray) -> np.ndarray:
    """The passage index's keys of anchor hashes (their low 32 bits, as records keep
    them): distinct, spread over 64 bits, and salted, because they share the band
    buckets (and with them the bounds on hot entries, the write order and the
    consistency check) with band keys, which they must never meet."""
    low = np.asarray(hashes, np.uint64) & np.uint64(0xFFFFFFFF)
    return np.unique((low * ANCHOR_SPREAD) ^ ANCHOR_SALT)


def anchors_of(rec: records.Record) -> np.ndarray:
    """The passage index's keys of a stored document."""
    if not rec.passages:
        return np.zeros(0, np.uint64)
    return anchor_keys(Layout.unpack(rec.passages).anchor_hashes)


class Index:
    """One collection's near-duplicate index on a Store."""

    def __init__(
        self,
        store: Store,
        params: Params,
        candidate_cap: int,
        max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    ) -> None:
        self.store = store
        self.params = params
        store.use_band_buckets(params.band_buckets)
        self.candidate_cap = candidate_cap
        self.max_text_bytes = max_text_bytes

    @classmethod
    async def open(
        cls,
        store: Store,
        params: Params,
        candidate_cap: int,
        max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    ) -> Index:
        """Open the collection, creating it with params if it is new."""
        stored = Params.stored(await store.config(params.to_json()))
        # The bucket count is the stored one: a changed NEARDUP_CAPACITY sizes new
        # collections only; so is the passage length of a collection made without one.
        params = replace(params, band_buckets=stored.band_buckets)
        if stored.passage_words == 0:
            params = replace(params, passage_words=0)
        # The passage layout's format is the stored one (old collections answer as before).
        params = replace(params, passage_bits=stored.passage_bits)
        if stored != params:
            ours, theirs = asdict(params), asdict(stored)
            diff = ", ".join(
                f"{k}: stored {theirs[k]!r}, configured {ours[k]!r}"
                for k in ours
                if ours[k] != theirs[k]
            )
            raise ConfigMismatchError(
                f"the collection was created with other parameters ({diff}); "
                "start with the stored settings or choose another NEARDUP_COLLECTION"
            )
        return cls(store, params, candidate_cap, max_text_bytes)

    # sketching ----------------------------------------------------------------

    def _check_size(self, texts: Sequence[str]) -> None:
        limit = self.max_text_bytes
        for i, text in enumerate(texts):
            # Code points bound the UTF-8 size from below, four bytes each from above.
            if len(text) > limit or (len(text) * 4 > limit and len(text.encode()) > limit):
                where = f"text {i}" if len(texts) > 1 else "the text"
                raise TooLargeError(
                    f"{where} is over {limit} bytes of UTF-8 (NEARDUP_MAX_TEXT_BYTES)"
                )

    async def _sketch(
        self, texts: Sequence[str], layouts: bool = False, passages: bool = True
    ) -> _Sketched:
        """Sketch texts; with layouts, each text's passage Layout (a containment query
        aligns it), else its passage section packed as an ingest writes it; without
        passages (a similarity query), none of that."""
        self._check_size(texts)
        if sum(map(len, texts)) >= THREAD_TEXT_BYTES:
            return await asyncio.to_thread(self._sketch_now, texts, layouts, passages)
        return self._sketch_now(texts, layouts, passages)

    def _sketch_now(
        self, texts: Sequence[str], layouts: bool = False, passages: bool = True
    ) -> _Sketched:
        p = self.params
        s = kernel.sketch(
            list(texts),
            shingle=p.shingle,
            num_perm=p.num_perm,
            fingerprint_size=p.fingerprint_size,
            seed=p.seed,
        )
        keys = kernel.band_keys(s.signatures, p.bands, p.rows)
        sketched = _Sketched(np.asarray(s.shingles), s.fp_values, s.fp_offsets, keys)
        if not (p.passage_words and passages):
            return sketched
        if layouts:
            return replace(sketched, layouts=self.passage_layouts(texts))
        # Packed in one kernel call (format 1), or one numpy pass over the batch (format
        # 3): a Layout per text, packed by numpy, cost more than the rest of an ingest's Python.
        anchors, words = self._winnowed(texts)
        low = (anchors.hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        cuts = anchors.offsets.tolist()
        if p.passage_bits:
            a, w = anchors, words
            packed = pack_batch(
                a.hashes, a.starts, a.offsets, w.hashes, w.starts, w.ends, w.offsets,
                p.passage_bits,
            )  # fmt: skip
        else:
            packed = kernel.pack_layouts(anchors, words)
        return replace(sketched, packed=packed, anchor_hashes=[low[a:b] for a, b in pairwise(cuts)])

    def _winnowed(self, texts: Sequence[str]) -> tuple[kernel.Winnowed, kernel.Winnowed]:
        """The texts' anchors and their words, in two kernel calls."""
        p = self.params
        anchors = kernel.winnow(
            list(texts), shingle=p.passage_shingle, passage_words=p.passage_words, seed=p.seed
        )
        # Every word is its own window of one: its hash and its span.
        words = kernel.winnow(list(texts), shingle="word:1", passage_words=1, seed=p.seed)
        return anchors, words

    def passage_layouts(self, texts: Sequence[str]) -> list[Layout]:
        """Each text's anchors and words (app.index.passages), in two kernel calls."""
        a, w = self._winnowed(texts)
        return layouts_of(
            a.hashes, a.starts, a.offsets, w.hashes, w.starts, w.ends, w.offsets,
            self.params.passage_bits,
        )  # fmt: skip

    # queries --------------------------------------------------------------------

    def check_threshold(self, threshold: float | None) -> float:
        """The threshold a query uses, refusing one below the index's own."""
        if threshold is None:
            return self.params.threshold
        if not 0.0 < threshold <= 1.0:
            raise ThresholdError("threshold must be greater than 0 and at most 1")
        if threshold < self.params.threshold - 1e-9:
            raise ThresholdError(
                f"threshold {threshold} is below {self.params.threshold}, the lowest this "
                "collection's LSH bands were built for; pairs that similar may not be found"
            )
        return threshold

    async def similar_to_text(
        self,
        text: str,
        threshold: float | None = None,
        limit: int = 10,
        where: Filter | None = None,
    ) -> QueryResult:
        """Stored near-duplicates of a text that is not stored."""
        t = self.check_threshold(threshold)
        # The passage anchors and layout are a containment query's, not this one's.
        sk = await self._sketch([text], passages=False)
        if int(sk.shingles[0]) == 0:
            raise NoShinglesError("the text has no words (letters or digits) to compare")
        return await self._query(sk.fingerprint(0), sk.band_keys[0], None, t, limit, where)

    async def similar_to_id(
        self,
        doc_id: str,
        threshold: float | None = None,
        limit: int = 10,
        where: Filter | None = None,
    ) -> QueryResult | None:
        """Near-duplicates of a stored document, or None if the id is unknown."""
        t = self.check_threshold(threshold)
        if self.store.scripted:
            return await self._similar_to_id_scripted(doc_id, t, limit, where)
        stored = await self._stored(doc_id)
        if stored is None:
            return None
        handle, raw = stored
        # Only the sketch: a whole unpack would also expand the passage layout.
        fingerprint, band_keys = records.sketch_of(raw)
        return await self._query(fingerprint, band_keys, handle, t, limit, where)

    async def _similar_to_id_scripted(
        self, doc_id: str, threshold: float, limit: int, where: Filter | None
    ) -> QueryResult | None:
        """similar_to_id in one exchange (a single server): the id's record and its
        band keys' candidates come together (Store.similar_by_id), by the same rules."""
        cap = self.candidate_cap
        handle, raw, found = await self.store.similar_by_id(
            doc_id, cap, DISCOVERY_BUDGET * cap, SCRIPT_HOT_MEMBERS
        )
        if handle is None or raw is None:
            return None
        (raw,) = live([raw])
        if raw is None:
            return None
        fingerprint, band_keys = records.sketch_of(raw)
        if found is None:  # hot keys past what the script reads
            gathered = await self._gather_pipelined(band_keys, handle)
        else:
            gathered = _live(found)
        return await self._query(fingerprint, band_keys, handle, threshold, limit, where, gathered)

    async def _candidates(
        self, band_keys: np.ndarray, exclude: int | None
    ) -> tuple[np.ndarray, bool, int]:
        """Handles sharing a band (or a passage anchor) with the query: the
        candidate_cap of them that share the most keys, whether any candidate was
        left unverified, and how many hot keys were read only in part.

        One lookup reads every key's inline handles (a dozen at most each) and the
        size of every hot key, spilled to a sorted set; a second reads the hot keys'
        members, all of them while together they are at most DISCOVERY_BUDGET x cap.
        So every candidate is ranked by the keys it shares, and the cap cuts the
        weakest, never arbitrary ones. Only a query whose hot keys hold more than
        that (boilerplate shared by thousands) reads a window of each, its share of
        the budget: its work stays bounded however hot its keys are. The windows are
        deterministic (the same query gets the same answer) and staggered, so hot
        keys with the same members still yield different candidates.
        """
        cap = self.candidate_cap
        inline, hot = await self.store.band_lookup(band_keys)
        parts = [inline]
        cut = 0
        if hot:
            sizes = [size for _, size in hot]
            budget = DISCOVERY_BUDGET * cap
            if sum(sizes) <= budget:
                counts, starts = sizes, [0] * len(sizes)
            else:
                counts = _shares(sizes, budget, max(sizes))
                starts = [
                    (j * n) % (s - n + 1)
                    for j, (s, n) in enumerate(zip(sizes, counts, strict=True))
                ]
                cut = sum(s > n for s, n in zip(sizes, counts, strict=True))
            keys = band_keys[[i for i, _ in hot]]
            parts += await self.store.band_window(keys, starts, counts)
        handles, hits = np.unique(np.concatenate(parts).astype(np.int64), return_counts=True)
        if exclude is not None:
            keep = handles != exclude
            handles, hits = handles[keep], hits[keep]
        capped = cut > 0
        if len(handles) > cap:
            # Candidates sharing more keys are likelier to be similar; among equals the
            # older go first (handles ascending, a stable sort).
            order = np.argsort(-hits, kind="stable")[:cap]
            handles = np.sort(handles[order])
            capped = True
        return handles, capped, cut

    async def _gather(
        self, band_keys: np.ndarray, exclude: int | None
    ) -> tuple[np.ndarray, list[bytes | None], bool, int]:
        """_candidates and their live records (None where there is none or it has
        expired). Scripted (a single server), one exchange: the candidates script
        applies _candidates' rules in Redis and returns the records with them, unless
        the hot keys need more than SCRIPT_HOT_MEMBERS read. Else (and on a cluster),
        _candidates' pipelines and one MGET (one exchange per master each)."""
        if self.store.scripted:
            cap = self.candidate_cap
            found = await self.store.candidates(
                band_keys, exclude, cap, DISCOVERY_BUDGET * cap, SCRIPT_HOT_MEMBERS
            )
            if found is not None:
                return _live(found)
        return await self._gather_pipelined(band_keys, exclude)

    async def _gather_pipelined(
        self, band_keys: np.ndarray, exclude: int | None
    ) -> tuple[np.ndarray, list[bytes | None], bool, int]:
        """_gather by _candidates' pipelines and one MGET (one exchange per master each)."""
        handles, capped, cut = await self._candidates(band_keys, exclude)
        return handles, await live_records(self.store, handles.tolist()), capped, cut

    async def _verified(
        self,
        fingerprint: np.ndarray,
        band_keys: np.ndarray,
        exclude: int | None,
        threshold: float,
        gathered: _Gathered | None = None,
    ) -> tuple[np.ndarray, list[bytes], np.ndarray, int, bool]:
        """Candidates from the bands (or as gathered already) verified by one batched
        Jaccard call.

        Returns the handles, records and similarities of those at or above
        the threshold, with the number of candidates and whether they were capped.
        """
        if gathered is None:
            gathered = await self._gather(band_keys, exclude)
        handles, fetched, capped, _ = gathered
        metrics.CANDIDATES.observe(len(handles))
        if capped:
            metrics.CANDIDATES_CAPPED.inc()
        present = [i for i, r in enumerate(fetched) if r is not None]
        raws = [fetched[i] for i in present]
        if not raws:
            return np.zeros(0, np.int64), [], np.zeros(0), len(handles), capped
        sims = kernel.jaccard_many_encoded(
            fingerprint,
            records.encoded_fingerprints(raws),  # type: ignore[arg-type]
            threshold,
            fingerprint_size=self.params.fingerprint_size,
        )
        kept = np.flatnonzero(sims >= threshold)
        metrics.CANDIDATES_VERIFIED.inc(len(raws))
        metrics.CANDIDATES_KEPT.inc(len(kept))
        return (
            handles[np.asarray(present, dtype=np.int64)[kept]],
            [raws[i] for i in kept.tolist()],  # type: ignore[misc]
            sims[kept],
            len(handles),
            capped,
        )

    async def _query(
        self,
        fingerprint: np.ndarray,
        band_keys: np.ndarray,
        exclude: int | None,
        threshold: float,
        limit: int,
        where: Filter | None = None,
        gathered: _Gathered | None = None,
    ) -> QueryResult:
        handles, raws, sims, candidates, capped = await self._verified(
            fingerprint, band_keys, exclude, threshold, gathered
        )
        # Most similar first, ties oldest first; ids parsed for the answer only.
        matches: list[Match] = []
        seen: set[str] = set()
        for i in np.lexsort((handles, -sims)).tolist():
            if where is not None and not where.matches_record(raws[i]):
                continue  # filtered before the limit: every match the bands found can answer
            doc_id = records.id_of(raws[i])
            if doc_id in seen:
                # Only a handle that lost its id (see the module docstring) can repeat
                # one; the better-ranked entry stands.
                metrics.DUPLICATE_IDS_DROPPED.inc()
                continue
            seen.add(doc_id)
            matches.append(Match(doc_id, float(sims[i])))
            if len(matches) == limit:
                break
        return QueryResult(matches, candidates, capped)

    # containment ----------------------------------------------------------------

    def check_containment(self, threshold: float | None) -> float:
        """The least containment a query reports, refusing what the index cannot answer."""
        if not self.params.passage_words:
            raise NoPassagesError(
                "this collection was created without a passage index (NEARDUP_PASSAGE_WORDS "
                "was 0, or it predates passages); ingest into a new collection to use "
                "measure=containment"
            )
        if threshold is None:
            return DEFAULT_CONTAINMENT
        if not 0.0 < threshold <= 1.0:
            raise ThresholdError("threshold must be greater than 0 and at most 1")
        return threshold

    async def containment_of_text(
        self,
        text: str,
        threshold: float | None = None,
        limit: int = 10,
        where: Filter | None = None,
    ) -> ContainmentResult:
        """Stored documents that hold passages of a text, with the passages."""
        t = self.check_containment(threshold)
        sk = await self._sketch([text], layouts=True)
        if int(sk.shingles[0]) == 0 or sk.layouts is None:
            raise NoShinglesError("the text has no words (letters or digits) to compare")
        return await self._containment(sk.fingerprint(0), sk.layouts[0], None, t, limit, where)

    async def containment_of_id(
        self,
        doc_id: str,
        threshold: float | None = None,
        limit: int = 10,
        where: Filter | None = None,
    ) -> ContainmentResult | None:
        """Other stored documents that hold passages of a stored one (None: unknown id)."""
        t = self.check_containment(threshold)
        stored = await self._stored(doc_id)
        if stored is None:
            return None
        handle, raw = stored
        rec = records.unpack(raw)
        if not rec.passages:  # stored before the collection kept passages
            return ContainmentResult([], 0, False, 0, 0.0)
        return await self._containment(
            rec.fingerprint, Layout.unpack(rec.passages), handle, t, limit, where
        )

    async def _containment(
        self,
        fingerprint: np.ndarray,
        layout: Layout,
        exclude: int | None,
        threshold: float,
        limit: int,
        where: Filter | None = None,
    ) -> ContainmentResult:
        p = self.params
        k = parse_shingle(p.passage_shingle)[1]
        min_words = max(k + 1, p.passage_words // 3)
        handles, fetched, capped, common = await self._gather(
            anchor_keys(layout.anchor_hashes), exclude
        )
        shingles = max(1, layout.words - k + 1)
        indexed = Query(layout)
        scored, raws, cut = [], [], False
        for h, raw in zip(handles.tolist(), fetched, strict=True):
            if raw is None:
                continue
            rec = records.unpack(raw)
            if not rec.passages or (where is not None and not where.matches(rec.metadata)):
                continue
            passages, capped_here = align(indexed, Layout.unpack(rec.passages), k, min_words)
            cut = cut or capped_here
            if passages:
                covered = covered_shingles(passages, layout.words, k)
                if covered.sum() / shingles >= threshold:
                    scored.append((h, rec, passages, covered))
                    raws.append(raw)
        sims = np.zeros(len(scored))
        if scored:
            sims = kernel.jaccard_many_encoded(
                fingerprint,
                records.encoded_fingerprints(raws),
                0.0,
                fingerprint_size=p.fingerprint_size,
            )
        ranked = sorted(
            range(len(scored)),
            key=lambda j: (-scored[j][3].sum(), -sims[j], scored[j][0]),
        )
        results: list[Containment] = []
        union = np.zeros(shingles, dtype=bool)
        seen: set[str] = set()
        for j in ranked:
            _, rec, passages, covered = scored[j]
            if rec.id in seen:
                metrics.DUPLICATE_IDS_DROPPED.inc()
                continue
            seen.add(rec.id)
            union |= covered
            results.append(
                Containment(rec.id, float(covered.sum() / shingles), float(sims[j]), passages)
            )
            if len(results) == limit:
                break
        return ContainmentResult(
            results, len(handles), capped or cut, common, float(union.sum() / shingles)
        )

    # reads and deletes ---------------------------------------------------------

    async def _stored(self, doc_id: str) -> tuple[int, bytes] | None:
        """The handle and packed record of a live (stored, unexpired) document."""
        handle, raw = await self.store.stored(doc_id)
        if handle is None:
            return None
        (raw,) = live([raw])
        return None if raw is None else (handle, raw)

    async def get(self, doc_id: str) -> records.Record | None:
        stored = await self._stored(doc_id)
        return None if stored is None else records.unpack(stored[1])

    async def read(self, doc_id: str) -> tuple[records.Record, str | None] | None:
        """A document's record and its kept text (None when the collection keeps none,
        or when a write that crashed left another version's text)."""
        stored = await self._stored(doc_id)
        if stored is None:
            return None
        handle, raw = stored
        text = None
        if self.params.keep_text:
            (packed,) = await self.store.texts([handle])
            text = texts.unpack(packed, raw)
        return records.unpack(raw), text

    async def delete(self, doc_id: str) -> bool:
        """Remove a document; False if there was none (or it had expired)."""
        async with self.locked([doc_id]):
            (handle,) = await self.store.handles([doc_id])
            if handle is None:
                return False
            (raw,) = await self.store.records([handle])
            await self._remove(doc_id, handle, raw)
            return live([raw]) != [None]

    async def expire(self, doc_id: str, handle: int, at_ms: int) -> bool:
        """The sweeper's delete of one queued handle whose record names doc_id: removed
        as DELETE removes it if it has expired by at_ms; else its queue entry is set
        right (a replace that changed the expiry and stopped before its last step)."""
        async with self.locked([doc_id]):
            (current,) = await self.store.handles([doc_id])
            (raw,) = await self.store.records([handle])
            if raw is None:
                await self.store.drop_expiries([handle])
                return False
            expires = records.expires_of(raw)
            if expires == 0 or expires > at_ms:
                if expires == 0 or current != handle:  # a ghost's is the check's to remove
                    await self.store.drop_expiries([handle])
                else:
                    await self.store.add_expiries([(handle, expires)])
                return False
            await self._remove(doc_id, handle, raw)
            return True

    async def _remove(self, doc_id: str, handle: int, raw: bytes | None) -> None:
        """Remove one handle's record, text, band entries, id and queue entry, under the
        id's lock (delete and expire: one delete).

        A live record goes first, so nothing answers for the document from the first
        step. An expired one answers nothing already, so it goes last: a sweep cut off
        midway leaves the record, and with it the band keys and the queue entry, for
        the next sweep to finish the job.
        """
        visible = raw is not None and live([raw]) != [None]
        if visible:
            await self.store.delete_records([handle])
        if self.params.keep_text:
            await self.store.delete_texts([handle])
        if raw is not None:
            rec = records.unpack(raw)
            await self.store.remove_bands([(handle, rec.band_keys), (handle, anchors_of(rec))])
        # A mapping without a record (a write that crashed before its record)
        # goes too: the id is free again either way.
        await self.store.forget_ids([doc_id], [handle])
        if raw is not None and not visible:
            await self.store.delete_records([handle])
        if raw is not None and records.expires_of(raw):
            await self.store.drop_expiries([handle])

    async def count(self) -> int:
        """The number of stored documents."""
        return await self.store.count_ids()

    async def ping(self) -> None:
        """Raise errors.Unavailable unless the store answers."""
        await self.store.ping()

    # ingest -------------------------------------------------------------------------

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
        expires = self.expiries(docs)
        ids = [d.id if d.id is not None else uuid.uuid4().hex for d in docs]
        sk = await self._sketch([d.text for d in docs])
        results = [IngestResult(ids[i], int(sk.shingles[i])) for i in range(len(docs))]
        good = [i for i, r in enumerate(results) if r.shingles > 0]
        for r in results:
            if r.shingles == 0:
                r.error = "the text has no words (letters or digits) to compare"
        if similar:
            known = dict(zip(ids, await self.store.handles(ids), strict=True))
            for i in good:
                results[i].similar = await self._query(
                    sk.fingerprint(i), sk.band_keys[i], known[ids[i]], t, limit
                )
        # A batch may name an id twice: later occurrences go in later rounds,
        # so the last one wins and each round writes each id once.
        rounds: list[list[int]] = []
        seen: dict[str, int] = {}
        for i in good:
            n = seen.get(ids[i], 0)
            seen[ids[i]] = n + 1
            if n == len(rounds):
                rounds.append([])
            rounds[n].append(i)
        for batch in rounds:
            created = await self._write(
                [ids[i] for i in batch],
                [(i, docs[i].metadata) for i in batch],
                sk,
                [docs[i].text for i in batch],
                [expires[i] for i in batch],
            )
            for i, c in zip(batch, created, strict=True):
                results[i].created = c
        return results

    def expiries(self, docs: Sequence[Document]) -> list[int]:
        """When each document expires (ms since the epoch; 0: never): its own expiry,
        else the collection's default_ttl from now; one already past is refused."""
        now = now_ms()
        default = now + 1000 * self.params.default_ttl if self.params.default_ttl else 0
        out = [default if d.expires_ms is None else d.expires_ms for d in docs]
        for i, ms in enumerate(out):
            if ms and ms <= now:
                where = f"document {i}" if len(docs) > 1 else "the document"
                raise ExpiryError(f"{where} would expire in the past; give a later expiry")
        return out

    async def _write(
        self,
        ids: list[str],
        items: list[tuple[int, dict | None]],
        sk: _Sketched,
        bodies: list[str] | None = None,
        expires: list[int] | None = None,
    ) -> list[bool]:
        """Write one round (each id once) under the ids' locks; bodies are the texts to
        keep (None: an import of sketches, which has none), expires when each expires
        (ms since the epoch, 0 or None: never)."""
        ends = expires if expires is not None else [0] * len(ids)
        async with self.locked(ids):
            handles = await self.store.assign_handles(ids)
            old = await self.store.records(handles)
            # Queued before anything else is written, so no record expires unqueued.
            await self.store.add_expiries([(h, e) for h, e in zip(handles, ends, strict=True) if e])
            new = [
                records.pack(
                    doc_id,
                    sk.fingerprint(i),
                    sk.band_keys[i],
                    int(sk.shingles[i]),
                    meta,
                    sk.passages(i),
                    end,
                )
                for doc_id, (i, meta), end in zip(ids, items, ends, strict=True)
            ]
            pairs = list(zip(handles, items, strict=True))
            # Band keys, then passage anchors: one exchange (one script reply per
            # call on a single server).
            await self.store.add_bands(
                [(h, sk.band_keys[i]) for h, (i, _) in pairs]
                + [(h, sk.anchors(i)) for h, (i, _) in pairs]
            )
            if self.params.keep_text and bodies is not None:
                # Before the record that points at it; it carries that record's digest.
                kept = [texts.pack(t, raw) for t, raw in zip(bodies, new, strict=True)]
                await self.store.put_texts(list(zip(handles, kept, strict=True)))
            await self.store.put_records(list(zip(handles, new, strict=True)))
            if self.params.keep_text and bodies is None:
                await self.store.delete_texts(handles)  # a replaced version's, now stale
            stale_bands, stale_anchors = [], []
            for (h, (i, _)), raw in zip(pairs, old, strict=True):
                if raw is not None:
                    rec = records.unpack(raw)
                    stale_bands.append((h, np.setdiff1d(rec.band_keys, sk.band_keys[i])))
                    stale_anchors.append((h, np.setdiff1d(anchors_of(rec), sk.anchors(i))))
            await self.store.remove_bands(
                [(h, k) for h, k in stale_bands + stale_anchors if len(k)]
            )
            # A replaced version's queue entry, now that its record no longer expires.
            await self.store.drop_expiries(
                [
                    h
                    for h, e, raw in zip(handles, ends, old, strict=True)
                    if not e and raw is not None and records.expires_of(raw)
                ]
            )
            return [raw is None for raw in live(old)]

    @asynccontextmanager
    async def locked(self, ids: list[str]) -> AsyncIterator[None]:
        """Hold the write locks of these ids: no other writer changes them meanwhile."""
        token = await self._lock(ids)
        try:
            yield
        finally:
            held = await self.store.unlock(ids, token)
            if not all(held):
                # Expired mid-write (LOCK_TTL_MS), so another writer may have
                # overlapped. Nothing is retried: the consistency check
                # (app.index.check) cleans a handle that lost its id.
                metrics.LOCKS_EXPIRED.inc(held.count(False))

    async def _lock(self, ids: list[str]) -> bytes:
        """Take the write locks of all ids, waiting for other writers.

        All or nothing: a writer that cannot take every lock releases the ones
        it took before it waits, so two batches sharing ids cannot deadlock.
        """
        token = uuid.uuid4().bytes + os.getpid().to_bytes(4, "little")
        wanted = list(dict.fromkeys(ids))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LOCK_WAIT_S
        delay = 0.002
        while True:
            got = await self.store.try_lock(wanted, token, LOCK_TTL_MS)
            if all(got):
                return token
            await self.store.unlock([h for h, ok in zip(wanted, got, strict=True) if ok], token)
            if loop.time() > deadline:
                raise BusyError("another request kept writing the same document; retry")
            await asyncio.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.05)

    # corpus-wide ---------------------------------------------------------------------

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
        async for block in Scanner(self.store, self.params.fingerprint_size).pairs(
            t, max_pairs, after, marks
        ):
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
        async for handles, names in scanner.groups(t, after):
            yield Group(names[0], names, handles[0])
