"""Service benchmark (figures, not tests): neardup over HTTP against datasketch on Redis.

Run: ``make bench`` (``--size 20k``, the size of issue #29's table) or
``.venv/bin/python bench/service.py [--size 1k|10k|20k|100k|1m] [--workers 1,2] [--quick]``.

One run, on this machine, each part in its own module:

* a generated corpus (Zipf words, ~300 words a document, 20% planted near-duplicates at
  graded edit rates; bench/common.py);
* a throwaway redis-server (EmbeddedRedis with persistence off; bench/stores.py) and
  ``neardup serve`` pointed at it with its defaults, as ``make run`` starts it (no
  --workers: one worker per usable CPU; ``--workers 1,2`` runs those counts instead):
  ingest through POST /documents/batch in batches of 500 from several clients (ingest.py,
  in slices: scale.py), Redis used_memory per document and what it is made of
  (memory.py), recall of the planted pairs (recall.py), then GET /similar/{id} and POST
  /similar from 32 keep-alive connections for a fixed time each (queries.py): queries/s,
  latency percentiles, candidates per query, Redis commands per query;
* the HTTP ceiling: a trivial FastAPI route on the same uvicorn settings and worker count
  under the same load, and neardup's own /healthz (ceiling.py, queries.py);
* a hot-key corpus, 10,000 documents sharing one boilerplate (hot.py);
* datasketch's MinHashLSH(threshold=0.5, num_perm=128) on a fresh redis-server of the same
  binary, in-process, no HTTP, the same figures (baseline.py), and the ratios
  neardup/datasketch (report.py);
* with --size 100k or 1m: ingest docs/s per tenth of the corpus and GET p99 at 10k, 100k
  and 1M documents (scale.py).

The table ends with issue #29's figures, each next to its target, met or not
(report.issue_table; bench/issue.py prints them again with bench/cluster.py's at the end
of ``make bench``).

Load comes from ``wrk``, a C load generator, when it is installed (``apt-get install -y
wrk`` on Debian; the issue's figures were measured with it), else from bench/loadgen.py, a
Python client in a process of its own (``--tool`` chooses); the table's first lines and
the JSON's meta.tool say which one ran. bench/load.py measures the CPU of the client, the
server, Redis and whatever else ran meanwhile, and this run checks how much two busy
processes gain over one here (a VM's two vCPUs may not be two cores).

Results: a table on stdout and JSON in bench/out/service.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from baseline import run_datasketch
from ceiling import run_ceiling
from common import (
    OUT,
    ROOT,
    Corpus,
    Pair,
    check_against_oracle,
    cpu_parallelism,
    log,
    make_corpus,
)
from hot import run_hot
from load import Req, Runner
from memory import neardup_memory_breakdown, used_memory
from queries import profiled_queries, query_loads, query_requests
from recall import RECALL_MARGIN, THRESHOLD, neardup_recall, recall_pairs
from report import ratios, render
from scale import checkpoints_for, ingest_in_slices
from servers import neardup_server
from stores import ThrowawayRedis

SIZES = {"1k": 1_000, "10k": 10_000, "20k": 20_000, "100k": 100_000, "1m": 1_000_000}
COLLECTION = "bench"


def run_neardup(
    args: argparse.Namespace,
    corpus: Corpus,
    redis: ThrowawayRedis,
    runner: Runner,
    workers: int,
    gets: list[Req],
    posts: list[Req],
    pairs: list[Pair],
    want_recall: bool,
) -> dict[str, Any]:
    """One worker count on an empty Redis: ingest, memory, recall, query loads."""
    n = len(corpus.docs)
    redis.client().flushall()
    asked = None if args.serve_default else workers  # None: serve chooses, as `make run`
    server = neardup_server(redis, asked, COLLECTION, args.log_level, args.capacity).start()
    res: dict[str, Any] = {"workers": workers, "serve_default": args.serve_default}
    try:
        mem0 = used_memory(redis)
        checkpoints = checkpoints_for(n) if workers == max(args.workers) else []
        res.update(ingest_in_slices(args, server, corpus, redis, runner, workers, checkpoints))
        mem1 = used_memory(redis)
        res["memory"] = {
            "used_memory_before": mem0,
            "used_memory_after": mem1,
            "per_doc": (mem1 - mem0) / n,
            "estimates": neardup_memory_breakdown(redis, COLLECTION, n),
        }
        if want_recall:
            log(f"neardup {workers}w: recall over {len(pairs)} planted pairs")
            res["recall"] = neardup_recall(server.port, corpus, pairs)
        res.update(query_loads(args, server, redis, runner, workers, gets, posts))
        if n in checkpoints:
            res["checkpoints"][str(n)] = res["get"]
        if args.profile:
            res.update(profiled_queries(args, server, redis, runner, workers, gets, posts))
    finally:
        server.stop()
    return res


def _installed_neardup() -> dict[str, str]:
    """Which neardup the servers run: the installed package, and the repo's commit."""
    info = {}
    with contextlib.suppress(Exception):
        from importlib.metadata import version

        info["version"] = version("neardup")
    with contextlib.suppress(Exception):
        git = ["git", "-C", str(ROOT)]
        info["commit"] = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "app", "native"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        info["app_tree"] = "modified (uncommitted changes in app/ or native/)" if dirty else "clean"
    return info


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="20k")
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: --size 1k and 2 s loads (figures not comparable)",
    )
    p.add_argument("--duration", type=float, default=10.0, help="seconds per query load")
    p.add_argument("--checkpoint-duration", type=float, default=5.0)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument(
        "--workers",
        default="default",
        help="worker counts to run, e.g. 1,2; default: none given, so `neardup serve` "
        "chooses (one per usable CPU), as `make run` does",
    )
    p.add_argument("--ingest-clients", type=int, default=4)
    p.add_argument("--tool", choices=("auto", "wrk", "python"), default="auto")
    p.add_argument("--log-level", default="info", help="NEARDUP_LOG_LEVEL and uvicorn's")
    p.add_argument(
        "--capacity",
        type=int,
        help="NEARDUP_CAPACITY of the collection (default: the corpus size, as a deployment "
        "would size it)",
    )
    p.add_argument("--no-datasketch", action="store_true")
    p.add_argument(
        "--datasketch-docs",
        type=int,
        default=100_000,
        help="datasketch inserts at most this many of the docs",
    )
    p.add_argument("--no-hot", action="store_true")
    p.add_argument(
        "--profile",
        action="store_true",
        help="after the measured loads, repeat GET and POST under py-spy",
    )
    p.add_argument("--out", type=Path, default=OUT / "service.json")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.duration, args.checkpoint_duration = "1k", 2.0, 1.0
    args.serve_default = args.workers == "default"
    if args.serve_default:
        from app.service.workers import default_workers

        args.workers = [default_workers()]  # what serve will choose, for the ceiling's
    else:
        args.workers = sorted({int(w) for w in args.workers.split(",")})
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tool = args.tool
    if tool == "auto":
        tool = "wrk" if shutil.which("wrk") else "python"
    elif tool == "wrk" and not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk), or use --tool python")
    n = SIZES[args.size]
    args.capacity = args.capacity or n
    started = time.perf_counter()
    OUT.mkdir(parents=True, exist_ok=True)
    log(f"generating {n:,} docs")
    corpus = make_corpus(n)
    oracle_ok = check_against_oracle(corpus)
    if oracle_ok is False:
        raise SystemExit("exact Jaccard from word ids disagrees with tests/support/oracle.py")
    parallel = cpu_parallelism(sys.executable)
    log(f"CPU check: 2 processes finish {parallel['speedup']:.2f}x faster than 1 after another")
    rng = np.random.default_rng(1)
    qidx, gets, post_texts, posts = query_requests(corpus, n, rng)
    pairs = recall_pairs(corpus)
    res: dict[str, Any] = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M"),
            "command": " ".join(["python", "bench/service.py", *(argv or sys.argv[1:])]),
            "docs": n,
            "words_per_doc": float(np.mean([len(d) for d in corpus.docs[:10_000]])),
            "planted_pairs": len(corpus.pairs),
            "recall_pairs": sum(p.jaccard >= THRESHOLD + RECALL_MARGIN for p in corpus.pairs),
            "cpus": os.cpu_count(),
            "cpu_parallel_speedup": parallel["speedup"],
            "loadavg_start": os.getloadavg(),
            "machine": platform.platform(),
            "python": platform.python_version(),
            "tool": tool,
            "workers": args.workers,
            "serve_default": args.serve_default,
            "connections": args.connections,
            "duration": args.duration,
            "log_level": args.log_level,
            "oracle_checked": oracle_ok,
            "neardup": _installed_neardup(),
            "redis_settings": {"save": "", "appendonly": "no", "socket": "unix"},
            "capacity": args.capacity,
        },
        "neardup": {},
        "ceiling": {},
    }
    workdir = Path(tempfile.mkdtemp(prefix="nd-bench-"))
    runner = Runner(tool, args.connections, workdir)
    redis = ThrowawayRedis(workdir, "neardup").start()
    res["meta"]["redis"] = redis.version()
    try:
        for k, w in enumerate(args.workers):
            res["neardup"][str(w)] = run_neardup(
                args, corpus, redis, runner, w, gets, posts, pairs, want_recall=k == 0
            )
        top = res["neardup"][str(max(args.workers))]
        if top.get("checkpoints"):
            res["scale"] = {"slices": top["slices"], "checkpoints": top["checkpoints"]}
        for w in args.workers:
            res["ceiling"][str(w)] = run_ceiling(args, runner, w)
        if not args.no_hot:
            res["hot"] = run_hot(args, redis, runner, max(args.workers))
    finally:
        redis.stop()
    if not args.no_datasketch:
        ds_redis = ThrowawayRedis(workdir, "datasketch").start()
        try:
            res["datasketch"] = run_datasketch(
                corpus,
                min(n, args.datasketch_docs),
                qidx,
                post_texts,
                [p for p in pairs if p.a < args.datasketch_docs and p.b < args.datasketch_docs],
                ds_redis,
                args.duration,
                args.connections,
            )
        finally:
            ds_redis.stop()
    shutil.rmtree(workdir, ignore_errors=True)
    res["ratios"] = ratios(res)
    res["meta"]["wall_seconds"] = time.perf_counter() - started
    res["meta"]["loadavg_end"] = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1, default=float))
    print(render(res))
    print(f"\n(JSON: {args.out}; {res['meta']['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
