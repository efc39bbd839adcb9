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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.core import errors

# A matching word scores 1, a differing one -MISMATCH; an extension stops once
# its score is XDROP below the best it reached, and keeps the best prefix.
MISMATCH = 3
XDROP = 7
# Passages at most this many words apart (in both texts) are one passage.
MERGE_GAP = 8
# Occurrences of one anchor hash aligned per text: a text that repeats one word or letter
# has it at every window, and aligning each with each cost seconds per thousand words
# (quadratic, each extension running the whole repeat); the first ones find the passage.
REPEATS = 32

# A text's offsets stay under this: a layout's overflow values are int32.
MAX_OFFSET = 2**31 - 1

_HEAD = struct.Struct("<III")  # anchors, words, overflowing gaps and lengths
_ESCAPE = 15
# Format 3 (a collection's passage_bits > 0) sets this bit in the head's word count; the
# kernel's format 2 sets 0x80000000 and 0x40000000 there (kernel.compact_layout), so the
# three are told apart by the head alone.
_HASHED = 0x20000000
_FLAGS = 0xE0000000
_KIND = struct.Struct("<I")  # format 3, after the head: bits a word hash | _STEPS
_STEPS = 0x100
WORD_BITS = tuple(range(4, 17))


class DamagedLayout(ValueError):
    """A stored layout whose spans cannot be read: one written before 2026-11-26 by a
    release that kept no overflow value for a negative gap (see _escaped). Its text must be
    ingested again; a query skips such a source rather than fail."""


def _escaped(values: np.ndarray) -> np.ndarray:
    """Which gaps or lengths go to the overflow list (their nibble 15): 15 or more, or
    negative. A gap is negative where one code point folds into several words (U+00BD
    into 1 and 2, Thai U+0E41 into two letters): they share its span, so the second
    starts before the first ends. Overflow values are int32: a text is far under 2**31."""
    return (values >= _ESCAPE) | (values < 0)


def _pack_nibbles(values: np.ndarray) -> bytes:
    """4-bit values two to a byte, the first in the high half."""
    v = np.asarray(values, np.uint8) & 15
    if len(v) % 2:
        v = np.append(v, np.uint8(0))
    return ((v[0::2] << 4) | v[1::2]).astype(np.uint8).tobytes()


def _pack_bits(values: np.ndarray, bits: int) -> bytes:
    """The low ``bits`` bits of each value, least significant first, packed little-endian."""
    v = np.ascontiguousarray(values, "<u2")
    spread = np.unpackbits(v.view(np.uint8).reshape(-1, 2), axis=1, bitorder="little")
    return np.packbits(spread[:, :bits], bitorder="little").tobytes()


def _unpack_bits(raw: bytes, pos: int, n: int, bits: int) -> np.ndarray:
    """The inverse of _pack_bits: n values (uint8 up to 8 bits, else uint16)."""
    if bits == 8:  # whole bytes: read as they are (most collections, every candidate)
        return np.frombuffer(raw, np.uint8, n, pos)
    if bits == 16:
        return np.frombuffer(raw, "<u2", n, pos).astype(np.uint16)
    size = (n * bits + 7) // 8
    flat = np.unpackbits(np.frombuffer(raw, np.uint8, size, pos), count=n * bits, bitorder="little")
    spread = np.zeros((n, 16), np.uint8)
    spread[:, :bits] = flat.reshape(n, bits)
    values = np.packbits(spread, axis=1, bitorder="little").view("<u2").ravel()
    return values.astype(np.uint8 if bits <= 8 else np.uint16)


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
    one uint8 per word, or bits of it in format 3, uint16);
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
        bits: int = 0,
    ) -> None:
        self.anchor_hashes = anchor_hashes
        self.anchor_words = anchor_words
        self.word_hashes = word_hashes
        self._starts, self._ends = starts, ends
        self._spans = spans  # (encoding, raw, offset) still to decode
        # 0: format 1 (4-bit word hashes, kernel-packed, aligned by ``align`` here);
        # 4, 8 or 16: format 3 with that many bits a word (app.index.align aligns it).
        self.bits = bits

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

    def fault(self) -> str | None:
        """Why no text has this layout (None: one may): its anchors' words must be word
        indexes of the text (in no set order: a text of several scripts winnows each
        apart), its words' spans ascending code-point offsets under 2**31. A layout from
        outside (an import) is checked so: answers read offsets out of it, and kept
        checks keep them."""
        n, words = self.words, self.anchor_words
        if len(words) and (words.min() < 0 or words.max() >= n):
            return "its anchors are not at words of the text"
        if not n:
            return None
        try:
            starts, ends = self.starts, self.ends
        except DamagedLayout as exc:
            return str(exc)
        if (
            starts[0] < 0
            or ends[-1] > MAX_OFFSET
            or np.any(ends < starts)
            or np.any(np.diff(starts) < 0)
            or np.any(np.diff(ends) < 0)
        ):
            return "its words' spans are not ascending code-point offsets"
        return None

    def pack(self) -> bytes:
        """The record's passage section: anchors (uint32 hash, then word index as
        uint16, or uint32 in texts of 65,536 words or more), word hashes, then one
        byte per word: the gap before it and its length, 4 bits each, 15 meaning
        "see the overflow", a uint32 list at the end (in word order, gap first).
        A layout with bits (format 3) packs as ``_pack_hashed`` says."""
        if self.bits:
            return self._pack_hashed()
        gaps = self.starts - np.concatenate(([0], self.ends[:-1]))
        lens = self.ends - self.starts
        pairs = np.stack([gaps, lens], 1).astype(np.int64)
        big = _escaped(pairs)
        nibbles = np.where(big, _ESCAPE, pairs)
        word_type = "<u2" if self.words < 1 << 16 else "<u4"
        return b"".join(
            (
                _HEAD.pack(len(self.anchor_hashes), self.words, int(big.sum())),
                self.anchor_hashes.astype("<u4").tobytes(),
                self.anchor_words.astype(word_type).tobytes(),
                _pack_nibbles(self.word_hashes),
                ((nibbles[:, 0] << 4) | nibbles[:, 1]).astype(np.uint8).tobytes(),
                pairs[big].astype("<i4").tobytes(),
            )
        )

    @classmethod
    def unpack(cls, raw: bytes) -> Layout:
        """The inverse of pack."""
        n_anchors, n_words, n_overflow = _HEAD.unpack_from(raw)
        if n_words & _HASHED:
            return cls._unpack_hashed(raw)
        pos = _HEAD.size
        hashes = np.frombuffer(raw, "<u4", n_anchors, pos)
        pos += 4 * n_anchors
        word_type = np.dtype("<u2" if n_words < 1 << 16 else "<u4")
        words = np.frombuffer(raw, word_type, n_anchors, pos).astype(np.int64)
        pos += word_type.itemsize * n_anchors
        packed = (n_words + 1) // 2
        word_hashes = _unpack_nibbles(np.frombuffer(raw, np.uint8, packed, pos), n_words)
        return cls(hashes, words, word_hashes, spans=(n_overflow, raw, pos + packed))

    def _pack_hashed(self) -> bytes:
        """Format 3: the head (words | _HASHED), a uint32 of the bits a word hash (low
        byte) and _STEPS, the anchor hashes as in format 1, the anchor words as one-byte
        steps (each minus the one before, the first minus 0) when _STEPS is set (every
        step under 256, as winnowing makes them) else as in format 1, the word hashes
        (``bits`` bits each, least significant first, packed little-endian), then the
        spans in about 5/8 of a byte a word, as the kernel's format 2 keeps them: 4-bit
        lengths two to a byte | (W + 7) / 8 bytes, bit i (least significant first) set
        where word i's gap is not 1 | 4-bit gaps of those words | uint32 values for the
        gaps, then the lengths, of 15 or more (15 marks them)."""
        bits = self.bits
        if bits not in WORD_BITS:
            raise ValueError(f"word hashes of {bits} bits; expected 4 to 16")
        starts, ends = self.starts, self.ends
        gaps = starts - np.concatenate(([0], ends[:-1]))
        lens = ends - starts
        odd = gaps != 1
        odd_gaps = gaps[odd]
        big_gaps, big_lens = _escaped(odd_gaps), _escaped(lens)
        overflow = np.concatenate((odd_gaps[big_gaps], lens[big_lens]))
        steps = np.diff(self.anchor_words, prepend=0)
        kind = bits
        if bool(np.all((steps >= 0) & (steps < 256))):
            kind |= _STEPS
            anchor_words = steps.astype(np.uint8).tobytes()
        else:
            word_type = "<u2" if self.words < 1 << 16 else "<u4"
            anchor_words = self.anchor_words.astype(word_type).tobytes()
        return b"".join(
            (
                _HEAD.pack(len(self.anchor_hashes), self.words | _HASHED, len(overflow)),
                _KIND.pack(kind),
                self.anchor_hashes.astype("<u4").tobytes(),
                anchor_words,
                _pack_bits(self.word_hashes, bits),
                _pack_nibbles(np.where(big_lens, _ESCAPE, lens)),
                np.packbits(odd, bitorder="little").tobytes(),
                _pack_nibbles(np.where(big_gaps, _ESCAPE, odd_gaps)),
                overflow.astype("<i4").tobytes(),
            )
        )

    @classmethod
    def _unpack_hashed(cls, raw: bytes) -> Layout:
        n_anchors, flagged, _ = _HEAD.unpack_from(raw)
        (kind,) = _KIND.unpack_from(raw, _HEAD.size)
        bits = kind & 0xFF
        if flagged & _FLAGS != _HASHED or bits not in WORD_BITS or kind & ~(0xFF | _STEPS):
            raise ValueError("not a passage layout of format 3")
        n_words = flagged & ~_FLAGS
        pos = _HEAD.size + _KIND.size
        hashes = np.frombuffer(raw, "<u4", n_anchors, pos)
        pos += 4 * n_anchors
        if kind & _STEPS:
            words = np.cumsum(np.frombuffer(raw, np.uint8, n_anchors, pos), dtype=np.int64)
            pos += n_anchors
        else:
            word_type = np.dtype("<u2" if n_words < 1 << 16 else "<u4")
            words = np.frombuffer(raw, word_type, n_anchors, pos).astype(np.int64)
            pos += word_type.itemsize * n_anchors
        word_hashes = _unpack_bits(raw, pos, n_words, bits)
        pos += (n_words * bits + 7) // 8
        return cls(hashes, words, word_hashes, spans=(-1, raw, pos), bits=bits)

    def _decode_hashed(self, raw: bytes, pos: int) -> None:
        n = len(self.word_hashes)
        half = (n + 1) // 2
        lens = _unpack_nibbles(np.frombuffer(raw, np.uint8, half, pos), n).astype(np.int64)
        pos += half
        flags = (n + 7) // 8
        odd = np.unpackbits(np.frombuffer(raw, np.uint8, flags, pos), count=n, bitorder="little")
        odd = odd.astype(bool)
        pos += flags
        n_odd = int(odd.sum())
        odd_gaps = _unpack_nibbles(
            np.frombuffer(raw, np.uint8, (n_odd + 1) // 2, pos), n_odd
        ).astype(np.int64)
        pos += (n_odd + 1) // 2
        big_gaps, big_lens = odd_gaps == _ESCAPE, lens == _ESCAPE
        n_big = int(big_gaps.sum()) + int(big_lens.sum())
        if len(raw) - pos < 4 * n_big:
            raise DamagedLayout("a passage layout's spans lack overflow values")
        overflow = np.frombuffer(raw, "<i4", n_big, pos).astype(np.int64)
        odd_gaps[big_gaps] = overflow[: int(big_gaps.sum())]
        lens[big_lens] = overflow[int(big_gaps.sum()) :]
        gaps = np.ones(n, np.int64)
        gaps[odd] = odd_gaps
        self._starts = np.cumsum(gaps + np.concatenate(([0], lens[:-1])))
        self._ends = self._starts + lens

    def _decode(self) -> None:
        assert self._spans is not None
        n_overflow, raw, pos = self._spans
        if n_overflow < 0:
            self._decode_hashed(raw, pos)
            return
        n = len(self.word_hashes)
        packed = np.frombuffer(raw, np.uint8, n, pos).astype(np.int64)
        pairs = np.stack([packed >> 4, packed & 15], 1)
        big = pairs == _ESCAPE
        if int(big.sum()) != n_overflow or len(raw) - pos - n < 4 * n_overflow:
            raise DamagedLayout("a passage layout's spans lack overflow values")
        if n_overflow:
            pairs[big] = np.frombuffer(raw, "<i4", n_overflow, pos + n).astype(np.int64)
        gaps, lens = pairs[:, 0], pairs[:, 1]
        self._starts = np.cumsum(gaps + np.concatenate(([0], lens[:-1])))
        self._ends = self._starts + lens


def is_kernel_format(raw: bytes) -> bool:
    """Whether a packed layout is format 1, which the kernel compacts (records.pack)."""
    return len(raw) >= _HEAD.size and not _HEAD.unpack_from(raw)[1] & _HASHED


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
            seen = self.anchors.setdefault(h, [])
            if len(seen) < REPEATS:
                seen.append(w)


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
    repeats: dict[int, int] = {}
    for h, si in zip(source.anchor_hashes.tolist(), source.anchor_words.tolist(), strict=True):
        if h not in query.anchors or (n := repeats.get(h, 0)) >= REPEATS:
            continue
        repeats[h] = n + 1
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
    return spans_of(kept, query.layout, source)


def spans_of(kept: Sequence[Sequence[int]], query: Layout, source: Layout) -> list[Passage]:
    """Passages of word ranges (query first, end, source first, end): each with the
    code-point spans of its words in both texts (both aligners end here)."""
    return [
        Passage(
            (qa, qb),
            (sa, sb),
            int(query.starts[qa]),
            int(query.ends[qb - 1]),
            int(source.starts[sa]),
            int(source.ends[sb - 1]),
        )
        for qa, qb, sa, sb in kept
    ]


def merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching [start, end) spans as one, in order."""
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def covered_runs(passages: Sequence[Passage], k: int) -> list[tuple[int, int]]:
    """The query shingles wholly inside one of the passages, as merged [first, end)
    ranges ascending: covered_shingles without an array as long as the query (a long
    query names thousands of sources)."""
    return merge([(a, b - k + 1) for a, b in (p.query_words for p in passages) if b - k + 1 > a])


def covered_shingles(passages: list[Passage], words: int, k: int) -> np.ndarray:
    """Which of a query's shingles lie wholly inside one of the passages (bool per shingle)."""
    n = max(1, words - k + 1)
    covered = np.zeros(n, dtype=bool)
    for p in passages:
        a, b = p.query_words
        covered[a : max(a, b - k + 1)] = True
    return covered


def _grouped(values: np.ndarray, counts: np.ndarray, per_byte: int) -> tuple[bytes, np.ndarray]:
    """Each group of values (counts of them, in order) packed from a byte boundary:
    per_byte 2 packs 4-bit values as _pack_nibbles, 8 packs bits as np.packbits
    (little); the buffer and each group's first byte (n + 1 offsets)."""
    padded = -(-counts // per_byte) * per_byte
    starts = np.concatenate(([0], np.cumsum(padded)))
    if int(starts[-1]) == len(values):  # no group needs padding
        spread = np.asarray(values, np.uint8)
    else:
        # Each value moves up by the padding of the groups before its own.
        shift = starts[:-1] - np.concatenate(([0], np.cumsum(counts)))[:-1]
        spread = np.zeros(int(starts[-1]), np.uint8)
        spread[np.arange(len(values)) + np.repeat(shift, counts)] = values
    if per_byte == 2:
        buf = ((spread[0::2] << 4) | spread[1::2]).astype(np.uint8).tobytes()
    else:
        buf = np.packbits(spread, bitorder="little").tobytes()
    return buf, starts // per_byte


def pack_batch(
    anchor_hashes: np.ndarray,
    anchor_starts: np.ndarray,
    anchor_offsets: np.ndarray,
    word_hashes: np.ndarray,
    word_starts: np.ndarray,
    word_ends: np.ndarray,
    word_offsets: np.ndarray,
    bits: int,
) -> list[bytes]:
    """Format 3 layouts of n texts at once, byte for byte what Layout.pack makes of
    each (the numpy reference of kernel.pack_layouts with bits, which ingest uses,
    tests/test_kernel_layouts.py): from their anchors (the
    passage shingle's winnowing: hashes, code-point starts) and words (hashes, spans),
    text i's entries offsets[i]:offsets[i + 1] of each, as kernel.winnow gives them.

    Numpy over the whole batch, then a join of slices per text: packing text by text
    cost about 60 us a text, twice what the rest of an ingest's sketch does."""
    if bits not in (8, 16):  # whole bytes a word; other widths pack text by text
        return _pack_each(
            anchor_hashes, anchor_starts, anchor_offsets,
            word_hashes, word_starts, word_ends, word_offsets, bits,
        )  # fmt: skip
    a_off = np.asarray(anchor_offsets, np.int64)
    w_off = np.asarray(word_offsets, np.int64)
    n = len(a_off) - 1
    a_count, w_count = np.diff(a_off), np.diff(w_off)
    ws, we = np.asarray(word_starts, np.int64), np.asarray(word_ends, np.int64)
    text_of_word = np.repeat(np.arange(n), w_count)
    text_of_anchor = np.repeat(np.arange(n), a_count)
    # Each anchor's word (the first whose start is at or after its own), in its text.
    big = np.int64(1 << 40)
    at = np.searchsorted(
        text_of_word * big + ws, text_of_anchor * big + np.asarray(anchor_starts, np.int64)
    )
    local = at - w_off[:-1][text_of_anchor]
    steps = np.diff(local, prepend=0)
    first_anchor = a_off[:-1][a_count > 0]
    steps[first_anchor] = local[first_anchor]
    bad = np.bincount(text_of_anchor, (steps < 0) | (steps > 255), minlength=n) > 0
    prev_end = np.concatenate(([0], we[:-1]))
    prev_end[w_off[:-1][w_count > 0]] = 0
    gaps, lens = ws - prev_end, we - ws
    odd = gaps != 1
    odd_gaps = gaps[odd]
    odd_count = np.bincount(text_of_word[odd], minlength=n)
    big_gap = _escaped(odd_gaps)
    big_len = _escaped(lens)
    gap_over = np.bincount(text_of_word[odd][big_gap], minlength=n)
    len_over = np.bincount(text_of_word[big_len], minlength=n)
    mask = (1 << bits) - 1
    hashes = (np.asarray(word_hashes, np.uint64) & np.uint64(mask)).astype(
        "<u1" if bits == 8 else "<u2"
    )
    width = 1 if bits == 8 else 2
    low = np.asarray(anchor_hashes, np.uint64) & np.uint64(0xFFFFFFFF)
    a_hash = low.astype("<u4").tobytes()
    a_steps = steps.astype(np.uint8).tobytes()
    h_buf = hashes.tobytes()
    len_buf, len_at = _grouped(np.where(big_len, _ESCAPE, lens), w_count, 2)
    odd_buf, odd_at = _grouped(odd.astype(np.uint8), w_count, 8)
    gap_buf, gap_at = _grouped(np.where(big_gap, _ESCAPE, odd_gaps), odd_count, 2)
    gap_vals = odd_gaps[big_gap].astype("<i4").tobytes()
    len_vals = lens[big_len].astype("<i4").tobytes()
    g_at = np.concatenate(([0], np.cumsum(gap_over))) * 4
    l_at = np.concatenate(([0], np.cumsum(len_over))) * 4
    out = []
    # Python lists: indexing numpy arrays one element at a time cost most of the loop.
    a_l, w_l, bad_l = a_off.tolist(), w_off.tolist(), bad.tolist()
    over_l = (gap_over + len_over).tolist()
    len_l, odd_l, gap_l = len_at.tolist(), odd_at.tolist(), gap_at.tolist()
    g_l, l_l = g_at.tolist(), l_at.tolist()
    kind = _KIND.pack(bits | _STEPS)
    for i in range(n):
        a0, a1, w0, w1 = a_l[i], a_l[i + 1], w_l[i], w_l[i + 1]
        if bad_l[i]:
            out += _pack_each(
                anchor_hashes, anchor_starts, a_off[i : i + 2],
                word_hashes, word_starts, word_ends, w_off[i : i + 2], bits,
            )  # fmt: skip
            continue
        out.append(
            b"".join(
                (
                    _HEAD.pack(a1 - a0, (w1 - w0) | _HASHED, over_l[i]),
                    kind,
                    a_hash[4 * a0 : 4 * a1],
                    a_steps[a0:a1],
                    h_buf[width * w0 : width * w1],
                    len_buf[len_l[i] : len_l[i + 1]],
                    odd_buf[odd_l[i] : odd_l[i + 1]],
                    gap_buf[gap_l[i] : gap_l[i + 1]],
                    gap_vals[g_l[i] : g_l[i + 1]],
                    len_vals[l_l[i] : l_l[i + 1]],
                )
            )
        )
    return out


def layouts_of(
    anchor_hashes: np.ndarray,
    anchor_starts: np.ndarray,
    anchor_offsets: np.ndarray,
    word_hashes: np.ndarray,
    word_starts: np.ndarray,
    word_ends: np.ndarray,
    word_offsets: np.ndarray,
    bits: int,
) -> list[Layout]:
    """Each text's Layout from its anchors and words (see pack_batch); bits 0: format 1
    (4-bit word hashes)."""
    mask = np.uint64((1 << (bits or 4)) - 1)
    dtype = np.uint16 if bits > 8 else np.uint8
    out = []
    for i in range(len(anchor_offsets) - 1):
        a = slice(int(anchor_offsets[i]), int(anchor_offsets[i + 1]))
        w = slice(int(word_offsets[i]), int(word_offsets[i + 1]))
        starts = np.asarray(word_starts[w], np.int64)
        out.append(
            Layout(
                (np.asarray(anchor_hashes[a], np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32),
                np.searchsorted(starts, np.asarray(anchor_starts[a], np.int64)).astype(np.int64),
                (np.asarray(word_hashes[w], np.uint64) & mask).astype(dtype),
                starts,
                np.asarray(word_ends[w], np.int64),
                bits=bits,
            )
        )
    return out


def _pack_each(
    anchor_hashes: np.ndarray,
    anchor_starts: np.ndarray,
    anchor_offsets: np.ndarray,
    word_hashes: np.ndarray,
    word_starts: np.ndarray,
    word_ends: np.ndarray,
    word_offsets: np.ndarray,
    bits: int,
) -> list[bytes]:
    """pack_batch text by text (Layout.pack of each)."""
    made = layouts_of(
        anchor_hashes, anchor_starts, anchor_offsets, word_hashes, word_starts, word_ends,
        word_offsets, bits,
    )  # fmt: skip
    return [lay.pack() for lay in made]
