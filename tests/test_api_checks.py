"""Stored checks: POST /checks, GET and DELETE /checks/{id}, expiry, keys, changed sources."""

from __future__ import annotations

import json
import re
import time
import zlib
from datetime import datetime

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from support import oracle
from support.cluster import sync_client
from support.corpus import read_corpus

ADMIN, READER, SCOPED_A, SCOPED_B = "a" * 24, "r" * 24, "s" * 24, "b" * 24


def _words(text: str, start: int, n: int) -> str:
    return " ".join(text.split()[start : start + n])


def _unrelated(n: int) -> dict[str, str]:
    """n corpus articles that share no word 3-shingle (so a copied run has one source)."""
    kept: dict[str, str] = {}
    seen: set = set()
    for doc_id, text in read_corpus():
        shingles = oracle.shingles(text, "word:3")
        if not shingles & seen:
            kept[doc_id] = text
            seen |= shingles
        if len(kept) == n:
            return kept
    raise AssertionError(f"the corpus has no {n} unrelated articles")


@pytest.fixture
def corpus(client: TestClient) -> dict[str, str]:
    """Ten unrelated corpus articles stored in the test's collection, by id."""
    docs = _unrelated(10)
    batch = [{"id": i, "text": t} for i, t in docs.items()]
    assert client.post("/documents/batch", json={"documents": batch}).json()["errors"] == 0
    return docs


def _essay(corpus: dict[str, str]) -> tuple[str, list[str]]:
    """A text with a copied run of two stored articles, and those articles' ids."""
    a, b = list(corpus)[2], list(corpus)[7]
    text = (
        "An essay of mine opens with two sentences of my own about walking.\n\n"
        + _words(corpus[a], 15, 45)
        + "\n\nThen original prose about orchards, rain and a bicycle with a bell.\n\n"
        + _words(corpus[b], 30, 40)
        + "\n\nAnd my own close."
    )
    return text, [a, b]


def _passages(answer: dict) -> set[tuple[str, int, int, int, int]]:
    return {
        (r["id"], p["query_start"], p["query_end"], p["source_start"], p["source_end"])
        for r in answer["results"]
        for p in r["passages"]
    }


def _ms(rfc3339: str) -> int:
    return int(datetime.fromisoformat(rfc3339).timestamp() * 1000)


@pytest.mark.both_stores
def test_a_check_is_stored_answered_again_and_deleted(client: TestClient, corpus) -> None:  # type: ignore[no-untyped-def]
    """POST /checks answers 201 with a 128-bit id, its report link and POST /similar's
    containment answer with evidence and text; GET answers the same passages and text;
    DELETE is 204, then GET and DELETE are 404."""
    text, sources = _essay(corpus)
    made = client.post("/checks", json={"text": text})
    assert made.status_code == 201, made.text
    check = made.json()
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", check["id"])  # 16 random bytes, base64url
    assert check["report"] == f"/ui/checks/{check['id']}"
    assert made.headers["location"] == f"/checks/{check['id']}"
    query = {"text": text, "measure": "containment", "evidence": True, "return_text": True}
    direct = client.post("/similar", json=query).json()
    assert check["answer"] == direct
    # Independent of the service: each passage slices the copied words out of both texts.
    found = _passages(check["answer"])
    assert {s for s, *_ in found} == set(sources)
    for source, qs, qe, ss, se in found:
        assert text[qs:qe] == corpus[source][ss:se] and len(text[qs:qe].split()) >= 30
    again = client.get(f"/checks/{check['id']}")
    assert again.status_code == 200
    assert again.json()["answer"] == check["answer"]
    assert again.json()["answer"]["text"] == text
    assert again.json()["changed_sources"] == []
    assert client.delete(f"/checks/{check['id']}").status_code == 204
    gone = client.get(f"/checks/{check['id']}")
    assert gone.status_code == 404 and "no check" in gone.json()["detail"]
    assert client.delete(f"/checks/{check['id']}").status_code == 404


def test_defaults_follow_the_body_like_post_similar(client: TestClient, corpus) -> None:  # type: ignore[no-untyped-def]
    """return_text=false leaves the text out of the 201 (GET still has it, the report needs
    it); measure=jaccard is kept as a Jaccard answer without evidence; evidence with
    Jaccard, exclude with Jaccard, a site without text/html (as POST /similar refuses them),
    a ttl of 0 or past 100 years, and an unknown field are 422s naming the field."""
    text, _ = _essay(corpus)
    quiet = client.post("/checks", json={"text": text, "return_text": False}).json()
    assert "text" not in quiet["answer"] and quiet["answer"]["results"]
    assert client.get(f"/checks/{quiet['id']}").json()["answer"]["text"] == text
    first = next(iter(corpus))
    jaccard = client.post("/checks", json={"text": corpus[first], "measure": "jaccard"})
    assert jaccard.status_code == 201
    assert jaccard.json()["answer"]["results"][0] == {"id": first, "similarity": 1.0}
    assert "measure" not in jaccard.json()["answer"]  # POST /similar's Jaccard shape
    for body, field in [
        ({"text": text, "measure": "jaccard", "evidence": True}, "evidence"),
        ({"text": text, "measure": "jaccard", "exclude": {"quotes": True}}, "exclude"),
        ({"text": text, "site": "example.com"}, "site"),
        ({"text": text, "ttl": 0}, "ttl"),
        ({"text": text, "ttl": 100 * 366 * 24 * 3600}, "ttl"),
        ({"text": text, "ttl": "60"}, "ttl"),
        ({"text": text, "keep": True}, "keep"),
    ]:
        refused = client.post("/checks", json=body)
        assert refused.status_code == 422, body
        assert field in refused.json()["detail"], refused.json()


def test_an_id_of_another_shape_is_404_without_a_lookup(client: TestClient) -> None:
    """Ids that cannot be a check's (too short, too long, other characters) are 404s."""
    for bad in ("x", "A" * 21, "A" * 23, "A" * 21 + "=", "A" * 21 + "."):
        assert client.get(f"/checks/{bad}").status_code == 404
        assert client.delete(f"/checks/{bad}").status_code == 404


def test_a_path_with_a_trailing_slash_is_404_not_a_redirect(client: TestClient) -> None:
    """A path the API lacks, ending in a slash where a route lacks one, is a 404: no 307 to
    the route without it (22 encoded slashes as a check id went to POST /checks)."""
    for path in ("/checks/" + "%2F" * 22, "/checks/", "/documents/", "/similar/", "/healthz/"):
        resp = client.get(path, follow_redirects=False)
        assert resp.status_code == 404 and "location" not in resp.headers, path


def test_a_check_expires_after_its_ttl_through_redis_key_expiry(  # type: ignore[no-untyped-def]
    client: TestClient, corpus, settings, collection: str
) -> None:
    """A check's key carries its expiry (ttl, else NEARDUP_CHECK_TTL): expires_at is that
    far from created_at, Redis' PTTL agrees, the stored value is zlib-compressed (no plain
    text in Redis), and a 1 s check answers 404 once its second is over."""
    text, _ = _essay(corpus)
    redis = sync_client(settings.redis_url)
    default = client.post("/checks", json={"text": text}).json()
    span = _ms(default["expires_at"]) - _ms(default["created_at"])
    assert span == 30 * 24 * 3600 * 1000 == settings.check_ttl * 1000
    key = f"nd:{collection}:c:{default['id']}".encode()
    assert 0 < span - redis.pttl(key) < 5000
    raw = redis.get(key)
    assert text.encode()[:40] not in raw and json.loads(zlib.decompress(raw))["text"] == text
    short = client.post("/checks", json={"text": text, "ttl": 1}).json()
    assert _ms(short["expires_at"]) - _ms(short["created_at"]) == 1000
    assert 0 < redis.pttl(f"nd:{collection}:c:{short['id']}") <= 1000
    assert client.get(f"/checks/{short['id']}").status_code == 200
    time.sleep(1.1)
    assert client.get(f"/checks/{short['id']}").status_code == 404
    assert not redis.exists(f"nd:{collection}:c:{short['id']}")  # gone from Redis itself
    assert client.get(f"/checks/{default['id']}").status_code == 200


def test_neardup_check_ttl_sets_the_default(settings, corpus) -> None:  # type: ignore[no-untyped-def]
    """NEARDUP_CHECK_TTL is the default lifetime; a check's own ttl overrides it."""
    from app.api.app import create_app

    with TestClient(create_app(settings.model_copy(update={"check_ttl": 90}))) as c:
        text, _ = _essay(corpus)
        made = c.post("/checks", json={"text": text}).json()
        assert _ms(made["expires_at"]) - _ms(made["created_at"]) == 90_000
        own = c.post("/checks", json={"text": text, "ttl": 7}).json()
        assert _ms(own["expires_at"]) - _ms(own["created_at"]) == 7_000


def test_changed_and_deleted_sources_are_named_and_the_check_kept(  # type: ignore[no-untyped-def]
    client: TestClient, corpus
) -> None:
    """After a source is rewritten and another deleted, GET answers the check as it was (same
    passages) and names the two as changed and deleted; an unchanged rewrite is no change."""
    text, (a, b) = _essay(corpus)
    check = client.post("/checks", json={"text": text}).json()
    assert client.put(f"/documents/{a}", json={"text": corpus[a]}).status_code == 200
    assert client.get(f"/checks/{check['id']}").json()["changed_sources"] == []
    # A new time to live changes no document: no change either.
    again = client.put(f"/documents/{a}", json={"text": corpus[a], "ttl": 3600})
    assert again.status_code == 200, again.text
    assert client.get(f"/checks/{check['id']}").json()["changed_sources"] == []
    assert client.put(f"/documents/{a}", json={"text": corpus[a] + " Updated."}).status_code == 200
    assert client.delete(f"/documents/{b}").status_code == 204
    later = client.get(f"/checks/{check['id']}").json()
    assert later["answer"] == check["answer"]
    ranked = [r["id"] for r in check["answer"]["results"]]
    expected = [{"id": i, "change": {a: "changed", b: "deleted"}[i]} for i in ranked]
    assert later["changed_sources"] == expected


def test_checks_live_in_their_collection(client: TestClient, corpus, collection: str) -> None:  # type: ignore[no-untyped-def]
    """A check made under /collections/{name} reports under /ui/collections/{name}/checks/,
    is read there, and is not found through another collection or the unprefixed routes."""
    other = f"{collection}-o"
    assert client.post("/collections", json={"name": other}).status_code == 201
    doc = corpus[list(corpus)[4]]
    assert client.put(f"/collections/{other}/documents/x", json={"text": doc}).status_code == 201
    made = client.post(f"/collections/{other}/checks", json={"text": doc}).json()
    assert made["report"] == f"/ui/collections/{other}/checks/{made['id']}"
    assert [r["id"] for r in made["answer"]["results"]] == ["x"]
    assert client.get(f"/collections/{other}/checks/{made['id']}").status_code == 200
    assert client.get(f"/checks/{made['id']}").status_code == 404
    assert client.get(f"/collections/{collection}/checks/{made['id']}").status_code == 404
    # Deleting the collection takes its checks with it.
    assert client.delete(f"/collections/{other}").status_code == 204
    assert client.post("/collections", json={"name": other}).status_code == 201
    assert client.get(f"/collections/{other}/checks/{made['id']}").status_code == 404


def test_keys_read_keys_make_checks_and_limited_keys_see_their_own(  # type: ignore[no-untyped-def]
    settings, collection: str
) -> None:
    """A read key makes, reads and deletes checks; a key limited to collection A reads A's
    checks and gets 403 on B's and the default collection's; B's key cannot read A's check
    (403 through A, 404 through B); without a key it is 401."""
    from app.api.app import create_app

    coll_a, coll_b = f"{collection}-a", f"{collection}-b"
    spec = f"{ADMIN}:write,{READER}:read,{SCOPED_A}:read:{coll_a},{SCOPED_B}:read:{coll_b}"
    keyed = settings.model_copy(update={"api_keys": SecretStr(spec)})
    auth = {k: {"Authorization": f"Bearer {k}"} for k in (ADMIN, READER, SCOPED_A, SCOPED_B)}
    text = next(iter(read_corpus()))[1]
    with TestClient(create_app(keyed)) as c:
        for name in (coll_a, coll_b):
            assert (
                c.post("/collections", json={"name": name}, headers=auth[ADMIN]).status_code == 201
            )
            put = c.put(
                f"/collections/{name}/documents/d", json={"text": text}, headers=auth[ADMIN]
            )
            assert put.status_code == 201
        assert c.post("/checks", json={"text": text}).status_code == 401
        own = c.post("/checks", json={"text": text}, headers=auth[READER])
        assert own.status_code == 201
        assert c.get(f"/checks/{own.json()['id']}", headers=auth[READER]).status_code == 200
        assert c.delete(f"/checks/{own.json()['id']}", headers=auth[READER]).status_code == 204

        in_a = c.post(f"/collections/{coll_a}/checks", json={"text": text}, headers=auth[SCOPED_A])
        assert in_a.status_code == 201
        cid = in_a.json()["id"]
        assert (
            c.get(f"/collections/{coll_a}/checks/{cid}", headers=auth[SCOPED_A]).status_code == 200
        )
        for path in (f"/collections/{coll_b}/checks", "/checks"):
            refused = c.post(path, json={"text": text}, headers=auth[SCOPED_A])
            assert refused.status_code == 403 and "limited to" in refused.json()["detail"]
        assert c.get(f"/checks/{cid}", headers=auth[SCOPED_A]).status_code == 403
        # B's key: refused on A's path, and B's own collection has no such check.
        assert (
            c.get(f"/collections/{coll_a}/checks/{cid}", headers=auth[SCOPED_B]).status_code == 403
        )
        assert (
            c.delete(f"/collections/{coll_a}/checks/{cid}", headers=auth[SCOPED_B]).status_code
            == 403
        )
        assert (
            c.get(f"/collections/{coll_b}/checks/{cid}", headers=auth[SCOPED_B]).status_code == 404
        )
        assert (
            c.get(f"/collections/{coll_a}/checks/{cid}", headers=auth[SCOPED_A]).status_code == 200
        )


def test_a_page_is_checked_and_kept_as_its_extracted_text(client: TestClient, corpus) -> None:  # type: ignore[no-untyped-def]
    """With content_type text/html the check keeps the page's extracted text, which the
    stored passages' offsets slice to the copied words (no markup in it)."""
    text, _ = _essay(corpus)
    paragraphs = "".join(f"<p>{p}</p>" for p in text.split("\n\n"))
    page = f"<html><head><title>Essay</title></head><body><article>{paragraphs}</article></body>"
    made = client.post("/checks", json={"text": page, "content_type": "text/html"})
    assert made.status_code == 201, made.text
    kept = client.get(f"/checks/{made.json()['id']}").json()["answer"]
    assert "<p>" not in kept["text"] and kept["results"]
    for source, qs, qe, ss, se in _passages(kept):
        assert kept["text"][qs:qe] == corpus[source][ss:se]


def test_a_collection_without_a_passage_index_checks_only_by_jaccard(client: TestClient) -> None:
    """In the mirror-detection recipe (passage_words 0) a check's default measure,
    containment, is a 422 that names the missing passage index, and a check asking for
    jaccard is kept (docs/checks.md; an outside audit met the 422 undocumented)."""
    body = {"name": "mirrorchecks", "threshold": 0.8, "passage_words": 0}
    assert client.post("/collections", json=body).status_code == 201
    text = " ".join(f"word{i}x" for i in range(60))
    r = client.post("/collections/mirrorchecks/checks", json={"text": text})
    assert r.status_code == 422 and "passage index" in r.json()["detail"], r.text
    r = client.post("/collections/mirrorchecks/checks", json={"text": text, "measure": "jaccard"})
    assert r.status_code == 201, r.text
    client.delete("/collections/mirrorchecks")


def _listed(client: TestClient, prefix: str = "", page: int = 3) -> list[dict]:
    """Every check GET {prefix}/checks lists, page by page; asserts each page's size."""
    out: list[dict] = []
    cursor = None
    while True:
        params = {"limit": page} | ({"cursor": cursor} if cursor else {})
        got = client.get(f"{prefix}/checks", params=params)
        assert got.status_code == 200, got.text
        body = got.json()
        assert len(body["checks"]) == page or body["cursor"] is None
        out += body["checks"]
        cursor = body["cursor"]
        if cursor is None:
            return out


@pytest.mark.both_stores
def test_checks_are_listed_newest_first_a_page_at_a_time(  # type: ignore[no-untyped-def]
    client: TestClient, corpus, collection: str
) -> None:
    """GET /checks lists every stored check once, newest first, over pages of any size,
    each with its report link, times, metadata and its answer's summary as GET
    /checks/{id} answers it; a deleted check leaves the list; another collection's checks
    are not in it; a bad limit or cursor is a 422 naming it."""
    text, _ = _essay(corpus)
    made = []
    for i in range(7):
        body = {"text": text if i % 2 else corpus[list(corpus)[i]], "metadata": {"student": i}}
        if i == 3:
            body["measure"] = "jaccard"
        got = client.post("/checks", json=body)
        assert got.status_code == 201, got.text
        made.append(got.json())
    for page in (1, 3, 7, 100):
        listed = _listed(client, page=page)
        # Newest first; checks made in one millisecond may come in either order.
        assert sorted(c["id"] for c in listed) == sorted(m["id"] for m in made)
        times = [_ms(c["created_at"]) for c in listed]
        assert times == sorted(times, reverse=True)
    by_id = {c["id"]: c for c in _listed(client)}
    for m in made:
        c, answer = by_id[m["id"]], client.get(f"/checks/{m['id']}").json()["answer"]
        assert c["report"] == m["report"] and c["metadata"] == m["metadata"]
        assert (c["created_at"], c["expires_at"]) == (m["created_at"], m["expires_at"])
        assert c["measure"] == answer.get("measure", "jaccard")
        assert c["coverage"] == answer.get("coverage")
        assert c["sources"] == len(answer["results"]) and c["characters"] == len(answer["text"])
        first = answer["results"][0] if answer["results"] else None
        score = "containment" if c["measure"] == "containment" else "similarity"
        assert c["top"] == (first and {"id": first["id"], score: first[score]})
    assert client.delete(f"/checks/{made[2]['id']}").status_code == 204
    assert made[2]["id"] not in {c["id"] for c in _listed(client)}
    other = f"{collection}-l"
    assert client.post("/collections", json={"name": other}).status_code == 201
    theirs = client.post(f"/collections/{other}/checks", json={"text": text}).json()
    assert [c["id"] for c in _listed(client, f"/collections/{other}")] == [theirs["id"]]
    assert theirs["id"] not in {c["id"] for c in _listed(client)}
    assert (
        client.get(f"/collections/{other}/checks").json()["checks"][0]["report"]
        == (theirs["report"])
    )
    for bad, field in (({"limit": 0}, "limit"), ({"limit": 1001}, "limit"),
                       ({"cursor": "x"}, "cursor"), ({"cursor": "1.short"}, "cursor")):  # fmt: skip
        got = client.get("/checks", params=bad)
        assert got.status_code == 422 and got.json()["errors"][0]["field"] == field, got.text


def test_an_expired_check_leaves_the_list_and_its_entries_go(  # type: ignore[no-untyped-def]
    client: TestClient, corpus, settings, collection: str
) -> None:
    """A check whose second is over is not listed, and its list entries are taken out of
    Redis (by the page that passed it, or by the next check made)."""
    text, _ = _essay(corpus)
    redis = sync_client(settings.redis_url)
    short = client.post("/checks", json={"text": text, "ttl": 1}).json()
    kept = client.post("/checks", json={"text": text}).json()
    assert {c["id"] for c in _listed(client)} == {short["id"], kept["id"]}
    time.sleep(1.1)
    assert [c["id"] for c in _listed(client)] == [kept["id"]]
    made = f"nd:{collection}:checks:made"
    assert redis.zscore(made, short["id"]) is None and redis.zscore(made, kept["id"])
    assert not redis.hexists(f"nd:{collection}:checks:about", short["id"])
    # Unlisted by a new check when no page passes it.
    gone = client.post("/checks", json={"text": text, "ttl": 1}).json()
    time.sleep(1.1)
    client.post("/checks", json={"text": text})
    assert redis.zscore(f"nd:{collection}:checks:ends", gone["id"]) is None


def test_only_a_write_key_lists_the_checks(settings) -> None:  # type: ignore[no-untyped-def]
    """GET /checks lists every reader's checks (their ids reach them): a read key gets a
    403 that says a write key is needed, in any collection, and a write key the list;
    OPTIONS answers both keys alike."""
    from app.api.app import create_app

    keyed = settings.model_copy(update={"api_keys": SecretStr(f"{ADMIN}:write,{READER}:read")})
    text = next(iter(read_corpus()))[1]
    with TestClient(create_app(keyed)) as c:
        read, write = ({"Authorization": f"Bearer {k}"} for k in (READER, ADMIN))
        made = c.post("/checks", json={"text": text}, headers=read).json()
        refused = c.get("/checks", headers=read)
        assert refused.status_code == 403 and "scope write" in refused.json()["detail"]
        name = settings.collection
        assert c.get(f"/collections/{name}/checks", headers=read).status_code == 403
        listed = c.get("/checks", headers=write)
        assert listed.status_code == 200
        assert made["id"] in {x["id"] for x in listed.json()["checks"]}
        assert c.get(f"/checks/{made['id']}", headers=read).status_code == 200
        # OPTIONS lists nothing: a read key is told what a write key is, the method.
        assert [c.options("/checks", headers=h).status_code for h in (read, write)] == [405, 405]


def test_a_check_whose_key_is_gone_leaves_the_list(  # type: ignore[no-untyped-def]
    client: TestClient, corpus, settings, collection: str
) -> None:
    """A listed check whose own key is gone (evicted, or its collection deleted as it was
    written) is not listed, and its list entries go."""
    text, _ = _essay(corpus)
    gone = client.post("/checks", json={"text": text}).json()
    kept = client.post("/checks", json={"text": text}).json()
    redis = sync_client(settings.redis_url)
    redis.delete(f"nd:{collection}:c:{gone['id']}")
    assert [c["id"] for c in _listed(client)] == [kept["id"]]
    assert redis.zscore(f"nd:{collection}:checks:made", gone["id"]) is None
