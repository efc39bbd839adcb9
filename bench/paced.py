"""Latency at a paced load, and what each collection profile costs (issue #29, items 3-4).

Run: ``make bench`` (20k documents) or
``.venv/bin/python bench/paced.py [--size 1k|10k|20k|100k] [--quick] [--no-profiles]``.

One run, on this machine, against ``neardup serve`` with its defaults on a throwaway
redis-server (bench/stores.py), all traffic to 127.0.0.1, every load bounded in time:

1. the corpus of bench/service.py (Zipf words, 200-400 words a document, 20% planted
   near-duplicates) is ingested in batches of 500;
2. the **peak** of each query kind: GET /similar/{id}, POST /similar and a containment
   query with evidence (POST /similar, measure=containment, evidence=true), each from
   wrk with 32 keep-alive connections for --peak-duration (bench/load.py; GET cycles
   through 4,000 ids, the POSTs through 1,000 edited copies of stored documents);
3. each kind **paced** at 25%, 50% and 75% of its own peak by ``hey -c 16`` (as issue
   #29 measures; --pacers), each worker sending -q = rate / 16 queries a second. hey's
   workers tick in lockstep, so its requests come in bursts of 16; --spread runs one
   hey process per pacer at spread phases instead. One request repeated,
   every latency written out (-o csv) so p99.9 is exact. hey paces each worker by a
   ticker, so a worker whose answer is late skips ticks: the achieved rate is printed
   next to the target, and a shortfall says the load was not held;
4. **what the p99 is made of**, measured during each paced run from inside the server
   (bench/probe/sitecustomize.py, loaded only here): garbage-collection pauses
   (gc.callbacks), the event loop's lag (a callback scheduled every 10 ms, timed until
   it runs), Redis' own time per query (INFO commandstats) and its commands slower than
   1 ms (SLOWLOG), and the access log (GET at 50% again with NEARDUP_LOG_LEVEL=warning,
   which drops the per-request line);
5. with profiles (the default): bytes per document and ingest rate of the two
   collection recipes, created through POST /collections on the same server: mirror
   (threshold 0.8, no passage index) and plagiarism (passages, kept texts), next to the
   defaults, and the nodes a billion documents of each would need (--node-gb,
   --replicas, see nodes_for; --render prints a saved run again with other ones).

Results: a table on stdout and JSON in bench/out/paced.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from common import OUT, Corpus, log, make_corpus
from ingest import ingest
from load import Req, Runner, commandstats
from memory import used_memory
from queries import query_requests
from servers import HOST, Server, neardup_server
from stores import ThrowawayRedis

SIZES = {"1k": 1_000, "10k": 10_000, "20k": 20_000, "100k": 100_000}
COLLECTION = "bench"
KINDS = ("get", "post", "containment")
FRACTIONS = (0.25, 0.5, 0.75)
PROBE = Path(__file__).resolve().parent / "probe"
# A billion documents, and what a node gives Redis' data of its memory: half of the RAM,
# as docs/deployment.md sizes it, leaves room for a fork's copy-on-write (RDB save, AOF
# rewrite, a replica's full sync), fragmentation and buffers.
BILLION = 1_000_000_000
DATA_SHARE = 0.5
PROFILES = {
    "defaults": None,  # the service's own collection, as configured
    "mirror": {"threshold": 0.8, "passage_words": 0},
    "plagiarism": {"keep_text": True},
}


# --- paced loads --------------------------------------------------------------------------


def hey(
    port: int,
    req: Req,
    rate: float,
    duration: float,
    workers: int,
    work: Path,
    lockstep: bool = True,
) -> dict:
    """req sent at rate queries/s in all by hey, from workers pacers at rate/workers each.

    One hey process's workers tick in lockstep: they start together and share a period,
    so -c32 sends its requests in bursts of 32 at once, and a burst queues on 2 cores
    (at a quarter of GET's peak: p50 6.0 ms with -c32 against 1.0 ms with -c4, the same
    rate). lockstep=False spreads them instead: each pacer a hey process of its own
    (-c 1), started 1/rate s after the one before, so their ticks spread over the period
    (at the cost of a Go runtime per pacer on the same cores).
    """
    per_worker = rate / workers
    body_args: list[str] = []
    if req.body is not None:
        body = work / "hey-body.json"
        body.write_bytes(req.body)
        body_args = ["-m", req.method, "-T", "application/json", "-D", str(body)]
    url = f"http://{HOST}:{port}{req.path}"

    def command(c: int) -> list[str]:
        cmd = ["hey", "-z", f"{duration:g}s", "-c", str(c), "-q", f"{per_worker:.4f}"]
        return [*cmd, "-o", "csv", "-t", "10", *body_args, url]

    if lockstep:
        runs = [subprocess.Popen(command(workers), stdout=subprocess.PIPE, text=True)]
    else:
        runs = []
        for _ in range(workers):
            runs.append(subprocess.Popen(command(1), stdout=subprocess.PIPE, text=True))
            time.sleep(1 / rate)
    latencies, errors = [], 0
    for run in runs:
        out, _ = run.communicate(timeout=duration + 60)
        if run.returncode:
            raise RuntimeError(f"hey exited {run.returncode}")
        for line in out.splitlines()[1:]:
            cols = line.split(",")
            if len(cols) < 8:
                continue
            latencies.append(float(cols[0]) * 1000)
            errors += cols[6] != "200"
    ms = np.array(latencies)
    return {
        "target_qps": rate,
        "workers": workers,
        "lockstep": lockstep,
        "per_worker_q": per_worker,
        "requests": len(ms),
        "errors": errors,
        "achieved_qps": len(ms) / duration,
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "p999_ms": float(np.percentile(ms, 99.9)),
        "max_ms": float(ms.max()),
    }


class Probe:
    """The server processes' probe (bench/probe/sitecustomize.py): reset, then dump."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.n = 0

    def _say(self, action: str) -> int:
        self.n += 1
        tmp = self.dir / ".cmd"
        tmp.write_text(f"{self.n} {action}")
        tmp.rename(self.dir / "cmd")
        return self.n

    def reset(self) -> None:
        self._say("reset")
        time.sleep(0.2)

    def dump(self) -> dict[str, Any]:
        n = self._say("dump")
        time.sleep(0.5)
        outs = [json.loads(p.read_text()) for p in self.dir.glob(f"out-*-{n}.json")]
        serving = [o for o in outs if o["loop"]]  # the workers, not uvicorn's supervisor
        pauses = [p for o in serving for p in o["gc"]]
        lags = np.array([x for o in serving for x in o["lag"]]) * 1000
        gc_ms = np.array([p[0] for p in pauses]) * 1000
        gc_cpu_ms = np.array([p[1] for p in pauses]) * 1000
        return {
            "processes": len(serving),
            "gc_pauses": len(gc_ms),
            "gc_total_ms": float(gc_ms.sum()),
            "gc_max_ms": float(gc_ms.max()) if len(gc_ms) else 0.0,
            "gc_over_1ms": int((gc_ms >= 1).sum()),
            "gc_cpu_total_ms": float(gc_cpu_ms.sum()),
            "gc_cpu_max_ms": float(gc_cpu_ms.max()) if len(gc_cpu_ms) else 0.0,
            "gen2": sum(1 for p in pauses if p[-1] == 2),
            "lag_p50_ms": float(np.percentile(lags, 50)) if len(lags) else None,
            "lag_p99_ms": float(np.percentile(lags, 99)) if len(lags) else None,
            "lag_max_ms": float(lags.max()) if len(lags) else None,
        }


def redis_window(redis: ThrowawayRedis) -> dict[str, Any]:
    client = redis.client()
    client.slowlog_reset()
    return {"stats": commandstats(redis)}


def redis_after(redis: ThrowawayRedis, before: dict[str, Any], queries: int) -> dict[str, Any]:
    after = commandstats(redis)
    calls = sum(c for c, _ in after.values()) - sum(c for c, _ in before["stats"].values())
    usec = sum(u for _, u in after.values()) - sum(u for _, u in before["stats"].values())
    slow = redis.client().slowlog_get(128)
    return {
        "commands_per_query": calls / max(queries, 1),
        "redis_us_per_query": usec / max(queries, 1),
        "slow_commands": len(slow),
        "slowest_us": max((int(e["duration"]) for e in slow), default=0),
        "slow_names": sorted({bytes(e["command"]).split()[0].decode() for e in slow})[:5],
    }


def paced_run(
    server: Server,
    redis: ThrowawayRedis,
    probe: Probe,
    req: Req,
    rate: float,
    args: Any,
    work: Path,
) -> dict[str, Any]:
    """One paced load with the server's and Redis' view of it."""
    window = redis_window(redis)
    probe.reset()
    res = hey(server.port, req, rate, args.duration, args.pacers, work, not args.spread)
    res["server"] = probe.dump()
    # The machine's 1-minute load average: on a shared machine, others' work is latency too.
    res["loadavg"] = os.getloadavg()[0]
    res["redis"] = redis_after(redis, window, res["requests"])
    return res


# --- the run ------------------------------------------------------------------------------


def single_requests(corpus: Corpus, rng: np.random.Generator) -> dict[str, list[Req]]:
    """Each kind's requests: the cycles wrk's peak loads go through."""
    n = len(corpus.docs)
    _, gets, texts, posts = query_requests(corpus, n, rng)
    # The GET of a document with a planted near-duplicate comes first: hey repeats the first.
    gets.insert(0, Req("GET", f"/similar/{corpus.ids[corpus.pairs[0].a]}"))
    contains = [
        Req(
            "POST",
            "/similar",
            orjson.dumps({"text": t, "measure": "containment", "evidence": True}),
        )
        for t in texts
    ]
    return {"get": gets, "post": posts, "containment": contains}


def start_server(
    redis: ThrowawayRedis,
    n: int,
    probe_dir: Path | None,
    log_level: str = "info",
    gc_freeze: bool = False,
) -> Server:
    server = neardup_server(redis, None, COLLECTION, log_level, n)
    if probe_dir is not None:
        server.env["PYTHONPATH"] = str(PROBE)
        server.env["NDBENCH_PROBE_DIR"] = str(probe_dir)
        if gc_freeze:
            server.env["NDBENCH_GC_FREEZE"] = "1"
    return server.start()


def nodes_for(bytes_per_doc: float, node_gb: float, replicas: int) -> dict[str, float]:
    """Nodes a billion documents need at bytes_per_doc: masters enough that each holds
    its share within DATA_SHARE of node_gb, each with its replicas."""
    usable = node_gb * 2**30 * DATA_SHARE
    total = bytes_per_doc * BILLION
    masters = math.ceil(total / usable)
    return {
        "total_tb": total / 1e12,
        "masters": masters,
        "nodes": masters * (1 + replicas),
    }


def run_profiles(
    server: Server, redis: ThrowawayRedis, corpus: Corpus, defaults: dict[str, float], args: Any
) -> dict[str, Any]:
    """Each profile's collection filled with the same corpus: bytes per document
    (used_memory before and after) and ingest documents/s."""
    import httpx

    n = len(corpus.docs)
    out: dict[str, Any] = {"defaults": defaults}
    for name, params in PROFILES.items():
        if params is None:
            continue
        r = httpx.post(
            f"http://{HOST}:{server.port}/collections",
            json={"name": name, "capacity": n, **params},
            timeout=30,
        )
        if r.status_code not in (200, 201):
            raise RuntimeError(f"POST /collections {name}: {r.status_code} {r.text[:300]}")
        before = used_memory(redis)
        log(f"profile {name} {params}: ingest {n} documents")
        got = ingest(server, corpus, 0, n, 4, redis, path=f"/collections/{name}/documents/batch")
        out[name] = {
            "params": params,
            "bytes_per_doc": (used_memory(redis) - before) / n,
            "docs_per_s": got["docs_per_s"],
        }
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    n = SIZES[args.size]
    rng = np.random.default_rng(29)
    log(f"corpus: {n} documents")
    corpus = make_corpus(n)
    reqs = single_requests(corpus, rng)
    work = Path(tempfile.mkdtemp(prefix="neardup-paced-"))
    probe_dir = work / "probe"
    probe_dir.mkdir()
    redis = ThrowawayRedis(work, "redis").start()
    redis.client().config_set("slowlog-log-slower-than", 1000)
    redis.client().config_set("slowlog-max-len", 1024)
    res: dict[str, Any] = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "size": n,
            "redis": redis.version(),
            "duration": args.duration,
            "gc_freeze": args.gc_freeze,
        }
    }
    server = start_server(redis, n, probe_dir, gc_freeze=args.gc_freeze)
    try:
        before = used_memory(redis)
        log(f"ingest {n} documents (defaults)")
        got = ingest(server, corpus, 0, n, 4, redis)
        defaults = {"bytes_per_doc": (used_memory(redis) - before) / n, **got}
        res["ingest"] = defaults
        runner = Runner("wrk" if shutil.which("wrk") else "python", args.connections, work)
        res["meta"]["peak_tool"] = runner.tool
        probe = Probe(probe_dir)
        for kind in KINDS:
            log(f"{kind}: peak, {args.connections} connections, {args.peak_duration:g} s")
            peak = runner.run(kind, server.port, reqs[kind], args.peak_duration, server.pid, redis)
            res[kind] = {"peak": asdict(peak), "paced": {}}
            for frac in FRACTIONS:
                rate = frac * peak.qps
                log(f"{kind}: paced at {frac:.0%} of {peak.qps:.0f} = {rate:.0f} q/s")
                paced = paced_run(server, redis, probe, reqs[kind][0], rate, args, work)
                res[kind]["paced"][f"{frac:g}"] = paced
        server.stop()
        # The access log's share: GET at half its peak without it (the line is INFO).
        server = start_server(redis, n, probe_dir, "warning", args.gc_freeze)
        rate = 0.5 * res["get"]["peak"]["qps"]
        log(f"get without the access log: paced at {rate:.0f} q/s")
        res["get"]["no_access_log"] = paced_run(
            server, redis, Probe(probe_dir), reqs["get"][0], rate, args, work
        )
        if args.profiles:
            res["profiles"] = run_profiles(server, redis, corpus, defaults, args)
    finally:
        server.stop()
        redis.stop()
        shutil.rmtree(work, ignore_errors=True)
    return res


# --- the report ---------------------------------------------------------------------------


def _f(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _gc_cpu(s: dict[str, Any]) -> str:
    if "gc_cpu_total_ms" not in s:  # a run saved before the probe took CPU time
        return ""
    return (
        f" (of which CPU {_f(s['gc_cpu_total_ms'])} ms, max {_f(s['gc_cpu_max_ms'], 2)} ms: "
        "the rest is waiting for a core)"
    )


def render(res: dict[str, Any], args: argparse.Namespace) -> str:
    meta = res["meta"]
    lines = [
        f"Paced latency, {meta['size']} documents, redis {meta['redis']}; peak by "
        f"{meta['peak_tool']} -c{args.connections}, paced by "
        + (
            f"hey -c{args.pacers} (-q = rate / {args.pacers} per worker, in lockstep)"
            if not args.spread
            else f"{args.pacers} hey -c1 processes at spread phases (-q = rate / {args.pacers})"
        )
        + f", {meta['duration']:g} s per load",
        f"ingest (defaults): {res['ingest']['docs_per_s']:.0f} docs/s, "
        f"{res['ingest']['bytes_per_doc']:.0f} B per document",
        "",
        "| query | peak q/s | load | target q/s | achieved | p50 ms | p99 ms | p99.9 ms | max ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    names = {"get": "GET /similar", "post": "POST /similar", "containment": "containment"}
    for kind in KINDS:
        peak = res[kind]["peak"]
        lines.append(
            f"| {names[kind]} | **{peak['qps']:.0f}** | peak | - | - | {_f(peak['p50_ms'])} | "
            f"{_f(peak['p99_ms'])} | {_f(peak['p999_ms'])} | {_f(peak['max_ms'])} |"
        )
        for frac, p in res[kind]["paced"].items():
            lines.append(
                f"| | | {float(frac):.0%} | {p['target_qps']:.0f} | {p['achieved_qps']:.0f} | "
                f"{_f(p['p50_ms'], 2)} | **{_f(p['p99_ms'], 2)}** | {_f(p['p999_ms'], 2)} | "
                f"{_f(p['max_ms'], 1)} |"
            )
    loads = [p["loadavg"] for k in KINDS for p in res[k]["paced"].values()]
    lines += [
        "",
        f"Machine load average during the paced loads: {min(loads):.1f} to {max(loads):.1f} "
        f"({os.cpu_count()} CPUs).",
        "",
        "What the p99 is made of, at 50% of each peak (over the server's worker processes):",
    ]
    for kind in KINDS:
        p = res[kind]["paced"]["0.5"]
        s, r = p["server"], p["redis"]
        lines.append(
            f"- {names[kind]}: p50 {_f(p['p50_ms'], 2)} ms, p99 {_f(p['p99_ms'], 2)} ms, "
            f"p99.9 {_f(p['p999_ms'], 2)} ms. Event loop lag p50 {_f(s['lag_p50_ms'], 2)} / "
            f"p99 {_f(s['lag_p99_ms'], 2)} / max {_f(s['lag_max_ms'], 1)} ms. "
            f"GC: {s['gc_pauses']} pauses ({s['gen2']} full), {_f(s['gc_total_ms'])} ms in "
            f"{meta['duration']:g} s, max {_f(s['gc_max_ms'], 2)} ms, {s['gc_over_1ms']} "
            f"over 1 ms{_gc_cpu(s)}. Redis: {r['redis_us_per_query']:.0f} µs and "
            f"{r['commands_per_query']:.1f} commands per query, {r['slow_commands']} "
            f"commands over 1 ms (slowest {r['slowest_us']} µs {','.join(r['slow_names'])})."
        )
    quiet = res["get"].get("no_access_log")
    if quiet is not None:
        loud = res["get"]["paced"]["0.5"]
        lines.append(
            f"- access log: GET at 50% p50 {_f(loud['p50_ms'], 2)} / p99 "
            f"{_f(loud['p99_ms'], 2)} ms with it, {_f(quiet['p50_ms'], 2)} / "
            f"{_f(quiet['p99_ms'], 2)} ms without (NEARDUP_LOG_LEVEL=warning)"
        )
    profiles = res.get("profiles")
    if profiles:
        lines += [
            "",
            f"Profiles: a billion documents, nodes of {args.node_gb:g} GiB holding data up "
            f"to {DATA_SHARE:.0%} of it, {args.replicas} replica(s) per master "
            f"(bytes per document measured at {meta['size']} documents):",
            "",
            "| profile | parameters | bytes/doc | ingest docs/s | 1e9 docs | masters | nodes |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, p in profiles.items():
            b = nodes_for(p["bytes_per_doc"], args.node_gb, args.replicas)
            params = p.get("params") or "service defaults"
            lines.append(
                f"| {name} | {params} | {p['bytes_per_doc']:.0f} | {p['docs_per_s']:.0f} | "
                f"{b['total_tb']:.2f} TB | {b['masters']} | {b['nodes']} |"
            )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", choices=sorted(SIZES), default="20k")
    p.add_argument("--quick", action="store_true", help="1k documents, 2 s loads: a smoke run")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per paced load")
    p.add_argument("--peak-duration", type=float, default=8.0, help="seconds per peak load")
    p.add_argument("--connections", type=int, default=32, help="wrk connections at the peak")
    p.add_argument(
        "--pacers",
        type=int,
        default=16,
        help="hey workers of a paced load (16: issue #29's hey -c16)",
    )
    p.add_argument(
        "--spread",
        action="store_true",
        help="one hey process per pacer at spread phases, not one hey -c PACERS in lockstep",
    )
    p.add_argument("--no-profiles", dest="profiles", action="store_false")
    p.add_argument("--node-gb", type=float, default=64.0, help="RAM of one Redis node, GiB")
    p.add_argument("--replicas", type=int, default=1, help="replicas per master")
    p.add_argument(
        "--gc-freeze",
        action="store_true",
        help="an experiment: gc.freeze() in each server worker once it serves",
    )
    p.add_argument("--render", type=Path, help="print the report of a saved paced.json, no run")
    args = p.parse_args(argv)
    if args.quick:
        args.size, args.duration, args.peak_duration = "1k", 2.0, 2.0
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.render is not None:
        print(render(json.loads(args.render.read_text()), args))
        return
    if shutil.which("hey") is None:
        raise SystemExit("bench/paced.py needs hey: apt-get install -y hey (and wrk)")
    res = run(args)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "paced.json").write_text(json.dumps(res, indent=1))
    print(render(res, args))


if __name__ == "__main__":
    main()
