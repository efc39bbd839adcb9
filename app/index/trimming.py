"""Passages trimmed around what a containment query sets aside (app.index.exclusions
finds the spans): `Exclusions` takes a passage's words inside an excluded span out of
it, splitting it around them, moves each edge a cut made to where the copy really goes
on (`_Edges`), and sets aside what is left under `min_words` as short. What is left is
what counts, so containment, coverage, the threshold and the limit all see only it (the
share's denominator stays the whole text: excluded words are text that was not copied
in a way that counts).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from app.index.passages import merge, spans_of
from app.index.spans import Span

if TYPE_CHECKING:
    from app.index.passages import Layout, Passage

# A passage's edge that an exclusion cut moves to a run of words whose hashes (this many
# bits in all) match the source: 2 words at 8 bits, 4 in a format 1 layout.
EDGE_BITS = 16
# ... on a diagonal of the passage's ends, or this many words off one (edits between).
EDGE_DRIFT = 8
# ... and the words this far inward from it match too (or one word off).
EDGE_HOLD = 2
# ... at most this many words in from the cut, and off those diagonals within this many
# source words of where the passage's proportion puts it.
EDGE_WALK = 64
EDGE_SPAN = 500


@dataclass
class Exclusions:
    """The spans a containment query sets aside, and the least passage length that
    counts; collects the passages trimmed away as short, for the answer."""

    spans: list[Span]
    min_words: int = 0
    short: set[tuple[int, int]] = field(default_factory=set)
    # What the named sources' passages count ([start, end) in the query): never short.
    counting: list[tuple[int, int]] = field(default_factory=list)
    _masked: tuple[Layout, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def mask(self, layout: Layout) -> np.ndarray:
        """Per query word: whether it lies (even in part) in an excluded span. Made once
        per layout (trim asks for every candidate source), in numpy: a loop over the
        spans per source took 23 s for 50,000 quotations and 200 sources."""
        if self._masked is not None and self._masked[0] is layout:
            return self._masked[1]
        starts, ends = layout.starts, layout.ends
        first = np.searchsorted(ends, [s.start for s in self.spans], side="right")
        last = np.searchsorted(starts, [s.end for s in self.spans], side="left")
        # +1 where a span's words begin, -1 past them: covered where the sum is positive.
        edges = np.zeros(len(starts) + 1, np.int64)
        keep = first < last
        np.add.at(edges, first[keep], 1)
        np.add.at(edges, last[keep], -1)
        out = np.cumsum(edges[:-1]) > 0
        self._masked = (layout, out)
        return out

    def trim(
        self,
        passages: list[Passage],
        query: Layout,
        source: Layout,
        least: int,
        k: int = 1,
        counted: np.ndarray | None = None,
    ) -> tuple[list[Passage], float, float]:
        """The passages without their excluded words, the most words any one passage
        kept (fewer when its pieces' source sides are shorter: shorter_side), and the
        words they all kept so counted. A passage
        splits around its excluded words, each edge a cut made moved to the nearest words
        that match the source (_Edges); pieces under k words (no shingle) are dropped,
        and the rest are judged together, by the words they keep: under `least` they are
        dropped as alignment drops a passage that short, under min_words set aside as
        short. So quotation marks around a few words of a copy take those words out of
        it, never the copy with them. counted: the running total of what each query word
        counts for (align.Query.counted; None: one each)."""

        excluded = self.mask(query) if self.spans else None
        edges = _Edges(query, source)
        out: list[Passage] = []
        longest = total = 0.0
        for p in passages:
            qa, qb = p.query_words
            runs = [(qa, qb)] if excluded is None else _runs(~excluded[qa:qb], qa)
            # A piece shorter than a shingle (k words) holds none of the copy's shingles.
            placed = [edges.fit(p, ra, rb) for ra, rb in runs if rb - ra >= k]
            placed = [x for x in placed if x[1] - x[0] >= k]
            runs = [(ra, rb) for ra, rb, _, _ in placed]
            if counted is None:
                kept = float(sum(rb - ra for ra, rb in runs))
            else:
                kept = float(sum(counted[rb] - counted[ra] for ra, rb in runs))
            if kept < least:
                continue
            if kept < self.min_words:
                self.short.update((int(query.starts[a]), int(query.ends[b - 1])) for a, b in runs)
                continue
            query_words = sum(rb - ra for ra, rb in runs)
            source_words = sum(tb - ta for _, _, ta, tb in placed)
            length = kept * min(1.0, source_words / query_words)
            longest, total = max(longest, length), total + length
            out.extend(spans_of(placed, query, source))
        return out, longest, total

    def listed(self) -> list[Span]:
        """Every span set aside, in text order: the detected ones and the short passages,
        less what a named source's passage counts (a short match with one source can lie
        inside a long one with another)."""
        short = [Span(a, b, "short") for a, b in _minus(merge(list(self.short)), self.counting)]
        return sorted([*self.spans, *short], key=lambda s: (s.start, s.end))


def shorter_side(p: Passage) -> float:
    """The share of a passage's query words its source side's word count is, at most 1:
    a passage is as long as its shorter side."""
    qa, qb = p.query_words
    sa, sb = p.source_words
    return min(1.0, (sb - sa) / max(1, qb - qa))


class _Edges:
    """Where a piece of a passage that exclusions cut lies in both texts.

    An edge the passage had is kept as alignment placed it. An edge an excluded span made
    is moved inward, word by word and at most EDGE_WALK words, to the first query word
    that ends (or starts) a run of EDGE_BITS of word hash matching the source with the
    EDGE_HOLD words further in matching too: at each word first on a diagonal (source
    word minus query word) of the passage's ends or the one between them in proportion,
    or within EDGE_DRIFT words of one, then (inside a reordered copy, or past edits)
    within EDGE_SPAN source words of where the proportion puts it. Its source word is
    that match's: the words a cut leaves between the copy and a quotation (the writer's
    "as the authors put it") are not the copy, and where a passage joined two copies of
    one source text its end's diagonal says nothing of its first piece (a copy followed
    by the same text quoted). A piece with no match within EDGE_WALK words of its cut is
    dropped; each cut costs at most EDGE_WALK words' tries, so a text quoted every ten
    words stays linear."""

    def __init__(self, query: Layout, source: Layout) -> None:
        self.query, self.source = query, source
        self.bits = min(query.bits or 4, source.bits or 4)  # format 1 holds 4 bits a word
        self.n = max(1, -(-EDGE_BITS // self.bits))  # words a match must hold

    # The word hashes at the bits both hold, made only when a cut is placed (most
    # candidate sources of a query have no cut passage).
    @functools.cached_property
    def q(self) -> np.ndarray:
        return np.asarray(self.query.word_hashes, np.int64) & ((1 << self.bits) - 1)

    @functools.cached_property
    def s(self) -> np.ndarray:
        return np.asarray(self.source.word_hashes, np.int64) & ((1 << self.bits) - 1)

    def fit(self, p: Passage, ra: int, rb: int) -> tuple[int, int, int, int]:
        """The piece [ra, rb) of p's query words, its cut edges moved to matching words,
        with its source words [ta, tb); empty (ra == rb) when nothing in it matches."""
        qa, qb = p.query_words
        sa, sb = p.source_words
        ta = min(sb - 1, sa + (ra - qa))
        tb = max(ta + 1, sb - (qb - rb))
        if ra > qa:
            found = self._match(p, ra, rb, forward=True)
            if found is None:
                return ra, ra, ta, ta
            ra, ta = found
        if rb < qb:
            found = self._match(p, ra, rb, forward=False)
            if found is None:
                return ra, ra, ta, ta
            rb, tb = found[0] + 1, found[1] + 1
        if tb <= ta:
            # Its ends lie in the source out of order: a piece of a reordered copy that
            # spans several of its sentences. Its source side is where the passage's ends
            # put it, as long as its query side.
            ta = min(sb - 1, sa + (ra - qa))
            tb = min(sb, ta + (rb - ra))
        return ra, rb, ta, max(ta + 1, tb)

    def _match(self, p: Passage, ra: int, rb: int, forward: bool) -> tuple[int, int] | None:
        """The first query word from ra on (forward) or the last before rb, within
        EDGE_WALK of the cut, whose n words (it and those after it, or before it) match n
        words of p's source range where the class says, with the copy going on from it
        (_held), and the source word it matches; None if there is none."""
        n, q, s = self.n, self.q, self.s
        qa, qb = p.query_words
        sa, sb = p.source_words
        ends = (sa - qa, sb - qb)
        walk = (
            range(ra, min(rb, ra + EDGE_WALK))
            if forward
            else range(rb - 1, max(ra, rb - EDGE_WALK) - 1, -1)
        )
        # The diagonals tried, nearest one of the ends' or the proportion's at the cut
        # first (the proportion moves by less than a word over a walk, in all but tiny
        # passages).
        cut = walk[0] if len(walk) else ra
        between = ends[0] + (ends[1] - ends[0]) * (cut - qa) // max(1, qb - qa)
        drift = np.arange(-EDGE_DRIFT, EDGE_DRIFT + 1)
        near = np.unique(np.concatenate([d + drift for d in (*ends, between)]))
        gap = np.minimum(np.abs(near - ends[0]), np.abs(near - ends[1]))
        near = near[np.argsort(np.minimum(gap, np.abs(near - between)), kind="stable")]
        for k, i in enumerate(walk):
            m = min(n, rb - i) if forward else min(n, i - ra + 1)
            if m < n and k:
                break
            first = i if forward else i - m + 1
            # A piece shorter than n: its own words, on an end's diagonal only.
            tries = np.array(ends) if m < n else near
            for d in self._matching(first, m, tries, sa, sb):
                if self._held(i, d, ra, rb, sa, sb, forward):
                    return i, i + d
            if m < n:
                continue
            # Off those diagonals (a reordered copy, or edits that moved it): within
            # EDGE_SPAN of where the passage's proportion puts it, at this same word.
            lo = max(sa, first + between - EDGE_SPAN)
            hi = min(sb, first + between + EDGE_SPAN + n)
            if hi - lo < n:
                continue
            hit = lo + np.flatnonzero(s[lo : hi - n + 1] == q[first])
            for j in range(1, n):
                hit = hit[s[hit + j] == q[first + j]]
            for at in hit[np.argsort(np.abs(hit - (first + between)), kind="stable")].tolist():
                if self._held(i, at - first, ra, rb, sa, sb, forward):
                    return i, at - first + i
        return None

    def _matching(self, first: int, m: int, tries: np.ndarray, sa: int, sb: int) -> list[int]:
        """The diagonals of tries, in their order, on which the m query words from first
        match the source's within [sa, sb)."""
        at = first + tries
        ok = (at >= sa) & (at + m <= sb)
        at, tries = at[ok], tries[ok]
        for j in range(m):
            same = self.s[at + j] == self.q[first + j]
            at, tries = at[same], tries[same]
        return tries.tolist()

    def _held(self, i: int, d: int, ra: int, rb: int, sa: int, sb: int, forward: bool) -> bool:
        """Whether the copy goes on from i's match, inward (into the piece after it, or
        before it): the EDGE_HOLD words next to it (as many as the piece has) match the
        source on diagonal d or one word off it. Two words the writer's own clause shares
        with the source ("the license" in "as the authors of the license put it"), or
        that collide on 8 bits, are no edge: the writer's next word does not match (an
        audit saw such words end passages). Only the next words: a reordered copy's
        sentence ends a few words on, and the words past it lie elsewhere."""
        q, s, n = self.q, self.s, self.n
        inward = (
            range(i + n, min(rb, i + n + EDGE_HOLD))
            if forward
            else range(i - n, max(ra - 1, i - n - EDGE_HOLD), -1)
        )
        return all(
            any(sa <= j + d + e < sb and q[j] == s[j + d + e] for e in (0, -1, 1)) for j in inward
        )


def _minus(spans: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of merged, ordered spans outside every hole ([start, end) each)."""
    out: list[tuple[int, int]] = []
    cuts = merge(holes)
    for a, b in spans:
        for ha, hb in cuts:
            if hb <= a or ha >= b:
                continue
            if ha > a:
                out.append((a, ha))
            a = max(a, hb)
            if a >= b:
                break
        if a < b:
            out.append((a, b))
    return out


def _runs(keep: np.ndarray, offset: int) -> list[tuple[int, int]]:
    """[start, end) of each run of True in keep, shifted by offset."""
    if not len(keep):
        return []
    edges = np.flatnonzero(np.diff(np.concatenate(([0], keep.astype(np.int8), [0]))))
    return [
        (offset + int(a), offset + int(b)) for a, b in zip(edges[0::2], edges[1::2], strict=True)
    ]
