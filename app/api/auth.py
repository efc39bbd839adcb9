"""Which requests need an API key, and the answers to those without a good one.

When any key is set, every request except GET /healthz, the report page's
own files (GET /ui/...) and the docs (/docs, /redoc, their assets and
/openapi.json, which describe the API and hold no data; a browser opening them
sends no key) needs ``Authorization: Bearer <key>``; /metrics too (curl, a
Prometheus scrape config and a Kubernetes probe can all send the header).
A missing or unknown key gets 401 with ``WWW-Authenticate: Bearer``; a read
key on a route that changes documents gets 403, and so does a key limited to
collections (app.core.keys) on a route of another one.

The check is ASGI middleware (app.api.edge), not a route dependency, so a route
added later is protected without anyone remembering to ask for it.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from starlette.types import Send

from app.api.openapi import is_doc_path
from app.api.problems import extend_openapi, problem_doc, send_problem
from app.core.keys import KeyRing
from app.core.settings import Settings

# Requests anyone may make, keys or not.
PUBLIC = frozenset({("GET", "/healthz"), ("HEAD", "/healthz")})
# The report page's own files (app.api.routes.ui) load without a key; the page then
# asks for one and sends it with every API request it makes.
PAGE = "/ui"
# Methods that never change documents; POST /similar is a query too.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_POSTS = frozenset({"/similar"})
# Stored checks (app.api.routes.checks) are a reader's own reports, not documents: a read
# key makes, reads and deletes them; its id (128 random bits) is what reaches one. So the
# list of every check (GET /checks: each id, and whose text it was) needs a write key,
# or any reader could read and delete every other reader's checks.
CHECKS = "/checks"
REALM = 'Bearer realm="neardup"'
COLLECTIONS = "/collections/"


def keyring(settings: Settings) -> KeyRing:
    """The keys the settings name (NEARDUP_API_KEYS and NEARDUP_API_KEYS_FILE)."""
    spec = settings.api_keys.get_secret_value() if settings.api_keys is not None else None
    return KeyRing.load(spec, settings.api_keys_file)


def needs_write(method: str, path: str) -> bool:
    """Whether a request may change documents: anything but a read method or a query
    (in the default collection or under /collections/{name})."""
    rest = collection_of(path)[1]
    if rest == CHECKS and method in ("GET", "HEAD"):
        return True  # the list of every reader's checks (OPTIONS lists nothing)
    if rest == CHECKS or rest.startswith(CHECKS + "/"):
        return False
    return method not in READ_METHODS and rest not in READ_POSTS


def collection_of(path: str) -> tuple[str | None, str]:
    """The collection a path names (None: the default one) and the path without it;
    /collections and /collections/{name} name a collection too."""
    if not path.startswith(COLLECTIONS):
        return None, path
    name, _, rest = path[len(COLLECTIONS) :].partition("/")
    return name or None, "/" + rest if rest else ""


def _bearer(authorization: bytes | None) -> bytes | None:
    """The token of an ``Authorization: Bearer <token>`` header value."""
    if authorization is None:
        return None
    kind, _, token = authorization.partition(b" ")
    token = token.strip()
    if kind.lower() == b"bearer" and token:
        return token
    return None


# A refusal: status, title, detail, WWW-Authenticate challenge.
Refusal = tuple[int, str, str, str]
_NO_KEY: Refusal = (401, "Unauthorized", "send an API key as 'Authorization: Bearer <key>'", REALM)
_BAD_KEY: Refusal = (
    401,
    "Unauthorized",
    "the API key is not valid",
    f'{REALM}, error="invalid_token"',
)
_READ_ONLY: Refusal = (
    403,
    "Forbidden",
    "this API key may only read; writing needs a key with scope write",
    f'{REALM}, error="insufficient_scope", scope="write"',
)


_LISTING: Refusal = (
    403,
    "Forbidden",
    "listing every stored check needs a key with scope write (a read key reaches the "
    "checks whose ids it was given)",
    f'{REALM}, error="insufficient_scope", scope="write"',
)


def _outside(names: frozenset[str], method: str, path: str, default: str) -> Refusal | None:
    """Why a key limited to these collections may not use path (None: it may). A path
    without the /collections/{name} prefix is a request to the default collection.
    Deleting a collection takes every document and check of it, which the key's other
    users rely on, and the key could not make it again: it needs an unlimited key, as
    listing and making collections do."""
    name, rest = collection_of(path)
    listed = ", ".join(sorted(names))
    if name is None and path in ("/collections", "/collections/"):
        detail = f"this API key is limited to the collections {listed}; listing and making "
        detail += "collections needs a key of every collection"
    elif name is not None and rest in ("", "/") and method == "DELETE":
        detail = f"this API key is limited to the collections {listed}; deleting a "
        detail += "collection needs a key of every collection"
    elif (name or default) not in names:
        detail = f"this API key is limited to the collections {listed}, not {name or default!r}"
        if name is None:
            detail += " (the routes without /collections/{name} are that collection's)"
    else:
        return None
    return 403, "Forbidden", detail, f'{REALM}, error="insufficient_scope"'


def refusal(
    keys: KeyRing,
    method: str,
    path: str,
    authorization: bytes | None,
    default: str = "default",
) -> Refusal | None:
    """Why a request may not go on (None: it may), given its first Authorization header.

    Without keys every request may; with keys every one but the public ones needs a
    valid key, one of scope write to write, and one limited to collections may only
    reach those (default: the collection of the routes without a prefix). Checked by
    app.api.edge, an ASGI middleware, before anything of the body is read.
    """
    if not keys.entries or (method, path) in PUBLIC:
        return None
    if method in ("GET", "HEAD") and (path == PAGE or path.startswith(PAGE + "/")):
        return None
    if method in ("GET", "HEAD") and is_doc_path(path):
        return None  # the docs describe the API and hold no data; a browser sends no key
    token = _bearer(authorization)
    if token is None:
        return _NO_KEY
    granted = keys.grant_of(token)
    if granted is None:
        return _BAD_KEY
    if granted.collections is not None:
        outside = _outside(granted.collections, method, path, default)
        if outside is not None:
            return outside
    if granted.scope != "write" and needs_write(method, path):
        return _LISTING if method in READ_METHODS else _READ_ONLY
    return None


async def refuse(send: Send, refused: Refusal) -> None:
    """Send a refusal as problem+json with its WWW-Authenticate challenge."""
    status, title, detail, challenge = refused
    await send_problem(send, status, title, detail, [(b"www-authenticate", challenge.encode())])


def _document_limited(schema: dict[str, Any]) -> None:
    """With keys limited to collections, any operation can be a 403."""
    for ops in schema.get("paths", {}).values():
        for op in ops.values():
            if isinstance(op, dict) and "security" in op:
                doc = problem_doc("the API key may only read, or not this collection")
                op.setdefault("responses", {})["403"] = doc


def _document(schema: dict[str, Any]) -> None:
    """Declare the bearer scheme, and the 401 and 403 answers, in the OpenAPI schema."""
    schema.setdefault("components", {}).setdefault("securitySchemes", {})["apiKey"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "an API key from NEARDUP_API_KEYS or NEARDUP_API_KEYS_FILE",
    }
    for path, ops in schema.get("paths", {}).items():
        for method, op in ops.items():
            if (method.upper(), path) in PUBLIC or not isinstance(op, dict):
                continue
            op["security"] = [{"apiKey": []}]
            responses = op.setdefault("responses", {})
            responses.setdefault("401", problem_doc("no API key, or an unknown one"))
            if needs_write(method.upper(), path):
                responses.setdefault("403", problem_doc("the API key may only read"))


def install(app: FastAPI, settings: Settings) -> KeyRing:
    """The keys the settings name; when there are any, the schema says they are needed.

    The keys are checked by app.api.edge, the middleware the app is built with.
    """
    keys = keyring(settings)
    if keys:
        extend_openapi(app, _document)
        if any(g.collections is not None for _, g in keys.entries):
            extend_openapi(app, _document_limited)  # runs after _document
    return keys
