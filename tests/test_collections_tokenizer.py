"""A collection's tokenizer: new collections read texts with the latest (4), a stored
collection keeps reading them with its own (1 when made before tokenizer 2 existed, 2 when made
before 3, 3 before 4), and GET /collections/{name} says which."""

from __future__ import annotations

from dataclasses import asdict

import orjson
import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.cluster import sync_client
from support.disguise import disguise

from app.store.layout import Layout

PLAIN = (
    "the committee met on tuesday to review the annual budget and agreed to fund the new "
    "library wing after a long debate about parking and the river path near the old mill"
)
DISGUISED = disguise(PLAIN, seed=1, rate=0.1)  # tokenizer 1 Jaccard 0.67


def _similarity(client: TestClient, prefix: str) -> float | None:
    for doc_id, text in (("plain", PLAIN), ("disguised", DISGUISED)):
        resp = client.put(f"{prefix}/documents/{doc_id}", json={"text": text})
        assert resp.status_code == 201, resp.text
    found = client.get(f"{prefix}/similar/plain").json()["results"]
    return next((r["similarity"] for r in found if r["id"] == "disguised"), None)


def test_disguise_is_not_a_no_op() -> None:
    """The disguised text differs from the plain one under tokenizer 1 and not under 2 or 3
    (so the tests below can tell the tokenizers apart)."""
    one = oracle.exact_jaccard(oracle.shingles(PLAIN), oracle.shingles(DISGUISED))
    assert 0.5 < one < 0.9  # above the default threshold, so both tokenizers answer
    assert oracle.normalized2(DISGUISED) == oracle.normalized2(PLAIN)
    assert oracle.normalized2(DISGUISED, 3) == oracle.normalized2(PLAIN, 3)


def test_new_collections_read_with_tokenizer_4(client: TestClient, collection: str) -> None:
    """The service's collection and one made by POST /collections both show tokenizer 4, and
    find the disguised copy as an exact duplicate."""
    assert client.get(f"/collections/{collection}").json()["parameters"]["tokenizer"] == 4
    name = f"{collection}-new"
    made = client.post("/collections", json={"name": name})
    assert made.status_code == 201 and made.json()["parameters"]["tokenizer"] == 4
    assert client.post("/collections", json={"name": name}).status_code == 200
    assert client.get(f"/collections/{name}").json()["parameters"]["tokenizer"] == 4
    assert _similarity(client, f"/collections/{name}") == pytest.approx(1.0)
    doc = client.get(f"/collections/{name}/documents/disguised").json()
    assert doc["shingles"] == len(oracle.sketch_hashes2(DISGUISED, version=4))


@pytest.mark.parametrize("stored", ["without", "with 1", "with 2", "with 3"])
def test_a_stored_collection_answers_as_before(
    settings, store_url: str, collection: str, stored: str
) -> None:  # type: ignore[no-untyped-def]
    """A stored config as the code before tokenizer 2 wrote it (no tokenizer field), or one
    naming tokenizer 1, keeps reading texts with tokenizer 1: it shows 1 and its answers are
    the oracle's tokenizer 1 Jaccard, exactly. One naming tokenizer 2 (made before 3) keeps
    reading with 2: its shingle counts are the oracle's tokenizer 2 ones, and one naming 3
    (made before 4) with 3."""
    from app.api.app import create_app
    from app.service.runtime import params_of

    old = asdict(params_of(settings))
    if stored == "without":
        del old["tokenizer"]
    else:
        old["tokenizer"] = int(stored[-1])
    sync_client(store_url).set(
        Layout(collection).config, orjson.dumps(old, option=orjson.OPT_SORT_KEYS)
    )
    with TestClient(create_app(settings)) as client:
        shown = client.get(f"/collections/{collection}").json()["parameters"]
        if stored == "with 3":
            assert shown["tokenizer"] == 3
            # small look-alikes (Cyrillic shha, komi de; Latin alpha) 4 folds and 3 keeps
            text = "the cat t\u04bbe cat the c\u0251t \u0501og"
            client.put("/documents/small", json={"text": text})
            doc = client.get("/documents/small").json()
            assert doc["shingles"] == len(oracle.sketch_hashes2(text, version=3))
            assert len(oracle.sketch_hashes2(text, version=3)) != len(
                oracle.sketch_hashes2(text, version=4)
            )
            return
        if stored == "with 2":
            assert shown["tokenizer"] == 2
            assert _similarity(client, "") == pytest.approx(1.0)
            doc = client.get("/documents/disguised").json()
            assert doc["shingles"] == len(oracle.sketch_hashes2(DISGUISED))
            # a text 2 and 3 read differently: decomposed accents (2 breaks words at them)
            text = "l'e\u0301te\u0301 de\u0301ja\u0300 vu, the \u0392\u0395\u03a4\u0391 test"
            client.put("/documents/accents", json={"text": text})
            doc = client.get("/documents/accents").json()
            assert doc["shingles"] == len(oracle.sketch_hashes2(text))
            assert len(oracle.sketch_hashes2(text)) != len(oracle.sketch_hashes2(text, version=3))
            return
        assert shown["tokenizer"] == 1
        expected = oracle.exact_jaccard(oracle.shingles(PLAIN), oracle.shingles(DISGUISED))
        assert _similarity(client, "") == pytest.approx(expected)
        doc = client.get("/documents/disguised").json()
        assert doc["shingles"] == len(oracle.shingles(DISGUISED))
