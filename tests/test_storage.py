"""The band layout (bucketed HASHes, spilled sorted sets) against a dict-of-sets model."""

from __future__ import annotations

import asyncio
import random

import numpy as np
import pytest

from app.store import MAX_INLINE, Store, StoreError, buckets_for
from app.store.layout import ENTRIES_PER_BUCKET, Layout
from app.store.resp import encode

pytestmark = pytest.mark.both_stores


def _keys(rng: random.Random, n: int) -> np.ndarray:
    return np.array([rng.getrandbits(64) for _ in range(n)] + [0, 2**64 - 1], dtype=np.uint64)


@pytest.mark.parametrize("buckets", [1, 16, 1 << 17, 1 << 24])
def test_vectorised_band_commands_equal_the_plain_encoding(buckets: int) -> None:
    """band_commands' numpy-built commands are byte for byte what encode makes of each one."""
    layout = Layout("c-1_x")
    layout.use_band_buckets(buckets)
    keys = _keys(random.Random(buckets), 50)
    handles = np.arange(1, len(keys) + 1, dtype=np.int64) * 65_537
    plain = b"".join(
        encode(b"HSETNX", *layout.band_place(k)[:2], int(h).to_bytes(4, "little"))
        for k, h in zip(keys.tolist(), handles.tolist(), strict=True)
    )
    assert layout.band_commands(b"HSETNX", keys, handles).packed() == (plain, len(keys))
    plain = b"".join(encode(b"HGET", *layout.band_place(k)[:2]) for k in keys.tolist())
    assert layout.band_commands(b"HGET", keys).packed() == (plain, len(keys))
    one_by_one = [(b"HGET", *layout.band_place(k)[:2]) for k in keys.tolist()]
    assert layout.band_commands(b"HGET", keys).commands() == one_by_one  # a cluster's


def test_bucket_count_is_a_power_of_two_that_grows_with_entries() -> None:
    """buckets_for keeps ~ENTRIES_PER_BUCKET entries a bucket, within its bounds."""
    for entries in [0, 1, 1000, 4_200_000, 42 * 10**9]:
        b = buckets_for(entries)
        assert b & (b - 1) == 0 and 16 <= b <= 1 << 24
        if 16 < b < 1 << 24:
            assert entries / b <= ENTRIES_PER_BUCKET < 2 * entries / b


def test_band_memberships_follow_a_dict_of_sets(store_url: str, collection: str) -> None:
    """Random adds and removes, with hot keys that spill past MAX_INLINE, read back
    exactly like a dict of sets: through band_lookup, band_window and band_memberships."""
    rng = random.Random(7)

    async def run() -> None:
        store = Store.connect(store_url, collection, 2.0)
        store.use_band_buckets(16)  # few buckets: many band keys share each HASH
        model: dict[int, set[int]] = {}
        keys = _keys(rng, 40).tolist()
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
                await store.add_bands(adds)
                for h, ks in adds:
                    for k in ks.tolist():
                        model.setdefault(k, set()).add(h)
                await store.remove_bands(removes)
                for h, ks in removes:
                    for k in ks.tolist():
                        model.get(k, set()).discard(h)
                model = {k: v for k, v in model.items() if v}

                stored = {k: set(hs) async for k, hs in store.band_memberships()}
                assert stored == model
                spilled = []
                for k in keys:
                    inline, sized = await store.band_lookup(np.array([k], dtype=np.uint64))
                    if sized:  # spilled: its size
                        assert not len(inline) and sized == [(0, len(model[k]))]
                        spilled.append((k, sized[0][1]))
                    else:
                        assert sorted(inline.tolist()) == sorted(model.get(k, ()))  # none twice
                        assert len(model.get(k, ())) <= MAX_INLINE  # else spilled
                both, sized = await store.band_lookup(np.array(keys, dtype=np.uint64))
                assert [(keys[i], n) for i, n in sized] == spilled
                inline_keys = [k for k in keys if k not in dict(spilled)]
                members = [h for k in inline_keys for h in model.get(k, ())]
                assert sorted(both.tolist()) == sorted(members)
                starts = [rng.randint(0, size) for _, size in spilled]
                windows = await store.band_window(
                    np.array([k for k, _ in spilled], dtype=np.uint64), starts, [4] * len(spilled)
                )
                for (k, _), start, got in zip(spilled, starts, windows, strict=True):
                    assert got.tolist() == sorted(model[k])[start : start + 4]
            assert any(len(v) > MAX_INLINE for v in model.values())  # the spill path ran
        finally:
            await store.close()

    asyncio.run(run())


def test_a_handle_past_32_bits_is_refused(redis_url: str, collection: str) -> None:
    """Handles are stored in 4 bytes, so a larger one is a StoreError, not a wrap-around."""

    async def run() -> None:
        store = Store.connect(redis_url, collection, 2.0)
        try:
            with pytest.raises(StoreError, match="full"):
                await store.add_bands([(2**32, np.array([1], dtype=np.uint64))])
        finally:
            await store.close()

    asyncio.run(run())
