"""POST /checks, GET and DELETE /checks/{id}: a check kept with a report link, read
back as it was, scoped by keys and collections, gone when deleted or expired."""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.index.formats import PDF

DATA = Path(__file__).parent / "data" / "formats"
ESSAY = (DATA / "essay.txt").read_text(encoding="utf-8").split("\n\n")


@pytest.fixture
def stored(client: TestClient) -> None:
    docs = [{"id": f"p{i}", "text": p} for i, p in enumerate(ESSAY[:3])]
    assert client.post("/documents/batch", json={"documents": docs}).status_code == 200


def test_check_is_kept_and_read_back(client: TestClient, stored: None) -> None:
    """POST /checks answers 201 with an unguessable id, a report path and an expiry, and
    the answer of POST /similar (containment, evidence, text by default); GET answers the
    same passages and text; DELETE is 204, then 404."""
    data = base64.b64encode((DATA / "essay.pdf").read_bytes()).decode()
    r = client.post("/checks", json={"content_type": PDF, "data": data})
    assert r.status_code == 201, r.text
    made = r.json()
    assert re.fullmatch(r"[0-9a-f]{32}", made["id"])
    assert made["report"] == f"/ui/checks/{made['id']}"
    assert made["measure"] == "containment" and made["changed"] == []
    assert {x["id"] for x in made["results"]} == {"p0", "p1", "p2"}
    same = client.post(
        "/similar",
        json={"content_type": PDF, "data": data, "measure": "containment", "evidence": True,
              "return_text": True},
    ).json()  # fmt: skip
    assert made["results"] == same["results"] and made["text"] == same["text"]
    got = client.get(f"/checks/{made['id']}").json()
    assert got == made
    assert client.delete(f"/checks/{made['id']}").status_code == 204
    assert client.get(f"/checks/{made['id']}").status_code == 404
    assert client.delete(f"/checks/{made['id']}").status_code == 404
    assert client.get("/checks/not-a-check-id").status_code == 404


def test_check_says_which_sources_changed(client: TestClient, stored: None) -> None:
    """A source replaced or deleted after the check is named in changed; the stored
    answer itself is as it was."""
    made = client.post("/checks", json={"text": "\n\n".join(ESSAY[:3])}).json()
    client.put("/documents/p1", json={"text": "a different text altogether now"})
    assert client.delete("/documents/p2").status_code == 204
    got = client.get(f"/checks/{made['id']}").json()
    assert sorted(got["changed"]) == ["p1", "p2"]
    assert got["results"] == made["results"]


def test_check_expires(client: TestClient, stored: None) -> None:
    """A check with ttl=1 is gone after it; its expires_at says when."""
    made = client.post("/checks", json={"text": ESSAY[0], "ttl": 1}).json()
    assert client.get(f"/checks/{made['id']}").status_code == 200
    time.sleep(1.3)
    assert client.get(f"/checks/{made['id']}").status_code == 404
    assert client.post("/checks", json={"text": ESSAY[0], "ttl": 0}).status_code == 422


def test_checks_are_per_collection_and_read_keys_make_them(settings) -> None:  # type: ignore[no-untyped-def]
    """A read key may create and read checks; a key limited to one collection cannot
    read another collection's check; a check is found only in its own collection."""
    from pydantic import SecretStr

    from app.api.app import create_app

    spec = (
        "writer-key-0123456789:write,reader-key-0123456789:read,limited-key-0123456789:read:coll_a"
    )
    keyed = settings.model_copy(update={"api_keys": SecretStr(spec)})
    with TestClient(create_app(keyed)) as c:
        w = {"Authorization": "Bearer writer-key-0123456789"}
        assert c.post("/collections", json={"name": "coll_a"}, headers=w).status_code == 201
        assert c.post("/collections", json={"name": "coll_b"}, headers=w).status_code == 201
        for name in ("coll_a", "coll_b"):
            body = {"documents": [{"id": "p0", "text": ESSAY[0]}]}
            done = c.post(f"/collections/{name}/documents/batch", json=body, headers=w)
            assert done.status_code == 200
        r = {"Authorization": "Bearer reader-key-0123456789"}
        made = c.post("/collections/coll_b/checks", json={"text": ESSAY[0]}, headers=r)
        assert made.status_code == 201, made.text
        check_id = made.json()["id"]
        assert made.json()["report"] == f"/ui/checks/{check_id}?collection=coll_b"
        assert c.get(f"/collections/coll_b/checks/{check_id}", headers=r).status_code == 200
        assert c.get(f"/collections/coll_a/checks/{check_id}", headers=r).status_code == 404
        assert c.get(f"/checks/{check_id}", headers=r).status_code == 404
        limited = {"Authorization": "Bearer limited-key-0123456789"}
        assert c.get(f"/collections/coll_b/checks/{check_id}", headers=limited).status_code == 403
        own = c.post("/collections/coll_a/checks", json={"text": ESSAY[0]}, headers=limited)
        assert own.status_code == 201
        assert c.delete(f"/collections/coll_b/checks/{check_id}", headers=r).status_code == 403
