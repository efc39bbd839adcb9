"""Containment and passages on a real Redis: planted copies are found with the right spans.

Sources are articles of the test corpus; queries are other, unrelated articles with
passages of 30-200 words of a source pasted in (exactly, or with ~5% of the words
edited). The truth is where each plant sits in both texts, in code points; the oracle
for "really shared" is the plain-Python shingle sets of tests/support/oracle.py.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass

import numpy as np
import pytest
from support import oracle
from support.corpus import read_corpus
from support.keys import scan_keys
from support.textgen import mutate

from app.index import Document, Index, Params
from app.index.check import check
from app.index.passages import Layout
from app.index.sketch import anchor_keys
from app.store import Store

pytestmark = pytest.mark.both_stores

PASSAGE_WORDS = 30


def _word_spans(text: str) -> list[tuple[int, int]]:
    """Code-point spans of the oracle's words (runs of alnum code points)."""
    spans, start = [], None
    for i, ch in enumerate(text):
        if ch.isalnum():
            if start is None:
                start = i
        elif start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(text)))
    return spans


@dataclass
class Plant:
    source: str
    query: str
    q_span: tuple[int, int]  # code points of the pasted words in the query
    s_span: tuple[int, int]  # and in the source
    words: int
    edited: bool


def _plant(rng: random.Random, host: str, src_id: str, src: str, n: int, edited: bool) -> Plant:
    """host with n consecutive words of src pasted in at a word boundary."""
    s_words = _word_spans(src)
    first = rng.randrange(0, len(s_words) - n + 1)
    s_span = (s_words[first][0], s_words[first + n - 1][1])
    piece = src[s_span[0] : s_span[1]]
    if edited:
        piece = mutate(piece, 0.05, rng)
    h_words = _word_spans(host)
    at = h_words[rng.randrange(1, len(h_words))][0]
    query = host[:at] + piece + " " + host[at:]
    return Plant(src_id, query, (at, at + len(piece)), s_span, n, edited)


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0


async def _open(url: str, collection: str) -> Index:
    params = Params.create("word:3", 128, 256, 1, 0.5, passage_words=PASSAGE_WORDS)
    return await Index.open(Store.connect(url, collection, 5.0), params, 200)


def _corpus() -> tuple[dict[str, str], list[str]]:
    docs = [(i, t) for i, t in read_corpus() if len(t.split()) >= 260]
    sources = dict(docs[:150])
    hosts = [t for _, t in docs[150:230]]
    return sources, hosts


def test_planted_passages_are_found_with_their_spans(store_url: str, collection: str) -> None:
    """Every exact plant of >= 30 words is found in the right source with spans that
    overlap the truth in both texts; edited plants are mostly found; every reported
    passage is shared text by the oracle's shingles."""
    sources, hosts = _corpus()
    rng = random.Random(7)
    plants = [
        _plant(rng, hosts[j % len(hosts)], sid, sources[sid], rng.randint(30, 200), j % 2 == 1)
        for j, sid in enumerate(rng.sample(sorted(sources), 60))
    ]

    async def run() -> list[tuple[Plant, list]]:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(t, i) for i, t in sources.items()])
            out = []
            for p in plants:
                found = await index.containment_of_text(p.query, threshold=0.01, limit=20)
                out.append((p, found.results))
            return out
        finally:
            await index.store.close()

    answers = asyncio.run(run())
    exact_found, edited_found, ious_q, ious_s, shared, reported = 0, 0, [], [], 0, 0
    for plant, results in answers:
        hit = next((r for r in results if r.id == plant.source), None)
        for r in results:
            for p in r.passages:  # really shared text, whatever the source
                reported += 1
                q_sh = oracle.shingles(plant.query[p.query_start : p.query_end])
                s_sh = oracle.shingles(sources[r.id][p.source_start : p.source_end])
                if len(q_sh & s_sh) >= 0.5 * min(len(q_sh), len(s_sh)):
                    shared += 1
        if hit is None:
            assert plant.edited, f"exact plant of {plant.words} words from {plant.source} missed"
            continue
        best = max(hit.passages, key=lambda p: _iou((p.query_start, p.query_end), plant.q_span))
        assert _iou((best.query_start, best.query_end), plant.q_span) > 0
        assert _iou((best.source_start, best.source_end), plant.s_span) > 0
        if plant.edited:
            edited_found += 1
        else:
            exact_found += 1
            ious_q.append(_iou((best.query_start, best.query_end), plant.q_span))
            ious_s.append(_iou((best.source_start, best.source_end), plant.s_span))
    exact = sum(not p.edited for p in plants)
    print(
        f"exact found {exact_found}/{exact}, edited found {edited_found}/{len(plants) - exact}, "
        f"shared {shared}/{reported}, median IoU query {np.median(ious_q):.3f} "
        f"source {np.median(ious_s):.3f}"
    )
    assert exact_found == exact
    assert edited_found >= 0.8 * (len(plants) - exact)
    assert reported and shared >= 0.95 * reported
    assert np.median(ious_q) >= 0.9 and np.median(ious_s) >= 0.9, (ious_q, ious_s)


def test_containment_is_verified_coverage(store_url: str, collection: str) -> None:
    """A 300-word text that copies 100 words of a source has containment ~1/3 of its
    shingles, not the share of hash hits; Jaccard is reported beside it."""
    sources, hosts = _corpus()
    sid = sorted(sources)[0]
    src_words = _word_spans(sources[sid])
    piece = sources[sid][src_words[10][0] : src_words[109][1]]
    host_words = _word_spans(hosts[0])
    host = hosts[0][: host_words[199][1]]
    query = piece + " " + host

    async def run() -> list:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(sources[sid], sid)])
            return (await index.containment_of_text(query)).results
        finally:
            await index.store.close()

    (result,) = asyncio.run(run())
    total = len(oracle.words(query)) - 2
    assert result.id == sid
    assert abs(result.containment - 98 / total) < 0.02
    expected_j = oracle.exact_jaccard(oracle.shingles(query), oracle.shingles(sources[sid]))
    assert abs(result.similarity - expected_j) < 0.05


def test_delete_and_replace_leave_no_passage_entries(store_url: str, collection: str) -> None:
    """A replaced text stops matching its old passages, a deleted one matches nothing,
    and the check finds nothing left behind in the passage index."""
    sources, _ = _corpus()
    a, b = sorted(sources)[:2]

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(sources[a], "doc")])
            assert [r.id for r in (await index.containment_of_text(sources[a])).results] == ["doc"]
            await index.ingest([Document(sources[b], "doc")])
            assert (await index.containment_of_text(sources[a])).results == []
            assert (await check(index)).clean
            await index.delete("doc")
            assert (await index.containment_of_text(sources[b])).results == []
            left = {key.rsplit(b":", 1)[-1] async for key in scan_keys(index.store)}
            assert left <= {b"config", b"next", b"count", b"M"}, left  # M: marks, kept
        finally:
            await index.store.close()

    asyncio.run(run())


def test_a_write_cut_before_its_record_shows_no_passages(store_url: str, collection: str) -> None:
    """Anchor entries written without their record (a crash mid-write) answer nothing;
    the check reports them and re-sending the document repairs everything."""
    sources, _ = _corpus()
    sid = sorted(sources)[3]

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            (h,), _ = await index.store.ids.assign([sid])
            layout = index.passage_layouts([sources[sid]])[0]  # what the cut write had sketched
            await index.store.bands.add([(h, anchor_keys(layout.anchor_hashes))])
            assert (await index.containment_of_text(sources[sid])).results == []
            report = await check(index)
            assert report.found["dangling_ids"] == 1
            await index.ingest([Document(sources[sid], sid)])
            assert (await check(index)).clean
            hits = (await index.containment_of_text(sources[sid])).results
            assert [r.id for r in hits] == [sid] and hits[0].containment == pytest.approx(1.0)
        finally:
            await index.store.close()

    asyncio.run(run())


def test_layout_round_trips() -> None:
    """A record's passage section reads back as written, gaps and lengths that overflow
    their 4 bits included."""
    rng = np.random.default_rng(3)
    for gap_max, len_max in ((14, 14), (20, 15), (200, 200), (5000, 3000), (2**20, 2**20)):
        n = 50
        gaps = rng.integers(0, gap_max + 1, n)
        lens = rng.integers(1, len_max + 1, n)
        starts = np.cumsum(gaps + np.concatenate(([0], lens[:-1])))
        layout = Layout(
            rng.integers(0, 2**32, 7).astype(np.uint32),
            np.sort(rng.integers(0, n, 7)),
            rng.integers(0, 16, n).astype(np.uint8),
            starts,
            starts + lens,
        )
        back = Layout.unpack(layout.pack())
        for name in ("anchor_hashes", "anchor_words", "word_hashes", "starts", "ends"):
            assert np.array_equal(getattr(back, name), getattr(layout, name)), name


def test_a_layout_missing_its_overflow_says_it_is_damaged() -> None:
    """Spans whose overflow values are missing (as an older release stored a negative gap)
    raise DamagedLayout, which containment skips, in formats 1 and 3."""
    from app.index.passages import DamagedLayout

    starts = np.array([0, 3, 40], np.int64)  # the last gap (35) overflows its 4 bits
    for bits in (0, 8):
        layout = Layout(
            np.array([7], np.uint32), np.array([0]), np.array([1, 2, 3], np.uint8),
            starts, starts + 2, bits=bits,
        )  # fmt: skip
        raw = layout.pack()
        assert Layout.unpack(raw).starts.tolist() == [0, 3, 40]
        with pytest.raises(DamagedLayout):
            _ = Layout.unpack(raw[:-4]).starts
