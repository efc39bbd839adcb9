"""Operating against a real Redis that runs out of memory: writes refused with a clear
507, nothing already stored lost, memory reported in /metrics."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import redis
from support.oracle import exact_jaccard, shingles
from support.procs import RedisProc, neardup_check, serving
from support.settings import loaded_settings

from app.service.runtime import open_index

TOPICS = ["harbour", "railway", "library", "orchard", "bakery", "stadium", "museum", "market"]


def _text(i: int) -> str:
    topic = TOPICS[i % len(TOPICS)]
    return (
        f"The {topic} committee published report number {i} on Friday, listing repairs to "
        f"the {topic} roof, the opening hours, the volunteers on duty and the budget for "
        f"the coming year, which rose by {i % 9} percent after a long debate"
    )


def _filler(i: int) -> str:
    """A text that shares no shingle with any other: it never changes another's answers."""
    return " ".join(f"filler{i}word{j}" for j in range(60))


def _metric(body: str, name: str) -> float:
    (line,) = [ln for ln in body.splitlines() if ln.startswith(name + " ")]
    return float(line.split()[1])


def test_out_of_memory_redis_refuses_writes_with_507_and_loses_nothing(tmp_path: Path) -> None:
    """A real redis-server at a tiny maxmemory (noeviction): writes past it get 507 with a
    detail naming memory; every document stored before reads back and answers as before."""
    with (
        RedisProc(tmp_path / "redis", "--maxmemory-policy", "noeviction") as rds,
        serving(tmp_path, NEARDUP_REDIS_URL=rds.url, NEARDUP_LOG_LEVEL="warning") as server,
        httpx.Client(base_url=server.url, timeout=10) as c,
    ):
        texts = {f"d{i}": _text(i) for i in range(40)}
        docs = [{"id": k, "text": t} for k, t in texts.items()]
        assert c.post("/documents/batch", json={"documents": docs}).status_code == 200
        probes = ["d0", "d1", "d5"]
        before = {p: c.get(f"/similar/{p}", params={"limit": 100}).json() for p in probes}
        # The answers are right to begin with (exact Jaccard over shingle sets).
        for p in probes:
            for r in before[p]["results"]:
                exact = exact_jaccard(shingles(texts[p]), shingles(texts[r["id"]]))
                assert exact >= 0.5 - 0.1, (p, r, exact)
        with rds.client() as r:
            used = int(r.info("memory")["used_memory"])
            r.config_set("maxmemory", used + 200_000)
        refused = None
        for i in range(3000):  # bounded: at ~2,000 B a document, 200 kB fill well before
            resp = c.put(f"/documents/f{i}", json={"text": _filler(i)})
            if resp.status_code == 507:
                refused = resp
                break
            assert resp.status_code == 201, resp.text
            texts[f"f{i}"] = _filler(i)
        assert refused is not None, "Redis never refused a write"
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert "out of memory" in refused.json()["detail"]
        assert c.post("/documents/batch", json={"documents": docs[:3]}).status_code == 507
        # A refused write takes back the ids it mapped: the count is what GET can read.
        fresh = [{"id": f"new{i}", "text": _filler(10_000 + i)} for i in range(25)]
        assert c.post("/documents/batch", json={"documents": fresh}).status_code == 507
        assert c.get("/readyz").json()["documents"] == len(texts)
        # ... and the band entries it added (HDELs, which Redis takes at its maxmemory).
        code, report = neardup_check(NEARDUP_REDIS_URL=rds.url)
        assert code == 0 and not any(report["found"].values()), report
        # Nothing stored is lost: every acknowledged document reads back, answers unchanged.
        for doc_id in texts:
            got = c.get(f"/documents/{doc_id}")
            assert got.status_code == 200, (doc_id, got.text)
            assert got.json()["shingles"] == len(shingles(texts[doc_id]))
        for p in probes:
            assert c.get(f"/similar/{p}", params={"limit": 100}).json() == before[p]
        # /metrics reports Redis memory against its limit.
        page = c.get("/metrics").text
        with rds.client() as r:
            limit = int(r.config_get("maxmemory")["maxmemory"])
        assert _metric(page, "neardup_redis_maxmemory_bytes") == limit
        # At the limit, give or take the client buffers Redis frees once writes stop
        # (a few kB: the metric is read after the refusals, not during them).
        assert _metric(page, "neardup_redis_used_memory_bytes") >= 0.98 * limit
        # A delete takes a write lock, which needs memory too: refused alike, nothing changed.
        # Past the limit for sure first: the refused batches took back what they had
        # mapped, and Redis frees client buffers once writes stop, which can leave it
        # just under the limit (the AOF buffer does not count, so no "used less a bit").
        with rds.client() as r:
            r.config_set("maxmemory", 1)
        assert c.delete("/documents/d1").status_code == 507
        assert c.get("/documents/d1").status_code == 200
        # With room again, writes are taken without a restart.
        with rds.client() as r:
            r.config_set("maxmemory", 0)
        assert c.put("/documents/after", json={"text": _text(7)}).status_code == 201
        assert c.delete("/documents/d1").status_code == 204


def test_a_redis_that_evicts_is_warned_about(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    """An index on a Redis with an evicting maxmemory-policy logs a warning at start-up;
    with noeviction it does not."""
    for policy, warned in (("allkeys-lru", True), ("noeviction", False)):
        caplog.clear()
        with RedisProc(
            tmp_path / policy, "--maxmemory", "100mb", "--maxmemory-policy", policy
        ) as r:

            async def open_once(url: str = r.url) -> None:
                async with open_index(loaded_settings(redis_url=url, collection="evict")):
                    pass

            with caplog.at_level(logging.WARNING, logger="neardup"):
                asyncio.run(open_once())
        said = [
            rec.getMessage() for rec in caplog.records if "maxmemory-policy" in rec.getMessage()
        ]
        assert bool(said) is warned, (policy, said)
        if warned:
            assert "allkeys-lru" in said[0] and "noeviction" in said[0]


def test_an_evicting_policy_set_while_serving_shows_in_readyz_and_metrics(
    tmp_path: Path,
) -> None:
    """A maxmemory-policy that deletes keys, set on Redis while the service runs, is named
    in /readyz's warnings and flagged by neardup_redis_evicting; back to noeviction, both
    clear."""
    with (
        RedisProc(tmp_path / "redis", "--maxmemory-policy", "noeviction") as rds,
        serving(tmp_path, NEARDUP_REDIS_URL=rds.url, NEARDUP_LOG_LEVEL="warning") as server,
        httpx.Client(base_url=server.url, timeout=10) as c,
    ):
        assert "warnings" not in c.get("/readyz").json()
        assert _metric(c.get("/metrics").text, "neardup_redis_evicting") == 0
        with rds.client() as r:
            r.config_set("maxmemory", 100_000_000)
            r.config_set("maxmemory-policy", "allkeys-lru")
        ready = c.get("/readyz")
        assert ready.status_code == 200
        (said,) = ready.json()["warnings"]
        assert "allkeys-lru" in said and "noeviction" in said
        assert _metric(c.get("/metrics").text, "neardup_redis_evicting") == 1
        with rds.client() as r:
            r.config_set("maxmemory-policy", "noeviction")
        assert "warnings" not in c.get("/readyz").json()
        assert _metric(c.get("/metrics").text, "neardup_redis_evicting") == 0


def test_a_write_refused_at_its_record_takes_back_its_id_though_redis_is_full(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """A near-duplicate whose record Redis refuses for memory (maxmemory reached just then)
    has its id taken back, though taking its handle out of the band fields it shares with
    the first document is refused too: the id map is what it was (the entries came first,
    and their refusal left the id mapped and counted)."""
    from app.index import Document
    from app.store import Store, StoreFullError

    base = _text(1)
    real = Store.put_records

    async def run(url: str) -> tuple[int, object, bool]:
        async def full_at_the_record(self, items):  # type: ignore[no-untyped-def]
            if any(h > 1 for h, _ in items):  # the second document's: Redis fills up now
                with redis.Redis.from_url(url) as r:
                    r.config_set("maxmemory", 1)
            return await real(self, items)

        async with open_index(loaded_settings(redis_url=url, collection="full")) as index:
            await index.ingest([Document(base, "base")])
            monkeypatch.setattr(Store, "put_records", full_at_the_record)
            try:
                await index.ingest([Document(base + " again", "dup")])
            except StoreFullError:
                pass
            else:
                raise AssertionError("the record was not refused")
            finally:
                monkeypatch.setattr(Store, "put_records", real)
            return await index.count(), await index.get("dup"), index.store.ids_to_check

    with RedisProc(tmp_path / "redis", "--maxmemory-policy", "noeviction") as rds:
        count, dup, flagged = asyncio.run(run(rds.url))
        with rds.client() as r:
            r.config_set("maxmemory", 0)
    assert (count, dup, flagged) == (1, None, False)
