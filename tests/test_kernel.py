"""The C kernel (through app.kernel) against the plain-Python oracle of the shingling contract."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from support import oracle
from support.corpus import read_corpus, read_truth

from app import kernel

CORPUS = read_corpus()

TRICKY = [
    "ß",
    "ẞ",
    "ﬁ",
    "ﬀ",
    "ﬃ",
    "İ",
    "\u0131",
    "ΐ",
    "ŉ",
    "ǰ",
    "Σ",
    "ς",
    "ΣΑΣ",
    "e\u0301",
    "\u0345",
    "Ǆ",
    "ǅ",
    "ﬓ",
    "ᾼ",
    "Å",
    "K",
    "Ω",
    "👍🏽",
    "🇫🇷",
    "👨‍👩‍👧",
    "٣",
    "Ⅻ",
    "½",
    "²",
    "①",
    "\u200d",
    "\u00a0",
    "\u3000",
    "中文",
    "日本語",
    "한국어",
    "ঔ",
    "ก",
    "Straße",
    "İstanbul",
    "\U0001d518\U0001d52b\U0001d526",
    "\u13a0",
    "\uab70",
    "\u0130\u0130",
    "x\u0307",
    "a1b2",
    "ⓐ",
    "Ⓐ",
    "\U000e0041",
]
VOCAB = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "Über", "ÉTÉ"]
SEPARATORS = [" ", "  ", "\n", ", ", "-", "\t", "…", "\u00a0", "_", "'", ".", "", "\u2028"]

word_parts = st.one_of(
    st.sampled_from(VOCAB),
    st.sampled_from(TRICKY),
    st.text(min_size=1, max_size=12),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789", min_size=1, max_size=40),
)
texts = st.one_of(
    st.lists(st.tuples(word_parts, st.sampled_from(SEPARATORS)), max_size=60).map(
        lambda parts: "".join(w + s for w, s in parts)
    ),
    st.text(),
    st.sampled_from(["", " ", "\n\t  ", "...", "word", "one two", "\u3000\u3000"]),
)
SPECS = ["word:1", "word:2", "word:3", "word:4", "word:5", "char:3", "char:4", "char:5"]


def _fp_equal(x: kernel.Sketch, y: kernel.Sketch) -> bool:
    return np.array_equal(x.fp_values, y.fp_values) and np.array_equal(x.fp_offsets, y.fp_offsets)


# --- tokenizer --------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(texts)
@example("")
@example("Straße ﬁne İstanbul ΐ ŉ ΣΑΣ")
@example("e\u0301 \u0345 👍🏽 ٣ Ⅻ")
def test_normalize_matches_oracle(text: str) -> None:
    """normalize() is the oracle's words joined by spaces, on any Unicode text."""
    assert kernel.normalize(text) == oracle.normalized(text)
    assert kernel.normalize(text.encode("utf-8")) == oracle.normalized(text)


def test_unicode_tables_match_this_python() -> None:
    """The generated tables come from the Unicode version this Python implements."""
    assert kernel.unicode_version() == unicodedata.unidata_version


@pytest.mark.parametrize("joiner", [" ", "", "a", "\u0345"])
def test_normalize_every_code_point(joiner: str) -> None:
    """Every code point (no surrogates), alone and next to its neighbours, folds like Python."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(cps), 1 << 18):
        text = joiner.join(chr(c) for c in cps[start : start + (1 << 18)])
        assert kernel.normalize(text) == oracle.normalized(text)


# --- shingles and fingerprints ----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=6))
def test_shingle_counts_match_oracle(batch: list[str]) -> None:
    """The distinct shingle count equals the size of the oracle's shingle set for every spec."""
    for spec in SPECS:
        s = kernel.sketch(batch, shingle=spec)
        assert s.shingles.tolist() == [len(oracle.shingles(t, spec)) for t in batch], spec


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=6), st.sampled_from([1, 2, 5, 64, 256]))
def test_fingerprint_shape(batch: list[str], fp_size: int) -> None:
    """Fingerprints are sorted, distinct, and hold min(N, shingles) values."""
    for spec in ("word:3", "char:4"):
        s = kernel.sketch(batch, shingle=spec, fingerprint_size=fp_size)
        assert len(s.fingerprints) == len(batch)
        for fp, count in zip(s.fingerprints, s.shingles.tolist(), strict=True):
            assert fp.dtype == np.uint32
            assert np.all(np.diff(fp.astype(np.int64)) > 0)
            # distinct 32-bit values: equal to min(N, count) barring a 32-bit collision
            assert len(fp) == min(fp_size, count) or (len(fp) < fp_size and count > len(fp))
            assert len(fp) <= min(fp_size, count)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, texts, st.sampled_from(SPECS))
def test_jaccard_exact_when_fingerprints_complete(a: str, b: str, spec: str) -> None:
    """With fewer shingles than N, fingerprint Jaccard is the oracle's exact Jaccard."""
    sa, sb = oracle.shingles(a, spec), oracle.shingles(b, spec)
    s = kernel.sketch([a, b], shingle=spec, fingerprint_size=256)
    assert max(len(sa), len(sb)) < 256
    exact = oracle.exact_jaccard(sa, sb)
    assert kernel.jaccard(*s.fingerprints) == pytest.approx(exact, abs=1e-12)
    assert kernel.jaccard(*s.fingerprints, simd=False) == pytest.approx(exact, abs=1e-12)


def test_jaccard_exact_on_corpus_pairs() -> None:
    """On the shared articles (truth pairs and random pairs) with N large enough, J is exact."""
    by_id = dict(CORPUS)
    rng = random.Random(7)
    pairs = [(by_id[x], by_id[y]) for x, y in read_truth() if x in by_id and y in by_id]
    pairs += [(rng.choice(CORPUS)[1], rng.choice(CORPUS)[1]) for _ in range(40)]
    for a, b in pairs:
        s = kernel.sketch([a, b], fingerprint_size=4096)
        sa, sb = oracle.shingles(a), oracle.shingles(b)
        assert s.shingles.tolist() == [len(sa), len(sb)]
        assert kernel.jaccard(*s.fingerprints, fingerprint_size=4096) == pytest.approx(
            oracle.exact_jaccard(sa, sb), abs=1e-12
        )


def test_short_texts_are_one_shingle() -> None:
    """Fewer than K words make one shingle of all of them; no words make none."""
    s = kernel.sketch(["alpha beta", "Alpha, BETA!", "alpha beta gamma", "", " ,;"])
    assert s.shingles.tolist() == [1, 1, 1, 0, 0]
    fps = s.fingerprints
    assert kernel.jaccard(fps[0], fps[1]) == 1.0
    assert kernel.jaccard(fps[0], fps[2]) == 0.0  # (alpha, beta) is not (alpha, beta, gamma)
    assert len(fps[3]) == len(fps[4]) == 0
    assert np.all(s.signatures[3:] == 0xFFFFFFFF)
    assert kernel.jaccard(fps[3], fps[4]) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=5), st.sampled_from(["word:2", "char:3"]))
def test_smaller_fingerprint_is_a_prefix(batch: list[str], spec: str) -> None:
    """The N smallest values are the first N of any larger fingerprint of the same text."""
    batch = [*batch, " ".join(batch) * 20]
    big = kernel.sketch(batch, shingle=spec, fingerprint_size=4096)
    for n in (1, 7, 64):
        small = kernel.sketch(batch, shingle=spec, fingerprint_size=n)
        for fs, fb in zip(small.fingerprints, big.fingerprints, strict=True):
            assert np.array_equal(fs, fb[:n])


@pytest.mark.parametrize("spec", ["word:3", "word:1", "char:2", "char:6"])
def test_many_more_shingles_than_expected(spec: str) -> None:
    """Texts denser in shingles than the set's first size estimate: counts stay exact."""
    rng = random.Random(5)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
    words = ["".join(rng.choices(alphabet, k=rng.choice((1, 2)))) for _ in range(150_000)]
    text = " ".join(words)
    s = kernel.sketch([text, text[:1000]], shingle=spec, fingerprint_size=512)
    assert s.shingles.tolist() == [
        len(oracle.shingles(text, spec)),
        len(oracle.shingles(text[:1000], spec)),
    ]
    scalar = kernel.sketch([text, text[:1000]], shingle=spec, fingerprint_size=512, simd=False)
    assert np.array_equal(s.signatures, scalar.signatures) and _fp_equal(s, scalar)
    fp = s.fingerprints[0]
    assert len(fp) == 512 and np.all(np.diff(fp.astype(np.int64)) > 0)


def test_empty_batch_and_any_sequence() -> None:
    """No texts give empty outputs of the right shapes; any iterable of texts is accepted."""
    s = kernel.sketch([], num_perm=16)
    assert s.signatures.shape == (0, 16) and s.fp_offsets.tolist() == [0]
    assert len(s) == 0 and s.fingerprints == []
    g = kernel.sketch(t for t in ["a b c", b"a b c"])
    assert g.shingles.tolist() == [1, 1]
    assert np.array_equal(g.fingerprints[0], g.fingerprints[1])
    assert kernel.band_keys(np.zeros((0, 128), np.uint32), 16, 8).shape == (0, 16)


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=4), st.sampled_from([1, 3, 64, 128, 1024]))
def test_signature_values_come_from_the_text(batch: list[str], num_perm: int) -> None:
    """Every signature value (densified bins too) is one of the text's shingle values."""
    s = kernel.sketch(batch, num_perm=num_perm, fingerprint_size=4096)
    for sig, fp, count in zip(s.signatures, s.fingerprints, s.shingles.tolist(), strict=True):
        if count == 0:
            assert np.all(sig == 0xFFFFFFFF)
            continue
        assert set(sig.tolist()) <= set(fp.tolist())
        assert int(sig.min()) == int(fp[0])  # the smallest value wins its bin


def test_seed_changes_hashes_deterministically() -> None:
    """The same seed gives the same sketch; another seed gives other values."""
    batch = ["the quick brown fox jumps over the lazy dog again and again"]
    a, b, c = (kernel.sketch(batch, seed=x) for x in (1, 1, 2))
    assert np.array_equal(a.signatures, b.signatures) and _fp_equal(a, b)
    assert not np.array_equal(a.signatures, c.signatures)
    assert a.shingles.tolist() == c.shingles.tolist()


# --- invalid input ----------------------------------------------------------------------------

BAD_UTF8 = [
    b"\x80",
    b"\xbf",
    b"\xc0\x80",
    b"\xc1\xbf",
    b"\xe0\x80\x80",
    b"\xe0\x9f\xbf",
    b"\xed\xa0\x80",
    b"\xed\xbf\xbf",
    b"\xf0\x80\x80\x80",
    b"\xf0\x8f\xbf\xbf",
    b"\xf4\x90\x80\x80",
    b"\xf5\x80\x80\x80",
    b"\xff",
    b"\xfe",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\xc3",
    b"ok \xe2\x82 ok",
    b"abc\xc3(",
]


@pytest.mark.parametrize("raw", BAD_UTF8)
@pytest.mark.parametrize("simd", [True, False])
def test_invalid_utf8_is_refused(raw: bytes, simd: bool) -> None:
    """Overlongs, surrogates, > U+10FFFF and truncated sequences give InvalidTextError."""
    padded = b"word " * 20 + raw + b" tail"  # also past the 32-byte SIMD blocks
    for text in (raw, padded):
        with pytest.raises(kernel.InvalidTextError, match="text 1 is not valid UTF-8"):
            kernel.sketch([b"fine", text], simd=simd)
        with pytest.raises(kernel.InvalidTextError):
            kernel.sketch([b"fine", text], shingle="char:4", simd=simd)
        with pytest.raises(kernel.InvalidTextError):
            kernel.normalize(text)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_arbitrary_bytes_valid_iff_python_decodes(raw: bytes, simd: bool) -> None:
    """Any bytes: the kernel accepts exactly what Python's strict UTF-8 decoder accepts."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(kernel.InvalidTextError):
            kernel.sketch([raw], simd=simd)
        return
    s = kernel.sketch([raw], simd=simd)
    t = kernel.sketch([text], simd=simd)
    assert np.array_equal(s.signatures, t.signatures) and _fp_equal(s, t)
    assert s.shingles[0] == len(oracle.shingles(text))


def test_lone_surrogate_str_is_refused() -> None:
    """A str with a lone surrogate cannot be UTF-8: InvalidTextError names the text."""
    with pytest.raises(kernel.InvalidTextError, match="text 2"):
        kernel.sketch(["a", "b", "x\ud800y"])
    with pytest.raises(kernel.InvalidTextError):
        kernel.normalize("\udfff")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shingle": "word:0"},
        {"shingle": "word:17"},
        {"shingle": "char:0"},
        {"shingle": "line:3"},
        {"shingle": "word"},
        {"shingle": "word:x"},
        {"shingle": 3},
        {"num_perm": 0},
        {"num_perm": 1025},
        {"num_perm": 2.5},
        {"fingerprint_size": 0},
        {"fingerprint_size": 4097},
        {"seed": -1},
        {"seed": 2**64},
    ],
)
def test_bad_parameters_are_refused(kwargs: dict) -> None:
    """Out-of-range sketch parameters raise InvalidParameterError, a ValueError."""
    with pytest.raises(kernel.InvalidParameterError):
        kernel.sketch(["some text here"], **kwargs)
    assert issubclass(kernel.InvalidParameterError, ValueError)


def test_other_bad_arguments() -> None:
    """A single str is not a batch; band and Jaccard arguments are checked."""
    with pytest.raises(TypeError):
        kernel.sketch("a single text")  # type: ignore[arg-type]
    sigs = kernel.sketch(["a b c d"]).signatures
    with pytest.raises(kernel.InvalidParameterError):
        kernel.band_keys(sigs, 17, 8)
    with pytest.raises(kernel.InvalidParameterError):
        kernel.band_keys(sigs, 0, 8)
    with pytest.raises(kernel.InvalidParameterError):
        kernel.band_keys(sigs.astype(np.int64), 4, 4)
    with pytest.raises(kernel.InvalidParameterError):
        kernel.jaccard([1, 2], [3], fingerprint_size=0)
    with pytest.raises(kernel.InvalidParameterError):
        kernel.jaccard_many([1, 2], [[3]], threshold=float("nan"))
    with pytest.raises(kernel.InvalidParameterError):
        kernel.jaccard_many_packed([1], np.array([1, 2], np.uint32), np.array([0, 5], np.uint64))
    with pytest.raises(kernel.InvalidParameterError):  # decreasing offsets
        kernel.jaccard_many_packed(
            [1], np.array([1, 2, 3], np.uint32), np.array([0, 2, 1], np.uint64)
        )
    assert kernel.parse_shingle(" Word:3 ") == ("word", 3)
    for bad in ("word:\u0663", "char:1_0", "word:+3", "word:3.0"):  # int() takes the first 3
        with pytest.raises(ValueError, match="ASCII digits"):
            kernel.parse_shingle(bad)
    assert kernel.parse_shingle("char:16") == ("char", 16)


# --- SIMD and scalar paths agree --------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8), st.sampled_from(["word:1", "word:3", "char:5"]))
def test_simd_and_scalar_sketches_identical(batch: list[str], spec: str) -> None:
    """Signatures, fingerprints and counts are bit-identical with and without SIMD."""
    batch = [*batch, " ".join(batch) * 3]  # long words and runs across 32-byte blocks
    v = kernel.sketch(batch, shingle=spec, fingerprint_size=16)
    s = kernel.sketch(batch, shingle=spec, fingerprint_size=16, simd=False)
    assert np.array_equal(v.signatures, s.signatures)
    assert _fp_equal(v, s)
    assert np.array_equal(v.shingles, s.shingles)


@pytest.mark.parametrize("fp_size", [8, 64, 128, 256])
def test_simd_and_scalar_identical_on_corpus(fp_size: int) -> None:
    """On the corpus: sketches, jaccard and jaccard_many (all thresholds) agree exactly."""
    docs = [t for _, t in CORPUS[:300]]
    v = kernel.sketch(docs, fingerprint_size=fp_size)
    s = kernel.sketch(docs, fingerprint_size=fp_size, simd=False)
    assert np.array_equal(v.signatures, s.signatures) and _fp_equal(v, s)
    fps = v.fingerprints
    for qi in range(0, 300, 29):
        for t in (0.0, 0.1, 0.5, 0.9, 1.0):
            a = kernel.jaccard_many(fps[qi], fps, t, fingerprint_size=fp_size)
            b = kernel.jaccard_many(fps[qi], fps, t, fingerprint_size=fp_size, simd=False)
            assert np.array_equal(a, b)
        singles = [kernel.jaccard(fps[qi], f, fingerprint_size=fp_size, simd=False) for f in fps]
        assert np.array_equal(kernel.jaccard_many(fps[qi], fps, fingerprint_size=fp_size), singles)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2**32 - 1), max_size=300, unique=True),
    st.lists(st.integers(0, 2**32 - 1), max_size=300, unique=True),
    st.lists(st.integers(0, 2**32 - 1), max_size=300, unique=True),
    st.sampled_from([1, 8, 50, 128, 256]),
    st.floats(0.0, 1.0),
)
def test_jaccard_paths_agree_on_arbitrary_sets(
    a: list[int], b: list[int], shared: list[int], fp_size: int, t: float
) -> None:
    """Arbitrary sorted sets (sharing values, many equal upper halves): all paths agree."""
    a_arr = np.unique(np.array(a + shared, dtype=np.uint32))[:fp_size]
    b_arr = np.unique(np.array(b + shared[: len(shared) // 2], dtype=np.uint32))[:fp_size]
    b_arr = np.unique(np.concatenate([b_arr, a_arr[::3] & 0xFFFF0000]))[:fp_size]  # same hi 16
    x = kernel.jaccard(a_arr, b_arr, fingerprint_size=fp_size)
    y = kernel.jaccard(a_arr, b_arr, fingerprint_size=fp_size, simd=False)
    assert x == y
    assert x == pytest.approx(_reference_estimate(a_arr, b_arr, fp_size), abs=1e-12)
    many = kernel.jaccard_many(a_arr, [b_arr, a_arr, b_arr[:1]], t, fingerprint_size=fp_size)
    many_s = kernel.jaccard_many(
        a_arr, [b_arr, a_arr, b_arr[:1]], t, fingerprint_size=fp_size, simd=False
    )
    assert np.array_equal(many, many_s)
    assert many[0] == (x if x >= t else 0.0)


def _reference_estimate(a: np.ndarray, b: np.ndarray, n: int) -> float:
    """The header's tau rule, written with numpy sets."""
    maxes = [int(x[-1]) for x in (a, b) if len(x) >= n]
    tau = min(maxes) if maxes else 2**32
    a2, b2 = a[a.astype(np.int64) <= tau], b[b.astype(np.int64) <= tau]
    union = len(np.union1d(a2, b2))
    return len(np.intersect1d(a2, b2)) / union if union else 0.0


def test_scalar_forced_by_environment(tmp_path: Path) -> None:
    """NEARDUP_SIMD=off turns every SIMD path off at load time, with identical results."""

    code = (
        "from app import kernel; import numpy as np; "
        "print(sorted(kernel.simd_level().items())); "
        "s = kernel.sketch(['Some text, with words, more words and more text ' * 9]); "
        "print(s.signatures.sum(dtype=np.uint64), s.fp_values.sum(dtype=np.uint64))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "NEARDUP_SIMD": "off"},
        cwd=tmp_path,  # not the source tree, whose app/ has no compiled kernel
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[0] == "[('avx2', False), ('sse4.2', False)]"
    s = kernel.sketch(["Some text, with words, more words and more text " * 9])
    assert out[1] == f"{s.signatures.sum(dtype=np.uint64)} {s.fp_values.sum(dtype=np.uint64)}"


# --- accuracy ---------------------------------------------------------------------------------


def _edited(words: list[str], rate: float, rng: random.Random) -> str:
    out = []
    for w in words:
        r = rng.random()
        if r < rate / 2:
            out.append(f"edit{rng.randrange(10**6)}")
        elif r < rate:
            continue
        else:
            out.append(w)
    return " ".join(out)


def test_estimates_are_accurate() -> None:
    """Over many pairs with J spread over [0, 1], mean errors stay within 1/sqrt(k), 1/sqrt(N)."""
    rng = random.Random(11)
    docs = [t for _, t in CORPUS]
    a_texts, b_texts = [], []
    for i in range(150):
        base = " ".join(docs[(5 * i + j) % len(docs)] for j in range(5)).split()  # ~1300 words
        a_texts.append(" ".join(base))
        b_texts.append(_edited(base, rng.random() ** 2 * 0.9, rng))
    n_fp, k = 64, 128
    sa = kernel.sketch(a_texts, num_perm=k, fingerprint_size=n_fp)
    sb = kernel.sketch(b_texts, num_perm=k, fingerprint_size=n_fp)
    exact = np.array(
        [
            oracle.exact_jaccard(oracle.shingles(a), oracle.shingles(b))
            for a, b in zip(a_texts, b_texts, strict=True)
        ]
    )
    assert exact.min() < 0.2 and exact.max() > 0.8  # the pairs cover the range
    assert sa.shingles.min() > 10 * n_fp  # the bottom-N estimator is exercised
    sig_est = (sa.signatures == sb.signatures).mean(axis=1)
    fp_est = np.array(
        [
            kernel.jaccard(x, y, fingerprint_size=n_fp)
            for x, y in zip(sa.fingerprints, sb.fingerprints, strict=True)
        ]
    )
    assert np.abs(sig_est - exact).mean() < 1 / np.sqrt(k)
    assert np.abs(fp_est - exact).mean() < 1 / np.sqrt(n_fp)
    assert abs((sig_est - exact).mean()) < 0.25 / np.sqrt(k)  # no bias
    assert abs((fp_est - exact).mean()) < 0.25 / np.sqrt(n_fp)
    unrelated = (sa.signatures[:-1] == sb.signatures[1:]).mean()
    assert unrelated < 0.05


# --- batch Jaccard and band keys --------------------------------------------------------------


def test_jaccard_many_matches_jaccard_and_threshold() -> None:
    """jaccard_many equals jaccard per candidate, 0.0 below the threshold, equal at or above."""
    rng = random.Random(3)
    docs = [t for _, t in CORPUS[:200]]
    docs += [_edited(d.split(), 0.1, rng) for d in docs[:50]]
    s = kernel.sketch(docs, fingerprint_size=128)
    fps = s.fingerprints
    for qi in (0, 7, 49):
        full = np.array([kernel.jaccard(fps[qi], f, fingerprint_size=128) for f in fps])
        assert np.array_equal(kernel.jaccard_many(fps[qi], fps, fingerprint_size=128), full)
        for t in (0.3, 0.5, full[200 + qi]):
            got = kernel.jaccard_many(fps[qi], fps, t, fingerprint_size=128)
            assert np.array_equal(got, np.where(full >= t, full, 0.0))
        packed = kernel.jaccard_many_packed(
            fps[qi], s.fp_values, s.fp_offsets, 0.5, fingerprint_size=128
        )
        assert np.array_equal(packed, np.where(full >= 0.5, full, 0.0))
    assert kernel.jaccard_many(fps[0], []).shape == (0,)


def test_band_keys_equal_iff_band_slices_equal() -> None:
    """Band keys: uint64 [n, bands]; equal exactly where the bands' values are equal."""
    rng = np.random.default_rng(5)
    sigs = rng.integers(0, 2**32, size=(40, 128), dtype=np.uint32)
    sigs[1::2, :64] = sigs[0::2, :64]  # odd rows share the first 8 bands of 8 with even rows
    sigs[3, 64:72] = sigs[3, 0:8]  # same values in another band must give another key
    keys = kernel.band_keys(sigs, 16, 8)
    assert keys.shape == (40, 16) and keys.dtype == np.uint64
    for i in range(40):
        for j in range(40):
            for band in range(16):
                same = np.array_equal(
                    sigs[i, band * 8 : band * 8 + 8], sigs[j, band * 8 : band * 8 + 8]
                )
                assert (keys[i, band] == keys[j, band]) == same
    assert keys[3, 8] != keys[3, 0]
    keys_r = kernel.band_keys(sigs, 3, 5)
    assert keys_r.shape == (40, 3)
    assert len(np.unique(keys)) == len(np.unique(keys.view(np.uint64)))


# --- scale and threads ------------------------------------------------------------------------


def test_ten_megabyte_text() -> None:
    """A 10 MB text sketches, with the exact distinct shingle count, and winnows."""
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(5000)]
    words = [rng.choice(vocab) for _ in range(1_600_000)]
    words.append("x" * 1_000_000)  # and one 1 MB word
    text = " ".join(words)
    assert len(text) >= 10_000_000
    s = kernel.sketch([text, "short text"])
    assert int(s.shingles[0]) == len(set(zip(words, words[1:], words[2:], strict=False)))
    assert len(s.fingerprints[0]) == 256 and len(s.fingerprints[1]) == 1
    w = kernel.winnow([text, "short text"], passage_words=30)
    assert np.array_equal(w.hashes, kernel.winnow([text], passage_words=30, simd=False).hashes)
    assert 0.05 < len(w.hashes) / len(words) < 0.09  # about 2 / (w + 1) of the shingles
    assert np.all(np.diff(w.starts) > 0) and w.ends[-1] <= len(text)
    assert w.starts[-1] > len(text) - 1_000_000 - 28 * 8  # the last window holds a selection


def test_threads_give_the_same_sketches() -> None:
    """Two threads sketching at once get what one thread gets."""
    docs = [t for _, t in CORPUS]
    expected = kernel.sketch(docs)
    results: list[kernel.Sketch | None] = [None, None]

    def work(i: int) -> None:
        for _ in range(3):
            results[i] = kernel.sketch(docs)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for r in results:
        assert r is not None
        assert np.array_equal(r.signatures, expected.signatures) and _fp_equal(r, expected)


# --- winnowing --------------------------------------------------------------------------------

WINNOW_SPECS = ["word:1", "word:2", "word:3", "word:5", "char:1", "char:2", "char:3", "char:5"]
NON_ASCII = [
    "Café crème brûlée, naïve façade — déjà vu.",
    "中文的文本没有空格 日本語のテキスト 한국어 텍스트",
    "emoji 👍🏽 between 🇫🇷 words 👨‍👩‍👧 and more",
    "combining e\u0301te\u0301 n\u0303o x\u0307 marks",
    "Straße İstanbul ΣΑΣ ﬁne ᾷ ῇ ῷ ΐ ŉ",
    "\U0001d518\U0001d52b\U0001d526 ⓐⒶ Ⅻ ½ ① ٣ ঔ ก",
]


def _selections(w: kernel.Winnowed, i: int) -> list[tuple[int, int, int]]:
    h, s, e = w.selections(i)
    return list(zip(h.tolist(), s.tolist(), e.tolist(), strict=True))


def _winnow_equal(x: kernel.Winnowed, y: kernel.Winnowed) -> bool:
    return x.window == y.window and all(
        np.array_equal(a, b)
        for a, b in zip(
            (x.hashes, x.starts, x.ends, x.offsets),
            (y.hashes, y.starts, y.ends, y.offsets),
            strict=True,
        )
    )


@st.composite
def winnow_params(draw: st.DrawFn) -> tuple[str, int]:
    """A shingle spec and a passage_words that makes a valid window for it."""
    spec = draw(st.sampled_from(WINNOW_SPECS))
    k = int(spec.split(":")[1])
    least = k if spec.startswith("word") else (k + 2) // 2
    return spec, draw(st.integers(least, least + 12))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(texts, min_size=1, max_size=5), winnow_params(), st.integers(0, 2**64 - 1))
@example(NON_ASCII, ("word:3", 4), 1)
@example(NON_ASCII, ("char:4", 5), 1)
@example(["na " * 50, "a b", "a b c", ""], ("word:2", 5), 7)
def test_winnow_matches_oracle(batch: list[str], params: tuple[str, int], seed: int) -> None:
    """winnow() selects exactly the oracle's (hash, start, end), SIMD and scalar paths alike."""
    spec, passage = params
    got = kernel.winnow(batch, shingle=spec, passage_words=passage, seed=seed)
    assert got.window == oracle.window(spec, passage)
    assert got.hashes.dtype == np.uint64 and got.offsets.dtype == np.uint64
    assert got.starts.dtype == got.ends.dtype == np.int64
    assert len(got) == len(batch) and got.offsets[0] == 0
    for i, text in enumerate(batch):
        assert _selections(got, i) == oracle.winnow(text, spec, passage, seed), (spec, i)
    scalar = kernel.winnow(batch, shingle=spec, passage_words=passage, seed=seed, simd=False)
    assert _winnow_equal(got, scalar)


@pytest.mark.parametrize("text", NON_ASCII)
def test_winnow_spans_are_code_point_offsets(text: str) -> None:
    """A window of one word selects every word; its span slices the str to that word's code
    points (and the oracle agrees for longer shingles and windows)."""
    got = kernel.winnow([text], shingle="word:1", passage_words=1)
    words = oracle.words(text)
    assert len(got.hashes) == len(words)
    for (h, start, end), word in zip(_selections(got, 0), words, strict=True):
        assert h == oracle.shingle_hash([oracle.word_hash(word, 1)], "word", 1, 1)
        piece = text[start:end]
        letters = "".join(f for ch in piece for f in ch.casefold() if f.isalnum())
        # one code point can fold to letters of two words (U+1FB7: alpha, a mark, iota)
        assert letters == word or (word in letters and len(piece) == 1), (piece, word)
        assert piece[0].casefold()[0].isalnum() or letters.endswith(word)
    for spec in ("word:3", "char:3", "char:1"):
        for passage in (3, 4, 8):
            selected = _selections(kernel.winnow([text], shingle=spec, passage_words=passage), 0)
            assert selected == oracle.winnow(text, spec, passage), (spec, passage)


shared_words = st.lists(
    st.one_of(
        st.sampled_from(VOCAB),
        st.sampled_from(TRICKY),
        st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789éß中", min_size=1, max_size=9),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts, texts, texts, texts, shared_words, st.sampled_from(SEPARATORS), winnow_params(),
)  # fmt: skip
def test_winnow_shared_passage_shares_a_selection(
    pre_a: str,
    post_a: str,
    pre_b: str,
    post_b: str,
    run: list[str],
    sep: str,
    params: tuple[str, int],
) -> None:
    """Two texts sharing a run of >= passage_words words share a selected hash whose spans lie
    inside the run in both texts."""
    spec, passage = params
    shared = " ".join(w + sep for w in run)
    letters = oracle.word_letters(shared)
    assume(len(letters) >= passage)
    lo, hi = letters[0][0][1], letters[-1][-1][1] + 1  # the run's code points within `shared`
    a = pre_a + " " + shared + " " + post_a
    b = pre_b + "\n" + shared + "\t" + post_b
    got = kernel.winnow([a, b], shingle=spec, passage_words=passage)
    off_a, off_b = len(pre_a) + 1, len(pre_b) + 1
    in_a = {h for h, s, e in _selections(got, 0) if off_a + lo <= s and e <= off_a + hi}
    in_b = {h for h, s, e in _selections(got, 1) if off_b + lo <= s and e <= off_b + hi}
    assert in_a & in_b


@pytest.mark.parametrize(
    "spec,passage", [("word:1", 1), ("word:3", 3), ("char:3", 2), ("char:5", 3)]
)
def test_winnow_hashes_are_the_sketch_shingle_hashes(spec: str, passage: int) -> None:
    """A window of one selects every shingle: their top 32 bits are the sketch's fingerprint."""
    docs = [t for _, t in CORPUS[:40]] + NON_ASCII
    got = kernel.winnow(docs, shingle=spec, passage_words=passage, seed=5)
    assert got.window == 1
    s = kernel.sketch(docs, shingle=spec, fingerprint_size=4096, seed=5)
    for i, fp in enumerate(s.fingerprints):
        h, _, _ = got.selections(i)
        assert np.array_equal(np.unique(h >> np.uint64(32)).astype(np.uint32), fp)
        assert set(h.tolist()) == oracle.sketch_hashes(docs[i], spec, 5)


def test_winnow_short_texts() -> None:
    """Fewer than K words select nothing; fewer shingles than a window select their minimum."""
    got = kernel.winnow(
        ["", " ;", "alpha beta", "alpha beta gamma", "a b c d e f"], passage_words=30
    )
    assert got.window == 28
    assert [len(got.selections(i)[0]) for i in range(5)] == [0, 0, 0, 1, 1]
    all_shingles = kernel.winnow(["a b c d e f"], passage_words=3)  # window 1: every shingle
    assert got.selections(4)[0][0] == all_shingles.hashes.min()
    assert _selections(got, 3)[0][1:] == (0, 16)
    chars = kernel.winnow(["ab", "abc"], shingle="char:3", passage_words=30)
    assert chars.window == 57 and chars.offsets.tolist() == [0, 0, 1]


def test_winnow_repeated_words_and_output_room() -> None:
    """Equal hashes select every window's rightmost one; batches that overflow the first
    guess of the output size still come out whole and in order."""
    batch = ["word " * 3000, "x y z " * 5, "na " * 40 + "end", " ".join(f"w{i}" for i in range(99))]
    batch = batch * 3
    got = kernel.winnow(batch, passage_words=30)
    assert len(got.selections(0)[0]) == 3000 - 2 - 28 + 1  # one per full window
    for i, text in enumerate(batch):
        assert _selections(got, i) == oracle.winnow(text, "word:3", 30)
    assert _winnow_equal(got, kernel.winnow(batch, passage_words=30, simd=False))


def test_a_words_layout_of_one_letter_words_overflows_its_room_and_comes_out_whole() -> None:
    """A window of one selects every word: texts of one-letter words hold more than the
    first guess of a word per three bytes, and still come out whole and in order."""
    batch = [" ".join("abcdefg"[i % 7] for i in range(n)) for n in (1, 500, 2000, 7)] * 2
    got = kernel.winnow(batch, shingle="word:1", passage_words=1)
    assert len(got.selections(2)[0]) == 2000
    for i, text in enumerate(batch):
        assert _selections(got, i) == oracle.winnow(text, "word:1", 1)


@pytest.mark.parametrize("spec,passage", [("word:3", 30), ("word:2", 1500), ("char:4", 700)])
def test_winnow_long_texts_across_buffer_refills(spec: str, passage: int) -> None:
    """Texts of many windows (the shingle buffer refills many times) match the oracle."""
    rng = random.Random(passage)
    vocab = [f"w{i}" for i in range(300)] + ["é", "中文", "ᾷ"]
    text = " ".join(rng.choice(vocab) for _ in range(9000))
    text += " " + " ".join(["same"] * 2500) + " tail"  # a long run of ties
    got = kernel.winnow([text, text[:5000]], shingle=spec, passage_words=passage)
    for i, t in enumerate((text, text[:5000])):
        assert _selections(got, i) == oracle.winnow(t, spec, passage), i
    assert _winnow_equal(got, kernel.winnow([text, text[:5000]], shingle=spec,
                                             passage_words=passage, simd=False))  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 80),
    st.integers(0, 700),
    st.sampled_from(["word:1", "word:2"]),
    st.integers(1, 70),
    st.integers(0, 2**32),
)
def test_winnow_window_with_many_ties(vocab: int, n: int, spec: str, w: int, seed: int) -> None:
    """Few distinct words (so equal hashes in most windows, and minima that leave the window),
    windows of 1 to 70: SIMD, scalar and the oracle select the same positions."""
    rng = random.Random(seed)  # whole texts of n words; hypothesis draws the sizes
    text = " ".join(f"v{rng.randrange(vocab)}" for _ in range(n))
    passage = w + int(spec[-1]) - 1
    got = kernel.winnow([text], shingle=spec, passage_words=passage)
    assert got.window == w
    assert _selections(got, 0) == oracle.winnow(text, spec, passage)
    assert _winnow_equal(
        got, kernel.winnow([text], shingle=spec, passage_words=passage, simd=False)
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8), winnow_params(), st.integers(0, 40))
def test_simd_and_scalar_winnowing_identical(
    batch: list[str], params: tuple[str, int], longer: int
) -> None:
    """Selections and spans are identical with and without SIMD, also on long repetitive texts."""
    spec, passage = params
    passage += longer  # windows past the size where the vector paths start
    batch = [*batch, " ".join(batch) * 5, "a a b " * 200]
    v = kernel.winnow(batch, shingle=spec, passage_words=passage)
    s = kernel.winnow(batch, shingle=spec, passage_words=passage, simd=False)
    assert _winnow_equal(v, s)


def test_simd_and_scalar_winnowing_identical_on_corpus() -> None:
    """On the corpus, for the service's default passage: SIMD and scalar winnowing agree."""
    docs = [t for _, t in CORPUS[:300]]
    for spec in ("word:3", "word:5", "char:5"):
        v = kernel.winnow(docs, shingle=spec, passage_words=30)
        assert _winnow_equal(v, kernel.winnow(docs, shingle=spec, passage_words=30, simd=False))
        for i in range(0, 300, 37):
            assert _selections(v, i) == oracle.winnow(docs[i], spec, 30)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.booleans(), st.sampled_from(["word:3", "char:2"]))
def test_winnow_arbitrary_bytes(raw: bytes, simd: bool, spec: str) -> None:
    """Any bytes: refused with InvalidTextError exactly when not UTF-8, else winnowed as the
    decoded str (spans in its code points)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(kernel.InvalidTextError, match="text 1 is not valid UTF-8"):
            kernel.winnow([b"fine words here", raw], shingle=spec, passage_words=3, simd=simd)
        return
    got = kernel.winnow([raw, text], shingle=spec, passage_words=3, simd=simd)
    assert _selections(got, 0) == _selections(got, 1) == oracle.winnow(text, spec, 3)


@pytest.mark.parametrize("raw", BAD_UTF8)
def test_winnow_invalid_utf8_is_refused(raw: bytes) -> None:
    """Invalid UTF-8 anywhere in a batch, also past the SIMD blocks, raises for that text."""
    for text in (raw, b"word " * 20 + raw + b" tail"):
        for simd in (True, False):
            with pytest.raises(kernel.InvalidTextError, match="text 2 is not valid UTF-8"):
                kernel.winnow([b"fine", "word " * 400, text], passage_words=3, simd=simd)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"shingle": "word:3", "passage_words": 2},
        {"shingle": "word:3", "passage_words": 0},
        {"shingle": "char:5", "passage_words": 2},
        {"shingle": "word:1", "passage_words": 65537},
        {"shingle": "char:1", "passage_words": 40000},
        {"shingle": "word:3", "passage_words": 3.0},
        {"shingle": "word:3", "passage_words": True},
        {"shingle": "line:3"},
        {"seed": -1},
        {"seed": 2**64},
    ],
)
def test_winnow_bad_parameters_are_refused(kwargs: dict) -> None:
    """A passage shorter than a shingle, a window over the maximum, or a bad spec or seed
    raise InvalidParameterError."""
    with pytest.raises(kernel.InvalidParameterError):
        kernel.winnow(["some text here"], **kwargs)
    with pytest.raises(TypeError):
        kernel.winnow("a single text")  # type: ignore[arg-type]
    assert kernel.winnow_window("char:5", 3) == 1 and kernel.winnow_window("word:3", 30) == 28
