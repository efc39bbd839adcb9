"""Containment queries: the stored documents that hold passages of a text, and which.

The glue around passage alignment: the query's passage anchors pick candidates
(app.index.candidates, as a similarity query's band keys do), and `app.index.passages`
aligns the query with each candidate (how containment aligns passages lives there);
this module keeps the sources that cover enough of the query, ranks them (most
contained first, then most similar, then oldest; app.index.ranking) and sums the
coverage.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from app import kernel
from app.core.shingles import parse_shingle
from app.index import candidates, documents, records
from app.index.errors import NoPassagesError, NoShinglesError, ThresholdError
from app.index.exclusions import Exclusions
from app.index.filters import Filter
from app.index.params import Params
from app.index.passages import Layout, Overdue, Query, align, covered_shingles
from app.index.pieces import Pieces
from app.index.ranking import ranked
from app.index.results import Containment, ContainmentResult
from app.index.sites import Sites
from app.index.sketch import anchor_keys, sketch

DEFAULT_CONTAINMENT = 0.1


def check_containment(params: Params, threshold: float | None) -> float:
    """The least containment a query reports, refusing what the collection cannot answer."""
    if not params.passage_words:
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
    pieces: Pieces,
    text: str,
    threshold: float,
    limit: int,
    where: Filter | None,
    exclude: Exclusions | None = None,
    deadline: float | None = None,
    site: str | None = None,
) -> ContainmentResult:
    """Stored documents that hold passages of a text (threshold checked), without what
    exclude sets aside; past deadline (time.monotonic()), Overdue; a page of site: its
    own text (app.index.sites)."""
    text = await Sites(pieces.store, pieces.params.template_pages).query_text(text, site)
    sk = await sketch(pieces.params, [text], pieces.max_text_bytes, layouts=True)
    if int(sk.shingles[0]) == 0 or sk.layouts is None:
        raise NoShinglesError("the text has no words (letters or digits) to compare")
    return await contained(
        pieces, sk.fingerprint(0), sk.layouts[0], None, threshold, limit, where, exclude, deadline
    )


async def containment_of_id(
    pieces: Pieces,
    doc_id: str,
    threshold: float,
    limit: int,
    where: Filter | None,
    deadline: float | None = None,
) -> ContainmentResult | None:
    """Other stored documents that hold passages of a stored one (None: unknown id)."""
    found = await documents.stored(pieces.store, doc_id)
    if found is None:
        return None
    handle, raw = found
    rec = records.unpack(raw)
    if not rec.passages:  # stored before the collection kept passages
        return ContainmentResult([], 0, False, 0, 0.0)
    return await contained(
        pieces,
        rec.fingerprint,
        Layout.unpack(rec.passages),
        handle,
        threshold,
        limit,
        where,
        deadline=deadline,
    )


async def contained(
    pieces: Pieces,
    fingerprint: np.ndarray,
    layout: Layout,
    exclude: int | None,
    threshold: float,
    limit: int,
    where: Filter | None = None,
    set_aside: Exclusions | None = None,
    deadline: float | None = None,
) -> ContainmentResult:
    """The sources of a query (its fingerprint and passage layout) that cover at least
    threshold of its shingles, best first, each id once."""
    p = pieces.params
    k = parse_shingle(p.passage_shingle)[1]
    min_words = max(k + 1, p.passage_words // 3)
    handles, fetched, capped, common = await candidates.gather(
        pieces.store, anchor_keys(layout.anchor_hashes), exclude, pieces.candidate_cap
    )
    shingles = max(1, layout.words - k + 1)
    indexed = Query(layout)
    scored, raws = [], []

    def aligned() -> None:  # CPU work: off the event loop, the deadline between sources
        for h, raw in zip(handles.tolist(), fetched, strict=True):
            if deadline is not None and time.monotonic() > deadline:
                raise Overdue("the request's deadline passed while aligning passages")
            if raw is None:
                continue
            rec = records.unpack(raw)
            if not rec.passages or (where is not None and not where.matches(rec.metadata)):
                continue
            source = Layout.unpack(rec.passages)
            passages = align(indexed, source, k, min_words, deadline)
            if set_aside is not None:  # the one place exclusions apply
                passages = set_aside.trim(passages, layout, source, min_words)
            if passages:
                covered = covered_shingles(passages, layout.words, k)
                if covered.sum() / shingles >= threshold:
                    scored.append((h, rec, passages, covered))
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
    order = sorted(
        range(len(scored)),
        key=lambda j: (-scored[j][3].sum(), -sims[j], scored[j][0]),
    )
    results: list[Containment] = []
    union = np.zeros(shingles, dtype=bool)
    for j, doc_id in ranked(order, lambda j: scored[j][1].id, limit):
        _, _, passages, covered = scored[j]
        union |= covered
        results.append(
            Containment(doc_id, float(covered.sum() / shingles), float(sims[j]), passages)
        )
    return ContainmentResult(results, len(handles), capped, common, float(union.sum() / shingles))
