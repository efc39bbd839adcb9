"""API keys: parsing the configured keys and telling a presented key's scope.

Keys come from NEARDUP_API_KEYS, a comma-separated list of ``key:scope``
entries, and/or NEARDUP_API_KEYS_FILE, a file with one ``key scope`` per line
(blank lines and lines starting with ``#`` are ignored). A scope is ``read``
(may query) or ``write`` (may also ingest and delete). A key may be limited to
collections: ``key:scope:name,name`` (the names after a key's scope run to the
next ``key:scope`` entry) or ``key scope name,name`` in the file. A key is at least 16
characters of the bearer-token alphabet (letters, digits and ``-._~+/``, then
optional ``=`` padding), e.g. ``python -c 'import secrets; print(secrets.token_urlsafe(32))'``.

Where keys are needed is app.api.auth's business. Only SHA-256 digests of
the keys are kept in memory, every digest is compared with
hmac.compare_digest (no early exit, so timing does not tell which key or how
much of it matched), and no error message or log line ever includes a key.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from app.core.names import COLLECTION_RULE, valid_collection

SCOPES = ("read", "write")
MIN_KEY_CHARS = 16
# RFC 6750 b64token: what may follow "Bearer " in an Authorization header.
_TOKEN = re.compile(r"[A-Za-z0-9._~+/-]+=*")


class ApiKeyError(ValueError):
    """A key list that cannot be used; the message never contains a key."""


@dataclass(frozen=True)
class Grant:
    """What a key may do: its scope, and the collections it is limited to (None: all)."""

    scope: str
    collections: frozenset[str] | None = None

    def allows(self, collection: str) -> bool:
        return self.collections is None or collection in self.collections


def _names(names: Iterable[str], where: str) -> frozenset[str]:
    found = frozenset(n.strip() for n in names if n.strip())
    for name in found:
        if not valid_collection(name):
            raise ApiKeyError(f"{where}: a collection name is {COLLECTION_RULE}")
    if not found:
        raise ApiKeyError(f"{where}: name at least one collection after the scope")
    return found


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


def _collect(entries: Iterable[tuple[str, Grant]]) -> dict[str, Grant]:
    keys: dict[str, Grant] = {}
    for n, (key, grant) in enumerate(entries, 1):
        if keys.get(key, grant) != grant:
            raise ApiKeyError(f"entry {n}: the same key is listed with two scopes")
        keys[key] = grant
    return keys


def parse_keys(spec: str) -> dict[str, Grant]:
    """NEARDUP_API_KEYS, ``key:scope[:name,name...],key:scope``, as {key: Grant}."""
    # An item without ':' continues the collection list of the entry before it.
    entries: list[tuple[str, str, list[str] | None, str]] = []
    for n, item in enumerate(spec.split(","), 1):
        item = item.strip()
        if not item:
            continue
        parts = item.split(":")
        if len(parts) == 1 and entries and entries[-1][2] is not None:
            entries[-1][2].append(item)
            continue
        if len(parts) not in (2, 3):
            raise ApiKeyError(
                f"entry {n}: write each entry as key:scope (scope read or write), or "
                "key:scope:collection,... to limit the key to collections"
            )
        names = [parts[2]] if len(parts) == 3 else None
        entries.append((parts[0].strip(), parts[1].strip(), names, f"entry {n}"))
    pairs = []
    for key, scope, names, where in entries:
        key, scope = _entry(key, scope, where)
        limited = None if names is None else _names(names, where)
        pairs.append((key, Grant(scope, limited)))
    return _collect(pairs)


def read_key_file(path: Path) -> dict[str, Grant]:
    """NEARDUP_API_KEYS_FILE, one ``key scope [name,name...]`` per line, as {key: Grant}."""
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
        if len(parts) not in (2, 3):
            raise ApiKeyError(
                f"{path} line {n}: write 'key scope' (scope read or write), or "
                "'key scope collection,...'"
            )
        where = f"{path} line {n}"
        key, scope = _entry(parts[0], parts[1], where)
        limited = _names(parts[2].split(","), where) if len(parts) == 3 else None
        pairs.append((key, Grant(scope, limited)))
    return _collect(pairs)


def load_keys(spec: str | None, path: Path | None) -> dict[str, Grant]:
    """The keys of NEARDUP_API_KEYS (spec) and NEARDUP_API_KEYS_FILE (path) together, as
    {key: Grant}; a key in both with different grants is an ApiKeyError."""
    keys: dict[str, Grant] = {}
    if spec is not None:
        keys.update(parse_keys(spec))
    if path is not None:
        for key, grant in read_key_file(path).items():
            if keys.get(key, grant) != grant:
                raise ApiKeyError(
                    "a key is in both NEARDUP_API_KEYS and NEARDUP_API_KEYS_FILE with "
                    "different grants (scope or collections): give it once, or the same"
                )
            keys[key] = grant
    return keys


def _digest(token: bytes) -> bytes:
    return hashlib.sha256(token).digest()


@dataclass(frozen=True)
class KeyRing:
    """The digests of the configured keys, each with its scope."""

    entries: tuple[tuple[bytes, Grant], ...]

    @classmethod
    def of(cls, keys: Mapping[str, Grant | str]) -> KeyRing:
        """The ring of {key: Grant, or a scope for a key of every collection}."""
        grants = {k: g if isinstance(g, Grant) else Grant(g) for k, g in keys.items()}
        return cls(tuple((_digest(k.encode()), g) for k, g in grants.items()))

    @classmethod
    def load(cls, spec: str | None, path: Path | None) -> KeyRing:
        """The keys of NEARDUP_API_KEYS (spec) and NEARDUP_API_KEYS_FILE (path) together."""
        return cls.of(load_keys(spec, path))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def __repr__(self) -> str:  # never the digests either
        return f"KeyRing({len(self.entries)} keys)"

    def counts(self) -> dict[str, int]:
        return {s: sum(g.scope == s for _, g in self.entries) for s in SCOPES}

    def grant_of(self, token: bytes) -> Grant | None:
        """What a presented key may do, None if it is not one of ours.

        Every configured key is compared, whatever matched before, each in
        constant time over fixed-length digests.
        """
        presented = _digest(token)
        found = None
        for digest, grant in self.entries:
            if hmac.compare_digest(presented, digest):
                found = grant
        return found
