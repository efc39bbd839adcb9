"""Bytes of each section of a stored record and of a packed passage layout: for the
tests of records and for bench/memory.py, never needed by the service itself."""

from __future__ import annotations

import struct

from app.index import passages, records

_LAYOUT_HEAD = struct.Struct("<III")  # anchors, words, overflowing gaps and lengths
_LAYOUT_KIND = struct.Struct("<I")  # format 3: bits a word hash | 0x100 (one-byte steps)


def _pad(n: int) -> int:
    return (n + 3) & ~3


def record_sections(raw: bytes) -> dict[str, int]:
    """Bytes of each section of a record, padding included."""
    h = records._head(raw)
    return {
        "header": h.fp_at,
        "fingerprint": _pad(h.fp_bytes),
        "band_keys": records._bands(h.bands)[1],
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
    if not passages.is_kernel_format(raw):  # format 3
        lay = passages.Layout.unpack(raw)
        (kind,) = _LAYOUT_KIND.unpack_from(raw, _LAYOUT_HEAD.size)
        word_size = 1 if kind & 0x100 else 2 if lay.words < 1 << 16 else 4
        hashes = (lay.words * lay.bits + 7) // 8
        head = _LAYOUT_HEAD.size + _LAYOUT_KIND.size
        return {
            "head": head,
            "anchor_hashes": 4 * n_anchors,
            "anchor_words": word_size * n_anchors,
            "word_hashes": hashes,
            "word_spans": len(raw) - head - (4 + word_size) * n_anchors - hashes,
        }
    word_size = 2 if n_words < 1 << 16 else 4
    return {
        "head": _LAYOUT_HEAD.size,
        "anchor_hashes": 4 * n_anchors,
        "anchor_words": word_size * n_anchors,
        "word_hashes": (n_words + 1) // 2,
        "word_spans": n_words + 4 * n_overflow,
    }
