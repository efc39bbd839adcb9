"""Hot keys: 10,000 documents sharing one 200-word boilerplate, then GET /similar/{id}.

Every document shares most bands with every other, so each query meets bands holding all
of them: the service must cap the candidates it reads and still answer quickly.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

import numpy as np
from common import OUT, log, make_hot_corpus
from ingest import ingest
from load import Req, Runner
from profiling import profiled_load
from servers import neardup_server
from stores import ThrowawayRedis


def run_hot(
    args: argparse.Namespace, redis: ThrowawayRedis, runner: Runner, workers: int
) -> dict[str, Any]:
    hot = make_hot_corpus()
    redis.client().flushall()
    asked = None if args.serve_default else workers
    server = neardup_server(redis, asked, "hot", args.log_level, len(hot.docs)).start()
    try:
        sl = ingest(server, hot, 0, len(hot.docs), args.ingest_clients, redis)
        log(f"hot: ingested {len(hot.docs)} docs at {sl['docs_per_s']:.0f} docs/s")
        rng = np.random.default_rng(7)
        reqs = [Req("GET", f"/similar/{hot.ids[i]}") for i in rng.permutation(len(hot.docs))]
        secs = args.duration / 2
        load = runner.run(f"hot {workers}w", server.port, reqs, secs, server.pid, redis)
        log(f"hot: {load.qps:.0f} q/s p99 {load.p99_ms:.1f} ms capped {load.capped}")
        res = {"docs": len(hot.docs), "ingest": sl, "get": asdict(load), "workers": workers}
        r = redis.client()
        # Spilled bands: sorted sets (S{, older collections) or packed strings (H{, 4 B each).
        sizes = [int(r.zcard(k)) for k in r.scan_iter(match=b"nd:hot:S{*", count=5000)]
        sizes += [r.strlen(k) // 4 for k in r.scan_iter(match=b"nd:hot:H{*", count=5000)]
        res["largest_band_sets"] = sorted(sizes)[-5:]
        if args.profile:
            out = OUT / f"pyspy-hot-{workers}w.txt"
            top = profiled_load(runner, server, redis, reqs, args.duration, out)
            if top is not None:
                res["pyspy_get"] = top
        return res
    finally:
        server.stop()
