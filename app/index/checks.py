"""Checks kept as resources: a containment check's text and answer, stored to be read
again (a report link), until they expire.

A check is one key in its collection (app.store: `c:{id}`), holding the zlib-
compressed JSON of the text, the answer, when it was made and expires, and the
digest of each result's record as it was then, so a later read can say which
sources changed or were deleted since. Redis removes it when its TTL runs out, so
no sweep is needed and an expired check is never read. Its id is 128 random bits:
a link is the only way to it.
"""

from __future__ import annotations

import re
import secrets
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from app.index import texts
from app.index.expiry import live

if TYPE_CHECKING:
    from app.index.index import Index

ID_BYTES = 16  # 128 bits
_ID = re.compile(r"[0-9a-f]{32}")
LEVEL = 6


@dataclass(frozen=True)
class Check:
    """A stored check as read back."""

    id: str
    text: str
    answer: dict[str, Any]
    created_ms: int
    expires_ms: int
    # Sources of the answer whose record changed or which were deleted since.
    changed: list[str]


def new_id() -> str:
    """An unguessable check id: 128 random bits as 32 lowercase hex digits."""
    return secrets.token_hex(ID_BYTES)


def valid_id(check_id: str) -> bool:
    """Whether a string is a check id at all (a path that is not one is simply a 404)."""
    return _ID.fullmatch(check_id) is not None


async def _digests(index: Index, ids: list[str]) -> dict[str, str | None]:
    """Each id's live record digest (hex), None for a deleted document."""
    out: dict[str, str | None] = {}
    for doc_id in ids:
        (raw,) = live([(await index.store.stored(doc_id))[1]])  # an expired one is gone
        out[doc_id] = None if raw is None else texts.digest(raw).hex()
    return out


async def create(index: Index, text: str, answer: dict[str, Any], ttl: int) -> Check:
    """Store a check's text and answer for ttl seconds."""
    now = time.time_ns() // 1_000_000
    check_id = new_id()
    sources = [r["id"] for r in answer.get("results", [])]
    body = {
        "text": text,
        "answer": answer,
        "created_ms": now,
        "expires_ms": now + 1000 * ttl,
        "sources": await _digests(index, sources),
    }
    raw = zlib.compress(orjson.dumps(body), LEVEL)
    await index.store.put_check(check_id, raw, 1000 * ttl)
    return Check(check_id, text, answer, now, now + 1000 * ttl, [])


async def read(index: Index, check_id: str) -> Check | None:
    """A stored check, with the sources changed since; None when unknown or expired."""
    if not valid_id(check_id):
        return None
    raw = await index.store.check(check_id)
    if raw is None:
        return None
    body = orjson.loads(zlib.decompress(raw))
    then: dict[str, str | None] = body["sources"]
    now = await _digests(index, list(then))
    changed = [doc_id for doc_id, digest in then.items() if now[doc_id] != digest]
    return Check(
        check_id, body["text"], body["answer"], body["created_ms"], body["expires_ms"], changed
    )


async def delete(index: Index, check_id: str) -> bool:
    """Remove a stored check; False when there was none."""
    return valid_id(check_id) and await index.store.delete_check(check_id)
