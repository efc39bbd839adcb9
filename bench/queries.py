"""Query loads on a filled index: GET /similar/{id}, POST /similar and GET /healthz.

GET cycles through QUERY_IDS stored ids; POST through QUERY_TEXTS edited copies of stored
documents (2-20% of words changed in blocks), so most have near-duplicates to find.
/healthz runs neardup's middleware stack without Redis: the service's own HTTP cost.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

import numpy as np
from common import OUT, Corpus, log
from load import Req, Runner
from profiling import profiled_load
from servers import Server
from stores import ThrowawayRedis

QUERY_IDS = 4000  # distinct ids cycled through by the GET load
QUERY_TEXTS = 1000  # distinct texts cycled through by the POST load


def query_requests(
    corpus: Corpus, n_docs: int, rng: np.random.Generator
) -> tuple[list[int], list[Req], list[str], list[Req]]:
    """The ids the GET load cycles through and the texts the POST load sends."""
    import orjson

    qidx = rng.choice(n_docs, min(QUERY_IDS, n_docs), replace=False).tolist()
    gets = [Req("GET", f"/similar/{corpus.ids[i]}") for i in qidx]
    texts = []
    for i in rng.choice(n_docs, QUERY_TEXTS, replace=n_docs < QUERY_TEXTS).tolist():
        rate = float(rng.choice([0.02, 0.05, 0.1, 0.2]))
        texts.append(corpus.words.render(corpus.words.edit(corpus.docs[i], rate, "block")))
    posts = [Req("POST", "/similar", orjson.dumps({"text": t})) for t in texts]
    return qidx, gets, texts, posts


def fmt_cpu(cpu: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.2f}" for k, v in cpu.items())


def query_loads(
    args: argparse.Namespace,
    server: Server,
    redis: ThrowawayRedis,
    runner: Runner,
    workers: int,
    gets: list[Req],
    posts: list[Req],
) -> dict[str, Any]:
    """The get, post and healthz loads, each for --duration (healthz half of it)."""
    res: dict[str, Any] = {}
    loads = [("get", gets, args.duration), ("post", posts, args.duration)]
    loads.append(("healthz", [Req("GET", "/healthz")], args.duration / 2))
    for name, reqs, secs in loads:
        log(f"neardup {workers}w: {name} load, {args.connections} conns, {secs:.0f} s")
        load = runner.run(f"{name} {workers}w", server.port, reqs, secs, server.pid, redis)
        res[name] = asdict(load)
        log(f"  {load.qps:.0f} q/s p99 {load.p99_ms:.1f} ms cpu {fmt_cpu(load.cpu)}")
    return res


def profiled_queries(
    args: argparse.Namespace,
    server: Server,
    redis: ThrowawayRedis,
    runner: Runner,
    workers: int,
    gets: list[Req],
    posts: list[Req],
) -> dict[str, Any]:
    """--profile: the GET and POST loads again under py-spy, after the measured ones."""
    res: dict[str, Any] = {}
    for name, reqs in (("get", gets), ("post", posts)):
        out = OUT / f"pyspy-{name}-{workers}w.txt"
        log(f"neardup {workers}w: py-spy on a {name} load -> {out}")
        top = profiled_load(runner, server, redis, reqs, args.duration, out)
        if top is not None:
            res[f"pyspy_{name}"] = top
    return res
