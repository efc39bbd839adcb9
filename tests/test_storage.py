"""The band layout (bucketed HASHes, spilled sorted sets) against a dict-of-sets model."""

from __future__ import annotations

import asyncio
import random

import hiredis
import numpy as np
import pytest

from app.index import records
from app.store import MAX_INLINE, Store, StoreError, buckets_for
from app.store.layout import ENTRIES_PER_BUCKET, Layout
from app.store.resp import encode

pytestmark = pytest.mark.both_stores


def _keys(rng: random.Random, n: int) -> np.ndarray:
    return np.array([rng.getrandbits(64) for _ in range(n)] + [0, 2**64 - 1], dtype=np.uint64)


# A passage anchor's key, written out here (app.index.sketch makes them): a 32-bit hash
# times an odd multiplier, salted, mod 2**64.
_SPREAD, _SALT = 0xD6E8FEB86659FD93, 0x9E3779B97F4A7C15


def _anchor_key(h: int) -> int:
    return ((h * _SPREAD) % 2**64) ^ _SALT


def _mixed_keys(rng: random.Random, n: int) -> tuple[np.ndarray, dict[int, bytes]]:
    """Band keys and anchors' keys, interleaved, and the 4-byte field each anchor's key
    must have in a collection with short anchor fields (its hash)."""
    anchors = {}
    for h in [rng.getrandbits(32) for _ in range(n)] + [0, 2**32 - 1]:
        anchors[_anchor_key(h)] = h.to_bytes(4, "little")
    keys = [k for pair in zip(_keys(rng, n).tolist(), anchors, strict=False) for k in pair]
    return np.array(keys, dtype=np.uint64), anchors


@pytest.mark.parametrize("short", [None, "mixed", "bands first"])
@pytest.mark.parametrize("buckets", [1, 16, 1 << 17, 1 << 24, 1 << 29, 1 << 32])
def test_vectorised_band_commands_equal_the_plain_encoding(buckets: int, short: str | None) -> None:
    """band_commands' numpy-built commands are byte for byte what encode makes of each one
    (with short anchor fields: band keys and anchors' keys mixed, or band keys first as an
    ingest sends them, in their order)."""
    layout = Layout("c-1_x")
    layout.use_band_buckets(buckets)
    layout.use_short_anchors(short is not None)
    keys, anchors = _mixed_keys(random.Random(buckets), 25)
    if short is None:
        keys = _keys(random.Random(buckets), 50)
    elif short == "bands first":
        keys = np.array(sorted(keys.tolist(), key=lambda k: k in anchors), dtype=np.uint64)
    handles = np.arange(1, len(keys) + 1, dtype=np.int64) * 65_537
    sets = [
        (b"HSETNX", *layout.band_place(k)[:2], int(h).to_bytes(4, "little"))
        for k, h in zip(keys.tolist(), handles.tolist(), strict=True)
    ]
    one_by_one = [(b"HGET", *layout.band_place(k)[:2]) for k in keys.tolist()]
    for batch, want in (
        (layout.band_commands(b"HSETNX", keys, handles), sets),
        (layout.band_commands(b"HGET", keys), one_by_one),
    ):
        raw, count = batch.packed()
        if short is None:  # one template: the commands in order
            assert (raw, count) == (b"".join(encode(*c) for c in want), len(keys))
        # As Redis reads them; the reply to each (here: the command itself) in order.
        reader = hiredis.Reader()
        reader.feed(raw)
        sent = [tuple(reader.gets()) for _ in range(count)]
        assert reader.gets() is False  # nothing more
        assert batch.replies(sent) == want
    assert layout.band_commands(b"HGET", keys).commands() == one_by_one  # a cluster's
    # As a script's arguments (the candidates script's tail): each row's, in order.
    args = b"".join(encode(*c[1:])[len(b"*2\r\n") :] for c in one_by_one)
    assert layout.band_commands(b"HGET", keys).arguments() == (args, 2 * len(keys))


def test_short_anchor_fields_are_the_anchor_hash() -> None:
    """With short anchor fields an anchor's key has its 32-bit hash as its field, any
    other key its 8 bytes, in the same bucket; band_key reads every field back; without
    them every field is 8 bytes."""
    keys, anchors = _mixed_keys(random.Random(3), 200)
    for short in (False, True):
        layout = Layout("c")
        layout.use_band_buckets(1 << 12)
        layout.use_short_anchors(short)
        for k in keys.tolist():
            bucket, field, spill = layout.band_place(k)
            want = anchors[k] if short and k in anchors else k.to_bytes(8, "little")
            assert field == want
            assert bucket == b"nd:c:B{%03x}" % (k >> 52)
            assert spill == b"nd:c:S{%03x}" % (k >> 52) + want
            assert layout.band_key(bucket, field) == k
        assert layout.entry_keys(keys).tolist() == keys.tolist()


@pytest.mark.parametrize("width", [4, 2])
@pytest.mark.parametrize("buckets", [1, 16, 1 << 17, 1 << 24, 1 << 29, 1 << 32])
def test_short_fields_are_a_keys_low_bytes_and_read_back_as_its_place(
    buckets: int, width: int
) -> None:
    """With short fields every key (band key or anchor's) has its low 4 (or 2) bytes as its
    field, in the bucket of its top bits; band_key reads back the key with only those bits,
    which is what entry_keys makes of it, and two keys differing only between them share a
    place."""
    keys, _ = _mixed_keys(random.Random(buckets), 200)
    layout = Layout("c")
    layout.use_band_buckets(buckets)
    layout.use_short_anchors(True)
    layout.use_short_fields(True, width)
    bits = buckets.bit_length() - 1
    top = ((1 << bits) - 1) << (64 - bits) if bits else 0
    low = (1 << 8 * width) - 1
    for k in keys.tolist():
        bucket, field, spill = layout.band_place(k)
        assert field == (k & low).to_bytes(width, "little")
        digits = b"%x" % (k >> (64 - bits)) if bits else b"0"
        assert bucket == b"nd:c:B{" + digits.rjust(max(1, -(-bits // 4)), b"0") + b"}"
        assert spill == b"nd:c:S{" + bucket[len(b"nd:c:B{") :] + field
        place = k & (top | low)
        assert layout.band_key(bucket, field) == place
        if bits + 8 * width < 64:  # else the place is the whole key
            twin = k ^ (1 << 8 * width)  # a bit neither keeps
            assert layout.band_place(twin) == (bucket, field, spill)
    assert layout.entry_keys(keys).tolist() == [k & (top | low) for k in keys.tolist()]
    rows = layout.band_entries(keys, np.arange(len(keys), dtype=np.uint32))
    assert [w for w, _ in rows] == [width]
    digits_n = int(layout.band_heads[2])  # then "}", which ends the bucket's name
    head = len(layout.band_heads[0])
    tails = [bytes(row[: digits_n + 1]) for row in rows[0][1]]
    assert tails == [layout.band_place(k)[0][head:] for k in keys.tolist()]
    got = [bytes(row[digits_n + 1 : digits_n + 1 + width]) for row in rows[0][1]]
    assert got == [layout.band_place(k)[1] for k in keys.tolist()]


def test_bucket_count_is_a_power_of_two_that_grows_with_entries() -> None:
    """buckets_for keeps ~ENTRIES_PER_BUCKET entries a bucket, within its bounds, up to a
    billion documents' entries (past 2**24 buckets) and no further than 2**32."""
    for entries in [0, 1, 1000, 4_200_000, 66 * 10**9, 10**15]:
        b = buckets_for(entries)
        assert b & (b - 1) == 0 and 16 <= b <= 1 << 32
        if 16 < b < 1 << 32:
            assert entries / b <= ENTRIES_PER_BUCKET < 2 * entries / b
    assert buckets_for(66 * 10**9) == 1 << 31  # a billion documents of ~66 entries
    with pytest.raises(ValueError):
        Layout("c").use_band_buckets(1 << 33)


@pytest.mark.parametrize("short", [False, True, "fields", "packed"])
def test_band_memberships_follow_a_dict_of_sets(
    store_url: str, collection: str, short: bool | str
) -> None:
    """Random adds and removes, with hot keys that spill past MAX_INLINE, read back
    exactly like a dict of sets: through bands.lookup, window, members and
    memberships (with short anchor fields: anchors' keys among the band keys, each
    stored under its 4-byte hash; with short fields, every key under its low 4 bytes,
    memberships read back as entry_keys; packed: short fields, hot bands spilled to
    packed STRINGs)."""
    rng = random.Random(7)
    packed = short == "packed"
    if packed:
        short = "fields"

    async def run() -> None:
        store = Store.connect(store_url, collection, 2.0)
        # Few buckets: many band keys share each HASH.
        store.use_band_buckets(16, bool(short), short == "fields", packed_spills=packed)
        model: dict[int, set[int]] = {}
        mixed, anchors = _mixed_keys(rng, 20)
        keys = (mixed if short else _keys(rng, 40)).tolist()
        hot = keys[:3]
        try:
            for _ in range(12):
                adds, removes = [], []
                for _ in range(30):
                    h = rng.randint(1, 400)
                    chosen = rng.sample(keys, 5) + [rng.choice(hot)] * 2  # duplicates too
                    adds.append((h, np.array(chosen, dtype=np.uint64)))
                for _ in range(10):
                    key = rng.choice(keys)
                    victims = [*sorted(model.get(key, ())), 999]  # 999 never added
                    removes.append((rng.choice(victims), np.array([key], dtype=np.uint64)))
                await store.bands.add(adds)
                for h, ks in adds:
                    for k in ks.tolist():
                        model.setdefault(k, set()).add(h)
                await store.bands.remove(removes)
                for h, ks in removes:
                    for k in ks.tolist():
                        model.get(k, set()).discard(h)
                model = {k: v for k, v in model.items() if v}

                stored = {k: set(hs) async for k, hs in store.bands.memberships()}
                places = store.entry_keys(np.array(list(model), dtype=np.uint64)).tolist()
                assert stored == dict(zip(places, model.values(), strict=True))
                spilled = []
                for k in keys:
                    inline, sized = await store.bands.lookup(np.array([k], dtype=np.uint64))
                    if sized:  # spilled: its size
                        assert not len(inline) and sized == [(0, len(model[k]))]
                        spilled.append((k, sized[0][1]))
                    else:
                        assert sorted(inline.tolist()) == sorted(model.get(k, ()))  # none twice
                        assert len(model.get(k, ())) <= MAX_INLINE  # else spilled
                both, sized = await store.bands.lookup(np.array(keys, dtype=np.uint64))
                assert [(keys[i], n) for i, n in sized] == spilled
                inline_keys = [k for k in keys if k not in dict(spilled)]
                members = [h for k in inline_keys for h in model.get(k, ())]
                assert sorted(both.tolist()) == sorted(members)
                starts = [rng.randint(0, size) for _, size in spilled]
                windows = await store.bands.window(
                    np.array([k for k, _ in spilled], dtype=np.uint64), starts, [4] * len(spilled)
                )
                for (k, _), start, got in zip(spilled, starts, windows, strict=True):
                    assert got.tolist() == sorted(model[k])[start : start + 4]
                above = rng.randint(0, 400)
                hot_keys = np.array([k for k, _ in spilled], dtype=np.uint64)
                firsts, complete = await store.bands.members(hot_keys, above, 3)
                for (k, _), got, whole in zip(spilled, firsts, complete, strict=True):
                    want = sorted(h for h in model[k] if h > above)
                    assert got.tolist() == want[:3]
                    assert whole if len(want) < 3 else (not whole or len(want) == 3)
            assert any(len(v) > MAX_INLINE for v in model.values())  # the spill path ran
            # Every field as stored: an anchor's hash, or the key's 8 bytes.
            want = {
                anchors[k] if short and k in anchors else k.to_bytes(8, "little") for k in model
            }
            if short == "fields":
                want = {(k & 0xFFFFFFFF).to_bytes(4, "little") for k in model}
            assert await _fields(store) == want
            widths = {"fields": {4}, True: {4, 8}, False: {8}}[short]
            assert {len(f) for f in want} == widths
        finally:
            await store.close()

    asyncio.run(run())


async def _fields(store: Store) -> set[bytes]:
    """Every field of the collection's bucket HASHes, read with HKEYS."""
    out: set[bytes] = set()
    async for bucket in store.transport.scan(f"nd:{store.collection}:B{{*".encode()):
        (fields,) = await store.transport.commands([(b"HKEYS", bucket)])
        out |= set(fields)
    return out


def test_a_handle_past_32_bits_is_refused(redis_url: str, collection: str) -> None:
    """Handles are stored in 4 bytes, so a larger one is a StoreError, not a wrap-around."""

    async def run() -> None:
        store = Store.connect(redis_url, collection, 2.0)
        try:
            with pytest.raises(StoreError, match="full"):
                await store.bands.add([(2**32, np.array([1], dtype=np.uint64))])
        finally:
            await store.close()

    asyncio.run(run())


@pytest.mark.parametrize("buckets", [1 << 10, 1 << 29, 1 << 32])
def test_similar_by_id_finds_anchor_form_band_keys_where_the_store_wrote_them(
    redis_url: str, collection: str, buckets: int
) -> None:
    """A record whose band keys include anchors' keys (a band key is one with odds of
    2**-32) gets, through the similar_by_id script's own field mapping and bucket
    numbers (past 24 bits too), the handles the store wrote under those keys' 4-byte
    fields: each key shared by one other handle."""
    rng = random.Random(5)

    async def run() -> None:
        store = Store.connect(redis_url, collection, 2.0)
        store.use_band_buckets(buckets, True)
        try:
            hashes = [0, 1, 2**31, 2**32 - 1] + [rng.getrandbits(32) for _ in range(20)]
            keys = [_anchor_key(h) for h in hashes] + [rng.getrandbits(64) for _ in range(4)]
            names = ["a"] + [f"b{i}" for i in range(len(keys))]
            handles, _ = await store.ids.assign(names)
            raw = records.pack(
                "a", np.arange(8, dtype=np.uint32), np.array(keys, np.uint64), 8, None
            )
            await store.put_records([(handles[0], raw)])
            shares = [(h, np.array([k], np.uint64)) for h, k in zip(handles[1:], keys, strict=True)]
            await store.bands.add([(handles[0], np.array(keys, np.uint64)), *shares])
            handle, got_raw, found = await store.similar_by_id("a", 100, 1000, 1000)
            assert handle == handles[0] and got_raw == raw and found is not None
            assert sorted(found.handles.tolist()) == sorted(handles[1:])
            widths = {len(f) for f in await _fields(store)}
            assert widths == {4, 8}
        finally:
            await store.close()

    asyncio.run(run())
