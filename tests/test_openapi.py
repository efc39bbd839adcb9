"""The OpenAPI schema generates good clients, and the docs need no internet."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator

import jsonschema
import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import validate
from support.settings import loaded_settings

from app.api.app import create_app

WRITE = "w" * 24
EXPECTED_IDS = {
    "ingest_document", "ingest_batch", "upsert_document", "get_document", "delete_document",
    "delete_documents", "find_similar", "find_similar_to_text", "list_duplicate_pairs",
    "list_duplicate_groups", "export_documents", "import_documents", "check_health",
    "check_ready", "get_metrics", "describe_collection",
    "create_check", "list_checks", "get_check", "delete_check", "forget_site_template",
    "create_collection", "list_collections", "get_collection", "delete_collection",
}  # fmt: skip
# Every document, similar and duplicates route also under /collections/{collection}.
PREFIXED = {
    "ingest_document", "ingest_batch", "upsert_document", "get_document", "delete_document",
    "delete_documents", "find_similar", "find_similar_to_text", "list_duplicate_pairs",
    "list_duplicate_groups", "export_documents", "import_documents", "create_check",
    "list_checks", "get_check", "delete_check", "forget_site_template",
}  # fmt: skip
EXPECTED_IDS |= {f"{i}_in_collection" for i in PREFIXED}


@pytest.fixture
def keyed(redis_url: str, collection: str, tmp_path) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    settings = loaded_settings(
        redis_url=redis_url,
        collection=collection,
        data_dir=tmp_path,
        api_keys=f"{WRITE}:write",
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


def test_docs_pages_cannot_be_framed_and_keep_no_key(keyed: TestClient) -> None:
    """/docs and /redoc refuse to be framed by another site (a click on "Try it out" runs a
    call with the user's key), and Swagger UI keeps the key only in the tab's memory."""
    for page in ("/docs", "/redoc"):
        headers = keyed.get(page).headers
        assert headers["x-frame-options"] == "DENY", page
        assert "frame-ancestors 'none'" in headers["content-security-policy"], page
    assert '"persistAuthorization": false' in keyed.get("/docs").text
    assert keyed.get("/docs-assets/../readyz").status_code in (401, 404)


def _params(schema: dict, name: str) -> list[dict]:
    return [
        p["schema"]
        for _, _, op in _operations(schema)
        for p in op.get("parameters", [])
        if p["name"] == name and p["in"] == "path"
    ]


def test_path_parameters_state_the_rules_the_service_applies(client: TestClient) -> None:
    """Every collection path parameter has a pattern and length bounds that accept
    exactly the names the service accepts; every id path parameter a pattern that
    accepts a character exactly when an id may hold it, and the 512 bound."""
    from app.core.settings import valid_collection
    from app.index.ids import id_problem

    schema = client.get("/openapi.json").json()
    names = _params(schema, "collection")
    ids = _params(schema, "doc_id")
    assert len(names) >= 14 and len(ids) >= 8
    samples = ["a", "A-b_9", "x" * 64, "x" * 65, "", "a b", "a:b", "ä", "a*", "a{b}"]
    for rule in names:
        assert rule["maxLength"] == 64 and rule["minLength"] == 1
        for name in samples:
            fits = re.fullmatch(rule["pattern"], name) is not None and len(name) <= 64
            assert fits == valid_collection(name), name
    for rule in ids:
        assert rule["maxLength"] == 512 and rule["minLength"] == 1
        for code in [*range(0x3000), 0xFFFD, 0x1F600]:
            ch = chr(code)
            assert (re.fullmatch(rule["pattern"], ch) is not None) == (id_problem(ch) is None), code
        assert "bytes of UTF-8" in rule["description"] and "'/'" in rule["description"]
    body = schema["components"]["schemas"]["ImportIn"]["properties"]
    assert body["header"]["required"] == ["format", "version", "params"]
    assert {"id", "shingles", "fingerprint", "bands"} <= set(body["documents"]["items"]["required"])


def test_links_lead_from_a_write_to_what_it_made(client: TestClient) -> None:
    """POST /documents and PUT /documents/{id} link to GET, DELETE and GET /similar of the
    same id (the twins likewise, in the same collection); POST /collections links to
    each route of the new collection."""
    schema = client.get("/openapi.json").json()
    by_id = {op["operationId"]: op for _, _, op in _operations(schema)}
    for suffix, extra in (("", {}), ("_in_collection", {"collection": "$request.path.collection"})):
        for source, doc_id in (
            ("ingest_document", "$response.body#/id"),
            ("upsert_document", "$request.path.doc_id"),
        ):
            statuses = [s for s in ("200", "201") if s in by_id[source + suffix]["responses"]]
            assert statuses
            for status in statuses:
                links = by_id[source + suffix]["responses"][status]["links"]
                targets = {link["operationId"]: link["parameters"] for link in links.values()}
                expected = {"doc_id": doc_id, **extra}
                assert targets == {
                    f"{t}{suffix}": expected
                    for t in ("get_document", "delete_document", "find_similar")
                }
    links = by_id["create_collection"]["responses"]["201"]["links"]
    targets = {link["operationId"] for link in links.values()}
    assert {"get_collection", "delete_collection", "ingest_document_in_collection"} <= targets
    assert all(
        link["parameters"] == {"collection": "$response.body#/name"} for link in links.values()
    )


def test_every_answer_with_a_body_says_what_the_body_is(client: TestClient) -> None:
    """A 2xx answer other than 204 declares its content, so a link reading
    $response.body (POST /collections' 200 had none) has a body to read."""
    schema = client.get("/openapi.json").json()
    bare = [
        (path, status)
        for _, path, op in _operations(schema)
        for status, answer in op["responses"].items()
        if status.startswith("2") and status != "204" and "content" not in answer
    ]
    assert bare == []


REQUEST_BODIES = (
    "DocumentIn",
    "DocumentPut",
    "BatchDocumentIn",
    "SimilarIn",
    "CheckIn",
    "DeleteIn",
)


def test_body_alternatives_leave_generators_one_model_and_still_refuse(
    client: TestClient,
) -> None:
    """A body's "one of these" rule sits in allOf beside its properties, where generators
    keep one model with every field (a body's own oneOf became a union of branches without
    id or metadata); the schema still accepts what the service does and refuses the rest."""
    doc = client.get("/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for name in REQUEST_BODIES:
        assert "oneOf" not in schemas[name] and "properties" in schemas[name], name
        assert [set(a) for a in schemas[name]["allOf"]] == [{"oneOf"}], name

    def valid(name: str, body: dict) -> bool:
        root = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
        return jsonschema.Draft202012Validator(root).is_valid(body)

    text = "The quick brown fox jumps over the lazy dog"
    pdf = {"data": "JVBERi0=", "content_type": "application/pdf"}
    assert valid("DocumentIn", {"id": "a", "text": text, "metadata": {"k": "v"}})
    assert valid("DocumentIn", {"id": "a", **pdf})
    assert not valid("DocumentIn", {"id": "a", "text": text, **pdf})
    assert not valid("DocumentIn", {"id": "a", "data": "JVBERi0="})  # a file needs its type
    one = {"metadata": {"k": "v"}}
    assert valid("DeleteIn", {"ids": ["a"]}) and valid("DeleteIn", {"filter": one})
    assert not valid("DeleteIn", {"ids": ["a"], "filter": one})
    assert not valid("DeleteIn", {"filter": {"metadata": {}}})  # the service refuses it too
    # (a file's data is checked by reading it, past what a schema can say)
    for body in ({"id": "a", "text": text}, {"id": "a", "text": text, **pdf}):
        status = client.post("/documents", json=body).status_code
        assert (status < 400) is valid("DocumentIn", body), (body, status)


def test_every_422_lists_its_refusals_and_the_schema_says_what_it_refuses(
    client: TestClient,
) -> None:
    """Every kind of 422 (a schema's field, a threshold under the collection's, a text of
    no words, an unknown, repeated or loosely written query parameter, JSON that is not,
    a path that is not UTF-8, a collection name) carries errors: [{field, message}], as
    the API guide says; the Problem schema declares errors and a 503's ids, and the
    schema states the refusals it can (passage_words 1 and 2, an empty filter)."""
    assert client.put("/documents/a", json={"text": "some words of a text"}).status_code == 201
    refused = [
        client.post("/similar", json={"text": 5}),
        client.get("/similar/a", params={"threshold": 0.3}),
        client.post("/similar", json={"text": "!!! ..."}),
        client.get("/similar/a?limt=1"),
        client.get("/similar/a?limit=1&limit=2"),
        client.post("/similar", content=b"{not json", headers={"content-type": "application/json"}),
        client.get("/documents/%FF"),
        client.post("/collections", json={"name": "my:index"}),
    ]
    for loose in ("1_0", "%2B5", "%205", "10.0", ""):
        refused.append(client.get(f"/similar/a?limit={loose}"))
    for r in refused:
        assert r.status_code == 422, r.text
        errors = r.json()["errors"]
        assert errors and all(set(e) == {"field", "message"} for e in errors), r.text
        assert all(isinstance(e["field"], str) and e["message"] for e in errors), r.text
    assert refused[3].json()["errors"][0]["field"] == "limt"
    assert refused[8].json()["errors"][0]["field"] == "limit"
    # A parameter or a body field is named as the client wrote it, whichever check
    # refused it (an outside audit saw query.limit, path.doc_id and request).
    assert refused[7].json()["errors"][0]["field"] == "name"
    for params, field in (
        ({"limit": 0}, "limit"),
        ({"threshold": 1.5}, "threshold"),
        ({"measure": "cosine"}, "measure"),
        ({"evidence": "true"}, "evidence"),
    ):
        r = client.get("/similar/a", params=params)
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == field, r.text
    # ... unless a body field of the same name is refused with it: each keeps its place.
    r = client.post("/documents?similar=true&threshold=7", json={"text": "a b c", "threshold": 1})
    assert {e["field"] for e in r.json()["errors"]} == {"query.threshold", "body.threshold"}, r.text
    assert client.get("/similar/a?limit=10").status_code == 200
    schema = client.get("/openapi.json").json()
    shapes = schema["components"]["schemas"]
    assert {"errors", "ids"} <= set(shapes["Problem"]["properties"])
    words = shapes["CollectionIn"]["properties"]["passage_words"]
    assert words["not"] == {"enum": [1, 2]}
    assert shapes["FilterIn"]["properties"]["metadata"]["minProperties"] == 1
    assert shapes["CollectionIn"]["properties"]["fingerprint_bits"]["enum"] == [24, 32]
    bits = client.post("/collections", json={"name": "bits", "fingerprint_bits": 16})
    assert bits.status_code == 422 and bits.json()["errors"][0]["field"] == "fingerprint_bits"
    body = {"name": "b2", "fingerprint_bits": 16, "shingle": "words:3"}
    two = client.post("/collections", json=body)
    assert {e["field"] for e in two.json()["errors"]} == {"fingerprint_bits", "shingle"}


def test_a_refusal_of_one_field_names_that_field(client: TestClient) -> None:
    """A refusal that concerns one field names it, in a batch with its item's place, even
    where a check across fields made it (an audit saw body and request named instead)."""
    cases = [
        ("post", "/documents", {"text": "a b", "expires_at": "2030-01-01T00:00:00"}, "expires_at"),
        ("post", "/documents", {"text": "a b", "expires_at": "2001-01-01T00:00:00Z"}, "expires_at"),
        ("post", "/documents/batch",
         {"documents": [{"id": "a", "text": "x y"},
                        {"id": "b", "text": "a b", "expires_at": "2001-01-01T00:00:00Z"}]},
         "documents.1.expires_at"),
        ("post", "/similar", {"text": "<p>hi there</p>", "content_type": "text/html", "site": " "},
         "site"),
        ("post", "/similar", {"text": "a b c", "site": "example.org"}, "site"),
        ("post", "/similar", {"text": "a b c", "evidence": True}, "evidence"),
        ("post", "/similar", {"text": "a b c", "exclude": {"quotes": True}}, "exclude"),
        ("put", "/documents/k", {"data": "!!!", "content_type": "application/pdf"}, "data"),
    ]  # fmt: skip
    for method, path, body, field in cases:
        r = getattr(client, method)(path, json=body)
        assert r.status_code == 422, r.text
        assert [e["field"] for e in r.json()["errors"]] == [field], (body, r.text)
    pdf_body = {
        "data": base64.b64encode(b"hello, not a pdf").decode(),
        "content_type": "application/pdf",
    }
    unread = client.put("/documents/k", json=pdf_body)  # read, then refused: still data
    assert unread.status_code == 422 and unread.json()["errors"][0]["field"] == "data", unread.text
    r = client.get("/similar/k", params={"filter": "notjson"})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "filter", r.text
    both = client.post(
        "/documents", json={"text": "a b", "ttl": 5, "expires_at": "2030-01-01T00:00:00Z"}
    )
    assert [e["field"] for e in both.json()["errors"]] == ["body"]  # two fields: the body


def test_a_path_without_its_id_says_to_add_one(client: TestClient) -> None:
    """PUT /documents/ and GET /similar/ (the id left out) are 404s that say where the id
    goes and what it may be, not a bare "Not Found"; other unknown paths stay 404."""
    for r in (
        client.put("/documents/", json={"text": "a b c d"}),
        client.get("/similar/"),
        client.get("/collections/default/documents/"),
    ):
        assert r.status_code == 404, r.text
        assert "id after the slash" in r.json()["detail"] and "512 bytes" in r.json()["detail"]
    for elsewhere in ("/nowhere/", "/nowhere/documents/", "/docs/similar/"):
        other = client.get(elsewhere)
        assert other.status_code == 404 and "id after" not in other.json()["detail"], elsewhere
    posted = client.post("/similar/", json={"text": "a b c d"})
    assert posted.status_code == 404 and "POST to /similar" in posted.json()["detail"]
