"""Kept texts (collections made with keep_text): compressed, and tied to one record.

A kept text is stored as

    8-byte digest of the record it belongs to | zlib(UTF-8 text)

under its own key (app.store), written before the record that points at it and
deleted after it. The digest makes a crash harmless: a replace that stopped
between writing the new text and the new record leaves the old record with a
text it does not match, and a text is only ever shown with the record whose
digest it carries (otherwise it reads as not kept, and `neardup check` reports it).
"""

from __future__ import annotations

import hashlib
import zlib

DIGEST_BYTES = 8
# zlib's default level: within a few percent of level 9 on prose, at a third of its time.
LEVEL = 6


def digest(record: bytes) -> bytes:
    """The digest of a packed record that its kept text carries."""
    return hashlib.blake2b(record, digest_size=DIGEST_BYTES).digest()


def pack(text: str, record: bytes) -> bytes:
    """The stored form of a text kept with this packed record."""
    return digest(record) + zlib.compress(text.encode("utf-8"), LEVEL)


def belongs(raw: bytes, record: bytes) -> bool:
    """Whether a stored text (or just its first DIGEST_BYTES) was written with this record."""
    return raw[:DIGEST_BYTES] == digest(record)


def unpack(raw: bytes | None, record: bytes) -> str | None:
    """The text kept with this record; None when there is none or it is another version's."""
    if raw is None or not belongs(raw, record):
        return None
    return zlib.decompress(raw[DIGEST_BYTES:]).decode("utf-8")
