"""Hot bands and crowded neighbourhoods, end to end over HTTP against `neardup serve`.

* scan: N copies of one article, each with 2% of its words edited (every pair is a
  near-duplicate, so every band is hot): GET /duplicates?threshold=0.5 streamed to the
  end, pairs per second and how many of the n(n-1)/2 pairs came back; then
  GET /duplicates/groups (one group of N expected).
* groups: a 10,000-member cluster made the same way: GET /duplicates/groups, seconds.
* crowded: one document, 100 true near-duplicates (exact Jaccard 0.55-0.97) and 400
  distractors (0.27-0.49): GET /similar/q?threshold=0.5&limit=1000, recall of the true
  ones against exact Jaccard (plain Python shingle sets, not the service's numbers).
* normal: GET /similar/{id} and POST /similar one at a time on a 2,000-document corpus with
  20% planted near-duplicates: queries per second (the everyday path must not get slower).

Figures go to stdout as JSON (and bench/out/hotband.json); --quick makes a smoke run
(fewer copies, a 2,000-member cluster) whose figures are not comparable with a full one.
"""

from __future__ import annotations

import argparse
import http.client as httplib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
from common import OUT, log, make_corpus, oracle, read_articles
from servers import neardup_server
from stores import ThrowawayRedis

VOCAB = [f"zq{i}" for i in range(5000)]


_ORACLE = oracle()
words = _ORACLE.words


def shingles(text: str) -> set[tuple[str, ...]]:
    return _ORACLE.shingles(text)  # type: ignore[no-any-return]


exact = _ORACLE.exact_jaccard


def edit(base: list[str], rate: float, rng: random.Random) -> str:
    """Replace about `rate` of the words with fresh ones."""
    return " ".join(rng.choice(VOCAB) if rng.random() < rate else w for w in base)


def article(min_words: int) -> list[str]:
    texts = read_articles()
    if not texts:
        raise SystemExit("tests/data/articles_1000.train is missing")
    return next(words(t) for t in texts if len(words(t)) >= min_words)[:min_words]


def copies(n: int, seed: int) -> list[str]:
    base = article(300)
    rng = random.Random(seed)
    return [edit(base, 0.02, rng) for _ in range(n)]


def crowded(seed: int = 5) -> tuple[str, list[str], list[str]]:
    """(query, true near-duplicates, distractors) by exact Jaccard bands."""
    base = article(300)
    query = " ".join(base)
    qs = shingles(query)
    rng = random.Random(seed)
    true, near = [], []
    while len(true) < 100 or len(near) < 400:
        rate = rng.uniform(0.005, 0.3)
        text = edit(base, rate, rng)
        j = exact(qs, shingles(text))
        if 0.55 <= j <= 0.97 and len(true) < 100:
            true.append(text)
        elif 0.27 <= j <= 0.49 and len(near) < 400:
            near.append(text)
    return query, true, near


def ingest(http: httpx.Client, docs: list[tuple[str, str]]) -> None:
    for i in range(0, len(docs), 500):
        body = {"documents": [{"id": d, "text": t} for d, t in docs[i : i + 500]]}
        for attempt in range(10):  # a 503 asks for a retry (Redis slow on a busy machine)
            r = http.post(
                "/documents/batch",
                content=orjson.dumps(body),
                headers={"content-type": "application/json"},
                timeout=600,
            )
            if r.status_code != 503:
                break
            time.sleep(0.2 * (attempt + 1))
        if r.status_code != 200:
            raise RuntimeError(f"ingest: {r.status_code} {r.text[:500]}")
        if r.json()["errors"]:
            raise RuntimeError(r.text[:500])


def stream_lines(http: httpx.Client, path: str) -> tuple[int, float, list[bytes]]:
    """(lines, seconds, any line that says the stream was cut), read with http.client:
    the service is measured, not the client library (httpx reads a stream slower)."""
    url = httpx.URL(str(http.base_url))
    conn = httplib.HTTPConnection(url.host, url.port, timeout=3600)
    t0 = time.perf_counter()
    n, tail, odd = 0, b"", []
    conn.request("GET", path)
    r = conn.getresponse()
    if r.status != 200:
        raise RuntimeError(f"{path}: {r.status} {r.read()[:300]!r}")
    while chunk := r.read(1 << 20):
        data = tail + chunk
        n += data.count(b"\n")
        tail = data[data.rfind(b"\n") + 1 :]
        if b'"cut"' in data:
            odd += [x for x in data.split(b"\n") if b'"cut"' in x]
    conn.close()
    return n, time.perf_counter() - t0, odd


def run_scan(http: httpx.Client, n: int) -> dict[str, Any]:
    docs = copies(n, 11)
    ingest(http, [(f"c{i}", t) for i, t in enumerate(docs)])
    want = n * (n - 1) // 2
    lines, secs, odd = stream_lines(http, "/duplicates?threshold=0.5")
    log(f"scan: {lines} of {want} pairs in {secs:.2f} s = {lines / secs:,.0f} pairs/s")
    t0 = time.perf_counter()
    r = http.get("/duplicates/groups?threshold=0.5", timeout=3600)
    gsecs = time.perf_counter() - t0
    sizes = sorted((json.loads(x)["size"] for x in r.text.splitlines() if x), reverse=True)
    log(f"scan: groups {sizes[:5]} in {gsecs:.2f} s")
    t0 = time.perf_counter()
    hot = [http.get(f"/similar/c{i}", params={"limit": 1000}).json() for i in range(0, n, n // 200)]
    hot_ms = (time.perf_counter() - t0) * 1000 / len(hot)
    log(f"scan: GET /similar on a copy: {hot_ms:.1f} ms, {hot[0]['candidates']} candidates")
    return {
        "copies": n,
        "pairs_expected": want,
        "pairs_streamed": lines,
        "complete": lines == want,
        "seconds": round(secs, 3),
        "pairs_per_s": round(lines / secs),
        "odd_lines": [x.decode() for x in odd],
        "groups": len(sizes),
        "largest_group": sizes[0] if sizes else 0,
        "groups_seconds": round(gsecs, 3),
        "hot_get_ms": round(hot_ms, 2),
        "hot_get_results": min(len(h["results"]) for h in hot),
        "hot_get_capped": all(h["capped"] for h in hot),
    }


def run_groups(http: httpx.Client, n: int) -> dict[str, Any]:
    docs = copies(n, 13)
    ingest(http, [(f"g{i}", t) for i, t in enumerate(docs)])
    t0 = time.perf_counter()
    r = http.get("/duplicates/groups?threshold=0.5", timeout=3600)
    secs = time.perf_counter() - t0
    sizes = sorted((json.loads(x)["size"] for x in r.text.splitlines() if x), reverse=True)
    log(f"groups: {n}-member cluster -> {sizes[:5]} in {secs:.2f} s")
    return {"members": n, "groups": len(sizes), "largest": sizes[0] if sizes else 0,
            "seconds": round(secs, 3)}  # fmt: skip


def run_crowded(http: httpx.Client) -> dict[str, Any]:
    query, true, near = crowded()
    docs = [("q", query)] + [(f"t{i}", t) for i, t in enumerate(true)]
    docs += [(f"n{i}", t) for i, t in enumerate(near)]
    random.Random(3).shuffle(docs)
    ingest(http, docs)
    r = http.get("/similar/q", params={"threshold": 0.5, "limit": 1000})
    r.raise_for_status()
    body = r.json()
    found = {m["id"] for m in body["results"]}
    recall = len(found & {f"t{i}" for i in range(100)}) / 100
    wrong = sorted(found - {f"t{i}" for i in range(100)})
    log(f"crowded: recall {recall:.2f}, candidates {body['candidates']}, capped {body['capped']}")
    return {"recall": recall, "false": len(wrong), "candidates": body["candidates"],
            "capped": body["capped"]}  # fmt: skip


def run_normal(
    http: httpx.Client, queries: int, base: httpx.Client | None = None
) -> dict[str, Any]:
    """Queries per second one client gets; with a baseline service (another build, its
    own collection, the same Redis), every query goes to both in turn, so a busy
    machine slows both alike and the ratio holds."""
    corpus = make_corpus(2000, seed=21, dup_fraction=0.2)
    docs = [(corpus.ids[i], corpus.text(i)) for i in range(len(corpus.ids))]
    clients = {"after": http} if base is None else {"after": http, "baseline": base}
    for c in clients.values():
        ingest(c, docs)
    rng = random.Random(4)
    picks = [rng.randrange(len(corpus.ids)) for _ in range(queries)]
    spent = {(name, kind): 0.0 for name in clients for kind in ("get", "post")}
    cands, capped = 0, 0
    for n, i in enumerate(picks[:50] + picks):
        order = list(clients.items())[:: 1 if n % 2 else -1]
        for kind in ("get", "post"):
            for name, c in order:
                t0 = time.perf_counter()
                if kind == "get":
                    r = c.get(f"/similar/{corpus.ids[i]}")
                else:
                    r = c.post("/similar", json={"text": corpus.text(i)})
                took = time.perf_counter() - t0
                r.raise_for_status()
                if n >= 50:  # the first 50 warm up
                    spent[name, kind] += took
                    if name == "after" and kind == "get":
                        cands += r.json()["candidates"]
                        capped += r.json()["capped"]
    out: dict[str, Any] = {"queries": queries, "mean_candidates": cands / queries,
                           "capped_share": capped / queries}  # fmt: skip
    for (name, kind), secs in spent.items():
        out[f"{kind}_per_s" if name == "after" else f"baseline_{kind}_per_s"] = round(
            queries / secs
        )
    if base is not None:
        for kind in ("get", "post"):
            out[f"{kind}_ratio"] = round(spent["baseline", kind] / spent["after", kind], 3)
    log(f"normal: {out}")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smoke run: 300 copies, 2,000 members")
    p.add_argument("--copies", type=int, default=1200)
    p.add_argument("--cluster", type=int, default=10_000)
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--only", default="scan,groups,crowded,normal", help="parts to run")
    p.add_argument(
        "--baseline",
        type=Path,
        help="the `neardup` of another build (say main's, in its own venv): the normal "
        "queries go to it too, in turn, and the ratio is reported",
    )
    p.add_argument("--out", type=Path, default=OUT / "hotband.json")
    args = p.parse_args(argv)
    if args.quick:
        args.copies, args.cluster, args.queries = 300, 2000, 300
    results: dict[str, Any] = {"quick": args.quick, "load_before": os.getloadavg()[0]}
    baseline: httpx.Client | None = None
    with tempfile.TemporaryDirectory(prefix="neardup-hotband-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "redis").start()
        try:
            for name, run in (
                ("scan", lambda h: run_scan(h, args.copies)),
                ("groups", lambda h: run_groups(h, args.cluster)),
                ("crowded", run_crowded),
                ("normal", lambda h: run_normal(h, args.queries)),
            ):
                if name not in args.only.split(","):
                    continue
                redis.client().flushall()
                server = neardup_server(redis, 1, name, "warning", 100_000)
                server.env["NEARDUP_REDIS_TIMEOUT"] = "5"
                server.start()
                other = None
                if name == "normal" and args.baseline:
                    other = neardup_server(redis, 1, "normalbase", "warning", 100_000)
                    other.cmd[0] = str(args.baseline)
                    other.env["NEARDUP_REDIS_TIMEOUT"] = "5"
                    other.start()
                    baseline = httpx.Client(base_url=f"http://127.0.0.1:{other.port}")
                try:
                    with httpx.Client(base_url=f"http://127.0.0.1:{server.port}") as http:
                        results[name] = (
                            run_normal(http, args.queries, baseline) if baseline else run(http)
                        )
                finally:
                    server.stop()
                    if other is not None:
                        other.stop()
        finally:
            redis.stop()
    results["load_after"] = os.getloadavg()[0]
    OUT.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    json.dump(results, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
