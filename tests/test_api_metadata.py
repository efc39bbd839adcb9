"""Metadata that works: filters on /similar, delete by ids or filter, export and import."""

from __future__ import annotations

import base64
import json
import random

import numpy as np
import orjson
import pytest
from fastapi.testclient import TestClient
from support import oracle
from support.corpus import read_corpus, read_truth
from support.settings import loaded_settings
from support.textgen import mutate

from app.api.app import create_app
from app.core.settings import Settings
from app.index.check import check
from app.index.passages import Layout
from app.store import PLACE_BITS

BASE = (
    "Officials in the northern province said on Tuesday that heavy rain had flooded "
    "dozens of villages, cutting roads and forcing thousands of families to leave their "
    "homes while rescue teams searched for people reported missing near the river"
)


def _exact(a: str, b: str) -> float:
    return oracle.exact_jaccard(oracle.shingles(a, "word:3"), oracle.shingles(b, "word:3"))


def _near_corpus(client: TestClient) -> dict[str, tuple[str, dict]]:
    """BASE and twelve near-duplicates of it on three hosts, the nearest on the busiest host."""
    docs = {"base": (BASE, {"host": "base.org"})}
    for i in range(12):
        host = "example.com" if i % 4 == 3 else ("other.net" if i % 2 else "third.io")
        meta = {"host": host, "n": i}
        docs[f"near{i}"] = (mutate(BASE, 0.02 + 0.01 * i, random.Random(i)), meta)
    body = {"documents": [{"id": k, "text": t, "metadata": m} for k, (t, m) in docs.items()]}
    assert client.post("/documents/batch", json=body).status_code == 200
    return docs


def _expected(docs: dict, query: str, host: str, exclude: str | None = None) -> dict[str, float]:
    return {
        k: _exact(query, t)
        for k, (t, m) in docs.items()
        if k != exclude and m["host"] == host and _exact(query, t) >= 0.5
    }


@pytest.mark.both_stores
def test_filter_keeps_every_match_past_the_limit(client: TestClient) -> None:
    """A filtered query returns the oracle's matches on that host although other hosts
    hold more (and closer) matches than the limit; GET and POST agree."""
    docs = _near_corpus(client)
    want = _expected(docs, BASE, "example.com", exclude="base")
    assert len(want) >= 2, "the corpus must hold matches on the filtered host"
    unfiltered = client.get("/similar/base", params={"limit": len(want)}).json()["results"]
    assert not {r["id"] for r in unfiltered} >= set(want), "the limit alone must miss them"
    filt = {"metadata": {"host": "example.com"}}
    got = client.get(
        "/similar/base", params={"limit": len(want), "filter": json.dumps(filt)}
    ).json()
    assert {r["id"]: r["similarity"] for r in got["results"]} == pytest.approx(want)
    posted = client.post("/similar", json={"text": BASE, "limit": len(want), "filter": filt})
    assert {r["id"] for r in posted.json()["results"]} == set(want)
    # Containment takes the same filter: the unfiltered sources on that host, no others.
    wide = {"text": BASE, "measure": "containment", "limit": 50}
    every = client.post("/similar", json=wide).json()["results"]
    on_host = [r["id"] for r in every if docs[r["id"]][1]["host"] == "example.com"]
    narrow = client.post("/similar", json={**wide, "filter": filt}).json()["results"]
    assert on_host and [r["id"] for r in narrow] == on_host
    # Exact values, types kept apart: "n": 3 matches near3 only, "n": "3" and 3.0 nothing.
    for value, ids in ((3, {"near3"}), ("3", set()), (True, set())):
        spec = json.dumps({"metadata": {"n": value}})
        found = client.get("/similar/base", params={"filter": spec}).json()["results"]
        assert {r["id"] for r in found} == ids & set(_expected(docs, BASE, "example.com"))


@pytest.mark.both_stores
def test_filter_applies_before_the_candidate_cap(client: TestClient, settings: Settings) -> None:
    """Past the candidate cap of exact copies on one host, the one copy on the filtered
    host (the newest, which the cap's tie rule would cut) is found by GET and POST, at
    1.0, and the answer says capped only where more than the cap passed the filter; a
    filter every document passes answers as none."""
    cap = settings.candidate_cap
    docs = [
        {"id": f"c{i:04d}", "text": BASE, "metadata": {"site": "a", "kind": "news"}}
        for i in range(cap + 20)
    ]
    docs.append({"id": "wanted", "text": BASE, "metadata": {"site": "b", "kind": "news"}})
    for at in range(0, len(docs), 100):
        body = {"documents": docs[at : at + 100]}
        assert client.post("/documents/batch", json=body).status_code == 200
    plain = client.get("/similar/c0000", params={"limit": 5}).json()
    assert plain["capped"] and "wanted" not in {r["id"] for r in plain["results"]}
    for spec, want, capped in (({"site": "b"}, ["wanted"], False), ({"site": "a"}, None, True)):
        filt = {"metadata": spec}
        got = client.get("/similar/c0000", params={"filter": json.dumps(filt)}).json()
        posted = client.post("/similar", json={"text": BASE, "filter": filt}).json()
        for answer in (got, posted):
            ids = [r["id"] for r in answer["results"]]
            assert ids == want if want else len(ids) == 10 and "wanted" not in ids
            assert all(r["similarity"] == 1.0 for r in answer["results"])
            assert answer["capped"] is capped
    # A filter every document passes answers as no filter (nothing is read again).
    every = {"filter": json.dumps({"metadata": {"kind": "news"}})}
    unfiltered = client.get("/similar/c0000").json()
    assert client.get("/similar/c0000", params=every).json() == unfiltered


@pytest.mark.both_stores
def test_a_filter_finds_its_copy_past_hot_bands_read_in_windows(settings: Settings) -> None:
    """With a cap of 20 and 150 copies on one site (bands past 50 x the cap, read in
    windows by a plain query, which never reach their newest members), the newest copy,
    on the filtered site, is still found by GET and POST (a review: the filtered re-read
    had the plain query's hot budget)."""
    small = settings.model_copy(update={"candidate_cap": 20})
    docs = [{"id": f"c{i:04d}", "text": BASE, "metadata": {"site": "a"}} for i in range(150)]
    docs.append({"id": "wanted", "text": BASE, "metadata": {"site": "b"}})
    with TestClient(create_app(small)) as c:
        for at in range(0, len(docs), 100):
            assert (
                c.post("/documents/batch", json={"documents": docs[at : at + 100]}).status_code
                == 200
            )
        filt = {"metadata": {"site": "b"}}
        got = c.get("/similar/c0000", params={"filter": json.dumps(filt)}).json()
        posted = c.post("/similar", json={"text": BASE, "filter": filt}).json()
        for answer in (got, posted):
            assert [r["id"] for r in answer["results"]] == ["wanted"], answer


def test_metadata_over_its_bound_is_422_and_nothing_is_stored(client: TestClient) -> None:
    """Metadata up to MAX_METADATA_BYTES of JSON is kept as sent; one byte more is a 422
    naming the bound, on a put, a post and a batch item, and nothing is stored."""
    from app.index.records import MAX_METADATA_BYTES

    overhead = len(b'{"note":""}')
    fits = {"note": "x" * (MAX_METADATA_BYTES - overhead)}
    over = {"note": "x" * (MAX_METADATA_BYTES - overhead + 1)}
    put = client.put("/documents/m", json={"text": BASE, "metadata": fits})
    assert put.status_code == 201 and client.get("/documents/m").json()["metadata"] == fits
    for method, path, body in (
        ("put", "/documents/m2", {"text": BASE, "metadata": over}),
        ("post", "/documents", {"id": "m2", "text": BASE, "metadata": over}),
        ("post", "/documents/batch", {"documents": [{"id": "m2", "text": BASE, "metadata": over}]}),
    ):
        r = client.request(method, path, json=body)
        assert r.status_code == 422 and f"{MAX_METADATA_BYTES:,}" in r.json()["detail"], r.text
    assert client.get("/documents/m2").status_code == 404


def test_metadata_nested_past_its_bound_is_422_and_what_fits_exports(client: TestClient) -> None:
    """Metadata nested MAX_METADATA_DEPTH deep (objects and arrays) is kept and exported
    whole, end line included; one level more is a 422 naming the bound on a put, a post and
    a batch item, and nothing is stored (254 levels were stored, then cut every export of
    the collection short)."""
    from app.index.records import MAX_METADATA_DEPTH

    def nested(depth: int) -> dict:
        value: object = 1
        for level in range(depth - 1):
            value = [value] if level % 2 else {"a": value}
        return {"a": value}

    deep = nested(MAX_METADATA_DEPTH)
    assert client.put("/documents/deep", json={"text": BASE, "metadata": deep}).status_code == 201
    for over in (nested(MAX_METADATA_DEPTH + 1), nested(300)):  # 300: past orjson's 255
        for method, path, body in (
            ("put", "/documents/m2", {"text": BASE, "metadata": over}),
            ("post", "/documents", {"id": "m2", "text": BASE, "metadata": over}),
            (
                "post",
                "/documents/batch",
                {"documents": [{"id": "m2", "text": BASE, "metadata": over}]},
            ),
        ):
            r = client.request(method, path, json=body)
            assert r.status_code == 422 and f"{MAX_METADATA_DEPTH} a document" in r.text, r.text
    assert client.get("/documents/m2").status_code == 404
    lines = [orjson.loads(line) for line in client.get("/export").content.splitlines()]
    assert lines[-1] == {"end": True, "documents": 1}
    assert lines[1]["metadata"] == deep


def test_filter_refusals_say_what_to_fix(client: TestClient) -> None:
    """A filter that is not JSON, empty, or not under "metadata" is a 422 naming it."""
    client.put("/documents/a", json={"text": BASE})
    for bad in ("{", "{}", '{"metadata": {}}', '{"host": "x"}', '{"metadata": [1]}'):
        resp = client.get("/similar/a", params={"filter": bad})
        assert resp.status_code == 422, bad
        assert "filter" in resp.json()["detail"]
    resp = client.post("/similar", json={"text": BASE, "filter": {"metadata": {}}})
    assert resp.status_code == 422 and "filter" in resp.json()["detail"]


@pytest.mark.both_stores
def test_delete_by_ids_and_by_filter_in_steps(client: TestClient) -> None:
    """Deleting by ids counts what existed; by filter, resumable steps delete exactly the
    matching documents, and the collection is left consistent."""
    docs = _near_corpus(client)
    resp = client.post("/documents/delete", json={"ids": ["near0", "near1", "nope"]})
    assert resp.json() == {"deleted": 2, "scanned": 3, "cursor": None}
    assert client.get("/documents/near0").status_code == 404
    deleted, steps, cursor = 0, 0, None
    filt = {"metadata": {"host": "other.net"}}
    while True:
        body = {"filter": filt, "step": 4, **({"cursor": cursor} if cursor else {})}
        resp = client.post("/documents/delete", json=body)
        assert resp.status_code == 200, resp.text
        deleted += resp.json()["deleted"]
        steps += 1
        cursor = resp.json()["cursor"]
        if cursor is None:
            break
    gone = {k for k, (_, m) in docs.items() if m["host"] == "other.net"} - {"near1"}
    assert deleted == len(gone) and steps == -(-len(docs) // 4)
    left = {k for k in docs if client.get(f"/documents/{k}").status_code == 200}
    assert left == set(docs) - gone - {"near0", "near1"}
    found = {r["id"] for r in client.get("/similar/base", params={"limit": 50}).json()["results"]}
    assert found.isdisjoint(gone | {"near0", "near1"})
    report = client.portal.call(check, client.app.state.index)  # type: ignore[union-attr]
    assert report.clean and report.ids == len(left)


def test_delete_refusals(client: TestClient) -> None:
    """Both or neither of ids and filter, a cursor with ids or a forged cursor: 422."""
    filt = {"metadata": {"a": 1}}
    for body in ({}, {"ids": ["a"], "filter": filt}, {"ids": ["a"], "cursor": "2"},
                 {"filter": filt, "cursor": "x1"}, {"filter": filt, "step": 0}):  # fmt: skip
        assert client.post("/documents/delete", json=body).status_code == 422, body


def _ndjson(resp) -> list[dict]:  # type: ignore[no-untyped-def]
    return [orjson.loads(line) for line in resp.content.splitlines() if line]


@pytest.mark.both_stores
def test_export_import_round_trip_gives_identical_answers(client: TestClient, settings) -> None:  # type: ignore[no-untyped-def]
    """Export -> import into another collection on the same Redis: every document's
    record and every GET /similar (Jaccard and containment) answer is the same, and the
    corpus' known plagiarism pairs are found in the copy; the end line, sent last in a
    batch, is skipped."""
    truth = read_truth()
    paired = {d for pair in truth for d in pair}
    # Every known pair, among the first hundred others, in corpus order.
    corpus = [(d, t) for n, (d, t) in enumerate(read_corpus()) if n < 100 or d in paired]
    docs = [{"id": d, "text": t, "metadata": {"n": i % 3}} for i, (d, t) in enumerate(corpus)]
    assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
    client.delete(f"/documents/{corpus[5][0]}")  # a gap in the handles
    lines = _ndjson(client.get("/export"))
    head, exported, end = lines[0], lines[1:-1], lines[-1]
    assert head["format"] == "neardup-export" and len(exported) == len(corpus) - 1
    assert end == {"end": True, "documents": len(exported)}
    copy = loaded_settings(redis_url=settings.redis_url, collection=settings.collection + "copy",
        data_dir=settings.data_dir, capacity=2000,  # another bucket count: keys only move
    )  # fmt: skip
    with TestClient(create_app(copy)) as other:
        for i in range(0, len(exported), 100):
            resp = other.post("/import", json={"header": head, "documents": exported[i : i + 100]})
            assert resp.status_code == 200, resp.text
        again = other.post("/import", json={"header": head, "documents": exported[:10]})
        assert again.json() == {"created": 0, "updated": 10}
        # The end line closing the last batch, as a client cutting the lines sends it.
        tail = other.post("/import", json={"header": head, "documents": [*exported[-3:], end]})
        assert tail.json() == {"created": 0, "updated": 3}, tail.text
        assert _ndjson(other.get("/export"))[1:-1] == exported
        for doc_id, _ in corpus:
            for params in ({"limit": 20}, {"measure": "containment", "evidence": "true"}):
                a = client.get(f"/similar/{doc_id}", params=params)
                b = other.get(f"/similar/{doc_id}", params=params)
                assert (a.status_code, a.json()) == (b.status_code, b.json())
        for x, y in truth:
            assert y in {r["id"] for r in other.get(f"/similar/{x}").json()["results"]}
        only = _ndjson(other.get("/export", params={"filter": '{"metadata": {"n": 1}}'}))[1:-1]
        assert {d["id"] for d in only} == {d["id"] for d in exported if d["metadata"]["n"] == 1}


def test_whole_hash_exports_import_into_24_bit_collections_and_not_back(  # type: ignore[no-untyped-def]
    client: TestClient, settings
) -> None:
    """An export that keeps whole hashes (32 bits, or an older export that does not say)
    imports into a 24-bit collection as that collection's own ingest would store it; a
    24-bit export into a 32-bit collection is refused (the lost bits cannot come back)."""
    client.put("/documents/own", json={"text": BASE})
    own = _ndjson(client.get("/export"))[1]
    whole = loaded_settings(redis_url=settings.redis_url, collection=settings.collection + "w32",
        data_dir=settings.data_dir, fingerprint_bits=32,
    )  # fmt: skip
    with TestClient(create_app(whole)) as source:
        source.put("/documents/own", json={"text": BASE})
        head, doc, _ = _ndjson(source.get("/export"))
        assert head["params"]["fingerprint_bits"] == 32 and doc["fingerprint"] != own["fingerprint"]
        mine = _ndjson(client.get("/export"))[0]
        refused = source.post("/import", json={"header": mine, "documents": [own]})
        assert refused.status_code == 422 and "fingerprint_bits" in refused.json()["detail"]
    older = {**head, "params": {k: v for k, v in head["params"].items() if k != "fingerprint_bits"}}
    for header in (head, older):
        resp = client.post("/import", json={"header": header, "documents": [{**doc, "id": "in"}]})
        assert resp.status_code == 200, resp.text
        got = next(d for d in _ndjson(client.get("/export"))[1:-1] if d["id"] == "in")
        assert got["fingerprint"] == own["fingerprint"]


def test_short_band_keys_export_and_import_only_where_keys_are_kept_short(  # type: ignore[no-untyped-def]
    client: TestClient, collection
) -> None:
    """A collection of 2-byte band fields keeps only its keys' place bits and exports them
    as 48 (band_key_bits); it takes a whole-key export (or an older one that does not say)
    cut as its own ingest cuts them, while a collection of longer fields refuses a 48-bit
    export (422 naming band_key_bits)."""
    client.put("/documents/own", json={"text": BASE})
    head, own, _ = _ndjson(client.get("/export"))
    keys = np.frombuffer(base64.b64decode(own["bands"]), "<u8")
    assert head["params"]["band_key_bits"] == 48 and not (keys & ~np.uint64(PLACE_BITS)).any()
    name = f"{collection}-long"  # a collection made before 2-byte fields
    assert client.post("/collections", json={"name": name}).status_code == 201
    store = client.app.state.index.store.sibling(name)  # type: ignore[attr-defined]
    fields = orjson.loads(client.portal.call(store.read_config))  # type: ignore[union-attr]
    del fields["field_bytes"]
    client.portal.call(store.replace_config, orjson.dumps(fields))  # type: ignore[union-attr]
    base = f"/collections/{name}"
    assert client.put(f"{base}/documents/own", json={"text": BASE}).status_code in (200, 201)
    long_head, long_doc, _ = _ndjson(client.get(f"{base}/export"))
    whole = np.frombuffer(base64.b64decode(long_doc["bands"]), "<u8")
    assert long_head["params"]["band_key_bits"] == 64
    assert np.array_equal(whole & np.uint64(PLACE_BITS), keys) and (whole != keys).any()
    refused = client.post(
        f"{base}/import", json={"header": head, "documents": [{**own, "id": "in"}]}
    )
    assert refused.status_code == 422 and "band_key_bits" in refused.json()["detail"]
    params = {k: v for k, v in long_head["params"].items() if k != "band_key_bits"}
    for header in (long_head, {**long_head, "params": params}):
        doc = {**long_doc, "id": "in"}
        resp = client.post("/import", json={"header": header, "documents": [doc]})
        assert resp.status_code == 200, resp.text
        got = next(d for d in _ndjson(client.get("/export"))[1:-1] if d["id"] == "in")
        assert got["bands"] == own["bands"]
        assert [r["id"] for r in client.get("/similar/in").json()["results"]] == ["own"]
    client.delete(base)


def test_import_refuses_other_parameters_and_bad_lines(client: TestClient, settings) -> None:  # type: ignore[no-untyped-def]
    """An export made with other sketch parameters, or a damaged line, stores nothing; one
    whose shingle spec is spelt otherwise (an older collection's " WORD:03") is taken."""
    client.put("/documents/a", json={"text": BASE})
    head, doc, _ = _ndjson(client.get("/export"))
    spelt = {**head, "params": {**head["params"], "shingle": " WORD:03"}}
    taken = client.post("/import", json={"header": spelt, "documents": [{**doc, "id": "s"}]})
    assert taken.status_code == 200, taken.text
    assert client.delete("/documents/s").status_code == 204
    other = loaded_settings(redis_url=settings.redis_url, collection=settings.collection + "t8",
        data_dir=settings.data_dir, threshold=0.8,
    )  # fmt: skip
    with TestClient(create_app(other)) as target:
        resp = target.post("/import", json={"header": head, "documents": [doc]})
        assert resp.status_code == 422 and "threshold" in resp.json()["detail"]
        assert target.get("/readyz").json()["documents"] == 0
    bad = [
        {**doc, "fingerprint": "!!"},
        {**doc, "bands": doc["fingerprint"]},
        {**doc, "passages": "AAAA"},
        {**doc, "shingles": -1},
        # a count its fingerprint cannot go with: more than a terabyte text has, or fewer
        # shingles than fingerprint values (0 is a page that is all template: taken)
        {**doc, "shingles": 2**62},
        {**doc, "shingles": len(base64.b64decode(doc["fingerprint"])) // 4 - 1},
        {**doc, "id": ""},
        # found from outside: 0 for a text sent as such (only a page can be all template),
        # and far more than a short (complete) fingerprint's values
        {**doc, "shingles": 0, "plain": True},
        {**doc, "shingles": 2**40},
        {**doc, "expire_ms": 4_102_444_800_000},  # misspelt: read as absent, it would never expire
    ]
    for line in bad:
        resp = client.post(
            "/import", json={"header": head, "documents": [{**doc, "id": "z"}, line]}
        )
        assert resp.status_code == 422, line
    assert "unknown field 'expire_ms'" in resp.json()["detail"]
    resp = client.post("/import", json={"header": {**head, "extra": 1}, "documents": [doc]})
    assert resp.status_code == 422 and "unknown field 'extra'" in resp.json()["detail"]
    assert client.get("/documents/z").status_code == 404
    # An unsorted fingerprint is named by its line (a uint32 difference wrapped past the check).
    values = np.frombuffer(base64.b64decode(doc["fingerprint"]), "<u4").copy()
    values[[0, 1]] = values[[1, 0]]
    swapped = {**doc, "id": "swapped", "fingerprint": base64.b64encode(values.tobytes()).decode()}
    resp = client.post("/import", json={"header": head, "documents": [swapped]})
    assert resp.status_code == 422 and "'swapped'" in resp.json()["detail"], resp.text
    # The header's params as an export writes them: no unknown field, JSON types as sent.
    for params in (
        {**head["params"], "fingerprint_bit": 24},
        {**head["params"], "num_perm": float(head["params"]["num_perm"])},
        {**head["params"], "seed": True} if head["params"]["seed"] == 1 else None,
    ):
        if params is not None:
            resp = client.post(
                "/import", json={"header": {**head, "params": params}, "documents": [doc]}
            )
            assert resp.status_code == 422, params
    resp = client.post("/import", json={"header": {**head, "version": True}, "documents": [doc]})
    assert resp.status_code == 422
    assert client.get("/readyz").json()["documents"] == 1  # a, from the start


def test_import_refuses_a_passage_layout_no_text_has(client: TestClient) -> None:
    """A layout that decodes but whose spans go below 0, past 2**31 or backwards, or whose
    anchors lie past the text's words, is a 422 naming its line, and nothing is stored
    (an outside audit: answers about a sound source then gave its passages at -10**9)."""
    client.put("/documents/src", json={"text": BASE})
    head, doc, _ = _ndjson(client.get("/export"))
    read = Layout.unpack(base64.b64decode(doc["passages"]))
    n = read.words
    below = np.full(n, -(10**9), np.int64)
    past = np.arange(n, dtype=np.int64) * (2**31 - 100)
    backwards = read.starts[::-1].copy()
    spans = [(below, below + 3), (past, past + 5), (backwards, backwards + 2)]
    layouts = [
        Layout(read.anchor_hashes, read.anchor_words, read.word_hashes, s, e, bits=read.bits)
        for s, e in spans
    ]
    layouts.append(
        Layout(read.anchor_hashes, read.anchor_words + n, read.word_hashes,
               read.starts, read.ends, bits=read.bits)
    )  # fmt: skip
    for layout in layouts:
        evil = {**doc, "id": "evil", "passages": base64.b64encode(layout.pack()).decode()}
        resp = client.post("/import", json={"header": head, "documents": [evil]})
        assert resp.status_code == 422 and "'evil'" in resp.json()["detail"], resp.text
        assert client.get("/documents/evil").status_code == 404
    ok = {**doc, "id": "copy"}  # the layout as exported is a text's
    assert client.post("/import", json={"header": head, "documents": [ok]}).status_code == 200


def test_import_drops_an_epoch_expiry_and_counts_a_repeated_id(client: TestClient) -> None:
    """An import line whose expires_ms is 0 (the epoch: long past; absent is never) is not
    written, and an id on two lines is counted created once and updated once, as a batch
    of documents counts it (the last line wins)."""
    client.put("/documents/a", json={"text": BASE})
    head, doc, _ = _ndjson(client.get("/export"))
    assert client.delete("/documents/a").status_code == 204
    resp = client.post("/import", json={"header": head, "documents": [{**doc, "expires_ms": 0}]})
    assert resp.status_code == 200 and resp.json() == {"created": 0, "updated": 0}, resp.text
    assert client.get("/documents/a").status_code == 404
    twice = [doc, {**doc, "metadata": {"n": 2}}]
    resp = client.post("/import", json={"header": head, "documents": twice})
    assert resp.json() == {"created": 1, "updated": 1}, resp.text
    assert client.get("/documents/a").json()["metadata"] == {"n": 2}


def test_a_full_import_batch_may_end_with_the_end_line(client: TestClient) -> None:
    """1,000 export lines and the end line after them, as a client cutting an export into
    batches of 1,000 sends its last one, import whole (a reviewer got a 422 for 1,001
    items); 1,001 documents are still refused."""
    docs = [{"id": f"d{i}", "text": f"word{i}x and some other words {i} here"} for i in range(1000)]
    assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
    lines = _ndjson(client.get("/export"))
    head, exported, end = lines[0], lines[1:-1], lines[-1]
    assert len(exported) == 1000 and end["end"] is True
    body = {"header": head, "documents": [*exported, end]}
    r = client.post("/import", json=body)
    assert r.status_code == 200 and r.json() == {"created": 0, "updated": 1000}, r.text
    more = {"header": head, "documents": [*exported, exported[0]]}
    assert client.post("/import", json=more).status_code == 422
