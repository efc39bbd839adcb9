"""The HTTP edge's cost per request, in-process: neardup's hot routes against a trivial route.

Each request is one call of the ASGI application, as uvicorn makes it, with no socket,
sequentially, so what is measured is the application's own work per request (on the clock, and
in the process's CPU time, which leaves out the wait for redis-server): the Edge
middleware, routing, the route and the answer, and (for the /similar routes) the index's
query on a local redis-server. The index's query is also timed alone on the same ids, so
"edge" = the route's time minus the index's is what HTTP handling costs on top; and the
route with the index's answer given (no Redis, no wait), which is HTTP's own work alone.
The two differ (the whole costs more than its parts timed apart; not from the deadline's
timer or the GC, both tried; why is not settled). A trivial
FastAPI route (bench/ceiling.py's) is timed in the same process as the floor. Last, the
router's walk alone to each hot route, with the routes' own matches and with
app.api.routing.Route's quick refusal.

    .venv/bin/python bench/edge.py [--docs 2000] [--requests 3000] [--profile]

Every figure is measured in turn, round after round, and each keeps its best round (a
shared machine slows some rounds). --profile FIGURE prints cProfile's top functions by
their own time under that figure's requests (e.g. --profile 'GET /similar/{id}'). The
access log is on (log level info, as `neardup serve` runs), written to /dev/null.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from ceiling import ceiling_app
from common import log, make_corpus
from stores import ThrowawayRedis

Message = dict[str, Any]
GET_ALONE = "  its index query alone (similar_to_id)"
POST_ALONE = "  its index query alone (similar_to_text)"
HTTP_ALONE = "  its HTTP alone (the index's answer given)"


def _scope(method: str, path: str, query: bytes, body: bytes) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"bench")]
    if body:
        headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


async def call(app: Any, method: str, path: str, query: bytes = b"", body: bytes = b"") -> int:
    """One request through app; its status (the body is checked by the caller's first pass)."""
    given = False
    status = 0

    async def receive() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.sleep(3600)  # the client stays: no disconnect
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await app(_scope(method, path, query, body), receive, send)
    return status


async def per_request(
    run: Callable[[int], Awaitable[object]], n: int, rounds: int = 3
) -> tuple[float, float]:
    """Microseconds per call of run(i), i = 0..n-1, the best of rounds passes: on the
    clock, and of this process's CPU (what a saturated server's q/s rests on; the clock
    also counts the wait for redis-server, which runs on another core)."""
    best = cpu = float("inf")
    for _ in range(rounds):
        started, cpu_started = time.perf_counter(), time.process_time()
        for i in range(n):
            await run(i)
        best = min(best, (time.perf_counter() - started) / n)
        cpu = min(cpu, (time.process_time() - cpu_started) / n)
    return best * 1e6, cpu * 1e6


async def measure(args: argparse.Namespace, redis_url: str, data_dir: Path) -> dict[str, Any]:
    from app.api.app import create_app
    from app.core.settings import load_settings
    from app.index import Document

    settings = load_settings(
        redis_url=redis_url, collection="edge", data_dir=data_dir, log_level="info"
    )
    app = create_app(settings)
    floor = ceiling_app()
    corpus = make_corpus(args.docs)
    ids = [corpus.ids[i] for i in range(0, args.docs, max(1, args.docs // args.requests))]
    texts = [orjson.dumps({"text": corpus.text(i)}) for i in range(min(args.docs, 500))]
    async with app.router.lifespan_context(app), floor.router.lifespan_context(floor):
        index = app.state.index
        for lo in range(0, args.docs, 500):
            batch = range(lo, min(args.docs, lo + 500))
            await index.ingest([Document(text=corpus.text(i), id=corpus.ids[i]) for i in batch])
        n = len(ids)
        # every request answers 200 before anything is timed
        for i in range(n):
            assert await call(app, "GET", f"/similar/{ids[i]}") == 200
        assert await call(app, "POST", "/similar", body=texts[0]) == 200
        assert await call(floor, "GET", "/ok") == 200
        used = index.check_threshold(None)
        answers = [await index.similar_to_id(ids[i], used, 10) for i in range(n)]

        async def http_alone(i: int) -> int:
            """GET /similar/{id} with the index's answer given: HTTP's own work alone."""

            async def given(*args: object) -> object:
                return answers[i]

            index.similar_to_id = given  # an instance attribute over the method, for one call
            try:
                return await call(app, "GET", f"/similar/{ids[i]}")
            finally:
                del index.similar_to_id

        runs: dict[str, Callable[[int], Awaitable[object]]] = {
            "trivial FastAPI route GET /ok": lambda i: call(floor, "GET", "/ok"),
            "neardup GET /healthz": lambda i: call(app, "GET", "/healthz"),
            "GET /similar/{id}": lambda i: call(app, "GET", f"/similar/{ids[i]}"),
            GET_ALONE: lambda i: index.similar_to_id(ids[i], index.check_threshold(None), 10),
            HTTP_ALONE: http_alone,
            "GET /similar/{id}?threshold=0.6&limit=5": lambda i: call(
                app, "GET", f"/similar/{ids[i]}", b"threshold=0.6&limit=5"
            ),
            "GET /similar/{id} of an unknown id (404)": lambda i: call(
                app, "GET", f"/similar/nope{i}"
            ),
            "POST /similar": lambda i: call(app, "POST", "/similar", body=texts[i % len(texts)]),
            POST_ALONE: lambda i: index.similar_to_text(
                corpus.text(i % len(texts)), index.check_threshold(None), 10
            ),
        }
        # Round after round of every figure in turn, each figure's best round kept: a
        # machine shared with other work slows some rounds, not one figure's all.
        res = {name: float("inf") for name in runs}
        cpu = {name: float("inf") for name in runs}
        for _ in range(args.rounds):
            for name, run in runs.items():
                took, used = await per_request(run, n, rounds=1)
                res[name], cpu[name] = min(res[name], took), min(cpu[name], used)
        res_routing = routing(app, args.rounds * 3)
        profile = None
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            what = runs[args.profile]
            for i in range(n):
                await what(i)
            prof.disable()
            out = io.StringIO()
            order = os.environ.get("EDGE_SORT", "tottime")  # or cumulative
            stats = pstats.Stats(prof, stream=out).sort_stats(order)
            stats.print_stats(40)
            profile = out.getvalue()
    return {"us": res, "cpu": cpu, "routing": res_routing, "profile": profile, "requests": n}


def routing(app: Any, rounds: int, n: int = 2000) -> dict[str, tuple[float, float]]:
    """Microseconds the router's walk takes to find each hot route, without and with
    app.api.routing.Route's quick refusal (in turn, each its best of rounds)."""
    import timeit

    from fastapi.routing import APIRoute
    from starlette.routing import Match

    routes = app.router.routes
    own = [APIRoute.matches.__get__(r) if isinstance(r, APIRoute) else r.matches for r in routes]
    quick = [r.matches for r in routes]

    def walk(path: str, method: str, matchers: list[Any] = quick) -> None:
        scope = {"type": "http", "path": path, "method": method, "root_path": ""}
        for matches in matchers:
            if matches(scope)[0] == Match.FULL:
                return

    cases = {
        "GET /similar/{id}": ("/similar/doc1", "GET"),
        "POST /similar": ("/similar", "POST"),
        "GET /collections/{name}/similar/{id}": ("/collections/c1/similar/doc1", "GET"),
    }
    best = {name: [float("inf"), float("inf")] for name in cases}
    for _ in range(rounds):
        for name, (path, method) in cases.items():
            took = timeit.timeit(lambda p=path, m=method: walk(p, m, own), number=n)
            best[name][0] = min(best[name][0], took / n * 1e6)
        for name, (path, method) in cases.items():
            took = timeit.timeit(lambda p=path, m=method: walk(p, m), number=n)
            best[name][1] = min(best[name][1], took / n * 1e6)
    return {name: (b[0], b[1]) for name, b in best.items()}


def render(res: dict[str, Any]) -> str:
    us, cpu = res["us"], res["cpu"]
    lines = [f"{'in-process, one request at a time':48}{'us/request':>12}{'CPU us':>9}"]
    for key in us:
        lines.append(f"{key:48}{us[key]:>12.0f}{cpu[key]:>9.0f}")
    for name, of in (("us", us), ("CPU us", cpu)):
        get_edge = of["GET /similar/{id}"] - of[GET_ALONE]
        post_edge = of["POST /similar"] - of[POST_ALONE]
        lines.append(
            f"HTTP on top of the index ({name}): GET {get_edge:.0f}, POST {post_edge:.0f} "
            f"(the trivial route: {of['trivial FastAPI route GET /ok']:.0f})"
        )
    lines.append(f"{'routing alone: own matches / quick refusal':48}{'us':>12}")
    for name, (own, quick) in res["routing"].items():
        lines.append(f"  {name:46}{own:>6.1f} / {quick:.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5, help="each figure's best of this many")
    p.add_argument(
        "--profile", metavar="FIGURE", help="cProfile one figure's requests, e.g. 'POST /similar'"
    )
    args = p.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="nd-edge-"))
    redis = ThrowawayRedis(workdir, "edge").start()
    stderr = sys.stderr
    try:
        log(f"{args.docs} docs, {args.requests} requests per figure")
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the access log's, until the end
        res = asyncio.run(measure(args, redis.url, workdir / "data"))
    finally:
        sys.stderr = stderr
        redis.stop()
    print(render(res))
    if res["profile"]:
        print(res["profile"])
    print(f"(each figure its best of {args.rounds} rounds; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
