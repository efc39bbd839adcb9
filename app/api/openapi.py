"""The schema clients are generated from, and the docs pages served from packaged assets.

Operation ids are named here, one per route, so a generated client has methods
such as ``find_similar`` rather than FastAPI's ``similar_to_stored_similar__doc_id__get``,
and they stay the same when a handler is renamed. Swagger UI and ReDoc come from
the fastapi-offline package's files (Swagger UI: Apache-2.0, ReDoc: MIT), served
under /docs-assets, so /docs and /redoc work on a machine without internet.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"
# Pages and files that describe the API and hold no data: public, keys or not.
DOC_PATHS = frozenset({"/docs", "/redoc", "/openapi.json"})

OPERATION_IDS = {
    ("POST", "/documents"): "ingest_document",
    ("POST", "/documents/batch"): "ingest_batch",
    ("PUT", "/documents/{doc_id}"): "upsert_document",
    ("GET", "/documents/{doc_id}"): "get_document",
    ("DELETE", "/documents/{doc_id}"): "delete_document",
    ("POST", "/documents/delete"): "delete_documents",
    ("GET", "/similar/{doc_id}"): "find_similar",
    ("POST", "/similar"): "find_similar_to_text",
    ("POST", "/checks"): "create_check",
    ("GET", "/checks"): "list_checks",
    ("GET", "/checks/{check_id}"): "get_check",
    ("DELETE", "/checks/{check_id}"): "delete_check",
    ("DELETE", "/sites/{site}/template"): "forget_site_template",
    ("GET", "/duplicates"): "list_duplicate_pairs",
    ("GET", "/duplicates/groups"): "list_duplicate_groups",
    ("GET", "/export"): "export_documents",
    ("POST", "/import"): "import_documents",
    ("GET", "/healthz"): "check_health",
    ("GET", "/readyz"): "check_ready",
    ("GET", "/metrics"): "get_metrics",
    ("GET", "/collection"): "describe_collection",
    ("POST", "/collections"): "create_collection",
    ("GET", "/collections"): "list_collections",
    ("GET", "/collections/{collection}"): "get_collection",
    ("DELETE", "/collections/{collection}"): "delete_collection",
}
# The routes under this prefix (app.api.deps.COLLECTION_PREFIX) are named after their
# unprefixed twins: find_similar -> find_similar_in_collection.
PREFIX = "/collections/{collection}"


def name_operations(schema: dict[str, Any]) -> None:
    """Set each operation's id from OPERATION_IDS (tests/test_openapi.py fails for a
    route missing there, which keeps FastAPI's generated id meanwhile)."""
    for path, ops in schema.get("paths", {}).items():
        for method, op in ops.items():
            key = (method.upper(), path)
            if key not in OPERATION_IDS and path.startswith(PREFIX + "/"):
                twin = OPERATION_IDS.get((method.upper(), path[len(PREFIX) :]))
                if twin is not None:
                    op["operationId"] = f"{twin}_in_collection"
                    continue
            op["operationId"] = OPERATION_IDS.get(key, op["operationId"])


def is_doc_path(path: str) -> bool:
    """Whether a path is a docs page, the schema, or a docs asset."""
    return path in DOC_PATHS or path.startswith(ASSETS + "/")


def _assets() -> str:
    return str(files("fastapi_offline") / "static")


# The docs pages run calls with the key a user types in: no other site may frame them
# (and trick a click on "Try it out"). Their inline scripts rule out a stricter policy.
DOC_HEADERS = {
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def install_docs(app: FastAPI) -> None:
    """Serve /docs (Swagger UI) and /redoc from the packaged assets, nothing from a CDN."""
    app.mount(ASSETS, StaticFiles(directory=_assets()), name="docs-assets")
    favicon = f"{ASSETS}/favicon.png"

    async def swagger(_: Request) -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=favicon,
            # The key stays in the tab's memory, not in localStorage, where it would
            # outlive the tab on the report page's origin.
            swagger_ui_parameters={"persistAuthorization": False},
        )
        page.headers.update(DOC_HEADERS)
        return page

    async def redoc(_: Request) -> HTMLResponse:
        page = get_redoc_html(
            openapi_url="/openapi.json",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=favicon,
            with_google_fonts=False,
        )
        page.headers.update(DOC_HEADERS)
        return page

    app.add_route("/docs", swagger, include_in_schema=False)
    app.add_route("/redoc", redoc, include_in_schema=False)


# Where a document's id can be read once an operation has stored it: from the answer's
# body (POST makes the id) or from the request's path (PUT names it).
DOCUMENT_SOURCES = {
    "ingest_document": "$response.body#/id",
    "upsert_document": "$request.path.doc_id",
}
DOCUMENT_TARGETS = ("get_document", "delete_document", "find_similar")


def _link_name(operation_id: str) -> str:
    return "".join(part.capitalize() for part in operation_id.split("_"))


def add_links(schema: dict[str, Any]) -> None:
    """OpenAPI links: from a stored document to its reads, delete and similar search, and
    from a new collection to its routes, so a client (or a stateful fuzzer) can follow a
    write to what it made instead of guessing ids that do not exist."""
    ops = {
        op["operationId"]: (path, op)
        for path, methods in schema.get("paths", {}).items()
        for op in methods.values()
    }

    def attach(source: str, links: dict[str, Any]) -> None:
        if source not in ops:
            return
        for status in ("200", "201"):
            answer = ops[source][1].get("responses", {}).get(status)
            if answer is not None:
                answer.setdefault("links", {}).update(links)

    for suffix, scope in (("", {}), ("_in_collection", {"collection": "$request.path.collection"})):
        for source, doc_id in DOCUMENT_SOURCES.items():
            links = {
                _link_name(target): {
                    "operationId": target + suffix,
                    "parameters": {"doc_id": doc_id, **scope},
                }
                for target in DOCUMENT_TARGETS
                if target + suffix in ops
            }
            attach(source + suffix, links)
    # A new collection: every route of it that needs no more than its name.
    named = {
        op_id: {"operationId": op_id, "parameters": {"collection": "$response.body#/name"}}
        for op_id, (path, _) in ops.items()
        if path.startswith(PREFIX) and "{doc_id}" not in path
    }
    attach("create_collection", {_link_name(op_id): link for op_id, link in named.items()})


def document(schema: dict[str, Any]) -> None:
    """Operation ids, links, and an example on every JSON request body that has none of
    its own."""
    name_operations(schema)
    add_links(schema)
    for ops in schema.get("paths", {}).values():
        for op in ops.values():
            content = op.get("requestBody", {}).get("content", {}).get("application/json")
            if content is None or "example" in content or "examples" in content:
                continue
            ref = content.get("schema", {}).get("$ref", "")
            example = BODY_EXAMPLES.get(ref.rsplit("/", 1)[-1])
            if example is not None:
                content["example"] = example


BODY_EXAMPLES: dict[str, Any] = {
    "DocumentIn": {
        "id": "https://example.com/a",
        "text": "The quick brown fox jumps over the lazy dog by the river",
        "metadata": {"host": "example.com", "lang": "en"},
    },
    "DocumentPut": {
        "text": "The quick brown fox jumps over the lazy dog by the river bank",
        "metadata": {"host": "example.com"},
    },
    "BatchIn": {
        "documents": [
            {"id": "a", "text": "The quick brown fox jumps over the lazy dog"},
            {"id": "b", "text": "A quick brown fox jumps over the lazy dog", "metadata": {"n": 2}},
        ]
    },
    "SimilarIn": {
        "text": "the quick brown fox jumps over the lazy dog by the river",
        "threshold": 0.5,
        "limit": 10,
        "filter": {"metadata": {"host": "example.com"}},
    },
    "CheckIn": {
        "text": "the essay to check, as submitted: its passages found in stored documents",
        "ttl": 604800,
    },
    "CollectionIn": {"name": "mirrors", "shingle": "word:3", "threshold": 0.8},
    "ImportIn": {
        "header": {
            "format": "neardup-export",
            "version": 1,
            "params": {"shingle": "word:3", "num_perm": 128, "fingerprint_size": 256},
        },
        "documents": [
            {
                "id": "a",
                "metadata": {"lang": "en"},
                "shingles": 10,
                "fingerprint": "base64 of little-endian u32 values",
                "bands": "base64 of little-endian u64 values",
                "passages": "base64 of the passage layout",
            }
        ],
    },
}
