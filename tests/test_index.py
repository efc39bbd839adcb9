"""The index without HTTP: corpus-wide pairs and groups against a brute-force oracle."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest
from support import oracle
from support.textgen import mutate

from app.index import Document, Index, Params
from app.store import Store

pytestmark = pytest.mark.both_stores

BASES = [
    "Rescue teams worked through the night after the bridge over the river collapsed "
    "under the weight of floodwater carrying trees and debris from the hills above town",
    "Shares in the largest carmaker fell sharply after it cut its forecast for the year "
    "citing weaker demand in Europe and rising costs for batteries and raw materials",
    "The museum reopened its ancient history wing with new galleries devoted to trade "
    "routes that linked the cities of the coast with the caravans of the inland desert",
]


def _corpus() -> list[tuple[str, str]]:
    rng = random.Random(5)
    docs = []
    for b, base in enumerate(BASES):
        docs.append((f"b{b}", base))
        for v in range(4):
            docs.append((f"b{b}v{v}", mutate(base, 0.04 + 0.05 * v, rng)))
    return docs


def _brute_force_pairs(docs: list[tuple[str, str]], t: float) -> set[frozenset[str]]:
    sets = {i: oracle.shingles(text, "word:3") for i, text in docs}
    return {
        frozenset((a, b))
        for a, b in itertools.combinations(sets, 2)
        if oracle.exact_jaccard(sets[a], sets[b]) >= t
    }


async def _open(redis_url: str, collection: str) -> Index:
    store = Store.connect(redis_url, collection, 2.0)
    return await Index.open(store, Params.create("word:3", 128, 256, 1, 0.5), 1000)


def _scan(store_url: str, collection: str, docs: list[tuple[str, str]]) -> tuple[list, list]:
    async def run() -> tuple[list, list]:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(text=t, id=i) for i, t in docs])
            pairs = [p async for p in index.duplicate_pairs(0.5)]
            groups = [g async for g in index.duplicate_groups(0.5)]
            return pairs, groups
        finally:
            await index.store.close()

    return asyncio.run(run())


def _check_scan(docs: list[tuple[str, str]], pairs: list, groups: list) -> None:
    expected = _brute_force_pairs(docs, 0.5)
    assert expected
    assert len(pairs) == len({frozenset((p.a_id, p.b_id)) for p in pairs})  # each once
    assert {frozenset((p.a_id, p.b_id)) for p in pairs} == expected
    order = [i for i, _ in docs]
    assert all(order.index(p.a_id) < order.index(p.b_id) for p in pairs)
    # Components of the expected graph, by a plain traversal.
    neighbours: dict[str, set[str]] = {}
    for pair in expected:
        a, b = tuple(pair)
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    components, seen = [], set()
    for start in neighbours:
        if start in seen:
            continue
        stack, comp = [start], set()
        while stack:
            node = stack.pop()
            if node not in comp:
                comp.add(node)
                stack.extend(neighbours[node] - comp)
        seen |= comp
        components.append(comp)
    assert sorted(map(sorted, (set(g.members) for g in groups))) == sorted(map(sorted, components))
    for g in groups:
        assert g.canonical == min(g.members, key=order.index)


def test_duplicate_pairs_and_groups_match_brute_force(store_url: str, collection: str) -> None:
    """Every pair at or above the threshold, once, older first; groups are the components."""
    docs = _corpus()
    _check_scan(docs, *_scan(store_url, collection, docs))


def test_scans_in_tiny_memory_bounds_match_brute_force(
    store_url: str, collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With blocks of 2 documents and room for 3 candidates, the scans take their
    document-by-document, windowed and chunked paths (a band of 16 copies is hot) and
    still give exactly the brute-force pairs and components."""
    from app.index import scan

    for name, value in (("SCAN_BLOCK", 2), ("UNIVERSE", 3), ("RECORD_BATCH", 2)):
        monkeypatch.setattr(scan, name, value)
    monkeypatch.setattr(scan, "GROUP_CACHE", 2)
    rng = random.Random(9)
    base = BASES[0].replace("Rescue", "Salvage")
    docs = _corpus() + [(f"hot{i}", mutate(base, 0.02, rng)) for i in range(16)]
    _check_scan(docs, *_scan(store_url, collection, docs))


def test_reopening_with_other_parameters_is_refused(store_url: str, collection: str) -> None:
    """A collection remembers its parameters and will not open with different ones."""
    from app.index import ConfigMismatchError

    async def run() -> str:
        first = await _open(store_url, collection)
        await first.store.close()
        store = Store.connect(store_url, collection, 2.0)
        try:
            await Index.open(store, Params.create("word:4", 128, 256, 1, 0.5), 1000)
        except ConfigMismatchError as exc:
            return str(exc)
        finally:
            await store.close()
        return ""

    message = asyncio.run(run())
    assert "shingle" in message and "word:4" in message
