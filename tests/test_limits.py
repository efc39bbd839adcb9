"""Limits that test_api_documents.py and test_api_similar.py leave open, each with its clear 4xx.

Query ranges on the routes those files do not try, ids measured in bytes of
4-byte characters, ids and collection names that look like Redis keys or
patterns, the body limit over real HTTP (declared and streamed), and the
request deadline against a big batch and a stalled upload.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from fastapi.testclient import TestClient
from support.cluster import sync_client
from support.corpus import read_corpus
from support.procs import serving

pytestmark = pytest.mark.both_stores

TEXT = "The quick brown fox jumps over the lazy dog near the quiet river bank today"


def enc(doc_id: str) -> str:
    return quote(doc_id, safe="").replace(".", "%2E")


def _problem(resp: httpx.Response, status: int) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert resp.json()["detail"]
    return resp.json()


@pytest.mark.parametrize(
    "query",
    ["threshold=0", "threshold=1.01", "threshold=nan", "threshold=inf", "limit=0", "limit=1001"],
)
def test_query_ranges_on_ingest_and_duplicates_are_422(client: TestClient, query: str) -> None:
    """POST /documents?similar=true and GET /duplicates check their ranges like /similar does."""
    _problem(client.post(f"/documents?similar=true&{query}", json={"id": "q", "text": TEXT}), 422)
    _problem(client.get("/documents/q"), 404)  # refused before anything was stored
    if query.startswith("threshold"):
        _problem(client.get(f"/duplicates?{query}"), 422)
        _problem(client.get(f"/duplicates/groups?{query}"), 422)
    body = {"text": TEXT, query.split("=")[0]: float(query.split("=")[1])}
    if query.endswith(("nan", "inf")):
        raw = f'{{"text": "{TEXT}", "threshold": {"NaN" if "nan" in query else "Infinity"}}}'
        resp = client.post("/similar", content=raw, headers={"content-type": "application/json"})
    else:
        resp = client.post("/similar", json=body)
    _problem(resp, 422)


def test_threshold_below_the_collections_on_ingest_is_422(client: TestClient) -> None:
    """?similar=true with a threshold the bands were not built for is refused, nothing stored."""
    body = _problem(
        client.post("/documents?similar=true&threshold=0.2", json={"id": "t", "text": TEXT}), 422
    )
    assert "0.5" in body["detail"]
    _problem(client.get("/documents/t"), 404)


def test_id_limit_counts_bytes_on_every_route(client: TestClient) -> None:
    """512 bytes of 4-byte characters is an id; 516 is a 422 on PUT, GET, DELETE and /similar."""
    ok, too_long = "😀" * 128, "😀" * 129
    assert client.put(f"/documents/{enc(ok)}", json={"text": TEXT}).status_code == 201
    assert client.get(f"/similar/{enc(ok)}").json()["id"] == ok
    for method, path in [
        ("PUT", "/documents/{}"),
        ("GET", "/documents/{}"),
        ("DELETE", "/documents/{}"),
        ("GET", "/similar/{}"),
    ]:
        body = {"text": TEXT} if method == "PUT" else None
        _problem(client.request(method, path.format(enc(too_long)), json=body), 422)
    batch = {"documents": [{"id": too_long, "text": TEXT}]}
    _problem(client.post("/documents/batch", json=batch), 422)


def test_pattern_characters_in_ids_are_plain_characters(client: TestClient) -> None:
    """'*', '?', '[ab]' match nothing but themselves: reads and deletes touch one document."""
    plain = ["a", "b", "ab"]
    patterns = ["*", "?", "[ab]", "a*", "\\*", "%", "{a}"]
    for doc_id in plain + patterns:
        body = {"text": TEXT, "metadata": {"id": doc_id}}
        assert client.put(f"/documents/{enc(doc_id)}", json=body).status_code == 201
    for doc_id in patterns:
        assert client.get(f"/documents/{enc(doc_id)}").json()["metadata"] == {"id": doc_id}
        assert client.delete(f"/documents/{enc(doc_id)}").status_code == 204
    for doc_id in plain:
        assert client.get(f"/documents/{enc(doc_id)}").status_code == 200
    similar = {r["id"] for r in client.get("/similar/a").json()["results"]}
    assert similar == {"b", "ab"}


@pytest.fixture
def neighbour(settings) -> Iterator[tuple[str, TestClient]]:  # type: ignore[no-untyped-def]
    """A second collection on the same Redis."""
    from app.api.app import create_app

    other = settings.collection + "n"
    with TestClient(create_app(settings.model_copy(update={"collection": other}))) as c:
        yield other, c


def test_ids_naming_another_collections_keys_leave_it_alone(
    client: TestClient, neighbour: tuple[str, TestClient], store_url: str
) -> None:
    """Ids spelled like the keys of another collection write and delete only their own."""
    other, nc = neighbour
    assert nc.put("/documents/victim", json={"text": TEXT}).status_code == 201
    r = sync_client(store_url)
    keys = sorted(r.scan_iter(match=f"nd:{other}:*"))
    before = {k: r.dump(k) for k in keys}
    hostile = [
        f"nd:{other}:ids",
        f"nd:{other}:d:1",
        f"nd:{other}:next",
        f"nd:{other}:config",
        f"../{other}",
        f"{{nd:{other}}}:ids",
        "victim",
        f"nd:{other}:*",
    ]
    for doc_id in hostile:
        assert client.put(
            f"/documents/{enc(doc_id)}", json={"text": "other words " + TEXT}
        ).is_success
        assert client.get(f"/similar/{enc(doc_id)}").status_code == 200
        assert client.delete(f"/documents/{enc(doc_id)}").status_code == 204
    assert sorted(r.scan_iter(match=f"nd:{other}:*")) == keys
    assert {k: r.dump(k) for k in keys} == before
    assert nc.get("/documents/victim").status_code == 200
    r.close()


@pytest.mark.parametrize("name", ["a:b", "{x}", "../x", "x*", "a\nb", "", "x" * 65, "a b", "ü"])
def test_collection_names_cannot_leave_their_prefix(name: str) -> None:
    """NEARDUP_COLLECTION is 1-64 of [A-Za-z0-9_-]: nothing that Redis reads as structure."""
    from app.core.settings import SettingsError, load_settings

    with pytest.raises(SettingsError, match="NEARDUP_COLLECTION"):
        load_settings(collection=name)


def _raw_request(port: int, head: bytes, body_part: bytes, wait: float) -> tuple[bytes, float]:
    """Send head and part of a body, then stall; what the server answers, and when."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as s:
        started = time.monotonic()
        s.sendall(head + body_part)
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except TimeoutError:
            pass
        return answer, time.monotonic() - started


def test_body_limit_over_http_declared_and_streamed(tmp_path: Path) -> None:
    """A declared Content-Length over NEARDUP_MAX_BODY_BYTES and a chunked body that grows past
    it both get 413; the service then goes on answering."""
    with serving(tmp_path, NEARDUP_MAX_BODY_BYTES="4096", NEARDUP_LOG_LEVEL="warning") as server:
        big = {"text": "word " * 2000}
        _problem(httpx.post(server.url + "/documents", json=big), 413)

        def chunks() -> Iterator[bytes]:
            yield b'{"text": "'
            for _ in range(20):
                yield b"word " * 100
            yield b'"}'

        streamed = httpx.post(
            server.url + "/documents",
            content=chunks(),
            headers={"content-type": "application/json"},
        )
        _problem(streamed, 413)
        assert "NEARDUP_MAX_BODY_BYTES" in streamed.json()["detail"]
        assert httpx.post(server.url + "/documents", json={"text": TEXT}).status_code == 201


def test_request_deadline_bounds_big_and_stalled_requests(tmp_path: Path) -> None:
    """With NEARDUP_REQUEST_TIMEOUT=0.05 a 1000-document batch gets 503 + Retry-After soon
    after the deadline; an upload that stalls halfway is the client's slowness, so it
    gets NEARDUP_BODY_TIMEOUT's 408 (the deadline counts from the body's arrival); the
    service answers the next request.

    The batch (each article twice over, ~3 MB) takes well over 0.05 s to parse, sketch and
    store on any machine this runs on, so the deadline, not the work, ends it."""
    docs = [{"id": i, "text": f"{t} {t}"} for i, t in read_corpus()]
    with serving(
        tmp_path,
        NEARDUP_REQUEST_TIMEOUT="0.05",
        NEARDUP_BODY_TIMEOUT="1",
        NEARDUP_LOG_LEVEL="warning",
    ) as server:
        started = time.monotonic()
        resp = httpx.post(server.url + "/documents/batch", json={"documents": docs}, timeout=30)
        took = time.monotonic() - started
        body = _problem(resp, 503)
        assert resp.headers["retry-after"] == "1" and "NEARDUP_REQUEST_TIMEOUT" in body["detail"]
        assert took < 0.05 + 1.5, took
        head = (
            b"POST /documents HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        )
        answer, waited = _raw_request(server.port, head, b'{"text": "only the start', 5)
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert waited < 1 + 1.5, waited
        # A one-line document fits the 0.05 s deadline; on a loaded machine it may not, and
        # the answer is then the same 503 with Retry-After: the service is tried again.
        statuses = []
        for _ in range(20):
            statuses.append(httpx.put(server.url + "/documents/after", json={"text": TEXT}))
            if statuses[-1].status_code != 503:
                break
        # (201, or 200 if a deadline ended one after it had stored the document).
        assert statuses[-1].status_code in (200, 201), [r.status_code for r in statuses]
        assert all(r.headers.get("retry-after") == "1" for r in statuses[:-1])


def test_streams_of_a_named_collection_are_not_cut_by_the_deadline(  # type: ignore[no-untyped-def]
    settings, collection: str
) -> None:
    """GET /export and /duplicates stream the whole collection past NEARDUP_REQUEST_TIMEOUT
    under /collections/{name}/ as without the prefix (they were cut mid-stream there),
    while any other request still gets the deadline's 503."""
    from fastapi.testclient import TestClient

    from app.api.app import create_app

    name = f"{collection}-streams"
    short = settings.model_copy(update={"request_timeout": 1e-6})
    with TestClient(create_app(settings)) as c:
        assert c.post("/collections", json={"name": name}).status_code == 201
        docs = [{"id": f"d{i}", "text": f"{TEXT} number {i}"} for i in range(30)]
        assert c.post(f"/collections/{name}/documents/batch", json={"documents": docs}).is_success
    with TestClient(create_app(short)) as c:
        for path in ("/export", "/duplicates"):
            for prefix in ("", f"/collections/{name}"):
                resp = c.get(prefix + path)
                assert resp.status_code == 200, (prefix + path, resp.text[:200])
        exported = c.get(f"/collections/{name}/export").text.splitlines()
        assert len(exported) == 30 + 2 and '"end"' in exported[-1]
        assert c.get(f"/collections/{name}/documents/d1").status_code == 503
