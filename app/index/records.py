"""The packed binary document record kept in Redis, one per document.

Layout of version 2 (little-endian, every section padded to 4 bytes so that a
run of records joined end to end can be read as one uint32 array):

    u32 version | u32 fp_len | u64 shingles | u32 bands | u32 id_len | u32 meta_len
    | u32 passages_len | u32 fp_bytes
    fingerprint (fp_len values compressed by the kernel, Elias-Fano: fp_bytes bytes)
    | bands x u64 band keys (or, short: bands x u32 top halves, bands x u16 low words,
    padded) | id (UTF-8) | metadata (JSON)
    | passages (app.index.passages.Layout.pack; passages_len bytes, 0 without)
    [| u64 expires_at (milliseconds since the epoch), only when the document expires]

The top bit of the bands word (SHORT_KEYS) marks band keys kept in 6 bytes: a collection
of 2-byte band fields keeps only the bits of a key's place (store.PLACE_BITS, the top 32
and the low 16), so its records store each key's top half and low word, 2 bytes less
than a whole key (84 bytes a document of 42 bands).

The top bit of the shingles word (PLAIN) marks a document sent as text, not as a
page: it is never answered as a site's thin page (app.index.sites). Records written
before it have the bit clear and are judged by their id as then.

The passage layout is stored in the kernel's format 2 where that is smaller
(kernel.compact_layout: word spans in about 5/8 of a byte instead of one, anchor
words as one-byte steps); Record.passages is never format 2: format 1, or format 3 in
collections with passage_bits (stored as packed, already compact), what
app.index.passages reads. Records written before format 2 hold format 1.

Version 1 (written by releases before 2) has no fp_bytes word and keeps the
fingerprint as fp_len plain u32 values; it reads and verifies as before, so a
collection written by an older release keeps working, and every record it
rewrites is written as version 2. The compressed fingerprint (about 800 bytes
for 256 values instead of 1,024; about 576 for the 24-bit values of a collection
with fingerprint_bits 24, which the kernel stores shifted) is decoded by the kernel
inside the verification call, straight from the joined records (encoded_fingerprints).

In version 1 the last header word was always 0 before passages existed, so older
records read as records without a passage section; and records without the trailing
word (every record written before expiry existed) never expire. The expiry is
in the record so that every read that verifies a record can drop an expired one
without another round trip (app.index.expiry).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import orjson

from app import kernel
from app.index.passages import is_kernel_format

VERSION = 2
_HEADER_V1 = struct.Struct("<IIQIIII")
_HEADER = struct.Struct("<IIQIIIII")
_EXPIRES = struct.Struct("<Q")
_CURRENT = VERSION.to_bytes(4, "little")
HEADER_WORDS = _HEADER.size // 4  # 9
HEADER_WORDS_V1 = _HEADER_V1.size // 4  # 8
# In the shingles word: the document was sent as text, not as a page (Record.plain).
PLAIN = 1 << 63
# In the bands word: the band keys are kept short (6 bytes each; see the docstring).
SHORT_KEYS = 1 << 31
_TOP = np.uint64(32)


def _bands(word: int) -> tuple[int, int]:
    """(how many band keys, the bytes of their section) from a header's bands word."""
    if word & SHORT_KEYS:
        n = word & ~SHORT_KEYS
        return n, _pad(6 * n)
    return word, 8 * word


def band_sections(keys: np.ndarray, short: bool) -> list[bytes]:
    """The band keys of each row of a [texts, bands] array as a record keeps them: whole,
    or short (top halves, then low words, padded; only a key's PLACE_BITS are kept);
    made at once for a batch (a few numpy calls a text cost an ingest more than the
    record's other parts)."""
    keys = np.ascontiguousarray(keys, dtype="<u8")
    n, bands = keys.shape
    if not short:
        rows = keys.view(np.uint8).reshape(n, 8 * bands)
    else:
        top = (keys >> _TOP).astype("<u4").view(np.uint8).reshape(n, 4 * bands)
        low = (keys & np.uint64(0xFFFF)).astype("<u2").view(np.uint8).reshape(n, 2 * bands)
        pad = np.zeros((n, _pad(6 * bands) - 6 * bands), dtype=np.uint8)
        rows = np.hstack([top, low, pad])
    width = rows.shape[1]
    joined = rows.tobytes()
    return [joined[i * width : (i + 1) * width] for i in range(n)]


def _band_keys(raw: bytes, at: int, word: int) -> np.ndarray:
    """A record's band keys (uint64) from its section at `at`, whole or short."""
    n = _bands(word)[0]
    if not word & SHORT_KEYS:
        return np.frombuffer(raw, dtype="<u8", count=n, offset=at)
    top = np.frombuffer(raw, dtype="<u4", count=n, offset=at).astype(np.uint64)
    low = np.frombuffer(raw, dtype="<u2", count=n, offset=at + 4 * n).astype(np.uint64)
    return (top << _TOP) | low


# A document's metadata as JSON, at most: it is in the record, which every query that
# meets the document reads (a 20 MB value was read again by each of them).
MAX_METADATA_BYTES = 64 * 1024
# ... and nested at most this deep: every answer that carries it nests it in its own
# objects, and the JSON encoder stops at 255 levels (a record nested 254 deep was stored,
# then cut every export of its collection short).
MAX_METADATA_DEPTH = 64


def metadata_problem(metadata: object) -> str | None:
    """Why this cannot be a document's metadata, or None: a JSON object (or None) that
    orjson can store (integers within 64 bits, valid Unicode), of at most
    MAX_METADATA_BYTES as JSON, nested at most MAX_METADATA_DEPTH deep."""
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return "metadata must be an object or null"
    try:
        size = len(orjson.dumps(metadata))
    except orjson.JSONEncodeError as exc:
        if "recursion" in str(exc).lower():  # nested past orjson's 255 levels
            return _too_deep(nesting(metadata))
        return f"metadata cannot be stored as JSON: {exc}"
    if size > MAX_METADATA_BYTES:
        return (
            f"metadata is {size:,} bytes as JSON, over the {MAX_METADATA_BYTES:,} a "
            "document keeps: store large data elsewhere and keep its key here"
        )
    depth = nesting(metadata)
    return _too_deep(depth) if depth > MAX_METADATA_DEPTH else None


def _too_deep(depth: int) -> str:
    return (
        f"metadata nests {depth} levels deep, over the {MAX_METADATA_DEPTH} a document "
        "keeps: flatten it"
    )


def nesting(value: object) -> int:
    """How many objects and arrays deep a JSON value nests (an object of scalars: 1),
    without recursion: a hostile value may nest deeper than Python's stack."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[object]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


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
    # Sent as text, not as a page: never a site's thin page (False in older records).
    plain: bool = False


def pack(
    doc_id: str,
    fingerprint: np.ndarray,
    band_keys: np.ndarray,
    shingles: int,
    metadata: dict | None,
    passages: bytes = b"",
    expires_ms: int = 0,
    encoded: bytes | None = None,
    plain: bool = False,
    shifted: bool = False,
    short_keys: bool = False,
    band_section: bytes | None = None,
) -> bytes:
    """Serialise one document record (the current version); encoded, when given, is the
    fingerprint already compressed (encode_many); plain marks a text that is not a page;
    shifted, a 24-bit fingerprint compressed without its zero low bits; short_keys, band
    keys of only PLACE_BITS (a collection of 2-byte fields), kept in 6 bytes each;
    band_section, when given, is the band keys so kept already (band_sections)."""
    id_bytes = doc_id.encode("utf-8")
    meta = b"" if metadata is None else orjson.dumps(metadata)
    fp = encoded
    if fp is None:
        fp = kernel.encode_fingerprint(np.asarray(fingerprint, dtype=np.uint32), shifted)
    if is_kernel_format(passages):  # format 3 (app.index.passages) is compact already
        passages = kernel.compact_layout(passages)
    if band_section is None:
        band_section = band_sections(np.asarray(band_keys).reshape(1, -1), short_keys)[0]
    header = _HEADER.pack(
        VERSION,
        len(fingerprint),
        shingles | PLAIN if plain else shingles,
        len(band_keys) | SHORT_KEYS if short_keys else len(band_keys),
        len(id_bytes),
        len(meta),
        len(passages),
        len(fp),
    )
    return b"".join(
        (
            header,
            fp.ljust(_pad(len(fp)), b"\0"),
            band_section,
            id_bytes.ljust(_pad(len(id_bytes)), b"\0"),
            meta.ljust(_pad(len(meta)), b"\0"),
            passages.ljust(_pad(len(passages)), b"\0"),
            _EXPIRES.pack(expires_ms) if expires_ms else b"",
        )
    )


def encode_many(fingerprints: Sequence[np.ndarray], shifted: bool = False) -> list[bytes]:
    """Each fingerprint compressed as pack() stores it (shifted: 24-bit ones), in one
    kernel call: a batch's ingest spent ~6 us a document on the call overhead of one
    call each."""
    if not fingerprints:
        return []
    offsets = np.zeros(len(fingerprints) + 1, dtype=np.uint64)
    np.cumsum([len(f) for f in fingerprints], out=offsets[1:])
    data, ends = kernel.encode_fingerprints(np.concatenate(fingerprints), offsets, shifted)
    joined, cuts = data.tobytes(), ends.tolist()
    return [joined[cuts[i] : cuts[i + 1]] for i in range(len(fingerprints))]


class CorruptRecordError(ValueError):
    """A stored record does not parse; it is never silently used."""


@dataclass(frozen=True)
class _Head:
    """Where a record's sections lie (either version)."""

    version: int
    fp_len: int
    fp_bytes: int  # the fingerprint section as stored, before padding
    shingles: int
    bands: int  # the header's word: the count, and SHORT_KEYS when kept short
    id_len: int
    meta_len: int
    pas_len: int
    fp_at: int  # where the fingerprint starts

    @property
    def bands_at(self) -> int:
        return self.fp_at + _pad(self.fp_bytes)

    @property
    def id_at(self) -> int:
        return self.bands_at + _bands(self.bands)[1]

    @property
    def meta_at(self) -> int:
        return self.id_at + _pad(self.id_len)

    @property
    def passages_at(self) -> int:
        return self.meta_at + _pad(self.meta_len)

    @property
    def end(self) -> int:
        """Where the record ends without its expiry word."""
        return _end(self.fp_at, self.fp_bytes, self.bands, self.id_len, self.meta_len, self.pas_len)


def _end(fp_at: int, fp_bytes: int, bands: int, id_len: int, meta_len: int, pas_len: int) -> int:
    """Where a record whose fingerprint starts at fp_at ends without its expiry word."""
    size = _bands(bands)[1]
    return fp_at + _pad(fp_bytes) + size + _pad(id_len) + _pad(meta_len) + _pad(pas_len)


def _head(raw: bytes) -> _Head:
    if len(raw) < _HEADER_V1.size:
        raise CorruptRecordError("record shorter than its header")
    version = int.from_bytes(raw[:4], "little")
    if version == VERSION:
        if len(raw) < _HEADER.size:
            raise CorruptRecordError("record shorter than its header")
        _, fp_len, shingles, bands, id_len, meta_len, pas_len, fp_bytes = _HEADER.unpack_from(raw)
        return _Head(
            version, fp_len, fp_bytes, shingles, bands, id_len, meta_len, pas_len, _HEADER.size
        )
    if version == 1:
        _, fp_len, shingles, bands, id_len, meta_len, pas_len = _HEADER_V1.unpack_from(raw)
        return _Head(
            1, fp_len, 4 * fp_len, shingles, bands, id_len, meta_len, pas_len, _HEADER_V1.size
        )
    raise CorruptRecordError(f"record version {version}, expected 1 or {VERSION}")


def _fingerprint(raw: bytes, h: _Head) -> np.ndarray:
    if h.version == 1:
        return np.frombuffer(raw, dtype="<u4", count=h.fp_len, offset=h.fp_at)
    enc = kernel.Encoded(
        raw,
        np.array([h.fp_at], np.uint64),
        np.array([h.fp_at + h.fp_bytes], np.uint64),
        np.array([h.fp_len], np.uint32),
    )
    try:
        return kernel.decode_fingerprints(enc)[0]
    except kernel.MalformedFingerprintError:
        raise CorruptRecordError("the record's fingerprint does not decode") from None


def unpack(raw: bytes) -> Record:
    """Parse one document record (either version)."""
    h = _head(raw)
    if len(raw) not in (h.end, h.end + _EXPIRES.size):
        raise CorruptRecordError("record length does not match its header")
    fingerprint = _fingerprint(raw, h)
    band_keys = _band_keys(raw, h.bands_at, h.bands)
    doc_id = raw[h.id_at : h.id_at + h.id_len].decode("utf-8")
    metadata = orjson.loads(raw[h.meta_at : h.meta_at + h.meta_len]) if h.meta_len else None
    expires = _EXPIRES.unpack_from(raw, h.end)[0] if len(raw) > h.end else 0
    passages = _layout(raw[h.passages_at : h.passages_at + h.pas_len])
    shingles, plain = h.shingles & ~PLAIN, bool(h.shingles & PLAIN)
    return Record(doc_id, fingerprint, band_keys, shingles, metadata, passages, expires, plain)


def _layout(stored: bytes) -> bytes:
    try:
        return kernel.expand_layout(stored)
    except kernel.MalformedLayoutError:
        raise CorruptRecordError("the record's passage layout does not expand") from None


def expires_of(raw: bytes) -> int:
    """Just when a record expires (ms since the epoch; 0: never), from its header."""
    # Every candidate of a query passes here: a current record's end is summed from
    # its header directly, without building a _Head.
    if len(raw) >= _HEADER.size and raw[:4] == _CURRENT:
        _, _, _, bands, id_len, meta_len, pas_len, fp_bytes = _HEADER.unpack_from(raw)
        end = _end(_HEADER.size, fp_bytes, bands, id_len, meta_len, pas_len)
    else:
        end = _head(raw).end
    return _EXPIRES.unpack_from(raw, end)[0] if len(raw) > end else 0


def without_expiry(raw: bytes) -> bytes:
    """A packed record without its expiry word: what its document is, whenever it ends."""
    return raw[: _head(raw).end]


def shingles_of(raw: bytes) -> int:
    """The shingle count of a packed record, from its header alone."""
    return _head(raw).shingles & ~PLAIN


def plain_of(raw: bytes) -> bool:
    """Whether a packed record's document was sent as text, not as a page (its header)."""
    return bool(_head(raw).shingles & PLAIN)


def id_of(raw: bytes) -> str:
    """Just the id of a record, without parsing the rest (see unpack)."""
    h = _head(raw)
    return raw[h.id_at : h.id_at + h.id_len].decode("utf-8")


def passages_of(raw: bytes) -> bytes:
    """Just the passage layout of a record (as Record.passages), without decoding its
    fingerprint: what a containment query aligns with every candidate."""
    h = _head(raw)
    return _layout(raw[h.passages_at : h.passages_at + h.pas_len])


def metadata_of(raw: bytes) -> dict | None:
    """Just the metadata of a record, without parsing the rest (see unpack)."""
    h = _head(raw)
    return orjson.loads(raw[h.meta_at : h.meta_at + h.meta_len]) if h.meta_len else None


def encoded_fingerprints(raws: list[bytes]) -> kernel.Encoded:
    """The compressed fingerprints of many records, where they lie in the joined records,
    for kernel.jaccard_many_encoded (which decodes them inside the call).

    No Python loop over current records: their headers are read as one uint32 array.
    A version 1 record's plain fingerprint is compressed here and appended to the data.
    """
    n = len(raws)
    if n == 0:
        empty = np.zeros(0, np.uint64)
        return kernel.Encoded(b"", empty, empty, np.zeros(0, np.uint32))
    if n <= _FEW:
        few = _encoded_few(raws)
        if few is not None:
            return few
    joined = b"".join(raws)
    words = np.frombuffer(joined, dtype="<u4")
    sizes = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    record_starts = np.zeros(n, dtype=np.int64)
    np.cumsum(sizes[:-1] // 4, out=record_starts[1:])
    versions = words[record_starts]
    counts = words[record_starts + 1].astype(np.uint32)
    starts = (record_starts + HEADER_WORDS) * 4
    old = np.flatnonzero(versions != VERSION)
    if old.size == 0:
        ends = starts + words[record_starts + HEADER_WORDS - 1].astype(np.int64)
        if np.any(ends > 4 * record_starts + sizes):
            raise CorruptRecordError("a record's fingerprint runs past its end")
        return kernel.Encoded(joined, starts.astype(np.uint64), ends.astype(np.uint64), counts)
    # Records of an older release (rare): their plain fingerprints, compressed and
    # appended after the records.
    ends = np.zeros(n, dtype=np.int64)
    new = np.flatnonzero(versions == VERSION)
    ends[new] = starts[new] + words[record_starts[new] + HEADER_WORDS - 1].astype(np.int64)
    plain = [_fingerprint(raws[i], _head(raws[i])) for i in old.tolist()]  # checks versions
    offsets = np.zeros(len(plain) + 1, dtype=np.uint64)
    np.cumsum([len(p) for p in plain], out=offsets[1:])
    data, data_offsets = kernel.encode_fingerprints(np.concatenate(plain), offsets)
    base = len(joined)
    starts[old] = base + data_offsets[:-1].astype(np.int64)
    ends[old] = base + data_offsets[1:].astype(np.int64)
    return kernel.Encoded(
        joined + data.tobytes(), starts.astype(np.uint64), ends.astype(np.uint64), counts
    )


# Most queries verify a candidate or two: below this many records, the headers are
# read one by one, which costs less than setting up the arrays of the batch way.
_FEW = 8
_FP_WORDS = struct.Struct("<II")  # version, fingerprint length (values)
_FP_BYTES = struct.Struct("<I")  # a current record's fingerprint section, in bytes


def _encoded_few(raws: list[bytes]) -> kernel.Encoded | None:
    """encoded_fingerprints of a few current records; None if any is of another version."""
    starts, ends, counts = [], [], []
    base = 0
    for raw in raws:
        if len(raw) < _HEADER.size:
            return None
        version, count = _FP_WORDS.unpack_from(raw)
        if version != VERSION:
            return None
        start = base + _HEADER.size
        end = start + _FP_BYTES.unpack_from(raw, _HEADER.size - 4)[0]
        base += len(raw)
        if end > base:
            raise CorruptRecordError("a record's fingerprint runs past its end")
        starts.append(start)
        ends.append(end)
        counts.append(count)
    return kernel.Encoded(
        b"".join(raws),
        np.array(starts, np.uint64),
        np.array(ends, np.uint64),
        np.array(counts, np.uint32),
    )


def fingerprints_of(raws: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """Fingerprints of many records, packed, without a Python loop over records.

    Returns (values, offsets): record i's fingerprint is
    values[offsets[i]:offsets[i + 1]], the form the kernel's batch Jaccard takes.
    """
    if not raws:
        return np.zeros(0, dtype=np.uint32), np.zeros(1, dtype=np.uint64)
    try:
        return kernel.decode_fingerprints(encoded_fingerprints(raws))
    except kernel.MalformedFingerprintError as e:
        raise CorruptRecordError(str(e)) from None


def sketch_of(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Just the fingerprint and band keys of a record (see unpack), for scans."""
    h = _head(raw)
    return _fingerprint(raw, h), _band_keys(raw, h.bands_at, h.bands)
