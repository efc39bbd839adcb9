"""Site templates (app.index.templates, app.index.sites, app.store.templates): thin pages
of one site do not match on the template the collection learned from the site itself."""

from __future__ import annotations

import gzip
from pathlib import Path
from urllib.parse import quote

import orjson
from fastapi.testclient import TestClient
from support import oracle
from support.corpus import read_corpus

from app.index.html import extract
from app.index.templates import THIN_SHINGLES, blocks, learn, own_text, site_of

SITES = Path(__file__).parent / "data" / "sites"
SITE = "https://example.org"
# Hidden by the site's stylesheet only (a class), so no extractor can know: about 40
# words in every page's body, as a keyboard-help dialog is.
HELP = (
    '<div class="shortcuts-help">Keyboard shortcuts. Press the left or right arrow key '
    "to go to the previous or next chapter of this book. Press S or the slash key to "
    "search the whole book. Press the question mark key to show this help. Press Escape "
    "to hide this help and return to the page you were reading.</div>"
)
NAV = '<div class="bar"><a href="/">Home</a> <a href="/guide">The Guide</a></div>'


def _page(title: str, body: str) -> str:
    """A page of the site: no main-content marker, its template around its own text."""
    return (
        f"<html><head><title>{title}</title></head><body>{NAV}<div class='content'>"
        f"<h1>{title}</h1><p>{body}</p></div>{HELP}</body></html>"
    )


def _site(n: int = 24) -> dict[str, str]:
    """n pages of real article text (tests/data) in the template; the last two are thin."""
    texts = [t for _, t in read_corpus()[:n]]
    pages = {f"{SITE}/p{i}.html": _page(f"Chapter {i}", texts[i]) for i in range(n - 2)}
    pages[f"{SITE}/thin1.html"] = _page("Exit codes", "Zero means the run succeeded.")
    pages[f"{SITE}/thin2.html"] = _page("Colours", "Pick red blue or green for themes.")
    return pages


def _ingest(client: TestClient, pages: dict[str, str]) -> None:
    docs = [{"id": u, "text": h, "content_type": "text/html"} for u, h in pages.items()]
    r = client.post("/documents/batch", json={"documents": docs})
    assert r.status_code == 200, r.text
    assert r.json()["errors"] == 0, r.text


def _similar(client: TestClient, doc_id: str, threshold: float = 0.5) -> dict[str, float]:
    r = client.get(f"/similar/{doc_id}", params={"threshold": threshold, "limit": 50})
    assert r.status_code == 200, r.text
    return {m["id"]: m["similarity"] for m in r.json()["results"]}


def _own(html: str) -> set:
    """The oracle's shingles of a page's own text: its h1 and p, read without app code."""
    start = html.index("<h1>")
    end = html.index("</p>")
    return oracle.shingles(html[start:end].replace("<h1>", " ").replace("</h1><p>", " "))


def test_thin_pages_sharing_only_the_template_do_not_match(client: TestClient) -> None:
    """Two thin pages of one site whose own texts share nothing do not match at >= 0.5 once
    the site's template is learned, though their extracted texts (what was indexed before
    templates) clear 0.5 by the oracle."""
    pages = _site()
    a, b = f"{SITE}/thin1.html", f"{SITE}/thin2.html"
    # The trap, by the oracle: whole extracted texts match, own texts share nothing.
    whole = oracle.exact_jaccard(
        oracle.shingles(extract(pages[a])), oracle.shingles(extract(pages[b]))
    )
    assert whole >= 0.5
    assert oracle.exact_jaccard(_own(pages[a]), _own(pages[b])) < 0.3
    _ingest(client, pages)
    assert b not in _similar(client, a)
    assert a not in _similar(client, b)
    body = {"text": pages[a], "content_type": "text/html", "site": "example.org", "limit": 50}
    answer = client.post("/similar", json=body).json()
    assert b not in [m["id"] for m in answer["results"]]


def test_the_trap_without_templates(client: TestClient) -> None:
    """The control: in a collection without site templates (template_pages 0, as before
    this work), the two thin pages do match at >= 0.5 on their shared template."""
    r = client.post("/collections", json={"name": "notemplates", "template_pages": 0})
    assert r.status_code in (200, 201), r.text
    docs = [{"id": u, "text": h, "content_type": "text/html"} for u, h in _site().items()]
    r = client.post("/collections/notemplates/documents/batch", json={"documents": docs})
    assert r.status_code == 200, r.text
    r = client.get(f"/collections/notemplates/similar/{SITE}/thin1.html")
    assert f"{SITE}/thin2.html" in [m["id"] for m in r.json()["results"]]
    client.delete("/collections/notemplates")


def test_mirrors_are_still_found_and_scored_on_their_own_text(client: TestClient) -> None:
    """A lightly edited copy of a page finds the page, scored close to the oracle's Jaccard
    of their own texts (the template counts for neither)."""
    pages = _site()
    _ingest(client, pages)
    url = f"{SITE}/p3.html"
    words = read_corpus()[3][1].split()
    edited = " ".join([*words[: len(words) // 2], "indeed", *words[len(words) // 2 :]])
    copy = _page("Chapter 3", edited)
    body = {"text": copy, "content_type": "text/html", "site": "example.org"}
    found = {m["id"]: m["similarity"] for m in client.post("/similar", json=body).json()["results"]}
    truth = oracle.exact_jaccard(_own(copy), _own(pages[url]))
    assert truth >= 0.6
    assert url in found
    assert abs(found[url] - truth) < 0.1


def test_a_page_that_is_all_template_is_422(client: TestClient) -> None:
    """Once the template is learned, a page with nothing of its own is refused as an empty
    text is: 422 on PUT and on POST /similar naming the site, and an error in a batch."""
    _ingest(client, _site())
    bare = f"<html><body>{NAV}{HELP}</body></html>"
    r = client.put(f"/documents/{SITE}/bare.html", json={"text": bare, "content_type": "text/html"})
    assert r.status_code == 422, r.text
    stored = r.json()
    assert "template" in stored["detail"]
    body = {"text": bare, "content_type": "text/html", "site": "example.org"}
    r = client.post("/similar", json=body)
    assert r.status_code == 422, r.text
    asked = r.json()
    assert "template" in asked["detail"]
    # One condition, one title and field, stored or asked (they differed until 2026-11-28).
    assert stored["title"] == asked["title"] == "Page is all template"
    assert stored["errors"][0]["field"] == asked["errors"][0]["field"] == "text"
    docs = [{"id": f"{SITE}/bare2.html", "text": bare, "content_type": "text/html"}]
    r = client.post("/documents/batch", json={"documents": docs})
    assert r.json()["results"][0]["status"] == "error"
    assert client.get(f"/documents/{SITE}/bare.html").status_code == 404


def test_pages_found_all_template_when_it_is_learned_stay_and_say_thin(
    client: TestClient,
) -> None:
    """Two pages of nothing but the template among the first N (stored whole while it was
    learned) are not dropped when it is fixed, and answer each other as thin, by id and
    as matches: they matched at 1.0 with no sign that they share only the template."""
    pages = _site()
    bare = {f"{SITE}/bare{i}.html": f"<html><body>{NAV}{HELP}</body></html>" for i in (1, 2)}
    _ingest(client, {**bare, **pages})  # the bare pages are among the first N
    for doc_id in bare:
        stored = client.get(f"/documents/{doc_id}")
        assert stored.status_code == 200 and stored.json()["shingles"] == 0, stored.text
        answer = client.get(f"/similar/{doc_id}", params={"limit": 50}).json()
        assert answer["thin"] is True
        other = next(m for m in answer["results"] if m["id"] in bare)
        assert other["thin"] is True
    p1 = client.get(f"/similar/{SITE}/p1.html", params={"limit": 50}).json()
    assert "thin" not in p1 and not set(bare) & {m["id"] for m in p1["results"]}
    # they export with their 0 shingles and import again as they are
    lines = [orjson.loads(line) for line in client.get("/export").content.splitlines()]
    docs = [d for d in lines[1:-1] if d["id"] in bare]
    assert [d["shingles"] for d in docs] == [0, 0]
    client.post("/collections", json={"name": "again"})
    back = client.post("/collections/again/import", json={"header": lines[0], "documents": docs})
    assert back.status_code == 200, back.text
    for doc_id in bare:
        assert client.get(f"/collections/again/documents/{doc_id}").json()["shingles"] == 0


def test_thin_matches_say_so(client: TestClient) -> None:
    """A match whose own text has fewer than THIN_SHINGLES shingles carries thin: true; a
    page with more text does not."""
    pages = _site()
    _ingest(client, pages)
    thin = f"{SITE}/thin1.html"
    assert len(_own(pages[thin])) < THIN_SHINGLES
    body = {"text": pages[thin], "content_type": "text/html", "site": "example.org"}
    answer = client.post("/similar", json=body).json()
    assert answer["thin"] is True
    assert next(m for m in answer["results"] if m["id"] == thin)["thin"] is True
    body = {"text": pages[f"{SITE}/p1.html"], "content_type": "text/html", "site": "example.org"}
    answer = client.post("/similar", json=body).json()
    assert "thin" not in answer
    assert all("thin" not in m for m in answer["results"])


def test_a_stored_thin_page_says_so_by_id(client: TestClient) -> None:
    """GET /similar/{id} of a stored thin page says thin: true, as a POST of the page does;
    a page with text of its own does not."""
    pages = _site()
    _ingest(client, pages)
    answer = client.get(f"/similar/{SITE}/thin1.html").json()
    assert answer["thin"] is True
    answer = client.get(f"/similar/{SITE}/p1.html").json()
    assert "thin" not in answer


def test_a_short_text_sent_as_plain_text_is_never_thin(client: TestClient) -> None:
    """A document sent as text/plain is not a page, whatever its id: a short one named by a
    URL is not answered as thin by id, as a match, or after an export and import; a
    page of the same words is."""
    words = "The quick brown fox jumps over the lazy dog near the river bank today."
    page = f"<html><body><p>{words}</p></body></html>"
    plain = [{"id": f"{SITE}/t{i}", "text": words} for i in range(2)]
    pages = [{"id": f"{SITE}/h{i}.html", "text": page, "content_type": "text/html"}
             for i in range(2)]  # fmt: skip
    r = client.post("/documents/batch", json={"documents": plain + pages})
    assert r.json()["errors"] == 0, r.text
    answer = client.get(f"/similar/{SITE}/t0").json()
    assert "thin" not in answer
    assert {m["id"] for m in answer["results"]} >= {f"{SITE}/t1"}
    assert all("thin" not in m for m in answer["results"] if "/t" in m["id"])
    assert all(m["thin"] is True for m in answer["results"] if "/h" in m["id"])
    assert client.get(f"/similar/{SITE}/h0.html").json()["thin"] is True
    lines = [orjson.loads(x) for x in client.get("/export").content.splitlines()]
    exported = {d["id"]: d for d in lines[1:-1]}
    assert exported[f"{SITE}/t0"]["plain"] is True
    assert "plain" not in exported[f"{SITE}/h0.html"]
    client.delete(f"/documents/{SITE}/t0")
    body = {"header": lines[0], "documents": [exported[f"{SITE}/t0"]]}
    assert client.post("/import", json=body).status_code == 200
    assert "thin" not in client.get(f"/similar/{SITE}/t0").json()


def test_the_template_is_fixed_once_learned(client: TestClient) -> None:
    """Pages that arrive after the template is fixed (here, all sharing a new block) do not
    change it: a stored page's answer to a query stays the same."""
    pages = _site()
    _ingest(client, pages)
    before = client.post(
        "/similar",
        json={"text": pages[f"{SITE}/p2.html"], "content_type": "text/html", "site": "example.org"},
    ).json()
    texts = [t for _, t in read_corpus()[100:130]]
    banner = "<p>Our spring sale has started: every printed book is half price until May.</p>"
    more = {
        f"{SITE}/n{i}.html": _page(f"New {i}", t).replace(HELP, banner) for i, t in enumerate(texts)
    }
    _ingest(client, more)
    after = client.post(
        "/similar",
        json={"text": pages[f"{SITE}/p2.html"], "content_type": "text/html", "site": "example.org"},
    ).json()
    assert after["results"] == before["results"]


def test_the_site_is_the_metadata_field_or_the_url_host() -> None:
    """site_of: metadata.site first, else an http(s) URL id's host, else none."""
    assert site_of("https://Example.org/a/b.html", None) == "example.org"
    assert site_of("http://x.test:8080/", {"site": "mine"}) == "mine"
    assert site_of("page-17", {"site": "docs"}) == "docs"
    assert site_of("page-17", None) is None
    assert site_of("ftp://example.org/x", None) is None
    assert site_of("https://", {"site": ""}) is None


def test_one_site_has_one_name_however_written() -> None:
    """A site named with capitals, a trailing root dot, a port, or as a URL is one site with
    the host of its pages' URL ids, and a label is compared case-insensitively."""
    host = site_of("https://news.example.org/a.html", None)
    for written in ("NEWS.example.ORG", "news.example.org.", "news.example.org:443",
                    "https://news.example.org./", "  News.Example.Org  "):  # fmt: skip
        assert site_of("page", {"site": written}) == host, written
    assert site_of("https://NEWS.Example.ORG.:8443/x", None) == host
    # a label with a number after a colon is no host with a port: tenants stay apart
    assert site_of("p", {"site": "tenant:1"}) != site_of("p", {"site": "tenant:2"})
    assert site_of("p", {"site": "localhost:8001"}) == "localhost"
    # a host with a path and no scheme names the host; an IDN host is one in either form
    assert site_of("p", {"site": "news.example.org/a/b.html"}) == host
    assert site_of("p", {"site": "News.Example.org:8080/a"}) == host
    assert site_of("https://m\u00fcnchen.de/x", None) == "xn--mnchen-3ya.de"
    assert site_of("p", {"site": "M\u00fcnchen.de"}) == site_of("q", {"site": "xn--mnchen-3ya.de"})
    assert site_of("p", {"site": "tenant/a"}) != site_of("p", {"site": "tenant/b"})
    # UTS 46, not IDNA 2003: straße.de is its own domain, not strasse.de
    assert site_of("https://stra\u00dfe.de/a", None) == "xn--strae-oqa.de"
    assert site_of("https://strasse.de/a", None) == "strasse.de"
    assert site_of("p", {"site": "httpbin.org/get"}) == "httpbin.org"
    assert site_of("p", {"site": "http.example.com:8080"}) == "http.example.com"
    assert site_of("p", {"site": "Riverside Gazette"}) == site_of(
        "q", {"site": "riverside gazette"}
    )


def test_a_blank_site_is_refused(client: TestClient) -> None:
    """A query naming a blank site is a 422 saying so, not a thin answer."""
    r = client.post("/similar", json={"text": "<p>a page</p>", "content_type": "text/html",
                                      "site": "  "})  # fmt: skip
    assert r.status_code == 422 and "site is blank" in r.text, r.text
    r = client.post("/similar", json={"text": "<p>a page</p>", "content_type": "text/html",
                                      "site": "http://"})  # fmt: skip
    assert r.status_code == 422 and "without a host" in r.text, r.text
    for site in ("http://:80", "https://?q", "http://#"):
        r = client.post("/similar", json={"text": "<p>a page</p>", "content_type": "text/html",
                                          "site": site})  # fmt: skip
        assert r.status_code == 422 and "without a host" in r.text, (site, r.text)


def test_learning_counts_blocks_by_pages_against_an_oracle() -> None:
    """learn keeps exactly the lines on at least half of the pages (and 3 at least),
    compared with a plain count over the lines' case-folded white-space-split tokens."""
    texts = [
        "Menu\nintro one\nFooter text",
        "Menu\nintro two\nFooter text",
        "Menu\nintro three\nother",
        "MENU!\nintro four\nmore",
        "intro five\nFooter  text",
    ]
    template = set(learn(texts).tolist())

    def key(line: str) -> tuple:
        return tuple(line.casefold().split())

    counts: dict[tuple, int] = {}
    for t in texts:
        for k in {key(line) for line in t.split("\n") if key(line)}:
            counts[k] = counts.get(k, 0) + 1
    expected = {k for k, n in counts.items() if n >= max(3, 3)}  # ceil(0.5 * 5) = 3
    got = {key(line) for t in texts for line in t.split("\n") if blocks(line)[0] in template}
    assert got == expected == {("menu",), ("footer", "text")}
    assert own_text("Menu\nmine\nFooter text", learn(texts)) == "mine"


def test_copies_of_one_page_count_once_in_learning() -> None:
    """Ten copies of one article (URL variants) among a site's first pages count as one
    page: its text is not the site's template, the shared menu is."""
    article = "Menu\nThe article's first line\nIts second line\nFooter"
    others = [f"Menu\nAnother story number {i}\nFooter" for i in range(10)]
    template = set(learn([article] * 10 + others).tolist())
    assert {blocks("Menu")[0], blocks("Footer")[0]} == template


def test_judging_a_huge_page_is_bounded() -> None:
    """A 3 MB text of 200,000 lines is judged line by line against a set: it keeps exactly
    its lines that are not template (the work is one pass, see bench/templates.py)."""
    lines = [f"line {i} of words" for i in range(200_000)]
    template = learn([f"line 1 of words\nline 2 of words\npage {k}" for k in range(4)])
    own = own_text("\n".join(lines), template)
    assert own.count("\n") == len(lines) - 3


def test_real_site_pages_keep_their_link_lists() -> None:
    """A real section index page (Python's docs, role=main) keeps its own list of links:
    the module names it lists are in its extracted text."""
    page = gzip.decompress(
        (SITES / "docs.python.org" / "library" / "crypto.html.gz").read_bytes()
    ).decode()
    text = extract(page)
    assert "hashlib" in text and "Cryptographic Services" in text
    assert "Quick search" not in text and "Previous topic" not in text


def test_pages_that_leave_during_learning_no_longer_count(client: TestClient) -> None:
    """While a site is learned its pages are held as pending; a deleted page leaves that
    set, and once N pages are pending the template is fixed and the set is dropped."""
    pages = list(_site().items())
    _ingest(client, dict(pages[:10]))
    for u, _ in pages[:3]:
        assert client.delete(f"/documents/{u}").status_code in (200, 204)
    index = client.app.state.index  # type: ignore[attr-defined]
    store = index.store.templates
    pending = client.portal.call(store.pending, "example.org")  # type: ignore[union-attr]
    assert sorted(pending) == sorted(u for u, _ in pages[3:10])
    (template,) = client.portal.call(store.templates, ["example.org"])  # type: ignore[union-attr]
    assert template is None
    _ingest(client, dict(pages[10:]))  # 7 + 14 = 21 pending: learned
    assert client.portal.call(store.pending, "example.org") == {}  # type: ignore[union-attr]
    (template,) = client.portal.call(store.templates, ["example.org"])  # type: ignore[union-attr]
    assert template is not None and len(template) > 0


def test_copies_of_two_pages_fix_no_template_and_later_pages_do(client: TestClient) -> None:
    """A site's first N pages that are copies of two (URL variants) fix no template (it would
    be empty for good): they stay pending, and the site's next pages fix one from all."""
    pages = list(_site().items())
    copies = {f"{u}?utm_source=s{k}": h for k in range(10) for u, h in pages[:2]}
    _ingest(client, copies)
    store = client.app.state.index.store.templates  # type: ignore[attr-defined]
    (template,) = client.portal.call(store.templates, ["example.org"])  # type: ignore[union-attr]
    assert template is None
    assert len(client.portal.call(store.pending, "example.org")) == 20  # type: ignore[union-attr]
    _ingest(client, dict(pages[2:6]))
    (template,) = client.portal.call(store.templates, ["example.org"])  # type: ignore[union-attr]
    assert template is not None and len(template) > 0


def test_site_needs_html_and_old_collections_have_no_templates(client: TestClient) -> None:
    """A query's site with text/plain is a 422 naming it; a stored config from before
    site templates (no template_pages) reads as templates off."""
    r = client.post("/similar", json={"text": "some words here", "site": "example.org"})
    assert r.status_code == 422
    assert "site" in r.json()["detail"]
    import orjson

    from app.index import Params

    fields = orjson.loads(Params.create("word:3", 128, 256, 1, 0.5).to_json())
    del fields["template_pages"]
    assert Params.stored(orjson.dumps(fields)).template_pages == 0


def test_a_huge_page_of_a_learned_site_is_judged_and_stored(client: TestClient) -> None:
    """A 1.5 MB page of 30,000 own lines in the site's template is stored on its own text:
    its shingle count is the oracle's count of its own text's shingles (the template
    counted for nothing)."""
    _ingest(client, _site())
    own = "\n".join(f"<p>entry {i} holds value {i * 7} for key k{i}</p>" for i in range(30_000))
    page = _page("Big table", "").replace("<p></p>", own)
    assert len(page) > 1_500_000
    r = client.put(f"/documents/{SITE}/big.html", json={"text": page, "content_type": "text/html"})
    assert r.status_code == 201, r.text[:300]
    expected = oracle.shingles(
        "Big table "
        + " ".join(f"entry {i} holds value {i * 7} for key k{i}" for i in range(30_000))
    )
    assert r.json()["shingles"] == len(expected)


def test_racing_writers_of_one_site_leave_every_page_judged(
    store_url: str, collection: str
) -> None:
    """Two indexes (two service processes) ingest a site's pages in racing batches while
    its template is learned: afterwards one template is fixed, nothing is left pending,
    and every page's stored shingle count is the oracle's count of its own text."""
    import asyncio

    from app.index import Document, Index, Params
    from app.store import Store

    pages = _site(40)

    async def run() -> None:
        params = Params.create("word:3", 64, 128, 1, 0.5)
        indexes = [
            await Index.open(Store.connect(store_url, collection, 5.0), params, 200)
            for _ in range(2)
        ]
        docs = [Document(extract(h), u, html=True) for u, h in pages.items()]
        batches = [docs[k : k + 5] for k in range(0, len(docs), 5)]
        await asyncio.gather(*(indexes[k % 2].ingest(b) for k, b in enumerate(batches)))
        index = indexes[0]
        assert await index.store.templates.pending("example.org") == {}
        (template,) = await index.store.templates.templates(["example.org"])
        assert template is not None
        for u, h in pages.items():
            rec = await index.get(u)
            assert rec is not None
            assert rec.shingles == len(_own(h)), u
        await indexes[1].store.close()
        await index.store.close()

    asyncio.run(run())


def test_return_text_is_the_own_text_passage_offsets_refer_to(client: TestClient) -> None:
    """With a site, return_text answers the page's own text (no template lines), and a
    containment answer's query offsets slice it; the site may be given as a URL."""
    pages = _site()
    _ingest(client, pages)
    body = {
        "text": pages[f"{SITE}/p4.html"],
        "content_type": "text/html",
        "site": f"{SITE}/any/page.html",
        "measure": "containment",
        "evidence": True,
        "return_text": True,
    }
    answer = client.post("/similar", json=body).json()
    text = answer["text"]
    assert "Keyboard shortcuts" not in text and "The Guide" not in text
    assert text.startswith("Chapter 4")
    (match,) = [m for m in answer["results"] if m["id"] == f"{SITE}/p4.html"]
    words = oracle.words(read_corpus()[4][1])
    for p in match["passages"]:
        assert set(oracle.words(text[p["query_start"] : p["query_end"]])) <= set(words) | {
            "chapter",
            "4",
        }
    # set aside from the own text too: an excluded quotation's offsets slice it there (they
    # were found in the whole page, a template line's length off)
    quote = "\u201cwords quoted from elsewhere for this test\u201d"
    quoted = pages[f"{SITE}/p4.html"].replace("<p>", f"<p>{quote} ", 1)
    answer = client.post(
        "/similar", json={**body, "text": quoted, "exclude": {"quotes": True}}
    ).json()
    spans = [x for x in answer["excluded"] if x["reason"] == "quote"]
    assert quote in [answer["text"][x["query_start"] : x["query_end"]] for x in spans], spans


def test_a_collection_from_before_is_asked_again_without_conflict(client: TestClient) -> None:
    """A collection whose stored config predates site templates (no template_pages) is
    answered 200 to the same POST /collections, with templates off, not 409."""
    import orjson

    r = client.post("/collections", json={"name": "oldone"})
    assert r.status_code == 201, r.text
    index = client.app.state.index  # type: ignore[attr-defined]
    store = index.store.sibling("oldone")
    fields = orjson.loads(client.portal.call(store.read_config))  # type: ignore[union-attr]
    del fields["template_pages"]
    client.portal.call(store.replace_config, orjson.dumps(fields))  # type: ignore[union-attr]
    r = client.post("/collections", json={"name": "oldone"})
    assert r.status_code == 200, r.text
    assert r.json()["parameters"]["template_pages"] == 0
    client.delete("/collections/oldone")


def test_a_page_replaced_by_a_text_while_learning_stays_the_text(client: TestClient) -> None:
    """A page replaced by a text (text/plain) while its site is learned leaves the learning,
    and fixing the template does not store its old page over the text."""
    pages = list(_site().items())
    url, _ = pages[0]
    _ingest(client, dict(pages[:5]))
    text = "completely new plain words replacing the whole page that was here before"
    assert client.put(f"/documents/{url}", json={"text": text}).status_code == 200
    index = client.app.state.index  # type: ignore[attr-defined]
    pending = client.portal.call(index.store.templates.pending, "example.org")  # type: ignore[union-attr]
    assert url not in pending
    _ingest(client, dict(pages[5:]))  # the template is fixed now
    (template,) = client.portal.call(index.store.templates.templates, ["example.org"])  # type: ignore[union-attr]
    assert template is not None
    stored = client.get(f"/documents/{url}").json()
    assert stored["shingles"] == len(oracle.shingles(text)), stored
    found = client.post("/similar", json={"text": text, "threshold": 0.9}).json()["results"]
    assert [m["id"] for m in found] == [url]


def test_storing_a_thin_page_with_similar_says_it_is_thin(client: TestClient) -> None:
    """POST /documents?similar=true of a thin page of a learned site answers thin: true at
    the top, as POST /similar of the page with its site does; a page with text of its own
    does not."""
    pages = _site()
    _ingest(client, {u: h for u, h in pages.items() if "thin" not in u})
    thin = {"id": f"{SITE}/thin1.html", "text": pages[f"{SITE}/thin1.html"],
            "content_type": "text/html"}  # fmt: skip
    answer = client.post("/documents", params={"similar": "true"}, json=thin).json()
    assert answer["similar"]["thin"] is True, answer
    full = {"id": f"{SITE}/p1-again.html", "text": pages[f"{SITE}/p1.html"],
            "content_type": "text/html"}  # fmt: skip
    answer = client.post("/documents", params={"similar": "true"}, json=full).json()
    assert "thin" not in answer["similar"], answer


def test_copies_of_an_article_differing_by_a_counter_line_count_once() -> None:
    """Pages whose ids are one URL but for the query (?sid=1, ?sid=2) and that share most
    of their blocks (one article, its view counter differing) are one page in learning;
    pages of one path whose texts differ (index.php?id=1, ?id=2) stay apart, and so do
    near-copies under different paths."""
    from app.index.templates import distinct_pages, template_of

    article = "<h1>Council approves flood barrier</h1><p>" + "the council voted " * 20 + "</p>"
    copies = {
        f"https://news.example/a?sid={n}": extract(
            f"<html><body><main>{article}<p>Read {100 + n} times</p></main></body></html>"
        )
        for n in range(3)
    }
    assert len({frozenset(blocks(t)) for t in copies.values()}) == 3  # not byte-identical
    assert len(distinct_pages(copies)) == 1
    texts = [t for _, t in read_corpus()[:3]]
    topics = {f"https://forum.example/view.php?t={i}": extract(_page(f"T{i}", texts[i]))
              for i in range(3)}  # fmt: skip
    assert len(distinct_pages(topics)) == 3
    paths = {f"https://news.example/a{n}": t for n, t in enumerate(copies.values())}
    assert len(distinct_pages(paths)) == 3
    # Thin pages of one path (a forum's viewtopic.php?t=N) share most of their blocks, all
    # of them template: each is a page of its own, so the template is learned.
    thin = {f"https://forum.example/viewtopic.php?t={i}": extract(_page(f"Topic {i}", text))
            for i, text in enumerate(_thin_texts(12))}  # fmt: skip
    assert len(distinct_pages(thin)) == 12
    # ... even with lines that change on every request (phpBB's clock and head count).
    forum = {
        f"https://forum.example/viewtopic.php?t={i}": extract(
            _page(f"Topic {i}", f"It is currently 10:{i:02d}</p><p>{i + 3} users online"
                  f"</p><p>{text}")
        )
        for i, text in enumerate(_thin_texts(12))
    }  # fmt: skip
    assert len(distinct_pages(forum)) == 12
    # Copies of one article, most of the pages learned from, whose counter lines differ
    # in words: still one page, and its text no template.
    ago = ["a minute ago", "two hours ago", "yesterday", "last week"]
    tracked = {
        f"https://news.example/a?sid={n}": extract(
            f"<html><body><nav>Home News Sport</nav><main>{article}<p>Updated {ago[n % 4]}"
            "</p></main></body></html>"
        )
        for n in range(18)
    }
    tracked |= {f"https://news.example/b{n}": extract(_page(f"Other {n}", t))
                for n, t in enumerate(texts[:2])}  # fmt: skip
    assert len(distinct_pages(tracked)) == 3  # the article once, and the two others
    learned = set(template_of(distinct_pages(tracked)).tolist())
    assert not learned & {h for h in blocks(extract(article)) if h is not None}


def _thin_texts(n: int) -> list[str]:
    """n short texts of a dozen words each, none sharing a word shingle with another."""
    words = " ".join(t for _, t in read_corpus()[:20]).split()
    return [" ".join(words[i * 12 : i * 12 + 12]) for i in range(n)]


def test_thin_pages_of_one_path_learn_the_template(client: TestClient) -> None:
    """A site whose pages differ only in their query string (viewtopic.php?t=N), each a
    dozen words of its own in a template many times longer: the template is learned, each
    stored page is its own text (the oracle's shingle count), and no two pages match."""
    name = "forum"
    r = client.post("/collections", json={"name": name, "template_pages": 8})
    assert r.status_code == 201, r.text
    forum = "https://forum.example/viewtopic.php?t="
    pages = {f"{forum}{i}": _page(f"Topic {i}", text) for i, text in enumerate(_thin_texts(12))}
    for doc_id, html in pages.items():
        body = {"text": html, "content_type": "text/html"}
        put = client.put(f"/collections/{name}/documents/{quote(doc_id, safe='')}", json=body)
        assert put.status_code in (200, 201), put.text
    for doc_id, html in pages.items():
        got = client.get(f"/collections/{name}/documents/{quote(doc_id, safe='')}").json()
        assert got["shingles"] == len(_own(html)), (doc_id, got)
        found = client.get(f"/collections/{name}/similar/{quote(doc_id, safe='')}").json()
        assert found["results"] == [], (doc_id, found)


def test_an_article_under_tracking_urls_does_not_become_the_template(client: TestClient) -> None:
    """Three copies of one article under ?sid= URLs, their counter lines differing, among a
    site's first pages: the article keeps its text, the copies match each other, and a
    mirror of it on another site finds them (the article was learned as the template)."""
    assert (
        client.post("/collections", json={"name": "trap", "template_pages": 4}).status_code == 201
    )
    article = (
        "<h1>Council approves riverside flood barrier</h1><p>The city council voted on "
        "Tuesday to fund a two kilometre flood barrier along the riverside district, after "
        "three winters of flooding damaged more than four hundred homes and closed the old "
        "market.</p><p>Engineers expect construction to start in the spring and to take "
        "eighteen months, with the footpath kept open for most of that time.</p>"
    )
    other = "<h1>Library extends opening hours</h1><p>The central library will open late.</p>"

    def page(body: str, views: int) -> str:
        nav = "<nav>Home News Sport</nav>"
        return f"<html><body>{nav}<main>{body}<p>Read {views} times</p></main></body></html>"

    ids = [f"https://news.example/a?sid={n}" for n in (1, 2, 3)]
    for n, doc_id in enumerate(ids):
        body = {"text": page(article, 101 + n), "content_type": "text/html"}
        put = client.put(f"/collections/trap/documents/{quote(doc_id, safe='')}", json=body)
        assert put.status_code in (200, 201), put.text
    body = {"text": page(other, 7), "content_type": "text/html"}
    client.put("/collections/trap/documents/https://news.example/library", json=body)
    own = len(oracle.shingles(extract(f"<main>{article}<p>Read 101 times</p></main>")))
    stored = client.get(f"/collections/trap/documents/{quote(ids[0], safe='')}").json()
    assert stored["shingles"] >= own - 5, stored
    found = client.get(f"/collections/trap/similar/{quote(ids[0], safe='')}").json()["results"]
    assert {m["id"] for m in found} == set(ids[1:])
    mirror = {"text": f"<html><body><main>{article}</main></body></html>",
              "content_type": "text/html"}  # fmt: skip
    found = client.post("/collections/trap/similar", json=mirror).json()["results"]
    assert {m["id"] for m in found} == set(ids)
