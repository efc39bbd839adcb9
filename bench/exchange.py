"""Query exchanges (figures, not tests): the one-exchange query against the pipelined one.

Run: ``.venv/bin/python bench/exchange.py [--size 10k] [--rounds 4]``.

One process, one throwaway redis-server (unix socket), the index without HTTP
(the service's default parameters and candidate cap): a bench corpus (bench/common.py)
is ingested, and optionally a boilerplate-heavy one (--hot: every query's bands
are hot), then the same queries run through both read paths of the same store, in
alternating rounds so the machine's other load falls on both alike:

* scripted: the candidates script (and the stored script for a query by id), one
  exchange each, what a single server uses;
* pipelined: band lookups, hot windows, MGET of records (and id -> handle -> record),
  what a Redis Cluster uses.

For GET-like queries (by id) and POST-like ones (by text): queries/s one at a time and
with 32 in flight, p50/p99 of one at a time, CPU per query of this process and of
redis-server (one at a time), exchanges per query (the store's own
count), and Redis commands per query (INFO commandstats): the script calls and loads,
and all Redis ran, the scripts' own calls included. A pipelined exchange sends every
command Redis runs; a scripted one sends one or two. JSON in bench/out/exchange.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import OUT, log, make_corpus, make_hot_corpus
from stores import ThrowawayRedis

from app.core import metrics
from app.core.settings import load_settings
from app.index import Document, Index
from app.service.runtime import params_of
from app.store import Store

SIZES = {"1k": 1_000, "10k": 10_000, "100k": 100_000}
CONCURRENCY = 32
# The commands that call or load a script (the client's; the scripts' own are in "run").
SCRIPT_SENT = ("evalsha", "eval", "script")


def _exchanges() -> float:
    """How many packed exchanges the store has made so far (its own histogram)."""
    for metric in metrics.REDIS_SECONDS.collect():
        for sample in metric.samples:
            if sample.name.endswith("_count") and sample.labels.get("op") == "pipeline":
                return sample.value
    return 0.0


def _redis_cpu(client: Any) -> float:
    """CPU seconds the redis-server has used so far (user and system)."""
    cpu = client.info("cpu")
    return float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


def _commandstats(client: Any) -> dict[str, int]:
    stats = client.info("commandstats")
    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}


async def _measure(
    index: Index, redis: ThrowawayRedis, ask: Callable[[Index, Any], Awaitable[Any]], items: list
) -> dict[str, float]:
    """One pass of items one at a time (latencies), then with CONCURRENCY in flight."""
    client = redis.client()
    before, sent = _commandstats(client), _exchanges()
    redis_cpu, own_cpu = _redis_cpu(client), time.process_time()
    times = np.empty(len(items))
    started = time.perf_counter()
    for i, item in enumerate(items):
        t0 = time.perf_counter()
        await ask(index, item)
        times[i] = time.perf_counter() - t0
    serial = time.perf_counter() - started
    own_cpu, redis_cpu = time.process_time() - own_cpu, _redis_cpu(client) - redis_cpu
    after, exchanges = _commandstats(client), _exchanges() - sent
    calls = {k: v - before.get(k, 0) for k, v in after.items() if k != "info"}
    scripts = sum(v for k, v in calls.items() if k in SCRIPT_SENT)
    queue = list(items)

    async def worker() -> None:
        while queue:
            await ask(index, queue.pop())

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    parallel = time.perf_counter() - started
    n = len(items)
    return {
        "qps_serial": n / serial,
        "qps_32": n / parallel,
        "p50_ms": float(np.percentile(times, 50) * 1000),
        "p99_ms": float(np.percentile(times, 99) * 1000),
        "python_cpu_us": own_cpu / n * 1e6,
        "redis_cpu_us": redis_cpu / n * 1e6,
        "exchanges_per_query": exchanges / n,
        "script_calls_per_query": scripts / n,
        "commands_run_per_query": sum(calls.values()) / n,
    }


async def _by_id(index: Index, doc_id: str) -> Any:
    return await index.similar_to_id(doc_id)


async def _by_text(index: Index, text: str) -> Any:
    return await index.similar_to_text(text)


async def _run(args: argparse.Namespace, redis: ThrowawayRedis, name: str, corpus: Any) -> dict:
    settings = load_settings(redis_url=f"unix://{redis.socket}", collection=name)
    store = Store.connect(settings.redis_url, name, 30.0)
    index = await Index.open(store, params_of(settings), settings.candidate_cap)
    n = len(corpus.docs)
    log(f"{name}: ingesting {n:,} docs")
    for start in range(0, n, 500):
        end = min(n, start + 500)
        docs = [Document(corpus.text(i), corpus.ids[i]) for i in range(start, end)]
        await index.ingest(docs)
    rng = np.random.default_rng(3)
    # A hot corpus's queries each read 50 x cap members and cap records: fewer of them.
    queries = args.queries if name != "hot" else max(20, args.queries // 10)
    picks = rng.choice(n, size=min(n, queries), replace=False).tolist()
    ids = [corpus.ids[i] for i in picks]
    texts = [corpus.text(i) for i in picks[: queries // 2]]
    # Both paths answer the same: checked on every query before anything is timed.
    for doc_id in ids[:100]:
        store.scripted = True
        new = await index.similar_to_id(doc_id)
        store.scripted = False
        assert new == await index.similar_to_id(doc_id), doc_id
    figures: dict[str, dict[str, list[dict[str, float]]]] = {}
    for r in range(args.rounds):
        for path in ("scripted", "pipelined") if r % 2 == 0 else ("pipelined", "scripted"):
            store.scripted = path == "scripted"
            for kind, ask, items in (("get", _by_id, ids), ("post", _by_text, texts)):
                got = await _measure(index, redis, ask, items)
                figures.setdefault(kind, {}).setdefault(path, []).append(got)
        log(f"{name}: round {r + 1} of {args.rounds}")
    await store.close()
    # Each figure's median over the rounds.
    return {
        kind: {
            path: {k: float(np.median([run[k] for run in runs])) for k in runs[0]}
            for path, runs in paths.items()
        }
        for kind, paths in figures.items()
    }


ROW = "  {:<5} {:<10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>7} {:>6}"
HEAD = ("query", "path", "q/s 1", "q/s 32", "p50 ms", "p99 ms", "py us", "redis us")


def _render(name: str, result: dict) -> str:
    lines = [name, ROW.format(*HEAD, "exchanges", "scripts", "run")]
    for kind, paths in result.items():
        for path, f in paths.items():
            cells = [f"{f['qps_serial']:.0f}", f"{f['qps_32']:.0f}"]
            cells += [f"{f['p50_ms']:.3f}", f"{f['p99_ms']:.3f}"]
            cells += [f"{f['python_cpu_us']:.0f}", f"{f['redis_cpu_us']:.0f}"]
            cells += [f"{f['exchanges_per_query']:.2f}", f"{f['script_calls_per_query']:.2f}"]
            cells.append(f"{f['commands_run_per_query']:.1f}")
            lines.append(ROW.format(kind, path, *cells))
        s, p = paths["scripted"], paths["pipelined"]
        cpu = (s["python_cpu_us"] + s["redis_cpu_us"]) / (p["python_cpu_us"] + p["redis_cpu_us"])
        lines.append(
            f"  {kind}: scripted/pipelined q/s {s['qps_serial'] / p['qps_serial']:.2f}x "
            f"(32 in flight {s['qps_32'] / p['qps_32']:.2f}x), p99 "
            f"{s['p99_ms'] / p['p99_ms']:.2f}x, CPU per query (Python + Redis) "
            f"{cpu:.2f}x"
        )
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="10k")
    p.add_argument("--queries", type=int, default=2000, help="queries by id per pass")
    p.add_argument("--rounds", type=int, default=4, help="alternating rounds of both paths")
    p.add_argument("--hot", action="store_true", help="also a boilerplate-heavy corpus")
    p.add_argument("--out", type=Path, default=OUT / "exchange.json")
    args = p.parse_args()
    out: dict[str, Any] = {"size": args.size, "rounds": args.rounds}
    with tempfile.TemporaryDirectory(prefix="neardup-exchange-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "redis").start()
        try:
            log(f"generating {SIZES[args.size]:,} docs")
            corpora = [("bench", make_corpus(SIZES[args.size]))]
            if args.hot:
                corpora.append(("hot", make_hot_corpus(min(SIZES[args.size], 10_000))))
            for name, corpus in corpora:
                out[name] = asyncio.run(_run(args, redis, name, corpus))
                print(_render(name, out[name]), flush=True)
        finally:
            redis.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
