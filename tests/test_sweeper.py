"""The background consistency check (NEARDUP_CHECK_INTERVAL) repairs debris by itself."""

from __future__ import annotations

import time
from pathlib import Path

import redis
from fastapi.testclient import TestClient


def test_background_check_removes_a_ghost(redis_url: str, collection: str, tmp_path: Path) -> None:
    """A record whose id was unmapped answers queries until the background check, running
    every 0.2 s, removes it; the other document is untouched."""
    from app.api.app import create_app
    from app.core.settings import load_settings
    from app.index.check import check

    settings = load_settings(
        redis_url=redis_url, collection=collection, data_dir=tmp_path, check_interval=0.2
    )
    ghost_text = "the ghost text about lanterns and copper falcons over a quiet meadow"
    with TestClient(create_app(settings)) as c:
        assert c.put("/documents/ghost", json={"text": ghost_text}).status_code == 201
        assert c.put("/documents/live", json={"text": "a live text of its own"}).status_code == 201
        with redis.Redis.from_url(redis_url) as r:
            assert r.hdel(f"nd:{collection}:ids", "ghost") == 1
        deadline = time.monotonic() + 10
        while c.post("/similar", json={"text": ghost_text}).json()["results"]:
            assert time.monotonic() < deadline, "the background check never ran"
            time.sleep(0.05)
        assert c.get("/documents/live").status_code == 200
        index = c.app.state.index  # type: ignore[attr-defined]
        assert c.portal.call(check, index).clean  # type: ignore[union-attr]
