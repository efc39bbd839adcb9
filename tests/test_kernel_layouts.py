"""nd_layout_pack_batch and nd_layout_pack3_batch (kernel.pack_layouts, formats 1 and 3)
against Layout.pack and passages.pack_batch, the numpy references."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app import kernel
from app.index.passages import Layout, pack_batch
from tests.support.corpus import read_corpus

ffi, lib = kernel.ffi, kernel.lib


def _numpy_layouts(anchors: kernel.Winnowed, words: kernel.Winnowed, bits: int = 0) -> list[bytes]:
    """Each text's layout packed by Layout.pack, built from the same arrays (as the index
    built them before the kernel packed them); bits 0: format 1, else format 3."""
    mask = np.uint64((1 << (bits or 4)) - 1)
    dtype = np.uint16 if bits > 8 else np.uint8
    out = []
    for i in range(len(anchors.offsets) - 1):
        a = slice(int(anchors.offsets[i]), int(anchors.offsets[i + 1]))
        w = slice(int(words.offsets[i]), int(words.offsets[i + 1]))
        starts = np.asarray(words.starts[w], np.int64)
        layout = Layout(
            (np.asarray(anchors.hashes[a], np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32),
            np.searchsorted(starts, np.asarray(anchors.starts[a], np.int64)).astype(np.int64),
            (np.asarray(words.hashes[w], np.uint64) & mask).astype(dtype),
            starts,
            np.asarray(words.ends[w], np.int64),
            bits=bits,
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


# --- format 3 (nd_layout_pack3_batch) --------------------------------------------------------

FORMAT3_BITS = range(4, 17)


def _batch(anchors: kernel.Winnowed, words: kernel.Winnowed, bits: int) -> list[bytes]:
    """passages.pack_batch (the numpy ingest path before the kernel packed format 3)."""
    a, w = anchors, words
    return pack_batch(a.hashes, a.starts, a.offsets, w.hashes, w.starts, w.ends, w.offsets, bits)


def _spans(words: list[tuple[int, int]], anchor_words: list[int]) -> tuple[kernel.Winnowed, ...]:
    """One text's arrays from its word spans and the words its anchors start at."""
    starts = np.array([a for a, _ in words], np.int64)
    ends = np.array([b for _, b in words], np.int64)
    hashes = np.arange(len(words), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    a_hashes = np.arange(len(anchor_words), dtype=np.uint64) * np.uint64(2654435761)
    return (
        kernel.Winnowed(a_hashes, starts[anchor_words], starts[anchor_words],
                        np.array([0, len(anchor_words)], np.uint64), 1),
        kernel.Winnowed(hashes, starts, ends, np.array([0, len(words)], np.uint64), 1),
    )  # fmt: skip


def test_the_kernel_packs_format_3_as_numpy_does() -> None:
    """Corpus articles, an empty text, one word, non-ASCII, long words and wide gaps
    (4-bit overflows) and a text of over 65,535 words, at every width of 4 to 16 bits:
    the kernel's bytes are pack_batch's and Layout.pack's, and unpack to the words' spans
    and hashes (their low bits)."""
    texts = [t for _, t in read_corpus()[:60]]
    texts += ["", "word", "Straße İstanbul été — naïve cafés " * 40]
    texts += ["x" * 40 + " " + "." * 300 + " y " * 20, "a " * 70_000, "two words"]
    anchors, words = _winnowed(texts)
    for bits in FORMAT3_BITS:
        got = kernel.pack_layouts(anchors, words, bits=bits)
        assert got == _batch(anchors, words, bits), bits
        assert got == _numpy_layouts(anchors, words, bits), bits
        for i, raw in enumerate(got):
            lay = Layout.unpack(raw)
            w = slice(int(words.offsets[i]), int(words.offsets[i + 1]))
            assert lay.bits == bits
            assert lay.starts.tolist() == words.starts[w].tolist()
            assert lay.ends.tolist() == words.ends[w].tolist()
            want = words.hashes[w] & np.uint64((1 << bits) - 1)
            assert lay.word_hashes.tolist() == want.tolist()
    assert Layout.unpack(kernel.pack_layouts(anchors, words, bits=8)[-2]).words == 70_000


@pytest.mark.parametrize("n_words", [600, 70_000])
def test_format_3_anchors_far_apart_keep_whole_words(n_words: int) -> None:
    """Anchors 256 or more words apart (no one-byte steps: u16 words, or u32 in a text of
    65,536 words or more) and one step of exactly 255 pack as numpy packs them."""
    spans = [(3 * i, 3 * i + 2) for i in range(n_words)]
    for anchor_words in ([0, 255, 510], [0, 500], [300], [2, 1]):
        anchors, words = _spans(spans, anchor_words)
        for bits in (4, 8, 11, 16):
            got = kernel.pack_layouts(anchors, words, bits=bits)
            assert got == _numpy_layouts(anchors, words, bits) == _batch(anchors, words, bits)
            assert Layout.unpack(got[0]).anchor_words.tolist() == anchor_words


def test_format_3_overflows_in_order() -> None:
    """Gaps and lengths of 15 or more (and of exactly 14 and 15) go to the overflow list,
    every gap before every length, as numpy packs them; a first word at 0 has gap 0."""
    spans, at = [], 0
    for gap, length in ((0, 14), (15, 15), (1, 3), (14, 1), (100_000, 2), (1, 70_000), (2, 1)):
        spans.append((at + gap, at + gap + length))
        at += gap + length
    anchors, words = _spans(spans, [0, 3])
    for bits in FORMAT3_BITS:
        got = kernel.pack_layouts(anchors, words, bits=bits)
        assert got == _numpy_layouts(anchors, words, bits) == _batch(anchors, words, bits)
        lay = Layout.unpack(got[0])
        assert list(zip(lay.starts.tolist(), lay.ends.tolist(), strict=True)) == spans


def test_any_spans_pack_in_format_3_as_numpy_does() -> None:
    """Random arrays no text could make (negative gaps and lengths, values past 32 bits,
    anchors out of order, empty texts among full ones): Layout.pack's bytes at every width."""
    rng = np.random.default_rng(7)
    for lo, hi in ((0, 40), (-(2**40), 2**40), (0, 2**33), (0, 5000)):
        a_offsets = [0, 0, 7, 7, 30, 31, 60]
        w_offsets = [0, 3, 3, 50, 51, 400, 1400]
        anchors = _arrays(a_offsets, rng, lo, hi)
        words = _arrays(w_offsets, rng, lo, hi)
        for bits in FORMAT3_BITS:
            assert kernel.pack_layouts(anchors, words, bits=bits) == _numpy_layouts(
                anchors, words, bits
            ), (lo, hi, bits)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(4, 16))
def test_format_3_of_arbitrary_bytes(raw: bytes, bits: int) -> None:
    """Any bytes (decoded with replacements) winnowed and packed in format 3: numpy's bytes."""
    text = raw.decode("utf-8", "replace")
    anchors, words = _winnowed([text, text[::-1]])
    got = kernel.pack_layouts(anchors, words, bits=bits)
    assert got == _numpy_layouts(anchors, words, bits) == _batch(anchors, words, bits)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600), st.integers(0, 40), st.integers(0, 40))
def test_format_3_of_random_arrays_never_crashes(raw: bytes, n_a: int, n_w: int) -> None:
    """Random bytes read as the arrays and offsets (in or out of range): packed as numpy
    packs them, or refused with InvalidParameterError, never a crash."""
    buf = (raw * (1 + 800 // max(1, len(raw))))[:800] if raw else bytes(800)
    vals = np.frombuffer(buf, np.int64)  # 100 values
    a_offs = np.sort(np.frombuffer(buf[:24], np.uint8).astype(np.uint64) % (n_a + 2))
    w_offs = np.sort(np.frombuffer(buf[24:48], np.uint8).astype(np.uint64) % (n_w + 2))
    a_offs[0] = w_offs[0] = 0
    anchors = kernel.Winnowed(
        vals[:n_a].view(np.uint64), np.sort(vals[40 : 40 + n_a] % 200), vals[:n_a], a_offs, 1
    )
    w_starts = np.sort(vals[50 : 50 + n_w] % 300)
    words = kernel.Winnowed(
        vals[:n_w].view(np.uint64), w_starts, w_starts + vals[10 : 10 + n_w] % 20, w_offs, 1
    )
    if int(a_offs[-1]) > n_a or int(w_offs[-1]) > n_w:
        with pytest.raises(kernel.InvalidParameterError):
            kernel.pack_layouts(anchors, words, bits=8)
        return
    bits = 4 + raw[0] % 13 if raw else 8
    got = kernel.pack_layouts(anchors, words, bits=bits)
    assert got == _numpy_layouts(anchors, words, bits)


def test_format_3_bad_arguments_are_refused_without_a_crash() -> None:
    """Widths outside 4 to 16, decreasing or overrunning offsets, null pointers and a
    short output get an error code (InvalidParameterError), never a crash."""
    anchors, words = _winnowed(["one two three four five", "six seven"])
    for bits in (1, 3, 17, 64, -1):
        with pytest.raises(kernel.InvalidParameterError, match="4 to 16"):
            kernel.pack_layouts(anchors, words, bits=bits)
    for bad in ([0, 9, 2], [0, 2, 999]):
        broken = kernel.Winnowed(
            anchors.hashes, anchors.starts, anchors.ends, np.array(bad, np.uint64), 1
        )
        with pytest.raises(kernel.InvalidParameterError):
            kernel.pack_layouts(broken, words, bits=8)
    null = ffi.NULL
    offs = np.array([0, 5], np.uint64)
    out_offsets = np.zeros(2, np.uint64)
    out_p = ffi.from_buffer("uint64_t[]", out_offsets, require_writable=True)
    offs_p = ffi.from_buffer("uint64_t[]", offs)
    args = (null, null, 0, offs_p, null, null, null, 5, offs_p, 1)
    pack3 = lib.nd_layout_pack3_batch
    assert pack3(*args, 8, null, 0, out_p) == lib.ND_E_ARG  # words: null
    assert pack3(*args[:9], 0, 8, null, 0, null) == lib.ND_E_ARG
    assert pack3(*args[:9], 0, 8, null, 0, out_p) == lib.ND_OK  # no texts
    for bits in (0, 3, 17, 2**31):
        assert pack3(*args[:9], 0, bits, null, 0, out_p) == lib.ND_E_ARG
    w = words
    arrays = (
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
        8,
    )
    offsets = np.zeros(3, np.uint64)
    offsets_p = ffi.from_buffer("uint64_t[]", offsets, require_writable=True)
    for size in (0, 8, 40):  # under ND_LAYOUT3_MAX of the first text
        small = np.zeros(size, np.uint8)
        small_p = ffi.from_buffer("uint8_t[]", small, require_writable=True)
        assert pack3(*arrays, small_p, size, offsets_p) == lib.ND_E_SPACE
    assert pack3(*arrays, null, 1000, offsets_p) == lib.ND_E_SPACE
    room = np.zeros(1000, np.uint8)
    room_p = ffi.from_buffer("uint8_t[]", room, require_writable=True)
    assert pack3(*arrays, room_p, len(room), offsets_p) == lib.ND_OK
    ends = offsets.tolist()
    assert [room[a:b].tobytes() for a, b in pairwise(ends)] == kernel.pack_layouts(
        anchors, words, bits=8
    )
