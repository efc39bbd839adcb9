"""The one-exchange query (the candidates and stored scripts) against the pipelined path
it replaces on a single server, on the same data, and both against the oracle."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from support import oracle
from support.textgen import mutate

from app.index import Document, Index, Params, candidates, records
from app.index.candidates import DISCOVERY_BUDGET, SCRIPT_HOT_MEMBERS
from app.index.expiry import now_ms
from app.store import Store

# Short texts: fewer shingles than the fingerprint holds, so a similarity is the exact
# Jaccard of the two shingle sets, which the oracle computes on its own.
BASE_A = (
    "Rescue teams worked through the night after the bridge over the river collapsed under "
    "the weight of floodwater carrying trees and debris from the hills above the old town"
)
BASE_B = (
    "The museum reopened its ancient history wing with new galleries devoted to trade routes "
    "that linked the cities of the coast with the caravans of the inland desert"
)
THRESHOLD = 0.5


def _corpus() -> dict[str, str]:
    """Twenty copies of one text (every band of it hot, ties everywhere), graded variants of
    it (hot and inline bands of many sizes), a second family that stays inline, noise."""
    rng = random.Random(15)
    docs = {f"a{i}": BASE_A for i in range(20)}
    for i in range(70):
        docs[f"m{i}"] = mutate(BASE_A, 0.01 + 0.004 * i, rng)
    docs["b0"] = BASE_B
    for i in range(6):
        docs[f"b{i + 1}"] = mutate(BASE_B, 0.05 * (i + 1), rng)
    for i in range(6):
        docs[f"n{i}"] = mutate(BASE_B, 0.9, rng)
    return docs


DOCS = _corpus()
EXPIRED, RECORDLESS = "m3", "m5"
# Every id, one that was never stored, and the two whose records read as absent.
QUERY_IDS = ["a0", "a7", "m0", "m1", "m20", "m44", "m69", "b0", "b3", "n1", "nope", EXPIRED]
QUERY_IDS += [RECORDLESS]
QUERY_TEXTS = [BASE_A, DOCS["m30"], BASE_B, mutate(BASE_B, 0.1, random.Random(1)), "river"]


@pytest.fixture(scope="module")
def loaded(redis_url: str) -> Iterator[str]:
    """A collection holding DOCS, with one record expired in place (not yet swept) and
    one removed under its band entries (a crash before its record); its name."""
    collection = f"exchange{os.getpid()}"

    async def load() -> None:
        index = await _open(redis_url, collection, 1000)
        try:
            await index.ingest([Document(text=t, id=i) for i, t in DOCS.items()])
            store = index.store
            gone, late = await store.ids.handles([RECORDLESS, EXPIRED])
            (raw,) = await store.records([late])
            rec = records.unpack(raw)
            expired = records.pack(
                rec.id, rec.fingerprint, rec.band_keys, rec.shingles, rec.metadata,
                rec.passages, now_ms() - 1000,
            )  # fmt: skip
            await store.put_records([(late, expired)])
            await store.delete_records([gone])
        finally:
            await index.store.close()

    asyncio.run(load())
    return collection


async def _open(redis_url: str, collection: str, cap: int, scripted: bool = True) -> Index:
    store = Store.connect(redis_url, collection, 5.0)
    store.scripted = scripted
    return await Index.open(store, Params.create("word:3", 128, 256, 1, THRESHOLD), cap)


def _both(
    redis_url: str, collection: str, cap: int, ask: Callable[[Index], Awaitable[Any]]
) -> tuple[Any, Any]:
    """ask's answer through the scripts and through the pipelines, on the same data."""

    async def run() -> tuple[Any, Any]:
        new = await _open(redis_url, collection, cap, scripted=True)
        old = await _open(redis_url, collection, cap, scripted=False)
        try:
            return await ask(new), await ask(old)
        finally:
            await new.store.close()
            await old.store.close()

    return asyncio.run(run())


def _check_oracle(query: str, result: Any, exclude: str | None) -> None:
    """Every match is stored, live, at or above the threshold, its similarity the exact
    Jaccard of the shingle sets, ranked best first and oldest first among equals."""
    order = list(DOCS)
    q = oracle.shingles(query, "word:3")
    for m in result.results:
        assert m.id not in (EXPIRED, RECORDLESS, exclude)
        exact = oracle.exact_jaccard(q, oracle.shingles(DOCS[m.id], "word:3"))
        assert m.similarity == pytest.approx(exact, abs=1e-12)
        assert exact >= THRESHOLD
    ranks = [(-m.similarity, order.index(m.id)) for m in result.results]
    assert ranks == sorted(ranks)


@pytest.mark.parametrize("cap", [1000, 12, 3])
def test_similar_by_id_is_the_same_through_both_paths(
    redis_url: str, loaded: str, cap: int
) -> None:
    """By id, the script path answers exactly what the pipelined path does (matches,
    similarities, candidates, capped), uncapped, capped, and with hot bands over the budget."""

    async def ask(index: Index) -> list[Any]:
        return [await index.similar_to_id(i, limit=1000) for i in QUERY_IDS]

    new, old = _both(redis_url, loaded, cap, ask)
    assert new == old
    assert new[QUERY_IDS.index("nope")] is None
    assert new[QUERY_IDS.index(EXPIRED)] is None
    assert new[QUERY_IDS.index(RECORDLESS)] is None
    for doc_id, result in zip(QUERY_IDS, new, strict=True):
        if result is not None:
            _check_oracle(DOCS[doc_id], result, doc_id)
    copies = new[QUERY_IDS.index("a0")]
    if cap == 1000:
        assert not copies.capped
        # Every other copy ties at 1.0, oldest first.
        assert [m.id for m in copies.results[:19]] == [f"a{i}" for i in range(1, 20)]
    else:
        assert copies.capped and copies.candidates == cap


@pytest.mark.parametrize("cap", [1000, 12, 3])
def test_candidates_and_cut_are_the_same_through_both_paths(
    redis_url: str, loaded: str, cap: int
) -> None:
    """The candidates themselves, their records and the count of hot keys read in part are
    the same through both paths; under a small cap the hot bands exceed the budget."""

    async def ask(index: Index) -> list[Any]:
        out = []
        for doc_id in ["a0", "m10", "b0"]:
            handle, raw = await index.store.stored(doc_id)
            keys = records.unpack(raw).band_keys
            handles, raws, capped, cut = await candidates.gather(
                index.store, keys, handle, index.candidate_cap
            )
            out.append((handles.tolist(), raws, capped, cut))
        return out

    new, old = _both(redis_url, loaded, cap, ask)
    assert new == old
    (handles, raws, capped, cut), _, inline = new
    if cap == 1000:
        assert not capped and cut == 0
        assert sum(r is None for r in raws) == 2  # the expired and the recordless
    else:
        assert capped and cut > 0 and len(handles) == cap
    assert inline[3] == 0  # the second family's bands are inline: none read in part


@pytest.mark.parametrize("cap", [1000, 3])
def test_similar_by_text_is_the_same_through_both_paths(
    redis_url: str, loaded: str, cap: int
) -> None:
    """For a text not stored, the script path answers exactly what the pipelined path does,
    and every match is a true near-duplicate at its exact Jaccard."""

    async def ask(index: Index) -> list[Any]:
        return [await index.similar_to_text(t, limit=1000) for t in QUERY_TEXTS]

    new, old = _both(redis_url, loaded, cap, ask)
    assert new == old
    for text, result in zip(QUERY_TEXTS, new, strict=True):
        _check_oracle(text, result, None)
    found = {m.id for m in new[0].results}
    assert {f"a{i}" for i in range(20)} <= found if cap == 1000 else len(found) <= 3


@pytest.mark.parametrize("cap", [1000, 3])
def test_containment_is_the_same_through_both_paths(redis_url: str, loaded: str, cap: int) -> None:
    """Containment, by id and by text, answers the same with the script path on and off:
    it gathers its candidates one way on both servers (candidates.passage_candidates,
    through the pipelines), so only the transport differs."""

    async def ask(index: Index) -> list[Any]:
        by_id = [await index.containment_of_id(i, limit=1000) for i in ["a0", "m40", "b2"]]
        return [*by_id, await index.containment_of_text(BASE_A + " " + BASE_B, limit=1000)]

    new, old = _both(redis_url, loaded, cap, ask)
    assert new == old
    both = new[-1]
    ids = {r.id for r in both.results}
    assert not ids & {EXPIRED, RECORDLESS}
    if cap == 1000:
        assert {"a0", "b0"} <= ids


def test_a_redis_without_the_script_loads_it_again(redis_url: str, loaded: str) -> None:
    """After SCRIPT FLUSH (as a restarted Redis has no scripts) a query loads its scripts
    in its exchanges and answers exactly as before, by text and by id."""

    async def ask(index: Index) -> list[Any]:
        flush = (b"SCRIPT", b"FLUSH")
        before = [await index.similar_to_text(BASE_A, limit=1000)]
        before.append(await index.similar_to_id("m2", limit=1000))
        await index.store.transport.commands([flush])
        after = [await index.similar_to_text(BASE_A, limit=1000)]
        await index.store.transport.commands([flush])
        after.append(await index.similar_to_id("m2", limit=1000))
        return [before, after]

    (before, after), _ = _both(redis_url, loaded, 1000, ask)
    assert before == after and len(after[0].results) >= 20 and after[1].results


def test_hot_windows_are_read_in_the_script_up_to_its_bound(redis_url: str, loaded: str) -> None:
    """Under a small cap the script itself reads the hot keys' windows (some in part); when
    they need more than SCRIPT_HOT_MEMBERS it reads nothing more and says so."""

    async def run() -> list[Any]:
        index = await _open(redis_url, loaded, 12)
        try:
            handle, raw = await index.store.stored("a0")
            keys = records.unpack(raw).band_keys
            ask = index.store.candidates
            return [
                await ask(keys, handle, 12, DISCOVERY_BUDGET * 12, SCRIPT_HOT_MEMBERS),
                await ask(keys, handle, 1000, DISCOVERY_BUDGET * 1000, SCRIPT_HOT_MEMBERS),
            ]
        finally:
            await index.store.close()

    windows, over = asyncio.run(run())
    assert windows is not None and windows.cut > 0 and len(windows.handles) == 12
    assert DISCOVERY_BUDGET * 12 <= SCRIPT_HOT_MEMBERS
    assert over is None
