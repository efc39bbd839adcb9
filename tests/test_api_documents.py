"""POST/PUT/GET/DELETE /documents over a real Redis: happy paths and every error path."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.cluster import all_keys, sync_client

pytestmark = pytest.mark.both_stores


def enc(doc_id: str) -> str:
    """Percent-encode an id for a path; dots too, or clients collapse '..' segments."""
    return quote(doc_id, safe="").replace(".", "%2E")


TEXT = "The quick brown fox jumps over the lazy dog near the quiet river bank today"


def _problem(resp, status: int) -> dict:  # type: ignore[no-untyped-def]
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["status"] == status and body["detail"]
    return body


def test_post_stores_and_reports_shingle_count(client: TestClient) -> None:
    """POST answers 201 with the id and the oracle's distinct shingle count."""
    resp = client.post("/documents", json={"id": "a", "text": TEXT, "metadata": {"k": 1}})
    assert resp.status_code == 201
    assert resp.json()["id"] == "a"
    assert resp.json()["shingles"] == len(oracle.shingles(TEXT, "word:3"))
    got = client.get("/documents/a").json()
    assert got == {"id": "a", "shingles": resp.json()["shingles"], "metadata": {"k": 1}}


@pytest.mark.parametrize("query", ["threshold=0.8", "limit=5"])
def test_search_parameters_without_similar_are_refused_and_nothing_stored(
    client: TestClient, query: str
) -> None:
    """threshold and limit on POST /documents without similar=true are a 422 naming the
    fix (taken and ignored, they read as a search that found nothing); nothing is stored."""
    resp = client.post(f"/documents?{query}", json={"id": "unasked", "text": TEXT})
    assert resp.status_code == 422 and "similar=true" in resp.json()["detail"], resp.text
    assert client.get("/documents/unasked").status_code == 404
    asked = client.post(f"/documents?similar=true&{query}", json={"id": "asked", "text": TEXT})
    assert asked.status_code == 201 and asked.json()["similar"] is not None, asked.text


def test_post_without_id_generates_one(client: TestClient) -> None:
    """A document without an id gets a fresh one that GET then finds."""
    doc_id = client.post("/documents", json={"text": TEXT}).json()["id"]
    assert doc_id
    assert client.get(f"/documents/{doc_id}").status_code == 200


def test_unknown_id_is_404(client: TestClient) -> None:
    """GET, DELETE and GET /similar of an unknown id are problem+json 404s."""
    _problem(client.get("/documents/nope"), 404)
    _problem(client.delete("/documents/nope"), 404)
    _problem(client.get("/similar/nope"), 404)


@pytest.mark.parametrize("text", ["", "   \n\t ", "!!! ... ---"])
def test_text_without_words_is_422_and_not_stored(client: TestClient, text: str) -> None:
    """A text with no letters or digits is refused and leaves nothing behind."""
    _problem(client.post("/documents", json={"id": "empty", "text": text}), 422)
    _problem(client.get("/documents/empty"), 404)


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b'{"text": 5}',
        b'{"id": 7, "text": "words here"}',
        b'{"text": "words", "metadata": [1, 2]}',
        b'{"text": "words", "unexpected": true}',
        b"[]",
    ],
)
def test_malformed_bodies_are_422(client: TestClient, body: bytes) -> None:
    """Invalid JSON, wrong types and unknown fields get a 422 naming the problem."""
    resp = client.post("/documents", content=body, headers={"content-type": "application/json"})
    _problem(resp, 422)


def test_id_length_limits(client: TestClient) -> None:
    """Ids of 1-512 UTF-8 bytes are accepted; 0 and 513 bytes are refused."""
    ok = "é" * 256  # 512 bytes
    assert client.put(f"/documents/{quote(ok)}", json={"text": TEXT}).status_code == 201
    assert client.get(f"/documents/{quote(ok)}").json()["id"] == ok
    _problem(client.post("/documents", json={"id": "x" * 513, "text": TEXT}), 422)
    _problem(client.post("/documents", json={"id": "", "text": TEXT}), 422)
    _problem(client.put(f"/documents/{'x' * 513}", json={"text": TEXT}), 422)


@pytest.mark.parametrize(
    "doc_id",
    [
        "https://example.com/news/2024/story.html?x=1&y=2#frag",
        "a/b/c",
        "100% sure",
        "key:with:colons{and}*globs* space/../..",
        "日本語の文書",
    ],
)
def test_ids_round_trip_in_paths(client: TestClient, doc_id: str) -> None:
    """URLs, slashes, percent signs and key-pattern characters round-trip as ids."""
    path = enc(doc_id)
    assert client.put(f"/documents/{path}", json={"text": TEXT}).status_code == 201
    assert client.get(f"/documents/{path}").json()["id"] == doc_id
    assert client.get(f"/similar/{path}").json()["id"] == doc_id
    assert client.delete(f"/documents/{path}").status_code == 204
    _problem(client.get(f"/documents/{path}"), 404)


def test_ids_never_leave_the_collection_prefix(
    client: TestClient, store_url: str, collection: str
) -> None:
    """Ids with ':', '{', '}', '*', spaces and dots create only keys under the prefix ('..'
    alone is no id: a URL path cannot name it)."""
    r = sync_client(store_url)
    before = all_keys(r)
    for doc_id in ["a:b", "{x}", "*", "...", "../x", "line break", "nd:other:ids"]:
        assert client.put(f"/documents/{enc(doc_id)}", json={"text": TEXT}).is_success
    assert client.put(f"/documents/{enc('..')}", json={"text": TEXT}).status_code == 422
    created = all_keys(r) - before
    assert created
    assert all(k.startswith(f"nd:{collection}:".encode()) for k in created)


def test_put_creates_then_replaces(client: TestClient) -> None:
    """PUT answers 201 for a new id and 200 when it replaces, keeping the new metadata."""
    assert client.put("/documents/p", json={"text": TEXT, "metadata": {"v": 1}}).status_code == 201
    resp = client.put("/documents/p", json={"text": TEXT + " more", "metadata": {"v": 2}})
    assert resp.status_code == 200 and resp.json()["created"] is False
    assert client.get("/documents/p").json()["metadata"] == {"v": 2}


def test_delete_removes_document(client: TestClient) -> None:
    """DELETE answers 204, then the id is gone for GET and /similar."""
    client.post("/documents", json={"id": "d", "text": TEXT})
    assert client.delete("/documents/d").status_code == 204
    _problem(client.get("/documents/d"), 404)
    _problem(client.get("/similar/d"), 404)
    assert client.post("/similar", json={"text": TEXT}).json()["results"] == []


def test_batch_reports_one_status_per_document(client: TestClient) -> None:
    """A batch stores the good documents and reports the wordless one as an error."""
    docs = [
        {"id": "b1", "text": TEXT},
        {"id": "b2", "text": "..."},
        {"id": "b3", "text": TEXT + " again"},
    ]
    client.post("/documents", json={"id": "b3", "text": "an older version of b3"})
    body = client.post("/documents/batch", json={"documents": docs}).json()
    assert [r["status"] for r in body["results"]] == ["created", "error", "updated"]
    assert (body["created"], body["updated"], body["errors"]) == (1, 1, 1)
    assert client.get("/documents/b1").status_code == 200
    assert client.get("/documents/b2").status_code == 404


def test_batch_with_repeated_id_keeps_the_last(client: TestClient) -> None:
    """An id named twice in one batch ends with the later text."""
    docs = [
        {"id": "r", "text": "first version of the text here", "metadata": {"n": 1}},
        {"id": "r", "text": "second version of the text here", "metadata": {"n": 2}},
    ]
    assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
    assert client.get("/documents/r").json()["metadata"] == {"n": 2}


def test_batch_size_limits(client: TestClient) -> None:
    """An empty batch and one over 1000 documents are 422s."""
    _problem(client.post("/documents/batch", json={"documents": []}), 422)
    many = [{"text": f"doc {i} words"} for i in range(1001)]
    _problem(client.post("/documents/batch", json={"documents": many}), 422)


def test_body_over_limit_is_413(settings) -> None:  # type: ignore[no-untyped-def]
    """A body over NEARDUP_MAX_BODY_BYTES is refused with 413 before it is read."""
    from app.api.app import create_app

    small = settings.model_copy(update={"max_body_bytes": 2048})
    with TestClient(create_app(small)) as c:
        _problem(c.post("/documents", json={"text": "word " * 1000}), 413)
        assert c.post("/documents", json={"text": "word " * 10}).status_code == 201


def test_text_over_limit_is_422(settings) -> None:  # type: ignore[no-untyped-def]
    """A text over NEARDUP_MAX_TEXT_BYTES is a 422 that names the setting."""
    from app.api.app import create_app

    small = settings.model_copy(update={"max_text_bytes": 100})
    with TestClient(create_app(small)) as c:
        body = _problem(c.post("/documents", json={"text": "wörd " * 30}), 422)
        assert "NEARDUP_MAX_TEXT_BYTES" in body["detail"]


def test_lone_surrogate_text_is_422(client: TestClient) -> None:
    """Text that is not valid Unicode is refused, not a 500."""
    body = b'{"id": "s", "text": "bad \\ud800 text here"}'
    resp = client.post("/documents", content=body, headers={"content-type": "application/json"})
    _problem(resp, 422)


def test_health_and_readiness(client: TestClient) -> None:
    """healthz is up and readyz reports Redis and the kernel ready."""
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_openapi_docs_are_served(client: TestClient) -> None:
    """The interactive docs and the schema name every route of the API table."""
    assert client.get("/docs").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    for p in ("/documents", "/documents/batch", "/similar", "/healthz", "/readyz"):
        assert p in paths
