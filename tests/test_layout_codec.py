"""Passage layouts stored compact (the kernel's format 2): exact round trips to the layout
app.index.passages packs, and malformed bytes refused."""

from __future__ import annotations

import numpy as np
import pytest

from app import kernel
from app.index import records
from app.index.passages import Layout


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
    """Every layout comes back byte for byte, with the same words, spans and anchors."""
    for layout in _cases():
        raw = layout.pack()
        stored = kernel.compact_layout(raw)
        assert kernel.expand_layout(stored) == raw
        back = Layout.unpack(kernel.expand_layout(stored))
        assert np.array_equal(back.starts, layout.starts) and np.array_equal(back.ends, layout.ends)
        assert np.array_equal(back.anchor_words, layout.anchor_words)
        assert np.array_equal(back.word_hashes, layout.word_hashes)


def test_a_typical_layout_shrinks_and_a_larger_one_is_kept_as_is() -> None:
    """Mostly single spaces cost about 5/8 of a byte a word; where format 2 would not be
    smaller, the format 1 layout is stored unchanged (and reads as itself)."""
    raw = _layout(np.random.default_rng(5), 300, 24).pack()
    assert len(kernel.compact_layout(raw)) < len(raw) - 80
    starts = np.arange(0, 3 * 40, 3, dtype=np.int64)  # every gap 2: no gain
    wide = Layout(np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(40, np.uint8),
                  starts, starts + 1).pack()  # fmt: skip
    assert kernel.compact_layout(wide) == wide and kernel.expand_layout(wide) == wide


def test_records_store_the_compact_form_and_give_back_format_1() -> None:
    """A record keeps the smaller form; Record.passages is the layout as packed."""
    layout = _cases()[3].pack()
    fp, keys = np.arange(5, dtype=np.uint32), np.arange(3, dtype=np.uint64)
    raw = records.pack("x", fp, keys, 5, None, layout)
    assert records.sections_of(raw)["passages"] < len(layout) - 80
    assert records.unpack(raw).passages == layout


def test_malformed_layouts_are_refused_never_read_past() -> None:
    """Cut, lengthened and random compact layouts raise MalformedLayoutError or expand to a
    well-formed layout; a malformed format 1 layout cannot be compacted."""
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
        Layout.unpack(out).starts  # noqa: B018 - well-formed: it parses and decodes
    with pytest.raises(kernel.InvalidParameterError):
        kernel.compact_layout(_cases()[3].pack()[:-1])
    raw = records.pack("x", np.arange(3, dtype=np.uint32), np.arange(1, dtype=np.uint64), 3, None,
                       _cases()[3].pack())  # fmt: skip
    at = len(raw) - records.sections_of(raw)["passages"]
    broken = raw[:at] + raw[at : at + 12] + b"\xff" * (len(raw) - at - 12)
    with pytest.raises(records.CorruptRecordError):
        records.unpack(broken)
