"""A 405 lists in Allow every method of the resource, whichever route the router tried."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient


def _templates(client: TestClient) -> dict[str, set[str]]:
    """The schema's paths and the methods each has (HEAD with GET: the edge answers it)."""
    paths = client.get("/openapi.json").json()["paths"]
    out = {}
    for path, ops in paths.items():
        methods = {m.upper() for m in ops}
        if "GET" in methods:
            methods.add("HEAD")
        out[path] = methods
    return out


def _concrete(template: str) -> str:
    return re.sub(r"\{[^}]+\}", "x1", template)


def _matches(template: str, path: str) -> bool:
    pattern = "".join(
        "[^/]+" if part.startswith("{") else re.escape(part)
        for part in re.split(r"(\{[^}]+\})", template)
    )
    return re.fullmatch(pattern, path) is not None


def test_every_405_lists_every_method_of_the_path(client: TestClient) -> None:
    """OPTIONS and PATCH on every path of the schema (the issue's four among them) are
    405s whose Allow is the union of the methods of the schema paths matching it with
    the fewest parameters (/documents/batch is POST only, not a document's)."""
    templates = _templates(client)
    assert {"/collections", "/collections/{collection}", "/documents/{doc_id}"} <= set(templates)
    for template in templates:
        path = _concrete(template)
        # The most specific matching path names the resource (OpenAPI: concrete first).
        matching = [t for t in templates if _matches(t, path)]
        fewest = min(t.count("{") for t in matching)
        expected = set().union(*(templates[t] for t in matching if t.count("{") == fewest))
        for method in ("OPTIONS", "PATCH"):
            if method in expected:
                continue
            r = client.request(method, path)
            assert r.status_code == 405, (method, path, r.status_code)
            allow = {m.strip() for m in r.headers["allow"].split(",")}
            assert allow == expected, (method, path, allow, expected)


def test_the_issues_four_cases(client: TestClient) -> None:
    """The table of issue 25: each path's Allow holds the methods it was missing."""
    cases = {
        "/collections": {"GET", "POST"},
        "/collections/c1": {"GET", "DELETE"},
        "/documents/d1": {"PUT", "GET", "DELETE"},
        "/collections/c1/documents/d1": {"PUT", "GET", "DELETE"},
    }
    for path, methods in cases.items():
        r = client.options(path)
        assert r.status_code == 405
        assert methods <= {m.strip() for m in r.headers["allow"].split(",")}, (path, r.headers)
