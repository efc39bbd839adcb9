"""Similarity queries: the stored near-duplicates of a text or of a stored document,
verified by one batched Jaccard call over the candidates (app.index.candidates) and
ranked most similar first, ties oldest first (app.index.ranking)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from app import kernel
from app.core import metrics
from app.index import candidates, documents, records
from app.index.candidates import DISCOVERY_BUDGET, SCRIPT_HOT_MEMBERS, Gathered
from app.index.errors import NoShinglesError, ThresholdError
from app.index.expiry import live
from app.index.filters import Filter
from app.index.params import Params
from app.index.pieces import Pieces
from app.index.ranking import ranked
from app.index.results import Match, QueryResult
from app.index.sites import Sites
from app.index.sketch import sketch


def check_threshold(params: Params, threshold: float | None) -> float:
    """The threshold a query uses, refusing one below the collection's own."""
    if threshold is None:
        return params.threshold
    if not 0.0 < threshold <= 1.0:
        raise ThresholdError("threshold must be greater than 0 and at most 1")
    if threshold < params.threshold - 1e-9:
        raise ThresholdError(
            f"threshold {threshold} is below {params.threshold}, the lowest this "
            "collection's LSH bands were built for; pairs that similar may not be found"
        )
    return threshold


async def similar_to_text(
    pieces: Pieces,
    text: str,
    threshold: float,
    limit: int,
    where: Filter | None,
    site: str | None = None,
) -> QueryResult:
    """Stored near-duplicates of a text that is not stored (threshold checked; a page of
    site: its own text, app.index.sites)."""
    sites = Sites(pieces.store, pieces.params.template_pages)
    text = await sites.query_text(text, site)
    # The passage anchors and layout are a containment query's, not this one's.
    sk = await sketch(pieces.params, [text], pieces.max_text_bytes, passages=False)
    if int(sk.shingles[0]) == 0:
        raise NoShinglesError("the text has no words (letters or digits) to compare")
    found = await query(pieces, sk.fingerprint(0), sk.band_keys[0], None, threshold, limit, where)
    return replace(found, thin=sites.thin(int(sk.shingles[0]), site))


async def similar_to_id(
    pieces: Pieces, doc_id: str, threshold: float, limit: int, where: Filter | None
) -> QueryResult | None:
    """Near-duplicates of a stored document (threshold checked), or None if the id is
    unknown."""
    if pieces.store.scripted:
        return await _similar_to_id_scripted(pieces, doc_id, threshold, limit, where)
    found = await documents.stored(pieces.store, doc_id)
    if found is None:
        return None
    handle, raw = found
    # Only the sketch: a whole unpack would also expand the passage layout.
    fingerprint, band_keys = records.sketch_of(raw)
    result = await query(pieces, fingerprint, band_keys, handle, threshold, limit, where)
    return _thin(pieces, result, raw, doc_id)


def _thin(pieces: Pieces, result: QueryResult, raw: bytes, doc_id: str) -> QueryResult:
    """A stored page's answer says it is thin as a text query of the page does."""
    if Sites(pieces.store, pieces.params.template_pages).thin_record(raw, doc_id):
        return replace(result, thin=True)
    return result


async def _similar_to_id_scripted(
    pieces: Pieces, doc_id: str, threshold: float, limit: int, where: Filter | None
) -> QueryResult | None:
    """similar_to_id in one exchange (a single server): the id's record and its
    band keys' candidates come together (Store.similar_by_id), by the same rules."""
    cap, store = pieces.candidate_cap, pieces.store
    handle, raw, found = await store.similar_by_id(
        doc_id, cap, DISCOVERY_BUDGET * cap, SCRIPT_HOT_MEMBERS
    )
    if handle is None or raw is None:
        return None
    (raw,) = live([raw])
    if raw is None:
        return None
    if found is not None and not len(found.handles):
        # Most stored documents share no band key (their mark is unset): nothing to
        # verify, so no sketch to decode either.
        metrics.CANDIDATES.observe(0)
        return _thin(pieces, QueryResult([], 0, found.capped), raw, doc_id)
    fingerprint, band_keys = records.sketch_of(raw)
    if found is None:  # hot keys past what the script reads
        gathered = await candidates.gather_pipelined(store, band_keys, handle, cap)
    else:
        gathered = candidates.from_script(found)
    result = await query(pieces, fingerprint, band_keys, handle, threshold, limit, where, gathered)
    return _thin(pieces, result, raw, doc_id)


async def verified(
    pieces: Pieces,
    fingerprint: np.ndarray,
    band_keys: np.ndarray,
    exclude: int | None,
    threshold: float,
    gathered: Gathered | None = None,
) -> tuple[np.ndarray, list[bytes], np.ndarray, int, bool]:
    """Candidates from the bands (or as gathered already) verified by one batched
    Jaccard call.

    Returns the handles, records and similarities of those at or above
    the threshold, with the number of candidates and whether they were capped.
    """
    if gathered is None:
        gathered = await candidates.gather(pieces.store, band_keys, exclude, pieces.candidate_cap)
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
        fingerprint_size=pieces.params.fingerprint_size,
    )
    # A query's candidates are few (most often 0-2, at most the cap): picked in plain Python;
    # a numpy call on arrays this small costs more than its work (the same comparisons).
    kept = [i for i, sim in enumerate(sims.tolist()) if sim >= threshold]
    metrics.CANDIDATES_VERIFIED.inc(len(raws))
    metrics.CANDIDATES_KEPT.inc(len(kept))
    at = np.array(kept, dtype=np.int64)
    picked = np.array([present[i] for i in kept], dtype=np.int64)
    found = [raws[i] for i in kept]
    return handles[picked], found, sims[at], len(handles), capped  # type: ignore[return-value]


async def query(
    pieces: Pieces,
    fingerprint: np.ndarray,
    band_keys: np.ndarray,
    exclude: int | None,
    threshold: float,
    limit: int,
    where: Filter | None = None,
    gathered: Gathered | None = None,
    exclude_id: str | None = None,
) -> QueryResult:
    """The verified near-duplicates of a sketch, best first, each id once; exclude (a
    handle) and exclude_id (an id, whatever handle it has by then) are never answered.
    A filter applies before the candidate cap (candidates.gather_filtered)."""
    if where is not None:
        store, cap = pieces.store, pieces.candidate_cap
        if gathered is None:
            gathered = await candidates.gather(store, band_keys, exclude, cap)
        _, fetched, capped, _ = gathered
        # Capped, and the filter drops some of what the cap kept: those must not fill it.
        if capped and any(raw is not None and not where.matches_record(raw) for raw in fetched):
            gathered = await candidates.gather_filtered(
                store, band_keys, exclude, cap, where.matches_record
            )
    handles, raws, sims, found, capped = await verified(
        pieces, fingerprint, band_keys, exclude, threshold, gathered
    )
    if not raws:  # most queries of a corpus: nothing near; no ranking to do
        return QueryResult([], found, capped)
    keep = None if where is None else lambda i: where.matches_record(raws[i])
    if exclude_id is not None:
        kept, keep = keep, lambda i: (records.id_of(raws[i]) != exclude_id
                                      and (kept is None or kept(i)))  # fmt: skip
    # Most similar first, ties oldest first; ids parsed for the answer only.
    best = ranked(
        [0] if len(raws) == 1 else np.lexsort((handles, -sims)).tolist(),
        lambda i: records.id_of(raws[i]),
        limit,
        keep,
    )
    sites = Sites(pieces.store, pieces.params.template_pages)
    matches = [
        Match(doc_id, float(sims[i]), sites.thin_record(raws[i], doc_id)) for i, doc_id in best
    ]
    return QueryResult(matches, found, capped)
