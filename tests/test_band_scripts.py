"""Band writes through band_*_many scripts (many entries a call, single server) leave
exactly the bytes the per-entry path leaves: bucket fields and values, spilled sets and
their scores."""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

import numpy as np
import pytest

from app.index import Document, Index, Params
from app.index.passages import Layout
from app.store import MAX_INLINE, Store
from app.store.bands import ENTRIES_PER_CALL
from app.store.layout import SPILLED
from tests.support import oracle
from tests.support.corpus import read_corpus
from tests.support.keys import scan_keys

pytestmark = pytest.mark.both_stores

Dump = dict[bytes, Any]


async def _dump(store: Store) -> Dump:
    """Every key of the collection but its lock keys (name without the collection's
    prefix) with its whole content: a HASH's fields and values, a ZSET's members and
    scores in order, a STRING's bytes (the config's without the random mark of its
    making, which two collections never share)."""
    client = store.transport.client
    prefix = f"nd:{store.collection}:".encode()
    out: Dump = {}
    async for key in scan_keys(store):
        name = key[len(prefix) :]
        if name.startswith(b"l:"):
            continue
        kind = await client.type(key)
        if kind == b"hash":
            out[name] = await client.hgetall(key)
        elif kind == b"zset":
            out[name] = await client.zrange(key, 0, -1, withscores=True)
        else:
            out[name] = await client.get(key)
    if b"config" in out:
        out[b"config"] = re.sub(rb',?"made":"[0-9a-f]+"', b"", out[b"config"])
    return out


class _Model:
    """Band fields as the layout says they must be, in plain Python: inline handles in
    the order they came (each once), and once a band has more than MAX_INLINE, the
    spill marker with the set's size and the set scored by handle (packed: the handles
    ascending, 4 bytes each, in a STRING)."""

    def __init__(self, packed: bool = False) -> None:
        self.packed = packed
        self.inline: dict[int, list[int]] = {}
        self.spilled: dict[int, set[int]] = {}

    def add(self, h: int, key: int) -> None:
        if key in self.spilled:
            self.spilled[key].add(h)
        elif h not in self.inline.setdefault(key, []):
            self.inline[key].append(h)
            if len(self.inline[key]) > MAX_INLINE:
                self.spilled[key] = set(self.inline.pop(key))

    def remove(self, h: int, key: int) -> None:
        if key in self.spilled:
            self.spilled[key].discard(h)
            if not self.spilled[key]:
                del self.spilled[key]
        elif h in self.inline.get(key, []):
            self.inline[key].remove(h)
            if not self.inline[key]:
                del self.inline[key]

    def dump(self, store: Store) -> Dump:
        place = store._keys.band_place
        prefix = len(f"nd:{store.collection}:")
        out: Dump = {}
        for key, handles in self.inline.items():
            bucket, field, _ = place(key)
            value = b"".join(h.to_bytes(4, "little") for h in handles)
            out.setdefault(bucket[prefix:], {})[field] = value
        for key, members in self.spilled.items():
            bucket, field, spill = place(key)
            out.setdefault(bucket[prefix:], {})[field] = SPILLED + len(members).to_bytes(
                4, "little"
            )
            if self.packed:
                out[spill[prefix:]] = b"".join(h.to_bytes(4, "little") for h in sorted(members))
            else:
                out[spill[prefix:]] = [(b"%d" % h, float(h)) for h in sorted(members)]
        return out


@pytest.mark.parametrize(("short", "packed"), [(False, False), (True, False), (True, True)])
def test_band_scripts_write_what_the_per_entry_commands_write(
    store_url: str, collection: str, short: bool, packed: bool
) -> None:
    """Adds and removes in calls larger than a script call, with bands that spill within
    one call and entries named twice, leave the same buckets and spilled sets by either
    path, and both equal a plain-Python model of the layout (with short anchor fields:
    half the keys anchors' keys, stored under 4-byte fields; packed: spills as sorted
    STRINGs of handles, whatever order the handles came in)."""
    rng = random.Random(11)
    keys = [rng.getrandbits(64) for _ in range(300)]
    if short:  # anchors' keys: a 32-bit hash spread and salted (app.index.sketch)
        spread, salt = 0xD6E8FEB86659FD93, 0x9E3779B97F4A7C15
        keys[::2] = [((rng.getrandbits(32) * spread) % 2**64) ^ salt for _ in keys[::2]]
    hot = keys[:4]

    async def run() -> None:
        scripted = Store.connect(store_url, collection + "s", 5.0)
        pipelined = Store.connect(store_url, collection + "p", 5.0)
        pipelined.bands.batched = False
        model = _Model(packed)
        try:
            for store in (scripted, pipelined):
                store.use_band_buckets(64, short, packed_spills=packed)  # shared buckets
            for step in range(4):
                adds = []
                for _ in range(60):
                    h = rng.randint(1, 2000)
                    chosen = rng.sample(keys, 30) + [rng.choice(hot)] * 2  # one key twice
                    adds.append((h, np.array(chosen, dtype=np.uint64)))
                # Over one call's worth of entries, so the order holds across calls.
                assert sum(len(k) for _, k in adds) > 2 * ENTRIES_PER_CALL
                removes = []
                for _ in range(40):
                    key = rng.choice(hot if step % 2 else keys)
                    have = model.inline.get(key, []) + sorted(model.spilled.get(key, ()))
                    h = rng.choice([*have, 99_999])  # 99,999 is never added
                    removes.append((h, np.array([key, rng.choice(keys)], dtype=np.uint64)))
                for store in (scripted, pipelined):
                    await store.bands.add(adds)
                    await store.bands.remove(removes)
                for h, ks in adds:
                    for k in ks.tolist():
                        model.add(h, k)
                for h, ks in removes:
                    for k in ks.tolist():
                        model.remove(h, k)
                ours, theirs = await _dump(scripted), await _dump(pipelined)
                assert ours == theirs
                assert ours == model.dump(scripted)
                widths = {len(f) for k, v in ours.items() if k.startswith(b"B{") for f in v}
                assert widths == ({4, 8} if short else {8})
            assert any(len(m) > 2 * MAX_INLINE for m in model.spilled.values())
        finally:
            await scripted.close()
            await pipelined.close()

    asyncio.run(run())


def test_ingest_by_script_stores_the_same_bytes(store_url: str, collection: str) -> None:
    """Batches through Index.ingest (copies that spill their bands within the batch, an
    id named twice, replacements, a delete) leave byte-identical keys by either path,
    and every band entry is one a stored record names."""
    texts = [t for _, t in read_corpus()[:40]]
    docs = [Document(texts[i % 25], f"d{i}") for i in range(40)]  # 15 pairs of copies
    docs += [Document(texts[0], f"copy{i}") for i in range(20)]  # spills every band
    docs.append(Document(texts[30], "d3"))  # d3 named twice: the last one wins
    replace = [Document(texts[i + 1], f"d{i}") for i in range(0, 12) if i != 3]

    async def run() -> None:
        indexes = []
        params = Params.create("word:3", 128, 256, 1, 0.5, capacity=100, passage_words=30)
        for name, scripts in (("s", True), ("p", False)):
            store = Store.connect(store_url, collection + name, 5.0)
            store.bands.batched = scripts and not store.cluster
            indexes.append(await Index.open(store, params, 200))
        try:
            for index in indexes:
                await index.ingest(docs)
                await index.ingest(replace)
                assert await index.delete("copy3")
            ours, theirs = [await _dump(index.store) for index in indexes]
            assert ours == theirs
            assert any(k.startswith(b"H{") for k in ours)  # some band spilled, packed
            got = await indexes[0].get("d3")
            assert got is not None and got.shingles == len(oracle.shingles(texts[30]))
            assert len(oracle.shingles(texts[30])) != len(oracle.shingles(texts[3]))
            # The passage section the kernel packed is the one numpy's Layout.pack makes.
            assert got.passages == indexes[0].passage_layouts([texts[30]])[0].pack()
            # Every band entry belongs to a live record that names that key.
            named: dict[int, set[int]] = {}
            for doc_id, h in await _handles(indexes[0]):
                rec = await indexes[0].get(doc_id)
                assert rec is not None
                for k in indexes[0].store.entry_keys(rec.band_keys).tolist():
                    named.setdefault(k, set()).add(h)
            stored = {k: set(hs) async for k, hs in indexes[0].store.bands.memberships()}
            for k, hs in named.items():
                assert stored[k] == hs
        finally:
            for index in indexes:
                await index.store.close()

    asyncio.run(run())


async def _handles(index: Index) -> list[tuple[str, int]]:
    return [(i, h) async for i, h in index.store.ids.mappings()]


def test_short_fields_answer_as_collections_made_before_them(
    store_url: str, collection: str
) -> None:
    """Four generations of band fields hold the same memberships and give the same
    similarity and containment answers: a config without short_anchors (8 bytes a key),
    one without short_fields (each anchor under its 32-bit hash, read from the records'
    layouts; band keys in 8 bytes), one without field_bytes (every key's low 4 bytes, in
    its bucket) and a new one (its low 2 bytes; keys sharing a place share an entry)."""
    texts = [t for _, t in read_corpus()[:30]]
    docs = [Document(texts[i % 20], f"d{i}") for i in range(30)]
    query = texts[4][: len(texts[4]) // 2] + " " + texts[7]

    async def run() -> None:
        params = Params.create("word:3", 128, 256, 1, 0.5, capacity=100, passage_words=30)
        # Configs as releases before short fields (and before id buckets) wrote them.
        older = re.sub(rb'"id_buckets":\d+,', b"", params.to_json())
        fields_raw = older.replace(b',"short_fields":true', b"")
        long_raw = fields_raw.replace(b',"short_anchors":true', b"")
        assert b"short_fields" not in fields_raw and b"short_anchors" not in long_raw
        assert b"id_buckets" not in fields_raw and params.id_buckets > 0
        four_raw = re.sub(rb'"field_bytes":\d+,', b"", params.to_json())
        assert b"field_bytes" not in four_raw and params.field_bytes == 2
        indexes = []
        generations = (("long", long_raw), ("anchors", fields_raw), ("four", four_raw))
        for name, raw in (*generations, ("new", None)):
            store = Store.connect(store_url, collection + name, 5.0)
            if raw is not None:
                await store.config(raw)
            indexes.append(await Index.open(store, params, 200))
        _, anchors, _, _ = indexes
        assert [(i.params.short_anchors, i.params.short_fields) for i in indexes] == [
            (False, False),
            (True, False),
            (True, True),
            (True, True),
        ]
        assert [i.params.field_bytes for i in indexes[2:]] == [4, 2]
        assert [i.params.id_buckets for i in indexes] == [0, 0, *[params.id_buckets] * 2]
        try:
            for index in indexes:
                await index.ingest(docs)
                assert await index.delete("d25")
            dumps = [await _dump(index.store) for index in indexes]
            buckets = [{k: set(v) for k, v in d.items() if k.startswith(b"B{")} for d in dumps]
            fields = [{f for v in b.values() for f in v} for b in buckets]
            assert {len(f) for f in fields[0]} == {8}
            # The anchors' 4-byte fields are exactly the records' anchor hashes.
            hashes: set[bytes] = set()
            for doc in docs:
                got = await anchors.get(doc.id)
                if got is not None:
                    lay = Layout.unpack(got.passages)
                    hashes |= {int(h).to_bytes(4, "little") for h in lay.anchor_hashes}
            assert {f for f in fields[1] if len(f) == 4} == hashes
            # Its 8-byte fields are the band keys: the long collection's other fields.
            assert {f for f in fields[1] if len(f) == 8} <= fields[0]
            assert len(fields[1]) == len(fields[0])
            # The newer ones' fields are, bucket by bucket, the long ones' low 4 or 2 bytes.
            for at, width in ((2, 4), (3, 2)):
                low = {k: {f[:width] for f in v} for k, v in buckets[0].items()}
                assert low == buckets[at]
                assert {len(f) for f in fields[at]} == {width}
            members = [
                {k: sorted(v) async for k, v in index.store.bands.memberships()}
                for index in indexes
            ]
            assert members[0] == members[1]
            for at in (2, 3):  # a place's handles: those of every key it stands for
                places = indexes[at].store.entry_keys(np.array(list(members[0]), dtype=np.uint64))
                merged: dict[int, set[int]] = {}
                for place, handles in zip(places.tolist(), members[0].values(), strict=True):
                    merged.setdefault(place, set()).update(handles)
                assert {k: sorted(v) for k, v in merged.items()} == members[at]
            for doc_id in ("d3", "d7"):  # each with a copy (d23, d27)
                answers = [await index.similar_to_id(doc_id, 0.5, 10) for index in indexes]
                assert answers[0] is not None and answers[0].results
                assert answers.count(answers[0]) == len(indexes)
                got = [await index.containment_of_id(doc_id, 0.01, 10) for index in indexes]
                assert got[0] is not None and got.count(got[0]) == len(indexes)
            texts_got = [await index.containment_of_text(query, 0.01, 10) for index in indexes]
            assert len(texts_got[0].results) >= 2 and texts_got.count(texts_got[0]) == 4
        finally:
            for index in indexes:
                await index.store.close()

    asyncio.run(run())


def test_packed_spills_answer_as_sorted_sets_made_before_them(
    store_url: str, collection: str
) -> None:
    """A config without packed_spills (made before them) keeps spilling hot bands to sorted
    sets, a new one to packed strings holding the same handles ascending; memberships,
    similarity and containment answers are the same, before and after deletes."""
    texts = [t for _, t in read_corpus()[:30]]
    docs = [Document(texts[i % 20], f"d{i}") for i in range(30)]
    docs += [Document(texts[0], f"copy{i}") for i in range(20)]  # spills every band
    query = texts[0][: len(texts[0]) // 2] + " " + texts[7]

    async def run() -> None:
        params = Params.create("word:3", 128, 256, 1, 0.5, capacity=100, passage_words=30)
        older = params.to_json().replace(b',"packed_spills":true', b"")
        assert b"packed_spills" not in older and params.packed_spills
        indexes = []
        for name, raw in (("zset", older), ("packed", None)):
            store = Store.connect(store_url, collection + name, 5.0)
            if raw is not None:
                await store.config(raw)
            indexes.append(await Index.open(store, params, 200))
        assert [i.params.packed_spills for i in indexes] == [False, True]
        try:
            for step in range(2):
                for index in indexes:
                    await index.ingest(docs)
                    if step:
                        for doc_id in ("copy3", "copy0", "copy19", "d5"):
                            assert await index.delete(doc_id)
                zsets, packed = [await _dump(index.store) for index in indexes]
                spills = {k[2:]: v for k, v in zsets.items() if k.startswith(b"S{")}
                strings = {k[2:]: v for k, v in packed.items() if k.startswith(b"H{")}
                assert spills and not any(k.startswith(b"H{") for k in zsets)
                assert not any(k.startswith(b"S{") for k in packed)
                assert set(strings) == set(spills)
                for name, members in spills.items():
                    handles = sorted(int(m) for m, _ in members)
                    assert strings[name] == b"".join(h.to_bytes(4, "little") for h in handles)
                assert {k: v for k, v in zsets.items() if k.startswith(b"B{")} == {
                    k: v for k, v in packed.items() if k.startswith(b"B{")
                }
                for doc_id in ("d0", "d7", "copy5"):
                    a, b = [await index.similar_to_id(doc_id, 0.5, 30) for index in indexes]
                    assert a == b and a is not None and a.results
                    a, b = [await index.containment_of_id(doc_id, 0.01, 30) for index in indexes]
                    assert a == b and a is not None
                a, b = [await index.containment_of_text(query, 0.01, 30) for index in indexes]
                assert a == b and len(a.results) >= 2
                pairs = [[p async for p in index.duplicate_pairs(0.5)] for index in indexes]
                assert pairs[0] == pairs[1] and pairs[0]
        finally:
            for index in indexes:
                await index.store.close()

    asyncio.run(run())


def test_crowded_two_byte_places_answer_as_four_byte_fields(
    store_url: str, collection: str
) -> None:
    """In 16 buckets, 2-byte fields make dozens of band keys share a place (each a stranger's
    candidates to the other's queries); similarity, containment and the duplicate scan
    answer as with 4-byte fields, before and after deletes, and the check finds nothing
    to repair in either."""
    from app.index.check import check

    texts = [t for _, t in read_corpus()[:240]]
    rng = random.Random(5)
    copies = []
    for i in range(0, 240, 4):  # a near-duplicate of every fourth text
        words = texts[i].split()
        for _ in range(len(words) // 20):
            words[rng.randrange(len(words))] = f"edit{rng.randrange(10**6)}"
        copies.append(" ".join(words))
    docs = [Document(t, f"d{i}") for i, t in enumerate(texts + copies)]

    async def answers(index: Index) -> list[Any]:
        got: list[Any] = [p async for p in index.duplicate_pairs(0.5)]
        # Answers, not how many candidates were verified: a shared place brings more.
        for i in range(0, len(docs), 3):
            found = await index.similar_to_id(f"d{i}", 0.5, 20)
            got.append(None if found is None else (found.results, found.capped))
        for i in range(0, len(docs), 15):
            held = await index.containment_of_id(f"d{i}", 0.05, 10)
            got.append(None if held is None else held.results)
        return got

    async def run() -> None:
        indexes = []
        for width in (4, 2):
            params = Params.create(
                "word:3", 128, 256, 1, 0.5, capacity=1, passage_words=30, field_bytes=width
            )
            assert params.band_buckets == 16
            store = Store.connect(store_url, f"{collection}w{width}", 5.0)
            indexes.append(await Index.open(store, params, 200))
        try:
            for index in indexes:
                await index.ingest(docs)
            keys = {
                int(k)
                for d in docs
                for k in (await indexes[1].get(d.id)).band_keys  # type: ignore[union-attr]
            }
            places = indexes[1].store.entry_keys(np.array(sorted(keys), dtype=np.uint64))
            assert len(set(places.tolist())) < len(keys) - 30  # crowded: dozens of shared places
            members = [
                len([k async for k, _ in index.store.bands.memberships()]) for index in indexes
            ]
            assert members[1] < members[0] - 30  # the shared places, one entry each
            before = [await answers(index) for index in indexes]
            assert before[0] == before[1]
            assert sum(1 for a in before[0] if isinstance(a, tuple) and a[0]) > 20
            for index in indexes:
                for i in range(0, len(docs), 2):
                    assert await index.delete(f"d{i}")
            after = [await answers(index) for index in indexes]
            assert after[0] == after[1] and after[0] != before[0]
            for index in indexes:
                report = await check(index)
                assert report.clean, report.as_dict()
        finally:
            for index in indexes:
                await index.store.close()

    asyncio.run(run())


async def _marked(store: Store) -> set[int]:
    """The handles whose bit is set in the collection's marks bitmap (Redis numbers a
    string's bits from each byte's highest)."""
    assert store._keys.marks is not None
    (raw,) = await store.transport.commands([(b"GET", store._keys.marks)])
    bits = np.unpackbits(np.frombuffer(raw or b"", dtype=np.uint8))
    return set(np.flatnonzero(bits).tolist())


def test_marks_cover_every_band_key_shared_through_an_anchor_or_a_spill(
    store_url: str, collection: str
) -> None:
    """A band key that comes to share its field with another document marks both, also
    when the other came as an anchor (which marks nothing itself), when the joiner held
    the field already as its own anchor, and when anchors spilled the field after it."""
    k_spill, k_anchor, k_own = 0x1111_0000_0000_0A01, 0x2222_0000_0000_0B02, 0x3333_0000_0000_0C03

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        try:
            store.use_band_buckets(64, True, True, True, 2, marks=True)

            def one(h: int, key: int) -> list[tuple[int, np.ndarray]]:
                return [(h, np.array([key], dtype=np.uint64))]

            await store.bands.add(one(1, k_spill))  # alone: no mark
            for h in range(2, MAX_INLINE + 3):  # anchors spill the field: 1 is marked
                await store.bands.add([], one(h, k_spill))
            await store.bands.add(one(100, k_spill))  # joins a spilled field
            await store.bands.add([], one(105, k_anchor))
            await store.bands.add(one(106, k_anchor))  # meets an anchor: both marked
            await store.bands.add(one(107, k_own))
            await store.bands.add([], one(108, k_own))  # an anchor marks nothing ...
            await store.bands.add(one(108, k_own))  # ... but 108's band key then meets 107
            await store.bands.add(one(900, 0x4444_0000_0000_0D04))  # never shared
            marked = await _marked(store)
            assert {1, 100, 105, 106, 107, 108} <= marked and 900 not in marked
            # Only the spill marked the anchors' holders.
            assert marked - {1, 100, 105, 106, 107, 108} == set(range(2, MAX_INLINE + 2))
        finally:
            await store.close()

    asyncio.run(run())


def test_one_call_marks_every_holder_and_joiner_of_many_shared_fields(
    store_url: str, collection: str
) -> None:
    """Band keys that each join a field of MAX_INLINE - 1 other holders, a script call's
    worth at once, mark exactly those holders and joiners: more distinct handles than one
    BITFIELD of set_marks takes (band_ops.lua), and a joiner named by several keys once."""
    keys = [(k + 1) << 40 | k for k in range(ENTRIES_PER_CALL)]
    holders = {k: [1000 * (i + 1) + j for j in range(MAX_INLINE - 1)] for i, k in enumerate(keys)}
    assert ENTRIES_PER_CALL * MAX_INLINE > 512  # set_marks' MARKS_PER_CALL

    async def run() -> None:
        store = Store.connect(store_url, collection, 5.0)
        try:
            store.use_band_buckets(1 << 10, True, True, True, 2, marks=True)
            for k, hs in holders.items():  # anchors inline: they mark nothing themselves
                await store.bands.add([], [(h, np.array([k], dtype=np.uint64)) for h in hs])
            assert await _marked(store) == set()
            joiners = [(500 + i % 40, np.array([k], dtype=np.uint64)) for i, k in enumerate(keys)]
            await store.bands.add(joiners)
            expected = {h for hs in holders.values() for h in hs} | {h for h, _ in joiners}
            assert await _marked(store) == expected
        finally:
            await store.close()

    asyncio.run(run())


def test_unmarked_documents_share_no_band_key_and_answer_as_without_marks(
    store_url: str, collection: str
) -> None:
    """After ingests, replacements and deletes (copies, edited near-duplicates, a field
    spilled by one text's many copies), every document with a band key another stored
    document has (read from the buckets) is marked, most others are not, and GET
    /similar/{id} answers every id as a collection made before marks does."""
    texts = [t for _, t in read_corpus()[:80]]
    rng = random.Random(3)
    edited = []
    for t in texts[:20]:
        words = t.split()
        for _ in range(len(words) // 15):
            words[rng.randrange(len(words))] = f"w{rng.randrange(10**6)}"
        edited.append(" ".join(words))
    docs = [Document(t, f"d{i}") for i, t in enumerate(texts)]
    docs += [Document(t, f"e{i}") for i, t in enumerate(edited)]
    docs += [Document(texts[40], f"copy{i}") for i in range(MAX_INLINE + 4)]
    replace = [Document(texts[i - 50], f"d{i}") for i in range(60, 66)]  # copies now

    async def run() -> None:
        params = Params.create("word:3", 128, 256, 1, 0.5, capacity=200, passage_words=30)
        before = re.sub(rb',"marks":true', b"", params.to_json())
        assert b"marks" not in before and params.marks
        indexes = []
        for name, raw in (("marks", None), ("before", before)):
            store = Store.connect(store_url, collection + name, 5.0)
            if raw is not None:
                await store.config(raw)
            indexes.append(await Index.open(store, params, 200))
        assert [i.params.marks for i in indexes] == [True, False]
        try:
            for index in indexes:
                await index.ingest(docs)
                await index.ingest(replace)
                for doc_id in ("e3", "d3", "copy0"):
                    assert await index.delete(doc_id)
            index = indexes[0]
            marked = await _marked(index.store)
            holders: dict[int, set[int]] = {}
            async for key, hs in index.store.bands.memberships():
                holders[key] = set(hs)
            live = await _handles(index)
            shared = set()
            for doc_id, h in live:
                rec = await index.get(doc_id)
                assert rec is not None
                for key in index.store.entry_keys(rec.band_keys).tolist():
                    if holders[key] - {h}:
                        shared.add(h)
            assert shared <= marked
            unmarked = {h for _, h in live} - marked
            # Marks to spare come from shared places and deleted holders: few.
            assert len(unmarked) >= 0.8 * (len(live) - len(shared)) > 40
            ids = [d.id for d in docs]
            for doc_id in ids:
                a, b = [await index.similar_to_id(doc_id, 0.5, 50) for index in indexes]
                assert (a is None) == (b is None)
                if a is not None and b is not None:
                    assert a.results == b.results and a.capped == b.capped
            found = [await indexes[0].similar_to_id(f"e{i}", 0.5, 5) for i in (1, 2)]
            assert all(f is not None and f.results for f in found)
        finally:
            for index in indexes:
                await index.store.close()

    asyncio.run(run())


def test_the_check_finds_and_sets_the_marks_a_document_lacks(
    store_url: str, collection: str
) -> None:
    """With the marks bitmap lost (a cluster's writer stopped between its band script and
    its marks, here a DEL), the check names every document that shares a band key with
    another (the oracle: the buckets' holders), sets their marks with --repair, and then
    finds nothing; GET answers its copies again."""
    from app.index.check import check

    texts = [t for _, t in read_corpus()[:30]]
    docs = [Document(t, f"d{i}") for i, t in enumerate(texts)]
    docs += [Document(texts[i], f"copy{i}") for i in range(5)]

    async def run() -> None:
        params = Params.create("word:3", 128, 256, 1, 0.5, capacity=100, passage_words=30)
        index = await Index.open(Store.connect(store_url, collection, 5.0), params, 200)
        try:
            await index.ingest(docs)
            assert (await check(index)).clean
            sharing = await _marked(index.store)
            assert sharing
            marks = index.store._keys.marks
            assert marks is not None
            await index.store.transport.commands([(b"DEL", marks)], write=True)
            found = await index.similar_to_id("d0", 0.5, 10)
            lost = [] if index.store.scripted else ["copy0"]  # a cluster reads no marks
            assert found is not None and [m.id for m in found.results] == lost
            report = await check(index)
            assert report.found["unmarked"] == len(sharing), report.as_dict()
            assert (await check(index, repair=True)).repaired["unmarked"] == len(sharing)
            assert await _marked(index.store) == sharing
            assert (await check(index)).clean
            found = await index.similar_to_id("d0", 0.5, 10)
            assert found is not None and [m.id for m in found.results] == ["copy0"]
        finally:
            await index.store.close()

    asyncio.run(run())


def test_the_check_judges_unmarked_documents_on_fresh_records(
    store_url: str, collection: str
) -> None:
    """Two records the scan read at different times, of versions that never lived together
    (x with a text, then x replaced and y given that text), share places but were never
    marked; judged again on fresh records they share nothing, and the check names neither
    (a review found such false findings under concurrent writes)."""
    from app.index.check import _unmarked

    a, c = [t for _, t in read_corpus()[:2]]

    async def run() -> None:
        params = Params.create("word:3", 128, 256, 1, 0.5, capacity=100, passage_words=30)
        index = await Index.open(Store.connect(store_url, collection, 5.0), params, 200)
        try:
            await index.ingest([Document(a, "x")])
            old = await index.get("x")
            assert old is not None
            await index.ingest([Document(c, "x")])
            await index.ingest([Document(a, "y")])
            y = await index.get("y")
            assert y is not None
            handles = dict([(i, h) async for i, h in index.store.ids.mappings()])
            place = index.store.entry_keys
            stale = {handles["x"]: place(old.band_keys), handles["y"]: place(y.band_keys)}
            assert await _marked(index.store) == set()  # they never met
            assert await _unmarked(index, stale) == []
        finally:
            await index.store.close()

    asyncio.run(run())
