"""Document expiry: ttl / expires_at on ingest, a collection default, answers that drop a
document the moment it expires, and the sweeper that removes what is left of it."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson
import pytest
import redis
from fastapi.testclient import TestClient
from support import oracle
from support.keys import scan_keys
from support.procs import Server
from support.settings import loaded_settings

BASE = (
    "the harbour master counted seven copper lanterns along the northern quay while the "
    "evening ferry waited for the tide and gulls argued over the nets drying on the wall"
)
SOON = BASE + " before the rain"
STAY = BASE + " after the storm"
OTHER = "an unrelated note on sourdough starters, rye flour and the patience they demand"


def at(ms: int) -> str:
    """An RFC 3339 time (UTC, milliseconds) the test computes itself."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def make_client(store_url: str, collection: str, tmp_path: Path, **extra: object) -> TestClient:
    from app.api.app import create_app

    # The sweeper ticks once at start-up, then not for an hour: answers must drop expired
    # documents by themselves, not because something removed them.
    settings = loaded_settings(
        redis_url=store_url,
        collection=collection,
        data_dir=tmp_path,
        **{"expiry_interval": 3600.0, **extra},
    )
    return TestClient(create_app(settings))


@pytest.fixture
def expiring(store_url: str, collection: str, tmp_path: Path) -> Iterator[TestClient]:
    with make_client(store_url, collection, tmp_path, keep_text=True) as c:
        yield c


def similar_ids(c: TestClient, text: str) -> set[str]:
    body = c.post("/similar", json={"text": text, "limit": 50})
    assert body.status_code == 200, body.text
    return {m["id"] for m in body.json()["results"]}


def answers(c: TestClient) -> dict[str, object]:
    """Everything that can name a document, in one place."""
    dup = c.get("/duplicates").text.splitlines()
    groups = c.get("/duplicates/groups").text.splitlines()
    contained = c.post("/similar", json={"text": BASE, "measure": "containment"}).json()
    export = [orjson.loads(line) for line in c.get("/export").text.splitlines()]
    return {
        "get": c.get("/documents/soon").status_code,
        "similar": similar_ids(c, BASE),
        "similar_to_stay": {m["id"] for m in c.get("/similar/stay").json()["results"]},
        "pairs": {frozenset((p["a"], p["b"])) for p in map(orjson.loads, dup)},
        "groups": [sorted(orjson.loads(g)["members"]) for g in groups],
        "contained": {r["id"] for r in contained["results"]},
        "exported": {d["id"] for d in export if "id" in d},
    }


def expected(live: set[str]) -> dict[str, object]:
    """The same answers from the oracle (exact Jaccard over word 3-shingles)."""
    texts = {"soon": SOON, "stay": STAY, "other": OTHER}
    texts = {k: v for k, v in texts.items() if k in live}
    sh = {k: oracle.shingles(v) for k, v in texts.items()}
    near = {k for k in texts if oracle.exact_jaccard(oracle.shingles(BASE), sh[k]) >= 0.5}
    pairs = {
        frozenset((a, b))
        for a in texts
        for b in texts
        if a < b and oracle.exact_jaccard(sh[a], sh[b]) >= 0.5
    }
    return {
        "get": 200 if "soon" in live else 404,
        "similar": near,
        "similar_to_stay": {p for pair in pairs if "stay" in pair for p in pair} - {"stay"},
        "pairs": pairs,
        "groups": [sorted(p) for p in pairs],
        "contained": near,  # every near copy holds the base text's passages
        "exported": set(texts),
    }


@pytest.mark.both_stores
def test_a_document_answers_until_its_expiry_and_never_after(expiring: TestClient) -> None:
    """A document with expires_at = now + 5 s (time for a pass of answers on a loaded
    machine) is in every answer (GET, /similar by text and
    by id, containment, /duplicates, groups, export) whenever a request ended before that
    instant, and in none that began at or after it, with no sweep in between."""
    c = expiring
    ends = now_ms() + 5000
    assert c.put("/documents/soon", json={"text": SOON, "expires_at": at(ends)}).status_code == 201
    assert c.put("/documents/stay", json={"text": STAY}).status_code == 201
    assert c.put("/documents/other", json={"text": OTHER}).status_code == 201
    got = c.get("/documents/soon").json()
    assert datetime.fromisoformat(got["expires_at"]) == datetime.fromisoformat(at(ends))
    assert "expires_at" not in c.get("/documents/stay").json()
    before, after = expected({"soon", "stay", "other"}), expected({"stay", "other"})
    assert before != after
    seen_before = seen_after = 0
    while not seen_after:
        started = now_ms()
        got = answers(c)
        finished = now_ms()
        if finished < ends:
            assert got == before
            seen_before += 1
        elif started >= ends:
            assert got == after
            seen_after += 1
    assert seen_before
    assert c.delete("/documents/soon").status_code == 404  # expired: there is none to delete
    assert c.get("/readyz").status_code == 200


def run(c: TestClient, fn, *args):  # type: ignore[no-untyped-def]
    return c.portal.call(fn, *args)  # type: ignore[union-attr]


@pytest.mark.both_stores
def test_the_sweeper_removes_every_key_and_counts(
    store_url: str, collection: str, tmp_path: Path
) -> None:
    """One sweep removes an expired document's record, text, bands, passage entries, id
    and queue entry (the collection's keys are then those of the documents that stay),
    counts it in /metrics, and leaves the consistency check clean."""
    from app.index.check import check
    from app.service.sweeper import sweep

    with make_client(store_url, collection, tmp_path, keep_text=True) as c:
        index = c.app.state.index  # type: ignore[attr-defined]
        assert c.put("/documents/stay", json={"text": STAY}).status_code == 201
        keys_alone = set(run(c, _keys, index))
        ends = now_ms() + 1500
        body = {"text": SOON, "expires_at": at(ends)}
        assert c.put("/documents/soon", json=body).status_code == 201
        assert set(run(c, _keys, index)) > keys_alone
        assert run(c, sweep, index, ends - 1) == 0  # not due yet: nothing goes
        while now_ms() < ends:
            time.sleep(0.01)
        before = _expired_total(c)
        assert run(c, sweep, index) == 1
        assert _expired_total(c) == before + 1
        # The marks bitmap stays: a bit once set is never cleared (app.store.layout).
        marks = {index.store._keys.marks}
        assert set(run(c, _keys, index)) - marks == keys_alone - {index.store._keys.expiries}
        assert run(c, index.store.expiries) == []
        assert run(c, check, index).clean
        assert c.get("/documents/stay").status_code == 200


async def _keys(index) -> list[bytes]:  # type: ignore[no-untyped-def]
    return [k async for k in scan_keys(index.store)]


def _expired_total(c: TestClient) -> float:
    for line in c.get("/metrics").text.splitlines():
        if line.startswith("neardup_documents_expired_total "):
            return float(line.split()[1])
    return 0.0


def test_expiry_fields_are_checked(expiring: TestClient) -> None:
    """ttl must be a positive integer, expires_at an RFC 3339 time with an offset in the
    future, and not both: each mistake is a 422 that names it, and nothing is stored."""
    c = expiring
    later = at(now_ms() + 60_000)
    bad = [
        {"ttl": 0},
        {"ttl": -5},
        {"ttl": "60"},
        {"ttl": 1.5},
        {"ttl": 60, "expires_at": later},
        {"expires_at": at(now_ms() - 1000)},
        {"expires_at": "2030-01-31T12:00:00"},  # no offset
        {"expires_at": "2030-01-31"},
        {"expires_at": "tomorrow"},
        {"expires_at": "2030-01-31T12:00Z"},  # ISO 8601, not RFC 3339: no seconds
        {"expires_at": "20300131T120000Z"},  # ISO 8601's basic format
        {"expires_at": "2030-01-31T12:00:00+0100"},  # an offset without its colon
    ]
    for extra in bad:
        r = c.put("/documents/x", json={"text": STAY, **extra})
        assert r.status_code == 422, (extra, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
        r = c.post("/documents", json={"id": "x", "text": STAY, **extra})
        assert r.status_code == 422, (extra, r.text)
        batch = {"documents": [{"id": "y", "text": OTHER}, {"id": "x", "text": STAY, **extra}]}
        assert c.post("/documents/batch", json=batch).status_code == 422, extra
    assert "past" in c.put("/documents/x", json={"text": STAY, **bad[5]}).json()["detail"]
    assert "not both" in c.put("/documents/x", json={"text": STAY, **bad[4]}).json()["detail"]
    assert c.get("/documents/x").status_code == 404
    assert c.get("/documents/y").status_code == 404


def test_reingest_replaces_or_clears_the_expiry(expiring: TestClient) -> None:
    """Re-ingesting an id sets its expiry anew: a later ttl moves its queue entry, none
    clears both the record's expiry and the queue entry, and a batch item takes its own."""
    c = expiring
    index = c.app.state.index  # type: ignore[attr-defined]
    t0 = now_ms()
    assert c.put("/documents/a", json={"text": STAY, "ttl": 60}).status_code == 201
    (entry,) = run(c, index.store.expiries)
    got = datetime.fromisoformat(c.get("/documents/a").json()["expires_at"])
    assert abs(got.timestamp() * 1000 - entry[1]) < 1
    assert t0 + 60_000 <= entry[1] <= now_ms() + 60_000
    assert c.put("/documents/a", json={"text": STAY, "ttl": 3600}).status_code == 200
    ((handle, ms),) = run(c, index.store.expiries)
    assert handle == entry[0] and ms >= t0 + 3_600_000
    assert c.put("/documents/a", json={"text": STAY}).status_code == 200
    assert run(c, index.store.expiries) == []
    assert "expires_at" not in c.get("/documents/a").json()
    later = now_ms() + 86_400_000
    batch = {
        "documents": [
            {"id": "a", "text": STAY, "expires_at": at(later)},
            {"id": "b", "text": OTHER},
        ]
    }
    assert c.post("/documents/batch", json=batch).status_code == 200
    assert [ms for _, ms in run(c, index.store.expiries)] == [later]
    assert "expires_at" not in c.get("/documents/b").json()
    deleted = c.post("/documents/delete", json={"ids": ["a", "b"]}).json()["deleted"]
    assert deleted == 2
    assert run(c, index.store.expiries) == []  # a bulk delete takes its queue entry too


def test_a_collection_default_ttl(store_url: str, collection: str, tmp_path: Path) -> None:
    """NEARDUP_DEFAULT_TTL is fixed with the collection: a document that names no expiry
    lives that long, one that names its own keeps it, and the collection cannot be opened
    with another default."""
    from app.index.errors import ConfigMismatchError

    with make_client(store_url, collection, tmp_path, default_ttl=30) as c:
        t0 = now_ms()
        assert c.put("/documents/d", json={"text": STAY}).status_code == 201
        assert c.put("/documents/own", json={"text": OTHER, "ttl": 7200}).status_code == 201
        d = datetime.fromisoformat(c.get("/documents/d").json()["expires_at"])
        own = datetime.fromisoformat(c.get("/documents/own").json()["expires_at"])
        assert t0 + 30_000 <= d.timestamp() * 1000 <= now_ms() + 30_000
        assert own - d > timedelta(seconds=7000)
        assert c.app.state.index.params.default_ttl == 30  # type: ignore[attr-defined]
    with pytest.raises(ConfigMismatchError, match="default_ttl"):  # noqa: SIM117
        with make_client(store_url, collection, tmp_path, default_ttl=0):
            pass


def test_a_killed_sweeper_resumes_and_leaves_nothing(
    redis_url: str, collection: str, tmp_path: Path
) -> None:
    """A served process sweeping a due backlog is killed (SIGKILL) midway, and one sweep is
    left cut after its bands and id were gone; after a restart every expired document is
    gone, the ones that stay answer as before, and the consistency check is clean."""
    from app.index import Document
    from app.index.check import check
    from app.service.runtime import open_index

    settings = loaded_settings(redis_url=redis_url, collection=collection, data_dir=tmp_path)
    n = 120
    texts = [f"{BASE} item {i} of the backlog with its own words w{i} x{i * 7}" for i in range(n)]

    async def load() -> int:
        async with open_index(settings) as index:
            ends = now_ms() + 5000  # still ahead when a loaded machine's ingest ends
            docs = [Document(t, f"e{i}", None, ends) for i, t in enumerate(texts)]
            await index.ingest(docs)
            await index.ingest([Document(STAY, "stay"), Document(OTHER, "other")])
            return ends

    async def cut_one() -> None:
        """The state a sweep cut between its id and its record leaves (documents.remove)."""
        from app.index import records
        from app.index.sketch import anchors_of

        async with open_index(settings) as index:
            (h,) = await index.store.ids.handles(["e0"])
            (raw,) = await index.store.records([h])
            rec = records.unpack(raw)
            await index.store.bands.remove([(h, rec.band_keys), (h, anchors_of(rec))])
            await index.store.ids.forget(["e0"], [h])

    ends = asyncio.run(load())
    asyncio.run(cut_one())
    while now_ms() < ends:
        time.sleep(0.01)
    env = {"NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": collection}
    queue = f"nd:{collection}:exp"
    with redis.Redis.from_url(redis_url) as r:
        assert r.zcard(queue) == n
        server = Server(tmp_path / "a", NEARDUP_EXPIRY_BATCH="2", **env)
        try:
            deadline = time.monotonic() + 60
            while r.zcard(queue) > n * 3 // 4:  # the sweeper is under way
                assert time.monotonic() < deadline, server.output()
                time.sleep(0.005)
        finally:
            server.stop(signal.SIGKILL)
        left = r.zcard(queue)
        assert 0 < left < n
        server = Server(tmp_path / "b", **env)
        try:
            server.wait_up("/readyz")
            deadline = time.monotonic() + 60
            while r.zcard(queue):
                assert time.monotonic() < deadline, server.output()
                time.sleep(0.02)
            for i in (0, 1, n // 2, n - 1):
                assert httpx.get(f"{server.url}/documents/e{i}").status_code == 404
            assert httpx.get(f"{server.url}/documents/stay").status_code == 200
            metrics = httpx.get(f"{server.url}/metrics").text
            assert "neardup_documents_expired_total" in metrics
        finally:
            server.stop()

    async def after() -> tuple[bool, list[str]]:
        async with open_index(settings) as index:
            report = await check(index)
            ids = [doc_id async for doc_id, _ in index.store.ids.mappings()]
            return report.clean, sorted(ids)

    clean, ids = asyncio.run(after())
    assert clean
    assert ids == ["other", "stay"]
    with redis.Redis.from_url(redis_url) as r:
        docs = [k for k in r.scan_iter(f"nd:{collection}:d:*")]
        assert len(docs) == 2


def test_every_collection_is_swept(store_url: str, collection: str, tmp_path: Path) -> None:
    """A collection made over HTTP with default_ttl=1 keeps it, and the service's
    sweeper (ticking every 0.05 s) removes its expired documents as it does the
    default collection's: no queue entry or record is left, the one that stays answers."""
    from app.index.check import check

    other = f"{collection}-ttl"
    with make_client(store_url, collection, tmp_path) as c:
        made = c.post("/collections", json={"name": other, "default_ttl": 1})
        assert made.status_code == 201, made.text
        assert made.json()["parameters"]["default_ttl"] == 1
        assert c.put(f"/collections/{other}/documents/gone", json={"text": SOON}).status_code == 201
        body = {"text": STAY, "ttl": 3600}
        assert c.put(f"/collections/{other}/documents/stays", json=body).status_code == 201
        index = run(c, c.app.state.collections.get, other)  # type: ignore[attr-defined]
        assert len(run(c, index.store.expiries)) == 2
    with make_client(store_url, collection, tmp_path, expiry_interval=0.05) as c:
        index = run(c, c.app.state.collections.get, other)  # type: ignore[attr-defined]
        deadline = time.monotonic() + 20
        while len(run(c, index.store.expiries)) > 1:
            assert time.monotonic() < deadline, "the sweeper never reached the collection"
            time.sleep(0.02)
        assert c.get(f"/collections/{other}/documents/gone").status_code == 404
        assert c.get(f"/collections/{other}/documents/stays").status_code == 200
        assert run(c, index.store.records, [1]) == [None]
        assert run(c, check, index).clean


def test_export_and_import_keep_the_expiry(store_url: str, collection: str, tmp_path: Path) -> None:
    """An export line carries its document's expiry (expires_ms) and an import restores it,
    so the copy stops answering at the same instant; a line that expired since its export
    is not imported, and one without an expiry imports as never expiring."""
    with make_client(store_url, collection, tmp_path) as c:
        later = now_ms() + 3_600_000
        assert (
            c.put("/documents/a", json={"text": STAY, "expires_at": at(later)}).status_code == 201
        )
        assert c.put("/documents/b", json={"text": OTHER}).status_code == 201
        lines = [orjson.loads(x) for x in c.get("/export").text.splitlines()]
        head, docs = lines[0], [d for d in lines if "id" in d]
        assert {d["id"]: d.get("expires_ms") for d in docs} == {"a": later, "b": None}
        gone = dict(docs[0], id="gone", expires_ms=now_ms() - 1)
        made = c.post("/collections", json={"name": f"{collection}-copy"})
        assert made.status_code == 201, made.text
        copy = f"/collections/{collection}-copy"
        r = c.post(f"{copy}/import", json={"header": head, "documents": [*docs, gone]})
        assert r.status_code == 200, r.text
        assert r.json() == {"created": 2, "updated": 0}
        got = c.get(f"{copy}/documents/a").json()["expires_at"]
        assert datetime.fromisoformat(got) == datetime.fromisoformat(at(later))
        assert "expires_at" not in c.get(f"{copy}/documents/b").json()
        assert c.get(f"{copy}/documents/gone").status_code == 404
        bad = dict(docs[0], expires_ms="soon")
        r = c.post(f"{copy}/import", json={"header": head, "documents": [bad]})
        assert r.status_code == 422 and "expires_ms" in r.json()["detail"]
