"""Alignment that survives edits: copied passages found through changed and swapped words.

Once a candidate source is known, its whole word layout is at hand, so the pair is
seeded densely rather than only at the winnowed anchors that found it:

1. **Anchors locate.** The shared anchors (verified word by word, as ``passages.align``
   does) give the diagonals (source word minus query word) where copies lie. A pair with
   none shares no passage.
2. **Seeds survive edits.** Every run of ``n`` words is a seed keyed by its word hashes
   *sorted* (CoReMo's "contextual n-grams", Torrejón and Ramos, PAN 2013: order-free, so
   an adjacent swap keeps its seed), with ``n`` so that a key holds at least 12 bits (two
   words of 6 bits or more). Only seeds within ``BAND`` diagonals of an anchor's are kept, so a
   random hit far from any copy costs nothing.
3. **Chaining with gap costs** (the DP of minimap2, Li 2018): seeds that follow one
   another on one diagonal are first one run (a verbatim stretch of any length is one),
   and a run continues the best chain among its recent predecessors that lie before it
   in both texts, paying for the words between them and for a change of diagonal (insertions and
   deletions). One edited copy is one chain; chains that still meet within
   ``MERGE_GAP`` words in both texts are merged, as Sanchez-Perez et al. (PAN 2014)
   merge nearby seeds, and so are chains that follow one another in the query whose
   source ranges, in any order, leave no hole over ``SOURCE_HOLE`` words (a copy whose
   sentences were reordered). Before that merge, the query words such a copy's pieces
   leave between them (or just past its ends, or skipped inside a chain) are looked up
   in its part of the source whatever their diagonal (``_fill``): a short sentence that
   holds no anchor near its diagonal, or whose seeds a chain through a repeat elsewhere
   took, is found where it must lie instead of splitting the copy.
4. **Exact edges.** A chain starts at its first seed and ends at its last, which match
   word for word; a short extension past them takes a last edited word only when a
   matching word follows it (X-drop), so an edge stops at the first and last matching
   word instead of running into the host text.

Every step is bounded: anchor hits per pair (``MAX_HITS``), a seed key occurring more
than ``MAX_OCC`` times in either text is not seeded (repeats), seeds per pair
(``MAX_SEEDS``, numpy work), runs chained per pair (``MAX_RUNS``, Python work: a run is
the seeds that follow one another on one diagonal, so a verbatim copy of any length is
one), predecessors per run (``LOOKBACK``). When a bound cuts real work the
result says so (``capped``), as a query's candidate cap does.
"""

from __future__ import annotations

import bisect
import itertools
import time

import numpy as np

from app.index import passages as legacy
from app.index.passages import Layout, Passage

# A seed's key holds at least this many bits of word hashes (n = SEED_BITS / bits words,
# two at least): two words from 6 bits a word up, three of 4 or 5 bits.
SEED_BITS = 12
# Seeds within this many diagonals of a shared anchor's diagonal are chained.
BAND = 24
# Chaining: a seed looks back at this many predecessors, and links only to one at most
# MAX_GAP words before it in both texts.
LOOKBACK = 24
MAX_GAP = 20
# A word between two chained seeds costs GAP_COST, a shift of diagonal DIAG_COST a word.
GAP_COST = 0.3
DIAG_COST = 0.5
# Chains whose ends meet within this many words in both texts are one passage.
MERGE_GAP = 10
# ... and chains that follow one another in the query (within MERGE_GAP) are one passage
# where their source ranges, in any order, leave no hole over this many words: a sentence
# of a reordered copy that holds no seed (PAN's cases keep such a copy whole).
SOURCE_HOLE = 30
# Sentences of a reordered copy missed by the seeding are sought between its pieces and
# beyond its ends (_fill), beyond them at most this many times (each time SOURCE_HOLE words).
FILL_ROUNDS = 3
# ... only for a copy found in several pieces, or in one whose chain's diagonal jumps by
# more than this many words between two runs (an edit moves it by a word or two): a
# copy found whole on its diagonal, the usual verbatim or edited one, has nothing to fill.
JUMP = 4
# ... each piece found so holding a run of at least this many bits of word hashes (five
# words of 8 bits, ten of 4): found without an anchor, it must be as unlikely by chance.
FILL_BITS = 40
# Extension past a chain's ends: a match scores EXT_MATCH, a mismatch -1; stop XDROP
# below the best score.
EXT_MATCH = 2
XDROP = 3
# A passage must match at least this share of its query words through seeds.
MIN_MATCHED = 0.5
# A pair is seeded densely only if an anchor's ungapped extension spans this many words
# (or two anchors lie on nearby diagonals).
GATE_WORDS = 8
# ... or if most of the GATE_WINDOW words either side of it occur near it in the source.
GATE_WINDOW = 12
GATE_SHARE = 0.6
# ... looked at for at most this many anchors of a pair.
GATE_TRIES = 4
# Work bounds (see the module's docstring).
MAX_HITS = 4_000
MAX_OCC = 32
MAX_SEEDS = 1_000_000
MAX_RUNS = 20_000
# A pair is reported capped when repeats left more than this share of its source unseeded.
REPEAT_SHARE = 0.1
# ... a seed key repeating in the query counts per this many of its words (see _seeds).
QUERY_BLOCK = 1000
# A pair's seeds are taken band by band of its anchors' diagonals when the seeds of its
# kept keys outnumber GROUPED searches per key and band (long queries).
GROUPED = 8
# Seed keys of at most this many bits (two words of 8) are looked up in a table of the
# query's (2 x 65,536 int32: 512 kB, made once per query) when it has at least
# TABLE_WORDS words; wider keys and shorter queries are searched.
TABLE_BITS = 16
TABLE_WORDS = 4000
# When repeats leave a pair unseeded, at most this many of its verified anchor hits are
# extended instead (ungapped, X-drop), each only where no extension reached yet.
REPEAT_HITS = 16


# A chain: (query first, query end, source first, source end, query words matched, its
# runs as _runs gives them, in order).
Chain = tuple[int, int, int, int, int, list[list[int]]]


def seed_length(bits: int) -> int:
    """Words a seed holds for word hashes of this many bits."""
    return max(2, -(-SEED_BITS // bits))


def seed_keys(hashes: np.ndarray, bits: int) -> np.ndarray:
    """Order-free keys of every run of seed_length(bits) words (int64; empty if shorter)."""
    n = seed_length(bits)
    h = np.asarray(hashes, np.int64)
    if len(h) < n:
        return np.zeros(0, np.int64)
    if n == 2:  # 6 bits a word or more (most collections): the pair's smaller first
        return (np.minimum(h[:-1], h[1:]) << bits) | np.maximum(h[:-1], h[1:])
    runs = np.sort(np.lib.stride_tricks.sliding_window_view(h, n), axis=1)
    keys = np.zeros(len(runs), np.int64)
    for j in range(n):
        keys = (keys << bits) | runs[:, j]
    return keys


class Query(legacy.Query):
    """A query's layout indexed once for aligning it with many sources: its anchors (as
    passages.Query) and, for format 3 sources, its seed keys sorted."""

    def __init__(self, layout: Layout) -> None:
        super().__init__(layout)
        self._seeds: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._distinct: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._table: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._placed: dict[int, np.ndarray] = {}
        self._cut: dict[int, Query] = {}
        self.hashes = np.asarray(layout.word_hashes, np.int64)
        self.hash_list: list[int] = self.hashes.tolist()
        self.hash_bytes = self.hashes.astype("<u2").tobytes()

    def at_bits(self, bits: int) -> Query:
        """The query with word hashes cut to bits (0: format 1), made once."""
        if bits not in self._cut:
            lay = self.layout
            self._cut[bits] = Query(_masked(lay.anchor_hashes, lay, bits))
        return self._cut[bits]

    def seeds(self, bits: int) -> tuple[np.ndarray, np.ndarray]:
        """(sorted seed keys, the query word each starts at)."""
        if bits not in self._seeds:
            keys = seed_keys(self.hashes, bits)
            order = np.argsort(keys, kind="stable")
            self._seeds[bits] = (keys[order], order.astype(np.int64))
        return self._seeds[bits]

    def placed_seeds(self, bits: int) -> np.ndarray:
        """Each seed as key x (words + 1) + the word it starts at, ascending (seeds'
        order): one key's seeds within a range of words are one searchsorted away."""
        if bits not in self._placed:
            keys, words = self.seeds(bits)
            self._placed[bits] = keys * np.int64(len(self.hashes) + 1) + words
        return self._placed[bits]

    def distinct_seeds(self, bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distinct seed keys ascending, where each starts in seeds' keys, how many)."""
        if bits not in self._distinct:
            keys = self.seeds(bits)[0]
            first = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            counts = np.diff(np.concatenate((first, [len(keys)])))
            self._distinct[bits] = (keys[first], first, counts)
        return self._distinct[bits]

    def seed_table(self, bits: int) -> tuple[np.ndarray, np.ndarray] | None:
        """For keys of at most TABLE_BITS bits in a query of TABLE_WORDS words or more:
        (where each key's seeds start in seeds' keys, how many: 0 for a key the query
        lacks), indexed by the key itself, so a source's keys are looked up in one step,
        not searched among thousands. None otherwise (searched)."""
        if seed_length(bits) * bits > TABLE_BITS or len(self.hashes) < TABLE_WORDS:
            return None
        if bits not in self._table:
            keys, first, counts = self.distinct_seeds(bits)
            size = 1 << (seed_length(bits) * bits)
            where, many = np.zeros(size, np.int32), np.zeros(size, np.int32)
            where[keys], many[keys] = first, counts
            self._table[bits] = (where, many)
        return self._table[bits]


def align(
    query: Query, source: Layout, k: int, min_words: int, deadline: float | None = None
) -> tuple[list[Passage], bool]:
    """The passages a query shares with a source, in query order, each at least min_words
    long in both texts, and whether a work bound cut the search (capped).

    A format 1 source (a collection made before format 3) aligns exactly as it always
    has (passages.align), never capped. Layouts of other widths are cut to the bits they
    share first. deadline (time.monotonic()): past it, passages.Overdue is raised
    between the steps."""
    q_bits = query.layout.bits
    if not source.bits:
        if q_bits:
            query = query.at_bits(0)
        return legacy.align(query, source, k, min_words, deadline), False
    if q_bits != source.bits:
        # Layouts of two formats meet (a format 1 export imported into a format 3
        # collection): both are cut to the bits they share, as each word hash's low bits
        # are the same hash.
        common = min(q_bits or 4, source.bits)
        if common != source.bits:
            source = _masked(source.anchor_hashes, source, common)
        if common != q_bits:
            query = query.at_bits(common)
    return _align_dense(query, source, k, min_words, deadline)


def _check(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise legacy.Overdue("the request's deadline passed while aligning passages")


def _masked(anchor_hashes: np.ndarray, layout: Layout, bits: int) -> Layout:
    """The layout with word hashes cut to their low bits (0: format 1's four)."""
    mask = (1 << (bits or 4)) - 1
    return Layout(
        anchor_hashes,
        layout.anchor_words,
        (np.asarray(layout.word_hashes) & mask).astype(np.uint8),
        layout.starts,
        layout.ends,
        bits=bits,
    )


def _ungapped(q: list[int], qi: int, s: list[int], si: int, step: int) -> int:
    """Words an ungapped extension takes from q[qi], s[si] on (passages.align's X-drop)."""
    score = best = taken = n = 0
    while 0 <= qi < len(q) and 0 <= si < len(s):
        score += 1 if q[qi] == s[si] else -legacy.MISMATCH
        n += 1
        if score > best:
            best, taken = score, n
        elif best - score > legacy.XDROP:
            break
        qi += step
        si += step
    return taken


def _shared_around(q: list[int], qi: int, s: list[int], si: int) -> bool:
    """Whether most words around q[qi] occur around s[si], in any order (a copy whose
    edits or swaps stop an ungapped extension early)."""
    window = q[max(0, qi - GATE_WINDOW) : qi + GATE_WINDOW + 1]
    near = set(s[max(0, si - GATE_WINDOW) : si + GATE_WINDOW + 1])
    return len([h for h in window if h in near]) >= GATE_SHARE * (2 * GATE_WINDOW + 1)


def _anchor_diagonals(
    query: Query, source: Layout, k: int
) -> tuple[np.ndarray, bool, list[tuple[int, int]]]:
    """Distinct diagonals (source word - query word) of shared anchors verified word by
    word, and whether MAX_HITS cut them; none unless the anchors make a copy likely: one
    whose ungapped extension spans GATE_WORDS or whose neighbourhood the source shares
    (_shared_around), or two on nearby diagonals. A common phrase
    shared by an unrelated text (most candidates of a query) then costs a few dictionary
    look-ups, not a dense seeding."""
    q_list, qb = query.hash_list, query.hash_bytes
    sb = np.asarray(source.word_hashes).astype("<u2").tobytes()
    s_list: list[int] | None = None  # made at the first verified anchor, if any
    nq, ns = len(q_list), len(sb) // 2
    diagonals: list[int] = []  # sorted
    hits: list[tuple[int, int]] = []  # (query word, source word) of the first new diagonals
    strong = False
    tried = looked = 0
    capped = False
    for h, si in zip(source.anchor_hashes.tolist(), source.anchor_words.tolist(), strict=True):
        for qi in query.anchors.get(h, ()):
            tried += 1
            if tried > MAX_HITS:
                capped = True
                break
            width = min(k, nq - qi, ns - si)
            if width <= 0 or qb[2 * qi : 2 * (qi + width)] != sb[2 * si : 2 * (si + width)]:
                continue
            d = si - qi
            at = bisect.bisect_left(diagonals, d)
            known = at < len(diagonals) and diagonals[at] == d
            if known and strong:
                continue
            if not strong:
                # A diagonal met before is judged again by this hit: a chance match of a
                # few words can lie on a copy's own diagonal, and must not hide it.
                near = not known and (
                    (at > 0 and d - diagonals[at - 1] <= BAND)
                    or (at < len(diagonals) and diagonals[at] - d <= BAND)
                )
                if s_list is None:
                    s_list = source.word_hashes.tolist()
                span = width + _ungapped(q_list, qi + width, s_list, si + width, 1)
                span += _ungapped(q_list, qi - 1, s_list, si - 1, -1)
                strong = near or span >= GATE_WORDS
                if not strong and looked < GATE_TRIES:
                    looked += 1
                    strong = _shared_around(q_list, qi, s_list, si)
            if known:
                continue
            diagonals.insert(at, d)
            if len(hits) < REPEAT_HITS:
                hits.append((qi, si))
        if capped:
            break
    if not strong:
        return np.zeros(0, np.int64), capped, []
    return np.array(diagonals, np.int64), capped, hits


def _seeds(
    query: Query, source: Layout, diagonals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Seed hits (query word, source word) near the anchors' diagonals, sorted by query
    then source word, and whether a bound cut them."""
    bits = source.bits
    q_keys, q_words = query.seeds(bits)
    s_keys = seed_keys(source.word_hashes, bits)
    if not len(s_keys) or not len(q_keys):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), False
    # Each source key's seeds in the query: looked up (narrow keys) or searched once.
    table = query.seed_table(bits)
    if table is not None:
        lo, in_query = table[0][s_keys].astype(np.int64), table[1][s_keys].astype(np.int64)
    else:
        distinct, q_first, q_count = query.distinct_seeds(bits)
        at = np.minimum(np.searchsorted(distinct, s_keys), len(distinct) - 1)
        in_query = np.where(distinct[at] == s_keys, q_count[at], 0)
        lo = q_first[at]
    # Source keys occurring more than MAX_OCC times in the source (run lengths of the
    # sorted keys; in most sources none does).
    ranked = np.sort(s_keys)
    edges = np.flatnonzero(ranked[1:] != ranked[:-1]) + 1
    bounds = np.concatenate(([0], edges, [len(ranked)]))
    runs = np.diff(bounds)
    often = ranked[bounds[:-1][runs > MAX_OCC]]
    in_source_over = np.isin(s_keys, often) if len(often) else np.zeros(len(s_keys), bool)
    # A long text repeats common word pairs ("of the") in proportion to its length: the
    # bound on the query's side grows with it, a block of QUERY_BLOCK words at a time, so
    # a thesis is seeded as its chapters would be, while a text of one repeated sentence
    # (thousands of each key, whatever its length) still is not. MAX_SEEDS bounds the rest.
    q_bound = MAX_OCC * max(1, len(query.hashes) // QUERY_BLOCK)
    repeats = (in_query > q_bound) | in_source_over
    # Only a repeat the query shares is a seed left out: a source's own common pairs
    # that the query never uses cut nothing.
    capped = bool((repeats & (in_query > 0)).sum() > REPEAT_SHARE * len(s_keys))
    keep = (in_query > 0) & ~repeats
    s_pos = np.flatnonzero(keep)
    per = in_query[keep]
    total = int(per.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), capped
    lo = lo[keep]
    if total > GROUPED * len(s_pos):
        # A long query repeats common keys far from where the source lies: of each kept
        # key's occurrences, only those in a band of the anchors' diagonals are taken
        # (one search per key and band) when that is fewer steps.
        splits = np.flatnonzero(np.diff(diagonals) > 2 * BAND) + 1
        d_lo = diagonals[np.concatenate(([0], splits))] - BAND
        d_hi = diagonals[np.concatenate((splits, [len(diagonals)])) - 1] + BAND
        if len(s_pos) * len(d_lo) * GROUPED < total:
            s_pos, lo, per = _in_bands(query, bits, s_keys[keep], s_pos, d_lo, d_hi)
            total = int(per.sum())
            if not total:
                return np.zeros(0, np.int64), np.zeros(0, np.int64), capped
    # Every (source word, query occurrence) pair of the kept keys (in the bands).
    s_hit = np.repeat(s_pos, per)
    q_hit = q_words[_spread(lo, per)]
    diag = s_hit - q_hit
    at = np.searchsorted(diagonals, diag)
    below = np.abs(diag - diagonals[np.maximum(at - 1, 0)])
    above = np.abs(diagonals[np.minimum(at, len(diagonals) - 1)] - diag)
    near = np.minimum(below, above) <= BAND
    q_hit, s_hit = q_hit[near], s_hit[near]
    order = np.lexsort((s_hit, q_hit))
    q_hit, s_hit = q_hit[order], s_hit[order]
    if len(q_hit) > MAX_SEEDS:
        q_hit, s_hit, capped = q_hit[:MAX_SEEDS], s_hit[:MAX_SEEDS], True
    return q_hit, s_hit, capped


def _spread(first: np.ndarray, per: np.ndarray) -> np.ndarray:
    """first[i], first[i] + 1, ... per[i] places from each start, in turn: where each
    key's matches lie in a sorted array, from where they start and how many there are."""
    return np.repeat(first - np.cumsum(per) + per, per) + np.arange(int(per.sum()))


def _in_bands(
    query: Query,
    bits: int,
    keys: np.ndarray,
    s_pos: np.ndarray,
    d_lo: np.ndarray,
    d_hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each source seed (key, word) and each band of diagonals [d_lo, d_hi]: the
    source word, where its key's query seeds in that band start (in seeds' order) and
    how many there are, rows by seed then band."""
    placed = query.placed_seeds(bits)
    width = np.int64(len(query.hashes) + 1)
    first = s_pos[:, None] - d_hi[None, :]  # the query words s - d of the band
    last = s_pos[:, None] - d_lo[None, :]
    empty = (last < 0) | (first > width - 2)
    base = (keys * width)[:, None]
    lo = np.searchsorted(placed, (base + np.clip(first, 0, width - 2)).ravel())
    hi = np.searchsorted(placed, (base + np.clip(last, 0, width - 2)).ravel(), "right")
    per = np.where(empty.ravel(), 0, hi - lo)
    return np.repeat(s_pos, len(d_lo)), lo, per


def _runs(q_hit: np.ndarray, s_hit: np.ndarray, n: int) -> np.ndarray:
    """Seeds that follow one another on one diagonal as one run: rows (query first, query
    end, source first, source end) of the words they cover, sorted by query then source.
    A verbatim stretch of any length is then one run for the chaining."""
    if not len(q_hit):
        return np.zeros((0, 4), np.int64)
    diag = s_hit - q_hit
    order = np.lexsort((q_hit, diag))
    d, q = diag[order], q_hit[order]
    start = np.ones(len(q), bool)
    start[1:] = (d[1:] != d[:-1]) | (q[1:] != q[:-1] + 1)
    firsts = np.flatnonzero(start)
    lasts = np.concatenate((firsts[1:], [len(q)])) - 1
    q0, q1 = q[firsts], q[lasts] + n
    runs = np.stack((q0, q1, q0 + d[firsts], q1 + d[firsts]), 1)
    return runs[np.lexsort((runs[:, 2], runs[:, 0]))]


def _longest_runs(runs: np.ndarray, most: int) -> np.ndarray:
    """The most longest runs (in the query), in their order. Past the bound, most runs are
    single seeds met by chance (a text of letters, as Chinese or Japanese is read,
    repeats its letter pairs everywhere), and a copy's own runs are the long ones,
    wherever they lie: the first runs in query order would keep the copy's start only."""
    longest = np.argsort(runs[:, 0] - runs[:, 1], kind="stable")[:most]
    return runs[np.sort(longest)]


def _chains(runs: list[list[int]]) -> list[Chain]:
    """Colinear chains of runs (minimap2's DP on word runs): a run continues the best
    chain among its LOOKBACK predecessors that start before it and end before it ends in
    both texts, at most MAX_GAP words away, gaining the query words it adds, less
    GAP_COST a word between them and DIAG_COST a word of diagonal shift. Each chain as
    (query first, query end, source first, source end, query words matched, its runs),
    best first."""
    count = len(runs)
    score = [0.0] * count
    back = [-1] * count
    for i in range(count):
        qi0, qi1, si0, si1 = runs[i]
        best, arg = float(qi1 - qi0), -1
        for j in range(i - 1, i - 1 - LOOKBACK if i > LOOKBACK else -1, -1):
            qj0, qj1, sj0, sj1 = runs[j]
            if qj0 >= qi0 or sj0 >= si0 or qj1 >= qi1 or sj1 >= si1:
                continue
            dq, ds = qi0 - qj1, si0 - sj1
            if dq > MAX_GAP or ds > MAX_GAP:
                continue
            gain = float(qi1 - (qi0 if qi0 > qj1 else qj1))
            gap = dq if dq > ds else ds
            if gap > 0:
                gain -= GAP_COST * gap
            shift = (si0 - qi0) - (sj0 - qj0)
            gain -= DIAG_COST * (shift if shift > 0 else -shift)
            if score[j] + gain > best:
                best, arg = score[j] + gain, j
        score[i], back[i] = best, arg
    used = [False] * count
    out = []
    for end in sorted(range(count), key=lambda i: -score[i]):
        if used[end]:
            continue
        members = []
        i = end
        while i >= 0 and not used[i]:
            members.append(i)
            used[i] = True
            i = back[i]
        members.reverse()
        matched, reach = 0, -1
        for m in members:
            q0, q1 = runs[m][0], runs[m][1]
            matched += max(0, q1 - max(q0, reach))
            reach = max(reach, q1)
        first = runs[members[0]]
        out.append(
            (first[0], runs[end][1], first[2], runs[end][3], matched, [runs[m] for m in members])
        )
    return out


def _extend(q: np.ndarray, qi: int, s: np.ndarray, si: int, step: int) -> int:
    """Words to take from q[qi], s[si] on (stepping by step): the best-scoring prefix, a
    match EXT_MATCH, a mismatch -1, stopping XDROP below the best."""
    score = best = taken = n = 0
    while 0 <= qi < len(q) and 0 <= si < len(s):
        score += EXT_MATCH if q[qi] == s[si] else -1
        n += 1
        if score > best:
            best, taken = score, n
        elif best - score >= XDROP:
            break
        qi += step
        si += step
    return taken


def _extended(qh: np.ndarray, sh: np.ndarray, pieces: list[list[int]]) -> list[list[int]]:
    """The pieces (qa, qb, sa, sb, matched) with their edges extended (_extend), in place."""
    for piece in pieces:
        qa, qb, sa, sb, _ = piece
        left = _extend(qh, qa - 1, sh, sa - 1, -1)
        right = _extend(qh, qb, sh, sb, 1)
        piece[:4] = qa - left, qb + right, sa - left, sb + right
    return pieces


def _repeated(
    query: Query, source: Layout, hits: list[tuple[int, int]], deadline: float | None
) -> list[Chain]:
    """Chains of a pair whose seeds repeat too often to seed: each verified anchor hit
    extended both ways without gaps, a hit inside an earlier extension skipped (so a text
    of one repeated sentence costs one extension, bounded by its length)."""
    qh, sh = query.hashes, np.asarray(source.word_hashes, np.int64)
    chains: list[Chain] = []
    for qi, si in hits:
        if any(a <= qi < b for a, b, _, _, _, _ in chains):
            continue
        _check(deadline)
        left = _extend(qh, qi - 1, sh, si - 1, -1)
        right = _extend(qh, qi, sh, si, 1)
        qa, qb, sa, sb = qi - left, qi + right, si - left, si + right
        chains.append((qa, qb, sa, sb, left + right, [[qa, qb, sa, sb]]))
    return chains


def _fill(
    qh: np.ndarray,
    sh: np.ndarray,
    pieces: list[list[int]],
    members: dict[int, list[list[int]]],
    taken: np.ndarray,
    bits: int,
    least: int,
    min_words: int,
) -> list[list[int]]:
    """Pieces of a reordered copy's sentences that the seeding missed, sought where they
    must lie: in the query words between (and up to SOURCE_HOLE words before and after)
    pieces that follow one another within SOURCE_HOLE words in the query and lie in one
    part of the source (_source_parts), against that part (and SOURCE_HOLE words either
    side of it).

    A short sentence of a reordered copy often holds no anchor, and its diagonal can lie
    more than BAND from every anchor's: it is not seeded at all. Or its seeds joined a
    chain with a repeat of a neighbouring sentence elsewhere in the source, which a better
    chain then put aside whole. Either way its copy is split at it (a query gap over
    MERGE_GAP, a source hole over SOURCE_HOLE) and its words are lost. Here every seed of
    the gap is looked up in the part's source words, whatever its diagonal; chains of at
    least least matched words fill it, those in the part's source holes (words no run of
    its pieces holds) first. One before the first piece or after the last must reach
    within MERGE_GAP words of it.

    The gaps inside a piece (between the runs of its chain, members by the piece's id)
    are sought too where the words skipped are not those of the source on either run's
    diagonal: a chain of a reordered copy can link two sentences over a third from
    elsewhere in the source, whose words it then covers in the query but not in the
    source. Only a chain in a source hole of the part fills such a gap.

    Only a part whose pieces match min_words words is filled: a fill completes a copy
    found, it never makes one. The gaps are short and the parts no longer than the copies
    they hold. Query words filled are marked in taken; the new pieces are returned (qa,
    qb, sa, sb, matched)."""
    added: list[list[int]] = []
    filled = np.zeros(len(taken), bool)  # query words of the pieces added
    sought: set[int] = set()  # pieces whose inner gaps were sought
    ordered = sorted(pieces, key=lambda p: p[:4])
    for _ in range(FILL_ROUNDS):  # an edge filled may leave another sentence beyond it
        grown = False
        for group in _groups(ordered):
            if sum(p[4] for p in group) < min_words:
                continue  # a fill completes a copy found, it never makes one
            if len(group) == 1 and not _jumps(members.get(id(group[0]), [group[0]])):
                continue  # one piece on one diagonal, edits aside: no sign of reordering
            lo = max(0, min(p[2] for p in group) - SOURCE_HOLE)
            hi = min(len(sh), max(p[3] for p in group) + SOURCE_HOLE)
            covered = np.zeros(hi - lo, bool)  # source words the group's runs hold
            gaps = [(a[1], b[0], 0) for a, b in itertools.pairwise(group)]
            gaps.append((max(0, group[0][0] - SOURCE_HOLE), group[0][0], -1))
            gaps.append((group[-1][1], min(len(qh), group[-1][1] + SOURCE_HOLE), 1))
            for p in group:
                runs = members.get(id(p), [p])
                # Its runs, and the words its extension took past them.
                for r in [*runs, [0, 0, p[2], runs[0][2]], [0, 0, runs[-1][3], p[3]]]:
                    covered[max(0, r[2] - lo) : max(0, r[3] - lo)] = True
                if id(p) not in sought:
                    sought.add(id(p))
                    gaps += [(g0, g1, 2) for g0, g1 in _skipped(qh, sh, runs)]
            keys: tuple[np.ndarray, np.ndarray] | None = None  # the part's, made once
            run_words = max(least, -(-FILL_BITS // bits))
            for q0, q1, edge in gaps:
                mask = filled if edge == 2 else taken
                if q1 - q0 < least or mask[q0:q1].all():
                    continue
                if keys is None:
                    s_keys = seed_keys(sh[lo:hi], bits)
                    order = np.argsort(s_keys, kind="stable")
                    keys = (s_keys[order], order + lo)
                for chain in _placed(_local(qh, q0, q1, keys, bits), covered, lo):
                    qa, qb, sa, sb, matched, runs_found = chain
                    if matched < least or mask[qa:qb].sum() > (qb - qa) // 2:
                        continue
                    if max(r[1] - r[0] for r in runs_found) < run_words:
                        continue
                    if (edge == -1 and q1 - qb > MERGE_GAP) or (edge == 1 and qa - q0 > MERGE_GAP):
                        continue  # not next to the copy
                    if edge == 2 and 2 * covered[sa - lo : sb - lo].sum() > sb - sa:
                        continue
                    taken[qa:qb] = filled[qa:qb] = True
                    for r in runs_found:
                        covered[r[2] - lo : r[3] - lo] = True
                    added.append([qa, qb, sa, sb, matched])
                    members[id(added[-1])] = runs_found
                    grown = grown or edge in (-1, 1)
        if not grown:
            break
        ordered = sorted(pieces + added, key=lambda p: p[:4])
    return added


def _jumps(runs: list[list[int]]) -> bool:
    """Whether a chain's runs change diagonal by more than an edit does (JUMP words)
    between two that follow one another: sentences of a reordered copy it linked."""
    return any(abs((b[2] - b[0]) - (a[2] - a[0])) > JUMP for a, b in itertools.pairwise(runs))


def _rehomed(pieces: list[list[int]], runs_of: list[list[list[int]]], others: list[Chain]) -> None:
    """Pieces moved, in place, to the occurrence near their copy's other pieces of a
    sentence the source holds more than once.

    Chains over the same query words tie when the source repeats a sentence, and the
    first occurrence wins; a piece whose source range lies away from those of its
    neighbours in the query (within SOURCE_HOLE words) takes instead a chain put aside
    over nearly the same words (9/10 of them) that matches as many and lies within
    SOURCE_HOLE words of a neighbour's source range, so the copy stays one passage."""

    def near(a: list[int], sa: int, sb: int) -> bool:
        return sa - a[3] <= SOURCE_HOLE and a[2] - sb <= SOURCE_HOLE

    for i, piece in enumerate(pieces):
        qa, qb, sa, sb, matched = piece
        neighbours = [
            p
            for j, p in enumerate(pieces)
            if j != i and p[0] - qb <= SOURCE_HOLE and qa - p[1] <= SOURCE_HOLE
        ]
        if not neighbours or any(near(p, sa, sb) for p in neighbours):
            continue
        for oa, ob, osa, osb, omatched, held in others:
            same = min(ob, qb) - max(oa, qa)
            if omatched < matched or 10 * same < 9 * (qb - qa) or 10 * same < 9 * (ob - oa):
                continue
            if any(near(p, osa, osb) for p in neighbours):
                pieces[i] = [oa, ob, osa, osb, omatched]
                runs_of[i] = held
                break


def _groups(ordered: list[list[int]]) -> list[list[list[int]]]:
    """Pieces (in query order) that follow one another within SOURCE_HOLE words in the
    query and lie in one part of the source (_source_parts), each group in query order."""
    out = []
    for run in _near(ordered, SOURCE_HOLE):
        part = _source_parts(run)
        for number in sorted(set(part)):
            out.append([p for p, x in zip(run, part, strict=True) if x == number])
    return out


def _near(pieces: list[list[int]], gap: int) -> list[list[list[int]]]:
    """Pieces in query order cut into runs in which each starts within gap words of the
    query words the run's earlier ones reach."""
    runs = []
    i = 0
    while i < len(pieces):
        j, end = i + 1, pieces[i][1]
        while j < len(pieces) and pieces[j][0] - end <= gap:
            end = max(end, pieces[j][1])
            j += 1
        runs.append(pieces[i:j])
        i = j
    return runs


def _placed(chains: list[Chain], covered: np.ndarray, lo: int) -> list[Chain]:
    """The chains with those mostly on source words covered (from word lo) last, in
    their order otherwise (best first): a missed sentence lies in a hole of its copy."""
    return sorted(chains, key=lambda c: 2 * covered[c[2] - lo : c[3] - lo].sum() > c[3] - c[2])


def _skipped(qh: np.ndarray, sh: np.ndarray, runs: list[list[int]]) -> list[tuple[int, int]]:
    """The query words (first, end) between runs of a chain that follow one another
    where they are not, mostly, the source's on either run's diagonal (a sentence from
    elsewhere, not edits between the two)."""
    out = []
    for a, b in itertools.pairwise(runs):
        g0, g1 = a[1], b[0]
        if g1 <= g0:
            continue
        same = 0
        for d in {a[2] - a[0], b[2] - b[0]}:
            lo, hi = max(g0, -d), min(g1, len(sh) - d)
            if hi > lo:
                same = max(same, int((qh[lo:hi] == sh[lo + d : hi + d]).sum()))
        if 2 * same < g1 - g0:
            out.append((g0, g1))
    return out


def _local(
    qh: np.ndarray, q0: int, q1: int, keys: tuple[np.ndarray, np.ndarray], bits: int
) -> list[Chain]:
    """Chains of the seeds that query words [q0, q1) share with a range of source words,
    whatever their diagonals, as _chains gives them, best first. keys: the range's seed
    keys sorted and the source word each starts at; a key more than MAX_OCC times in the
    range is left out."""
    q_keys = seed_keys(qh[q0:q1], bits)
    ranked, where = keys
    if not len(q_keys) or not len(ranked):
        return []
    first = np.searchsorted(ranked, q_keys)
    per = np.searchsorted(ranked, q_keys, "right") - first
    per[per > MAX_OCC] = 0
    total = int(per.sum())
    if not total:
        return []
    q_hit = np.repeat(np.arange(len(q_keys)), per) + q0
    s_hit = where[_spread(first, per)]
    return _chains(_runs(q_hit, s_hit, seed_length(bits)).tolist())


def _merge(pieces: list[list[int]]) -> list[list[int]]:
    """Pieces (qa, qb, sa, sb, matched) that continue one another in both texts, as one.

    Pieces that follow one another in the query, each within MERGE_GAP words of the last,
    are one passage where their source ranges, in whatever order, leave no hole over
    SOURCE_HOLE words: a copy whose sentences were reordered is one copy, as PAN counts it
    (granularity), and its ends are the ends of its extreme pieces in each text. A piece
    from elsewhere in the source between two such pieces keeps them apart."""
    merged: list[list[int]] = []
    for run in _near(sorted(pieces), MERGE_GAP):
        part = _source_parts(run)
        for n, piece in enumerate(run):
            if n and part[n] == part[n - 1]:
                last = merged[-1]
                last[1], last[3] = max(last[1], piece[1]), max(last[3], piece[3])
                last[2] = min(last[2], piece[2])
                last[4] += piece[4]
            else:
                merged.append(list(piece))
    return merged


def _source_parts(run: list[list[int]]) -> list[int]:
    """For each piece of run, which part of the source it lies in: pieces whose source
    ranges reach within SOURCE_HOLE words of one another, in source order, share a part."""
    part = [0] * len(run)
    reach: int | None = None
    n = 0
    for x in sorted(range(len(run)), key=lambda x: run[x][2]):
        if reach is not None and run[x][2] - reach > SOURCE_HOLE:
            n += 1
        part[x] = n
        reach = run[x][3] if reach is None else max(reach, run[x][3])
    return part


def _align_dense(
    query: Query, source: Layout, k: int, min_words: int, deadline: float | None
) -> tuple[list[Passage], bool]:
    diagonals, capped, hits = _anchor_diagonals(query, source, k)
    if not len(diagonals):
        return [], capped
    _check(deadline)
    q_hit, s_hit, cut = _seeds(query, source, diagonals)
    _check(deadline)
    capped = capped or cut
    n = seed_length(source.bits)
    runs = _runs(q_hit, s_hit, n)
    if len(runs) > MAX_RUNS:
        runs, capped = _longest_runs(runs, MAX_RUNS), True
    chains = _chains(runs.tolist())
    if cut and not chains:
        # Repetitive text (a repeated sentence, one letter over and over): its seed keys
        # repeat past MAX_OCC and were not seeded; the anchors found where it is shared.
        chains = _repeated(query, source, hits, deadline)
    # Overlapping chains in the query (a repeated source sentence): the better stands.
    taken = np.zeros(len(query.hashes) + 1, bool)
    least = max(2 * n, min_words // 2)
    pieces = []
    runs_of: list[list[list[int]]] = []  # each piece's runs
    others: list[Chain] = []  # chains put aside for a better one over the same words
    for chain in chains:
        qa, qb, sa, sb, matched, held = chain
        if matched < least:
            continue
        if taken[qa:qb].sum() > (qb - qa) // 2:
            others.append(chain)
            continue
        taken[qa:qb] = True
        runs_of.append(held)
        pieces.append([qa, qb, sa, sb, matched])
    if others and len(pieces) > 1:
        _rehomed(pieces, runs_of, others)
    qh, sh = query.hashes, np.asarray(source.word_hashes, np.int64)
    # Each piece's edges extended before merging: a merged passage's ends are then those
    # of its extreme pieces even where its pieces were reordered.
    _extended(qh, sh, pieces)
    if pieces:
        # Sentences of a reordered copy that no piece holds, sought between its pieces.
        _check(deadline)
        for qa, qb, _, _, _ in pieces:
            taken[qa:qb] = True
        members = {id(p): r for p, r in zip(pieces, runs_of, strict=True)}
        found = _fill(qh, sh, pieces, members, taken, source.bits, least, min_words)
        pieces += _extended(qh, sh, found)
    kept = []
    for qa, qb, sa, sb, matched in _merge(pieces):
        if qb - qa < min_words or sb - sa < min_words:
            continue
        if matched < MIN_MATCHED * (qb - qa):
            continue
        kept.append((qa, qb, sa, sb))
    return legacy.spans_of(kept, query.layout, source), capped
