"""Copied passages through edits: PAN's measures per kind of change, before and after.

Sources: articles of tests/data (MIT licence), stored in a throwaway Redis through the
Index (in-process, no HTTP). Queries: long texts (~1,000 words) made of other articles,
never stored, each with one passage of 40-150 words of a stored source planted in, changed
in one of these ways:

- verbatim;
- edit5 / edit15: 5% / 15% of the words replaced, inserted or deleted (a third each);
- swaps: 12% of adjacent word pairs swapped, plus 3% edits;
- disguise: lower case, curly quotes, the ligatures fi/fl, no-break spaces, a zero-width
  space or soft hyphen inside some words, Cyrillic look-alikes (U+0430, U+0435, U+043E)
  in some words, and words hyphenated at line ends (folded by the normalisation issue,
  #26, not by this one);
- block: the passage with one 8-word run in its middle replaced (a rewritten clause);
- shuffle: its sentences in another order (since 2026-11-26: not in figures before it).

Ingest rate and Redis bytes per document are measured apart, on --docs synthetic
documents of 200-400 Zipf words (bench/common.py, as bench/passages.py), ingested in
batches of 500 into a fresh collection per build, builds alternating for --rounds rounds:
the best rate of each, bytes of the last.

Each query is a containment query (`containment_of_text`, the call behind POST /similar
with measure containment and evidence) with threshold 0.01. Every passage of every
source is a detection; the plant is the truth (its code points in the query and the
source). Scored by tests/support/pan.py (PAN's macro-averaged measures), per kind and all
together. The negative control sends the hosts without a plant: every passage reported
there is false (counted, with the characters it covers).

Builds compared in the same run, on the same Redis: the layout before this work (a
collection whose config has passage_bits 0: format 1, 4-bit word hashes, packed by the
kernel and aligned by passages.align, exactly what main writes and answers) and format
3 with 4, 8 and 16 bits a word, aligned by app.index.align. Per build: plagdet by kind,
containment query latency (p50, p99), Redis bytes per stored document and ingest rate.

Run: .venv/bin/python bench/alignment.py [--quick] [--bits 0,8]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from common import ROOT, log, make_corpus, pan_table
from memory import used_memory
from stores import ThrowawayRedis

from app import kernel
from app.index import Document, Index, Params
from app.store import Store

# The plantings and PAN's measures are the tests' own (tests/support), one copy of each.
sys.path.insert(0, str(ROOT / "tests"))
from support import pan
from support.plant import HOST_WORDS, KINDS, Planting, plantings, scores_by_kind

THRESHOLD = 0.01
# Each query's latency is the least of this many runs per build, the builds alternating.
REPEATS = 3


# --- one build -----------------------------------------------------------------------------


async def _bulk(redis: ThrowawayRedis, builds: list[int], texts: list[str], rounds: int) -> dict:
    """Ingest rate and Redis bytes per document of each build: the same texts into a
    fresh collection per build and round, builds alternating, the best rate of the rounds
    (the machine is shared) and the bytes of the last."""
    rates: dict[int, float] = {}
    per_doc: dict[int, float] = {}
    for r in range(rounds):
        for bits in builds:
            store = Store.connect(redis.url, f"bulk{bits}r{r}", 30.0)
            index = await _open(store, bits, len(texts))
            docs = [Document(t, f"d{i}") for i, t in enumerate(texts)]
            before = used_memory(redis)
            started = time.perf_counter()
            for k in range(0, len(docs), 500):
                await index.ingest(docs[k : k + 500])
            rates[bits] = max(rates.get(bits, 0.0), len(docs) / (time.perf_counter() - started))
            per_doc[bits] = (used_memory(redis) - before) / len(docs)
            await store.close()
            redis.client().flushall()
    return {b: {"ingest": rates[b], "bytes": per_doc[b]} for b in builds}


async def _scale(redis: ThrowawayRedis, builds: list[int], size: int, queries: int) -> dict:
    """Containment latency at scale, as bench/passages.py measures it but for every build
    in turn: size synthetic documents, then 1,000-word texts of fresh Zipf words each
    holding 40-120 words of a stored one (verbatim); least of REPEATS runs per query,
    p50 and p99, and the share whose source was named with an overlapping passage."""
    corpus = make_corpus(size, seed=9, dup_fraction=0.0)
    texts = [corpus.text(i) for i in range(size)]
    indexes = {}
    for bits in builds:
        store = Store.connect(redis.url, f"scale{bits}", 30.0)
        indexes[bits] = await _open(store, bits, size)
        docs = [Document(t, i) for t, i in zip(texts, corpus.ids, strict=True)]
        for k in range(0, size, 500):
            await indexes[bits].ingest(docs[k : k + 500])
    rng = np.random.default_rng(3)
    lat: dict[int, list[float]] = {b: [] for b in builds}
    found = dict.fromkeys(builds, 0)
    for _ in range(queries):
        src = int(rng.integers(0, size))
        words = texts[src].split()
        length = int(rng.integers(40, 121))
        first = int(rng.integers(0, max(1, len(words) - length)))
        piece = " ".join(words[first : first + length])
        filler = corpus.words.render(corpus.words.sample(1000 - length)).split()
        at = int(rng.integers(0, len(filler)))
        query = " ".join([*filler[:at], piece, *filler[at:]])
        start = len(" ".join(filler[:at])) + (1 if at else 0)
        best: dict[int, float] = {}
        for _ in range(REPEATS):
            for bits in builds:
                t0 = time.perf_counter()
                answer = await indexes[bits].containment_of_text(query, 0.02, 10)
                took = time.perf_counter() - t0
                best[bits] = min(best.get(bits, took), took)
                hit = next((r for r in answer.results if r.id == corpus.ids[src]), None)
                if hit and any(
                    p.query_start < start + len(piece) and p.query_end > start for p in hit.passages
                ):
                    found[bits] += 1
        for bits in builds:
            lat[bits].append(best[bits])
    out = {}
    for bits in builds:
        await indexes[bits].store.close()
        ms = sorted(1000 * x for x in lat[bits])
        out[bits] = {
            "scale_p50": statistics.median(ms),
            "scale_p99": ms[min(len(ms) - 1, int(0.99 * len(ms)))],
            "scale_found": found[bits] / (REPEATS * queries),
        }
    return out


def _buckets_before(entries: int) -> int:
    """The band buckets main sized a collection with (48 entries a bucket at capacity)."""
    need = max(1, -(-entries // 48))
    return min(1 << 24, max(16, 1 << (need - 1).bit_length()))


async def _open(store: Store, bits: int, capacity: int) -> Index:
    """A collection of this build: bits 0 is a config as main writes it (no passage_bits
    field: format 1), else format 3 with bits a word."""
    params = Params.create("word:3", 128, 256, 1, 0.5, capacity, passage_words=30)
    if bits == 0:
        # As main made it: 8-byte fields, buckets sized for 48 entries each, one ids HASH.
        before = replace(params, band_buckets=_buckets_before(capacity * (params.bands + 24)))
        raw = before.to_json().replace(b',"passage_bits":8', b"")
        raw = raw.replace(b',"short_anchors":true', b"").replace(b',"short_fields":true', b"")
        raw = re.sub(rb'"id_buckets":\d+,', b"", raw)  # one ids HASH, as then
        kept = (b"passage_bits", b"short_anchors", b"short_fields", b"id_buckets")
        assert all(f not in raw for f in kept)
        await store.config(raw)
    wanted = Params.create(
        "word:3", 128, 256, 1, 0.5, capacity, passage_words=30, passage_bits=bits or 8
    )
    index = await Index.open(store, wanted, 200)  # a stored config's buckets win
    assert index.params.passage_bits == bits, index.params
    return index


async def _builds(
    redis: ThrowawayRedis, builds: list[int], sources: dict[str, str], plants: list[Planting]
) -> dict[int, dict]:
    """Each build's PAN scores, latency and layout bytes on the plantings. The builds'
    collections are filled first, then each query goes to every build in turn, REPEATS
    times, and its latency is the least: a spike of the shared machine then falls on all
    builds alike, and rarely on every run."""
    stores, indexes = {}, {}
    docs = [Document(t, i) for i, t in sources.items()]
    for bits in builds:
        stores[bits] = Store.connect(redis.url, f"b{bits}", 30.0)
        indexes[bits] = await _open(stores[bits], bits, 2_000)
        for k in range(0, len(docs), 200):
            await indexes[bits].ingest(docs[k : k + 200])
    detections: dict[int, dict[str, list]] = {b: {} for b in builds}
    latencies: dict[int, list[float]] = {b: [] for b in builds}
    capped = dict.fromkeys(builds, 0)
    for number, p in enumerate(plants):
        qid = f"q{number}"
        best: dict[int, float] = {}
        for _ in range(REPEATS):
            for bits in builds:
                t0 = time.perf_counter()
                answer = await indexes[bits].containment_of_text(p.query, THRESHOLD, 10)
                took = time.perf_counter() - t0
                best[bits] = min(best.get(bits, took), took)
        for bits in builds:
            latencies[bits].append(best[bits])
            answer = await indexes[bits].containment_of_text(p.query, THRESHOLD, 10)
            capped[bits] += answer.capped
            detections[bits][qid] = [
                pan.Span(qid, ps.query_start, ps.query_end, r.id, ps.source_start, ps.source_end)
                for r in answer.results
                for ps in r.passages
            ]
    out = {}
    for bits in builds:
        await stores[bits].close()
        # The passage section as a record stores it (format 1 compacted by the kernel).
        made = indexes[bits].passage_layouts(list(sources.values()))
        layout_bytes = sum(
            len(kernel.compact_layout(lay.pack()) if bits == 0 else lay.pack()) for lay in made
        ) / len(made)
        found = detections[bits]
        by_kind = scores_by_kind(KINDS, plants, found)
        control = [d for n, p in enumerate(plants) if p.kind == "control" for d in found[f"q{n}"]]
        lat = sorted(latencies[bits])
        out[bits] = {
            "kinds": by_kind,
            "false": len(control),
            "false_chars": sum(len(d) for d in control),
            "p50": 1000 * statistics.median(lat),
            "p99": 1000 * lat[min(len(lat) - 1, int(0.99 * len(lat)))],
            "layout": layout_bytes,
            "capped": capped[bits],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 plantings a kind, not 75")
    parser.add_argument("--seed", type=int, default=5, help="of the plantings")
    parser.add_argument("--docs", type=int, default=20_000, help="ingested for rate and bytes")
    parser.add_argument("--rounds", type=int, default=3, help="of that ingest, per build")
    parser.add_argument(
        "--scale", type=int, nargs="*", default=[], help="stored documents for latency at scale"
    )
    parser.add_argument("--queries", type=int, default=200, help="per --scale size")
    parser.add_argument(
        "--bits", default="0,4,8,16", help="builds: 0 = before (format 1), else format 3's bits"
    )
    args = parser.parse_args()
    per_kind = 20 if args.quick else 75
    builds = [int(b) for b in args.bits.split(",")]
    sources, plants = plantings(per_kind, args.seed)
    log(f"alignment: {len(sources)} sources, {len(plants)} queries")
    results = {}
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "align").start()
        try:
            log(f"alignment: builds {builds}")
            results = asyncio.run(_builds(redis, builds, sources, plants))
            redis.client().flushall()
            log(f"alignment: ingest of {args.docs} documents, {args.rounds} rounds")
            corpus = make_corpus(args.docs, dup_fraction=0.0)
            texts = [corpus.text(i) for i in range(args.docs)]
            for bits, got in asyncio.run(_bulk(redis, builds, texts, args.rounds)).items():
                results[bits].update(got)
            for size in args.scale:
                redis.client().flushall()
                log(f"alignment: containment at {size} documents")
                for bits, got in asyncio.run(_scale(redis, builds, size, args.queries)).items():
                    results[bits].update({f"{k}@{size}": v for k, v in got.items()})
        finally:
            redis.stop()
    name = {0: "before (4-bit, format 1)"}
    print(
        f"alignment: {per_kind} plantings a kind, {HOST_WORDS}-word queries, "
        f"{len(sources)} stored articles; PAN measures (plagdet prec rec gran)"
    )
    columns = {name.get(b, f"{b}-bit, format 3"): results[b]["kinds"] for b in builds}
    print("\n".join(pan_table((*KINDS, "all"), columns, 9)))
    rows = (
        ("control: false passages", "false", "{:.0f}"),
        ("control: false chars", "false_chars", "{:.0f}"),
        ("answers capped", "capped", "{:.0f}"),
        ("query p50 ms", "p50", "{:.2f}"),
        ("query p99 ms", "p99", "{:.2f}"),
        ("Redis bytes / doc", "bytes", "{:,.0f}"),
        ("layout bytes / doc", "layout", "{:,.0f}"),
        ("ingest docs / s", "ingest", "{:,.0f}"),
    )
    for size in args.scale:
        rows += (
            (f"{size:,} docs: p50 ms", f"scale_p50@{size}", "{:.2f}"),
            (f"{size:,} docs: p99 ms", f"scale_p99@{size}", "{:.2f}"),
            (f"{size:,} docs: found", f"scale_found@{size}", "{:.1%}"),
        )
    for label, key, fmt in rows:
        print(f"{label:>24} " + " ".join(fmt.format(results[b][key]).rjust(19) for b in builds))


if __name__ == "__main__":
    main()
