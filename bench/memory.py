"""Redis memory per document: used_memory after an ingest minus before, and what it is made of.

The breakdowns come from MEMORY USAGE of sampled keys, so they are estimates; the total
per document is the measured figure.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

from stores import ThrowawayRedis


def used_memory(redis: ThrowawayRedis) -> int:
    return int(redis.client().info("memory")["used_memory"])


def neardup_memory_breakdown(redis: ThrowawayRedis, collection: str, docs: int) -> dict[str, Any]:
    """What the memory is made of, from MEMORY USAGE of sampled keys, per document."""
    r = redis.client()
    prefix = f"nd:{collection}:".encode()
    handles = [int(v) for v in r.hrandfield(prefix + b"ids", 300, withvalues=True)[1::2]]
    rec_usage = [int(r.memory_usage(prefix + b"d:%d" % h, samples=0) or 0) for h in handles]
    rec_len = [int(r.strlen(prefix + b"d:%d" % h)) for h in handles]
    buckets = list(r.scan_iter(match=prefix + b"B{*", count=5000))
    spills = list(r.scan_iter(match=prefix + b"S{*", count=5000))
    sample = buckets[:: max(1, len(buckets) // 400)][:400]
    bucket_usage = [int(r.memory_usage(k, samples=0) or 0) for k in sample]
    bucket_fields = [int(r.hlen(k)) for k in sample]
    encodings = Counter(r.object("encoding", k).decode() for k in sample[:100])
    spill_usage = sum(int(r.memory_usage(k, samples=0) or 0) for k in spills)
    ids_usage = int(r.memory_usage(prefix + b"ids", samples=0) or 0)
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
