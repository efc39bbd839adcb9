"""Passage layouts stored compact (the kernel's format 2): exact round trips of format 1
layouts (packed here in plain Python, as native/neardup.h describes them), and malformed
bytes refused. Kernel only (native/sanitize.sh runs it); records' use is in test_records."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from app import kernel


class Layout:
    """A format 1 passage layout, packed in plain Python (the reference for the kernel)."""

    def __init__(self, hashes, words, word_hashes, starts, ends) -> None:  # type: ignore[no-untyped-def]
        self.hashes, self.words = [int(x) for x in hashes], [int(x) for x in words]
        self.word_hashes = [int(x) for x in word_hashes]
        self.starts, self.ends = [int(x) for x in starts], [int(x) for x in ends]

    def pack(self) -> bytes:
        n = len(self.word_hashes)
        word_format = "<H" if n < 65536 else "<I"
        out = [struct.pack("<III", 0, 0, 0)]
        out += [struct.pack("<I", h) for h in self.hashes]
        out += [struct.pack(word_format, w) for w in self.words]
        nibbles = self.word_hashes + [0] * (n % 2)
        out.append(bytes(nibbles[i] << 4 | nibbles[i + 1] for i in range(0, n, 2)))
        overflow = []
        spans = bytearray()
        for i in range(n):
            gap = self.starts[i] - (self.ends[i - 1] if i else 0)
            length = self.ends[i] - self.starts[i]
            spans.append(min(gap, 15) << 4 | min(length, 15))
            overflow += [v for v in (gap, length) if v >= 15]
        out.append(bytes(spans))
        out += [struct.pack("<I", v) for v in overflow]
        out[0] = struct.pack("<III", len(self.hashes), n, len(overflow))
        return b"".join(out)


def _layout(rng: np.random.Generator, words: int, anchors: int, step: int = 28) -> Layout:
    """A layout with mostly one-space gaps, some wider ones, and a few overflowing ones."""
    gaps = np.where(rng.random(words) < 0.85, 1, rng.integers(0, 40, words))
    lens = np.where(
        rng.random(words) < 0.97, rng.integers(1, 15, words), rng.integers(15, 99, words)
    )
    starts = np.cumsum(gaps + np.concatenate(([0], lens[:-1])))
    at = np.sort(rng.choice(max(1, words), size=min(anchors, words), replace=False))
    if step > 255 and len(at) > 1:
        at[-1] = min(words - 1, at[-2] + step)
    return Layout(
        rng.integers(0, 2**32, len(at), dtype=np.uint64).astype(np.uint32),
        at.astype(np.int64),
        rng.integers(0, 16, words).astype(np.uint8),
        starts.astype(np.int64),
        (starts + lens).astype(np.int64),
    )


def _cases() -> list[Layout]:
    rng = np.random.default_rng(4)
    cases = [_layout(rng, w, a) for w, a in ((1, 1), (2, 0), (7, 3), (300, 24), (1000, 70))]
    cases += [_layout(rng, 400, 30, step=300), _layout(rng, 70_000, 40, step=5000)]
    return cases


def test_compact_layouts_expand_to_exactly_what_was_packed() -> None:
    """Every layout comes back byte for byte: narrow and wide anchor steps, overflowing gaps
    and lengths, one word, no anchors, and 70,000 words (u32 anchor words)."""
    for layout in _cases():
        raw = layout.pack()
        stored = kernel.compact_layout(raw)
        assert kernel.is_compact_layout(stored) or (stored == raw and len(raw) < 40)
        assert kernel.expand_layout(stored) == raw


def test_a_typical_layout_shrinks_and_a_larger_one_is_kept_as_is() -> None:
    """Mostly single spaces cost about 5/8 of a byte a word; where format 2 would not be
    smaller, the format 1 layout is stored unchanged (and reads as itself)."""
    raw = _layout(np.random.default_rng(5), 300, 24).pack()
    assert len(kernel.compact_layout(raw)) < len(raw) - 80
    starts = np.arange(0, 3 * 40, 3, dtype=np.int64)  # every gap 2: no gain
    wide = Layout(np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(40, np.uint8),
                  starts, starts + 1).pack()  # fmt: skip
    assert kernel.compact_layout(wide) == wide and kernel.expand_layout(wide) == wide


def test_malformed_layouts_are_refused_never_read_past() -> None:
    """Cut, lengthened and random compact layouts raise MalformedLayoutError or expand to a
    well-formed format 1 layout; a malformed format 1 layout cannot be compacted."""
    stored = kernel.compact_layout(_cases()[3].pack())
    for bad in (stored[:-1], stored[:12], stored + b"\0", stored[:13]):
        with pytest.raises(kernel.MalformedLayoutError):
            kernel.expand_layout(bad)
    rng = np.random.default_rng(6)
    for _ in range(2000):
        blob = bytearray(stored if rng.random() < 0.5 else rng.bytes(int(rng.integers(12, 200))))
        blob[int(rng.integers(len(blob)))] ^= 1 << int(rng.integers(8))
        blob[7] |= 0x80
        try:
            out = kernel.expand_layout(bytes(blob))
        except kernel.MalformedLayoutError:
            continue
        # well-formed format 1: it compacts (where smaller) and expands back
        assert kernel.expand_layout(kernel.compact_layout(out)) == out
    with pytest.raises(kernel.InvalidParameterError):
        kernel.compact_layout(_cases()[3].pack()[:-1])
