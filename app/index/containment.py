"""Containment queries: the stored documents that hold passages of a text, and which.

The glue around passage alignment: the query's passage anchors pick candidates
(`app.index.candidates.passage_candidates`: clusters of anchors, weighed by rarity,
per window of the text), and `app.index.align` aligns the query with each candidate
(how containment aligns passages lives there); this module keeps the sources that hold
a long enough passage (or cover enough of the query, given a threshold), ranks them
(most contained first, then most similar, then oldest; app.index.ranking) and sums the
coverage.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from app import kernel
from app.core.shingles import parse_shingle
from app.index import candidates, disguise, documents, records, texts
from app.index.align import Query, align
from app.index.errors import (
    DamagedLayoutError,
    NoPassagesError,
    NoShinglesError,
    ThresholdError,
)
from app.index.filters import Filter
from app.index.params import Params
from app.index.passages import DamagedLayout, Layout, Overdue, covered_runs, merge
from app.index.pieces import Pieces
from app.index.ranking import ranked
from app.index.results import Containment, ContainmentResult
from app.index.sites import Sites
from app.index.sketch import anchor_key_each, passage_layouts, query_layout, sketch
from app.index.trimming import Exclusions, shorter_side

# A containment query without a threshold names every source that shares a verified
# passage of at least the collection's passage_words (or min_words) words, or passages
# of piece_words or more that together hold that many, whatever the query's length: an
# absolute criterion, as reviewers count matches in words.
# With a threshold, a source must also cover that share of the query's shingles.
NO_THRESHOLD = 0.0
DEFAULT_CONTAINMENT = NO_THRESHOLD


def piece_words(params: Params) -> int:
    """The fewest words of a passage piece that counts towards a source's share, and of
    a source or query copied whole that counts: a third of passage_words, at least one
    word more than a shingle."""
    return max(parse_shingle(params.passage_shingle)[1] + 1, params.passage_words // 3)


def check_containment(params: Params, threshold: float | None) -> float:
    """The least containment a query reports (NO_THRESHOLD: none, the passage length
    alone decides), refusing what the collection cannot answer."""
    if not params.passage_words:
        raise NoPassagesError(
            "this collection was created without a passage index (NEARDUP_PASSAGE_WORDS "
            "was 0, or it predates passages); ingest into a new collection to use "
            "measure=containment"
        )
    if threshold is None or threshold == NO_THRESHOLD:
        return NO_THRESHOLD
    if not 0.0 < threshold <= 1.0:
        raise ThresholdError("threshold must be greater than 0 and at most 1")
    return threshold


async def containment_of_text(
    pieces: Pieces,
    text: str,
    threshold: float,
    limit: int | None,
    where: Filter | None,
    exclude: Exclusions | None = None,
    deadline: float | None = None,
    site: str | None = None,
    min_words: int | None = None,
) -> ContainmentResult:
    """Stored documents that hold passages of a text (threshold checked), without what
    exclude sets aside; past deadline (time.monotonic()), Overdue; a page of site: its
    own text (app.index.sites)."""
    text = await Sites(pieces.store, pieces.params.template_pages).query_text(text, site)
    # Its layout with the anchors that find short sources copied whole (a collection
    # made before format 3 answers as it always has: without them).
    dense = piece_words(pieces.params) if pieces.params.passage_bits else 0
    sk = await sketch(pieces.params, [text], pieces.max_text_bytes, layouts=True, dense_words=dense)
    if int(sk.shingles[0]) == 0 or sk.layouts is None:
        raise NoShinglesError("the text has no words (letters or digits) to compare")
    found = await contained(
        pieces,
        sk.fingerprint(0),
        sk.layouts[0],
        None,
        threshold,
        limit,
        where,
        exclude,
        deadline,
        min_words,
        text,
    )
    return await disguise.flag(pieces.params, text, found)  # look-alike words per passage


def _with_dense_anchors(p: Params, text: str, stored: Layout, dense: int) -> Layout:
    """A stored document's layout with the dense anchors a query of its kept text has
    (sketch.query_layout), or the stored one where the text reads otherwise."""
    (made,) = passage_layouts(p, [text])
    if made.words != stored.words:
        return stored
    return query_layout(p, text, made, dense)


async def containment_of_id(
    pieces: Pieces,
    doc_id: str,
    threshold: float,
    limit: int | None,
    where: Filter | None,
    deadline: float | None = None,
    min_words: int | None = None,
) -> ContainmentResult | None:
    """Other stored documents that hold passages of a stored one (None: unknown id). Its
    kept text, where the collection keeps texts, weighs its words (align.Query.weights),
    gives it the dense anchors a text query has (short sources copied whole) and flags
    its disguised words, so it answers as a query of that text; without it, the stored
    anchors alone, and no flags."""
    found = await documents.stored(pieces.store, doc_id)
    if found is None:
        return None
    handle, raw = found
    rec = records.unpack(raw)
    text = None
    if pieces.params.keep_text:
        (packed,) = await pieces.store.texts([handle])
        text = texts.unpack(packed, raw)  # None: another version's, or none kept
    if not rec.passages:  # stored before the collection kept passages
        return ContainmentResult([], 0, False, 0, 0.0)
    layout = Layout.unpack(rec.passages)
    try:
        layout.starts  # noqa: B018 - decoded here, where it can be named, not per source
    except DamagedLayout:
        raise DamagedLayoutError(
            f"document {doc_id!r} was stored by an older release whose passage layout "
            "cannot be read: ingest it again"
        ) from None
    dense = piece_words(pieces.params) if pieces.params.passage_bits else 0
    if text is not None and dense:
        # Only the layouts (no MinHash, and no size check: the text is stored already,
        # whatever NEARDUP_MAX_TEXT_BYTES says now); off the event loop for a long text.
        layout = await asyncio.to_thread(_with_dense_anchors, pieces.params, text, layout, dense)
    result = await contained(
        pieces,
        rec.fingerprint,
        layout,
        handle,
        threshold,
        limit,
        where,
        deadline=deadline,
        min_words=min_words,
        text=text,
    )
    # Its look-alike words per passage, as a query of its text flags them.
    return result if text is None else await disguise.flag(pieces.params, text, result)


async def contained(
    pieces: Pieces,
    fingerprint: np.ndarray,
    layout: Layout,
    exclude: int | None,
    threshold: float,
    limit: int | None,
    where: Filter | None = None,
    set_aside: Exclusions | None = None,
    deadline: float | None = None,
    min_words: int | None = None,
    text: str | None = None,
) -> ContainmentResult:
    """The sources of a query (its fingerprint and passage layout), best first, each id
    once. Without a threshold (NO_THRESHOLD): every source holding a verified passage of
    at least min_words words (default the collection's passage_words; or the whole
    query, or the whole source, when it is shorter, down to piece_words), or passages
    of piece_words or more that hold that many words together. With one:
    every source whose passages cover at least that share of the query's shingles.
    limit None: all. The layout's anchors are looked up and aligned by (a text query's
    hold more: sketch.query_layout). text, the query's when at hand: its words are then
    counted as align.Query.weights does (a kana or Thai letter for half a word)."""
    p = pieces.params
    k = parse_shingle(p.passage_shingle)[1]
    # Pieces of passages as short as this still count towards a source's share.
    piece = piece_words(p)
    indexed = Query(layout, text)
    # A query shorter than the least passage counts when copied whole (its words weighed).
    least = min(min_words or p.passage_words, max(piece, indexed.weighed(0, layout.words)))
    handles, fetched, capped, common = await candidates.passage_candidates(
        pieces.store,
        anchor_key_each(layout.anchor_hashes),
        layout.anchor_words,
        layout.words,
        2 * p.passage_words,
        exclude,
        pieces.candidate_cap,
    )
    shingles = max(1, layout.words - k + 1)
    # (handle, id, passages, covered shingles as merged ranges, how many)
    scored: list[tuple[int, str, list, list[tuple[int, int]], int]] = []
    raws: list[bytes] = []
    cut: list[int] = []  # sources whose alignment a work bound cut (capped)

    def aligned() -> None:  # CPU work: off the event loop, the deadline between sources
        for h, raw in zip(handles.tolist(), fetched, strict=True):
            if deadline is not None and time.monotonic() > deadline:
                raise Overdue("the request's deadline passed while aligning passages")
            if raw is None:
                continue
            # Most candidates share no passage: only their layouts are read to align.
            layout_raw = records.passages_of(raw)
            if not layout_raw or (
                where is not None and not where.matches(records.metadata_of(raw))
            ):
                continue
            source = Layout.unpack(layout_raw)
            try:
                passages, capped_here = align(indexed, source, k, piece, deadline)
                # A passage's words, which its pieces count together once trimmed (as the
                # query's weights count them: a kana or Thai letter for half a word), and
                # how much a source word weighs where it copies them (its own text is not
                # at hand): a source copied whole counts as the query's words do.
                longest, total, density = 0.0, 0.0, 1.0
                for x in passages:
                    qa, qb = x.query_words
                    weight = indexed.weighed(qa, qb)
                    # As long as its shorter side: 30 query words that paraphrase 24 of
                    # the source's are not a 30-word copy.
                    length = weight * shorter_side(x)
                    total += length
                    if length > longest:
                        longest, density = length, weight / (qb - qa)
                if set_aside is not None:  # the one place exclusions apply
                    passages, longest, total = set_aside.trim(
                        passages, layout, source, piece, k, indexed.counted
                    )
            except DamagedLayout:
                # Spans an older release stored without their overflow: no exact edges
                # to give, so no passages; re-ingesting the source mends it.
                continue
            if capped_here:
                cut.append(h)
            if not passages:
                continue
            # A source shorter than the least passage counts when it is copied whole; and
            # passages of piece_words or more count together: sentences copied from here
            # and there (a patchwork, the usual copy) are as much a copy as one passage,
            # each source word once (one sentence pasted three times is still one).
            whole = max(piece, source.words * density)
            total = min(total, _spanned([x.source_words for x in passages]))
            if threshold == NO_THRESHOLD and longest < min(least, whole) and total < least:
                continue
            covered = covered_runs(passages, k)
            size = sum(b - a for a, b in covered)
            if size / shingles >= threshold:
                scored.append((h, records.id_of(raw), passages, covered, size))
                raws.append(raw)

    await asyncio.to_thread(aligned)
    sims = np.zeros(len(scored))
    if scored:
        sims = kernel.jaccard_many_encoded(
            fingerprint,
            records.encoded_fingerprints(raws),
            0.0,
            fingerprint_size=p.fingerprint_size,
        )
    order = sorted(range(len(scored)), key=lambda j: (-scored[j][4], -sims[j], scored[j][0]))
    results: list[Containment] = []
    union: list[tuple[int, int]] = []
    most = len(order) if limit is None else limit
    for j, doc_id in ranked(order, lambda j: scored[j][1], most):
        _, _, passages, covered, size = scored[j]
        union += covered
        results.append(Containment(doc_id, float(size / shingles), float(sims[j]), passages))
        if set_aside is not None:
            set_aside.counting += [(x.query_start, x.query_end) for x in passages]
    return ContainmentResult(
        results, len(handles), capped or bool(cut), common, _spanned(union) / shingles
    )


def _spanned(ranges: list[tuple[int, int]]) -> int:
    """How many integers the [first, end) ranges cover together."""
    return sum(b - a for a, b in merge(ranges))
