"""The consistency check's cost: the start-up pass (NEARDUP_STARTUP_CHECK) and the full one.

Ingests N generated documents (200-400 Zipf words) in-process into a throwaway
Redis, then times three passes each of check_ids(repair=True) (what start-up runs:
dangling ids only) and check(repair=True) (`neardup check --repair`) on the clean
collection, and reports seconds per pass and per 1,000 documents.

Figures, never assertions. Run: .venv/bin/python bench/check.py [--docs N]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from common import log, make_corpus
from stores import ThrowawayRedis

from app.index import Document, Index, Params
from app.index.check import check, check_ids
from app.store import Store


async def _run(n: int, workdir: Path) -> None:
    corpus = make_corpus(n, dup_fraction=0.2)
    redis = ThrowawayRedis(workdir, "check").start()
    try:
        store = Store.connect(redis.url, "bench", 30.0)
        index = await Index.open(store, Params.create("word:3", 128, 256, 1, 0.5, 100_000), 200)
        log(f"ingesting {n} documents")
        docs = [Document(corpus.text(i), corpus.ids[i]) for i in range(n)]
        for k in range(0, n, 500):
            await index.ingest(docs[k : k + 500])
        for name, run in (("start-up pass (check_ids)", check_ids), ("full check", check)):
            times = []
            for _ in range(3):
                started = time.perf_counter()
                report = await run(index, repair=True)
                times.append(time.perf_counter() - started)
            best = min(times)
            print(
                f"{name} --repair, {report.ids} ids, {report.band_entries} band entries: "
                f"best of 3 {best:.2f} s ({best / n * 1000:.2f} s per 1,000 documents), "
                f"passes {', '.join(f'{t:.2f}' for t in times)} s"
            )
        await store.close()
    finally:
        redis.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(args.docs, Path(tmp)))


if __name__ == "__main__":
    main()
