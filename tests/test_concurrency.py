"""Concurrent writers of a few ids, checked against per-id register semantics.

Many clients on two Index instances (two service processes, each with its own
connections) issue random PUTs, DELETEs, batches that may name an id twice and
ingests with similar=True, on a handful of ids. Every operation is recorded with
when it started and ended. After quiescence the stored state must be the outcome
of some sequential order of the operations: each id holds the value of a write
(or is absent after a delete) that no other acknowledged operation on that id
started after. Queries must answer each id at most once and only for its current
text, the consistency check must find nothing, and deleting every id must leave
only the collection's configuration keys.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from dataclasses import dataclass, field

import pytest
from support.cluster import sync_client
from support.keys import scan_keys

from app.index import Document, Index, Params
from app.index.check import check, check_ids
from app.index.errors import HandleCounterError
from app.index.similarity import query
from app.index.sketch import sketch
from app.store import Store

pytestmark = pytest.mark.both_stores

IDS = ["x", "y", "z"]
CLIENTS = 12
OPS_PER_CLIENT = 40
ROUNDS = 3


def _texts(n: int) -> list[str]:
    """n texts over disjoint vocabularies: each is a near-duplicate of itself only."""
    return [" ".join(f"w{k}n{j}" for j in range(60)) for k in range(n)]


TEXTS = _texts(4)


@dataclass
class Op:
    """One operation of the history: what it wrote per id (None: a delete) and when."""

    n: int
    kind: str
    writes: dict[str, int | None]  # id -> text number written, None for a delete
    start: float = 0.0
    end: float = float("inf")
    ok: bool = False
    answers: list[list[str]] = field(default_factory=list)


async def _client(
    index: Index, rng: random.Random, ops: list[Op], counter: itertools.count
) -> None:
    for _ in range(OPS_PER_CLIENT):
        n = next(counter)
        kind = rng.choice(["put", "put", "delete", "batch", "similar"])
        op = Op(n, kind, {})
        try:
            if kind == "delete":
                doc_id = rng.choice(IDS)
                op.writes[doc_id] = None
                op.start = time.monotonic()
                await index.delete(doc_id)
            else:
                size = rng.randint(2, 4) if kind == "batch" else 1
                docs = []
                for _ in range(size):
                    doc_id, t = rng.choice(IDS), rng.randrange(len(TEXTS))
                    docs.append(Document(TEXTS[t], doc_id, {"op": n, "text": t}))
                    op.writes[doc_id] = t  # a later occurrence in a batch wins
                op.start = time.monotonic()
                results = await index.ingest(docs, similar=kind == "similar")
                op.answers = [
                    [m.id for m in r.similar.results] for r in results if r.similar is not None
                ]
            op.end = time.monotonic()
            op.ok = True
        finally:
            ops.append(op)
        await asyncio.sleep(rng.random() * 0.002)


def _possible_finals(ops: list[Op], doc_id: str) -> set[int | None]:
    """What doc_id may hold after the history: the value of any operation on it that
    no acknowledged operation on it started after (None if that is a delete, or if
    nothing acknowledged wrote it)."""
    on_id = [o for o in ops if doc_id in o.writes]
    acked = [o for o in on_id if o.ok]
    finals: set[int | None] = {
        o.writes[doc_id] for o in on_id if not any(p.start > o.end for p in acked)
    }
    if not acked:
        finals.add(None)
    return finals


async def _history(url: str, collection: str, seed: int) -> tuple[list[Op], Index]:
    params = Params.create("word:3", 64, 128, 1, 0.5)
    indexes = [await Index.open(Store.connect(url, collection, 5.0), params, 200) for _ in range(2)]
    rng = random.Random(seed)
    ops: list[Op] = []
    counter = itertools.count()
    await asyncio.gather(
        *(
            _client(indexes[c % 2], random.Random(rng.random()), ops, counter)
            for c in range(CLIENTS)
        )
    )
    await indexes[1].store.close()
    return ops, indexes[0]


@pytest.mark.parametrize("seed", range(ROUNDS))
def test_contended_writes_leave_a_sequential_outcome(
    store_url: str, collection: str, seed: int
) -> None:
    """After racing PUT/DELETE/batch/similar writes, every id holds what some sequential
    order of the acknowledged writes leaves, queries show no ghost or repeated id, the
    check finds nothing, and deleting every id leaves only the configuration keys."""

    async def run() -> None:
        ops, index = await _history(store_url, f"{collection}s{seed}", seed)
        try:
            for op in ops:
                for answer in op.answers:
                    assert len(answer) == len(set(answer)), f"op {op.n} answered {answer}"
            final: dict[str, int | None] = {}
            for doc_id in IDS:
                got = await index.get(doc_id)
                final[doc_id] = None if got is None else got.metadata["text"]
                assert final[doc_id] in _possible_finals(ops, doc_id), doc_id
            for t, text in enumerate(TEXTS):
                answer = [m.id for m in (await index.similar_to_text(text, limit=100)).results]
                assert len(answer) == len(set(answer)), answer
                assert set(answer) == {i for i in IDS if final[i] == t}
            report = await check(index)
            assert report.clean, report.as_dict()
            assert report.ids == sum(v is not None for v in final.values())
            for doc_id in IDS:
                await index.delete(doc_id)
            for text in TEXTS:
                assert (await index.similar_to_text(text)).results == []
            left = {key.rsplit(b":", 1)[-1] async for key in scan_keys(index.store)}
            assert left <= {b"config", b"next", b"count", b"M"}, left  # M: marks, kept
            assert (await check(index)).clean
        finally:
            await index.store.close()

    asyncio.run(run())


def test_check_finds_and_repairs_debris(store_url: str, collection: str) -> None:
    """Debris of every kind, made by hand the way a crash or a lost lock would leave it
    (or a write into a collection deleted and made again), is found by kind, without a
    crash, and removed by repair, while the live documents keep answering."""

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        index = await Index.open(store, Params.create("word:3", 64, 128, 1, 0.5), 200)
        try:
            await index.ingest([Document(TEXTS[0], "live"), Document(TEXTS[1], "ghost")])
            (ghost,) = await store.ids.handles(["ghost"])
            ghost_rec = await index.get("ghost")
            assert ghost is not None and ghost_rec is not None
            # A handle that lost its id: the mapping goes, record and bands stay.
            await store.ids.forget(["ghost"], [ghost])
            # A write that stopped after its bands: an id, bands, no record.
            (dangling,), _ = await store.ids.assign(["half"])
            await store.bands.add([(dangling, ghost_rec.band_keys[:5])])
            # Bands of a handle nobody has.
            await store.bands.add([(10_000, ghost_rec.band_keys[:3])])
            (live,) = await store.ids.handles(["live"])
            live_rec = await index.get("live")
            assert live is not None and live_rec is not None
            # A replace that stopped before removing its stale bands; one band lost.
            await store.bands.add([(live, ghost_rec.band_keys[5:7])])
            await store.bands.remove([(live, live_rec.band_keys[:1])])
            # A delete of an expiring document that stopped before its queue entry.
            await store.add_expiries([(20_000, 1)])
            # Two deletes that stopped between their HDEL and their DECRBY (a cluster's).
            _move_count(store_url, collection, 2)
            # An entry of another layout's width, in one of this collection's buckets (a
            # write that ran on while the collection was deleted and made anew).
            bucket = await anext(store.transport.scan(store._keys.buckets_pattern))
            head = bucket[: bucket.index(b"{") + 1]
            wider = head + b"0" + bucket[len(head) :]  # a layout of 16 times the buckets
            field = (await store.transport.commands([(b"HKEYS", bucket)]))[0][0]
            await store.transport.commands(
                [
                    (b"HSET", bucket, b"\x01\x02\x03\x04\x05", b"\x07\x00\x00\x00"),
                    (b"HSET", wider, field, b"\x07\x00\x00\x00"),
                ],
                write=True,
            )
            # ... and a text it kept, in this collection that keeps none.
            await store.put_texts([(30_000, b"a text kept by another making of it")])

            found = await check(index)
            assert found.found == {
                "dangling_ids": 1,
                "orphan_records": 1,
                "orphan_bands": 3,
                "foreign_bands": 2,
                "stray_bands": 2,
                "missing_bands": 1,
                "unmarked": 0,
                "orphan_texts": 1,  # this collection keeps none: any text is another's
                "stale_texts": 0,
                "stale_expiries": 1,
                "far_expiries": 0,
                "handle_counter": 10_000 - 3,  # the bands' handle was never given out
                "id_count": 2,
            }
            assert [m.id for m in (await index.similar_to_text(TEXTS[1])).results] == ["ghost"]
            repaired = await check(index, repair=True)
            assert repaired.repaired == repaired.found
            assert (await check(index)).clean
            assert (await index.similar_to_text(TEXTS[1])).results == []
            assert [m.id for m in (await index.similar_to_text(TEXTS[0])).results] == ["live"]
            assert await store.ids.handles(["half"]) == [None]
            assert await store.expiries() == []
        finally:
            await store.close()

    asyncio.run(run())


@pytest.mark.parametrize("drift", [-3, 4])
def test_start_up_pass_mends_the_kept_id_count(store_url: str, collection: str, drift: int) -> None:
    """A kept id count a crash left off (an INCRBY or DECRBY lost after its HSETNX or
    HDEL) is found and set right by the start-up pass, with a dangling id dropped in the
    same pass, so the count /readyz gives is the ids GET can read."""

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        index = await Index.open(store, Params.create("word:3", 64, 128, 1, 0.5), 200)
        try:
            await index.ingest([Document(t, f"d{i}") for i, t in enumerate(TEXTS[:4])])
            await store.ids.assign(["half"])  # a write cut before its bands and record
            _move_count(store_url, collection, drift)
            found = await check_ids(index)
            assert found.found["id_count"] == abs(drift) and found.found["dangling_ids"] == 1
            assert await store.ids.count() == max(0, 5 + drift)  # nothing repaired yet
            repaired = await check_ids(index, repair=True)
            assert repaired.repaired == repaired.found
            assert await store.ids.count() == 4 == len({i async for i, _ in store.ids.mappings()})
            assert (await check(index)).clean
        finally:
            await store.close()

    asyncio.run(run())


def test_a_lost_handle_counter_overwrites_no_document(store_url: str, collection: str) -> None:
    """With the handle counter's key gone (an eviction, a lagging failover, a DEL), a new
    document is refused (a 503's error) rather than given a handle in use: every stored
    document keeps its own text and no id is left mapped. The start-up pass and the full
    check find the counter behind; repair moves it past every handle, and writes go on."""

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        index = await Index.open(store, Params.create("word:3", 64, 128, 1, 0.5), 200)
        try:
            await index.ingest([Document(t, f"d{i}") for i, t in enumerate(TEXTS[:3])])
            r = sync_client(store_url)
            r.delete(f"nd:{collection}:next")
            r.close()
            with pytest.raises(HandleCounterError, match="check --repair"):
                await index.ingest([Document(TEXTS[3], "new")])
            assert await store.ids.handles(["new"]) == [None]
            for i in range(3):
                rec = await index.get(f"d{i}")
                assert rec is not None and rec.id == f"d{i}"
                hits = (await index.similar_to_text(TEXTS[i])).results
                assert [m.id for m in hits] == [f"d{i}"]
            assert (await check_ids(index)).found["handle_counter"] >= 2
            assert (await check(index)).found["handle_counter"] == 3 - await store.ids.last_handle()
            assert (await check_ids(index, repair=True)).repaired["handle_counter"] > 0
            assert (await check(index)).clean
            await index.ingest([Document(TEXTS[3], "new")])
            for i in range(4):
                name = "new" if i == 3 else f"d{i}"
                assert [m.id for m in (await index.similar_to_text(TEXTS[i])).results] == [name]
        finally:
            await store.close()

    asyncio.run(run())


def test_an_id_whose_handle_was_given_again_is_mapped_anew(store_url: str, collection: str) -> None:
    """An id left mapped without its record (a cut write) whose handle a counter that went
    back gave to another document: the check finds it dangling and repair unmaps it, or
    writing the id again gives it a new handle; the other document is untouched."""

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        index = await Index.open(store, Params.create("word:3", 64, 128, 1, 0.5), 200)
        r = sync_client(store_url)
        try:
            await index.ingest([Document(t, f"d{i}") for i, t in enumerate(TEXTS[:3])])
            for repaired in (True, False):
                (cut,), _ = await store.ids.assign(["cut"])  # a write that stopped there
                r.set(f"nd:{collection}:next", cut - 1)  # the counter went back one
                await index.ingest([Document(TEXTS[3], f"x{repaired}")])
                assert await store.ids.handles([f"x{repaired}", "cut"]) == [cut, cut]
                found = await check(index)
                assert found.found["dangling_ids"] == 1, found.found
                if repaired:
                    assert (await check(index, repair=True)).repaired["dangling_ids"] == 1
                    assert await store.ids.handles(["cut"]) == [None]
                else:
                    await index.ingest([Document(TEXTS[2], "cut")])
                    (now,) = await store.ids.handles(["cut"])
                    assert now is not None and now != cut
                    rec = await index.get("cut")
                    assert rec is not None and rec.id == "cut"
                    await index.delete("cut")
                other = await index.get(f"x{repaired}")
                assert other is not None and other.id == f"x{repaired}"
                await index.delete(f"x{repaired}")
            assert (await check(index)).clean
        finally:
            r.close()
            await store.close()

    asyncio.run(run())


def _move_count(store_url: str, collection: str, by: int) -> None:
    """Move a collection's kept id count from outside, as a write cut between its HSETNX
    and its INCRBY (or HDEL and DECRBY) leaves it."""
    r = sync_client(store_url)
    try:
        r.hincrby(f"nd:{collection}:count", "n", by)
    finally:
        r.close()


def test_passes_that_find_one_drift_mend_it_once(store_url: str, collection: str) -> None:
    """Every worker runs the start-up pass: four of them finding the same drift at once
    set the count right once, not four times."""

    async def run() -> None:
        stores = [Store.connect(store_url, collection, 5.0) for _ in range(4)]
        params = Params.create("word:3", 64, 128, 1, 0.5)
        indexes = [await Index.open(s, params, 200) for s in stores]
        try:
            await indexes[0].ingest([Document(t, f"d{i}") for i, t in enumerate(TEXTS)])
            _move_count(store_url, collection, -3)
            reports = await asyncio.gather(*(check_ids(i, repair=True) for i in indexes))
            assert sum(r.repaired["id_count"] for r in reports) == 3
            assert await stores[0].ids.count() == len(TEXTS)
            assert (await check(indexes[0])).clean
        finally:
            for s in stores:
                await s.close()

    asyncio.run(run())


def test_ingest_with_similar_leaves_out_its_own_id_whatever_its_handle(
    store_url: str, collection: str
) -> None:
    """An ingest asking for near-duplicates leaves its own id out by id, not only by the
    handle it looked up: a version another writer stored meanwhile (under a handle the
    lookup did not see) is not answered as a near-duplicate of itself."""

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        index = await Index.open(store, Params.create("word:3", 64, 128, 1, 0.5), 200)
        try:
            await index.ingest([Document(TEXTS[0], "self"), Document(TEXTS[0], "other")])
            pieces = index.pieces
            sk = await sketch(index.params, [TEXTS[0]], 1 << 20)
            seen = await query(pieces, sk.fingerprint(0), sk.band_keys[0], None, 0.5, 10)
            assert sorted(m.id for m in seen.results) == ["other", "self"]
            (result,) = await index.ingest([Document(TEXTS[0], "self")], similar=True)
            assert result.similar is not None
            assert [m.id for m in result.similar.results] == ["other"]
            left = await query(
                pieces, sk.fingerprint(0), sk.band_keys[0], None, 0.5, 10, exclude_id="self"
            )
            assert [m.id for m in left.results] == ["other"]
        finally:
            await store.close()

    asyncio.run(run())
