"""The in-process baseline: datasketch's MinHashLSH(threshold=0.5, num_perm=128) on Redis.

It runs as a datasketch user would: word 3-shingles made in Python, MinHash.update_batch,
inserts through insertion_session() into a fresh redis-server of the same binary as
neardup's, then the same query ids and texts as neardup's GET and POST loads, from as many
threads as neardup gets connections, for the same time. Its answers are LSH candidates,
not verified similarities. The ratios in bench/report.py put neardup against these
figures.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import numpy as np
from common import Corpus, Pair, cpu_seconds, log, machine_busy_seconds
from load import Load, commandstats, per_query
from memory import datasketch_memory_breakdown, used_memory
from recall import THRESHOLD, recall_summary
from stores import ThrowawayRedis

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
    pairs: list[Pair],
    redis: ThrowawayRedis,
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
        st0 = commandstats(redis)
        r0, m0 = cpu_seconds(rpids), machine_busy_seconds()
        lat, answers, secs, cpu = _thread_load(fn, n, duration, connections)
        machine = (machine_busy_seconds() - m0) / secs
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
        load.redis_per_query = per_query(st0, commandstats(redis), len(lat))
        out[name] = asdict(load)
    return out
