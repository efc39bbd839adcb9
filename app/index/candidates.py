"""How a query picks candidates: the handles that share the most band keys (or
passage anchors) with it, at most the candidate cap of them, with their live records.

Two paths give the same answer. On a single server one script does it all inside
Redis (app/store/scripts/candidates.lua and similar_by_id.lua, whose shared half
rank.lua re-implements `hot_shares` and the cap's tie rule; tests/test_query_exchange.py
holds the two to the same answers); elsewhere, or when the hot keys need more members
read than SCRIPT_HOT_MEMBERS, `candidates` reads them through the store's pipelines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
# A query with a metadata filter whose candidates were capped reads this many times the
# cap of them, best first, so that the cap counts only candidates the filter keeps
# (gather_filtered): a filter never empties an answer because strangers took the cap.
FILTERED_READ = 10

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
    store: Store,
    band_keys: np.ndarray,
    exclude: int | None,
    cap: int,
    ranked: bool = False,
    budget: int | None = None,
) -> tuple[np.ndarray, bool, int]:
    """Handles sharing a band (or a passage anchor) with the query: the cap of them
    that share the most keys (ascending, or with ranked best first: most keys shared,
    then oldest), whether any candidate was left unverified, and how many hot keys
    were read only in part. budget: hot members read in full at most (default
    DISCOVERY_BUDGET x cap).

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
    inline, hot = await store.bands.lookup(band_keys)
    parts = [inline]
    cut = 0
    if hot:
        sizes = [size for _, size in hot]
        budget = DISCOVERY_BUDGET * cap if budget is None else budget
        if sum(sizes) <= budget:
            counts, starts = sizes, [0] * len(sizes)
        else:
            counts = hot_shares(sizes, budget, max(sizes))
            starts = [
                (j * n) % (s - n + 1) for j, (s, n) in enumerate(zip(sizes, counts, strict=True))
            ]
            cut = sum(s > n for s, n in zip(sizes, counts, strict=True))
        keys = band_keys[[i for i, _ in hot]]
        parts += await store.bands.window(keys, starts, counts)
    handles, hits = np.unique(np.concatenate(parts).astype(np.int64), return_counts=True)
    if exclude is not None:
        keep = handles != exclude
        handles, hits = handles[keep], hits[keep]
    capped = cut > 0
    if len(handles) > cap or ranked:
        # Candidates sharing more keys are likelier to be similar; among equals the
        # older go first (handles ascending, a stable sort).
        order = np.argsort(-hits, kind="stable")
        capped = capped or len(handles) > cap
        handles = handles[order[:cap]] if ranked else np.sort(handles[order[:cap]])
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


async def gather_filtered(
    store: Store,
    band_keys: np.ndarray,
    exclude: int | None,
    cap: int,
    keep: Callable[[bytes], bool],
) -> Gathered:
    """gather for a query with a metadata filter (keep: whether a record passes it):
    the cap counts only candidates whose records pass. Of the FILTERED_READ x cap best
    candidates (hot members read in full up to FILTERED_READ times a query's budget),
    records are read best first, a cap of them at a time, until the cap of them pass
    (capped when more were left, or a hot key was read in part). For a query whose plain
    gather was capped and whose filter dropped some of it: thousands of copies of a page
    stored by other sites must not take the place of the one the filter asks for (read in
    windows, a hot band's newest members may be missed)."""
    ranked, capped, cut = await candidates(
        store, band_keys, exclude, FILTERED_READ * cap, True, FILTERED_READ * DISCOVERY_BUDGET * cap
    )
    order = ranked.tolist()
    kept: list[tuple[int, bytes]] = []
    at = 0
    while at < len(order) and len(kept) < cap:
        part = order[at : at + cap]
        at += len(part)
        records = await live_records(store, part)
        kept += [(h, raw) for h, raw in zip(part, records, strict=True) if raw and keep(raw)]
    capped = capped or len(kept) > cap or at < len(order)
    kept = sorted(kept[:cap])
    handles = np.array([h for h, _ in kept], dtype=np.int64)
    return handles, [raw for _, raw in kept], capped, cut


# A containment query reads its text in windows of this many words, each with its
# own candidate budget (the cap), so a region that shares common phrases with many
# documents cannot starve a region that copies one.
WINDOW_WORDS = 1000
# A text of more windows than this shares their budget among all of its windows: the
# work of any text stays within what this many windows cost (64,000 words).
MOST_WINDOWS = 64
# Hot anchors' members read per window, as a multiple of the cap: rarest anchors first,
# for at most HOT_WINDOWS windows (the commonest anchors of a long text weigh least
# and cost most: each of their members is a meeting to sort).
HOT_READ = 10
HOT_WINDOWS = 16
# A cluster of this many anchors within the span is a copied passage's mark: more such
# documents in one window than its budget means boilerplate or an attack (capped).
STRONG_HITS = 3
# Beyond a window's cap of best clusters, at most LANE x cap more are verified: those
# of STRONG_HITS anchors or holding an anchor of at most RARE_DF documents. At 100k
# documents a window of ordinary prose holds a few hundred such (bench/sources.py), a
# text of common phrases none.
LANE = 8
RARE_DF = 64
# ... and at most LANE_POOL x cap more in all, whatever the text's length (a thesis
# shares it among its windows, so its work stays within a few windows' more).
LANE_POOL = 32


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
    word it starts at. A document's evidence is its best cluster (clusters): the
    most anchors it shares within `span` words of the text, then their weight by
    rarity (anchor_weight). A copied passage is a cluster of anchors in a row; common
    phrases meet a document one or two at a time, and weigh little. The text is read
    in windows of WINDOW_WORDS, each keeping the cap of its best clusters, so one
    region cannot starve another, and past them a lane (chosen) for every further
    cluster that could be a copy's: STRONG_HITS anchors, or one rare anchor. capped:
    the lane cut such a cluster (boilerplate or an attack); a cut of the rest (common
    phrases met one or two at a time) is not flagged. Hot anchors are read in full,
    rarest first, while their members stay within HOT_READ x cap per window (for at
    most HOT_WINDOWS windows); the commoner ones are left unread and counted (common).
    A text of more than MOST_WINDOWS windows shares that many windows' budget among
    all of its windows, so the work of any query is bounded: at most (MOST_WINDOWS +
    LANE_POOL) x cap records read and aligned ((1 + LANE) x cap in one window),
    HOT_WINDOWS x HOT_READ x cap hot members read.
    """
    windows = max(1, -(-words // WINDOW_WORDS))
    paid = min(windows, MOST_WINDOWS)
    unique, inverse = np.unique(keys, return_inverse=True)
    members, hot = await store.bands.split(unique)
    df = np.array([len(m) for m in members], dtype=np.int64)
    common = 0
    if hot:
        budget = HOT_READ * cap * min(paid, HOT_WINDOWS)
        read, total = [], 0
        for i, size in sorted(hot, key=lambda e: (e[1], e[0])):
            df[i] = size
            if total + size > budget:
                common += 1  # unread: it adds no candidate
                continue
            read.append(i)
            total += size
        if read:
            sizes = [int(df[i]) for i in read]
            got = await store.bands.window(unique[read], [0] * len(read), sizes)
            for i, m in zip(read, got, strict=True):
                members[i] = m
    cand, hits, mass, at, rare = clusters(members, df, inverse, positions, words, span, exclude)
    if len(cand) == 0:
        return np.zeros(0, np.int64), [], False, common
    picked, capped = chosen(cand, hits, mass, at, rare, cap * paid // windows)
    return picked, await live_records(store, picked.tolist()), capped, common


def chosen(
    cand: np.ndarray,
    hits: np.ndarray,
    mass: np.ndarray,
    at: np.ndarray,
    rare: np.ndarray,
    each: int,
) -> tuple[np.ndarray, bool]:
    """The candidates a query verifies (handles ascending), and whether a cut dropped
    one that could matter (capped). Per window of WINDOW_WORDS, best clusters first
    (most anchors, then most weight, then oldest): the `each` best, then, up to LANE x
    each more (LANE_POOL x each in all, shared evenly among the windows), every further
    one whose evidence could be a copy's: a cluster of
    STRONG_HITS anchors, or one holding an anchor of at most RARE_DF documents (rare:
    clusters' count of them). A short copy
    edited down to one shared anchor ranks among hundreds of documents that share two
    common ones, and only verification tells them apart; the documents that share
    nothing rarer than common phrases are cut, unflagged, as before. capped: the lane
    itself cut such evidence (boilerplate or an attack)."""
    each = max(1, each)
    window = at // WINDOW_WORDS
    rank = np.lexsort((cand, -mass, -hits, window))
    cand, window = cand[rank], window[rank]
    worth = (hits[rank] >= STRONG_HITS) | (rare[rank] > 0)
    edges = np.flatnonzero(np.diff(window)) + 1
    firsts = np.concatenate(([0], edges))
    lasts = np.concatenate((edges, [len(window)]))
    keep = np.zeros(len(cand), bool)
    lanes = []
    for a, b in zip(firsts.tolist(), lasts.tolist(), strict=True):
        keep[a : min(b, a + each)] = True
        lanes.append(a + each + np.flatnonzero(worth[a + each : b]))
    wanted = [len(more) for more in lanes]
    if sum(wanted) <= LANE_POOL * each and max(wanted) <= LANE * each:
        shares = wanted
    else:  # the windows share the pool evenly, what some leave over going to others
        shares = hot_shares(wanted, LANE_POOL * each, LANE * each)
    for more, n in zip(lanes, shares, strict=True):
        keep[more[:n]] = True
    capped = any(n < w for n, w in zip(shares, wanted, strict=True))
    return np.sort(cand[keep]), capped


def clusters(
    members: list[np.ndarray],
    df: np.ndarray,
    inverse: np.ndarray,
    positions: np.ndarray,
    words: int,
    span: int,
    exclude: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each document's best cluster: the handles that meet the text (ascending), and for
    each the most anchors it shares within `span` words of the text, their weight
    (anchor_weight of each key's document count df), the word the cluster starts at and
    how many of its anchors are rare (held by at most RARE_DF documents).
    members[i]: the handles of distinct key i; inverse: each anchor's key; positions:
    each anchor's word."""
    counts = np.array([len(m) for m in members], dtype=np.int64)
    occ = counts[inverse]
    empty = np.zeros(0, np.int64)
    if occ.sum() == 0:
        return empty, empty, np.zeros(0), empty, empty
    flat = np.concatenate(members)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    # Anchor j meets the members of its key: flat[starts[inverse[j]] + 0 .. occ[j] - 1].
    rep = np.repeat(np.arange(len(inverse)), occ)
    offs = np.arange(int(occ.sum())) - np.repeat(np.cumsum(occ) - occ, occ)
    handles = flat[starts[inverse[rep]] + offs]
    pos = positions[rep].astype(np.int64)
    held = df[inverse[rep]]
    if exclude is not None:
        keep = handles != exclude
        handles, pos, held = handles[keep], pos[keep], held[keep]
        if len(handles) == 0:
            return empty, empty, np.zeros(0), empty, empty
    # Sorted by (handle, word): each meeting's cluster is its handle's meetings from its
    # word to span words further.
    order = np.lexsort((pos, handles))
    handles, pos, held = handles[order], pos[order], held[order]
    weight = anchor_weight(held)
    line = handles * np.int64(words + span + 1) + pos
    end = np.searchsorted(line, line + span, side="right")
    cum = np.concatenate(([0.0], np.cumsum(weight)))
    hits = end - np.arange(len(line))
    mass = cum[end] - cum[: len(line)]
    rare_cum = np.concatenate(([0], np.cumsum(held <= RARE_DF)))
    rare = rare_cum[end] - rare_cum[: len(line)]
    # Each handle's best cluster: most anchors, then most weight.
    best = np.lexsort((-mass, -hits, handles))
    first = np.ones(len(best), bool)
    first[1:] = handles[best][1:] != handles[best][:-1]
    pick = best[first]
    return handles[pick], hits[pick], mass[pick], pos[pick], rare[pick]
