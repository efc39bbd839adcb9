"""The packed binary document record kept in Redis, one per document.

Layout (little-endian, every section padded to 4 bytes so that a run of
records joined end to end can be read as one uint32 array):

    u32 version | u32 fp_len | u64 shingles | u32 bands | u32 id_len | u32 meta_len
    | u32 passages_len
    fp_len x u32 fingerprint | bands x u64 band keys | id (UTF-8) | metadata (JSON)
    | passages (app.index.passages.Layout.pack; passages_len bytes, 0 without)
    [| u64 expires_at (milliseconds since the epoch), only when the document expires]

The last header word was always 0 before passages existed, so older records
read as records without a passage section; and records without the trailing
word (every record written before expiry existed) never expire. The expiry is
in the record so that every read that verifies a record can drop an expired one
without another round trip (app.index.expiry).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np
import orjson

VERSION = 1
_HEADER = struct.Struct("<IIQIIII")
_EXPIRES = struct.Struct("<Q")
HEADER_WORDS = _HEADER.size // 4  # 8


def _pad(n: int) -> int:
    return (n + 3) & ~3


@dataclass(frozen=True)
class Record:
    """One stored document: its id, sketch summary and metadata."""

    id: str
    fingerprint: np.ndarray  # sorted uint32
    band_keys: np.ndarray  # uint64, one per band
    shingles: int
    metadata: dict | None
    passages: bytes = b""  # packed passage layout; empty without a passage index
    expires_ms: int = 0  # when it stops answering (ms since the epoch); 0: never


def pack(
    doc_id: str,
    fingerprint: np.ndarray,
    band_keys: np.ndarray,
    shingles: int,
    metadata: dict | None,
    passages: bytes = b"",
    expires_ms: int = 0,
) -> bytes:
    """Serialise one document record."""
    id_bytes = doc_id.encode("utf-8")
    meta = b"" if metadata is None else orjson.dumps(metadata)
    fp = np.ascontiguousarray(fingerprint, dtype="<u4").tobytes()
    bk = np.ascontiguousarray(band_keys, dtype="<u8").tobytes()
    header = _HEADER.pack(
        VERSION, len(fp) // 4, shingles, len(bk) // 8, len(id_bytes), len(meta), len(passages)
    )
    return b"".join(
        (
            header,
            fp,
            bk,
            id_bytes.ljust(_pad(len(id_bytes)), b"\0"),
            meta.ljust(_pad(len(meta)), b"\0"),
            passages.ljust(_pad(len(passages)), b"\0"),
            _EXPIRES.pack(expires_ms) if expires_ms else b"",
        )
    )


class CorruptRecordError(ValueError):
    """A stored record does not parse; it is never silently used."""


def unpack(raw: bytes) -> Record:
    """Parse one document record."""
    if len(raw) < _HEADER.size:
        raise CorruptRecordError("record shorter than its header")
    version, fp_len, shingles, bands, id_len, meta_len, pas_len = _HEADER.unpack_from(raw)
    if version != VERSION:
        raise CorruptRecordError(f"record version {version}, expected {VERSION}")
    pos = _HEADER.size
    end = pos + 4 * fp_len + 8 * bands + _pad(id_len) + _pad(meta_len) + _pad(pas_len)
    if len(raw) not in (end, end + _EXPIRES.size):
        raise CorruptRecordError("record length does not match its header")
    fingerprint = np.frombuffer(raw, dtype="<u4", count=fp_len, offset=pos)
    pos += 4 * fp_len
    band_keys = np.frombuffer(raw, dtype="<u8", count=bands, offset=pos)
    pos += 8 * bands
    doc_id = raw[pos : pos + id_len].decode("utf-8")
    pos += _pad(id_len)
    metadata = orjson.loads(raw[pos : pos + meta_len]) if meta_len else None
    pos += _pad(meta_len)
    expires = _EXPIRES.unpack_from(raw, end)[0] if len(raw) > end else 0
    return Record(
        doc_id, fingerprint, band_keys, shingles, metadata, raw[pos : pos + pas_len], expires
    )


def expires_of(raw: bytes) -> int:
    """Just when a record expires (ms since the epoch; 0: never), from its header."""
    _, fp_len, _, bands, id_len, meta_len, pas_len = _HEADER.unpack_from(raw)
    end = _HEADER.size + 4 * fp_len + 8 * bands + _pad(id_len) + _pad(meta_len) + _pad(pas_len)
    return _EXPIRES.unpack_from(raw, end)[0] if len(raw) > end else 0


def id_of(raw: bytes) -> str:
    """Just the id of a record, without parsing the rest (see unpack)."""
    _, fp_len, _, bands, id_len, _, _ = _HEADER.unpack_from(raw)
    pos = _HEADER.size + 4 * fp_len + 8 * bands
    return raw[pos : pos + id_len].decode("utf-8")


def metadata_of(raw: bytes) -> dict | None:
    """Just the metadata of a record, without parsing the rest (see unpack)."""
    _, fp_len, _, bands, id_len, meta_len, _ = _HEADER.unpack_from(raw)
    pos = _HEADER.size + 4 * fp_len + 8 * bands + _pad(id_len)
    return orjson.loads(raw[pos : pos + meta_len]) if meta_len else None


def fingerprints_of(raws: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Fingerprints of many records, packed, without a Python loop over records.

    Returns (values, offsets): record i's fingerprint is
    values[offsets[i]:offsets[i + 1]], the form the kernel's batch Jaccard takes.
    """
    n = len(raws)
    offsets = np.zeros(n + 1, dtype=np.uint64)
    if n == 0:
        return np.zeros(0, dtype=np.uint32), offsets
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    words = np.frombuffer(b"".join(raws), dtype="<u4")
    record_starts = np.zeros(n, dtype=np.int64)
    np.cumsum(sizes[:-1] // 4, out=record_starts[1:])
    lengths = words[record_starts + 1].astype(np.int64)
    ends = np.cumsum(lengths)
    offsets[1:] = ends
    shift = record_starts + HEADER_WORDS - (ends - lengths)
    gather = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(shift, lengths)
    return words[gather].astype(np.uint32), offsets


def sketch_of(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Just the fingerprint and band keys of a record (see unpack), for scans."""
    _, fp_len, _, bands, _, _, _ = _HEADER.unpack_from(raw)
    fingerprint = np.frombuffer(raw, dtype="<u4", count=fp_len, offset=_HEADER.size)
    keys = np.frombuffer(raw, dtype="<u8", count=bands, offset=_HEADER.size + 4 * fp_len)
    return fingerprint, keys
