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
   ``reorder.MERGE_GAP`` words in both texts are merged, as Sanchez-Perez et al. (PAN 2014)
   merge nearby seeds, and so are chains that follow one another in the query whose
   source ranges, in any order, leave no hole over ``reorder.SOURCE_HOLE`` words (a copy whose
   sentences were reordered). Before that merge, the query words such a copy's pieces
   leave between them (or just past its ends, or skipped inside a chain) are looked up
   in its part of the source whatever their diagonal (``reorder.fill``): a short sentence that
   holds no anchor near its diagonal, or whose seeds a chain through a repeat elsewhere
   took, is found where it must lie instead of splitting the copy.
4. **Exact edges.** A chain starts at its first seed and ends at its last, which match
   word for word; a short extension past them takes a last edited word only when a
   matching word follows it (X-drop), so an edge stops at the first and last matching
   word instead of running into the host text.

Every step is bounded: anchor hits per pair (``MAX_HITS``), a seed key occurring more
than ``chaining.MAX_OCC`` times in either text is not seeded (repeats), seeds per pair
(``MAX_SEEDS``, numpy work), runs chained per pair (``MAX_RUNS``, Python work: a run is
the seeds that follow one another on one diagonal, so a verbatim copy of any length is
one), predecessors per run (``chaining.LOOKBACK``). When a bound cuts real work the
result says so (``capped``), as a query's candidate cap does.
"""

from __future__ import annotations

import bisect
import math
import time

import numpy as np

from app.index import passages as legacy
from app.index.chaining import (
    MAX_OCC,
    Chain,
    chained,
    extend,
    extend_edges,
    longest_runs,
    seed_keys,
    seed_length,
    seed_runs,
    spread,
    without_short_letter_runs,
)
from app.index.passages import Layout, Passage
from app.index.reorder import fill, merge, query_places, rehome

# Letters that count for half a word in a passage's length (Query.weights): kana (and
# their half-width forms), Thai, Lao, Khmer and Myanmar.
LIGHT_LETTER = 0.5
LIGHT_SCRIPTS = (
    (0x3040, 0x30FF), (0x31F0, 0x31FF), (0xFF65, 0xFF9F), (0x0E00, 0x0EFF),
    (0x1780, 0x17FF), (0x1000, 0x109F),
)  # fmt: skip
# Seeds within this many diagonals of a shared anchor's diagonal are chained.
BAND = 24
# A passage must match at least this share of its query words through seeds.
MIN_MATCHED = 0.5
# ... and of the words its seeds' runs cover, this share must be its own: in a word pair
# that one of the two texts holds once (past chance repeats). Pairs both texts repeat
# are a template they share: an audit's Perl Config.pod entries ("This variable
# conditionally defines the X symbol, which indicates that ...") and Debian changelogs
# made a 1.0 containment of texts sharing no run of 7 words.
MIN_OWN = 0.33
# ... its words all the copy's own in a run this long with one pair of its own,
OWN_RUN = 16
# ... and a repeated pair too with OWN_SUPPORT of its own within OWN_REACH query words
# and OWN_DRIFT diagonals: a copy keeps the alignment of its own words through its
# repeated ones (a song's chorus), where a template's entries meet a chance pair of their
# own here and there (with a support of 4 an audit's Debian changelogs named 20% more
# sources, with 8 5%, all sharing a janitor's or a team's entries).
OWN_REACH = 16
OWN_DRIFT = 1
OWN_SUPPORT = 8
# A pair is seeded densely only if an anchor's ungapped extension spans this many words
# (or two anchors lie on nearby diagonals).
GATE_WORDS = 8
# ... or if most of the GATE_WINDOW words either side of it occur near it in the source.
GATE_WINDOW = 12
GATE_SHARE = 0.6
# ... looked at for at most this many anchors of a pair, or one per GATE_SPREAD query
# words when that is more (a long text meets more such phrases): with 4, a few short
# phrases the text shares with the source by chance, met first, used the looks up and an
# edited copy further on went unnamed (an outside audit's: 4, 5 or 8 three-word phrases
# hid a shuffled 144-word copy). A look costs a few microseconds, spent only on a pair's
# anchors that do not already make it a copy.
GATE_TRIES = 16
GATE_SPREAD = 250
# Work bounds (see the module's docstring).
MAX_HITS = 4_000
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


class Query(legacy.Query):
    """A query's layout indexed once for aligning it with many sources: its anchors (as
    passages.Query) and, for format 3 sources, its seed keys sorted."""

    def __init__(self, layout: Layout, text: str | None = None) -> None:
        super().__init__(layout)
        self._text = text
        self._weights: np.ndarray | None = None
        self._counted: np.ndarray | None = None
        self._seeds: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._distinct: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._table: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._placed: dict[int, np.ndarray] = {}
        self._cut: dict[int, Query] = {}
        self.hashes = np.asarray(layout.word_hashes, np.int64)
        self.hash_list: list[int] = self.hashes.tolist()
        self.hash_bytes = self.hashes.astype("<u2").tobytes()
        self._letters: np.ndarray | None = None

    @property
    def letters(self) -> np.ndarray:
        """Per word, whether it is a letter of a script written without spaces (a token of
        Chinese or Japanese): one code point touching the token before or after it, as two
        words of a spaced script never do (a separator lies between them)."""
        if self._letters is None:
            starts, ends = self.layout.starts, self.layout.ends
            touch = np.zeros(len(starts), bool)
            if len(starts) > 1:
                joined = starts[1:] == ends[:-1]
                touch[1:] |= joined
                touch[:-1] |= joined
            self._letters = touch & (ends - starts == 1)
        return self._letters

    @property
    def weights(self) -> np.ndarray:
        """Per word, what it counts for in a passage's length: 1, or LIGHT_LETTER for a
        letter (letters: one that touches its neighbours) of kana, Thai, Lao, Khmer or
        Myanmar (tens of letters in all, where Han has thousands and a spaced script's
        words more: such a letter tells as little as half a Han one, and chance runs of
        them made passages between unrelated Thai or Japanese texts). All 1 when the
        query's text is not at hand (a stored document asked by id in a collection that
        keeps no texts)."""
        if self._weights is None:
            weights = np.ones(len(self.hashes))
            text = self._text or ""
            at = np.flatnonzero(self.letters) if text else np.zeros(0, np.int64)
            starts = self.layout.starts[at].tolist()
            # A text that is not the layout's (shorter than its words reach) weighs nothing.
            if len(at) and starts[-1] < len(text):
                points = np.fromiter((ord(text[s]) for s in starts), np.int64, len(at))
                light = np.zeros(len(at), bool)
                for lo, hi in LIGHT_SCRIPTS:
                    light |= (points >= lo) & (points <= hi)
                weights[at[light]] = LIGHT_LETTER
            self._weights = weights
        return self._weights

    @property
    def counted(self) -> np.ndarray | None:
        """The running total of weights (counted[i]: words before word i), made once;
        None when every word counts one (no light letter: an English query)."""
        if self._counted is None and (self.weights != 1).any():
            self._counted = np.concatenate(([0.0], np.cumsum(self.weights)))
        return self._counted

    def weighed(self, qa: int, qb: int) -> float:
        """The length of query words [qa, qb) as weights counts them."""
        counted = self.counted
        return float(qb - qa) if counted is None else float(counted[qb] - counted[qa])

    def at_bits(self, bits: int) -> Query:
        """The query with word hashes cut to bits (0: format 1), made once."""
        if bits not in self._cut:
            lay = self.layout
            self._cut[bits] = Query(_masked(lay.anchor_hashes, lay, bits), self._text)
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
    tries = max(GATE_TRIES, nq // GATE_SPREAD)
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
                if not strong and looked < tries:
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
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Seed hits (query word, source word) near the anchors' diagonals, sorted by query
    then source word, whether each is specific (its words occur once in the query or once
    in the source, not in both several times) and whether at most twice in both, and
    whether a bound cut them."""
    bits = source.bits
    q_keys, q_words = query.seeds(bits)
    s_keys = seed_keys(source.word_hashes, bits)
    none = np.zeros(0, np.int64)
    if not len(s_keys) or not len(q_keys):
        return none, none, none.astype(bool), none.astype(bool), False
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
    # A pair both texts repeat is their shared template's ("This variable conditionally
    # defines the ... symbol", "unstable; urgency=medium"), not a copy's own words; in a
    # long text, past what chance repeats of its keys (a few bits a word) make.
    in_source = runs[np.searchsorted(ranked[bounds[:-1]], s_keys)]
    n = seed_length(bits)
    space = 2.0 ** (n * bits) / math.factorial(n)
    chance = [2 + int(3 * len(keys) / space) for keys in (q_keys, s_keys)]
    specific = (in_query < chance[0]) | (in_source < chance[1])
    # ... and a pair both texts hold at most once more than that: a passage pasted twice
    # from a source that holds it twice, where a form letter repeats in one or both.
    twice = (in_query <= chance[0]) & (in_source <= chance[1])
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
        return none, none, none.astype(bool), none.astype(bool), capped
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
                return none, none, none.astype(bool), none.astype(bool), capped
    # Every (source word, query occurrence) pair of the kept keys (in the bands).
    s_hit = np.repeat(s_pos, per)
    q_hit = q_words[spread(lo, per)]
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
    return q_hit, s_hit, specific[s_hit], twice[s_hit], capped


def _own_words(
    runs: np.ndarray,
    q_hit: np.ndarray,
    s_hit: np.ndarray,
    specific: np.ndarray,
    twice: np.ndarray,
    n: int,
    letters: np.ndarray,
    whole: int,
) -> np.ndarray:
    """The running count (one entry more than the query's words) of the copy's own query
    words: those of a specific seed hit (q_hit, s_hit: n words from each), of a repeated
    hit within OWN_REACH query words and OWN_DRIFT diagonals of a specific one, and all of
    a run of OWN_RUN words or more that holds a specific hit (a copied entry of a template
    runs on through its own names) or of a run of ``whole`` words or more most of whose
    hits are ``twice`` ones, pairs both texts hold at most once more than chance repeats
    (a passage both texts hold twice, pasted twice; not a form letter's paragraph, which
    both repeat letter after letter). Letters of a script written without spaces count
    as both: a pair of them is no unit of meaning (a verbatim Japanese copy repeats most
    of its kana pairs in both texts)."""
    words = len(letters)
    # Specific hits by (diagonal, query word); query words offset by OWN_REACH and
    # diagonals by OWN_DRIFT so that every searched range stays inside its diagonal's.
    width = np.int64(words + 2 * OWN_REACH + 1)
    lift = words + OWN_DRIFT

    def keys(d: np.ndarray, q: np.ndarray) -> np.ndarray:
        return (d + lift) * width + q + OWN_REACH

    def placed(mask: np.ndarray) -> np.ndarray:
        return np.sort(keys(s_hit[mask] - q_hit[mask], q_hit[mask]))

    def within(hits: np.ndarray, d: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """How many of hits (placed) lie on diagonal d at a query word in [lo, hi)."""
        return np.searchsorted(hits, keys(d, hi)) - np.searchsorted(hits, keys(d, lo))

    own, few = placed(specific), placed(twice)

    near = specific.copy()
    q_rep, d_rep = q_hit[~specific], (s_hit - q_hit)[~specific]
    found = np.zeros(len(q_rep), np.int64)
    for drift in range(-OWN_DRIFT, OWN_DRIFT + 1):
        found += within(own, d_rep + drift, q_rep - OWN_REACH, q_rep + OWN_REACH + 1)
    near[~specific] = found >= OWN_SUPPORT
    length = runs[:, 1] - runs[:, 0]
    diagonal = runs[:, 2] - runs[:, 0]
    held = (length >= OWN_RUN) & (within(own, diagonal, runs[:, 0], runs[:, 1]) > 0)
    held |= (length >= whole) & (2 * within(few, diagonal, runs[:, 0], runs[:, 1]) > length)

    edges = np.zeros(words + 1, np.int64)
    np.add.at(edges, np.concatenate((q_hit[near], runs[held, 0])), 1)
    np.add.at(edges, np.minimum(np.concatenate((q_hit[near] + n, runs[held, 1])), words), -1)
    covered = (np.cumsum(edges[:-1]) > 0) | letters
    return np.concatenate(([0], np.cumsum(covered)))


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
        left = extend(qh, qi - 1, sh, si - 1, -1, query.letters)
        right = extend(qh, qi, sh, si, 1, query.letters)
        qa, qb, sa, sb = qi - left, qi + right, si - left, si + right
        chains.append((qa, qb, sa, sb, left + right, [[qa, qb, sa, sb]]))
    return chains


def _align_dense(
    query: Query, source: Layout, k: int, min_words: int, deadline: float | None
) -> tuple[list[Passage], bool]:
    diagonals, capped, hits = _anchor_diagonals(query, source, k)
    if not len(diagonals):
        return [], capped
    _check(deadline)
    q_hit, s_hit, specific, twice, cut = _seeds(query, source, diagonals)
    _check(deadline)
    capped = capped or cut
    n = seed_length(source.bits)
    letters = query.letters
    runs = without_short_letter_runs(seed_runs(q_hit, s_hit, n), letters, query.counted)
    if len(runs) > MAX_RUNS:
        runs, capped = longest_runs(runs, MAX_RUNS), True
    own = _own_words(runs, q_hit, s_hit, specific, twice, n, letters, max(min_words, OWN_RUN))
    judged = True
    chains = chained(runs.tolist(), n)
    least = max(2 * n, min_words // 2)
    if cut and not any(chain[4] >= least for chain in chains):
        # Repetitive text (a repeated sentence, one letter over and over): its seed keys
        # repeat past MAX_OCC and were not seeded; the anchors found where it is shared.
        # The few seeds that are left (a text's last words, short of a whole repeat) make
        # no chain that counts, and must not hide the copy (a 250 KB text of one sentence
        # against its own copy found nothing).
        chains = _repeated(query, source, hits, deadline)
        judged = False  # a text of one sentence over and over: all its pairs repeat
    # Overlapping chains in the query (a repeated source sentence): the better stands.
    taken = np.zeros(len(query.hashes) + 1, bool)
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
        rehome(pieces, runs_of, others)
    qh, sh = query.hashes, np.asarray(source.word_hashes, np.int64)
    # Each piece's edges extended before merging: a merged passage's ends are then those
    # of its extreme pieces even where its pieces were reordered.
    extend_edges(qh, sh, pieces, letters)
    if pieces:
        # Sentences of a reordered copy that no piece holds, sought between its pieces.
        _check(deadline)
        for qa, qb, _, _, _ in pieces:
            taken[qa:qb] = True
        members = {id(p): r for p, r in zip(pieces, runs_of, strict=True)}
        found = fill(qh, sh, pieces, members, taken, source.bits, least, min_words)
        pieces += extend_edges(qh, sh, found, letters, pieces)
    kept = []
    for qa, qb, sa, sb, matched in merge(pieces, query_places(letters)):
        if query.weighed(qa, qb) < min_words or sb - sa < min_words:
            continue
        if matched < MIN_MATCHED * (qb - qa):
            continue
        if judged and own[qb] - own[qa] < MIN_OWN * (qb - qa):
            continue  # what both texts' template shares, whatever else they hold
        kept.append((qa, qb, sa, sb))
    return legacy.spans_of(kept, query.layout, source), capped
