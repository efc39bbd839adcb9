"""Ingest's writes of band entries and passage layouts: this build's path against the old one.

In-process (no HTTP), one redis-server, documents of 200-400 Zipf words with the
passage index on (~62 band entries a document), batches of 500, each way into its
own collection, in turn, in this one process:
- "before": one HSETNX per band entry, then one band_add call per entry whose band
  had members (the path a Redis Cluster keeps), and each passage layout built and
  packed by numpy (passages.Layout.pack);
- "all in scripts, N a call": every entry through band_add_many, N a call (one reply
  per call; 64 is about one document's, a whole batch ~31,000), layouts packed by the
  kernel: the one-reply-per-document design, measured and not chosen;
- "after": what an ingest on a single server runs now: one HSETNX per entry in one
  packed exchange, the entries whose band had members in band_add_many calls of
  app.store.bands' ENTRIES_PER_CALL, layouts packed by the kernel
  (kernel.pack_layouts);
- "after, numpy layouts": the same with layouts packed by numpy, to split the gain.
Each prints docs/s, the commands the client sends per document (each gets a reply),
the commands Redis runs per document (inside scripts too), this process's and Redis'
CPU µs per document, and the longest script call (Redis runs nothing else meanwhile;
SLOWLOG, calls over 0.2 ms).

With --http, POST /documents/batch of 500 from 4 clients into `neardup serve` (one
worker) of this build, and with --baseline <other venv>/bin/neardup of another build too,
in turn, each on its own empty redis-server.

With --rounds N, every way runs N times, in turn, and the medians follow (over HTTP too,
each round's order the other way round). --http-only skips the in-process ways;
--workers 0 serves with `neardup serve`'s default workers (one a CPU) and --dups 0.2
plants a fifth of near-duplicates, as bench/service.py's corpus has.

Figures, never assertions. Run: .venv/bin/python bench/band_calls.py [--quick] [--size N]
[--rounds N] [--short] [--http | --http-only] [--baseline PATH] [--workers N] [--dups F]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from common import log, make_corpus
from ingest import ingest
from servers import neardup_server
from stores import ThrowawayRedis

import app.store.bands as store_module
from app.index import Document, Index, Params
from app.store import Store, scripts
from app.store.bands import Bands
from app.store.single import SingleTransport

BATCH = 500
CHOSEN = store_module.ENTRIES_PER_CALL
WHOLE = 1 << 20  # more entries than a batch has: one call a batch
# (name, band path, entries per script call, kernel packs layouts); band path: "before"
# (per entry), "scripts" (every entry in band_add_many), "after" (this build's)
MODES: list[tuple[str, str, int, bool]] = [
    ("before", "before", CHOSEN, False),
    ("all in scripts, 16 a call", "scripts", 16, True),
    (f"all in scripts, {CHOSEN} a call", "scripts", CHOSEN, True),
    ("all in scripts, 256 a call", "scripts", 256, True),
    ("all in scripts, whole batch", "scripts", WHOLE, True),
    ("after, numpy layouts", "after", CHOSEN, False),
    ("after", "after", CHOSEN, True),
]

_sent = [0]


def _count_sent() -> None:
    """Count the commands every exchange sends (each gets one reply)."""
    exchange = SingleTransport._exchange

    async def counted(self, parts, count, *rest):  # type: ignore[no-untyped-def]
        _sent[0] += count
        return await exchange(self, parts, count, *rest)

    SingleTransport._exchange = counted  # type: ignore[method-assign]


def _redis_counts(redis: ThrowawayRedis) -> tuple[int, float]:
    """Commands Redis has run (scripts' own included) and its CPU seconds."""
    client = redis.client()
    stats = client.info("commandstats")
    cpu = client.info("cpu")
    calls = sum(int(v["calls"]) for v in stats.values())
    return calls, float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])


class _NumpyLayouts(Index):
    """The index as it sketched before the kernel packed layouts: a Layout per text,
    packed by numpy when its record is written."""

    def _sketch_now(self, texts, layouts=False):  # type: ignore[no-untyped-def]
        return super()._sketch_now(texts, True)


class _AllInScripts(Bands):
    """Every band entry through band_add_many: one reply per call, none per entry."""

    async def add(self, memberships, anchors=()):  # type: ignore[no-untyped-def]
        if memberships or anchors:
            keys, handles = store_module._entries([*memberships, *anchors])
            await self._band_script(scripts.BAND_ADD_MANY, keys, handles)


async def _one(
    redis: ThrowawayRedis, path: str, calls: int, kernel_packs: bool, docs: list[Document]
) -> dict[str, float]:
    params = Params.create("word:3", 128, 256, 1, 0.5, len(docs))
    store = Store.connect(redis.url, f"m{path}{calls}{kernel_packs}", 60.0)
    if path == "scripts":
        store.bands = _AllInScripts(store.transport, store._keys)
    store.bands.batched = path != "before"
    store_module.ENTRIES_PER_CALL = calls
    index = await (Index if kernel_packs else _NumpyLayouts).open(store, params, 200)
    client = redis.client()
    client.slowlog_reset()
    sent0, (calls0, cpu0) = _sent[0], _redis_counts(redis)
    started, own = time.perf_counter(), time.process_time()
    for k in range(0, len(docs), BATCH):
        await index.ingest(docs[k : k + BATCH])
    secs, own = time.perf_counter() - started, time.process_time() - own
    sent1, (calls1, cpu1) = _sent[0], _redis_counts(redis)
    scripts = [e for e in client.slowlog_get(10_000) if e["command"].startswith(b"EVALSHA")]
    await store.close()
    n = len(docs)
    return {
        "docs_s": n / secs,
        "sent": (sent1 - sent0) / n,
        "run": (calls1 - calls0) / n,
        "own_us": 1e6 * own / n,
        "cpu_us": 1e6 * (cpu1 - cpu0) / n,
        "longest_ms": max((e["duration"] for e in scripts), default=0) / 1000,
    }


def _in_process(size: int, workdir: Path, rounds: int, short: bool) -> None:
    corpus = make_corpus(size, dup_fraction=0.0)
    docs = [Document(corpus.text(i), corpus.ids[i]) for i in range(size)]
    _count_sent()
    print(f"band writes in-process: {size} documents, batches of {BATCH}, passage index on")
    print(
        f"{'path':<28} {'docs/s':>8} {'sent/doc':>9} {'Redis cmds/doc':>15} "
        f"{'client CPU µs/doc':>18} {'Redis CPU µs/doc':>17} {'longest script ms':>18}"
    )
    seen: dict[str, list[dict[str, float]]] = {}
    redis = ThrowawayRedis(workdir, "calls").start()
    try:
        client = redis.client()
        client.config_set("slowlog-log-slower-than", 200)
        client.config_set("slowlog-max-len", 10_000)
        for r in range(rounds):
            for name, path, calls, kernel_packs in MODES:
                if short and path == "scripts":
                    continue
                got = asyncio.run(_one(redis, path, calls, kernel_packs, docs))
                seen.setdefault(name, []).append(got)
                print(
                    f"{name:<28} {got['docs_s']:>8,.0f} {got['sent']:>9.2f} {got['run']:>15.1f} "
                    f"{got['own_us']:>18.1f} {got['cpu_us']:>17.1f} {got['longest_ms']:>18.2f}",
                    flush=True,
                )
                client.flushall()
            if r + 1 < rounds:
                print("(again, in the same order)")
    finally:
        redis.stop()
    if rounds > 1:
        print(f"medians of {rounds} rounds:")
        for name, runs in seen.items():
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            print(
                f"{name:<28} {med['docs_s']:>8,.0f} {med['sent']:>9.2f} {med['run']:>15.1f} "
                f"{med['own_us']:>18.1f} {med['cpu_us']:>17.1f} {med['longest_ms']:>18.2f}"
            )


def _http(
    size: int, workdir: Path, baseline: str | None, rounds: int, workers: int | None, dups: float
) -> None:
    """Each build's ingest over HTTP, `rounds` times, alternating which goes first."""
    corpus = make_corpus(size, dup_fraction=dups)
    builds = [("this build", None)] + ([("baseline", baseline)] if baseline else [])
    served = f"{workers} worker(s)" if workers else "serve's default workers"
    print(
        f"ingest over HTTP: {size} documents ({dups:.0%} near-duplicates), POST "
        f"/documents/batch of 500, 4 clients, {served}"
    )
    rates: dict[str, list[float]] = {name: [] for name, _ in builds}
    for r in range(rounds):
        for name, exe in builds if r % 2 == 0 else builds[::-1]:
            redis = ThrowawayRedis(workdir, f"http-{name[0]}{r}").start()
            server = neardup_server(redis, workers, "bench", "warning", size)
            if exe is not None:
                server.cmd[0] = exe
            try:
                server.start()
                got = ingest(server, corpus, 0, size, 4, redis)
                rates[name].append(got["docs_per_s"])
                per_doc = {
                    k: 1e6 * got[f"{k}_cpu"] / got["docs_per_s"] for k in ("server", "redis")
                }
                print(
                    f"  {name:<11} {got['docs_per_s']:>8,.0f} docs/s, server CPU "
                    f"{per_doc['server']:,.0f} µs/doc, Redis CPU {per_doc['redis']:,.0f} µs/doc",
                    flush=True,
                )
            finally:
                server.stop()
                redis.stop()
    if rounds > 1:
        for name, got in rates.items():
            print(f"  {name:<11} median {statistics.median(got):>8,.0f} docs/s of {rounds} runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2k documents")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--http", action="store_true", help="ingest over HTTP too")
    parser.add_argument(
        "--short", action="store_true", help="only before and after (not all in scripts)"
    )
    parser.add_argument("--baseline", help="another build's neardup executable (with --http)")
    parser.add_argument("--http-only", action="store_true", help="skip the in-process ways")
    parser.add_argument(
        "--workers", type=int, default=1, help="with --http; 0: serve's default (one a CPU)"
    )
    parser.add_argument(
        "--dups", type=float, default=0.0, help="with --http: the share of near-duplicates"
    )
    args = parser.parse_args()
    size = 2_000 if args.quick else args.size
    rounds = 1 if args.quick else args.rounds
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        log(f"band_calls: {size} documents")
        if not args.http_only:
            _in_process(size, Path(tmp), rounds, args.short)
        if args.http or args.http_only:
            _http(size, Path(tmp), args.baseline, rounds, args.workers or None, args.dups)


if __name__ == "__main__":
    main()
