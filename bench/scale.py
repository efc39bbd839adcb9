"""Ingest in slices, and GET at checkpoints on the way: does the service slow as it grows?

The corpus goes in by tenths (slices of 10,000 below 100,000 documents), so docs/s per
slice shows ingest slowing down as Redis fills. With --size 100k or 1m the largest worker
count also stops at 10k, 100k (and 1M) documents for a GET load over ids spread across
what is in.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import asdict
from typing import Any

import numpy as np
from common import Corpus, log
from ingest import ingest
from load import Req, Runner, commandstats, per_query
from servers import Server
from stores import ThrowawayRedis


def checkpoints_for(size: int) -> list[int]:
    return [c for c in (10_000, 100_000, 1_000_000) if c <= size] if size > 10_000 else []


def ingest_in_slices(
    args: argparse.Namespace,
    server: Server,
    corpus: Corpus,
    redis: ThrowawayRedis,
    runner: Runner,
    workers: int,
    checkpoints: list[int],
) -> dict[str, Any]:
    """The whole corpus ingested: per-tenth docs/s, checkpoint GET loads, and the totals."""
    n = len(corpus.docs)
    # tenths of the corpus (one slice at 10k); checkpoints split a tenth in two pieces
    tenths = np.linspace(0, n, max(1, min(10, n // 10_000)) + 1).astype(int).tolist()
    bounds = sorted(set(tenths) | set(checkpoints))
    res: dict[str, Any] = {"slices": [], "checkpoints": {}}
    total_secs = piece_secs = server_cpu = redis_cpu = 0.0
    retried_503 = 0
    # What Redis spends per document, slice by slice: where a slowing ingest goes.
    stats_at = commandstats(redis)
    piece_cpu = {"server": 0.0, "redis": 0.0}
    for lo, hi in itertools.pairwise(bounds):
        sl = ingest(server, corpus, lo, hi, args.ingest_clients, redis)
        total_secs += sl["seconds"]
        piece_secs += sl["seconds"]
        server_cpu += sl["server_cpu"] * sl["seconds"]
        redis_cpu += sl["redis_cpu"] * sl["seconds"]
        piece_cpu["server"] += sl["server_cpu"] * sl["seconds"]
        piece_cpu["redis"] += sl["redis_cpu"] * sl["seconds"]
        retried_503 += sl["retried_503"]
        if hi in tenths:
            start = tenths[tenths.index(hi) - 1]
            now = commandstats(redis)
            res["slices"].append(
                {
                    "upto": hi,
                    "docs": hi - start,
                    "docs_per_s": (hi - start) / piece_secs,
                    # CPU-seconds per document (us), each process's
                    "server_us": 1e6 * piece_cpu["server"] / (hi - start),
                    "redis_us": 1e6 * piece_cpu["redis"] / (hi - start),
                    "redis_commands": per_query(stats_at, now, hi - start),
                }
            )
            piece_secs = 0.0
            piece_cpu = {"server": 0.0, "redis": 0.0}
            stats_at = now
        log(f"neardup {workers}w: ingested {hi} docs at {sl['docs_per_s']:.0f} docs/s")
        # the last checkpoint is the main GET load itself (see service.run_neardup)
        if hi in checkpoints and hi != n:
            ids = [Req("GET", f"/similar/{corpus.ids[i]}") for i in range(0, hi, hi // 2000)]
            before = commandstats(redis)
            cp = runner.run(
                f"GET@{hi}", server.port, ids, args.checkpoint_duration, server.pid, redis
            )
            # The slice's commands a document are the ingest's: the load's are taken out.
            stats_at = _shifted(stats_at, before, commandstats(redis))
            res["checkpoints"][str(hi)] = asdict(cp)
            log(f"  checkpoint {hi}: {cp.qps:.0f} q/s, p99 {cp.p99_ms:.1f} ms")
    res["ingest"] = {
        "docs": n,
        "seconds": total_secs,
        "docs_per_s": n / total_secs,
        "retried_503": retried_503,
        "server_cpu": server_cpu / total_secs,
        "redis_cpu": redis_cpu / total_secs,
    }
    return res


def _shifted(
    base: dict[str, tuple[int, int]],
    before: dict[str, tuple[int, int]],
    after: dict[str, tuple[int, int]],
) -> dict[str, tuple[int, int]]:
    """base with what Redis did between before and after added, so a difference from it
    leaves that out."""
    out = dict(base)
    for cmd, (calls, usec) in after.items():
        c0, u0 = before.get(cmd, (0, 0))
        c, u = out.get(cmd, (0, 0))
        out[cmd] = (c + calls - c0, u + usec - u0)
    return out
