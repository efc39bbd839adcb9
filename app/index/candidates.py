"""How a query picks candidates: the handles that share the most band keys (or
passage anchors) with it, at most the candidate cap of them, with their live records.

Two paths give the same answer. On a single server one script does it all inside
Redis (app/store/scripts/candidates.lua and similar_by_id.lua, whose shared half
rank.lua re-implements `hot_shares` and the cap's tie rule; tests/test_query_exchange.py
holds the two to the same answers); elsewhere, or when the hot keys need more members
read than SCRIPT_HOT_MEMBERS, `candidates` reads them through the store's pipelines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from app.index.expiry import live, live_records
from app.store import Candidates, Store

# A query reads every member of its hot keys while they hold at most this many times
# candidate_cap handles together (4 bytes each in Redis: 10,000 at the default cap take
# about 2 ms); beyond it, a window of each (candidates). The scripts get it as an
# argument.
DISCOVERY_BUDGET = 50
# The most hot members a query reads inside Redis (the candidates script): Lua counts
# them several times slower than numpy, on Redis' one thread, so a query whose hot
# keys need more (boilerplate) reads them through the pipelines (gather).
SCRIPT_HOT_MEMBERS = 1000

# A query's candidates (handles ascending), their live records, capped, and the hot
# keys read only in part (gather).
Gathered = tuple[np.ndarray, list[bytes | None], bool, int]


def hot_shares(sizes: Sequence[int], budget: int, most: int) -> list[int]:
    """How many members to read from sets of these sizes: at most `most` from each,
    about `budget` in all, evenly, what small sets leave over going to larger ones."""
    counts = [0] * len(sizes)
    left = budget
    order = sorted(range(len(sizes)), key=sizes.__getitem__)
    for k, i in enumerate(order):
        counts[i] = max(1, min(sizes[i], most, left // (len(sizes) - k)))
        left -= counts[i]
    return counts


def from_script(found: Candidates) -> Gathered:
    """A script's candidates as gather gives them: records expired since left out."""
    return found.handles, live(found.records), found.capped, found.cut


async def candidates(
    store: Store, band_keys: np.ndarray, exclude: int | None, cap: int
) -> tuple[np.ndarray, bool, int]:
    """Handles sharing a band (or a passage anchor) with the query: the cap of them
    that share the most keys, whether any candidate was left unverified, and how many
    hot keys were read only in part.

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
    inline, hot = await store.band_lookup(band_keys)
    parts = [inline]
    cut = 0
    if hot:
        sizes = [size for _, size in hot]
        budget = DISCOVERY_BUDGET * cap
        if sum(sizes) <= budget:
            counts, starts = sizes, [0] * len(sizes)
        else:
            counts = hot_shares(sizes, budget, max(sizes))
            starts = [
                (j * n) % (s - n + 1) for j, (s, n) in enumerate(zip(sizes, counts, strict=True))
            ]
            cut = sum(s > n for s, n in zip(sizes, counts, strict=True))
        keys = band_keys[[i for i, _ in hot]]
        parts += await store.band_window(keys, starts, counts)
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


async def gather(store: Store, band_keys: np.ndarray, exclude: int | None, cap: int) -> Gathered:
    """candidates and their live records (None where there is none or it has
    expired). Scripted (a single server), one exchange: the candidates script
    applies candidates' rules in Redis and returns the records with them, unless
    the hot keys need more than SCRIPT_HOT_MEMBERS read. Else (and on a cluster),
    candidates' pipelines and one MGET (one exchange per master each)."""
    if store.scripted:
        found = await store.candidates(
            band_keys, exclude, cap, DISCOVERY_BUDGET * cap, SCRIPT_HOT_MEMBERS
        )
        if found is not None:
            return from_script(found)
    return await gather_pipelined(store, band_keys, exclude, cap)


async def gather_pipelined(
    store: Store, band_keys: np.ndarray, exclude: int | None, cap: int
) -> Gathered:
    """gather by candidates' pipelines and one MGET (one exchange per master each)."""
    handles, capped, cut = await candidates(store, band_keys, exclude, cap)
    return handles, await live_records(store, handles.tolist()), capped, cut


# A containment query reads its text in windows of this many words, each with its
# own candidate budget (the cap), so a region that shares common phrases with many
# documents cannot starve a region that copies one.
WINDOW_WORDS = 1000
# Of a window's budget, the share (1 / this) open to weak candidates: documents that
# meet the text at one anchor only, rarest first. Their cut does not make `capped`.
# A passage shorter than two winnowing windows (2 x passage_words) may hold a single
# anchor, so they get what strong ones leave of the whole budget.
WEAK_SHARE = 1


def anchor_weight(df: np.ndarray) -> np.ndarray:
    """How much one shared anchor says, by how many documents hold it: 1 for an anchor
    of one document, falling as log2 of its count (inverse document frequency)."""
    return 1.0 / (1.0 + np.log2(np.maximum(df, 1)))


async def passage_candidates(
    store: Store,
    keys: np.ndarray,
    positions: np.ndarray,
    words: int,
    span: int,
    exclude: int | None,
    cap: int,
) -> Gathered:
    """A containment query's candidates: the documents that may share a passage with
    a text, with their live records, whether a strong one was cut, and how many of
    the text's anchors were too common to read.

    keys and positions: each of the text's anchors (its passage index key) and the
    word it starts at. A document's evidence is its best cluster: the anchors it
    shares within `span` words of the text, weighted by rarity (anchor_weight). A
    copied passage is such a cluster of two or more anchors in a row (strong); common
    phrases scatter over the text one at a time (weak). The text is read in windows
    of WINDOW_WORDS: each keeps the cap of its strongest clusters (more strong ones
    than that is boilerplate or an attack, and sets capped), then up to a
    1/WEAK_SHARE of the cap of single anchors, rarest first. Hot anchors are read in
    full, rarest first, while their members stay within DISCOVERY_BUDGET x cap per
    window; the commoner ones are left unread (counted, not capped: an anchor held by
    that many documents is a common phrase). The work is thereby bounded by the
    text's length: windows x (cap + DISCOVERY_BUDGET x cap).
    """
    windows = max(1, -(-words // WINDOW_WORDS))
    unique, inverse = np.unique(keys, return_inverse=True)
    members, hot = await store.band_split(unique)
    df = np.array([len(m) for m in members], dtype=np.int64)
    common = 0
    if hot:
        budget = DISCOVERY_BUDGET * cap * windows
        read, total = [], 0
        for i, size in sorted(hot, key=lambda e: (e[1], e[0])):
            if total + size > budget:
                common += 1
                df[i] = size  # unread: it adds no candidate
                continue
            read.append((i, size))
            total += size
        if read:
            got = await store.band_window(unique[[i for i, _ in read]], [0] * len(read),
                                          [n for _, n in read])
            for (i, _), m in zip(read, got, strict=True):
                members[i] = m
        for i, size in hot:
            df[i] = size
    # Every (handle, word of the text, weight) where the text meets a document.
    counts = np.array([len(m) for m in members], dtype=np.int64)
    occ = counts[inverse]
    if occ.sum() == 0:
        return np.zeros(0, np.int64), [], False, common
    flat = np.concatenate(members)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    # For each anchor occurrence j, its key's members: starts[inverse[j]] + 0..occ[j]-1.
    rep = np.repeat(np.arange(len(keys)), occ)
    offs = np.arange(int(occ.sum())) - np.repeat(np.cumsum(occ) - occ, occ)
    handles = flat[starts[inverse[rep]] + offs]
    pos = positions[rep].astype(np.int64)
    weight = anchor_weight(df[inverse[rep]])
    if exclude is not None:
        keep = handles != exclude
        handles, pos, weight = handles[keep], pos[keep], weight[keep]
        if len(handles) == 0:
            return np.zeros(0, np.int64), [], False, common
    # Sorted by (handle, word): each hit's cluster is the hits of its handle from its
    # word to span words further.
    order = np.lexsort((pos, handles))
    handles, pos, weight = handles[order], pos[order], weight[order]
    stride = np.int64(words + span + 1)
    line = handles * stride + pos
    end = np.searchsorted(line, line + span, side="right")
    cum = np.concatenate(([0.0], np.cumsum(weight)))
    hits = end - np.arange(len(line))
    mass = cum[end] - cum[: len(line)]
    # Each handle's best cluster: most anchors, then most weight.
    best = np.lexsort((-mass, -hits, handles))
    first = np.ones(len(best), bool)
    first[1:] = handles[best][1:] != handles[best][:-1]
    pick = best[first]
    cand, strong, score = handles[pick], hits[pick] >= 2, mass[pick]
    window = pos[pick] // WINDOW_WORDS
    # Per window: strong clusters, heaviest first, up to the cap; then weak ones.
    rank = np.lexsort((cand, -score, ~strong, window))
    cand, strong, window = cand[rank], strong[rank], window[rank]
    chosen, capped = [], False
    for w in np.unique(window).tolist():
        at = np.flatnonzero(window == w)
        s = at[strong[at]]
        if len(s) > cap:
            capped = True
        chosen.append(cand[s[:cap]])
        weak = at[~strong[at]]
        chosen.append(cand[weak[: max(0, min(cap - len(s), cap // WEAK_SHARE))]])
    picked = np.unique(np.concatenate(chosen))
    return picked, await live_records(store, picked.tolist()), capped, common
