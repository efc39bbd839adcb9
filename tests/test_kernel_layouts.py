"""nd_layout_pack_batch (kernel.pack_layouts) against Layout.pack, the numpy reference."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from app import kernel
from app.index.passages import Layout
from tests.support.corpus import read_corpus

ffi, lib = kernel.ffi, kernel.lib


def _numpy_layouts(anchors: kernel.Winnowed, words: kernel.Winnowed) -> list[bytes]:
    """Each text's layout packed by Layout.pack, built from the same arrays (as the index
    built them before the kernel packed them)."""
    out = []
    for i in range(len(anchors.offsets) - 1):
        a = slice(int(anchors.offsets[i]), int(anchors.offsets[i + 1]))
        w = slice(int(words.offsets[i]), int(words.offsets[i + 1]))
        starts = np.asarray(words.starts[w], np.int64)
        layout = Layout(
            (np.asarray(anchors.hashes[a], np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32),
            np.searchsorted(starts, np.asarray(anchors.starts[a], np.int64)).astype(np.int64),
            (np.asarray(words.hashes[w], np.uint64) & np.uint64(15)).astype(np.uint8),
            starts,
            np.asarray(words.ends[w], np.int64),
        )
        out.append(layout.pack())
    return out


def _winnowed(texts: list[str]) -> tuple[kernel.Winnowed, kernel.Winnowed]:
    anchors = kernel.winnow(texts, shingle="word:3", passage_words=30, seed=1)
    words = kernel.winnow(texts, shingle="word:1", passage_words=1, seed=1)
    return anchors, words


def _arrays(offsets: list[int], rng: np.random.Generator, lo: int, hi: int) -> kernel.Winnowed:
    """Winnowed-shaped arrays that no text made: random hashes and spans (starts ascending
    within a text, ends anywhere in [lo, hi))."""
    total = offsets[-1]
    starts = np.zeros(total, np.int64)
    for a, b in pairwise(offsets):
        starts[a:b] = np.sort(rng.integers(lo, hi, b - a))
    return kernel.Winnowed(
        rng.integers(0, 2**64, total, dtype=np.uint64),
        starts,
        rng.integers(lo, hi, total, dtype=np.int64),
        np.array(offsets, np.uint64),
        1,
    )


def test_the_kernel_packs_texts_as_numpy_does() -> None:
    """Corpus articles, an empty text, one word, non-ASCII, long words and wide gaps
    (overflows), and a text of over 65,536 words (wide word indexes): the same bytes."""
    texts = [t for _, t in read_corpus()[:60]]
    texts += ["", "word", "Straße İstanbul été — naïve cafés " * 40]
    texts += ["x" * 40 + " " + "." * 300 + " y " * 20, "a " * 70_000]
    anchors, words = _winnowed(texts)
    got = kernel.pack_layouts(anchors, words)
    assert got == _numpy_layouts(anchors, words)
    assert Layout.unpack(got[-1]).words == 70_000


def test_any_spans_pack_as_numpy_does() -> None:
    """Arrays no text could make (negative gaps and lengths, values past 32 bits, empty
    texts among full ones) still pack to numpy's bytes, as the int64 arithmetic wraps."""
    rng = np.random.default_rng(5)
    for lo, hi in ((0, 40), (-(2**40), 2**40), (0, 2**33)):
        a_offsets = [0, 0, 7, 7, 30, 31]
        w_offsets = [0, 3, 3, 50, 51, 400]
        anchors = _arrays(a_offsets, rng, lo, hi)
        words = _arrays(w_offsets, rng, lo, hi)
        assert kernel.pack_layouts(anchors, words) == _numpy_layouts(anchors, words)


def test_bad_arguments_are_refused_without_a_crash() -> None:
    """Offsets that decrease or run past the arrays, texts that differ in number, null
    pointers and a short output get an error code (InvalidParameterError), never a crash."""
    anchors, words = _winnowed(["one two three four five", "six seven"])
    for bad in ([0, 9, 2], [0, 2, 999]):
        broken = kernel.Winnowed(
            anchors.hashes, anchors.starts, anchors.ends, np.array(bad, np.uint64), 1
        )
        with pytest.raises(kernel.InvalidParameterError):
            kernel.pack_layouts(broken, words)
    with pytest.raises(kernel.InvalidParameterError):
        kernel.pack_layouts(anchors, _winnowed(["one"])[1])
    null = ffi.NULL
    offs = np.array([0, 5], np.uint64)
    out_offsets = np.zeros(2, np.uint64)
    out_p = ffi.from_buffer("uint64_t[]", out_offsets, require_writable=True)
    offs_p = ffi.from_buffer("uint64_t[]", offs)
    args = (null, null, 0, offs_p, null, null, null, 5, offs_p, 1)
    assert lib.nd_layout_pack_batch(*args, null, 0, out_p) == lib.ND_E_ARG  # words: null
    assert lib.nd_layout_pack_batch(*args[:9], 0, null, 0, null) == lib.ND_E_ARG
    assert lib.nd_layout_pack_batch(*args[:9], 0, null, 0, out_p) == lib.ND_OK  # no texts
    w = words
    small = np.zeros(8, np.uint8)
    rc = lib.nd_layout_pack_batch(
        ffi.from_buffer("uint64_t[]", anchors.hashes),
        ffi.from_buffer("int64_t[]", anchors.starts),
        len(anchors.hashes),
        ffi.from_buffer("uint64_t[]", anchors.offsets),
        ffi.from_buffer("uint64_t[]", w.hashes),
        ffi.from_buffer("int64_t[]", w.starts),
        ffi.from_buffer("int64_t[]", w.ends),
        len(w.hashes),
        ffi.from_buffer("uint64_t[]", w.offsets),
        2,
        ffi.from_buffer("uint8_t[]", small, require_writable=True),
        len(small),
        ffi.from_buffer("uint64_t[]", np.zeros(3, np.uint64), require_writable=True),
    )
    assert rc == lib.ND_E_SPACE
