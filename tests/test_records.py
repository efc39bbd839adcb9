"""Packed document records: round trips, batch fingerprint extraction, corruption."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from support.sections import record_sections

from app.index import records
from app.index.passages import Layout
from app.store import PLACE_BITS


def _random_record(rng: np.random.Generator, i: int) -> tuple:
    fp = np.unique(rng.integers(0, 2**32, size=int(rng.integers(0, 300)), dtype=np.uint64))
    keys = rng.integers(0, 2**63, size=int(rng.integers(1, 50)), dtype=np.uint64)
    doc_id = f"doc-{i}-" + "é" * int(rng.integers(0, 5))
    meta = None if i % 3 == 0 else {"n": i, "tags": ["a", "b"][: i % 3]}
    return doc_id, fp.astype(np.uint32), keys, int(rng.integers(0, 2**40)), meta


def test_pack_unpack_round_trip() -> None:
    """Every field comes back as it went in, for ids and metadata of any length."""
    rng = np.random.default_rng(7)
    for i in range(200):
        doc_id, fp, keys, shingles, meta = _random_record(rng, i)
        rec = records.unpack(records.pack(doc_id, fp, keys, shingles, meta))
        assert rec.id == doc_id and rec.shingles == shingles and rec.metadata == meta
        assert np.array_equal(rec.fingerprint, fp) and np.array_equal(rec.band_keys, keys)


def test_short_band_keys_are_kept_in_six_bytes_and_read_back_whole() -> None:
    """Keys of only PLACE_BITS (a collection of 2-byte fields) come back exactly from 6
    bytes each (84 bytes less for 42 bands, the section padded to 4), for any number of
    keys; every reader of the record (unpack, sketch_of, id_of, expires_of) agrees."""
    rng = np.random.default_rng(11)
    for i in range(200):
        doc_id, fp, keys, shingles, meta = _random_record(rng, i)
        keys = keys & np.uint64(PLACE_BITS)
        raw = records.pack(doc_id, fp, keys, shingles, meta, expires_ms=5 + i, short_keys=True)
        whole = records.pack(doc_id, fp, keys, shingles, meta, expires_ms=5 + i)
        assert len(whole) - len(raw) == 8 * len(keys) - ((6 * len(keys) + 3) & ~3)
        rec = records.unpack(raw)
        assert np.array_equal(rec.band_keys, keys) and rec.id == doc_id
        assert np.array_equal(records.sketch_of(raw)[1], keys)
        assert records.id_of(raw) == doc_id and records.expires_of(raw) == 5 + i
        assert rec.metadata == meta and np.array_equal(rec.fingerprint, fp)
    forty_two = np.arange(42, dtype=np.uint64)
    assert (
        len(records.pack("d", fp, forty_two, 1, None))
        - len(records.pack("d", fp, forty_two, 1, None, short_keys=True))
        == 84
    )
    with pytest.raises(records.CorruptRecordError):
        records.unpack(raw[:-4])


@pytest.mark.parametrize("bands", [0, 1, 2, 42, 43])
def test_band_sections_of_a_batch_pack_the_same_records(bands: int) -> None:
    """band_sections (a batch's, an ingest's way) gives each text the band keys a record
    packed alone keeps, whole or in 6 bytes (padded), and the records read them back."""
    rng = np.random.default_rng(bands)
    keys = rng.integers(0, 2**63, size=(7, bands), dtype=np.uint64) & np.uint64(PLACE_BITS)
    fp = np.arange(5, dtype=np.uint32)
    for short in (False, True):
        sections = records.band_sections(keys, short)
        assert len(sections) == 7
        for row, section in zip(keys, sections, strict=True):
            # The layout written out by hand: whole keys, or top halves, low words, padding.
            ks = [int(k) for k in row]
            if short:
                plain = b"".join((k >> 32).to_bytes(4, "little") for k in ks)
                plain += b"".join((k & 0xFFFF).to_bytes(2, "little") for k in ks)
                plain += bytes(-len(plain) % 4)
            else:
                plain = b"".join(k.to_bytes(8, "little") for k in ks)
            assert section == plain
            alone = records.pack("d", fp, row, 3, None, short_keys=short)
            assert (
                records.pack("d", fp, row, 3, None, short_keys=short, band_section=section) == alone
            )
            assert np.array_equal(records.unpack(alone).band_keys, row)
    assert records.band_sections(np.zeros((0, 42), np.uint64), True) == []


def test_fingerprints_encoded_in_one_batch_pack_the_same_records() -> None:
    """encode_many (one kernel call, an ingest's way) gives each fingerprint the bytes a
    record packed alone stores, empty fingerprints included, and the records read back."""
    rng = np.random.default_rng(3)
    fields = [_random_record(rng, i) for i in range(60)]
    fields.append(("empty", np.zeros(0, np.uint32), fields[0][2], 1, None))
    encoded = records.encode_many([f[1] for f in fields])
    assert records.encode_many([]) == []
    for f, enc in zip(fields, encoded, strict=True):
        raw = records.pack(*f, encoded=enc)
        assert raw == records.pack(*f)
        assert np.array_equal(records.unpack(raw).fingerprint, f[1])


def test_fingerprints_of_matches_unpacking_each_record() -> None:
    """The batch extraction gives every record's packed fingerprint, for a few records
    (read one by one) and for many (the vectorised way) alike."""
    rng = np.random.default_rng(11)
    fields = [_random_record(rng, i) for i in range(100)]
    raws = [records.pack(*f) for f in fields]
    for n in (1, 2, 7, 8, 9, 100):
        values, offsets = records.fingerprints_of(raws[:n])
        assert offsets[0] == 0 and int(offsets[-1]) == len(values)
        for i in range(n):
            assert np.array_equal(values[int(offsets[i]) : int(offsets[i + 1])], fields[i][1])


def test_fingerprints_of_nothing() -> None:
    """No records give no values and a single zero offset."""
    values, offsets = records.fingerprints_of([])
    assert len(values) == 0 and list(offsets) == [0]


def test_corrupt_records_are_refused() -> None:
    """Truncated, padded or foreign-version bytes raise instead of parsing."""
    raw = records.pack("x", np.array([1, 2, 3], np.uint32), np.array([9], np.uint64), 3, None)
    for bad in (raw[:10], raw[:-4], raw + b"\0\0\0\0", b"\x07" + raw[1:]):
        with pytest.raises(records.CorruptRecordError):
            records.unpack(bad)


def test_id_of_reads_the_id_alone() -> None:
    """The id-only reader agrees with the full parser."""
    rng = np.random.default_rng(3)
    for i in range(50):
        raw = records.pack(*_random_record(rng, i))
        assert records.id_of(raw) == records.unpack(raw).id


def _text_layout(words: int) -> bytes:
    """A passage layout as app.index.passages packs it (words of 3 letters, one space apart)."""
    starts = np.arange(0, 4 * words, 4, dtype=np.int64)
    hashes = np.arange(words, dtype=np.uint8) % 16
    anchors = np.arange(0, words, 7, dtype=np.int64)
    return Layout(anchors.astype(np.uint32) * 977, anchors, hashes, starts, starts + 3).pack()


_LAYOUTS = [b"", _text_layout(20), _text_layout(300)]


def pack_version_1(
    doc_id: str,
    fp: np.ndarray,
    keys: np.ndarray,
    shingles: int,
    meta: dict | None,
    passages: bytes = b"",
    expires_ms: int = 0,
) -> bytes:
    """A record as releases before version 2 wrote it (plain uint32 fingerprint), by hand."""
    import orjson

    def pad(b: bytes) -> bytes:
        return b + b"\0" * (-len(b) % 4)

    id_b = doc_id.encode()
    meta_b = b"" if meta is None else orjson.dumps(meta)
    head = struct.pack(
        "<IIQIIII", 1, len(fp), shingles, len(keys), len(id_b), len(meta_b), len(passages)
    )
    tail = struct.pack("<Q", expires_ms) if expires_ms else b""
    body = fp.astype("<u4").tobytes() + keys.astype("<u8").tobytes()
    return head + body + pad(id_b) + pad(meta_b) + pad(passages) + tail


def test_version_1_records_read_as_before() -> None:
    """A record packed the old way parses to the same fields as the current packing of it."""
    rng = np.random.default_rng(21)
    for i in range(60):
        fields = _random_record(rng, i)
        extra = (_LAYOUTS[i % 3], 1_700_000_000_000 + i if i % 2 else 0)
        old, new = pack_version_1(*fields, *extra), records.pack(*fields, *extra)
        assert old[:4] == b"\1\0\0\0" and new[:4] == b"\2\0\0\0"
        a, b = records.unpack(old), records.unpack(new)
        assert (a.id, a.shingles, a.metadata, a.passages, a.expires_ms) == (
            b.id, b.shingles, b.metadata, b.passages, b.expires_ms,
        )  # fmt: skip
        assert np.array_equal(a.fingerprint, fields[1]) and np.array_equal(b.fingerprint, fields[1])
        assert np.array_equal(a.band_keys, b.band_keys)
        assert records.id_of(old) == fields[0] and records.metadata_of(old) == fields[4]
        assert records.expires_of(old) == extra[1] and records.expires_of(new) == extra[1]
        for got in (records.sketch_of(old), records.sketch_of(new)):
            assert np.array_equal(got[0], fields[1]) and np.array_equal(got[1], fields[2])


def test_mixed_versions_verify_alike() -> None:
    """A batch of old and new records gives each one's fingerprint, and the compressed
    verification the same similarities as plain verification of the original values."""
    from app import kernel

    rng = np.random.default_rng(22)
    fields = [_random_record(rng, i) for i in range(80)]
    raws = [(pack_version_1 if i % 3 else records.pack)(*f) for i, f in enumerate(fields)]
    values, offsets = records.fingerprints_of(raws)
    for i, f in enumerate(fields):
        assert np.array_equal(values[int(offsets[i]) : int(offsets[i + 1])], f[1])
    enc = records.encoded_fingerprints(raws)
    for q in (fields[0][1], fields[5][1], fields[7][1][:40]):
        for threshold in (0.0, 0.2):
            expected = kernel.jaccard_many(q, [f[1] for f in fields], threshold)
            assert np.array_equal(kernel.jaccard_many_encoded(q, enc, threshold), expected)


def test_a_fingerprint_that_does_not_decode_is_a_corrupt_record() -> None:
    """Garbage in the compressed fingerprint, or a length past the record, is refused."""
    raw = records.pack("x", np.array([1, 2, 3], np.uint32), np.array([9], np.uint64), 3, None)
    garbled = raw[:36] + b"\xff" + raw[37:]
    with pytest.raises(records.CorruptRecordError):
        records.unpack(garbled)
    with pytest.raises(records.CorruptRecordError):
        records.fingerprints_of([raw, garbled])
    too_long = raw[:32] + struct.pack("<I", 4000) + raw[36:]
    with pytest.raises(records.CorruptRecordError):
        records.encoded_fingerprints([too_long])


def test_records_keep_the_layout_compact_and_give_it_back_as_packed() -> None:
    """A record stores the smaller form of its passage layout; Record.passages is the layout
    exactly as app.index.passages packed it, and it decodes to the same spans."""
    layout = _text_layout(300)
    fp, keys = np.arange(5, dtype=np.uint32), np.arange(3, dtype=np.uint64)
    raw = records.pack("x", fp, keys, 5, None, layout)
    assert record_sections(raw)["passages"] < len(layout) - 80
    rec = records.unpack(raw)
    assert rec.passages == layout
    back, orig = Layout.unpack(rec.passages), Layout.unpack(layout)
    assert np.array_equal(back.starts, orig.starts) and np.array_equal(back.ends, orig.ends)


def test_a_layout_that_does_not_expand_is_a_corrupt_record() -> None:
    """Garbage in a compacted passage layout is refused, never read as a layout."""
    raw = records.pack("x", np.arange(3, dtype=np.uint32), np.arange(1, dtype=np.uint64), 3,
                       None, _text_layout(300))  # fmt: skip
    at = len(raw) - record_sections(raw)["passages"]
    broken = raw[: at + 12] + b"\xff" * (len(raw) - at - 12)
    with pytest.raises(records.CorruptRecordError):
        records.unpack(broken)
