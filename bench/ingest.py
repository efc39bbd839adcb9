"""Ingest over HTTP: POST /documents/batch of BATCH documents from several clients.

Docs/s is the wall time of the whole slice; the CPU the server (master and workers) and
Redis used meanwhile is reported in cores. A batch answered 503 (the service asks for a
retry) is retried and counted; any other failure stops the run.
"""

from __future__ import annotations

import asyncio
import time

from common import Corpus, cpu_seconds, log, tree_pids
from servers import HOST, Server
from stores import ThrowawayRedis

BATCH = 500


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


async def _ingest(
    port: int, bodies: list[bytes], clients: int, path: str = "/documents/batch"
) -> list[str]:
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
                        path,
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
    redis: ThrowawayRedis,
    path: str = "/documents/batch",
) -> dict[str, float]:
    bodies = _batch_bodies(corpus, lo, hi)
    spids = tree_pids(server.pid)
    s0, r0 = cpu_seconds(spids), cpu_seconds([redis.pid])
    t0 = time.perf_counter()
    retried = asyncio.run(_ingest(server.port, bodies, clients, path))
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
