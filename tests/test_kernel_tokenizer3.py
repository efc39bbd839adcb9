"""Tokenizer 3: its folding against the plain-Python oracle of tests/support (oracle.fold3, from
the contract, not the tables), in every script; and, per defect of tokenizer 2 it fixes, a test
that tokenizer 2 fails and 3 passes."""

from __future__ import annotations

import functools
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


def _word_bits(text: str, tokenizer: int = 3) -> list[int]:
    w = kernel.winnow(
        [text], shingle="word:1", passage_words=1, tokenizer=tokenizer, unspaced_k=1, folds=True
    )
    assert w.folds is not None
    return w.folds.tolist()


def _similarity(a: str, b: str, tokenizer: int, spec: str = "word:3") -> float:
    s = kernel.sketch([a, b], shingle=spec, tokenizer=tokenizer)
    return kernel.jaccard(s.fingerprints[0], s.fingerprints[1])


# Letters, marks and separators of every script, composed and decomposed, with the folded classes
# of tokenizer 2 and the scanner's edges (hyphens, line ends, invisibles).
SCRIPT_CHARS = "".join(
    [
        "abcxyz019ABCIl",
        "\u00e9\u00e8\u00ea\u00ebe\u0301e\u0300\u1ec7\u01a1\u00f1\u00e7\u00df\u0131\u0130\u00f8",
        "\u0430\u0435\u043e\u0440\u0441\u0443\u0456\u0451\u0410\u0412\u041c\u041d\u0422\u041a"
        "\u0431\u0433\u0436\u044b\u0419\u04af\u04e1",
        "\u0391\u0392\u0395\u0397\u039a\u039c\u039d\u03a4\u03a7\u03a5\u0396\u03b1\u03b2\u03c3"
        "\u03c2\u03a3\u03bf\u03ad\u03ca\u0390\u1f00\u03c5\u03bd",
        "\u0531\u0561\u057d\u0585\u0578",  # Armenian
        "\u13a0\u13a2\u13cf\uab70\uab7a",  # Cherokee, both cases
        "\u05d5\u05df\u05e9\u05b8\u05bc\u05c1",  # Hebrew, niqqud
        "\u0643\u062a\u0628\u064e\u0650\u0651\u0640\u0647\u0665\u0661",  # Arabic, harakat
        "\u0915\u093f\u0941\u094d\u0902",  # Devanagari
        "\u0e14\u0e15\u0e04\u0e21\u0e06\u0e17\u0e11\u0e31\u0e48",  # Thai
        "\u571f\u58eb\u53e3\u56d7\u4e2d\uf900",  # Han
        "\u30c7\u30c6\u3099\u30fc\uff83\uff9e\uff70\u304c\u304b",  # kana
        "\ud55c\uad6d\u1112\u1161\u11ab\u3131",  # Hangul, jamo
        "\ufb01\uff21\u00b2\u2460\u3164",
        "\u200b\u200d\u00ad\ufeff\u2060\u202e\ufe0f\u034f",
        "-\u2010\u2011",
        " \t\n\r\u00a0\u3000",
        ".,'\u2019\u00b4",
        "\u0301\u0345\u0308\u20dd",  # lone combining marks, an enclosing one
    ]
)
script_texts = st.one_of(
    st.text(alphabet=SCRIPT_CHARS, max_size=120),
    st.text(max_size=60),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script_texts)
@example("\u0420\u0430y-\nment \u0391\u0392 e\u0301\u0301-\u0301\nx")
@example("pa\u0443\u0440al b\u0430\u200b\nk \u0e14\u0e31 \u0640\u0643")
def test_normalize_and_word_folds_match_oracle(text: str) -> None:
    """Random text of every script: the normalized text, and every word's span and fold bits
    (the disguise flag of mixed words), are the oracle's, on the SIMD and scalar paths."""
    assert kernel.normalize(text, tokenizer=3) == oracle.normalized2(text, version=3)
    expected = oracle.winnow2(text, "word:1", 1, kc=1, version=3)
    for simd in (True, False):
        w = kernel.winnow(
            [text],
            shingle="word:1",
            passage_words=1,
            tokenizer=3,
            unspaced_k=1,
            folds=True,
            simd=simd,
        )
        assert rows(w) == expected


def test_a_words_span_takes_in_the_marks_after_its_letters() -> None:
    """A combining mark tokenizer 3 drops (an accent in decomposed text, a Devanagari vowel
    sign, Arabic vowels) ends its word's span, so a passage's edge never splits a
    character; an invisible character after a word does not (it is no part of it)."""
    texts = {
        "cafe\u0301 noir": [(0, 5), (6, 10)],
        "\u0925\u0947 \u0925": [(0, 2), (3, 4)],
        "\u0643\u062a\u0628\u064e \u0627": [(0, 4), (5, 6)],
        "word\u200b next": [(0, 4), (6, 10)],
    }
    for text, spans in texts.items():
        for simd in (True, False):
            w = kernel.winnow(
                [text], shingle="word:1", passage_words=1, tokenizer=3, unspaced_k=1, simd=simd
            )
            assert list(zip(w.starts.tolist(), w.ends.tolist(), strict=True)) == spans, text


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(script_texts, min_size=1, max_size=5), st.sampled_from(["word:1", "word:3", "char:4"])
)
def test_sketches_match_oracle(batch: list[str], spec: str) -> None:
    """Tokenizer 3's fingerprints and shingle counts are the oracle's, SIMD and scalar."""
    for simd in (True, False):
        s = kernel.sketch(batch, shingle=spec, tokenizer=3, simd=simd)
        for i, text in enumerate(batch):
            hashes = oracle.sketch_hashes2(text, spec, version=3)
            assert s.fingerprints[i].tolist() == oracle.fingerprint(hashes)
            assert int(s.shingles[i]) == len(hashes)


def test_every_code_point_folds_like_the_oracle() -> None:
    """Every code point (no surrogates), between letters and alone, reads as the oracle says."""
    for where, text, want in every_code_point(3):
        assert kernel.normalize(text, tokenizer=3) == want, where


def _long_mixed(rng: random.Random) -> str:
    """Long ASCII runs (the AVX2 blocks) with look-alikes, accents and hyphens anywhere, so that
    words crossing a block edge mix a folded letter on one side with Latin on the other."""
    words = []
    for _ in range(rng.randrange(50, 400)):
        word = "".join(rng.choice("abcdeopxy19") for _ in range(rng.randrange(1, 30)))
        r = rng.random()
        if r < 0.08:
            at = rng.randrange(len(word) + 1)
            word = word[:at] + rng.choice("\u0430\u043e\u0440\u0391\u0456\u0434") + word[at:]
        elif r < 0.12:
            word = "".join(rng.choice("\u043c\u043e\u0441\u043a\u0432\u0430") for _ in word)
        elif r < 0.15:
            word += "-\n"
        elif r < 0.17:
            word = word[:1] + "\u0301" + word[1:]
        words.append(word)
    return rng.choice(["", " ", "x" * rng.randrange(64)]) + " ".join(words)


def test_simd_and_scalar_agree_on_long_mixed_text() -> None:
    """Across 64-byte blocks, the SIMD scanner gives the scalar one's hashes, spans and folds
    (a mixed word's flag included), which are the oracle's; the sketches agree too."""
    rng = random.Random(3)
    texts = [_long_mixed(rng) for _ in range(40)]
    for spec, passage in (("word:1", 1), ("word:3", 6)):
        a = kernel.winnow(texts, shingle=spec, passage_words=passage, tokenizer=3, folds=True)
        b = kernel.winnow(
            texts, shingle=spec, passage_words=passage, tokenizer=3, folds=True, simd=False
        )
        assert rows(a) == rows(b)
        for i, text in enumerate(texts[:10]):
            lo, hi = int(a.offsets[i]), int(a.offsets[i + 1])
            assert rows(a)[lo:hi] == oracle.winnow2(text, spec, passage, version=3)
    s1 = kernel.sketch(texts, tokenizer=3)
    s2 = kernel.sketch(texts, tokenizer=3, simd=False)
    assert np.array_equal(s1.signatures, s2.signatures)
    assert np.array_equal(s1.fp_values, s2.fp_values)
    for i, text in enumerate(texts[:10]):
        want = oracle.sketch_hashes2(text, version=3)
        assert s1.fingerprints[i].tolist() == oracle.fingerprint(want)


def test_ascii_reads_as_with_tokenizer_2() -> None:
    """Plain ASCII (the corpus) sketches and winnows with tokenizer 3 exactly as with 2."""
    ascii_texts = [t for t in CORPUS if t.isascii()]
    assert len(ascii_texts) > 50
    a, b = (kernel.sketch(ascii_texts, tokenizer=t) for t in (2, 3))
    assert np.array_equal(a.signatures, b.signatures) and np.array_equal(a.fp_values, b.fp_values)
    w2, w3 = (kernel.winnow(ascii_texts, tokenizer=t, folds=True) for t in (2, 3))
    assert rows(w2) == rows(w3)


# --- the look-alike table ---------------------------------------------------------------------


@functools.cache
def _letters_by_script() -> dict[str, list[str]]:
    """Letters that reach the look-alike step (case-folded, NFKD-stable), by the first word of
    their Unicode name (the script, near enough: CYRILLIC, THAI, HEBREW, CJK...)."""
    out: dict[str, list[str]] = {}
    for cp in range(0x80, 0x110000):
        ch = chr(cp)
        if not ch.isalpha() or ch.casefold() != ch or unicodedata.normalize("NFKD", ch) != ch:
            continue
        name = unicodedata.name(ch, "")
        if name:
            out.setdefault(name.split()[0], []).append(ch)
    return out


def _merged(tokenizer: int) -> dict[str, list[tuple[str, ...]]]:
    """Per script, the groups of distinct letters that fold to one output."""
    merged: dict[str, list[tuple[str, ...]]] = {}
    for script, letters in _letters_by_script().items():
        if script == "LATIN":
            continue  # its look-alikes fold onto ASCII, Latin too, by design
        groups: dict[str, list[str]] = {}
        for ch in letters:
            out = kernel.normalize(ch, tokenizer=tokenizer)
            if out:  # the tatweel folds to nothing
                groups.setdefault(out, []).append(ch)
        bad = [tuple(g) for g in groups.values() if len(g) > 1]
        if bad:
            merged[script] = bad
    return merged


def test_no_two_letters_of_one_script_fold_alike() -> None:
    """Outside Latin, tokenizer 3 never folds two distinct letters of one script to the same
    output (tokenizer 2 merged Thai, Greek, Hebrew, Arabic, Cyrillic... letters)."""
    assert _merged(3) == {}
    before = _merged(2)
    assert {"THAI", "GREEK", "HEBREW", "CYRILLIC"} <= set(before)


def test_lookalike_folds_are_case_consistent_and_as_documented() -> None:
    """Upper and lower case of a folded letter give the same ASCII letter; the letters docs/
    languages.md lists (gen_unicode.py --list) are those the oracle folds."""
    table = oracle.lookalikes3()
    for ch, target in table.items():
        assert kernel.normalize(ch, tokenizer=3) == target
        for form in (ch.upper(), ch.lower()):
            if len(form) == 1:
                assert kernel.normalize(form, tokenizer=3) == target, ch
    counts = {s: sum(oracle.script3(c) == s for c in table) for s in oracle.LOOKALIKE_SCRIPTS}
    assert counts == {"LATIN": 21, "GREEK": 15, "CYRILLIC": 20, "ARMENIAN": 3, "CHEROKEE": 22}
    # not folded: case forms that look like different letters, or one without a look-alike
    for ch in "\u03bd\u039d\u03c3\u03c2\u03a3\u03c5\u03a5\u0433\u0413":
        assert kernel.normalize(ch, tokenizer=3) == ch.casefold()


# --- defect 1: look-alike capitals --------------------------------------------------------------

# Capitals of Cyrillic and Greek that look like Latin ones (Greek N and Y are not folded: their
# small letters look like v and u).
CAPITALS = {
    "A": "\u0410",
    "B": "\u0412",
    "E": "\u0395",
    "H": "\u041d",
    "K": "\u039a",
    "M": "\u041c",
    "O": "\u039f",
    "P": "\u0420",
    "T": "\u0422",
    "X": "\u03a7",
    "Z": "\u0396",
    "C": "\u0421",
    "I": "\u0399",
}


def test_capitals_written_with_lookalikes_are_found_and_flagged() -> None:
    """An English text in capitals whose letters are swapped for Cyrillic and Greek capitals
    sketches as the original with tokenizer 3 (not with 2), and its mixed words are flagged."""
    original = " ".join(CORPUS[:5]).upper()
    copy = "".join(CAPITALS.get(ch, ch) for ch in original)
    assert _similarity(original, copy, 3) == 1.0
    assert _similarity(original, copy, 2) < 0.5
    bits = _word_bits("THE BANK MARKET", 3)
    assert bits == [0, 0, 0]
    bits = _word_bits("THE " + "BANK MARKET".translate(str.maketrans("AT", "\u0410\u03a4")), 3)
    assert bits == [0, kernel.FOLD_CONFUSABLE, kernel.FOLD_CONFUSABLE]


# --- defect 2: letters of one script merged -----------------------------------------------------

# Pairs of letters of one script tokenizer 2 folded alike.
MERGED_PAIRS = [
    ("\u0e14", "\u0e15"),  # Thai do dek, to tao
    ("\u0e21", "\u0e06"),  # Thai mo ma, kho rakhang
    ("\u0e17", "\u0e11"),  # Thai tho thahan, tho montho
    ("\u03c3", "\u03bf"),  # Greek sigma, omicron
    ("\u03b2", "\u00df"),  # Greek beta, and what 2 made of it
    ("\u05d5", "\u05df"),  # Hebrew vav, final nun
    ("\u0647", "\u0665"),  # Arabic heh, Arabic-Indic five
    ("\u571f", "\u58eb"),  # CJK earth, scholar
    ("\u53e3", "\u56d7"),  # CJK mouth, enclosure
]


SCRIPT_POOLS = {
    "THAI": "\u0e01\u0e02\u0e07\u0e19\u0e1a\u0e23\u0e25\u0e27\u0e2a\u0e32",
    "GREEK": "\u03b1\u03b3\u03b4\u03b5\u03b9\u03ba\u03bb\u03c0\u03c1\u03c4",
    "HEBREW": "\u05d0\u05d1\u05d2\u05d3\u05d4\u05d9\u05db\u05dc\u05de\u05e8",
    "ARABIC": "\u0627\u0628\u062a\u062f\u0631\u0633\u0639\u0644\u0645\u0646",
    "CJK": "\u4e00\u4eba\u5927\u5c0f\u5c71\u6c34\u706b\u6728\u91d1\u65e5",
}


@pytest.mark.parametrize("a,b", MERGED_PAIRS)
def test_letters_of_one_script_stay_apart(a: str, b: str) -> None:
    """Two texts that differ in every occurrence of one letter for another of its script are
    identical to tokenizer 2 and different to 3."""
    rng = random.Random(ord(a))
    base = SCRIPT_POOLS[unicodedata.name(a).split()[0]]
    words = ["".join(rng.choice(base + a) for _ in range(rng.randrange(2, 6))) for _ in range(80)]
    one = " ".join(words)
    other = one.replace(a, b)
    assert one != other
    assert _similarity(one, other, 2) == 1.0
    assert _similarity(one, other, 3) < 0.9


# --- defect 3: genuine words flagged ------------------------------------------------------------

RUSSIAN = (
    "\u041c\u043e\u0441\u043a\u0432\u0430 \u2014 \u0441\u0442\u043e\u043b\u0438\u0446\u0430 "
    "\u0420\u043e\u0441\u0441\u0438\u0438, \u043a\u0440\u0443\u043f\u043d\u0435\u0439\u0448\u0438"
    "\u0439 \u043f\u043e \u0447\u0438\u0441\u043b\u0435\u043d\u043d\u043e\u0441\u0442\u0438 "
    "\u043d\u0430\u0441\u0435\u043b\u0435\u043d\u0438\u044f \u0433\u043e\u0440\u043e\u0434 "
    "\u0441\u0442\u0440\u0430\u043d\u044b \u0438 \u0432\u0441\u0435\u0439 \u0415\u0432\u0440"
    "\u043e\u043f\u044b. \u0415\u0451 \u043e\u0441\u043d\u043e\u0432\u0430\u043b \u042e\u0440"
    "\u0438\u0439 \u0414\u043e\u043b\u0433\u043e\u0440\u0443\u043a\u0438\u0439 \u0432 1147 "
    "\u0433\u043e\u0434\u0443."
)
GREEK = (
    "\u0397 \u0391\u03b8\u03ae\u03bd\u03b1 \u03b5\u03af\u03bd\u03b1\u03b9 \u03b7 \u03c0\u03c1"
    "\u03c9\u03c4\u03b5\u03cd\u03bf\u03c5\u03c3\u03b1 \u03ba\u03b1\u03b9 \u03bc\u03b5\u03b3"
    "\u03b1\u03bb\u03cd\u03c4\u03b5\u03c1\u03b7 \u03c0\u03cc\u03bb\u03b7 \u03c4\u03b7\u03c2 "
    "\u0395\u03bb\u03bb\u03ac\u03b4\u03b1\u03c2."
)


def test_genuine_russian_and_greek_words_are_not_flagged() -> None:
    """Words written wholly in Cyrillic or Greek are not disguised with tokenizer 3 (2 flagged
    most of them); a word mixing look-alikes with Latin letters is, in either order."""
    assert sum(bool(b & kernel.DISGUISED) for b in _word_bits(RUSSIAN, 2)) > 10
    assert not any(b & kernel.DISGUISED for b in _word_bits(RUSSIAN, 3))
    assert not any(b & kernel.DISGUISED for b in _word_bits(GREEK, 3))
    mixed = "p\u0430ypal \u0440aypal \u041cicrosoft Micr\u03bfsoft paypal \u0434\u0430 1\u0430"
    assert _word_bits(mixed, 3) == [kernel.FOLD_CONFUSABLE] * 4 + [0, 0, 0]
    # an accent is not a disguise
    assert _word_bits("caf\u00e9 cafe\u0301 na\u00efve", 3) == [0, 0, 0]


def test_latin_letters_folded_are_no_disguise() -> None:
    """A Latin letter folded to its ASCII look-alike (Turkish dotless i, a small capital)
    leaves its word in one script: ordinary Turkish is not disguised (found in review)."""
    turkish = (
        "Kad\u0131n alt\u0131n y\u0131l\u0131nda \u0131l\u0131k bir k\u0131\u015f g\u00fcn\u00fc"
    )
    assert not any(b & kernel.DISGUISED for b in _word_bits(turkish, 3))
    assert _word_bits("\u0280ed \u0131ce", 3) == [0, 0]


# --- defect 4: decomposed and vocalised text --------------------------------------------------

SAME = [
    # NFD French and Vietnamese against NFC
    ("Le c\u0153ur a ses raisons que la raison ne conna\u00eet point. \u00c9t\u00e9 \u00e0 "
     "l'\u00e9cole, d\u00e9j\u00e0 vu, na\u00efve fa\u00e7ade.", "NFD"),
    ("Ti\u1ebfng Vi\u1ec7t l\u00e0 ng\u00f4n ng\u1eef c\u1ee7a ng\u01b0\u1eddi Vi\u1ec7t v\u00e0 "
     "l\u00e0 ng\u00f4n ng\u1eef ch\u00ednh th\u1ee9c t\u1ea1i Vi\u1ec7t Nam.", "NFD"),
    # Korean as conjoining jamo (macOS file names)
    ("\ud55c\uad6d\uc5b4\ub294 \ub300\ud55c\ubbfc\uad6d\uacfc \uc870\uc120\ubbfc\uc8fc\uc8fc\uc758"
     "\uc778\ubbfc\uacf5\ud654\uad6d\uc758 \uacf5\uc6a9\uc5b4\uc774\ub2e4.", "NFD"),
    # half-width katakana against full width
    ("\u30c7\u30fc\u30bf\u30d9\u30fc\u30b9\u3068\u30b5\u30fc\u30d0\u30fc\u3068\u30d7\u30ed"
     "\u30b0\u30e9\u30e0", "NFKC-halfwidth"),
]  # fmt: skip


def _halfwidth(text: str) -> str:
    """Full-width katakana as half-width forms (what NFKC undoes: the inverse, by a table)."""
    table = {}
    for cp in range(0xFF61, 0xFFA0):
        full = unicodedata.normalize("NFKC", chr(cp))
        if len(full) == 1:
            table.setdefault(full, chr(cp))
    out = []
    for ch in text:
        base = unicodedata.normalize("NFD", ch)
        if base[0] in table:
            out.append(table[base[0]])
            out.extend({"\u3099": "\uff9e", "\u309a": "\uff9f"}[m] for m in base[1:])
        else:
            out.append(ch)
    return "".join(out)


@pytest.mark.parametrize("text,form", SAME)
def test_decomposed_text_matches_composed(text: str, form: str) -> None:
    """NFD French, Vietnamese and Korean (jamo), and half-width katakana, read as the composed
    text with tokenizer 3; tokenizer 2 did not match them."""
    other = _halfwidth(text) if form == "NFKC-halfwidth" else unicodedata.normalize("NFD", text)
    assert other != text
    assert kernel.normalize(other, tokenizer=3) == kernel.normalize(text, tokenizer=3)
    assert _similarity(text, other, 3, "word:1") == 1.0
    assert _similarity(text, other, 2, "word:1") < 1.0


ARABIC = (
    "\u0643\u064e\u062a\u064e\u0628\u064e \u0627\u0644\u0637\u0651\u064e\u0627\u0644\u0650\u0628"
    "\u064f \u0627\u0644\u062f\u0651\u064e\u0631\u0652\u0633\u064e \u0641\u0650\u064a "
    "\u0627\u0644\u0652\u0643\u0650\u062a\u064e\u0627\u0628\u0650 \u0627\u0644\u0652\u062c"
    "\u064e\u062f\u0650\u064a\u062f\u0650"
)
HEBREW = (
    "\u05d1\u05bc\u05b0\u05e8\u05b5\u05d0\u05e9\u05c1\u05b4\u05d9\u05ea \u05d1\u05bc\u05b8"
    "\u05e8\u05b8\u05d0 \u05d0\u05b1\u05dc\u05b9\u05d4\u05b4\u05d9\u05dd \u05d0\u05b5\u05ea "
    "\u05d4\u05b7\u05e9\u05bc\u05b8\u05de\u05b7\u05d9\u05b4\u05dd \u05d5\u05b0\u05d0\u05b5"
    "\u05ea \u05d4\u05b8\u05d0\u05b8\u05e8\u05b6\u05e5"
)


def _unvocalised(text: str) -> str:
    return "".join(c for c in text if unicodedata.category(c) != "Mn")


@pytest.mark.parametrize("text", [ARABIC, HEBREW])
def test_vocalised_text_matches_plain(text: str) -> None:
    """Vocalised Arabic (harakat) and Hebrew (niqqud) read as the plain text with tokenizer 3,
    and so does Arabic stretched with tatweels; tokenizer 2 broke the words at every mark."""
    plain = _unvocalised(text)
    assert kernel.normalize(text, tokenizer=3) == kernel.normalize(plain, tokenizer=3)
    assert _similarity(text, plain, 3, "word:1") == 1.0
    assert _similarity(text, plain, 2, "word:1") < 0.2
    stretched = plain.replace("\u0644", "\u0644\u0640\u0640") if "\u0644" in plain else plain
    assert kernel.normalize(stretched, tokenizer=3) == kernel.normalize(plain, tokenizer=3)
    assert not any(b & kernel.DISGUISED for b in _word_bits(text + " " + stretched, 3))


# --- disguises --------------------------------------------------------------------------------


def test_disguised_texts_sketch_like_their_originals() -> None:
    """A corpus text and its disguise (look-alikes, invisibles, ligatures, full-width letters,
    no-break spaces, curly quotes, line-end hyphens) have the same tokenizer 3 sketch."""
    disguised = [disguise(t, seed=i) for i, t in enumerate(CORPUS)]
    a = kernel.sketch(CORPUS, tokenizer=3)
    b = kernel.sketch(disguised, tokenizer=3)
    assert np.array_equal(a.signatures, b.signatures) and np.array_equal(a.fp_values, b.fp_values)


@pytest.mark.parametrize(
    "text",
    [
        "\u0301\u0302\u0303 \u0345 \u20dd\u20de \u0640\u0640",  # nothing but marks
        "\ufdfa\ufdfb \u3300 \u2474 \u00bd \ud7a3" * 30,  # long expansions, a Hangul syllable
        "\u200d" * 5000 + "x" + "-\n\u0301" * 3000,
    ],
)
@pytest.mark.parametrize("simd", [True, False])
def test_odd_texts_do_not_crash(text: str, simd: bool) -> None:
    """Marks only, long expansions, long holds: the kernel answers, as the oracle does."""
    assert kernel.normalize(text, tokenizer=3) == oracle.normalized2(text, 3)
    s = kernel.sketch([text], shingle="word:2", tokenizer=3, simd=simd)
    assert int(s.shingles[0]) == len(oracle.sketch_hashes2(text, "word:2", version=3))
