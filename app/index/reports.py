"""Stored checks: a checked text and its answer, kept as a report with an unguessable id.

A stored check is the text that was checked, the answer it got (as the API shaped it;
opaque here), when it was made and when it expires, and the version of every source
in the answer at the time: the digest of the source's record (app.index.texts.digest),
which changes with any rewrite of its text or metadata. Reading a check back compares
those with the sources' records now, so a report can say which sources changed or were
deleted since, while showing the check exactly as it was.

Stored as zlib(JSON) in one key per check (app.store.checks) that Redis expires, and
listed, newest first, with a summary of each (what a list of checks shows without reading
every text) until it expires or is deleted. Checks made before the list (2026-11-28)
are not in it.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from app.index import expiry, records
from app.index.texts import LEVEL, digest
from app.store.checks import CheckStore

if TYPE_CHECKING:
    from app.index.index import Index

# 16 random bytes (128 bits) in URL-safe base64 without padding: 22 characters.
ID_BYTES = 16
_ID = re.compile(r"[A-Za-z0-9_-]{22}")
# Texts larger than this are compressed in a worker thread, off the event loop.
THREAD_BYTES = 256 * 1024
FORMAT = 1


def new_id() -> str:
    """A fresh check id: 128 bits from the OS's CSPRNG."""
    return secrets.token_urlsafe(ID_BYTES)


def is_id(value: str) -> bool:
    """Whether value has the shape of a check id (anything else names no check)."""
    return _ID.fullmatch(value) is not None


@dataclass(frozen=True)
class SavedCheck:
    """A stored check. sources: source id -> its record's digest (hex) when checked."""

    id: str
    created_ms: int
    expires_ms: int
    text: str
    answer: dict[str, Any]
    sources: dict[str, str]
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True)
class Change:
    """A source of a stored check that is not as it was: 'changed' or 'deleted'."""

    id: str
    change: str


def pack(saved: SavedCheck) -> bytes:
    """The stored form of a check."""
    body = {
        "format": FORMAT,
        "created_ms": saved.created_ms,
        "expires_ms": saved.expires_ms,
        "text": saved.text,
        "answer": saved.answer,
        "sources": saved.sources,
        "metadata": saved.metadata,
    }
    return zlib.compress(orjson.dumps(body), LEVEL)


def unpack(check_id: str, blob: bytes) -> SavedCheck:
    """A check from its stored form."""
    body = orjson.loads(zlib.decompress(blob))
    return SavedCheck(
        check_id,
        body["created_ms"],
        body["expires_ms"],
        body["text"],
        body["answer"],
        body["sources"],
        body.get("metadata"),
    )


def summary(saved: SavedCheck) -> dict[str, Any]:
    """What the list of checks shows of one: its times, its metadata, the measure, how
    much of the text the sources cover (containment) and the sources' count and first."""
    answer = saved.answer
    results = answer.get("results") or []
    top = None
    if results:
        first = results[0]
        score = "containment" if "containment" in first else "similarity"
        top = {"id": first["id"], score: first[score]}
    return {
        "created_ms": saved.created_ms,
        "expires_ms": saved.expires_ms,
        "metadata": saved.metadata,
        "measure": answer.get("measure", "jaccard"),
        "coverage": answer.get("coverage"),
        "sources": len(results),
        "top": top,
        "characters": len(saved.text),
    }


@dataclass(frozen=True)
class Listed:
    """A check as the list shows it: its id and summary (summary())."""

    id: str
    about: dict[str, Any]


def cursor_of(listed: Listed) -> str:
    """The cursor that continues a list after this check."""
    return f"{listed.about['created_ms']}.{listed.id}"


_CURSOR = re.compile(r"(\d{1,15})\.([A-Za-z0-9_-]{22})")


def parse_cursor(value: str) -> tuple[int, bytes] | None:
    """A list cursor as (made ms, id), None when it is not one cursor_of() gives."""
    match = _CURSOR.fullmatch(value)
    return None if match is None else (int(match[1]), match[2].encode())


async def listing(
    index: Index, after: tuple[int, bytes] | None, most: int
) -> tuple[list[Listed], bool]:
    """Up to `most` stored checks, newest first, after a parse_cursor() position, and
    whether more may follow. Checks that expired since are left out and unlisted."""
    store = CheckStore(index.store)
    out: list[Listed] = []
    gone: list[bytes] = []
    now = expiry.now_ms()
    more = True
    while len(out) < most and more:
        rows = await store.page(after, most - len(out) + 1)
        more = len(rows) > most - len(out)
        for name, made, about in rows[: most - len(out)]:
            after = (made, name)
            body = None if about is None else orjson.loads(about)
            if body is None or body["expires_ms"] <= now:
                gone.append(name)
            else:
                out.append(Listed(name.decode(), body))
        if not rows:
            more = False
    await store.unlist(gone)
    return out, more


async def _off_loop(size: int, work: Any, *args: Any) -> Any:
    # zlib on a text of megabytes takes tens of ms: not on the event loop.
    return await asyncio.to_thread(work, *args) if size > THREAD_BYTES else work(*args)


async def versions(index: Index, ids: Sequence[str]) -> dict[str, tuple[str, ...] | None]:
    """Each id's version as it answers now, None where it answers nothing (deleted, or
    expired and not swept yet): the digest (hex) of its record without its expiry (a
    new time to live changes no document), then that of the whole record, which checks
    stored before kept. Two exchanges whatever the number of ids."""
    if not ids:
        return {}
    handles = await index.store.ids.handles(list(ids))
    known = [h for h in handles if h is not None]
    raws = iter(await expiry.live_records(index.store, known))
    out: dict[str, tuple[str, ...] | None] = {}
    for doc_id, h in zip(ids, handles, strict=True):
        raw = None if h is None else next(raws)
        if raw is not None:
            out[doc_id] = (digest(records.without_expiry(raw)).hex(), digest(raw).hex())
        else:
            out[doc_id] = None
    return out


def _source_ids(answer: dict[str, Any]) -> list[str]:
    return [str(r["id"]) for r in answer.get("results") or ()]


async def save(
    index: Index,
    text: str,
    answer: dict[str, Any],
    ttl_s: int,
    metadata: dict[str, Any] | None = None,
) -> SavedCheck:
    """Store a check of text that got answer, for ttl_s seconds, with the caller's
    metadata (kept and listed as given); the stored check.

    The sources' versions are read just after the query: a source rewritten in between
    would read as unchanged later, a window of one exchange.
    """
    now = expiry.now_ms()
    found = await versions(index, _source_ids(answer))
    # A source the query found but that is gone already counts as changed: "" matches
    # no digest.
    sources = {i: v[0] if v else "" for i, v in found.items()}
    saved = SavedCheck(new_id(), now, now + 1000 * ttl_s, text, answer, sources, metadata)
    blob = await _off_loop(len(text), pack, saved)
    about = orjson.dumps(summary(saved))
    if not await CheckStore(index.store).put(saved.id, blob, 1000 * ttl_s, now, about):
        raise RuntimeError("a fresh 128-bit check id was taken")  # never: a CSPRNG is broken
    return saved


async def load(index: Index, check_id: str) -> SavedCheck | None:
    """A stored check, None when there is none (unknown, deleted or expired)."""
    if not is_id(check_id):
        return None
    blob = await CheckStore(index.store).get(check_id)
    if blob is None:
        return None
    saved: SavedCheck = await _off_loop(len(blob), unpack, check_id, blob)
    if saved.expires_ms <= expiry.now_ms():  # Redis expires keys within a ms or so late
        return None
    return saved


async def delete(index: Index, check_id: str) -> bool:
    """Remove a stored check; whether there was one."""
    return is_id(check_id) and await CheckStore(index.store).delete(check_id)


async def changes(index: Index, saved: SavedCheck) -> list[Change]:
    """The sources of a stored check whose records differ from when it was made, in the
    answer's order."""
    now = await versions(index, list(saved.sources))
    out = []
    for doc_id, then in saved.sources.items():
        current = now.get(doc_id)
        if current is None:
            out.append(Change(doc_id, "deleted"))
        elif then not in current:
            out.append(Change(doc_id, "changed"))
    return out
