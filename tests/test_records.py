"""Packed document records: round trips, batch fingerprint extraction, corruption."""

from __future__ import annotations

import numpy as np
import pytest

from app.index import records


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


def test_fingerprints_of_matches_unpacking_each_record() -> None:
    """The vectorised extraction equals unpacking records one by one."""
    rng = np.random.default_rng(11)
    raws = [records.pack(*_random_record(rng, i)) for i in range(100)]
    values, offsets = records.fingerprints_of(raws)
    assert offsets[0] == 0 and int(offsets[-1]) == len(values)
    for i, raw in enumerate(raws):
        expected = records.unpack(raw).fingerprint
        assert np.array_equal(values[int(offsets[i]) : int(offsets[i + 1])], expected)


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
