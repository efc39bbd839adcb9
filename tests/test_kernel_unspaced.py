# ruff: noqa: RUF001  (full-width letters and CJK punctuation are the point)
"""Tokenizer 2's scripts written without spaces (issue 31): the C kernel, through app.kernel
(``tokenizer=2``, ``unspaced_k``), against the plain-Python rule of tests/support/segmented.py
on tokenizer 2's folding (tests/support/oracle.py)."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import oracle, segmented

from app import kernel

DATA = Path(__file__).parent / "data" / "languages"


def _pages(lang: str) -> list[str]:
    with gzip.open(DATA / f"{lang}.txt.gz", "rt", encoding="utf-8") as f:
        raw = f.read()
    return [page.split("\n", 1)[1] for page in raw.split("\n\f\n")]


SAMPLES = {
    "zh": "在GNU/Linux和其他类Unix操作系统中，文件被组织到目录中。"
    "所有的文件和目录排放在以“/”为根的巨大的树里。",
    "ja": "GNU/Linux や他の Unix 的オペレーティングシステムでは、"
    "ファイルはディレクトリーに整理されています。サーバー々〆",
    "th": "ภาษาไทยเขียนติดกันโดยไม่เว้นวรรคระหว่างคำ ที่นี่มีสระและวรรณยุกต์",
    "ko": "한국어는 띄어쓰기를 합니다. 단어 토큰을 그대로 유지합니다",
    "mixed": "用Python编程：pip install numpy，然后 import numpy as np。"
    "Ｆｕｌｌ width ＡＢＣ 和 ｶﾀｶﾅ",
    "lao-khmer-myanmar": "ພາສາລາວ ភាសាខ្មែរ မြန်မာဘာသာ ၁၂၃",
}
TEXTS = [*SAMPLES.values(), *(p[:400] for lang in ("zh", "ja", "en") for p in _pages(lang)[:3])]

UNSPACED_ALPHABET = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着"
    "去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主"
    "行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二"
    "理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走"
    "电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市"
    "眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提"
    "感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它"
    "许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青"
    "管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步"
    "完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持"
    "取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯"
    "专石若兵弟谁校读志飞观争究包组造落视济喜离虽坏兴妈云假米希热随火ひらがなカタカナ"
    "漢字ภาษาไทยພາສາລາວភាសាខ្មែរမြန်မာ"
)
tokens_part = st.one_of(
    st.text(alphabet=UNSPACED_ALPHABET, min_size=1, max_size=30),
    st.sampled_from(
        ["Python", "numpy", "x86_64", "한국어", "the", "cat", "ß", "Ｆｕｌｌ", "ｶﾀｶﾅ", "ー", "々"]
    ),
    st.text(min_size=1, max_size=6),
)
separators = st.sampled_from(["", " ", "、", "。", "，", "\n", "・", "-", "　"])
mixed_texts = st.lists(st.tuples(tokens_part, separators), max_size=40).map(
    lambda parts: "".join(t + s for t, s in parts)
)


def _selections(w: kernel.Winnowed, i: int) -> list[tuple[int, int, int]]:
    h, s, e = w.selections(i)
    return list(zip(h.tolist(), s.tolist(), e.tolist(), strict=True))


def test_default_k_is_two_k_plus_one() -> None:
    """Tokenizer 2 without unspaced_k gives unspaced letters 2K + 1 tokens (ND_UNSPACED_K)."""
    text = SAMPLES["mixed"]
    for k in (1, 3, 8):
        got = kernel.sketch([text], shingle=f"word:{k}", tokenizer=2, fingerprint_size=4096)
        want = segmented.sketch_hashes(text, k, segmented.default_kc(k))
        assert got.fingerprints[0].tolist() == sorted({h >> 32 for h in want})


def test_rule_of_k() -> None:
    """Letters of unspaced scripts get shingles of 2K + 1 tokens, within the kernel's K."""
    assert [kernel.unspaced_k(k) for k in (1, 3, 5, 7, 8, 16)] == [3, 7, 11, 15, 16, 16]


def test_every_code_point_is_classed_as_the_oracle_says() -> None:
    """Over every code point, the generated tables' unspaced bit (Script property) and the
    oracle's block ranges make the same tokens: one winnow per token, spans included."""
    text = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
    got = kernel.winnow([text], shingle="word:1", passage_words=1, tokenizer=2, unspaced_k=1)
    want = [
        (s, e) for s, e in ((t[1][0][1], t[1][-1][1] + 1) for t in segmented.token_letters(text))
    ]
    assert list(zip(got.starts.tolist(), got.ends.tolist(), strict=True)) == want


@pytest.mark.parametrize("name", sorted(SAMPLES))
@pytest.mark.parametrize("k", [1, 3, 5])
def test_sketch_hashes_match_oracle(name: str, k: int) -> None:
    """Every shingle hash (a window of one selects them all) is the oracle's, zh, ja, th, ko
    and mixed text alike, and the sketch counts them."""
    text = SAMPLES[name]
    kc = kernel.unspaced_k(k)
    got = kernel.winnow(
        [text], shingle=f"word:{k}", passage_words=k, tokenizer=2, unspaced_k=kc, seed=7
    )
    assert got.window == 1
    assert set(got.hashes.tolist()) == segmented.sketch_hashes(text, k, kc, 7)
    s = kernel.sketch(
        [text], shingle=f"word:{k}", tokenizer=2, unspaced_k=kc, seed=7, fingerprint_size=4096
    )
    assert int(s.shingles[0]) == len(segmented.sketch_hashes(text, k, kc, 7))


def test_korean_keeps_words_and_latin_is_version_1() -> None:
    """Hangul and Latin text make the very shingles of tokenizer 1 under tokenizer 2."""
    for text in (SAMPLES["ko"], "The quick brown fox jumps over the lazy dog again and again"):
        v1 = kernel.sketch([text], fingerprint_size=4096)
        v2 = kernel.sketch([text], fingerprint_size=4096, tokenizer=2)
        assert np.array_equal(v1.fp_values, v2.fp_values)
        assert segmented.tokens(text) == oracle.words(text)


def test_version_1_keeps_clauses_as_words() -> None:
    """With tokenizer 1 a Chinese clause stays one word, byte for byte as before."""
    text = SAMPLES["zh"]
    got = kernel.winnow([text], shingle="word:1", passage_words=1)
    assert len(got.hashes) == len(oracle.words(text)) < len(segmented.tokens(text)) // 5
    assert segmented.tokens(text, version=1) == segmented.tokens(text)  # no other fold here


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(mixed_texts, min_size=1, max_size=4),
    st.sampled_from([1, 2, 3, 4]),
    st.integers(1, 16),
    st.integers(0, 12),
    st.integers(0, 2**64 - 1),
)
def test_winnow_matches_oracle(batch: list[str], k: int, kc: int, extra: int, seed: int) -> None:
    """winnow() selects the oracle's (hash, start, end) for any k, kc, window and seed, and
    the scalar path selects the same."""
    passage = k + extra
    got = kernel.winnow(
        batch, shingle=f"word:{k}", passage_words=passage, tokenizer=2, unspaced_k=kc, seed=seed
    )
    for i, text in enumerate(batch):
        assert _selections(got, i) == segmented.winnow(text, k, kc, got.window, seed), i
    scalar = kernel.winnow(
        batch,
        shingle=f"word:{k}",
        passage_words=passage,
        tokenizer=2,
        unspaced_k=kc,
        seed=seed,
        simd=False,
    )
    for a, b in zip(
        (got.hashes, got.starts, got.ends, got.offsets),
        (scalar.hashes, scalar.starts, scalar.ends, scalar.offsets),
        strict=True,
    ):
        assert np.array_equal(a, b)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(mixed_texts, min_size=1, max_size=4), st.sampled_from([1, 2, 3, 5]), st.integers(1, 16)
)
def test_sketch_matches_oracle_scalar_and_simd(batch: list[str], k: int, kc: int) -> None:
    """Shingle counts and complete fingerprints are the oracle's, short texts one shingle,
    and the SIMD and scalar sketches are identical."""
    got = kernel.sketch(
        batch, shingle=f"word:{k}", tokenizer=2, unspaced_k=kc, fingerprint_size=4096
    )
    scalar = kernel.sketch(
        batch, shingle=f"word:{k}", tokenizer=2, unspaced_k=kc, fingerprint_size=4096, simd=False
    )
    assert np.array_equal(got.signatures, scalar.signatures)
    assert np.array_equal(got.fp_values, scalar.fp_values)
    for i, text in enumerate(batch):
        want = segmented.sketch_hashes(text, k, kc, 1)
        assert int(got.shingles[i]) == len(want)
        assert got.fingerprints[i].tolist() == sorted({h >> 32 for h in want})


def _ascii_runs_between_ideographs(rng: random.Random) -> str:
    """Runs of plain ASCII words long enough for whole 64-byte blocks (the sketch reads them
    with tokenizer 1's loop), between ideographs and hyphens that hold words, so that the
    rolling window changes form with few items in it, with many, and with unspaced letters
    in it."""
    parts = []
    for _ in range(rng.randrange(1, 6)):
        if rng.random() < 0.7:
            parts.append(
                "".join(rng.choice(UNSPACED_ALPHABET[:60]) for _ in range(rng.randrange(1, 20)))
            )
        n_words = rng.choice([1, 3, 10, 30, 80])
        words = [
            "".join(rng.choice("abcdefgh") for _ in range(rng.randrange(1, 12)))
            for _ in range(n_words)
        ]
        if rng.random() < 0.3:
            words[rng.randrange(n_words)] += "-\n"
        parts.append(" ".join(words))
    return rng.choice(["", " ", "x "]) + rng.choice([" ", ""]).join(parts)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 15, 16])
def test_sketch_ascii_runs_match_oracle_and_scalar(k: int) -> None:
    """Long ASCII runs between unspaced letters: the SIMD sketch, which hands the runs to
    tokenizer 1's word loop and converts the rolling window there and back, is the scalar
    sketch and the oracle's, for every K and unspaced K."""
    rng = random.Random(31 + k)
    batch = [_ascii_runs_between_ideographs(rng) for _ in range(24)]
    for kc in sorted({1, 7, 16, 2 * k + 1 if k < 8 else 16}):
        got = kernel.sketch(
            batch, shingle=f"word:{k}", tokenizer=2, unspaced_k=kc, fingerprint_size=4096
        )
        scalar = kernel.sketch(
            batch,
            shingle=f"word:{k}",
            tokenizer=2,
            unspaced_k=kc,
            fingerprint_size=4096,
            simd=False,
        )
        assert np.array_equal(got.signatures, scalar.signatures)
        assert np.array_equal(got.fp_values, scalar.fp_values)
        assert np.array_equal(got.shingles, scalar.shingles)
        for i, text in enumerate(batch):
            want = segmented.sketch_hashes(text, k, kc, 1)
            assert int(got.shingles[i]) == len(want), (k, kc, i)
            assert got.fingerprints[i].tolist() == oracle.fingerprint(want, 4096)


def test_long_pages_match_oracle_and_simd() -> None:
    """Whole pages of the Chinese, Japanese and English books (ASCII blocks take the AVX2
    path, the rest the scalar one) match the oracle and the scalar path."""
    docs = [p for lang in ("zh", "ja", "en") for p in _pages(lang)[:6]]
    got = kernel.winnow(docs, shingle="word:3", passage_words=30, tokenizer=2, unspaced_k=7)
    scalar = kernel.winnow(
        docs, shingle="word:3", passage_words=30, tokenizer=2, unspaced_k=7, simd=False
    )
    assert np.array_equal(got.hashes, scalar.hashes) and np.array_equal(got.starts, scalar.starts)
    for i, text in enumerate(docs):
        assert _selections(got, i) == segmented.winnow(text, 3, 7, got.window), i
    s = kernel.sketch(docs, tokenizer=2, unspaced_k=7, fingerprint_size=4096)
    assert s.shingles.tolist() == [len(segmented.sketch_hashes(t, 3, 7)) for t in docs]


def test_offsets_are_code_points_of_the_text() -> None:
    """A token's span slices the str to its letter, astral ideographs included."""
    text = "𠀀字 abc 𠀁x"
    got = kernel.winnow([text], shingle="word:1", passage_words=1, tokenizer=2, unspaced_k=1)
    assert [text[s:e] for s, e in zip(got.starts.tolist(), got.ends.tolist(), strict=True)] == [
        "𠀀",
        "字",
        "abc",
        "𠀁",
        "x",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "。、！？「」『』（）・…　",
        "！？。、",
        "๏ ๚ ๛ ฯ",
        "《》〈〉【】〔〕",
        "♪★☆→←",
        "\u3000\u3000",
    ],
)
def test_punctuation_only_has_no_shingles(text: str) -> None:
    """A text of only punctuation or symbols, in any script, has no tokens and no shingles."""
    if "ฯ" in text:  # THAI CHARACTER PAIYANNOI is a letter: one token
        assert segmented.tokens(text) == ["ฯ"]
        return
    assert segmented.tokens(text) == []
    s = kernel.sketch([text], tokenizer=2, unspaced_k=7)
    assert int(s.shingles[0]) == 0
    assert len(kernel.winnow([text], tokenizer=2, unspaced_k=7).hashes) == 0


def test_five_megabytes_of_one_ideograph() -> None:
    """5 MB of one CJK character repeated: one distinct shingle; its words are every letter,
    and its anchors one per window (robust winnowing), not one per letter as ties to the
    rightmost would give."""
    text = "字" * (5 * 1024 * 1024 // 3)
    s = kernel.sketch([text], tokenizer=2, unspaced_k=7)
    assert int(s.shingles[0]) == 1
    w = kernel.winnow([text], shingle="word:1", passage_words=1, tokenizer=2, unspaced_k=1)
    assert len(w.hashes) == len(text)
    anchors = kernel.winnow([text], shingle="word:3", passage_words=30, tokenizer=2, unspaced_k=7)
    assert len(anchors.hashes) == (len(text) - 7) // anchors.window + 1
    assert segmented.robust_positions([5] * 100, 28) == [27, 55, 83]


def test_bad_unspaced_k_is_refused() -> None:
    """unspaced_k beyond MAX_K, negative, with char shingles or tokenizer 1 is a clear error."""
    for kwargs in (
        {"unspaced_k": 17, "tokenizer": 2},
        {"unspaced_k": -1, "tokenizer": 2},
        {"unspaced_k": 3, "shingle": "char:3", "tokenizer": 2},
        {"unspaced_k": 3},
    ):
        with pytest.raises(kernel.InvalidParameterError):
            kernel.sketch(["字"], **kwargs)
        with pytest.raises(kernel.InvalidParameterError):
            kernel.winnow(["字"], **kwargs)
