"""A collection's id map read and changed from outside, as a crash or an operator would:
the rule of where an id lives (one ids HASH, or id buckets by CRC-32) restated here
from docs, not imported, so a test of it can fail."""

from __future__ import annotations

import zlib
from typing import Any

import orjson


def _prefix(collection: str) -> bytes:
    return f"nd:{collection}:".encode()


def id_buckets(r: Any, collection: str) -> int:
    """The collection's id bucket count, from its stored config (0: one ids HASH)."""
    return int(orjson.loads(r.get(_prefix(collection) + b"config")).get("id_buckets", 0))


def key_for(collection: str, buckets: int, doc_id: str) -> bytes:
    """The HASH that holds an id's handle in a collection of this many id buckets."""
    if not buckets:
        return _prefix(collection) + b"ids"
    return _prefix(collection) + b"I{%x}" % (zlib.crc32(doc_id.encode()) % buckets)


def id_key(r: Any, collection: str, doc_id: str) -> bytes:
    """The HASH holding this id's handle, by the collection's stored config."""
    return key_for(collection, id_buckets(r, collection), doc_id)


def handle_of(r: Any, collection: str, doc_id: str) -> int | None:
    """The id's handle, None when it maps to none."""
    raw = r.hget(id_key(r, collection, doc_id), doc_id)
    return None if raw is None else int(raw)


def unmap(r: Any, collection: str, doc_id: str) -> int:
    """Drop an id's mapping as a finished removal would (the kept count follows); 1 when
    it was there."""
    gone = int(r.hdel(id_key(r, collection, doc_id), doc_id))
    if gone and id_buckets(r, collection):
        r.hincrby(_prefix(collection) + b"count", "n", -gone)
        r.hincrby(_prefix(collection) + b"count", "gen", gone)
    return gone


def all_ids(r: Any, collection: str) -> dict[str, int]:
    """Every id and its handle, read from every HASH of the id map."""
    n = id_buckets(r, collection)
    keys = (
        [_prefix(collection) + b"I{%x}" % b for b in range(n)]
        if n
        else [_prefix(collection) + b"ids"]
    )
    out: dict[str, int] = {}
    for key in keys:
        out.update({k.decode(): int(v) for k, v in r.hgetall(key).items()})
    return out
