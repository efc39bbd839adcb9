"""Compressed fingerprints (Elias-Fano in the kernel): the codec against a plain Python
reference, malformed bytes, and verification from the compressed form."""

from __future__ import annotations

import numpy as np
import pytest

from app import kernel

TOP = 2**32 - 1


def _bits_to_bytes(bits: list[int]) -> bytes:
    bits = bits + [0] * (-len(bits) % 8)
    return bytes(sum(bits[j + k] << k for k in range(8)) for j in range(0, len(bits), 8))


SHIFT, SHIFTED = 8, 0x40  # ND_FP_SHIFT, ND_FP_SHIFTED


def reference_encode(values: list[int], shift: bool = False) -> bytes:
    """The format of native/neardup.h, written out bit by bit: plain, or shifted (values
    >> 8, the flag in the L byte; every value's low 8 bits must be 0)."""
    n = len(values)
    if n == 0:
        return b""
    if shift:
        assert all(v % (1 << SHIFT) == 0 for v in values)
        blob = reference_encode([v >> SHIFT for v in values], False)
        return bytes([blob[0] | SHIFTED]) + blob[1:]
    last = values[-1]
    low = 0
    while low < 32 and (n << (low + 1)) <= last + 1:
        low += 1
    low_bits = [(v >> b) & 1 for v in values for b in range(low)]
    high_bits = [0] * ((last >> low) + n)
    for i, v in enumerate(values):
        high_bits[(v >> low) + i] = 1
    return bytes([low]) + _bits_to_bytes(low_bits) + _bits_to_bytes(high_bits)


def _sets(rng: np.random.Generator) -> list[list[int]]:
    edge = [
        [],
        [0],
        [TOP],
        [0, TOP],
        [TOP - 1, TOP],
        list(range(300)),
        list(range(TOP - 4095, TOP + 1)),
        [0, 1, 2, TOP],
        [5, 2**31, 2**31 + 1],
        [2**k for k in range(32)],
    ]
    drawn = []
    for size in (1, 2, 3, 7, 8, 9, 63, 64, 65, 255, 256, 257, 1000, 4096):
        for hi in (size + 3, 2**16, 2**24, 2**32):
            drawn.append(np.unique(rng.integers(0, hi, size, dtype=np.uint64)).tolist())
    clustered = np.unique(rng.integers(0, 40, 200) * 2**26 + rng.integers(0, 50, 200))
    # top-24-bit values, as a collection with fingerprint_bits 24 keeps them (shifted)
    masked = [sorted({v & ~0xFF for v in d}) for d in drawn[::3]]
    shifted = [[256], [TOP & ~0xFF], [0, 256, 512], [2**k for k in range(8, 32)]]
    return edge + drawn + [clustered.tolist()] + masked + shifted


def _encoded(blobs: list[bytes], counts: list[int]) -> kernel.Encoded:
    ends = np.cumsum([len(b) for b in blobs], dtype=np.uint64)
    starts = ends - np.array([len(b) for b in blobs], dtype=np.uint64)
    return kernel.Encoded(b"".join(blobs), starts, ends, np.array(counts, dtype=np.uint32))


def _clear(values: list[int]) -> bool:
    return all(v % (1 << SHIFT) == 0 for v in values)


def test_codec_matches_the_reference_and_round_trips() -> None:
    """The kernel writes exactly the reference's bytes, plain and (for values with clear
    low bits) shifted, and decodes both back to the values."""
    sets = _sets(np.random.default_rng(1))
    for values in sets:
        blob = kernel.encode_fingerprint(np.array(values, dtype=np.uint32))
        assert blob == reference_encode(values), values[:5]
        assert len(blob) <= kernel.encoded_bound(len(values))
        if values and _clear(values):
            shifted = kernel.encode_fingerprint(np.array(values, dtype=np.uint32), shifted=True)
            assert shifted == reference_encode(values, True) and shifted[0] & SHIFTED
            assert len(shifted) <= len(blob)
    blobs = [reference_encode(v) for v in sets]
    blobs += [reference_encode(v, True) for v in sets if v and _clear(v)]
    counts = [len(v) for v in sets] + [len(v) for v in sets if v and _clear(v)]
    values, offsets = kernel.decode_fingerprints(_encoded(blobs, counts))
    want = sets + [v for v in sets if v and _clear(v)]
    for i, v in enumerate(want):
        assert values[int(offsets[i]) : int(offsets[i + 1])].tolist() == v


def test_top_24_bit_values_are_stored_shifted_and_older_plain_encodings_still_read() -> None:
    """256 values with their low 8 bits clear take about 8 bits a value less than full ones
    when asked shifted; unasked (as for a collection of whole hashes) the plain encoding,
    which releases before the flag can read, and both decode to the same values; a value
    with a low bit set cannot be encoded shifted."""
    rng = np.random.default_rng(4)
    full = np.unique(rng.integers(0, 2**32, 256, dtype=np.uint64)).astype(np.uint32)
    top = np.unique(full & np.uint32(0xFFFFFF00))
    shifted = kernel.encode_fingerprint(top, shifted=True)
    assert len(shifted) <= len(kernel.encode_fingerprint(full)) - 240
    assert shifted[0] & SHIFTED and not kernel.encode_fingerprint(top)[0] & SHIFTED
    assert kernel.encode_fingerprint(np.array([256], np.uint32)) == reference_encode([256])
    with pytest.raises(kernel.InvalidParameterError):
        kernel.encode_fingerprint(full, shifted=True)
    for values in ([0], [256, 2**31], top.tolist()):
        assert _decode_one(reference_encode(values, False), len(values)) == values
        assert _decode_one(reference_encode(values, True), len(values)) == values
    # flagged bytes whose values would lose bits going back are malformed
    plain_top = reference_encode([TOP], False)
    assert _decode_one(bytes([plain_top[0] | SHIFTED]) + plain_top[1:], 1) is None


def test_a_batch_encodes_like_one_at_a_time() -> None:
    """encode_fingerprints over packed arrays gives each array's own encoding, in order."""
    sets = _sets(np.random.default_rng(2))
    offsets = np.zeros(len(sets) + 1, dtype=np.uint64)
    np.cumsum([len(v) for v in sets], out=offsets[1:])
    flat = np.array([x for v in sets for x in v], dtype=np.uint32)
    data, data_offsets = kernel.encode_fingerprints(flat, offsets)
    for i, v in enumerate(sets):
        lo, hi = int(data_offsets[i]), int(data_offsets[i + 1])
        assert data[lo:hi].tobytes() == reference_encode(v)


@pytest.mark.parametrize("values", [[3, 3], [5, 4], [0, 7, 6]])
def test_unsorted_input_is_refused(values: list[int]) -> None:
    """A fingerprint that is not strictly increasing is an argument error, not an encoding."""
    with pytest.raises(kernel.InvalidParameterError):
        kernel.encode_fingerprint(np.array(values, dtype=np.uint32))


def _decode_one(blob: bytes, count: int) -> list[int] | None:
    try:
        values, _ = kernel.decode_fingerprints(_encoded([blob], [count]))
    except kernel.MalformedFingerprintError:
        return None
    return values.tolist()


def test_truncated_padded_and_foreign_bytes_are_malformed() -> None:
    """Cut, lengthened, wrongly counted or impossible encodings raise; nothing is guessed."""
    good = [0, 17, 4000, 2**20, TOP]
    blob = reference_encode(good)
    assert _decode_one(blob, 5) == good
    for bad, count in (
        (blob[:-1], 5),
        (blob[:1], 5),
        (b"", 5),
        (blob + b"\0", 5),
        (blob + b"\1", 5),
        (blob, 4),
        (blob, 6),
        (b"\x21" + blob[1:], 5),  # L = 33
        (bytes([blob[0] - 1]) + blob[1:], 5),  # not the L the encoder chooses
        (b"\0\0", 1),  # no value in the high bits
        (b"\1", 0),  # bytes for an empty fingerprint
        (reference_encode(list(range(4097))), 4097),  # more than ND_MAX_FP_SIZE
    ):
        assert _decode_one(bad, count) is None, (bad, count)


def test_random_bytes_never_crash_and_decode_only_canonically() -> None:
    """Garbage and bit-flipped encodings either raise or are the exact encoding of what they
    decode to (so a value can never be misread silently as a different one)."""
    rng = np.random.default_rng(3)
    seeds = [reference_encode(v) for v in _sets(rng)[:30]]
    tried = decoded = 0
    for _ in range(3000):
        if rng.random() < 0.5:
            blob = rng.bytes(int(rng.integers(0, 64)))
            count = int(rng.integers(0, 80))
        else:
            base = bytearray(seeds[int(rng.integers(len(seeds)))] or b"\0")
            base[int(rng.integers(len(base)))] ^= 1 << int(rng.integers(8))
            blob, count = bytes(base), int(rng.integers(0, 40))
        got = _decode_one(blob, count)
        tried += 1
        if got is not None:
            decoded += 1
            assert len(got) == count and got == sorted(set(got))
            # the encoder's bytes: plain, or shifted (for values with clear low bits)
            forms = [reference_encode(got)] + ([reference_encode(got, True)] if _clear(got) else [])
            assert blob in forms
    assert tried == 3000 and decoded < tried


def test_ranges_outside_the_data_are_argument_errors() -> None:
    """A start after its end, or an end past the data, is refused before anything is read."""
    blob = reference_encode([1, 2, 3])
    for starts, ends in (([2], [1]), ([0], [len(blob) + 1])):
        enc = kernel.Encoded(
            blob, np.array(starts, np.uint64), np.array(ends, np.uint64), np.array([3], np.uint32)
        )
        with pytest.raises(kernel.InvalidParameterError):
            kernel.decode_fingerprints(enc)
        with pytest.raises(kernel.InvalidParameterError):
            kernel.jaccard_many_encoded(np.array([1], np.uint32), enc)


def _fingerprints(rng: np.random.Generator, n: int, fp_size: int) -> list[np.ndarray]:
    base = np.unique(rng.integers(0, 2**32, 3 * fp_size, dtype=np.uint64))
    out = []
    for _ in range(n):
        keep = base[rng.random(len(base)) < rng.uniform(0.2, 1.0)]
        extra = rng.integers(0, 2**32, int(rng.integers(0, fp_size)), dtype=np.uint64)
        values = np.unique(np.concatenate((keep, extra)))
        size = int(rng.choice([fp_size, fp_size // 2, 0, 1, 3 * fp_size]))
        out.append(values[: min(size, fp_size)].astype(np.uint32))
    return out


@pytest.mark.parametrize("fp_size", [16, 256])
def test_encoded_verification_equals_the_plain_one(fp_size: int) -> None:
    """Similarities from compressed candidates equal those from plain ones, bit for bit, on
    the SIMD and the scalar path, with and without a threshold."""
    rng = np.random.default_rng(fp_size)
    cands = _fingerprints(rng, 300, fp_size)
    enc = _encoded([kernel.encode_fingerprint(c) for c in cands], [len(c) for c in cands])
    for query in _fingerprints(rng, 6, fp_size):
        for threshold in (0.0, 0.3, 0.5, 0.9):
            for simd in (True, False):
                plain = kernel.jaccard_many(
                    query, cands, threshold, fingerprint_size=fp_size, simd=simd
                )
                packed = kernel.jaccard_many_encoded(
                    query, enc, threshold, fingerprint_size=fp_size, simd=simd
                )
                assert np.array_equal(plain, packed)
                if simd:
                    scalar = kernel.jaccard_many_encoded(
                        query, enc, threshold, fingerprint_size=fp_size, simd=False
                    )
                    assert np.array_equal(scalar, packed)


def test_complete_fingerprints_give_the_exact_jaccard() -> None:
    """For complete fingerprints the compressed path gives exact set Jaccard (plain Python)."""
    rng = np.random.default_rng(9)
    sets = [set(rng.integers(0, 500, int(rng.integers(1, 120))).tolist()) for _ in range(40)]
    arrays = [np.array(sorted(s), dtype=np.uint32) for s in sets]
    enc = _encoded([kernel.encode_fingerprint(a) for a in arrays], [len(a) for a in arrays])
    for q in sets[:5]:
        got = kernel.jaccard_many_encoded(np.array(sorted(q), np.uint32), enc)
        assert got.tolist() == [len(q & s) / len(q | s) for s in sets]


def test_a_malformed_candidate_is_reported() -> None:
    """Verification refuses a candidate that does not decode instead of scoring it."""
    good = reference_encode([1, 2, 3])
    enc = _encoded([good, good[:-1]], [3, 3])
    with pytest.raises(kernel.MalformedFingerprintError, match="fingerprint 1"):
        kernel.jaccard_many_encoded(np.array([1, 2, 3], np.uint32), enc)


@pytest.mark.parametrize("simd", [True, False])
def test_a_fingerprint_out_of_order_is_refused(simd: bool) -> None:
    """A query (or a listed candidate) that is not sorted and distinct is refused on both
    paths, which would otherwise disagree (found by fuzzing: 0.47 against 0.04)."""
    good = np.arange(16, dtype=np.uint32)
    enc = _encoded([kernel.encode_fingerprint(good)], [16])
    for bad in (np.full(17, 7, np.uint32), np.arange(17, dtype=np.uint32)[::-1].copy()):
        with pytest.raises(kernel.KernelError, match="sorted and distinct"):
            kernel.jaccard(bad, good, fingerprint_size=8, simd=simd)
        with pytest.raises(kernel.KernelError, match="sorted and distinct"):
            kernel.jaccard(good, bad, fingerprint_size=8, simd=simd)
        with pytest.raises(kernel.KernelError, match="sorted and distinct"):
            kernel.jaccard_many(good, [good, bad], simd=simd)
        with pytest.raises(kernel.KernelError, match="sorted and distinct"):
            kernel.jaccard_many_packed(bad, good, [0, 16], simd=simd)
        with pytest.raises(kernel.KernelError, match="sorted and distinct"):
            kernel.jaccard_many_encoded(bad, enc, simd=simd)


def test_indexes_out_of_their_range_are_kernel_errors() -> None:
    """Negative or too large offsets, starts and counts raise KernelError (a ValueError),
    not numpy's OverflowError; a count over the largest fingerprint is refused before
    room for it is allocated."""
    one = np.array([1], np.uint32)
    calls = (
        lambda: kernel.jaccard_many_packed(one, one, [-1, 0]),
        lambda: kernel.jaccard_many_packed(one, one, np.array([-1, 0], np.int64)),
        lambda: kernel.encode_fingerprints(one, [0, -1]),
        lambda: kernel.decode_fingerprints(kernel.Encoded(b"\0\1", [0], [2], [2**33])),
        lambda: kernel.jaccard_many_encoded(one, kernel.Encoded(b"\0\1", [-1], [2], [1])),
    )
    for call in calls:
        with pytest.raises(kernel.KernelError, match="must hold"):
            call()
    huge = kernel.Encoded(b"\0\1", np.array([0], np.uint64), np.array([2], np.uint64),
                          np.array([2**31], np.uint32))  # fmt: skip
    with pytest.raises(kernel.MalformedFingerprintError, match="claims"):
        kernel.decode_fingerprints(huge)
