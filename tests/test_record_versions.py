"""A collection written by an older release (version 1 records, plain fingerprints) answers
exactly as the same collection written now (compressed fingerprints), on Redis and Cluster."""

from __future__ import annotations

import asyncio
import random

import pytest
from support import oracle
from support.textgen import mutate
from test_index import BASES
from test_records import pack_version_1

from app.index import Document, Index, Params, records
from app.store import Store

pytestmark = pytest.mark.both_stores


def _docs() -> list[tuple[str, str]]:
    rng = random.Random(15)
    docs = []
    for b, base in enumerate(BASES):
        docs.append((f"b{b}", base))
        docs += [(f"b{b}v{v}", mutate(base, 0.03 + 0.06 * v, rng)) for v in range(4)]
    return docs


async def _answers(index: Index, ids: list[str]) -> list:
    out = []
    for doc_id in ids:
        out.append(await index.similar_to_id(doc_id, 0.3, limit=50))
        out.append(await index.containment_of_id(doc_id, 0.1, limit=50))
    out.append([p async for p in index.duplicate_pairs(0.3)])
    out.append([g async for g in index.duplicate_groups(0.3)])
    return out


async def _rewrite_as_version_1(index: Index, ids: list[str]) -> None:
    handles = await index.store.ids.handles(ids)
    raws = await index.store.records(handles)  # type: ignore[arg-type]
    old = []
    for h, raw in zip(handles, raws, strict=True):
        rec = records.unpack(raw)  # type: ignore[arg-type]
        args = (rec.id, rec.fingerprint, rec.band_keys, rec.shingles, rec.metadata)
        old.append((h, pack_version_1(*args, rec.passages, rec.expires_ms)))
    await index.store.put_records(old)  # type: ignore[arg-type]


def test_old_records_answer_like_new_ones(store_url: str, collection: str) -> None:
    """Similar, containment, pairs and groups are equal before and after every record is
    rewritten the old way, similarities equal the oracle's exact Jaccard, and a rewrite
    by this release (version 2 again) leaves them unchanged too."""
    docs = _docs()
    ids = [i for i, _ in docs]
    texts = dict(docs)

    async def run() -> tuple[list, list, list, list]:
        store = Store.connect(store_url, collection, 5.0)
        index = await Index.open(store, Params.create("word:3", 128, 256, 1, 0.3), 1000)
        try:
            await index.ingest([Document(text=t, id=i) for i, t in docs])
            raws = await store.records(await store.ids.handles(ids))  # type: ignore[arg-type]
            versions = {r[:4] for r in raws}  # type: ignore[index]
            new = await _answers(index, ids)
            await _rewrite_as_version_1(index, ids)
            raws = await store.records(await store.ids.handles(ids))  # type: ignore[arg-type]
            versions |= {r[:4] for r in raws}  # type: ignore[index]
            old = await _answers(index, ids)
            await index.ingest([Document(text=texts["b0"], id="b0")])  # rewritten as version 2
            mixed = await _answers(index, ids)
            return new, old, mixed, sorted(versions)
        finally:
            await store.close()

    new, old, mixed, versions = asyncio.run(run())
    assert versions == [b"\1\0\0\0", b"\2\0\0\0"]
    assert old == new and mixed == new
    found = [
        (doc_id, m)
        for doc_id, res in zip(ids, new[0 : 2 * len(ids) : 2], strict=True)
        for m in res.results
    ]
    assert len(found) >= len(ids)
    for doc_id, m in found:
        exact = oracle.exact_jaccard(oracle.shingles(texts[doc_id]), oracle.shingles(texts[m.id]))
        assert m.similarity == pytest.approx(exact, abs=1e-12)
