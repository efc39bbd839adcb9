"""Alignment that survives edits (app/index/align.py) and the layout format 3 it reads.

The truth is the planting (tests/support/plant.py): where each changed passage sits in
the query and in its source, in code points, scored by PAN's measures
(tests/support/pan.py). The layouts are checked against the plain-Python word spans of
the text.
"""

from __future__ import annotations

import asyncio
import gzip
import random
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from support.corpus import read_corpus
from support.pan import Span, score
from support.plant import plantings, swapped
from support.segmented import segmented

from app import kernel
from app.index import Document, Index, Params
from app.index import passages as legacy
from app.index.align import Query, align
from app.index.passages import Layout, is_kernel_format
from app.index.sketch import _winnowed, passage_layouts
from app.store import Store

LANGUAGES = Path(__file__).parent / "data" / "languages"


def _params(bits: int = 8) -> Params:
    return Params.create("word:3", 128, 256, 1, 0.5, 2_000, passage_words=30, passage_bits=bits)


def _word_spans(text: str) -> list[tuple[int, int]]:
    """Code-point spans of runs of alphanumeric code points (the tokenizer's words)."""
    spans, start = [], None
    for i, ch in enumerate(text + " "):
        if ch.isalnum():
            start = i if start is None else start
        elif start is not None:
            spans.append((start, i))
            start = None
    return spans


async def _answers(
    url: str, collection: str, bits: int, sources: dict[str, str], queries: list[str]
) -> list:
    store = Store.connect(url, collection, 30.0)
    try:
        if bits == 0:  # a config as written before format 3: no passage_bits
            raw = _params().to_json().replace(b',"passage_bits":8', b"")
            await store.config(raw)
        index = await Index.open(store, _params(bits or 8), 200)
        assert index.params.passage_bits == bits
        await index.ingest([Document(t, i) for i, t in sources.items()])
        return [await index.containment_of_text(q, 0.01, 10) for q in queries]
    finally:
        await store.close()


def _scored(plants: list, answers: list, kind: str) -> tuple:
    truth, found = [], []
    for n, (p, a) in enumerate(zip(plants, answers, strict=True)):
        if p.kind != kind:
            continue
        truth += p.truth
        found += [
            Span(f"q{n}", x.query_start, x.query_end, r.id, x.source_start, x.source_end)
            for r in a.results
            for x in r.passages
        ]
    return score(truth, found), found


@pytest.fixture(scope="module")
def planted() -> tuple[dict[str, str], list]:
    sources, plants = plantings(
        12,
        seed=11,
        kinds=("edit5", "edit15", "swaps", "shuffle"),
        host_words=400,
        sources_wanted=120,
    )
    return sources, plants


def test_edited_copies_are_found_whole_with_exact_edges(
    redis_url: str, collection: str, planted: tuple
) -> None:
    """Passages of 40-150 words with 5% or 15% of their words edited, 12% of adjacent
    pairs swapped, or their sentences reordered, planted in unstored texts, are found as
    one passage each with the planting's edges: plagdet >= 0.9 per kind, precision >=
    0.98, granularity <= 1.1 (format 1, the layout before format 3, scores about 0.75,
    0.45 and 0.5 on the first three; reordered sentences were one passage each until
    2026-11-26)."""
    sources, plants = planted
    answers = asyncio.run(_answers(redis_url, collection, 8, sources, [p.query for p in plants]))
    for kind in ("edit5", "edit15", "swaps", "shuffle"):
        got, _ = _scored(plants, answers, kind)
        assert got.plagdet >= 0.9, (kind, got)
        assert got.precision >= 0.98, (kind, got)
        assert got.granularity <= 1.1, (kind, got)
    assert not any(a.capped for a in answers)


def test_unrelated_texts_share_no_passage(redis_url: str, collection: str, planted: tuple) -> None:
    """The negative control: hosts that share no 4-word run with any source get no
    passage at all."""
    sources, plants = planted
    controls = [p.query for p in plants if p.kind == "control"]
    answers = asyncio.run(_answers(redis_url, collection, 8, sources, controls))
    assert controls and all(not a.results for a in answers), [
        (r.id, r.passages) for a in answers for r in a.results
    ]


def test_a_collection_made_before_format_3_answers_as_before(
    redis_url: str, collection: str
) -> None:
    """A stored config without passage_bits keeps format 1: records hold the kernel's
    packing, and answers are passages.align's, found by the old code path."""
    sources, plants = plantings(3, seed=2, kinds=("edit5",), host_words=300, sources_wanted=40)
    queries = [p.query for p in plants]

    async def run() -> tuple[list, list[bytes], list[bytes]]:
        store = Store.connect(redis_url, collection, 30.0)
        try:
            await store.config(_params().to_json().replace(b',"passage_bits":8', b""))
            index = await Index.open(store, _params(), 200)
            assert index.params.passage_bits == 0
            texts = list(sources.values())
            await index.ingest([Document(t, i) for i, t in sources.items()])
            anchors, words = _winnowed(index.params, texts)
            answers = [await index.containment_of_text(q, 0.01, 10) for q in queries]
            stored = [(await index.get(i)).passages for i in sources]  # type: ignore[union-attr]
            return answers, kernel.pack_layouts(anchors, words), stored
        finally:
            await store.close()

    answers, packed, stored = asyncio.run(run())
    assert stored == packed and all(is_kernel_format(raw) for raw in packed)
    params = Params.stored(_params().to_json().replace(b',"passage_bits":8', b""))
    by_id = dict(zip(sources, packed, strict=True))
    for q, answer in zip(queries, answers, strict=True):
        query = legacy.Query(passage_layouts(params, [q])[0])
        for r in answer.results:
            assert r.passages == legacy.align(query, Layout.unpack(by_id[r.id]), 3, 10)


def test_format_3_keeps_every_span_and_hash() -> None:
    """Format 3 packs and unpacks word hashes of 4 to 16 bits, anchor words as one-byte
    steps or whole, and code-point spans with gaps and lengths past the 4-bit escape,
    equal to the text's own word spans."""
    text = (
        "Short words and " + "x" * 40 + " then\u00a0\u00a0  far" + " " * 30 + "apart, "
        "ÉCOLE élève 123 " + "w " * 70 + "end"
    )
    spans = _word_spans(text)
    rng = np.random.default_rng(1)
    for bits, anchor_words in ((4, [0, 3]), (6, [2, 90]), (8, [0, 300]), (13, [5]), (16, [])):
        hashes = rng.integers(0, 1 << bits, len(spans)).astype(np.uint16 if bits > 8 else np.uint8)
        anchor_hashes = [7, 9, 11][: len(anchor_words)]
        lay = Layout(
            np.array(anchor_hashes, np.uint32),
            np.array(anchor_words, np.int64),
            hashes,
            np.array([a for a, _ in spans], np.int64),
            np.array([b for _, b in spans], np.int64),
            bits=bits,
        )
        raw = lay.pack()
        assert not is_kernel_format(raw)
        back = Layout.unpack(raw)
        assert back.bits == bits
        assert back.word_hashes.tolist() == hashes.tolist()
        assert list(zip(back.starts.tolist(), back.ends.tolist(), strict=True)) == spans
        assert back.anchor_hashes.tolist() == anchor_hashes
        assert back.anchor_words.tolist() == anchor_words
        assert back.pack() == raw
    empty = Layout(
        np.zeros(0, np.uint32), np.zeros(0, np.int64), np.zeros(0, np.uint8),
        np.zeros(0, np.int64), np.zeros(0, np.int64), bits=8,
    )  # fmt: skip
    assert Layout.unpack(empty.pack()).words == 0


def test_an_ingest_stores_format_3_with_the_texts_spans(redis_url: str, collection: str) -> None:
    """A new collection's records hold format 3 with 8-bit hashes; the stored spans are
    the text's words."""
    text = (
        "The council met on Tuesday, and voted; nobody \u2014 not even the mayor \u2014 objected."
    )

    async def run() -> bytes:
        store = Store.connect(redis_url, collection, 30.0)
        try:
            index = await Index.open(store, _params(), 200)
            await index.ingest([Document(text, "a")])
            rec = await index.get("a")
            assert rec is not None
            return rec.passages
        finally:
            await store.close()

    raw = asyncio.run(run())
    back = Layout.unpack(raw)
    assert back.bits == 8 and not is_kernel_format(raw)
    assert list(zip(back.starts.tolist(), back.ends.tolist(), strict=True)) == _word_spans(text)


def test_repeated_text_is_bounded_and_says_capped() -> None:
    """10,000 repetitions of one sentence against a source of the same: the work stops at
    the bounds and the answer says capped."""
    sentence = "The quick brown fox jumps over the lazy dog near the river bank today. "
    params = _params()
    query, source = passage_layouts(params, [sentence * 10_000, sentence * 2_000])
    passages, capped = align(Query(query), source, 3, 10)
    assert capped
    assert len(passages) <= 10_000


def test_a_sources_own_repeats_that_the_query_lacks_are_not_capped() -> None:
    """A long source that repeats a common pair hundreds of times ("of the": more than a
    tenth of its words), against a query copying a stretch without it: nothing the query
    could seed was left out, so the copy is found and the answer is not capped; a query
    that uses the pair as often is capped."""
    rng = random.Random(4)
    words = [f"w{rng.randrange(10**6)}" for _ in range(3000)]
    source = " ".join(words[:1500] + [x for w in words[1500:] for x in (w, "of", "the")][:2400])
    copied = " ".join(words[100:160])
    filler = " ".join(f"f{rng.randrange(10**6)}" for _ in range(80))
    params = _params()
    query, src = passage_layouts(params, [f"{filler} {copied} {filler}", source])
    passages, capped = align(Query(query), src, 3, 10)
    assert [p.query_words[1] - p.query_words[0] for p in passages] == [60] and not capped
    repeats = " ".join(x for w in words[1500:1900] for x in (w, "of", "the"))
    (query,) = passage_layouts(params, [f"{copied} {repeats}"])
    _, capped = align(Query(query), src, 3, 10)
    assert capped


def test_a_shared_common_phrase_is_no_passage() -> None:
    """Two unrelated texts that share one common phrase of a few words (an anchor) share no
    passage: the phrase is under the least passage length."""
    phrase = "said on Tuesday that the"
    rng = random.Random(3)
    words = [f"w{rng.randrange(10**6)}" for _ in range(400)]
    a = " ".join(words[:100]) + f" {phrase} " + " ".join(words[100:200])
    b = " ".join(words[200:300]) + f" {phrase} " + " ".join(words[300:])
    params = _params()
    qa, sb = passage_layouts(params, [a, b])
    passages, capped = align(Query(qa), Layout.unpack(sb.pack()), 3, 10)
    assert passages == [] and not capped


def test_an_ingest_batch_packs_as_each_layout_does() -> None:
    """pack_batch (the ingest path) makes, for every text of a batch, the bytes that
    Layout.pack makes of that text alone: empty and one-word texts, long gaps and words,
    odd and even word counts, anchors far apart, at 8, 16 and 6 bits."""
    from app.index.passages import pack_batch

    texts = [t for _, t in read_corpus()[:40]] + [
        "",
        "one",
        "two words",
        "a" * 70 + "   \n\n" + " " * 40 + "b",
        " ".join(f"w{i}" for i in range(700))
        + " "
        + "same words again " * 200
        + "fresh " * 3
        + " ".join(f"v{i}" for i in range(40)),  # an anchor 600 words after the last
        "\u00e9t\u00e9 " * 3 + "ok",
    ]
    for bits in (8, 16, 6):
        params = _params(bits)
        a, w = _winnowed(params, texts)
        batch = pack_batch(
            a.hashes, a.starts, a.offsets, w.hashes, w.starts, w.ends, w.offsets, bits
        )
        each = [lay.pack() for lay in passage_layouts(params, texts)]
        assert len(batch) == len(texts)
        for i, (got, want) in enumerate(zip(batch, each, strict=True)):
            assert got == want, (bits, i)
            assert Layout.unpack(got).words == len(_word_spans(texts[i])), (bits, i)


def test_words_that_share_a_code_point_keep_their_spans() -> None:
    """Words folded out of one code point (1/2, Thai sara ae, polytonic omega, the
    square "corporation") share its span, so the next starts before one ends: formats 1,
    2 and 3, packed by the kernel and by numpy, read those spans back as the oracle puts
    them."""
    from support import oracle

    from app.index.passages import layouts_of

    texts = [
        "\u00bd cup of flour and \u00bd of sugar",
        "\u0e01 \u0e41\u0e21\u0e48 \u0e02 " * 4,
        "\u03c4\u1ff7 \u03bb\u03cc\u03b3\u1ff3 \u03ba\u03b1\u1f76 "
        "\u03c4\u1fc7 \u03c8\u03c5\u03c7\u1fc7",
        "\u682a \u337f \u4f1a\u793e x y z",
        "a\u00bdb \u00bd\u00bd end of it",
    ]
    for bits in (0, 8):
        params = Params.create(
            "word:3", 128, 256, 1, 0.5, 2_000, passage_words=30, passage_bits=bits, tokenizer=2
        )
        a, w = _winnowed(params, texts)
        by_kernel = kernel.pack_layouts(a, w, bits=bits)
        by_numpy = [
            lay.pack()
            for lay in layouts_of(
                a.hashes, a.starts, a.offsets, w.hashes, w.starts, w.ends, w.offsets, bits
            )
        ]
        for i, text in enumerate(texts):
            want = [(ls[0][1], ls[-1][1] + 1) for ls, _ in oracle.word_letters2(text)]
            assert any(s1 > s2 for (_, s1), (s2, _) in pairwise(want)), i  # overlaps
            packed = [by_kernel[i], by_numpy[i]]
            if not bits:
                packed.append(kernel.expand_layout(kernel.compact_layout(by_kernel[i])))
            for raw in packed:
                lay = Layout.unpack(raw)
                spans = zip(lay.starts.tolist(), lay.ends.tolist(), strict=True)
                assert list(spans) == want, (bits, i)
            assert by_kernel[i] == by_numpy[i], (bits, i)


def test_a_batch_with_anchors_far_apart_packs_their_words_whole() -> None:
    """Anchors more than 255 words apart (no one-byte steps) pack, in a batch, as
    Layout.pack packs them alone."""
    from app.index.passages import layouts_of, pack_batch

    n_words = 600
    starts = np.arange(n_words, dtype=np.int64) * 3
    ends = starts + 2
    hashes = np.arange(n_words, dtype=np.uint64) * np.uint64(2654435761)
    arrays = (
        np.array([5, 6, 7], np.uint64),
        np.array([0, 1500, 3], np.int64),  # text 0: words 0 and 500; text 1: word 1
        np.array([0, 2, 3], np.uint64),
        np.concatenate((hashes, hashes[:10])),
        np.concatenate((starts, starts[:10])),
        np.concatenate((ends, ends[:10])),
        np.array([0, n_words, n_words + 10], np.uint64),
    )
    batch = pack_batch(*arrays, 8)
    each = [lay.pack() for lay in layouts_of(*arrays, 8)]
    assert batch == each
    assert Layout.unpack(batch[0]).anchor_words.tolist() == [0, 500]
    assert Layout.unpack(batch[1]).anchor_words.tolist() == [1]


def test_layouts_of_two_formats_still_align() -> None:
    """A format 1 layout (an export of an older collection imported into a new one) and a
    format 3 one align in either role: the copied passage is found, at its edges."""
    sources, plants = plantings(2, seed=4, kinds=("verbatim",), host_words=300)
    plant = plants[0]
    truth = plant.truth[0]
    made = {}
    for bits in (0, 8):
        params = _params(bits)
        made[bits] = passage_layouts(params, [plant.query, sources[truth.source]])
    for q_bits, s_bits in ((8, 0), (0, 8)):
        query, source = made[q_bits][0], made[s_bits][1]
        passages, _ = align(Query(query), Layout.unpack(source.pack()), 3, 10)
        assert [(p.query_start, p.query_end, p.source_start, p.source_end) for p in passages] == [
            (truth.query_start, truth.query_end, truth.source_start, truth.source_end)
        ], (q_bits, s_bits)


def test_a_stored_document_finds_the_source_it_copies_with_edits(
    redis_url: str, collection: str
) -> None:
    """containment by id reads the stored format 3 layout as the query: a stored text
    holding a 15%-edited copy names its source, the passage at the planting's edges
    within two words."""
    sources, plants = plantings(4, seed=8, kinds=("edit15",), host_words=300)
    plant = next(p for p in plants if p.truth)
    truth = plant.truth[0]

    async def run() -> list:
        store = Store.connect(redis_url, collection, 30.0)
        try:
            index = await Index.open(store, _params(), 200)
            await index.ingest([Document(t, i) for i, t in sources.items()])
            await index.ingest([Document(plant.query, "essay")])
            answer = await index.containment_of_id("essay", 0.01, 10)
            assert answer is not None
            return answer.results
        finally:
            await store.close()

    results = asyncio.run(run())
    assert [r.id for r in results] == [truth.source]
    (p,) = results[0].passages
    q_words = _word_spans(plant.query)
    starts = [a for a, _ in q_words]
    first = next(i for i, (a, _) in enumerate(q_words) if a >= truth.query_start)
    last = max(i for i, (_, b) in enumerate(q_words) if b <= truth.query_end)
    assert abs(starts.index(p.query_start) - first) <= 2
    assert abs([b for _, b in q_words].index(p.query_end) - last) <= 2


def test_a_source_with_a_code_point_of_two_words_is_aligned(
    redis_url: str, collection: str
) -> None:
    """A stored text holding a code point folded into two words (1/2) answers a
    containment query, by text and by id, with the copied passage at its exact edges."""
    copied = (
        "glaciers in the alps lost a tenth of their remaining ice in two summers and the "
        "scientists who measure them every year say the melt outpaced every model so far"
    )
    source = "\u00bd " + copied + " and more besides"
    query = "an essay opens here and then " + copied + " before it ends"

    async def run() -> tuple:
        store = Store.connect(redis_url, collection, 30.0)
        try:
            index = await Index.open(store, _params(), 200)
            await index.ingest([Document(source, "half"), Document(query, "essay")])
            by_text = await index.containment_of_text(query, 0.01, 10)
            by_id = await index.containment_of_id("essay", 0.01, 10)
            return by_text, by_id
        finally:
            await store.close()

    for answer in asyncio.run(run()):
        assert answer is not None
        found = [r for r in answer.results if r.id != "essay"]  # by text: itself too
        assert [r.id for r in found] == ["half"]
        (p,) = found[0].passages
        assert query[p.query_start : p.query_end] == copied
        assert source[p.source_start : p.source_end] == copied


def test_a_stored_document_with_a_damaged_layout_says_so(redis_url: str, collection: str) -> None:
    """A layout an older release stored without its overflow values is skipped as a
    source, and asked about by id is a Conflict that says to ingest it again."""
    from app.core.errors import Conflict
    from app.index import records

    text = " ".join(f"word{i}" for i in range(60)) + " " + "x" * 40  # a 40-letter word
    query = "an essay begins " + text + " and ends"

    async def run() -> tuple:
        store = Store.connect(redis_url, collection, 30.0)
        try:
            index = await Index.open(store, _params(), 200)
            await index.ingest([Document(text, "old")])
            (handle,) = await store.ids.handles(["old"])
            (raw,) = await store.records([handle])
            rec = records.unpack(raw)
            damaged = records.pack(
                rec.id, rec.fingerprint, rec.band_keys, rec.shingles, rec.metadata,
                rec.passages[:-4],
            )  # fmt: skip
            await store.put_records([(handle, damaged)])
            as_source = await index.containment_of_text(query, 0.01, 10)
            with pytest.raises(Conflict, match="ingest it again"):
                await index.containment_of_id("old", 0.01, 10)
            return as_source
        finally:
            await store.close()

    assert asyncio.run(run()).results == []


def test_a_chance_match_on_a_copys_own_diagonal_does_not_hide_the_copy() -> None:
    """A three-word phrase that the text before a copy shares with the source, by chance
    on the copy's own diagonal and met first, is a weak hit; the copy's anchors on that
    diagonal are still judged, and the whole copy is found (it was missed)."""
    p = _params()
    rng = random.Random(11)
    vocab = [f"v{i}" for i in range(4000)]
    tried = 0
    for _ in range(400):
        source = [rng.choice(vocab) for _ in range(200)]
        (layout,) = passage_layouts(p, [" ".join(source)])
        early = [int(a) for a in layout.anchor_words if 80 <= a <= 100]  # 17+ words apart
        if not early:
            continue
        a = early[0]
        prefix = [rng.choice(vocab) for _ in range(40)]
        prefix[a - 80 : a - 77] = source[a : a + 3]  # on the diagonal 120 - 40 = 80
        query = prefix + source[120:170]
        q_layout = passage_layouts(p, [" ".join(query)])[0]
        if a - 80 not in q_layout.anchor_words.tolist():
            continue  # the phrase must be an anchor of the query too
        tried += 1
        found, _ = align(Query(q_layout), layout, 3, 10)
        assert len(found) == 1, found
        (qa, qb), (sa, sb) = found[0].query_words, found[0].source_words
        # Its edges: the copy's, or a word or two past where an 8-bit word hash collides
        # with the one before (an edit, then a match, is what extension takes).
        assert 38 <= qa <= 40 and qb == 90 and (sa, sb) == (qa + 80, 170), found
    assert tried >= 3


def _reordered_short_sentences(seed: int) -> tuple[list[str], list[str], tuple, tuple]:
    """A source of short sentences (5-9 words) and a query of host words holding 18 of them
    (about 125 words) in another order: both texts and the copy's (first, end) words in
    each."""
    rng = random.Random(seed)
    vocab = [f"v{i}" for i in range(4000)]
    sentences = [[rng.choice(vocab) for _ in range(rng.randint(5, 9))] for _ in range(60)]
    copied = sentences[20:38]
    order = list(range(len(copied)))
    while order == sorted(order):
        rng.shuffle(order)
    host = [rng.choice(vocab) for _ in range(400)]
    query = host[:200] + [w for i in order for w in copied[i]] + host[200:]
    words, before = sum(map(len, copied)), sum(map(len, sentences[:20]))
    source = [w for s in sentences for w in s]
    return query, source, (200, 200 + words), (before, before + words)


def test_a_copy_of_short_sentences_reordered_is_one_whole_passage() -> None:
    """Short sentences of a reordered copy often hold no anchor near their own diagonal,
    or their seeds join a chain through another sentence: they are sought between the
    copy's pieces, so the copy is one passage (it was split in several, sentences lost),
    its edges the copy's but where an 8-bit word hash collides past them."""
    p = _params()
    exact = 0
    for seed in range(30):
        query, source, q_copy, s_copy = _reordered_short_sentences(seed)
        q_layout, s_layout = passage_layouts(p, [" ".join(query), " ".join(source)])
        found, _ = align(Query(q_layout), s_layout, 3, 10)
        assert len(found) == 1, (seed, found)
        q_words, s_words = found[0].query_words, found[0].source_words
        for got, want in ((q_words, q_copy), (s_words, s_copy)):
            held = min(got[1], want[1]) - max(got[0], want[0])
            assert held >= 0.85 * (want[1] - want[0]), (seed, found)
        exact += all(
            abs(a - b) <= 2 for a, b in zip((*q_words, *s_words), (*q_copy, *s_copy), strict=True)
        )
    assert exact >= 27, exact


def test_a_sentence_the_source_repeats_is_placed_with_the_rest_of_its_copy() -> None:
    """A reordered copy's sentence that its source also holds far earlier is matched at
    the occurrence among the copy's other sentences, so the copy is one passage in one
    place of the source (the earlier occurrence won the tie and split it off: 8 of 40
    copies in pieces, 5 with one far away, before)."""
    whole = far = 0
    for seed in range(40):
        rng = random.Random(seed)
        vocab = [f"v{i}" for i in range(4000)]
        sentences = [[rng.choice(vocab) for _ in range(rng.randint(8, 12))] for _ in range(60)]
        sentences[5] = list(sentences[44])  # the copy's sentence, also far before it
        copied = sentences[40:48]
        order = [3, 0, 6, 4, 1, 7, 2, 5]  # sentence 44 (index 4) among the others
        host = [rng.choice(vocab) for _ in range(400)]
        query = host[:200] + [w for i in order for w in copied[i]] + host[200:]
        source = [w for s in sentences for w in s]
        first = sum(map(len, sentences[:40]))
        q_layout, s_layout = passage_layouts(_params(), [" ".join(query), " ".join(source)])
        found, _ = align(Query(q_layout), s_layout, 3, 10)
        far += any(p.source_words[0] < first - 40 for p in found)
        whole += len(found) == 1
    assert whole >= 36 and far <= 3, (whole, far)


def test_a_query_word_is_a_letter_when_it_is_one_code_point_touching_another() -> None:
    """Query.letters marks the tokens of Chinese or Japanese (one code point each, nothing
    between them) and nothing of spaced text: not a one-letter word (a, I), not a digit
    or letter cut off by punctuation (U.S., 3.5), not a CJK letter standing alone."""
    text = "I saw a U.S. 3.5 note: 东京的天气 very 好 and データ here"
    (layout,) = passage_layouts(_params(), [text])
    words = [text[a:b] for a, b in zip(layout.starts.tolist(), layout.ends.tolist(), strict=True)]
    marked = {w for w, m in zip(words, Query(layout).letters.tolist(), strict=True) if m}
    assert marked == set("东京的天气データ")


def test_a_kana_or_thai_letter_counts_for_half_a_word() -> None:
    """Query.weights: a letter of kana or Thai counts for half a word, a Han letter and a
    word of a spaced script for one; with no text at hand, every word for one."""
    text = "東京のデータとพื้นที่ and words"
    (layout,) = passage_layouts(_params(), [text])
    words = [text[a:b] for a, b in zip(layout.starts.tolist(), layout.ends.tolist(), strict=True)]
    weights = dict(zip(words, Query(layout, text).weights.tolist(), strict=True))
    assert weights["東"] == weights["京"] == weights["and"] == weights["words"] == 1.0
    assert weights["の"] == weights["デ"] == weights["พ"] == 0.5
    assert set(Query(layout).weights.tolist()) == {1.0}


def test_a_shared_run_of_kana_needs_twice_the_letters_of_han() -> None:
    """Between texts of unrelated Han, a shared run of 34 kana is no passage (Japanese
    and Thai controls shared such runs with unrelated texts: 3 of 10 Japanese ones named
    a source), 68 kana are, and 34 Han letters are as before (the passage guarantee)."""
    rng = random.Random(7)
    han = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    kana = [chr(c) for c in range(0x3041, 0x3094)]

    def noise(n: int) -> str:
        return "".join(rng.choice(han) for _ in range(n))

    for letters, n, found in ((kana, 34, False), (kana, 68, True), (han, 34, True)):
        shared = "".join(rng.choice(letters) for _ in range(n))
        query, source = noise(300) + shared + noise(300), noise(200) + shared + noise(200)
        params = _params()
        q_layout, s_layout = passage_layouts(params, [query, source])
        passages, _ = align(Query(q_layout, query), Layout.unpack(s_layout.pack()), 3, 30)
        assert bool(passages) is found, (n, letters is kana, passages)


def test_a_long_copy_cut_by_the_bounds_is_found_whole() -> None:
    """A text of one sentence repeated (its seed keys repeat past the bound: only its last
    few words are seeded) is found whole in its own copy, and so is a 160,000-word copy with
    every fourth word changed, whose runs outnumber the bound on runs so that its chain
    stops halfway and its extension carries it on (both found nothing: the few seeds hid
    the repeats' fallback, and the chain's own matches were too few for the whole)."""
    params = _params()
    sentence = "the cat sat on the mat and looked out of the window at the rain. "
    text = (sentence * 4000)[:250_000]  # a last repeat cut short, as a text may end
    query, source = passage_layouts(params, [text, text])
    passages, capped = align(Query(query), source, 3, 30)
    assert capped and [(p.query_words, p.source_words) for p in passages] == [
        ((0, len(query.word_hashes)), (0, len(source.word_hashes)))
    ]
    rng = random.Random(7)
    words = [f"w{rng.randrange(30_000)}x" for _ in range(160_000)]
    edited = [w if i % 4 else "zz" + w for i, w in enumerate(words)]
    query, source = passage_layouts(params, [" ".join(edited), " ".join(words)])
    passages, capped = align(Query(query), source, 3, 10)
    assert capped and [(p.query_words, p.source_words) for p in passages] == [
        ((1, 160_000), (1, 160_000))
    ]


def test_a_seed_met_by_chance_beside_a_copy_does_not_move_its_edges() -> None:
    """Two words before (or after) a verbatim copy whose 8-bit hashes equal the source's
    two words at the same distance, two words of gap away, are not taken into the
    passage: its edges stay at the first and last copied word in both texts, where its
    extension would put them (the lone seed was chained to the copy, and the passage
    began on it)."""
    params = _params()
    pool = [f"w{i}x" for i in range(6000)]
    (pool_layout,) = passage_layouts(params, [" ".join(pool)])
    by_hash: dict[int, list[str]] = {}
    for word, h in zip(pool, pool_layout.word_hashes.tolist(), strict=True):
        by_hash.setdefault(h, []).append(word)
    for seed in range(10):
        rng = random.Random(seed)
        source = [f"s{rng.randrange(10**6)}" for _ in range(100)]
        (s_layout,) = passage_layouts(params, [" ".join(source)])
        sh = s_layout.word_hashes.tolist()

        def twin(i: int, rng: random.Random = rng, sh: list[int] = sh) -> str:
            return rng.choice(by_hash[sh[i]])  # another word of the same 8-bit hash

        def other(i: int, rng: random.Random = rng, sh: list[int] = sh) -> str:
            return rng.choice([ws[0] for h, ws in by_hash.items() if h != sh[i]])

        copy = source[30:60]
        before = [twin(26), twin(27), other(28), other(29)]
        after = [other(60), other(61), twin(62), twin(63)]
        (q_layout,) = passage_layouts(params, [" ".join(before + copy + after)])
        assert q_layout.word_hashes.tolist()[:2] == sh[26:28]  # the chance seed is there
        found, _ = align(Query(q_layout), s_layout, 3, 10)
        assert [(p.query_words, p.source_words) for p in found] == [((4, 34), (30, 60))], seed


def test_a_copy_edited_once_beside_its_end_keeps_the_words_past_the_edit() -> None:
    """A copy whose second (or second-last) word was replaced keeps its first (last) word:
    one word of gap is outweighed by the two-word seed past it, as its extension takes it."""
    rng = random.Random(3)
    source = [f"s{rng.randrange(10**6)}" for _ in range(100)]
    copy = list(source[30:60])
    copy[2] = "replacedx"
    copy[-3] = "changedx"
    query = ["hostx", "wordsx", *copy, "morex", "hostx"]
    q_layout, s_layout = passage_layouts(_params(), [" ".join(query), " ".join(source)])
    found, _ = align(Query(q_layout), s_layout, 3, 10)
    assert [(p.query_words, p.source_words) for p in found] == [((2, 32), (30, 60))]


def _entries(rng: random.Random, count: int) -> list[str]:
    """Entries of one template (as a manual's list of symbols), each with its own name and
    a few words of its own."""
    out = []
    for _ in range(count):
        name, a, b = (f"n{rng.randrange(10**6)}" for _ in range(3))
        out.append(
            f"This variable conditionally defines the {name} symbol, which indicates to the "
            f"C program that the {a} {b} routine is available to the code that needs it."
        )
    return out


def test_a_template_both_texts_repeat_is_no_passage_but_a_copied_entry_is() -> None:
    """Texts made of one template's entries with other names share runs of up to ten words
    in every entry, and no passage (an audit's Perl Config.pod entries got containment
    1.0); two of the source's entries copied whole, names and all, are one passage (which
    may take in the entries of the template beside them: their runs lie on its diagonal)."""
    p = _params()
    rng = random.Random(5)
    source = _entries(rng, 6)
    query = _entries(rng, 4)
    s_layout, q_layout = passage_layouts(p, [" ".join(source), " ".join(query)])
    assert align(Query(q_layout), s_layout, 3, 30)[0] == []
    copied = " ".join([query[0], source[2], source[3], query[1]])
    (c_layout,) = passage_layouts(p, [copied])
    found, _ = align(Query(c_layout), s_layout, 3, 30)
    assert len(found) == 1
    got = copied[found[0].query_start : found[0].query_end]
    assert f"{source[2]} {source[3]}" in got, got


def test_a_passage_both_texts_hold_twice_is_found_twice() -> None:
    """A passage the source holds twice, pasted twice verbatim into a query, is two
    passages: a verbatim run as long as the shortest passage is the copy's own even where
    every pair of it repeats in both texts (a reviewer found it dropped as a template)."""
    rng = random.Random(11)

    def words(count: int) -> list[str]:
        return [f"w{rng.randrange(10**7)}" for _ in range(count)]

    passage = words(150)
    source = [*words(200), *passage, *words(200), *passage]
    query = [*words(200), *passage, *words(150), *passage]
    q_layout, s_layout = passage_layouts(_params(), [" ".join(query), " ".join(source)])
    found, _ = align(Query(q_layout), s_layout, 3, 30)
    assert sorted(p.query_words for p in found) == [(200, 350), (500, 650)]


@pytest.mark.parametrize("seed", range(8))
def test_an_edited_copy_of_a_source_with_a_chorus_is_found(seed: int) -> None:
    """A copy (15% of its words replaced) of a song whose chorus is three quarters of it is one
    passage over the copy: the chorus repeats in both texts, but lies on the diagonal of
    the verses the copy took with it (a reviewer found such a copy dropped whole)."""
    rng = random.Random(seed)

    def words(count: int) -> list[str]:
        return [f"w{rng.randrange(10**7)}" for _ in range(count)]

    chorus = words(60)
    source = [w for _ in range(4) for w in (*words(20), *chorus)]
    copy = [f"edit{rng.randrange(10**7)}" if rng.random() < 0.15 else w for w in source]
    query = [*words(100), *copy, *words(100)]
    q_layout, s_layout = passage_layouts(_params(), [" ".join(query), " ".join(source)])
    found, _ = align(Query(q_layout), s_layout, 3, 30)
    covered = sum(min(b, 420) - max(a, 100) for a, b in (p.query_words for p in found))
    assert covered >= 0.9 * len(copy), [p.query_words for p in found]


def test_form_letters_sharing_a_long_fixed_paragraph_are_no_passage() -> None:
    """Two batches of one form letter to other people share its fixed paragraph of ~40
    words in every letter, and no passage, one side's two letters against the other's
    six too: a verbatim run counts as the copy's own only where both texts hold it at
    most twice (reviewers found the whole query one passage when any repeat counted, and
    when one text's did)."""
    rng = random.Random(9)

    def letters(count: int) -> str:
        return " ".join(
            f"Dear n{rng.randrange(10**6)}, thank you for your application for the post of "
            f"r{rng.randrange(10**6)} at f{rng.randrange(10**6)}. After careful thought about "
            "all of the applications we received we are sorry to tell you that we will not "
            "take your application further this time. We will keep your details on file and "
            "may write to you again when a suitable post arises. Yours sincerely, "
            f"b{rng.randrange(10**6)}, t{rng.randrange(10**6)}."
            for _ in range(count)
        )

    for stored, asked in ((6, 4), (6, 2), (2, 6)):
        s_layout, q_layout = passage_layouts(_params(), [letters(stored), letters(asked)])
        assert align(Query(q_layout), s_layout, 3, 30)[0] == [], (stored, asked)


def _pages(lang: str) -> list[str]:
    """The Debian Reference's pages in lang (tests/data/languages), without their number."""
    with gzip.open(LANGUAGES / f"{lang}.txt.gz", "rt", encoding="utf-8") as f:
        return [p.split("\n", 1)[1] for p in f.read().split("\n\f\n")]


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_a_chinese_or_japanese_copy_with_letters_swapped_is_one_passage(lang: str) -> None:
    """A 320-letter copy with 12% of its letters swapped with the next is one passage on
    its source, however its seeds fall (a letter counts as half a word in the gaps between
    a copy's pieces, and pieces on one diagonal join over an edited stretch: an audit's
    Japanese copies came back in 2 or 3 passages, granularity 1.44), marking most of it."""
    pages = _pages(lang)
    rng = random.Random(11)
    params = _params()
    for i in range(12):
        source, host = pages[i], pages[40 + i % 10]
        first = rng.randrange(0, len(source) - 320)
        copy = "".join(swapped(list(source[first : first + 320]), 0.12, rng, segmented))
        at = host.find("\n\n", len(host) // 2)
        query = host[:at] + "\n\n" + copy + "\n\n" + host[at:]
        start, end = at + 2, at + 2 + len(copy)
        q_layout, s_layout = passage_layouts(params, [query, source])
        passages, _ = align(Query(q_layout, query), Layout.unpack(s_layout.pack()), 3, 30)
        on_copy = [p for p in passages if p.query_start < end and p.query_end > start]
        assert len(on_copy) == 1, (lang, i, [(p.query_start, p.query_end) for p in passages])
        (p,) = on_copy
        assert min(p.query_end, end) - max(p.query_start, start) >= 0.8 * len(copy), (lang, i)


def test_phrases_shared_by_chance_before_an_edited_copy_do_not_hide_it(
    redis_url: str, collection: str
) -> None:
    """A locally shuffled copy of an article's second half that is named alone is still
    named when up to eight three-word phrases of the article's first part come before it,
    each in other text (an outside audit: with four looks at a pair's neighbourhoods, the
    phrases, met first, used them up and the copy went unnamed)."""
    docs = dict(read_corpus())
    ids = [i for i, t in list(docs.items())[:300] if len(t.split()) >= 250]
    others = [t for t in list(docs.values())[500:]]
    queries: list[str] = []
    for sid in ids:
        text = docs[sid]
        cut = len(" ".join(text.split()[:130]))
        rng = random.Random(sid)
        words = text[cut:].split()
        for _ in range(len(words) // 4):  # a quarter of the words moved one or two places
            i = rng.randrange(len(words) - 2)
            j = i + rng.choice([1, 2])
            words[i], words[j] = words[j], words[i]
        found = kernel.winnow([text], shingle="word:3", passage_words=30, seed=1, tokenizer=4)
        phrases = [" ".join(text[int(s) :].split()[:3]) for s in found.starts if s < cut - 100]
        filler = [" ".join(others[(len(queries) + i) % len(others)].split()[:40]) for i in range(9)]
        for n in (0, 5, 8):
            parts = [f"{filler[i]} as in {ph}." for i, ph in enumerate(reversed(phrases[:n]))]
            queries.append(" ".join([*parts, filler[8], " ".join(words)]))
    params = Params.create(
        "word:3", 128, 256, 1, 0.5, 2_000, passage_words=30, passage_bits=8, tokenizer=4
    )
    answers = asyncio.run(_named(redis_url, collection, params, docs, queries))
    named = [answers[3 * k : 3 * k + 3] for k in range(len(ids))]
    alone = [(sid, got) for sid, got in zip(ids, named, strict=True) if sid in got[0]]
    assert len(alone) >= len(ids) // 2  # most such copies are named alone
    lost = [(sid, [sid in g for g in got]) for sid, got in alone if not all(sid in g for g in got)]
    assert not lost, lost


async def _named(
    url: str, collection: str, params: Params, docs: dict[str, str], queries: list[str]
) -> list[set[str]]:
    """The ids each query's containment names (no threshold: a passage's worth each)."""
    store = Store.connect(url, collection, 30.0)
    try:
        index = await Index.open(store, params, 200)
        await index.ingest([Document(t, i) for i, t in list(docs.items())[:400]])
        return [{r.id for r in (await index.containment_of_text(q)).results} for q in queries]
    finally:
        await store.close()
