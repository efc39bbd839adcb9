"""Containment at the defaults: every source of a long text that copies from several is
named, on a verified passage, whatever the text's length (issue #32).

Stored: a few hundred articles of the test corpus. Queried: 3,000 words of articles
that are not stored, with passages of 60-150 words of five stored ones pasted in.
The oracle for "really shared" is the plain-Python shingle sets of
tests/support/oracle.py; a named source must share with the text a run of at least
passage_words words that the oracle finds in both.
"""

from __future__ import annotations

import asyncio
import random
import re

import pytest
from support import oracle
from support.corpus import read_corpus

from app.index import Document, Index, Params
from app.index.errors import TooLargeError
from app.index.passages import Passage
from app.store import Store

pytestmark = pytest.mark.both_stores

PASSAGE_WORDS = 30
STORED = 300
OWN_WORDS = ["which", "we", "all", "know", "quite", "well", "now"]
CAP = 20  # a small cap, so a 3,000-word text has far more candidates than it


def _submission(rng: random.Random, stored: list[tuple[str, str]], filler: list[str], k: int):  # type: ignore[no-untyped-def]
    """3,000 words of filler with k passages of 60-150 words of k stored articles."""
    picks = rng.sample([d for d in stored if len(d[1].split()) >= 160], k)
    pieces = []
    for doc_id, text in picks:
        words = text.split()
        n = rng.randint(60, 150)
        first = rng.randint(0, len(words) - n)
        pieces.append((doc_id, " ".join(words[first : first + n])))
    rest = 3000 - sum(len(p.split()) for _, p in pieces)
    fill = filler[:rest]
    cuts = sorted(rng.sample(range(len(fill)), k))
    parts, prev = [], 0
    for cut, (_, piece) in zip(cuts, pieces, strict=True):
        parts += [" ".join(fill[prev:cut]), piece]
        prev = cut
    parts.append(" ".join(fill[prev:]))
    return " ".join(p for p in parts if p), pieces


def _shares_a_passage(query: str, source: str, start: int, end: int) -> bool:
    """Whether the query's words in [start, end) are at least PASSAGE_WORDS long and at
    least half their shingles are the source's (plain Python): a copied passage,
    edited or not, rather than common phrases strung together."""
    words = oracle.words(query[start:end])
    mine = oracle.shingles(query[start:end])
    return len(words) >= PASSAGE_WORDS and len(mine & oracle.shingles(source)) >= len(mine) / 2


async def _open(url: str, collection: str) -> Index:
    params = Params.create("word:3", 128, 256, 1, 0.5, passage_words=PASSAGE_WORDS)
    return await Index.open(Store.connect(url, collection, 10.0), params, CAP)


def test_every_source_of_a_long_text_is_named_at_the_defaults(
    store_url: str, collection: str
) -> None:
    """Five passages pasted into 3,000 words: all five sources are named with no
    threshold or limit given, uncapped, and every named source holds a passage of
    passage_words words, most of whose shingles it has (common phrases alone name nothing)."""
    corpus = read_corpus()
    stored, rest = corpus[:STORED], corpus[STORED:]
    filler = [w for _, text in rest for w in text.split()]
    texts = dict(stored)
    rng = random.Random(32)

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(t, i) for i, t in stored])
            for trial in range(3):
                query, pieces = _submission(rng, stored, filler[trial * 4000 :], 5)
                result = await index.containment_of_text(query)
                named = {r.id for r in result.results}
                assert {doc_id for doc_id, _ in pieces} <= named, (trial, named)
                assert not result.capped
                for r in result.results:
                    assert any(
                        _shares_a_passage(query, texts[r.id], p.query_start, p.query_end)
                        for p in r.passages
                    ), r.id
                    assert 0 < r.containment < 0.1  # the share, which no longer decides
        finally:
            await index.store.close()

    asyncio.run(run())


def test_a_short_source_copied_whole_into_a_long_text_is_named(
    store_url: str, collection: str
) -> None:
    """Stored texts of 10 to 29 words (shorter than passage_words, at least a third of
    it) copied whole into 3,000 words are each named with the copy as a passage; one
    of 8 words (under a third) is not, as the docs say."""
    corpus = read_corpus()
    stored, rest = corpus[:STORED], corpus[STORED:]
    filler = [w for _, text in rest for w in text.split()]
    rng = random.Random(10)
    lengths = (10, 12, 15, 20, 25, 29)
    shorts = {}
    for n in (*lengths, 8):  # sentences of stored articles' words, cut to n words
        words = rng.choice(stored)[1].split()
        at = rng.randrange(len(words) - n)
        shorts[f"short{n}"] = " ".join(words[at : at + n])

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(t, i) for i, t in [*stored, *shorts.items()]])
            for trial in range(3):
                fill = filler[trial * 4000 : trial * 4000 + 3000]
                cuts = sorted(rng.sample(range(len(fill)), len(shorts)))
                parts, prev = [], 0
                for cut, text in zip(cuts, shorts.values(), strict=True):
                    parts += [" ".join(fill[prev:cut]), text]
                    prev = cut
                query = " ".join([*parts, " ".join(fill[prev:])])
                result = await index.containment_of_text(query)
                named = {r.id: r for r in result.results}
                for n in lengths:
                    doc_id = f"short{n}"
                    assert doc_id in named, (trial, n, sorted(named))
                    spans = [query[p.query_start : p.query_end] for p in named[doc_id].passages]
                    assert any(oracle.words(shorts[doc_id]) == oracle.words(x) for x in spans)
                assert "short8" not in named
        finally:
            await index.store.close()

    asyncio.run(run())


def test_a_passage_names_its_source_only_when_both_its_sides_are_long_enough(
    store_url: str, collection: str
) -> None:
    """26-29 copied words with 4-7 of the writer's own inserted in their middle make a
    passage of 30 query words or more over fewer than 30 source words: at a threshold it
    is a passage, and without one it names no source (an outside audit saw a manual page
    named for a 30-word paraphrase of 24 of its words). At least one such passage must
    arise for this to test anything."""
    corpus = read_corpus()
    stored = [(i, t) for i, t in corpus[:STORED] if len(t.split()) > 150][:20]
    host = " ".join(corpus[-1][1].split()[:80])
    rng = random.Random(5)

    async def run() -> int:
        index = await _open(store_url, collection)
        seen = 0
        try:
            await index.ingest([Document(t, i) for i, t in stored])
            for k in range(40):
                doc_id, text = stored[k % len(stored)]
                words = text.split()
                at, n = rng.randrange(len(words) - 40), rng.choice([26, 27, 28, 29])
                copy = words[at : at + n]
                own = OWN_WORDS[: rng.choice([4, 5, 6, 7])]
                query = f"{host} {' '.join(copy[: n // 2] + own + copy[n // 2 :])} {host}"
                shared = await index.containment_of_text(query, 0.01, None)
                long_query_side = [
                    p
                    for r in shared.results
                    if r.id == doc_id
                    for p in r.passages
                    if len(oracle.words(query[p.query_start : p.query_end])) >= PASSAGE_WORDS
                    and len(oracle.words(text[p.source_start : p.source_end])) < PASSAGE_WORDS
                ]
                if not long_query_side:
                    continue
                seen += 1
                named = await index.containment_of_text(query)
                assert doc_id not in {r.id for r in named.results}, (k, query)
        finally:
            await index.store.close()
        return seen

    assert asyncio.run(run()) > 0


def test_a_stored_text_by_id_names_what_its_text_names_where_texts_are_kept(
    store_url: str, collection: str
) -> None:
    """A stored document holding short stored texts (10 to 29 words) copied whole, asked
    by id in a collection that keeps texts, names the sources its own text names, with
    the same passages (its kept text gives it the text query's dense anchors; an outside
    audit found by-id queries missing such sources), also once the text limit is lowered."""
    corpus = read_corpus()
    stored, rest = corpus[:100], corpus[STORED:]
    filler = [w for _, text in rest for w in text.split()][:1200]
    rng = random.Random(12)
    shorts = {}
    for n in (10, 12, 15, 18, 20, 25, 29):
        words = rng.choice(stored)[1].split()
        at = rng.randrange(len(words) - n)
        shorts[f"short{n}"] = " ".join(words[at : at + n])
    cuts = sorted(rng.sample(range(len(filler)), len(shorts)))
    parts, prev = [], 0
    for cut, text in zip(cuts, shorts.values(), strict=True):
        parts += [" ".join(filler[prev:cut]), text]
        prev = cut
    host = " ".join([*parts, " ".join(filler[prev:])])

    async def run() -> None:
        params = Params.create(
            "word:3", 128, 256, 1, 0.5, passage_words=PASSAGE_WORDS, keep_text=True
        )
        index = await Index.open(Store.connect(store_url, collection, 10.0), params, CAP)
        try:
            docs = [*stored, *shorts.items(), ("host", host)]
            await index.ingest([Document(t, i) for i, t in docs])
            by_text = await index.containment_of_text(host)
            by_id = await index.containment_of_id("host")
            assert by_id is not None
            want = [(r.id, r.passages) for r in by_text.results if r.id != "host"]
            assert set(shorts) <= {i for i, _ in want}
            assert [(r.id, r.passages) for r in by_id.results] == want
            # A text stored before NEARDUP_MAX_TEXT_BYTES was lowered still answers by id.
            lowered = Index(index.store, index.params, CAP, max_text_bytes=100)
            again = await lowered.containment_of_id("host")
            assert again is not None
            assert [(r.id, r.passages) for r in again.results] == want
        finally:
            await index.store.close()

    asyncio.run(run())


def test_a_threshold_still_filters_by_share(store_url: str, collection: str) -> None:
    """With a threshold, a source must cover that share of the text: a copy of 60-150
    words in 3,000 (2-5%) passes 0.01 and not 0.1; min_words over its length drops it."""
    corpus = read_corpus()
    stored, rest = corpus[:STORED], corpus[STORED:]
    filler = [w for _, text in rest for w in text.split()]
    rng = random.Random(7)

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(t, i) for i, t in stored])
            query, pieces = _submission(rng, stored, filler, 1)
            ((doc_id, _),) = pieces
            low = await index.containment_of_text(query, 0.01)
            high = await index.containment_of_text(query, 0.1)
            assert doc_id in {r.id for r in low.results}
            assert doc_id not in {r.id for r in high.results}
            # min_words raises the absolute criterion over the copy's 60-150 words.
            longer = await index.containment_of_text(query, min_words=200)
            assert doc_id not in {r.id for r in longer.results}
        finally:
            await index.store.close()

    asyncio.run(run())


def test_bad_and_boilerplate_texts_stay_bounded(store_url: str, collection: str) -> None:
    """A text over the size limit is refused (TooLargeError, a 4xx); a long text made of
    the corpus' commonest phrases only names no source and verifies a bounded number
    of candidates."""
    corpus = read_corpus()
    stored = corpus[:STORED]
    grams: dict[str, int] = {}
    for _, text in stored:
        w = text.split()
        for g in zip(w, w[1:], w[2:], strict=False):
            key = " ".join(g)
            grams[key] = grams.get(key, 0) + 1
    common = sorted(grams, key=lambda g: -grams[g])[:300]
    boilerplate = " ".join(common[i % len(common)] for i in range(0, 7 * 3000, 7))

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(t, i) for i, t in stored])
            with pytest.raises(TooLargeError):
                await index.containment_of_text("word " * (index.max_text_bytes // 5 + 1))
            result = await index.containment_of_text(boilerplate)
            assert result.results == []
            windows = -(-len(boilerplate.split()) // 1000)
            assert result.candidates <= CAP * windows
        finally:
            await index.store.close()

    asyncio.run(run())


def _near_copies(rng: random.Random, texts: list[str], vocab: list[str], n: int) -> list[str]:
    """n documents of 150-300 words of sentences of these texts, three words in ten
    replaced: a collection that holds each of their phrases many times over, as a large
    one does (bench/sources.py's synthetic documents)."""
    sentences = [s for t in texts for s in re.split(r"(?<=[.!?])\s+", t) if len(s.split()) >= 4]
    out = []
    for _ in range(n):
        words: list[str] = []
        target = rng.randint(150, 300)
        while len(words) < target:
            words += rng.choice(sentences).split()
        out.append(" ".join(rng.choice(vocab) if rng.random() < 0.3 else w for w in words[:target]))
    return out


def _edited(words: list[str], rate: float, rng: random.Random, vocab: list[str]) -> list[str]:
    """About `rate` of the words replaced, followed by another word, or deleted."""
    out: list[str] = []
    for w in words:
        if rng.random() >= rate:
            out.append(w)
            continue
        kind = rng.randrange(3)
        if kind == 0:
            out.append(rng.choice(vocab))
        elif kind == 1:
            out += [w, rng.choice(vocab)]
    return out


def test_a_short_edited_copy_is_not_cut_behind_common_clusters(
    store_url: str, collection: str
) -> None:
    """A short copy (32-45 words, 8% edited) shares one or two anchors with its source,
    while hundreds of stored near-copies of the same articles share two or more with the
    text: at a candidate cap of 3 a planted source is named, or the answer says capped
    (the cap used to cut it unflagged: 8 of 30 lost so)."""
    corpus = read_corpus()
    stored, rest = corpus[:STORED], corpus[STORED:]
    rng = random.Random(1)
    vocab = [w for _, t in stored for w in t.split()]
    copies = _near_copies(rng, [t for _, t in stored[:30]], vocab, 300)
    filler = [w for _, t in rest for w in t.split()]

    async def run() -> None:
        params = Params.create("word:3", 128, 256, 1, 0.5, passage_words=PASSAGE_WORDS)
        index = await Index.open(Store.connect(store_url, collection, 10.0), params, 3)
        try:
            docs = [Document(t, i) for i, t in stored]
            docs += [Document(t, f"c{i}") for i, t in enumerate(copies)]
            await index.ingest(docs)
            missed = []
            for trial in range(30):
                doc_id, text = rng.choice(stored[:30])
                words = text.split()
                n = rng.randint(32, 45)
                if len(words) < n + 1:
                    continue
                first = rng.randint(0, len(words) - n)
                piece = _edited(words[first : first + n], 0.08, rng, vocab)
                start = rng.randint(0, len(filler) - 1000)
                fill = filler[start : start + 1000 - len(piece)]
                cut = rng.randint(0, len(fill))
                result = await index.containment_of_text(" ".join(fill[:cut] + piece + fill[cut:]))
                if doc_id not in {r.id for r in result.results}:
                    missed.append((trial, doc_id, result.capped))
            # Never lost unflagged; at most one in ten cut, flagged, at this tiny cap.
            assert [m for m in missed if not m[2]] == []
            assert len(missed) <= 3, missed
        finally:
            await index.store.close()

    asyncio.run(run())


def test_kana_weigh_half_by_text_and_by_a_stored_documents_kept_text(
    store_url: str, collection: str
) -> None:
    """Two texts of unrelated Han sharing 40 kana name no source, asked by text or by the
    stored document's id where texts are kept (its kept text weighs its words); where no
    text is kept, the id's words count one each and the run is a passage, as before."""
    rng = random.Random(11)
    han = [chr(c) for c in range(0x4E00, 0x4E00 + 3000)]
    shared = "".join(rng.choice([chr(c) for c in range(0x3041, 0x3094)]) for _ in range(40))

    def noise(n: int) -> str:
        return "".join(rng.choice(han) for _ in range(n))

    a, b = noise(300) + shared + noise(300), noise(200) + shared + noise(200)

    async def run(keep: bool) -> tuple[list[str], list[str]]:
        params = Params.create(
            "word:3", 128, 256, 1, 0.5, passage_words=PASSAGE_WORDS, keep_text=keep
        )
        name = collection + ("k" if keep else "n")
        index = await Index.open(Store.connect(store_url, name, 10.0), params, CAP)
        try:
            await index.ingest([Document(a, "a"), Document(b, "b")])
            by_text = await index.containment_of_text(a)
            by_id = await index.containment_of_id("a")
            assert by_id is not None
            found = [r.id for r in by_text.results if r.id != "a"]  # a itself is stored
            return found, [r.id for r in by_id.results]
        finally:
            await index.store.close()

    assert asyncio.run(run(True)) == ([], [])
    assert asyncio.run(run(False)) == ([], ["b"])

    async def whole() -> list[str]:
        """A stored text of 24 kana copied whole into Han is named: a text shorter than
        the least passage counts whole, weighed as its copy is."""
        params = Params.create("word:3", 128, 256, 1, 0.5, passage_words=PASSAGE_WORDS)
        index = await Index.open(Store.connect(store_url, collection + "w", 10.0), params, CAP)
        try:
            await index.ingest([Document(shared[:24], "tiny")])
            found = await index.containment_of_text(noise(300) + shared[:24] + noise(300))
            return [r.id for r in found.results]
        finally:
            await index.store.close()

    assert asyncio.run(whole()) == ["tiny"]


def test_sentences_copied_from_here_and_there_name_their_source_at_the_defaults(
    store_url: str, collection: str
) -> None:
    """Three sentences of 12-25 words copied verbatim from different places of a stored
    article, each between other articles' words: wherever the passages found (at a low
    threshold, which names any) hold 30 words together, the article is named with no
    threshold too (an outside audit found such patchworks unnamed), each passage the
    oracle's shared run; one such sentence alone, or pasted three times, names nothing."""
    corpus = read_corpus()
    stored, rest = corpus[:STORED], corpus[STORED:]
    texts = dict(stored)
    filler = [w for _, text in rest for w in text.split()]
    sentence = re.compile(r"[A-Z][^.!?]*[.!?](?=\s)")
    cases = []
    for doc_id, text in stored:
        found = [m.group() for m in sentence.finditer(text) if 12 <= len(m.group().split()) <= 25]
        if len(found) >= 5:
            cases.append((doc_id, [found[0], found[2], found[4]]))

    def words(p: Passage) -> int:
        return min(p.query_words[1] - p.query_words[0], p.source_words[1] - p.source_words[0])

    async def run() -> int:
        index = await _open(store_url, collection)
        judged = 0
        try:
            await index.ingest([Document(t, i) for i, t in stored])
            for k, (doc_id, picked) in enumerate(cases[:30]):
                own = filler[k * 200 : k * 200 + 200]
                parts = [" ".join(own[:60]), picked[0], " ".join(own[60:120]), picked[1],
                         " ".join(own[120:]), picked[2]]  # fmt: skip
                query = " ".join(parts)
                low = await index.containment_of_text(query, 0.01, None)
                found = [p for r in low.results if r.id == doc_id for p in r.passages]
                assert all(
                    oracle.shingles(query[p.query_start : p.query_end])
                    <= oracle.shingles(texts[doc_id])
                    for p in found
                ), (doc_id, found)
                if len(found) < 2 or sum(map(words, found)) < PASSAGE_WORDS:
                    continue  # a sentence without an anchor is not found: too few words
                judged += 1
                named = await index.containment_of_text(query)
                assert doc_id in {r.id for r in named.results}, (doc_id, found)
                alone = " ".join([" ".join(own[:60]), picked[1], " ".join(own[60:])])
                result = await index.containment_of_text(alone)
                assert doc_id not in {r.id for r in result.results}, doc_id
                # The same sentence pasted three times is still one sentence's words.
                thrice = " ".join([" ".join(own[:60]), picked[1], " ".join(own[60:120]),
                                   picked[1], " ".join(own[120:]), picked[1]])  # fmt: skip
                result = await index.containment_of_text(thrice)
                assert doc_id not in {r.id for r in result.results}, doc_id
        finally:
            await index.store.close()
        return judged

    assert asyncio.run(run()) >= 20
