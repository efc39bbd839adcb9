"""Bytes of each section of a stored record and of a packed passage layout: for the
tests of records and for bench/memory.py, never needed by the service itself."""

from __future__ import annotations

import struct

from app.index import records

_LAYOUT_HEAD = struct.Struct("<III")  # anchors, words, overflowing gaps and lengths


def _pad(n: int) -> int:
    return (n + 3) & ~3


def record_sections(raw: bytes) -> dict[str, int]:
    """Bytes of each section of a record, padding included."""
    h = records._head(raw)
    return {
        "header": h.fp_at,
        "fingerprint": _pad(h.fp_bytes),
        "band_keys": 8 * h.bands,
        "id": _pad(h.id_len),
        "metadata": _pad(h.meta_len),
        "passages": _pad(h.pas_len),
        "expiry": len(raw) - h.end,
    }


def layout_sections(raw: bytes) -> dict[str, int]:
    """Bytes of each part of a packed passage layout (app.index.passages)."""
    if not raw:
        return {}
    n_anchors, n_words, n_overflow = _LAYOUT_HEAD.unpack_from(raw)
    word_size = 2 if n_words < 1 << 16 else 4
    return {
        "head": _LAYOUT_HEAD.size,
        "anchor_hashes": 4 * n_anchors,
        "anchor_words": word_size * n_anchors,
        "word_hashes": (n_words + 1) // 2,
        "word_spans": n_words + 4 * n_overflow,
    }
