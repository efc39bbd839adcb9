"""GET /similar/{id} and POST /similar: verified, ranked, bounded answers."""

from __future__ import annotations

import random

import oracle
import pytest
from fastapi.testclient import TestClient
from textgen import mutate

BASE = (
    "Officials in the northern province said on Tuesday that heavy rain had flooded "
    "dozens of villages, cutting roads and forcing thousands of families to leave their "
    "homes while rescue teams searched for people reported missing near the river"
)
OTHER = (
    "The central bank kept its main interest rate unchanged on Thursday, saying inflation "
    "was easing more slowly than expected and that it would watch wages closely this year"
)


def _near(text: str, seed: int, rate: float = 0.08) -> str:
    return mutate(text, rate, random.Random(seed))


def _exact(a: str, b: str) -> float:
    return oracle.exact_jaccard(oracle.shingles(a, "word:3"), oracle.shingles(b, "word:3"))


@pytest.fixture
def loaded(client: TestClient) -> dict[str, str]:
    texts = {"base": BASE, "other": OTHER}
    for i in range(4):
        texts[f"near{i}"] = _near(BASE, i)
    docs = [{"id": k, "text": v} for k, v in texts.items()]
    assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
    return texts


def test_similar_to_stored_is_verified_and_ranked(
    client: TestClient, loaded: dict[str, str]
) -> None:
    """Results are the oracle's pairs above threshold, exact for short texts, best first."""
    body = client.get("/similar/base").json()
    expected = {
        k: _exact(BASE, v) for k, v in loaded.items() if k != "base" and _exact(BASE, v) >= 0.5
    }
    assert expected, "the test texts must contain near-duplicates"
    got = {r["id"]: r["similarity"] for r in body["results"]}
    assert set(got) == set(expected)
    for k, sim in got.items():
        assert sim == pytest.approx(expected[k], abs=1e-9)
    order = [(-r["similarity"], r["id"]) for r in body["results"]]
    assert order == sorted(order)
    assert "base" not in got
    assert body["candidates"] >= len(got) and body["capped"] is False


def test_similar_to_text_includes_identical_stored_document(
    client: TestClient, loaded: dict[str, str]
) -> None:
    """A new text equal to a stored one finds it at similarity 1."""
    body = client.post("/similar", json={"text": BASE}).json()
    assert body["results"][0] == {"id": "base", "similarity": 1.0}
    assert "other" not in {r["id"] for r in body["results"]}


def test_limit_and_threshold(client: TestClient, loaded: dict[str, str]) -> None:
    """limit cuts the ranked list; a higher threshold keeps only closer pairs."""
    full = client.get("/similar/base").json()["results"]
    assert client.get("/similar/base?limit=1").json()["results"] == full[:1]
    strict = client.get("/similar/base?threshold=0.9").json()["results"]
    assert all(r["similarity"] >= 0.9 for r in strict)
    assert strict == [r for r in full if r["similarity"] >= 0.9]


@pytest.mark.parametrize(
    "query",
    ["threshold=0.3", "threshold=0", "threshold=1.5", "limit=0", "limit=1001", "threshold=abc"],
)
def test_bad_query_parameters_are_422(client: TestClient, loaded: dict, query: str) -> None:
    """Thresholds below the index's, outside (0,1], and limits outside 1-1000 are 422s."""
    resp = client.get(f"/similar/base?{query}")
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"]
    post = {"text": BASE, **({"limit": 0} if "limit" in query else {"threshold": 0.3})}
    assert client.post("/similar", json=post).status_code == 422


def test_below_index_threshold_says_why(client: TestClient, loaded: dict) -> None:
    """The 422 for a too-low threshold names the index's lowest threshold."""
    detail = client.get("/similar/base?threshold=0.2").json()["detail"]
    assert "0.5" in detail


def test_post_similar_text_without_words_is_422(client: TestClient) -> None:
    """POST /similar with no words is a 422."""
    assert client.post("/similar", json={"text": "?!"}).status_code == 422


def test_ingest_with_similar_reports_matches_before_storing(
    client: TestClient, loaded: dict[str, str]
) -> None:
    """POST ?similar=true returns the near-duplicates already stored, then stores the text."""
    text = _near(BASE, 99)
    body = client.post("/documents?similar=true", json={"id": "new", "text": text}).json()
    ids = {r["id"] for r in body["similar"]["results"]}
    assert "base" in ids and "new" not in ids
    assert client.get("/documents/new").status_code == 200


def test_reingest_replaces_old_matches(client: TestClient, loaded: dict[str, str]) -> None:
    """After near0 gets unrelated text, base no longer matches it; the new neighbour does."""
    assert "near0" in {r["id"] for r in client.get("/similar/base").json()["results"]}
    client.put("/documents/near0", json={"text": OTHER + " according to officials"})
    assert "near0" not in {r["id"] for r in client.get("/similar/base").json()["results"]}
    assert "near0" in {r["id"] for r in client.get("/similar/other").json()["results"]}


def test_delete_then_query(client: TestClient, loaded: dict[str, str]) -> None:
    """A deleted document is never returned again."""
    client.delete("/documents/near1")
    assert "near1" not in {r["id"] for r in client.get("/similar/base").json()["results"]}
    assert "near1" not in {
        r["id"] for r in client.post("/similar", json={"text": BASE}).json()["results"]
    }


def test_candidate_cap_holds_and_is_reported(settings) -> None:  # type: ignore[no-untyped-def]
    """With many documents sharing one text, candidates stop at the cap and say so."""
    from app.api.app import create_app

    capped = settings.model_copy(update={"candidate_cap": 10})
    with TestClient(create_app(capped)) as c:
        docs = [{"id": f"dup{i}", "text": BASE} for i in range(40)]
        c.post("/documents/batch", json={"documents": docs})
        body = c.get("/similar/dup0?limit=100").json()
        assert body["capped"] is True
        assert body["candidates"] <= 10
        assert 1 <= len(body["results"]) <= 10
        assert all(r["similarity"] == 1.0 for r in body["results"])
