"""API keys: who may call the service and what each caller may do.

Keys come from NEARDUP_API_KEYS, a comma-separated list of ``key:scope``
entries, and/or NEARDUP_API_KEYS_FILE, a file with one ``key scope`` per line
(blank lines and lines starting with ``#`` are ignored). A scope is ``read``
(may query) or ``write`` (may also ingest and delete). A key is at least 16
characters of the bearer-token alphabet (letters, digits and ``-._~+/``, then
optional ``=`` padding), e.g. ``python -c 'import secrets; print(secrets.token_urlsafe(32))'``.

When any key is set, every request except GET /healthz needs
``Authorization: Bearer <key>``; /docs, /openapi.json and /metrics too, so
that nothing about a deployment is told to a caller without a key (curl, a
Prometheus scrape config and a Kubernetes probe can all send the header).
A missing or unknown key gets 401 with ``WWW-Authenticate: Bearer``; a read
key on a route that changes documents gets 403.

The check is ASGI middleware (app.api.edge), not a route dependency, so a route added later
is protected without anyone remembering to ask for it. Only SHA-256 digests of
the keys are kept in memory, every digest is compared with
hmac.compare_digest (no early exit, so timing does not tell which key or how
much of it matched), and no error message or log line ever includes a key.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from starlette.types import Send

if TYPE_CHECKING:
    from fastapi import FastAPI

    from app.config import Settings

SCOPES = ("read", "write")
MIN_KEY_CHARS = 16
# RFC 6750 b64token: what may follow "Bearer " in an Authorization header.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")
# Requests anyone may make, keys or not.
PUBLIC = frozenset({("GET", "/healthz"), ("HEAD", "/healthz")})
# Methods that never change documents; POST /similar is a query too.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_POSTS = frozenset({"/similar"})
REALM = 'Bearer realm="neardup"'
PROBLEM = "application/problem+json"


class ApiKeyError(ValueError):
    """A key list that cannot be used; the message never contains a key."""


def _entry(key: str, scope: str, where: str) -> tuple[str, str]:
    if not key:
        raise ApiKeyError(f"{where}: empty key; write each entry as key:scope")
    if not _TOKEN.fullmatch(key):
        raise ApiKeyError(
            f"{where}: a key may hold only letters, digits and -._~+/ (then '=' padding)"
        )
    if len(key) < MIN_KEY_CHARS:
        raise ApiKeyError(
            f"{where}: key shorter than {MIN_KEY_CHARS} characters; make one with "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    if scope not in SCOPES:
        raise ApiKeyError(f"{where}: scope must be 'read' or 'write'")
    return key, scope


def _collect(entries: Iterable[tuple[str, str]]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for n, (key, scope) in enumerate(entries, 1):
        if keys.get(key, scope) != scope:
            raise ApiKeyError(f"entry {n}: the same key is listed with two scopes")
        keys[key] = scope
    return keys


def parse_keys(spec: str) -> dict[str, str]:
    """NEARDUP_API_KEYS, ``key:scope,key:scope``, as {key: scope}."""
    pairs = []
    for n, item in enumerate(spec.split(","), 1):
        item = item.strip()
        if not item:
            continue
        key, sep, scope = item.rpartition(":")
        if not sep:
            raise ApiKeyError(f"entry {n}: write each entry as key:scope (scope read or write)")
        pairs.append(_entry(key.strip(), scope.strip(), f"entry {n}"))
    return _collect(pairs)


def read_key_file(path: Path) -> dict[str, str]:
    """NEARDUP_API_KEYS_FILE, one ``key scope`` per line, as {key: scope}."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ApiKeyError(f"cannot read {path}: {exc.__class__.__name__}") from None
    pairs = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ApiKeyError(f"{path} line {n}: write 'key scope' (scope read or write)")
        pairs.append(_entry(parts[0], parts[1], f"{path} line {n}"))
    return _collect(pairs)


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


@dataclass(frozen=True)
class KeyRing:
    """The digests of the configured keys, each with its scope."""

    entries: tuple[tuple[bytes, str], ...]

    @classmethod
    def of(cls, keys: dict[str, str]) -> KeyRing:
        return cls(tuple((_digest(k.encode()), s) for k, s in keys.items()))

    @classmethod
    def from_settings(cls, settings: Settings) -> KeyRing:
        keys: dict[str, str] = {}
        if settings.api_keys is not None:
            keys.update(parse_keys(settings.api_keys.get_secret_value()))
        if settings.api_keys_file is not None:
            for key, scope in read_key_file(settings.api_keys_file).items():
                if keys.get(key, scope) != scope:
                    raise ApiKeyError("a key is listed with two scopes in the two sources")
                keys[key] = scope
        return cls.of(keys)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __repr__(self) -> str:  # never the digests either
        return f"KeyRing({len(self.entries)} keys)"

    def counts(self) -> dict[str, int]:
        return {s: sum(scope == s for _, scope in self.entries) for s in SCOPES}

    def scope_of(self, token: bytes) -> str | None:
        """The scope of a presented key, None if it is not one of ours.

        Every configured key is compared, whatever matched before, each in
        constant time over fixed-length digests.
        """
        presented = _digest(token)
        found = None
        for digest, scope in self.entries:
            if hmac.compare_digest(presented, digest):
                found = scope
        return found


def needs_write(method: str, path: str) -> bool:
    """Whether a request may change documents: anything but a read method or a query."""
    return method not in READ_METHODS and path not in READ_POSTS


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


def refusal(keys: KeyRing, method: str, path: str, authorization: bytes | None) -> Refusal | None:
    """Why a request may not go on (None: it may), given its first Authorization header.

    Without keys every request may; with keys every one but the public ones needs a
    valid key, and one of scope write to write. Checked by app.api.edge, an ASGI
    middleware, before anything of the body is read.
    """
    if not keys.entries or (method, path) in PUBLIC:
        return None
    token = _bearer(authorization)
    if token is None:
        return _NO_KEY
    granted = keys.scope_of(token)
    if granted is None:
        return _BAD_KEY
    if granted != "write" and needs_write(method, path):
        return _READ_ONLY
    return None


async def refuse(send: Send, status: int, title: str, detail: str, challenge: str) -> None:
    """Send a refusal as problem+json with its WWW-Authenticate challenge."""
    body = orjson.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM.encode()),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _document(schema: dict[str, Any], problem_doc: Callable[[str], dict]) -> None:
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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def bind_policy(host: str, port: int, insecure: bool, keys: KeyRing) -> tuple[bool, str]:
    """Whether `neardup serve` may listen on host, and the line it says at start-up.

    Without keys only loopback is allowed unless --insecure is given.
    """
    where = f"http://{host}:{port}"
    if keys:
        n = keys.counts()
        return True, (
            f"neardup: listening on {where}; every route but /healthz needs an API key "
            f"({n['write']} write, {n['read']} read)"
        )
    if is_loopback(host):
        return True, (
            f"neardup: no API keys set, so listening on {where} only (this machine); "
            "to serve other machines set NEARDUP_API_KEYS or NEARDUP_API_KEYS_FILE "
            "and pass --host"
        )
    if insecure:
        return True, (
            f"neardup: WARNING: listening on {where} without API keys (--insecure): "
            "anyone who can reach it may read, change and delete every document"
        )
    return False, (
        f"neardup: refusing to listen on {host} without API keys: anyone who can reach it "
        "could read, change and delete every document. Set NEARDUP_API_KEYS "
        "(key:scope,...) or NEARDUP_API_KEYS_FILE, or pass --insecure to serve without keys"
    )


def install(app: FastAPI, settings: Settings) -> KeyRing:
    """The keys the settings name; when there are any, the schema says they are needed.

    The keys are checked by app.api.edge, the middleware the app is built with.
    """
    from app.api.errors import extend_openapi, problem_doc

    keys = KeyRing.from_settings(settings)
    if keys:
        extend_openapi(app, lambda schema: _document(schema, problem_doc))
    return keys
