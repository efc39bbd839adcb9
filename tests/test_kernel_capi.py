"""The C API itself (through app.kernel's cffi handles): ABI version, status codes, arguments."""

from __future__ import annotations

import numpy as np
import pytest

from app import kernel

ffi, lib = kernel.ffi, kernel.lib
TEXTS = [
    b"The quick brown fox jumps over the lazy dog, again and again.",
    b"",
    "Stra\u00dfe \u0130stanbul \u00e9t\u00e9 \u2014 na\u00efve caf\u00e9s ".encode() * 9,
    b"one",
    b"word " * 400,
]


def _pack(texts: list[bytes]) -> tuple[bytes, np.ndarray]:
    offsets = np.zeros(len(texts) + 1, dtype=np.uint64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return b"".join(texts), offsets


def _packed(texts: list[bytes], fp_size: int, num_perm: int = 64, kind: int = 0, k: int = 3):
    data, offsets = _pack(texts)
    n = len(texts)
    sigs = np.zeros((n, num_perm), np.uint32)
    values = np.zeros(n * fp_size, np.uint32)
    fp_offsets = np.zeros(n + 1, np.uint64)
    shingles = np.zeros(n, np.uint64)
    status = np.zeros(n, np.int32)
    rc = lib.nd_sketch_batch_packed(
        data, ffi.from_buffer("uint64_t[]", offsets), n, kind, 1, k, num_perm, fp_size, 9, 0,
        ffi.from_buffer("uint32_t[]", sigs), ffi.from_buffer("uint32_t[]", values), n * fp_size,
        ffi.from_buffer("uint64_t[]", fp_offsets), ffi.from_buffer("uint64_t[]", shingles),
        ffi.from_buffer("int32_t[]", status),
    )  # fmt: skip
    return rc, sigs, values, fp_offsets, shingles, status


def test_abi_version_is_the_one_kernel_py_expects() -> None:
    """The loaded extension reports the ABI version app.kernel was written for, twice over."""
    assert lib.nd_abi_version() == lib.ND_ABI_VERSION == kernel.ABI_VERSION


def test_a_mismatched_extension_is_refused() -> None:
    """_check_abi raises ImportError for another ABI version or an unversioned build."""

    class Other:
        ND_ABI_VERSION = kernel.ABI_VERSION + 1

        def nd_abi_version(self) -> int:
            return kernel.ABI_VERSION + 1

    class Unversioned:
        pass

    for native in (Other(), Unversioned()):
        with pytest.raises(ImportError, match="rebuild the extension"):
            kernel._check_abi(native)
    kernel._check_abi(lib)


def test_status_codes_are_stable() -> None:
    """The nd_status values are the ones existing callers and stored statuses know."""
    assert (lib.ND_OK, lib.ND_E_UTF8, lib.ND_E_ARG, lib.ND_E_NOMEM, lib.ND_E_SPACE) == (
        0, -1, -2, -3, -4,
    )  # fmt: skip
    assert (lib.ND_SHINGLE_WORD, lib.ND_SHINGLE_CHAR) == (0, 1)


def test_per_text_status_and_outputs_of_a_bad_text() -> None:
    """An invalid text gets ND_E_UTF8 in its status, empty outputs; the others are sketched."""
    rc, sigs, _, fp_offsets, shingles, status = _packed(
        [b"good text here", b"bad \xff text", b"ok"], 8
    )
    assert rc == lib.ND_OK
    assert status.tolist() == [lib.ND_OK, lib.ND_E_UTF8, lib.ND_OK]
    assert shingles.tolist()[1] == 0 and fp_offsets[2] == fp_offsets[1]
    assert np.all(sigs[1] == 0xFFFFFFFF)
    assert shingles.tolist()[0] == 1 and shingles.tolist()[2] == 1


def test_packed_call_equals_sketch() -> None:
    """kernel.sketch is the C call with the same parameters, for both shingle kinds."""
    for kind, spec in ((0, "word:3"), (1, "char:4")):
        k = int(spec.split(":")[1])
        rc, sigs, values, fp_offsets, shingles, status = _packed(TEXTS, 16, kind=kind, k=k)
        assert rc == lib.ND_OK and not status.any()
        s = kernel.sketch(TEXTS, shingle=spec, num_perm=64, fingerprint_size=16, seed=9)
        assert np.array_equal(sigs, s.signatures) and np.array_equal(shingles, s.shingles)
        assert np.array_equal(fp_offsets, s.fp_offsets)
        assert np.array_equal(values[: int(fp_offsets[-1])], s.fp_values)


def test_argument_errors() -> None:
    """Out-of-range parameters give ND_E_ARG; NULL outputs are refused, never written."""
    data, offsets = _pack([b"a b c"])
    off = ffi.from_buffer("uint64_t[]", offsets)
    sig = np.zeros(8, np.uint32)
    vals = np.zeros(8, np.uint32)
    fpo = np.zeros(2, np.uint64)
    sh = np.zeros(1, np.uint64)
    st = np.zeros(1, np.int32)
    out = (
        ffi.from_buffer("uint32_t[]", sig), ffi.from_buffer("uint32_t[]", vals), 8,
        ffi.from_buffer("uint64_t[]", fpo), ffi.from_buffer("uint64_t[]", sh),
        ffi.from_buffer("int32_t[]", st),
    )  # fmt: skip
    for kind, k, num_perm, fp_size in [(2, 3, 8, 8), (0, 0, 8, 8), (0, 17, 8, 8), (0, 3, 0, 8),
                                       (0, 3, 1025, 8), (0, 3, 8, 0), (0, 3, 8, 4097)]:  # fmt: skip
        rc = lib.nd_sketch_batch_packed(data, off, 1, kind, 1, k, num_perm, fp_size, 1, 0, *out)
        assert rc == lib.ND_E_ARG
    rc = lib.nd_sketch_batch_packed(data, off, 1, 0, 1, 3, 8, 8, 1, 0, ffi.NULL, *out[1:])
    assert rc == lib.ND_E_ARG
    rc = lib.nd_sketch_batch_packed(
        data, off, 1, 0, 1, 3, 8, 8, 1, 0, out[0], ffi.NULL, 8, *out[3:]
    )
    assert rc == lib.ND_E_ARG
    bad = np.array([5, 0], np.uint64)  # decreasing offsets
    rc = lib.nd_sketch_batch_packed(
        data, ffi.from_buffer("uint64_t[]", bad), 1, 0, 1, 3, 8, 8, 1, 0, *out
    )
    assert rc == lib.ND_E_ARG
    assert st[0] == 0 and not sig.any()
    sigs = np.zeros((1, 8), np.uint32)
    keys = np.zeros(4, np.uint64)
    assert (
        lib.nd_band_keys(
            ffi.from_buffer("uint32_t[]", sigs), 1, 8, 3, 3, ffi.from_buffer("uint64_t[]", keys)
        )
        == lib.ND_E_ARG
    )
    res = np.full(1, 7.0, np.float64)
    empty = ffi.from_buffer("uint64_t[]", np.zeros(2, np.uint64))
    out_res = ffi.from_buffer("double[]", res)
    assert lib.nd_jaccard_many(ffi.NULL, 0, ffi.NULL, empty, 1, 0, 0.0, 0, out_res) == (
        lib.ND_E_ARG
    )
    assert lib.nd_jaccard_many(ffi.NULL, 0, ffi.NULL, empty, 1, 8, float("nan"), 0, out_res) == (
        lib.ND_E_ARG
    )
    assert res[0] == 7.0
    assert lib.nd_jaccard_many(ffi.NULL, 0, ffi.NULL, empty, 1, 8, 0.0, 0, out_res) == lib.ND_OK
    assert res[0] == 0.0  # two empty fingerprints


def test_packed_output_too_small() -> None:
    """The packed entry point reports ND_E_SPACE instead of writing past fp_cap."""
    data, offsets = _pack([b"a b c d e f g", b"h i j k l m n"])
    sigs = np.zeros((2, 8), np.uint32)
    values = np.full(6, 7, np.uint32)  # room for 4 + a guard
    fp_offsets = np.zeros(3, np.uint64)
    sh = np.zeros(2, np.uint64)
    st = np.zeros(2, np.int32)
    rc = lib.nd_sketch_batch_packed(
        data, ffi.from_buffer("uint64_t[]", offsets), 2, 0, 1, 3, 8, 4, 1, 0,
        ffi.from_buffer("uint32_t[]", sigs), ffi.from_buffer("uint32_t[]", values), 5,
        ffi.from_buffer("uint64_t[]", fp_offsets), ffi.from_buffer("uint64_t[]", sh),
        ffi.from_buffer("int32_t[]", st),
    )  # fmt: skip
    assert rc == lib.ND_E_SPACE
    assert st.tolist() == [lib.ND_OK, lib.ND_E_SPACE]
    assert fp_offsets[1] == 4 and values[5] == 7


def test_normalize_output_space() -> None:
    """nd_normalize refuses an output buffer that is too small rather than overflowing it."""
    text = "Stra\u00dfe \u0390\u0390\u0390".encode()
    need = len(kernel.normalize(text).encode())
    out = ffi.new("uint8_t[]", need + 8)
    out_len = ffi.new("size_t *")
    assert lib.nd_normalize(text, len(text), 1, out, need, out_len) == lib.ND_OK
    assert out_len[0] == need
    assert lib.nd_normalize(text, len(text), 1, out, need - 1, out_len) == lib.ND_E_SPACE
    worst = "\u0390\u1ff7" * 50  # 2 -> 6 and 3 -> 6 bytes: within the documented 3x bound
    raw = worst.encode()
    big = ffi.new("uint8_t[]", 3 * len(raw) + 1)
    assert lib.nd_normalize(raw, len(raw), 1, big, 3 * len(raw) + 1, out_len) == lib.ND_OK
    folded = "".join(ch if ch.isalnum() else " " for ch in worst.casefold())
    assert bytes(ffi.buffer(big, out_len[0])).decode() == " ".join(folded.split())


@pytest.mark.skipif(
    "LD_PRELOAD" in __import__("os").environ, reason="malloc is interposed (sanitizer run)"
)
def test_tune_allocator_on_glibc() -> None:
    """tune_allocator() takes effect where the C library is glibc (mallopt accepts it)."""
    import platform

    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert kernel.tune_allocator() is expected


def _winnow(texts: list[bytes], cap: int, window: int = 4, kind: int = 0, k: int = 3):
    data, offsets = _pack(texts)
    n = len(texts)
    hashes = np.full(cap + 1, 7, np.uint64)  # one guard entry past cap
    starts = np.full(cap + 1, -7, np.int64)
    ends = np.full(cap + 1, -7, np.int64)
    sel_offsets = np.full(n + 1, 99, np.uint64)
    status = np.full(n, 99, np.int32)
    rc = lib.nd_winnow_batch(
        data, ffi.from_buffer("uint64_t[]", offsets), n, kind, 1, k, window, 9, 0,
        ffi.from_buffer("uint64_t[]", hashes), ffi.from_buffer("int64_t[]", starts),
        ffi.from_buffer("int64_t[]", ends), cap, ffi.from_buffer("uint64_t[]", sel_offsets),
        ffi.from_buffer("int32_t[]", status), ffi.NULL,
    )  # fmt: skip
    return rc, hashes, starts, ends, sel_offsets, status


def test_winnow_call_equals_winnow() -> None:
    """kernel.winnow is the C call with window passage_words - K + 1 and the same seed."""
    rc, hashes, starts, ends, sel_offsets, status = _winnow(TEXTS, 2000)
    assert rc == lib.ND_OK and not status.any()
    w = kernel.winnow(TEXTS, passage_words=6, seed=9)
    used = int(sel_offsets[-1])
    assert np.array_equal(sel_offsets, w.offsets)
    assert np.array_equal(hashes[:used], w.hashes) and np.array_equal(starts[:used], w.starts)
    assert np.array_equal(ends[:used], w.ends)


def test_winnow_output_too_small() -> None:
    """Out of room, the call reports ND_E_SPACE for that text and the rest, writes nothing
    past cap, and leaves the offsets of the texts that fitted usable."""
    full = _winnow(TEXTS, 2000)
    need = full[4].tolist()
    cap = need[5] - 1  # the last text's selections do not all fit
    rc, hashes, starts, ends, sel_offsets, status = _winnow(TEXTS, cap)
    assert rc == lib.ND_E_SPACE
    assert status.tolist() == [lib.ND_OK] * 4 + [lib.ND_E_SPACE]
    assert sel_offsets.tolist() == [*need[:5], need[4]]
    assert hashes[cap] == 7 and starts[cap] == -7 and ends[cap] == -7
    assert np.array_equal(hashes[: need[4]], full[1][: need[4]])
    rc, *_, sel_offsets, status = _winnow(TEXTS, 0)
    assert rc == lib.ND_E_SPACE and status.tolist() == [lib.ND_E_SPACE] * 5
    assert not sel_offsets.any()


def test_winnow_bad_text_selects_nothing() -> None:
    """A text that is not UTF-8 gets ND_E_UTF8 and no selections; the others are winnowed."""
    texts = [b"one two three four", b"bad \xff text here and more", b"five six seven eight"]
    rc, hashes, _, _, sel_offsets, status = _winnow(texts, 100)
    assert rc == lib.ND_OK
    assert status.tolist() == [lib.ND_OK, lib.ND_E_UTF8, lib.ND_OK]
    assert sel_offsets[2] == sel_offsets[1] > 0 and sel_offsets[3] > sel_offsets[2]
    good = _winnow([texts[0], texts[2]], 100)
    assert np.array_equal(hashes[: int(sel_offsets[3])], good[1][: int(good[4][2])])


def test_winnow_argument_errors() -> None:
    """Bad kind, K, window or NULL buffers give ND_E_ARG and write no output."""
    data, offsets = _pack([b"a b c d"])
    off = ffi.from_buffer("uint64_t[]", offsets)
    h = np.zeros(4, np.uint64)
    se = np.zeros(4, np.int64)
    so = np.full(2, 5, np.uint64)
    st = np.full(1, 5, np.int32)
    bufs = [ffi.from_buffer("uint64_t[]", h), ffi.from_buffer("int64_t[]", se),
            ffi.from_buffer("int64_t[]", se)]  # fmt: skip
    tail = (ffi.from_buffer("uint64_t[]", so), ffi.from_buffer("int32_t[]", st))
    for kind, k, window in [(2, 3, 4), (0, 0, 4), (0, 17, 4), (0, 3, 0), (1, 3, 65537)]:
        assert lib.nd_winnow_batch(
            data, off, 1, kind, 1, k, window, 1, 0, *bufs, 4, *tail, ffi.NULL
        ) == (lib.ND_E_ARG)
    for i in range(3):
        nulled = [ffi.NULL if j == i else b for j, b in enumerate(bufs)]
        assert (
            lib.nd_winnow_batch(data, off, 1, 0, 1, 3, 4, 1, 0, *nulled, 4, *tail, ffi.NULL)
            == lib.ND_E_ARG
        )
    assert lib.nd_winnow_batch(
        data, off, 1, 0, 1, 3, 4, 1, 0, *bufs, 4, ffi.NULL, tail[1], ffi.NULL
    ) == (lib.ND_E_ARG)
    bad = ffi.from_buffer("uint64_t[]", np.array([5, 0], np.uint64))
    assert (
        lib.nd_winnow_batch(data, bad, 1, 0, 1, 3, 4, 1, 0, *bufs, 4, *tail, ffi.NULL)
        == lib.ND_E_ARG
    )
    assert st[0] == 5 and not h.any()
    assert (
        lib.nd_winnow_batch(data, off, 0, 0, 1, 3, 4, 1, 0, *bufs, 4, *tail, ffi.NULL) == lib.ND_OK
    )
    assert so[0] == 0
