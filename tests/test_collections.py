"""Collections as resources: create, list, describe, delete, and the routes under them."""

from __future__ import annotations

import asyncio

import orjson
import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.cluster import all_keys, sync_client

from app.index import collections
from app.store import Store

BASE = (
    "the committee met on tuesday to review the annual budget and agreed to fund "
    "the new library wing after a long debate about parking and the river path"
)
NEAR = BASE.replace("tuesday", "wednesday")
OTHER = (
    "a small boat drifted past the harbour lights while gulls argued over scraps "
    "of bread thrown by children standing on the old stone pier at dusk"
)


def _problem(resp, status: int) -> dict:  # type: ignore[no-untyped-def]
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    return resp.json()


def _dump(url: str, name: str) -> dict[bytes, bytes]:
    """Every key of a collection with its DUMP (type, value and encoding, byte for byte)."""
    client = sync_client(url)
    return {k: client.dump(k) for k in all_keys(client, f"nd:{name}:*")}


@pytest.mark.both_stores
def test_same_ids_in_two_collections_never_mix_and_delete_leaves_the_other_intact(
    client: TestClient, store_url: str, collection: str
) -> None:
    """Ids a and b are near-duplicates in one collection and unrelated in another: each
    answers as the oracle says for its own texts; deleting one removes all its keys and
    leaves every key of the other byte-for-byte as it was."""
    one, two = f"{collection}-one", f"{collection}-two"
    for name in (one, two):
        assert client.post("/collections", json={"name": name}).status_code == 201
    texts = {one: {"a": BASE, "b": NEAR}, two: {"a": BASE, "b": OTHER}}
    for name, docs in texts.items():
        for doc_id, text in docs.items():
            resp = client.put(f"/collections/{name}/documents/{doc_id}", json={"text": text})
            assert resp.status_code == 201, resp.text
    assert oracle.exact_jaccard(oracle.shingles(BASE), oracle.shingles(NEAR)) > 0.7
    assert oracle.exact_jaccard(oracle.shingles(BASE), oracle.shingles(OTHER)) == 0.0
    near = client.get(f"/collections/{one}/similar/a").json()["results"]
    assert [r["id"] for r in near] == ["b"]
    assert client.get(f"/collections/{two}/similar/a").json()["results"] == []
    # The service's own collection has neither.
    _problem(client.get("/documents/a"), 404)
    listed = {c["name"]: c["documents"] for c in client.get("/collections").json()["collections"]}
    assert listed[one] == 2 and listed[two] == 2 and listed[collection] == 0

    before = _dump(store_url, one)
    assert before and _dump(store_url, two)
    assert client.delete(f"/collections/{two}").status_code == 204
    assert _dump(store_url, two) == {}
    assert _dump(store_url, one) == before
    _problem(client.get(f"/collections/{two}"), 404)
    _problem(client.get(f"/collections/{two}/documents/a"), 404)
    _problem(client.delete(f"/collections/{two}"), 404)
    names = [c["name"] for c in client.get("/collections").json()["collections"]]
    assert two not in names and one in names
    assert client.get(f"/collections/{one}/documents/b").json()["shingles"] == len(
        oracle.shingles(NEAR)
    )


def test_parameters_stored_and_conflicts_are_409(client: TestClient, collection: str) -> None:
    """A new collection stores the asked parameters (the rest from the settings) with its
    band plan; the same request again is 200 with the same answer, other parameters 409."""
    name = f"{collection}-p"
    asked = {"name": name, "shingle": "word:2", "threshold": 0.8, "num_perm": 64}
    made = client.post("/collections", json=asked)
    assert made.status_code == 201, made.text
    params = made.json()["parameters"]
    assert (params["shingle"], params["threshold"], params["num_perm"]) == ("word:2", 0.8, 64)
    assert params["fingerprint_size"] == 256  # not asked: the service's setting
    assert params["fingerprint_bits"] == 24
    whole = client.post("/collections", json={"name": f"{name}32", "fingerprint_bits": 32})
    assert whole.status_code == 201 and whole.json()["parameters"]["fingerprint_bits"] == 32
    assert params["bands"] * params["rows"] <= 64
    again = client.post("/collections", json=asked)
    assert again.status_code == 200 and again.json()["parameters"] == params
    assert client.get(f"/collections/{name}").json()["parameters"] == params
    detail = _problem(client.post("/collections", json={**asked, "threshold": 0.6}), 409)["detail"]
    assert "threshold: stored 0.8, asked 0.6" in detail
    # The service's own collection was made from the settings: asking other ones conflicts.
    _problem(client.post("/collections", json={"name": collection, "num_perm": 256}), 409)
    assert client.post("/collections", json={"name": collection}).status_code == 200


def test_a_shingle_spec_is_stored_in_one_spelling(client: TestClient, collection: str) -> None:
    """Spellings of word:3 (case, spaces, a leading zero) make a collection that stores
    "word:3" and equals one asked plainly; digits other than ASCII ones, an underscore
    and a sign are 422s naming the shingle."""
    name = f"{collection}-s"
    made = client.post("/collections", json={"name": name, "shingle": " WORD:03\n"})
    assert made.status_code == 201, made.text
    assert made.json()["parameters"]["shingle"] == "word:3"
    assert client.post("/collections", json={"name": name, "shingle": "word:3"}).status_code == 200
    for bad in ("word:\u0663", "word:\U0001d7d1", "char:1_0", "word:+3", "word:"):
        asked = {"name": f"{name}x", "shingle": bad}
        refused = _problem(client.post("/collections", json=asked), 422)
        assert "shingle" in refused["detail"], (bad, refused)
    assert client.get(f"/collections/{name}x").status_code == 404


@pytest.mark.parametrize("bad", ["", "a:b", "x" * 65, "{tag}", "a*", "caf\u00e9", "a b"])
def test_names_outside_the_rule_are_422(client: TestClient, bad: str) -> None:
    """A name that is not 1-64 letters, digits, '_' or '-' is refused with the rule."""
    detail = _problem(client.post("/collections", json={"name": bad}), 422)["detail"]
    assert "1-64 letters, digits, '_' or '-'" in detail


def test_bad_parameters_are_422_naming_the_field(client: TestClient, collection: str) -> None:
    """Parameters out of range, unknown fields and a passage shorter than a shingle are
    refused before anything is stored."""
    name = f"{collection}-bad"
    cases = [
        ({"threshold": 2}, "threshold"),
        ({"num_perm": 8}, "num_perm"),
        ({"shingle": "words:3"}, "shingle"),
        ({"passage_words": 2}, "passage_words (NEARDUP_PASSAGE_WORDS) must be"),
        ({"bands": 4}, "bands"),
        ({"fingerprint_bits": 16}, "fingerprint_bits"),
    ]
    for extra, named in cases:
        body = _problem(client.post("/collections", json={"name": name, **extra}), 422)
        assert named in str(body) and "Value error" not in str(body), body
    _problem(client.get(f"/collections/{name}"), 404)


def test_prefixed_routes_answer_as_the_unprefixed_ones(client: TestClient, collection: str) -> None:
    """The same documents in the default collection and in one made with the same
    parameters give the same answers, errors included, through the two kinds of route."""
    name = f"{collection}-twin"
    assert client.post("/collections", json={"name": name}).status_code == 201
    docs = [{"id": "a", "text": BASE}, {"id": "b", "text": NEAR}, {"id": "c", "text": OTHER}]
    for prefix in ("", f"/collections/{name}"):
        assert client.post(f"{prefix}/documents/batch", json={"documents": docs}).status_code == 200
    requests = [
        ("GET", "/similar/a", None),
        ("GET", "/similar/a?threshold=0.3&limit=5", None),
        ("GET", "/similar/a?measure=containment&evidence=true", None),
        ("POST", "/similar", {"text": BASE}),
        ("GET", "/duplicates", None),
        ("GET", "/duplicates/groups", None),
        ("GET", "/documents/c", None),
        ("GET", "/documents/zz", None),
        ("GET", "/similar/a?limt=5", None),
        ("POST", "/similar", {"text": BASE, "nope": 1}),
        ("POST", "/documents/delete", {"ids": ["c"]}),
        ("GET", "/export", None),
    ]
    for method, path, body in requests:
        plain = client.request(method, path, json=body)
        prefixed = client.request(method, f"/collections/{name}{path}", json=body)
        assert plain.status_code == prefixed.status_code, (path, plain.text, prefixed.text)
        assert plain.content == prefixed.content, path
    pairs = client.get(f"/collections/{name}/duplicates").text
    assert '"a"' in pairs and '"b"' in pairs


def test_a_cut_pair_stream_resumes_in_its_own_collection(
    client: TestClient, collection: str
) -> None:
    """The resume link of a prefixed pair stream cut by max_pairs stays in its collection
    and keeps the request's other parameters: following the links gives every pair once."""
    name = f"{collection}-cut"
    assert client.post("/collections", json={"name": name}).status_code == 201
    docs = [{"id": f"d{i}", "text": BASE + f" and copy {i}"} for i in range(4)]
    r = client.post(f"/collections/{name}/documents/batch", json={"documents": docs})
    assert r.status_code == 200
    whole = [
        orjson.loads(x) for x in client.get(f"/collections/{name}/duplicates").text.splitlines()
    ]
    assert len(whole) == 6
    path, got = f"/collections/{name}/duplicates?max_pairs=4&consistency=strong", []
    for _ in range(3):
        lines = [orjson.loads(x) for x in client.get(path).text.splitlines()]
        if "cut" not in lines[-1]:
            got += lines
            break
        got += lines[:-1]
        path = lines[-1]["resume"]
        assert path.startswith(f"/collections/{name}/duplicates?consistency=strong&"), path
    assert sorted((p["a"], p["b"]) for p in got) == sorted((p["a"], p["b"]) for p in whole)


@pytest.mark.both_stores
def test_a_delete_cut_short_is_refused_to_requests_and_finished_by_a_new_delete(
    client: TestClient, store_url: str, collection: str
) -> None:
    """A delete that stopped after one bounded step (a crash) leaves a collection that
    every request is refused (409) and that a DELETE sent again removes entirely."""
    name = f"{collection}-cut"
    assert client.post("/collections", json={"name": name}).status_code == 201
    docs = [{"id": f"d{i}", "text": f"{BASE} {i} {OTHER}"} for i in range(30)]
    resp = client.post(f"/collections/{name}/documents/batch", json={"documents": docs})
    assert resp.status_code == 200
    keys = len(_dump(store_url, name))

    async def one_step() -> bool:
        store = Store.connect(store_url, name, 5.0)
        try:
            return await collections.delete(store, steps=1, batch=5)
        finally:
            await store.close()

    assert asyncio.run(one_step()) is False
    left = _dump(store_url, name)
    assert 0 < len(left) == keys - 5
    _problem(client.get(f"/collections/{name}/documents/d1"), 409)
    _problem(client.put(f"/collections/{name}/documents/x", json={"text": BASE}), 409)
    _problem(client.get(f"/collections/{name}"), 409)
    _problem(client.post("/collections", json={"name": name}), 409)
    listed = {c["name"]: c for c in client.get("/collections").json()["collections"]}
    assert listed[name]["deleting"] is True
    assert len(_dump(store_url, name)) == len(left)  # refused: nothing was written
    assert client.delete(f"/collections/{name}").status_code == 204
    assert _dump(store_url, name) == {}
    # A write in flight when the delete began, landing after its SCAN: a DELETE removes it.
    sync_client(store_url).set(f"nd:{name}:d:99".encode(), b"late")
    assert client.delete(f"/collections/{name}").status_code == 204
    assert _dump(store_url, name) == {}
    _problem(client.delete(f"/collections/{name}"), 404)
    assert client.post("/collections", json={"name": name}).status_code == 201
    assert client.get(f"/collections/{name}").json()["documents"] == 0


def test_the_default_collection_cannot_be_deleted(client: TestClient, collection: str) -> None:
    """DELETE of the service's own NEARDUP_COLLECTION is a 409 that says why; it stays."""
    client.put("/documents/a", json={"text": BASE})
    refused = _problem(client.delete(f"/collections/{collection}"), 409)
    assert "NEARDUP_COLLECTION" in refused["detail"]
    assert client.get(f"/collections/{collection}/documents/a").status_code == 200


def test_keys_limited_to_collections_are_403_outside_them(settings, collection: str) -> None:  # type: ignore[no-untyped-def]
    """A key limited to collections reaches those (its scope still applies) and gets 403
    on every other one, the unprefixed routes (the default collection's), the list, and
    deleting a collection, its own too (which an unlimited key may)."""
    from pydantic import SecretStr

    from app.api.app import create_app

    mine, theirs = f"{collection}-mine", f"{collection}-theirs"
    admin, scoped, reader = "a" * 24, "s" * 24, "r" * 24
    spec = f"{admin}:write,{scoped}:write:{mine},{theirs},{reader}:read:{mine}"
    keyed = settings.model_copy(update={"api_keys": SecretStr(spec)})
    with TestClient(create_app(keyed)) as c:
        auth = {k: {"Authorization": f"Bearer {k}"} for k in (admin, scoped, reader)}
        for name in (mine, theirs, f"{collection}-other"):
            assert (
                c.post("/collections", json={"name": name}, headers=auth[admin]).status_code == 201
            )
        doc = {"text": BASE}
        assert (
            c.put(f"/collections/{mine}/documents/a", json=doc, headers=auth[scoped]).status_code
            == 201
        )
        assert (
            c.put(f"/collections/{theirs}/documents/a", json=doc, headers=auth[scoped]).status_code
            == 201
        )
        assert c.get(f"/collections/{mine}/documents/a", headers=auth[reader]).status_code == 200
        assert c.get(f"/collections/{mine}", headers=auth[reader]).status_code == 200
        # The reader's scope still holds inside its collection.
        _problem(c.put(f"/collections/{mine}/documents/b", json=doc, headers=auth[reader]), 403)
        refused = [
            ("GET", f"/collections/{theirs}/documents/a", reader),
            ("GET", f"/collections/{collection}-other/similar/a", scoped),
            ("DELETE", f"/collections/{collection}-other", scoped),
            ("GET", "/documents/a", scoped),
            ("GET", "/collection", scoped),
            ("GET", "/collections", scoped),
            ("POST", "/collections", scoped),
            ("DELETE", f"/collections/{theirs}", scoped),
        ]
        for method, path, key in refused:
            body = _problem(c.request(method, path, json={"name": mine}, headers=auth[key]), 403)
            assert "limited to the collections" in body["detail"], path
        assert c.get("/collections", headers=auth[admin]).status_code == 200
        assert c.get(f"/collections/{theirs}/documents/a", headers=auth[scoped]).status_code == 200
        assert c.delete(f"/collections/{theirs}", headers=auth[admin]).status_code == 204


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("k" * 20 + ":write:", "at least one collection"),
        ("k" * 20 + ":write:a:b", "key:scope:collection"),
        ("k" * 20 + ":read:a b", "letters, digits"),
    ],
)
def test_bad_collection_limits_stop_start_up(spec: str, why: str) -> None:
    """A key's collection list that is empty or holds a bad name is refused at start-up."""
    from app.core.settings import SettingsError, load_settings

    with pytest.raises(SettingsError) as err:
        load_settings(api_keys=spec)
    assert why in str(err.value) and "k" * 20 not in str(err.value)


def test_a_collection_made_before_newer_formats_is_asked_again_without_conflict(
    client: TestClient, collection: str
) -> None:
    """A stored config from before 2-byte fields, 24-bit fingerprints, packed spills, short
    fields, format 3 passages and id buckets answers the same POST /collections with 200
    and its own formats (whole hashes, sorted sets, 4-byte fields); asking for 24-bit
    fingerprints by name is a 409."""
    name = f"{collection}-old"
    assert client.post("/collections", json={"name": name}).status_code == 201
    store = client.app.state.index.store.sibling(name)  # type: ignore[attr-defined]
    fields = orjson.loads(client.portal.call(store.read_config))  # type: ignore[union-attr]
    for newer in ("fingerprint_bits", "packed_spills", "short_fields", "short_anchors",
                  "passage_bits", "id_buckets", "field_bytes"):  # fmt: skip
        del fields[newer]
    client.portal.call(store.replace_config, orjson.dumps(fields))  # type: ignore[union-attr]
    again = client.post("/collections", json={"name": name})
    assert again.status_code == 200, again.text
    got = again.json()["parameters"]
    assert (got["fingerprint_bits"], got["packed_spills"], got["short_fields"]) == (
        32,
        False,
        False,
    )
    assert got["field_bytes"] == 4
    detail = _problem(client.post("/collections", json={"name": name, "fingerprint_bits": 24}), 409)
    assert "fingerprint_bits: stored 32, asked 24" in detail["detail"]
    assert (
        client.post("/collections", json={"name": name, "fingerprint_bits": 32}).status_code == 200
    )
    client.delete(f"/collections/{name}")


def test_a_write_opened_before_its_collection_was_made_anew_stores_nothing(
    store_url: str, collection: str
) -> None:
    """A write through an index opened on a collection that is then deleted and made again
    (with the same parameters, or others) is refused 409 before any record, maps no id,
    and the new collection stays empty; a write opened on the new one is stored."""
    from app.index import Document
    from app.index.errors import CollectionChangedError
    from app.index.params import Params

    text = BASE + " and one more sentence of its own"

    async def run() -> list[tuple[int, list]]:
        store = Store.connect(store_url, f"{collection}-anew", 5.0)
        seen = []
        try:
            for other in (False, True):
                params = Params.create("word:3", 64, 128, 1, 0.8 if other else 0.5)
                first = Params.create("word:3", 64, 128, 1, 0.5)
                old, _ = await collections.create(store, first, 50, 1 << 20)
                await collections.delete(store)
                new, made = await collections.create(store, params, 50, 1 << 20)
                assert made
                with pytest.raises(CollectionChangedError):
                    await old.ingest([Document(text, "stale")])
                seen.append((await new.count(), await store.ids.handles(["stale"])))
                await new.ingest([Document(text, "fresh")])
                assert [m.id for m in (await new.similar_to_text(text)).results] == ["fresh"]
                await collections.delete(store)
        finally:
            await store.close()
        return seen

    assert asyncio.run(run()) == [(0, [None]), (0, [None])]
