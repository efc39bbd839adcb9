"""Containment queries and the passage index: latency, memory per document, ingest cost.

For each size (10k and 100k documents of 200-400 Zipf words, ~300 on average):
- ingest rate into two collections of the same Redis, passage index off
  (NEARDUP_PASSAGE_WORDS=0) and on (30), in batches of 500, in-process (no HTTP),
  and the ratio on/off;
- Redis bytes per document of each (used_memory after minus before), and the
  difference: what the passage index costs;
- containment queries with evidence, one worker, sequential: 1,000-word texts of
  fresh words, each holding one passage of 40-120 words copied from a stored document;
  p50 and p99 latency, and how many found their source with a span overlapping the plant.

Figures, never assertions. Run: .venv/bin/python bench/passages.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from common import log, make_corpus
from memory import used_memory
from stores import ThrowawayRedis

from app.index import Document, Index, Params
from app.store import Store

BATCH = 500


async def _ingest(index: Index, texts: list[str], ids: list[str]) -> float:
    docs = [Document(t, i) for t, i in zip(texts, ids, strict=True)]
    started = time.perf_counter()
    for k in range(0, len(docs), BATCH):
        await index.ingest(docs[k : k + BATCH])
    return len(texts) / (time.perf_counter() - started)


async def _run(size: int, queries: int, workdir: Path) -> dict[str, float]:
    corpus = make_corpus(size, dup_fraction=0.0)
    texts = [corpus.text(i) for i in range(size)]
    redis = ThrowawayRedis(workdir, f"r{size}").start()
    out: dict[str, float] = {}
    try:
        for words, name in ((0, "off"), (30, "on")):
            params = Params.create("word:3", 128, 256, 1, 0.5, size, passage_words=words)
            store = Store.connect(redis.url, f"p{name}", 30.0)
            index = await Index.open(store, params, 200)
            before = used_memory(redis)
            out[f"ingest_{name}"] = await _ingest(index, texts, corpus.ids)
            out[f"bytes_{name}"] = (used_memory(redis) - before) / size
            if words:
                out.update(await _queries(index, corpus, texts, queries))
            await store.close()
    finally:
        redis.stop()
    return out


async def _queries(index: Index, corpus, texts: list[str], n: int) -> dict[str, float]:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(3)
    latencies, found = [], 0
    for _ in range(n):
        src = int(rng.integers(0, len(texts)))
        words = texts[src].split()
        length = int(rng.integers(40, 121))
        first = int(rng.integers(0, max(1, len(words) - length)))
        piece = " ".join(words[first : first + length])
        filler = corpus.words.render(corpus.words.sample(1000 - length)).split()
        at = int(rng.integers(0, len(filler)))
        query = " ".join([*filler[:at], piece, *filler[at:]])
        started = time.perf_counter()
        answer = await index.containment_of_text(query, 0.02, 10)
        latencies.append(time.perf_counter() - started)
        start = len(" ".join(filler[:at])) + (1 if at else 0)
        hit = next((r for r in answer.results if r.id == corpus.ids[src]), None)
        if hit and any(
            p.query_start < start + len(piece) and p.query_end > start for p in hit.passages
        ):
            found += 1
    latencies.sort()
    return {
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "found": found / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2k documents, 50 queries")
    args = parser.parse_args()
    sizes = [2_000] if args.quick else [10_000, 100_000]
    queries = 50 if args.quick else 300
    print("passages: containment with evidence, 1,000-word queries, one worker")
    print(
        f"{'docs':>8} {'ingest off/s':>13} {'ingest on/s':>12} {'on/off':>7} "
        f"{'B/doc off':>10} {'B/doc on':>9} {'extra B':>8} {'p50 ms':>7} {'p99 ms':>7} {'found':>6}"
    )
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        for size in sizes:
            log(f"passages: {size} documents")
            r = asyncio.run(_run(size, queries, Path(tmp)))
            print(
                f"{size:>8} {r['ingest_off']:>13,.0f} {r['ingest_on']:>12,.0f} "
                f"{r['ingest_on'] / r['ingest_off']:>7.2f} {r['bytes_off']:>10,.0f} "
                f"{r['bytes_on']:>9,.0f} {r['bytes_on'] - r['bytes_off']:>8,.0f} "
                f"{r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['found']:>6.1%}",
                flush=True,
            )


if __name__ == "__main__":
    main()
