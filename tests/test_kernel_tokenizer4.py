"""Tokenizer 4: its folding against the plain-Python oracle (oracle.fold4, stated from the
contract, not the tables) in every script and on both scanner paths; and the disguise it exists
for, small look-alikes that tokenizer 3 left alone, found by 4 and missed by 3."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support import oracle, plant
from support.code_points import every_code_point
from support.corpus import read_corpus
from support.winnowed import rows

from app import kernel

CORPUS = [text for _, text in read_corpus()[:120]]
DOCS = Path(__file__).resolve().parents[1] / "docs"

# The small letters tokenizer 4 adds (Cyrillic shha, komi de, qa, palochka, be; Latin alpha,
# script g, iota; Greek nu, upsilon, gamma, sigma; Armenian ho, vo, za; Cherokee), capitals
# of them, and letters of those scripts either tokenizer leaves alone.
NEW_LETTERS = (
    "\u04bb\u0501\u051b\u04cf\u0431\u0433\u0251\u0261\u0269\u03bd\u03c5\u03b3\u03c3\u03c2"
    "\u0570\u0578\u0566\u13c2\u04ba\u0500\u039d\u03a5\u0540\u0436\u03b8\u0574\u03f2"
    "\u3164\uffa0\u115f\u1160"
)
# Line ends and hyphens tokenizer 4 adds (NEL, LINE and PARAGRAPH SEPARATOR; small and
# full-width hyphen-minus), and others that are neither.
BREAKS = "\x0b\x0c\x85\u2028\u2029\ufe63\uff0d\u2012\x1c"
script_texts = st.one_of(
    st.text(alphabet="abdghlnquvy019 -\n\r\u200b\u0301\u00ad" + NEW_LETTERS + BREAKS, max_size=120),
    st.text(max_size=60),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script_texts)
@example("t\u04bbe \u0501og \u0251nd \u03bdery \u0570ouse-\n\u04bbold")
@example("exam\uff0d\u2028ple exam-\x85 ple exam\ufe63\r\n\u2029ple a-\u2029\u00adb c-\n\x0cd")
def test_normalize_and_word_folds_match_oracle(text: str) -> None:
    """The normalized text, and every word's span and fold bits, are the oracle's, on the SIMD
    and the scalar path."""
    assert kernel.normalize(text, tokenizer=4) == oracle.normalized2(text, version=4)
    expected = oracle.winnow2(text, "word:1", 1, kc=1, version=4)
    for simd in (True, False):
        w = kernel.winnow(
            [text], shingle="word:1", passage_words=1, tokenizer=4, unspaced_k=1, folds=True,
            simd=simd,
        )  # fmt: skip
        assert rows(w) == expected


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(script_texts, min_size=1, max_size=5), st.sampled_from(["word:1", "word:3", "char:4"])
)
def test_sketches_match_oracle(batch: list[str], spec: str) -> None:
    """Tokenizer 4's fingerprints and shingle counts are the oracle's, SIMD and scalar."""
    for simd in (True, False):
        s = kernel.sketch(batch, shingle=spec, tokenizer=4, simd=simd)
        for i, text in enumerate(batch):
            hashes = oracle.sketch_hashes2(text, spec, version=4)
            assert s.fingerprints[i].tolist() == oracle.fingerprint(hashes)
            assert int(s.shingles[i]) == len(hashes)


def test_every_code_point_folds_like_the_oracle() -> None:
    """Every code point (no surrogates), between letters and alone, reads as the oracle says."""
    for where, text, want in every_code_point(4):
        assert kernel.normalize(text, tokenizer=4) == want, where


def _long_mixed(rng: random.Random) -> str:
    """Long ASCII runs (the AVX2 blocks) with the new look-alikes anywhere, so that words
    crossing a block edge mix a folded letter with Latin ones."""
    words = []
    for _ in range(rng.randrange(50, 400)):
        word = "".join(rng.choice("abdhlnquy19") for _ in range(rng.randrange(1, 30)))
        if rng.random() < 0.1:
            at = rng.randrange(len(word) + 1)
            word = word[:at] + rng.choice(NEW_LETTERS) + word[at:]
        words.append(word)
    return rng.choice(["", " ", "x" * rng.randrange(64)]) + " ".join(words)


def test_simd_and_scalar_agree_on_long_mixed_text() -> None:
    """Across 64-byte blocks the SIMD scanner gives the scalar one's hashes, spans and folds,
    which are the oracle's; the sketches agree too."""
    rng = random.Random(4)
    texts = [_long_mixed(rng) for _ in range(40)]
    a = kernel.winnow(texts, shingle="word:3", passage_words=6, tokenizer=4, folds=True)
    b = kernel.winnow(texts, shingle="word:3", passage_words=6, tokenizer=4, folds=True, simd=False)
    assert rows(a) == rows(b)
    for i, text in enumerate(texts[:10]):
        lo, hi = int(a.offsets[i]), int(a.offsets[i + 1])
        assert rows(a)[lo:hi] == oracle.winnow2(text, "word:3", 6, version=4)
    s1, s2 = kernel.sketch(texts, tokenizer=4), kernel.sketch(texts, tokenizer=4, simd=False)
    assert np.array_equal(s1.signatures, s2.signatures)
    assert np.array_equal(s1.fp_values, s2.fp_values)


def test_folds_what_3_folds_and_ascii_as_3() -> None:
    """Every letter tokenizer 3 folds, 4 folds alike; plain ASCII sketches as with 3."""
    for ch, target in oracle.lookalikes3().items():
        assert kernel.normalize(ch, tokenizer=4) == target, ch
    ascii_texts = [t for t in CORPUS if t.isascii()]
    a, b = (kernel.sketch(ascii_texts, tokenizer=t) for t in (3, 4))
    assert np.array_equal(a.signatures, b.signatures) and np.array_equal(a.fp_values, b.fp_values)


def test_lookalike_folds_are_case_consistent_and_as_documented() -> None:
    """A folded letter's capital gives the same ASCII letter (a text stays case-insensitive),
    and docs/languages.md's table (gen_unicode.py --list) lists the oracle's letters."""
    table = oracle.lookalikes4()
    for ch, target in table.items():
        assert kernel.normalize(ch, tokenizer=4) == target
        for form in (ch.upper(), ch.lower()):
            if len(form) == 1:
                assert kernel.normalize(form, tokenizer=4) == target, ch
    counts = {s: sum(oracle.script3(c) == s for c in table) for s in oracle.LOOKALIKE_SCRIPTS}
    documented = {
        m[0].upper(): int(m[1])
        for m in re.findall(
            r"^\| (Latin|Greek|Cyrillic|Armenian|Cherokee)\b[^|]*\| (\d+) \|",
            (DOCS / "languages.md").read_text(),
            re.M,
        )
    }
    assert documented == counts


def test_small_lookalikes_disguise_nothing_from_4() -> None:
    """A text with half its letters swapped for small look-alikes (Cyrillic shha for h, komi de
    for d, Latin alpha for a, Greek nu for v...) sketches exactly like its original with
    tokenizer 4; with 3 most of its shingles differ."""
    assert {"h", "d", "q", "v", "g", "n", "u"} <= set(plant.homoglyphs())
    rng = random.Random(7)
    texts = [t.lower() for t in CORPUS[:40]]
    copies = [plant.change("homoglyphs", t, rng, []) for t in texts]
    a, b = kernel.sketch(texts, tokenizer=4), kernel.sketch(copies, tokenizer=4)
    assert np.array_equal(a.signatures, b.signatures) and np.array_equal(a.fp_values, b.fp_values)
    a3, b3 = kernel.sketch(texts, tokenizer=3), kernel.sketch(copies, tokenizer=3)
    found3 = [kernel.jaccard(a3.fingerprints[i], b3.fingerprints[i]) for i in range(len(texts))]
    assert max(found3) < 0.2
    # a word mixing them with Latin letters is flagged as disguised; a copy of a text is
    flags = kernel.winnow(copies[:5], tokenizer=4, folds=True).folds
    assert flags is not None and int(np.count_nonzero(flags & kernel.FOLD_CONFUSABLE)) > 0


def test_hyphenated_across_other_line_ends_is_one_word() -> None:
    """A word hyphenated with a small or full-width hyphen-minus, or across VT, NEL, LINE or
    PARAGRAPH SEPARATOR, or a line end and a form feed (pdftotext's page end), is one word with
    tokenizer 4 (3 left two); within a line, or across two line ends, it stays two."""
    joined = ["exam\uff0d\nple", "exam\ufe63\nple", "exam-\x85ple", "exam-\u2028 ple",
              "exam\u2010 \u2029ple", "exam\uff0d\u2028ple", "exam-\x0bple",
              "exam-\n\x0cple", "exam-\x0c\nple"]  # fmt: skip
    for text in joined:
        assert kernel.normalize(text, tokenizer=4) == "example", repr(text)
        assert kernel.normalize(text, tokenizer=3) != "example", repr(text)
    for text in ("exam\uff0dple", "exam-\n\u2028ple", "exam-\x0cple", "exam-\x0b\nple"):
        assert kernel.normalize(text, tokenizer=4) == "exam ple", repr(text)
    # in ASCII text the SIMD scanner's blocks hand such a hyphen to the scalar one
    pad = " lorem ipsum dolor sit amet" * 4
    for text in ("a-\x0bb", "exam-\x0bple", "exam-\x0c\nple", "exam-\x0cple", "exam-\x0b\nple"):
        for where in (text + pad, pad + " " + text + pad, pad[:61] + text + pad):
            want = oracle.winnow2(where, "word:1", 1, kc=1, version=4)
            for simd in (True, False):
                got = kernel.winnow(
                    [where], shingle="word:1", passage_words=1, tokenizer=4, unspaced_k=1,
                    folds=True, simd=simd,
                )  # fmt: skip
                assert rows(got) == want, (repr(where), simd)


def test_hangul_fillers_in_place_of_spaces_are_spaces() -> None:
    """A copy with Hangul fillers (invisible, drawn as a blank) for its spaces reads as its
    words with tokenizer 4; 3 dropped them and read one long word."""
    texts = CORPUS[:20]
    fillers = "\u3164\uffa0\u115f\u1160"
    copies = ["".join(fillers[i % 4] if ch == " " else ch for i, ch in enumerate(t)) for t in texts]
    a, b = kernel.sketch(texts, tokenizer=4), kernel.sketch(copies, tokenizer=4)
    assert np.array_equal(a.fp_values, b.fp_values)
    assert kernel.normalize("one\u3164two", tokenizer=4) == "one two"
    assert kernel.normalize("one\u3164two", tokenizer=3) == "onetwo"


def test_indic_vowel_signs_are_part_of_their_words() -> None:
    """A spacing vowel sign (Mc) is part of its word with tokenizer 4: Hindi reads as its
    words (3 read consonant fragments), and a word's span ends after its last vowel sign;
    in Thai and Khmer, whose letters are tokens, nothing changes."""
    text = "\u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e \u091c\u093e\u0928\u093e"
    assert (
        kernel.normalize(text, tokenizer=4)
        == "\u0939\u093f\u0928\u0926\u0940 \u092d\u093e\u0937\u093e \u091c\u093e\u0928\u093e"
    )
    assert kernel.normalize(text, tokenizer=3) == "\u0939 \u0928\u0926 \u092d \u0937 \u091c \u0928"
    for simd in (True, False):
        w = kernel.winnow(
            [text], shingle="word:1", passage_words=1, tokenizer=4, unspaced_k=1, simd=simd
        )
        assert list(zip(w.starts.tolist(), w.ends.tolist(), strict=True)) == [
            (0, 6), (7, 11), (12, 16),
        ]  # fmt: skip
    for other in ("\u0e01\u0e32\u0e23\u0e40\u0e21\u0e37\u0e2d\u0e07", "\u1780\u17b6\u179a"):
        assert kernel.normalize(other, tokenizer=4) == kernel.normalize(other, tokenizer=3)


def test_persian_yeh_and_keheh_are_arabic_yeh_and_kaf() -> None:
    """Arabic written with the Persian forms of yeh and keheh (keyboard layouts mix them)
    reads as written with the Arabic ones, with tokenizer 4 (3 read other letters)."""
    arabic = "\u0643\u062a\u0627\u0628 \u0641\u064a \u0627\u0644\u0645\u0643\u062a\u0628\u0629"
    persian_forms = arabic.replace("\u0643", "\u06a9").replace("\u064a", "\u06cc")
    assert persian_forms != arabic
    assert kernel.normalize(persian_forms, tokenizer=4) == kernel.normalize(arabic, tokenizer=4)
    assert kernel.normalize(persian_forms, tokenizer=3) != kernel.normalize(arabic, tokenizer=3)
