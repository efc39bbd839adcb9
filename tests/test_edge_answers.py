"""The hot routes' answers, whole: status, every header and the body's bytes.

GET /similar/{id} and POST /similar are answered by code tuned for speed (app.api.routes.
similar, app.api.edge); whatever it skips, a client must see the same answer. Each
expectation here is written independently of that code: similarities are the oracle's
exact shingle Jaccard (every text is under 256 shingles, where the fingerprint is exact),
bodies are serialised by the standard library's json, and the problem details are the
service's documented wording.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.settings import loaded_settings

TEXTS = {
    "a": "the quick brown fox jumps over the lazy dog by the river",
    "b": "the quick brown fox jumps over the lazy dog by the river bank",
    "far": "a completely different sentence about harbour cranes and the price of copper",
}
QUERY = "the quick brown fox jumps over the lazy dog"
RID = "edge-answers-1"


@pytest.fixture(scope="module")
def served(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from app.api.app import create_app

    settings = loaded_settings(
        redis_url=redis_url,
        collection=f"edgeanswers{os.getpid()}",
        data_dir=tmp_path_factory.mktemp("edge-answers"),
    )
    with TestClient(create_app(settings)) as client:
        docs = [{"id": i, "text": t} for i, t in TEXTS.items()]
        assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
        yield client


def _jaccard(x: str, y: str) -> float:
    a, b = oracle.shingles(x), oracle.shingles(y)
    return len(a & b) / len(a | b)


def _bytes(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _answer(doc_id: str | None, query: str, threshold: float, limit: int = 10) -> bytes:
    """The expected body: every stored document (but doc_id) at or above threshold, most
    similar first; candidates: those that share a band, here exactly the ones with a
    shared shingle (the texts are tiny)."""
    scored = [
        (i, _jaccard(query, t))
        for i, t in TEXTS.items()
        if i != doc_id and oracle.shingles(query) & oracle.shingles(t)
    ]
    hits = sorted((s for s in scored if s[1] >= threshold), key=lambda s: -s[1])[:limit]
    return _bytes(
        {
            "id": doc_id,
            "threshold": threshold,
            "results": [{"id": i, "similarity": s} for i, s in hits],
            "candidates": len(scored),
            "capped": False,
        }
    )


def _problem(status: int, title: str, detail: str, errors: list[tuple[str, str]] = ()) -> bytes:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    body["detail"] = detail
    if errors:
        body["errors"] = [{"field": f, "message": m} for f, m in errors]
    return _bytes(body)


def _check(response: Any, status: int, content_type: str, body: bytes, head: bool = False) -> None:
    assert response.status_code == status
    assert sorted(response.headers.items()) == sorted(
        [
            ("content-length", str(len(body))),
            ("content-type", content_type),
            ("x-request-id", RID),
        ]
    )
    assert response.content == (b"" if head else body)


JSON, PROBLEM = "application/json", "application/problem+json"


def test_get_similar_answers_whole(served: TestClient) -> None:
    """GET /similar/{id} answers 200 with exactly these headers and bytes, with and without
    threshold and limit, and HEAD the same headers without the body."""
    h = {"x-request-id": RID}
    _check(served.get("/similar/b", headers=h), 200, JSON, _answer("b", TEXTS["b"], 0.5))
    got = served.get("/similar/a?threshold=0.6&limit=1", headers=h)
    _check(got, 200, JSON, _answer("a", TEXTS["a"], 0.6, 1))
    got = served.get("/similar/a?threshold=1.0", headers=h)
    _check(got, 200, JSON, _answer("a", TEXTS["a"], 1.0))
    _check(served.head("/similar/b", headers=h), 200, JSON, _answer("b", TEXTS["b"], 0.5), True)


def test_post_similar_answers_whole(served: TestClient) -> None:
    """POST /similar answers 200 with exactly these headers and bytes, given a text alone or
    with threshold and limit."""
    h = {"x-request-id": RID}
    _check(
        served.post("/similar", json={"text": QUERY}, headers=h),
        200,
        JSON,
        _answer(None, QUERY, 0.5),
    )
    got = served.post("/similar", json={"text": QUERY, "threshold": 0.65, "limit": 1}, headers=h)
    _check(got, 200, JSON, _answer(None, QUERY, 0.65, 1))


@pytest.mark.parametrize(
    ("path", "status", "detail", "errors"),
    [
        ("/similar/zz", 404, "no document with id 'zz'", []),
        (
            "/similar/b?threshold=2",
            422,
            "threshold: Input should be less than or equal to 1",
            [("threshold", "Input should be less than or equal to 1")],
        ),
        (
            "/similar/b?limit=0",
            422,
            "limit: Input should be greater than or equal to 1",
            [("limit", "Input should be greater than or equal to 1")],
        ),
        (
            "/similar/b?threshold=0.25",
            422,
            "threshold 0.25 is below 0.5, the lowest this collection's LSH bands were built "
            "for; pairs that similar may not be found",
            [
                (
                    "threshold",
                    "threshold 0.25 is below 0.5, the lowest this collection's LSH "
                    "bands were built for; pairs that similar may not be found",
                )
            ],
        ),
        (
            "/similar/b?limt=5",
            422,
            "unknown query parameter 'limt'; this route takes: consistency, evidence, "
            "filter, limit, measure, threshold",
            [
                (
                    "limt",
                    "unknown query parameter 'limt'; this route takes: consistency, "
                    "evidence, filter, limit, measure, threshold",
                )
            ],
        ),
        (  # a value without a name (a client's bug: it was dropped unseen)
            "/similar/b?=5",
            422,
            "unknown query parameter ''; this route takes: consistency, evidence, "
            "filter, limit, measure, threshold",
            [
                (
                    "",
                    "unknown query parameter ''; this route takes: consistency, "
                    "evidence, filter, limit, measure, threshold",
                )
            ],
        ),
        (
            "/similar/b?limit=1&threshold=0.9&limit=2&threshold=0.6",
            422,
            "query parameter 'limit', 'threshold' given more than once: give each once",
            [
                (
                    "limit",
                    "query parameter 'limit', 'threshold' given more than once: give each once",
                )
            ],
        ),
    ],
)
def test_get_similar_errors_answer_whole(
    served: TestClient, path: str, status: int, detail: str, errors: list[tuple[str, str]]
) -> None:
    """GET /similar/{id}'s errors are problem+json with exactly these headers and bytes."""
    title = "Not found" if status == 404 else "Invalid request"
    if "threshold=0.25" in path:
        title = "Threshold out of range"
    got = served.get(path, headers={"x-request-id": RID})
    _check(got, status, PROBLEM, _problem(status, title, detail, errors))


@pytest.mark.parametrize(
    ("body", "detail", "errors"),
    [
        (
            b'{"txt": "x"}',
            "text: Field required; txt: unknown field",
            [("text", "Field required"), ("txt", "unknown field")],
        ),
        (
            b'{"text": 5}',
            "text: Input should be a valid string",
            [("text", "Input should be a valid string")],
        ),
        (
            b"{bad",
            "body: not valid JSON at line 1, column 2: unexpected character, expected a string key",
            [
                (
                    "body",
                    "body: not valid JSON at line 1, column 2: unexpected character, "
                    "expected a string key",
                )
            ],
        ),
    ],
)
def test_post_similar_errors_answer_whole(
    served: TestClient, body: bytes, detail: str, errors: list[tuple[str, str]]
) -> None:
    """POST /similar's errors are problem+json with exactly these headers and bytes."""
    headers = {"x-request-id": RID, "content-type": "application/json"}
    got = served.post("/similar", content=body, headers=headers)
    _check(got, 422, PROBLEM, _problem(422, "Invalid request", detail, errors))


def _paths(routes: list[Any]) -> list[str]:
    """Every route's path with its parameters filled in two ways, and near misses."""
    out = ["/", "", "/nope", "/similarity", "/SIMILAR/x", "/docs-assets/x", "/similar/"]
    for route in routes:
        path = getattr(route, "path", "")
        for value in ("x", "a/b"):
            filled = path.replace("{doc_id:docid}", value).replace("{collection}", "c1")
            out += [filled, filled + "/", filled.rstrip("/") + "x", filled[:-1]]
    return sorted(set(out))


def test_quick_refusal_matches_as_the_routes_do(served: TestClient) -> None:
    """Every route with the quick refusal (app.api.routing.Route) answers exactly what
    APIRoute's own matches does, for every route's path, near misses, each method, with
    and without a root_path; and the hot routes have it."""
    from fastapi.routing import APIRoute

    from app.api.routing import Route

    routes = served.app.router.routes  # type: ignore[attr-defined]
    quick = [r for r in routes if isinstance(r, Route) and r.prefix]
    assert {"/similar/{doc_id:docid}", "/similar"} <= {r.path for r in quick}
    for route in quick:
        own = APIRoute.matches.__get__(route)
        for path in _paths(routes):
            for method in ("GET", "HEAD", "POST", "PUT", "DELETE"):
                for root in ("", "/api"):
                    scope = {"type": "http", "path": path, "method": method, "root_path": root}
                    assert route.matches(dict(scope)) == own(dict(scope)), (route.path, scope)
