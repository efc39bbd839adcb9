"""The id map (app/store/ids.py): where each id lives, its kept count, and the
count's compare-and-set, on one Redis and on a cluster."""

from __future__ import annotations

import asyncio

import pytest
from support.cluster import sync_client
from support.ids import key_for

from app.store import Store
from app.store.ids import IDS_PER_CALL

pytestmark = pytest.mark.both_stores


@pytest.mark.parametrize("buckets", [0, 16, 1 << 26])
def test_ids_live_where_their_rule_says_and_the_count_follows(
    store_url: str, collection: str, buckets: int
) -> None:
    """Each id's handle is in the HASH the documented rule names (one ids HASH, or the
    id bucket crc32(id) mod buckets), written and read back through the store, and the
    count follows new ids, repeated ones and removals (more ids than one script call
    takes, on a single server)."""
    names = [f"doc-{i}" for i in range(1200)] + ["ü/ß é", "x" * 512]
    assert len(names) > 2 * IDS_PER_CALL
    handles: list[int] = []

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        store.ids.use_buckets(buckets)
        try:
            handles[:], made = await store.ids.assign(names)
            assert made == [True] * len(names)
            assert len(set(handles)) == len(names)
            assert await store.ids.assign(names[:50]) == (handles[:50], [False] * 50)  # known
            assert await store.ids.count() == len(names)
            await store.ids.forget(names[:30], handles[:30])
            await store.ids.forget(names[30:40], [h + 10_000 for h in handles[30:40]])  # moved
            assert await store.ids.count() == len(names) - 30
            assert await store.ids.handles(names[25:35]) == [None] * 5 + handles[30:35]
            mapped = {i: h async for i, h in store.ids.mappings(batch=64)}
            assert mapped == dict(zip(names[30:], handles[30:], strict=True))
        finally:
            await store.close()

    asyncio.run(run())
    r = sync_client(store_url)
    try:
        for name, h in zip(names, handles, strict=True):
            want = None if name in names[:30] else str(h).encode()
            assert r.hget(key_for(collection, buckets, name), name) == want
        if buckets:
            assert r.exists(f"nd:{collection}:ids") == 0
            count = r.hgetall(f"nd:{collection}:count")
            assert int(count[b"n"]) == len(names) - 30
            assert int(count[b"gen"]) == len(names) + 30  # every mapping and unmapping
    finally:
        r.close()


def test_the_count_is_set_only_while_the_id_map_is_unchanged(
    store_url: str, collection: str
) -> None:
    """The check's compare-and-set of the kept id count refuses once an id was mapped or
    dropped since the generation it was given (an add and a delete that leave the count
    as it was too) or once the count moved, and sets it otherwise."""

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        store.ids.use_buckets(16)
        try:
            handles, _ = await store.ids.assign(["a", "b"])
            n, gen = await store.ids.kept_count() or (0, 0)
            assert (n, gen) == (2, 2)
            (c,), _ = await store.ids.assign(["c"])
            await store.ids.forget(["a"], [handles[0]])  # the count is 2 again
            assert await store.ids.kept_count() == (2, 4)
            assert not await store.ids.set_count(gen, 2, 7)  # the map changed
            assert not await store.ids.set_count(4, 3, 7)  # the count is not 3
            assert await store.ids.set_count(4, 2, 7)
            assert await store.ids.kept_count() == (7, 4) and await store.ids.count() == 7
            assert not await store.ids.set_count(4, 2, 7)  # a second pass: already mended
            assert c not in handles
        finally:
            await store.close()

    asyncio.run(run())


def test_a_sparse_id_map_is_read_by_its_keys_not_its_buckets(
    redis_url: str, collection: str
) -> None:
    """An id map of 2^26 buckets (a collection made for a billion ids) holding a few ids
    reads each id once with a few hundred HGETALLs, not one per bucket (67 million)."""
    import redis

    names = [f"sparse-{i}" for i in range(300)]

    async def run() -> dict[str, int]:
        store = Store.connect(redis_url, collection, 5.0)
        store.ids.use_buckets(1 << 26)
        try:
            handles, _ = await store.ids.assign(names)
            got = {i: h async for i, h in store.ids.mappings()}
            assert got == dict(zip(names, handles, strict=True))
            return got
        finally:
            await store.close()

    with redis.Redis.from_url(redis_url) as r:
        before = r.info("commandstats").get("cmdstat_hgetall", {}).get("calls", 0)
        assert len(asyncio.run(run())) == len(names)
        after = r.info("commandstats")["cmdstat_hgetall"]["calls"]
    assert after - before <= len(names)


def test_the_key_count_is_every_masters(store_url: str) -> None:
    """Transport.key_count is the keys of the whole store: DBSIZE summed over a cluster's
    masters, as each master counts its own."""
    import redis

    from app.core.redis_url import parse_cluster_url

    async def run() -> int:
        store = Store.connect(store_url, "keys", 5.0)
        try:
            return await store.transport.key_count()
        finally:
            await store.close()

    counted = asyncio.run(run())
    cluster = parse_cluster_url(store_url)
    if cluster is None:
        with redis.Redis.from_url(store_url) as r:
            assert counted == r.dbsize()
        return
    r = sync_client(store_url)
    try:
        masters = r.get_primaries()
        assert counted == sum(r.dbsize(target_nodes=node) for node in masters)
        assert len(masters) > 1
    finally:
        r.close()
