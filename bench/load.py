"""Fixed-time HTTP loads and what they cost: requests, latencies, CPU of every party.

Load comes from wrk (one thread) when it is installed, else from bench/loadgen.py in a
process of its own. Either way the client's CPU is measured next to the server's and
Redis', because on a 2-core machine the load generator competes with what it measures,
and so is the CPU that other processes on the machine took meanwhile.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from common import cpu_seconds, machine_busy_seconds, tree_pids
from servers import HOST
from stores import ThrowawayRedis


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


def _body_stats(bodies_stats: tuple[int, int, int, int]) -> dict[str, float | None]:
    answered, cand, capped, results = bodies_stats
    if not answered:
        return {"candidates": None, "results": None, "capped": None}
    return {
        "candidates": cand / answered,
        "results": results / answered,
        "capped": capped / answered,
    }


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
        redis: ThrowawayRedis | None = None,
    ) -> Load:
        spids = tree_pids(server_pid)
        rpids = [redis.pid] if redis is not None else []
        stats0 = commandstats(redis) if redis is not None else {}
        s0, r0 = cpu_seconds(spids), cpu_seconds(rpids)
        per0 = [cpu_seconds([p]) for p in spids]
        m0, b0 = machine_busy_seconds(), time.process_time()
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if self.tool == "wrk":
            raw = self._wrk(port, reqs, duration)
        else:
            raw = self._python(port, reqs, duration)
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        s1, r1 = cpu_seconds(spids), cpu_seconds(rpids)
        per1 = [cpu_seconds([p]) for p in spids]
        m1, b1 = machine_busy_seconds(), time.process_time()
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
            load.redis_per_query = per_query(stats0, commandstats(redis), load.requests)
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
        loadgen = Path(__file__).resolve().with_name("loadgen.py")
        subprocess.run([sys.executable, str(loadgen), str(spec_path), str(out_path)], check=True)
        return json.loads(out_path.read_text())


def commandstats(redis: ThrowawayRedis) -> dict[str, tuple[int, int]]:
    info = redis.client().info("commandstats")
    return {k.removeprefix("cmdstat_"): (v["calls"], v["usec"]) for k, v in info.items()}


def per_query(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], queries: int
) -> dict[str, dict[str, float]]:
    out = {}
    for cmd, (calls, usec) in after.items():
        c0, u0 = before.get(cmd, (0, 0))
        if calls - c0 > 0 and cmd not in ("info",):
            out[cmd] = {"calls": (calls - c0) / queries, "usec": (usec - u0) / queries}
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["usec"]))
