"""The OpenAPI schema generates good clients, and the docs need no internet."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import validate

from app.api.app import create_app
from app.core.settings import load_settings

WRITE = "w" * 24
EXPECTED_IDS = {
    "ingest_document", "ingest_batch", "upsert_document", "get_document", "delete_document",
    "delete_documents", "find_similar", "find_similar_to_text", "list_duplicate_pairs",
    "list_duplicate_groups", "export_documents", "import_documents", "check_health",
    "check_ready", "get_metrics", "describe_collection",
    "create_check", "get_check", "delete_check",
    "create_collection", "list_collections", "get_collection", "delete_collection",
}  # fmt: skip
# Every document, similar and duplicates route also under /collections/{collection}.
PREFIXED = {
    "ingest_document", "ingest_batch", "upsert_document", "get_document", "delete_document",
    "delete_documents", "find_similar", "find_similar_to_text", "list_duplicate_pairs",
    "list_duplicate_groups", "export_documents", "import_documents", "create_check", "get_check",
    "delete_check",
}  # fmt: skip
EXPECTED_IDS |= {f"{i}_in_collection" for i in PREFIXED}


@pytest.fixture
def keyed(redis_url: str, collection: str, tmp_path) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    settings = load_settings(
        redis_url=redis_url, collection=collection, data_dir=tmp_path, api_keys=f"{WRITE}:write"
    )
    with TestClient(create_app(settings)) as c:
        yield c


def _operations(schema: dict) -> Iterator[tuple[str, str, dict]]:
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            yield method.upper(), path, op


def test_schema_is_valid_with_readable_ids_tags_security_and_examples(keyed: TestClient) -> None:
    """/openapi.json (public, keys or not) passes openapi-spec-validator; every operation
    has its stable readable id and a tag, every one but /healthz declares the bearer key,
    and every JSON request body carries an example."""
    resp = keyed.get("/openapi.json")  # no key: the schema describes, it holds no data
    assert resp.status_code == 200
    schema = resp.json()
    validate(schema)
    ids = [op["operationId"] for _, _, op in _operations(schema)]
    assert sorted(ids) == sorted(EXPECTED_IDS)
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    for method, path, op in _operations(schema):
        assert op.get("tags"), (method, path)
        if (method, path) == ("GET", "/healthz"):
            assert "security" not in op
        else:
            assert op.get("security") == [{"apiKey": []}], (method, path)
            assert "401" in op["responses"], (method, path)
        body = op.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            assert "example" in body or "examples" in body, (method, path)


def test_without_keys_no_security_is_declared(client: TestClient) -> None:
    """Without API keys the schema asks for none, so a generated client sends none."""
    schema = client.get("/openapi.json").json()
    validate(schema)
    assert all("security" not in op for _, _, op in _operations(schema))


def test_docs_pages_load_every_asset_from_the_service(keyed: TestClient) -> None:
    """/docs and /redoc open without a key and reference only the service's own files,
    each of which it serves (no CDN: they work offline); data routes still need the key."""
    for page in ("/docs", "/redoc"):
        resp = keyed.get(page)
        assert resp.status_code == 200 and "text/html" in resp.headers["content-type"]
        refs = re.findall(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']""", resp.text)
        refs += re.findall(r"""url:\s*["']([^"']+)["']""", resp.text)
        assert refs and not re.search(r"https?://", resp.text), resp.text
        for ref in refs:
            assert ref.startswith("/"), ref
            got = keyed.get(ref)
            assert got.status_code == 200 and len(got.content) > 100, ref
    assert keyed.get("/docs-assets/swagger-ui-bundle.js").status_code == 200
    assert keyed.get("/readyz").status_code == 401
    assert keyed.get("/docs-assets/../readyz").status_code in (401, 404)
