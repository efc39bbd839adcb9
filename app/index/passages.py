"""Copied passages: what a document keeps for them, and how two texts are aligned.

A document keeps two things for its passages (in its record, see ``Layout``):

- its anchors: the winnowed shingle hashes (``kernel.winnow``) with the word
  each starts at. Any run of ``passage_words`` words shared by two texts
  shares an anchor, so the index (anchor -> handles, in Redis) finds every
  source of such a run;
- its words: a 4-bit hash of every word and the word's code-point span.

A query winnows its own text the same way and meets each candidate source at
their shared anchors (seeds). From each seed the match is extended word by
word along its diagonal, through single edited words, and stops where the
texts part (an X-drop: the score may fall at most ``XDROP`` below its best).
Extensions on the same or nearby diagonals that overlap or nearly touch merge
into one maximal passage, so a passage with a few edited, inserted or deleted
words is reported once. Every word of a passage was compared, so coverage is
verified rather than estimated from hash hits; a 4-bit word hash lets one
unrelated word in 16 pass, which the X-drop scoring (a miss costs three
matches) keeps from stretching a passage by more than a word now and then.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

import numpy as np

from app.core import errors

# A matching word scores 1, a differing one -MISMATCH; an extension stops once
# its score is XDROP below the best it reached, and keeps the best prefix.
MISMATCH = 3
XDROP = 7
# Passages at most this many words apart (in both texts) are one passage.
MERGE_GAP = 8

_HEAD = struct.Struct("<III")  # anchors, words, overflowing gaps and lengths
_ESCAPE = 15


def _pack_nibbles(values: np.ndarray) -> bytes:
    """4-bit values two to a byte, the first in the high half."""
    v = np.asarray(values, np.uint8) & 15
    if len(v) % 2:
        v = np.append(v, np.uint8(0))
    return ((v[0::2] << 4) | v[1::2]).astype(np.uint8).tobytes()


def _unpack_nibbles(packed: np.ndarray, n: int) -> np.ndarray:
    out = np.empty(2 * len(packed), np.uint8)
    out[0::2] = packed >> 4
    out[1::2] = packed & 15
    return out[:n]


class Layout:
    """One text's anchors and words: what passage alignment needs of it.

    anchor_hashes (uint32: the low half of the winnowed shingle hash, in text order;
    a collision only costs a seed that the word hashes then refuse) and anchor_words
    (int64, the word each anchor starts at); word_hashes (4 bits of each word's hash,
    one uint8 per word);
    starts and ends (int64,
    each word's code-point span, end exclusive). A layout read from a record
    decodes its spans only when asked: most candidates of a query share no passage.
    """

    def __init__(
        self,
        anchor_hashes: np.ndarray,
        anchor_words: np.ndarray,
        word_hashes: np.ndarray,
        starts: np.ndarray | None = None,
        ends: np.ndarray | None = None,
        spans: tuple[int, bytes, int] | None = None,
    ) -> None:
        self.anchor_hashes = anchor_hashes
        self.anchor_words = anchor_words
        self.word_hashes = word_hashes
        self._starts, self._ends = starts, ends
        self._spans = spans  # (encoding, raw, offset) still to decode

    @property
    def starts(self) -> np.ndarray:
        if self._starts is None:
            self._decode()
        return self._starts  # type: ignore[return-value]

    @property
    def ends(self) -> np.ndarray:
        if self._ends is None:
            self._decode()
        return self._ends  # type: ignore[return-value]

    @property
    def words(self) -> int:
        """How many words the text has."""
        return len(self.word_hashes)

    def pack(self) -> bytes:
        """The record's passage section: anchors (uint32 hash, then word index as
        uint16, or uint32 in texts of 65,536 words or more), word hashes, then one
        byte per word: the gap before it and its length, 4 bits each, 15 meaning
        "see the overflow", a uint32 list at the end (in word order, gap first)."""
        gaps = self.starts - np.concatenate(([0], self.ends[:-1]))
        lens = self.ends - self.starts
        pairs = np.stack([gaps, lens], 1).astype(np.int64)
        big = pairs >= _ESCAPE
        nibbles = np.where(big, _ESCAPE, pairs)
        word_type = "<u2" if self.words < 1 << 16 else "<u4"
        return b"".join(
            (
                _HEAD.pack(len(self.anchor_hashes), self.words, int(big.sum())),
                self.anchor_hashes.astype("<u4").tobytes(),
                self.anchor_words.astype(word_type).tobytes(),
                _pack_nibbles(self.word_hashes),
                ((nibbles[:, 0] << 4) | nibbles[:, 1]).astype(np.uint8).tobytes(),
                pairs[big].astype("<u4").tobytes(),
            )
        )

    @classmethod
    def unpack(cls, raw: bytes) -> Layout:
        """The inverse of pack."""
        n_anchors, n_words, n_overflow = _HEAD.unpack_from(raw)
        pos = _HEAD.size
        hashes = np.frombuffer(raw, "<u4", n_anchors, pos)
        pos += 4 * n_anchors
        word_type = np.dtype("<u2" if n_words < 1 << 16 else "<u4")
        words = np.frombuffer(raw, word_type, n_anchors, pos).astype(np.int64)
        pos += word_type.itemsize * n_anchors
        packed = (n_words + 1) // 2
        word_hashes = _unpack_nibbles(np.frombuffer(raw, np.uint8, packed, pos), n_words)
        return cls(hashes, words, word_hashes, spans=(n_overflow, raw, pos + packed))

    def _decode(self) -> None:
        assert self._spans is not None
        n_overflow, raw, pos = self._spans
        n = len(self.word_hashes)
        packed = np.frombuffer(raw, np.uint8, n, pos).astype(np.int64)
        pairs = np.stack([packed >> 4, packed & 15], 1)
        if n_overflow:
            big = pairs == _ESCAPE
            pairs[big] = np.frombuffer(raw, "<u4", n_overflow, pos + n).astype(np.int64)
        gaps, lens = pairs[:, 0], pairs[:, 1]
        self._starts = np.cumsum(gaps + np.concatenate(([0], lens[:-1])))
        self._ends = self._starts + lens


@dataclass(frozen=True)
class Passage:
    """A passage shared by a query and a source: word ranges and code-point spans."""

    query_words: tuple[int, int]  # [first, last + 1)
    source_words: tuple[int, int]
    query_start: int
    query_end: int
    source_start: int
    source_end: int


def _extend(q: bytes, qi: int, s: bytes, si: int, step: int) -> int:
    """How many words to take from q[qi] and s[si] on, stepping by step (X-drop).

    Plain Python over bytes: most extensions stop after a few words, where a
    vectorised one would cost more in set-up than the loop does in full.
    """
    score = best = taken = n = 0
    while 0 <= qi < len(q) and 0 <= si < len(s):
        score += 1 if q[qi] == s[si] else -MISMATCH
        n += 1
        if score > best:
            best, taken = score, n
        elif best - score > XDROP:
            break
        qi += step
        si += step
    return taken


class Query:
    """A query's layout, indexed once for aligning it with many sources."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.words = layout.word_hashes.tobytes()
        self.anchors: dict[int, list[int]] = {}
        for h, w in zip(layout.anchor_hashes.tolist(), layout.anchor_words.tolist(), strict=True):
            self.anchors.setdefault(h, []).append(w)


class Overdue(errors.Unavailable):
    """The request's deadline passed during an alignment (503 with Retry-After)."""


def _overdue(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() > deadline


def align(
    query: Query, source: Layout, k: int, min_words: int, deadline: float | None = None
) -> list[Passage]:
    """The maximal passages two texts share, in query order, each at least min_words long.

    deadline (time.monotonic()): past it, Overdue is raised between seeds."""
    qh, sh = query.words, source.word_hashes.tobytes()
    nq, ns = len(qh), len(sh)
    spans: set[tuple[int, int, int, int]] = set()
    # Per diagonal (qi - si), the query ranges already extended: a seed inside one would
    # extend to the same piece. Repetitive text has thousands of seeds per diagonal.
    done: dict[int, list[tuple[int, int]]] = {}
    seeds = 0
    for h, si in zip(source.anchor_hashes.tolist(), source.anchor_words.tolist(), strict=True):
        for qi in query.anchors.get(h, ()):
            seeds += 1
            skip = any(a <= qi < b for a, b in done.get(qi - si, ()))
            # Checked before each extension (up to the whole text), else every 1,024 seeds.
            if (not skip or seeds % 1024 == 0) and _overdue(deadline):
                raise Overdue("the request's deadline passed while aligning passages")
            if skip:
                continue
            width = min(k, nq - qi, ns - si)
            if width <= 0 or qh[qi : qi + width] != sh[si : si + width]:
                continue  # a hash collision, not a shared shingle
            right = _extend(qh, qi + width, sh, si + width, 1)
            left = _extend(qh, qi - 1, sh, si - 1, -1)
            spans.add((qi - left, qi + width + right, si - left, si + width + right))
            done.setdefault(qi - si, []).append((qi - left, qi + width + right))
    merged: list[list[int]] = []
    for n, (qa, qb, sa, sb) in enumerate(sorted(spans)):
        if n % 1024 == 1023 and _overdue(deadline):
            raise Overdue("the request's deadline passed while merging passages")
        if merged:
            last = merged[-1]
            q_gap, s_gap = qa - last[1], sa - last[3]
            # The next piece continues the last one (it overlaps it, or follows it
            # after a few edited words), in both texts at once.
            if q_gap <= MERGE_GAP and -MERGE_GAP <= s_gap <= MERGE_GAP and sb > last[2]:
                last[1], last[2], last[3] = max(last[1], qb), min(last[2], sa), max(last[3], sb)
                continue
        merged.append([qa, qb, sa, sb])
    kept = [m for m in merged if m[1] - m[0] >= min_words and m[3] - m[2] >= min_words]
    q_layout = query.layout
    return [
        Passage(
            (qa, qb),
            (sa, sb),
            int(q_layout.starts[qa]),
            int(q_layout.ends[qb - 1]),
            int(source.starts[sa]),
            int(source.ends[sb - 1]),
        )
        for qa, qb, sa, sb in kept
    ]


def covered_shingles(passages: list[Passage], words: int, k: int) -> np.ndarray:
    """Which of a query's shingles lie wholly inside one of the passages (bool per shingle)."""
    n = max(1, words - k + 1)
    covered = np.zeros(n, dtype=bool)
    for p in passages:
        a, b = p.query_words
        covered[a : max(a, b - k + 1)] = True
    return covered
