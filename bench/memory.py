"""Redis memory per document: used_memory after an ingest minus before, and what it is made of.

The breakdowns come from MEMORY USAGE of sampled keys, so they are estimates; the total
per document is the measured figure.

Run on its own (`.venv/bin/python bench/memory.py [--docs N]`) it ingests N generated
documents (200-400 Zipf words, a fifth of them planted near-duplicates) in-process with
the service's default parameters (passage index on) into a throwaway Redis and prints the
bytes per document split by key kind: MEMORY USAGE of every key (records, band buckets,
spilled sets, ids, texts, the rest), the main key table (8 bytes a slot), what is left of
used_memory, and the records split by section (from their headers).
"""

from __future__ import annotations

import random
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from common import support
from stores import ThrowawayRedis

from app.index import records


def used_memory(redis: ThrowawayRedis) -> int:
    return int(redis.client().info("memory")["used_memory"])


def keys_bytes(r: Any, keys: list[bytes]) -> int:
    """MEMORY USAGE of these keys, summed (a key gone meanwhile counts 0)."""
    return sum(int(r.memory_usage(k, samples=0) or 0) for k in keys)


def id_map_bytes(r: Any, prefix: bytes) -> int:
    """The id map's bytes: one ids HASH (collections made before id buckets) or its id
    buckets (I{...}), each a key."""
    return keys_bytes(r, [prefix + b"ids", *r.scan_iter(match=prefix + b"I{*", count=10_000)])


def neardup_memory_breakdown(redis: ThrowawayRedis, collection: str, docs: int) -> dict[str, Any]:
    """What the memory is made of, from MEMORY USAGE of sampled keys, per document."""
    r = redis.client()
    prefix = f"nd:{collection}:".encode()
    handles = _sampled_handles(r, prefix, 300)
    handles = [h for h in handles if r.exists(prefix + b"d:%d" % h)]  # replaced or removed
    rec_usage = [int(r.memory_usage(prefix + b"d:%d" % h, samples=0) or 0) for h in handles]
    rec_len = [int(r.strlen(prefix + b"d:%d" % h)) for h in handles]
    buckets = list(r.scan_iter(match=prefix + b"B{*", count=5000))
    spills = [k for h in (b"S{", b"H{") for k in r.scan_iter(match=prefix + h + b"*", count=5000)]
    sample = buckets[:: max(1, len(buckets) // 400)][:400]
    bucket_usage = [int(r.memory_usage(k, samples=0) or 0) for k in sample]
    bucket_fields = [int(r.hlen(k)) for k in sample]
    encodings = Counter(r.object("encoding", k).decode() for k in sample[:100])
    spill_usage = keys_bytes(r, spills)
    ids_usage = id_map_bytes(r, prefix)
    mean_fields = statistics.fmean(bucket_fields) if bucket_fields else 0.0
    per = {
        "records": statistics.fmean(rec_usage) if rec_usage else 0.0,
        "record_bytes": statistics.fmean(rec_len) if rec_len else 0.0,
        "band_buckets": statistics.fmean(bucket_usage) * len(buckets) / docs if sample else 0.0,
        "spilled_sets": spill_usage / docs,
        "ids_hash": ids_usage / docs,
    }
    return {
        "per_doc": per,
        "buckets": len(buckets),
        "band_fields_per_doc": mean_fields * len(buckets) / docs,
        "fields_per_bucket": mean_fields,
        "bucket_bytes": statistics.fmean(bucket_usage) if bucket_usage else 0.0,
        "bucket_encodings": dict(encodings),
        "spilled_sets": len(spills),
    }


def _sampled_handles(r: Any, prefix: bytes, n: int) -> list[int]:
    """Up to n handles drawn at random from those handed out (some may have no record)."""
    last = int(r.get(prefix + b"next") or 0)
    return random.Random(7).sample(range(1, last + 1), min(n, last))


def datasketch_memory_breakdown(redis: ThrowawayRedis, docs: int) -> dict[str, Any]:
    r = redis.client()
    dbsize = int(r.dbsize())
    types: Counter[str] = Counter()
    usage: dict[str, list[int]] = {}
    cursor, seen = 0, 0
    while seen < 600:
        cursor, keys = r.scan(cursor, count=2000)
        for k in keys[:200]:
            t = r.type(k).decode()
            types[t] += 1
            usage.setdefault(t, []).append(int(r.memory_usage(k, samples=0) or 0))
            seen += 1
        if cursor == 0:
            break
    return {
        "keys": dbsize,
        "keys_per_doc": dbsize / docs,
        "mean_key_bytes": {t: statistics.fmean(u) for t, u in usage.items()},
        "sampled_types": dict(types),
    }


# --- the split by key kind (run on its own) ---------------------------------------------------


def _kind(key: bytes, prefix: bytes) -> str:
    rest = key[len(prefix) :] if key.startswith(prefix) else b""
    for head, kind in (
        (b"d:", "records"),
        (b"B{", "band_buckets"),
        (b"S{", "spilled_sets"),
        (b"H{", "spilled_sets"),
        (b"t:", "texts"),
        (b"ids", "ids"),
        (b"I{", "ids"),
    ):
        if rest.startswith(head):
            return kind
    return "other keys"


def key_split(redis: ThrowawayRedis, collection: str) -> tuple[Counter[str], Counter[str]]:
    """MEMORY USAGE summed over every key, and the number of keys, by kind."""
    r = redis.client()
    prefix = f"nd:{collection}:".encode()
    usage: Counter[str] = Counter()
    count: Counter[str] = Counter()
    batch: list[bytes] = []

    def flush() -> None:
        pipe = r.pipeline(transaction=False)
        for k in batch:
            pipe.memory_usage(k, samples=0)
        for k, u in zip(batch, pipe.execute(), strict=True):
            kind = _kind(k, prefix)
            usage[kind] += int(u or 0)
            count[kind] += 1
        batch.clear()

    for key in r.scan_iter(count=5000):
        batch.append(key)
        if len(batch) >= 2000:
            flush()
    flush()
    return usage, count


def record_split(redis: ThrowawayRedis, collection: str, sample: int = 2000) -> dict[str, float]:
    """Mean bytes per record by section (passage layout split further), over sampled records."""
    sections = support("sections")
    r = redis.client()
    prefix = f"nd:{collection}:".encode()
    handles = _sampled_handles(r, prefix, sample)
    raws = [raw for raw in r.mget([prefix + b"d:%d" % h for h in handles]) if raw]
    total: Counter[str] = Counter()
    for raw in raws:
        parts = sections.record_sections(raw)
        total.update(parts)
        layout = sections.layout_sections(_layout(raw))
        total.update({f"passages.{k}": v for k, v in layout.items()})
        total["all"] += len(raw)
    return {k: v / max(1, len(raws)) for k, v in total.items()}


def _layout(raw: bytes) -> bytes:
    return records.unpack(raw).passages


async def _run(n: int, capacity: int, workdir: Path) -> None:
    from common import log, make_corpus

    from app.index import Document, Index, Params
    from app.store import Store

    corpus = make_corpus(n, dup_fraction=0.2)
    redis = ThrowawayRedis(workdir, "memory").start()
    try:
        store = Store.connect(redis.url, "mem", 30.0)
        index = await Index.open(store, Params.create("word:3", 128, 256, 1, 0.5, capacity), 200)
        before = used_memory(redis)
        log(f"ingesting {n} documents")
        for k in range(0, n, 500):
            await index.ingest(
                [Document(corpus.text(i), corpus.ids[i]) for i in range(k, min(n, k + 500))]
            )
        after = used_memory(redis)
        await store.close()
        usage, count = key_split(redis, "mem")
        keys = sum(count.values())
        table = 8 * (1 << max(2, (keys - 1).bit_length()))  # the main dict's slots
        total = after - before
        print(
            f"{n} documents, capacity {capacity:,}, record version {records.VERSION}: "
            f"used_memory +{total:,} B, {total / n:,.0f} B per document"
        )
        print(f"{'kind':<22}{'keys':>10}{'B/doc':>10}{'share':>8}")
        for kind, u in usage.most_common():
            print(f"{kind:<22}{count[kind]:>10,}{u / n:>10,.0f}{u / total:>8.1%}")
        print(f"{'key table (est.)':<22}{'':>10}{table / n:>10,.0f}{table / total:>8.1%}")
        rest = total - sum(usage.values()) - table
        print(f"{'rest of used_memory':<22}{'':>10}{rest / n:>10,.0f}{rest / total:>8.1%}")
        split = record_split(redis, "mem")
        print(
            f"records by section (mean bytes of {split['all']:,.0f} per record; passages.*: "
            "the layout's parts as app.index.passages packs it, before the kernel compacts it):"
        )
        for name, b in split.items():
            if name != "all":
                print(f"  {name:<26}{b:>8,.0f}")
    finally:
        redis.stop()


def main() -> None:
    import argparse
    import asyncio
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument(
        "--capacity", type=int, help="NEARDUP_CAPACITY (default: --docs, as bench/service.py)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(args.docs, args.capacity or args.docs, Path(tmp)))


if __name__ == "__main__":
    main()
