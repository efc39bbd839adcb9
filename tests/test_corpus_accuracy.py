"""On the shared corpus: the known plagiarism pairs, graded edits, recall and accuracy."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.corpus import read_corpus, read_truth
from support.textgen import mutate


@pytest.fixture(scope="module")
def articles() -> list[tuple[str, str]]:
    return read_corpus()


def _ingest(client: TestClient, docs: list[tuple[str, str]]) -> None:
    for start in range(0, len(docs), 1000):
        chunk = [{"id": i, "text": t} for i, t in docs[start : start + 1000]]
        body = client.post("/documents/batch", json={"documents": chunk}).json()
        assert body["errors"] == 0


def test_known_plagiarism_pairs_found_with_accurate_similarity(
    client: TestClient, articles: list[tuple[str, str]]
) -> None:
    """All 10 known pairs come back at 0.5 within 0.05 of exact; nothing under 0.3 exact."""
    _ingest(client, articles)
    texts = dict(articles)
    shingles = {i: oracle.shingles(t, "word:3") for i, t in articles}
    for a, b in read_truth():
        got = {r["id"]: r["similarity"] for r in client.get(f"/similar/{a}").json()["results"]}
        assert b in got, f"pair {a} {b} not found"
        exact = oracle.exact_jaccard(shingles[a], shingles[b])
        assert abs(got[b] - exact) <= 0.05
    for doc_id in texts:
        for r in client.get(f"/similar/{doc_id}").json()["results"]:
            assert oracle.exact_jaccard(shingles[doc_id], shingles[r["id"]]) >= 0.3


def test_graded_near_duplicates_recall_and_accuracy(
    client: TestClient, articles: list[tuple[str, str]]
) -> None:
    """Variants at 2-45% word edits: >= 98% recall above t+0.05, >= 95% within 0.05 of exact."""
    rng = random.Random(20261122)
    originals = articles[:200]
    # Rates spaced geometrically from 2% to 45%, two variants per article,
    # so that pairs above both thresholds are plentiful.
    rates = [0.02 * (0.45 / 0.02) ** (n / 19) for n in range(20)]
    variants = []
    for n, (doc_id, text) in enumerate(originals):
        for copy in range(2):
            rate = rates[(2 * n + copy) % len(rates)]
            variants.append((f"{doc_id}~v{copy}", mutate(text, rate, rng), doc_id))
    _ingest(client, originals + [(v, t) for v, t, _ in variants])
    texts = dict(originals)
    for threshold in (0.5, 0.8):
        wanted = found = close = reported = 0
        for v, text, orig in variants:
            exact = oracle.exact_jaccard(
                oracle.shingles(text, "word:3"), oracle.shingles(texts[orig], "word:3")
            )
            got = {
                r["id"]: r["similarity"]
                for r in client.get(f"/similar/{v}?threshold={threshold}&limit=50").json()[
                    "results"
                ]
            }
            if orig in got:
                reported += 1
                close += abs(got[orig] - exact) <= 0.05
            if exact >= threshold + 0.05:
                wanted += 1
                found += orig in got
        assert wanted >= 30, "the edit rates must give pairs above the threshold"
        assert found / wanted >= 0.98, (threshold, found, wanted)
        assert close / reported >= 0.95, (threshold, close, reported)
