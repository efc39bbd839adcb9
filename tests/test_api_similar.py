"""GET /similar/{id} and POST /similar: verified, ranked, bounded answers."""

from __future__ import annotations

import random

import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.textgen import mutate

pytestmark = pytest.mark.both_stores

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


@pytest.mark.parametrize("value", ["NaN", "nan", "Infinity", "-inf"])
def test_a_threshold_that_is_not_a_number_is_named_so(
    client: TestClient, loaded: dict, value: str
) -> None:
    """NaN or infinity as a threshold is a 422 saying a finite number is wanted (not that
    it should be at most 1, which NaN is not either)."""
    resp = client.get(f"/similar/base?threshold={value}")
    assert resp.status_code == 422 and "finite number" in resp.json()["detail"], resp.text


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
    """POST ?similar=true returns the near-duplicates already stored, then stores the text;
    its `similar` is what POST /similar answered for the text just before, field for field."""
    text = _near(BASE, 99)
    before = client.post("/similar", json={"text": text}).json()
    body = client.post("/documents?similar=true", json={"id": "new", "text": text}).json()
    ids = {r["id"] for r in body["similar"]["results"]}
    assert "base" in ids and "new" not in ids
    assert body["similar"] == before
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


ESSAY = " ".join(
    f"{w}{i}" for i, w in enumerate(["essay", "words", "about", "nothing", "alike"] * 60)
)


def _copied(text: str, source: str) -> tuple[str, tuple[int, int]]:
    """text with all of source pasted into its middle, and where it sits."""
    middle = len(text) // 2
    middle = text.index(" ", middle) + 1
    return text[:middle] + source + " " + text[middle:], (middle, middle + len(source))


def test_containment_with_evidence_finds_a_copied_paragraph(
    client: TestClient, loaded: dict[str, str]
) -> None:
    """A long essay holding the whole of a stored text: Jaccard misses it, containment finds
    it with passages whose offsets cut exactly the copied text out of both texts."""
    query, (start, end) = _copied(ESSAY, BASE)
    assert client.post("/similar", json={"text": query}).json()["results"] == []
    body = client.post(
        "/similar", json={"text": query, "measure": "containment", "evidence": True}
    ).json()
    # No threshold given: 0, every source with a passage of passage_words words is named.
    assert body["measure"] == "containment" and body["threshold"] == 0.0
    ids = [r["id"] for r in body["results"]]
    assert ids[0] == "base" and len(ids) == len(set(ids))
    best = body["results"][0]
    (passage,) = best["passages"]
    assert (passage["query_start"], passage["query_end"]) == (start, end)
    assert (passage["source_start"], passage["source_end"]) == (0, len(BASE))
    words = len(oracle.words(query))
    assert best["containment"] == pytest.approx((len(oracle.words(BASE)) - 2) / (words - 2))
    assert best["similarity"] == pytest.approx(_exact(query, BASE), abs=0.02)
    assert body["coverage"] >= best["containment"]
    no_evidence = client.post("/similar", json={"text": query, "measure": "containment"})
    assert no_evidence.json()["results"][0]["passages"] is None
    # The threshold an answer echoes, sent back, is the same query (it was a 422).
    echoed = {"text": query, "measure": "containment", "evidence": True, "threshold": 0}
    assert client.post("/similar", json=echoed).json() == body


def test_containment_of_a_stored_document(client: TestClient, loaded: dict[str, str]) -> None:
    """GET /similar/{id}?measure=containment answers with the stored document's own offsets."""
    query, (start, end) = _copied(ESSAY, OTHER)
    assert client.put("/documents/essay", json={"text": query}).status_code == 201
    body = client.get("/similar/essay?measure=containment&evidence=true&threshold=0.05").json()
    assert body["id"] == "essay" and body["results"][0]["id"] == "other"
    (passage,) = body["results"][0]["passages"]
    assert (passage["query_start"], passage["query_end"]) == (start, end)
    back = client.get("/similar/other?measure=containment&threshold=0.9").json()
    assert [r["id"] for r in back["results"]] == ["essay"]  # all of "other" is in the essay
    assert client.get("/similar/nobody?measure=containment").status_code == 404
    again = client.get("/similar/other?measure=containment&threshold=0")
    assert again.status_code == 200 and again.json()["threshold"] == 0.0


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/similar", {"text": "some words here", "evidence": True}),
        ("POST", "/similar", {"text": "some words here", "measure": "overlap"}),
        ("POST", "/similar", {"text": "x y z", "measure": "containment", "threshold": -0.1}),
        ("GET", "/similar/base?evidence=true", None),
        ("GET", "/similar/base?measure=cosine", None),
        ("GET", "/similar/base?measure=containment&threshold=1.5", None),
    ],
)
def test_bad_measure_combinations_are_422(
    client: TestClient, loaded: dict[str, str], method: str, path: str, body: dict | None
) -> None:
    """Evidence without containment, unknown measures and out-of-range thresholds are
    422 problem+json that name what to fix."""
    resp = client.request(method, path, json=body)
    assert resp.status_code == 422, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    assert any(w in resp.json()["detail"] for w in ("evidence", "measure", "threshold"))
