"""What expiry costs: the read-time check on a query's records, and the sweeper's pace.

Ingests N generated documents (200-400 Zipf words) in-process into a throwaway Redis,
all expiring 2 s later, then
- times expiry.live over one candidate cap's worth of their records (what each query
  adds to its MGET) against the MGET itself, both in the same process;
- once they are due, times sweeps of --batch documents until none is left (what the
  service's sweeper does per tick, back to back), in documents per second.

Figures, never assertions. Run: .venv/bin/python bench/expiry.py [--docs N] [--batch B]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from common import log, make_corpus
from stores import ThrowawayRedis

from app.index import Document, Index, Params, expiry
from app.service.sweeper import sweep
from app.store import Store

CAP = 200  # NEARDUP_CANDIDATE_CAP's default: records a query verifies at most


async def _run(n: int, batch: int, workdir: Path) -> None:
    corpus = make_corpus(n, dup_fraction=0.2)
    redis = ThrowawayRedis(workdir, "expiry").start()
    try:
        store = Store.connect(redis.url, "bench", 30.0)
        index = await Index.open(store, Params.create("word:3", 128, 256, 1, 0.5, 100_000), CAP)
        log(f"ingesting {n} expiring documents")
        ends = expiry.now_ms() + 2000 + n  # about 1 ms a document to ingest them
        docs = [Document(corpus.text(i), corpus.ids[i], None, ends) for i in range(n)]
        for k in range(0, n, 500):
            await index.ingest(docs[k : k + 500])
        handles = list(range(1, min(n, CAP) + 1))
        rounds = 200
        started = time.perf_counter()
        for _ in range(rounds):
            raws = await store.records(handles)
        mget = (time.perf_counter() - started) / rounds
        started = time.perf_counter()
        for _ in range(rounds):
            expiry.live(raws)
        check = (time.perf_counter() - started) / rounds
        print(
            f"read-time check of {len(handles)} records: {check * 1e6:.0f} us "
            f"({check / len(handles) * 1e9:.0f} ns a record), "
            f"{check / mget:.1%} of their MGET ({mget * 1e6:.0f} us)"
        )
        while expiry.now_ms() < ends:
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        removed = ticks = 0
        while True:
            done = await sweep(index, most=batch)
            ticks += 1
            removed += done
            if done < batch:
                break
        took = time.perf_counter() - started
        print(
            f"sweep of {removed} due documents, {batch} a tick: {took:.2f} s in {ticks} ticks, "
            f"{removed / took:.0f} documents/s ({took / ticks * 1000:.1f} ms a tick); "
            f"{await index.count()} ids and {len(await store.expiries())} queued left"
        )
        # The same documents again, never expiring, removed one DELETE at a time: the pace
        # of the delete path the sweeper reuses, side by side with it.
        m = min(n, 1000)
        for k in range(0, m, 500):
            await index.ingest([Document(corpus.text(i), corpus.ids[i]) for i in range(k, k + 500)])
        started = time.perf_counter()
        for i in range(m):
            await index.delete(corpus.ids[i])
        took = time.perf_counter() - started
        print(f"DELETE one at a time, same documents: {m / took:.0f} documents/s")
        await store.close()
    finally:
        redis.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(args.docs, args.batch, Path(tmp)))


if __name__ == "__main__":
    main()
