"""The background consistency check (NEARDUP_CHECK_INTERVAL) repairs debris by itself."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from support.ids import all_ids, handle_of, unmap
from support.settings import loaded_settings

from app.index.locks import LOCK_TTL_MS


def test_background_check_removes_a_ghost(redis_url: str, collection: str, tmp_path: Path) -> None:
    """A record whose id was unmapped answers queries until the background check, running
    every 0.2 s, removes it; the other document is untouched."""
    from app.api.app import create_app
    from app.index.check import check

    settings = loaded_settings(
        redis_url=redis_url,
        collection=collection,
        data_dir=tmp_path,
        check_interval=0.2,
    )
    ghost_text = "the ghost text about lanterns and copper falcons over a quiet meadow"
    with TestClient(create_app(settings)) as c:
        assert c.put("/documents/ghost", json={"text": ghost_text}).status_code == 201
        assert c.put("/documents/live", json={"text": "a live text of its own"}).status_code == 201
        with redis.Redis.from_url(redis_url) as r:
            assert unmap(r, collection, "ghost") == 1
        deadline = time.monotonic() + 10
        while c.post("/similar", json={"text": ghost_text}).json()["results"]:
            assert time.monotonic() < deadline, "the background check never ran"
            time.sleep(0.05)
        assert c.get("/documents/live").status_code == 200
        index = c.app.state.index  # type: ignore[attr-defined]
        assert c.portal.call(check, index).clean  # type: ignore[union-attr]


def test_start_up_pass_drops_dangling_ids_only(
    redis_url: str, collection: str, tmp_path: Path
) -> None:
    """At start-up, ids mapped to a handle without a record (a write cut before its record)
    are dropped before /readyz answers, live documents and their answers are untouched, and
    what the dropped handles left in the bands is for the full check, which removes it."""
    from app.api.app import create_app
    from app.index.check import check

    settings = loaded_settings(redis_url=redis_url, collection=collection, data_dir=tmp_path)
    text = "a live text about lanterns and copper falcons over a quiet meadow at dusk"
    with TestClient(create_app(settings)) as c:
        for name in ("live", "cut1", "cut2"):
            assert c.put(f"/documents/{name}", json={"text": f"{text} {name}"}).status_code == 201
        before = c.post("/similar", json={"text": text}).json()["results"]
    with redis.Redis.from_url(redis_url) as r:
        prefix = f"nd:{collection}:"
        for name in ("cut1", "cut2"):  # as if the crash came between bands and record
            assert r.delete(f"{prefix}d:{handle_of(r, collection, name)}") == 1
        assert len(all_ids(r, collection)) == 3
    with TestClient(create_app(settings)) as c:
        assert c.get("/readyz").json()["documents"] == 1
        assert c.get("/documents/cut1").status_code == 404
        assert c.get("/documents/live").status_code == 200
        after = c.post("/similar", json={"text": text}).json()["results"]
        assert after == [m for m in before if m["id"] == "live"]
        index = c.app.state.index  # type: ignore[attr-defined]
        report = c.portal.call(check, index, True)  # type: ignore[union-attr]
        assert {k for k, n in report.found.items() if n} == {"orphan_bands"}
        assert report.repaired == report.found
        assert c.portal.call(check, index).clean  # type: ignore[union-attr]


def test_start_up_pass_covers_every_collection(
    redis_url: str, collection: str, tmp_path: Path
) -> None:
    """A dangling id in a collection made with POST /collections is dropped at start-up as
    one in the service's own collection is (right after it, while the service serves):
    its count is what GET reads again."""
    from app.api.app import create_app

    settings = loaded_settings(redis_url=redis_url, collection=collection, data_dir=tmp_path)
    named = f"{collection}-named"
    text = "a live text about lanterns and copper falcons over a quiet meadow at dusk"
    with TestClient(create_app(settings)) as c:
        assert c.post("/collections", json={"name": named}).status_code == 201
        for name in ("live", "cut"):
            put = c.put(f"/collections/{named}/documents/{name}", json={"text": f"{text} {name}"})
            assert put.status_code == 201
    with redis.Redis.from_url(redis_url) as r:  # as if the crash came before the record
        assert r.delete(f"nd:{named}:d:{handle_of(r, named, 'cut')}") == 1
        assert len(all_ids(r, named)) == 2
    with TestClient(create_app(settings)) as c:
        assert c.get("/readyz").status_code == 200
        # Checked right after the service's own collection, while it serves.
        deadline = time.monotonic() + 10
        while c.get(f"/collections/{named}").json()["documents"] != 1:
            assert time.monotonic() < deadline, "the named collection was never checked"
            time.sleep(0.05)
        assert c.get(f"/collections/{named}/documents/cut").status_code == 404
        assert c.get(f"/collections/{named}/documents/live").status_code == 200
    with redis.Redis.from_url(redis_url) as r:
        assert set(all_ids(r, named)) == {"live"}


def test_ids_a_failed_write_could_not_take_back_are_mended_by_the_sweeper(
    redis_url: str, collection: str, tmp_path: Path
) -> None:
    """When a refused write could not unmap its ids (Redis failed it, so the store is marked
    ids_to_check), the background sweeper runs the id check once Redis answers: the id
    without a record is dropped and the count is what GET reads, without a restart."""
    from app.api.app import create_app

    settings = loaded_settings(
        redis_url=redis_url,
        collection=collection,
        data_dir=tmp_path,
        expiry_interval=0.05,
    )
    text = "a live text about lanterns and copper falcons over a quiet meadow at dusk"
    with TestClient(create_app(settings)) as c:
        for name in ("live", "cut"):
            assert c.put(f"/documents/{name}", json={"text": f"{text} {name}"}).status_code == 201
        with redis.Redis.from_url(redis_url) as r:  # as a write cut before its record leaves it
            assert r.delete(f"nd:{collection}:d:{handle_of(r, collection, 'cut')}") == 1
        time.sleep(0.3)
        assert c.get("/readyz").json()["documents"] == 2  # nothing mends it unasked
        c.app.state.index.store.ids_to_check = True  # type: ignore[attr-defined]
        deadline = time.monotonic() + 10
        while c.get("/readyz").json()["documents"] != 1:
            assert time.monotonic() < deadline, "the sweeper never checked the ids"
            time.sleep(0.05)
        assert c.app.state.index.store.ids_to_check is False  # type: ignore[attr-defined]
    with redis.Redis.from_url(redis_url) as r:
        assert set(all_ids(r, collection)) == {"live"}


def test_a_write_that_cannot_unmap_its_ids_marks_the_store() -> None:
    """_unmap against a Redis that does not answer swallows the failure (the write's own
    error is what the client gets) and marks the store for the sweeper's id check."""
    import asyncio

    from support.procs import free_port

    from app.index.writes import _unmap
    from app.store import Store

    async def run() -> bool:
        store = Store.connect(f"redis://127.0.0.1:{free_port()}", "nowhere", 0.5)
        try:
            await _unmap(store, ["a"], [1], [True])
            return store.ids_to_check
        finally:
            await store.close()

    assert asyncio.run(run()) is True


def test_batches_cut_by_the_request_deadline_leave_no_dangling_id(
    redis_url: str, collection: str, tmp_path: Path
) -> None:
    """Batches cut by a deadline that falls inside their writes (some while Redis maps
    their ids, the reply then lost) leave no id without a record once the sweeper has run:
    the count is what GET reads (found from outside: 300 of 1,131 counted ids read 404)."""
    from app.api.app import create_app

    settings = loaded_settings(
        redis_url=redis_url,
        collection=collection,
        data_dir=tmp_path,
        expiry_interval=0.05,
    ).model_copy(update={"request_timeout": 0.004})
    text = "a text about lanterns and copper falcons over a quiet meadow at dusk number"
    cut = 0
    with TestClient(create_app(settings)) as c:
        for b in range(80):
            docs = [{"id": f"b{b}-{i}", "text": f"{text} {b} {i}"} for i in range(100)]
            resp = c.post("/documents/batch", json={"documents": docs})
            assert resp.status_code in (200, 503), resp.text
            cut += resp.status_code == 503
        assert cut, "no batch was cut: the deadline is too long for this machine"
        # A cut that left its ids' locks makes the check wait for them (LOCK_TTL_MS).
        deadline = time.monotonic() + LOCK_TTL_MS / 1000 + 15
        while True:
            # Read in Redis: a GET would meet the same short deadline.
            with redis.Redis.from_url(redis_url) as r:
                mapped = set(all_ids(r, collection))
                kept = {
                    i
                    for i in mapped
                    if r.exists(f"nd:{collection}:d:{handle_of(r, collection, i)}")
                }
            if mapped == kept:
                break
            assert time.monotonic() < deadline, f"{len(mapped - kept)} ids without a record"
            time.sleep(0.1)


def test_start_up_waits_for_its_own_collection_not_the_others(
    redis_url: str, collection: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A service takes requests once its own collection is checked: another collection on
    its Redis whose start-up pass takes minutes (2^26 id buckets read one by one) is
    checked after, while the service serves."""
    from app.api import app as app_module
    from app.service.runtime import open_index
    from app.store.store import REGISTRY

    vast = f"{collection}-vast"

    async def make() -> None:
        made = loaded_settings(
            redis_url=redis_url,
            collection=vast,
            data_dir=tmp_path,
            capacity=10**9,
        )
        async with open_index(made) as index:
            await index.store.register()  # listed, as POST /collections lists one

    asyncio.run(make())
    # Were the others waited for, this start would wait the whole of their pass, made
    # slow here: the empty buckets read one by one, not found by SCAN.
    monkeypatch.setattr(app_module, "STARTUP_CHECK_WAIT_S", 3600.0)
    monkeypatch.setattr("app.store.ids.SPARSE_FROM", 1 << 40)
    settings = loaded_settings(redis_url=redis_url, collection=collection, data_dir=tmp_path)
    try:
        started = time.monotonic()
        with TestClient(app_module.create_app(settings)) as c:
            took = time.monotonic() - started
            assert c.get("/readyz").status_code == 200
    finally:
        with redis.Redis.from_url(redis_url) as r:
            r.srem(REGISTRY, vast)
            r.delete(*r.scan_iter(match=f"nd:{vast}:*"))
    assert took < 30, f"the start waited {took:.1f} s for another collection's pass"
