"""DELETE /sites/{site}/template: a redesigned site's template learned anew, so its thin
pages stop matching on the new chrome the old template never held."""

from __future__ import annotations

from fastapi.testclient import TestClient
from support import oracle
from support.corpus import read_corpus

from app.index.html import extract

SITE = "https://example.org"


def _page(chrome: str, title: str, body: str) -> str:
    return (
        f"<html><head><title>{title}</title></head><body>{chrome}<div class='content'>"
        f"<h1>{title}</h1><p>{body}</p></div></body></html>"
    )


def _chrome(words: list[str]) -> str:
    """A site's chrome: a bar of links and a 40-word help box no extractor can tell from
    text (hidden by the site's stylesheet only)."""
    return (
        "<div class='bar'><a href='/'>Home</a> <a href='/guide'>Guide</a></div>"
        f"<div class='help'>{' '.join(words)}</div>"
    )


def _site(chrome: str, prefix: str) -> dict[str, str]:
    """22 article pages and two thin ones, in the chrome."""
    texts = [t for _, t in read_corpus()[:22]]
    pages = {f"{SITE}/{prefix}{i}.html": _page(chrome, f"Part {i}", t) for i, t in enumerate(texts)}
    pages[f"{SITE}/{prefix}thin1.html"] = _page(chrome, "Exit codes", "Zero means it worked.")
    pages[f"{SITE}/{prefix}thin2.html"] = _page(chrome, "Colours", "Pick red or green.")
    return pages


def _ingest(client: TestClient, pages: dict[str, str]) -> None:
    docs = [{"id": u, "text": h, "content_type": "text/html"} for u, h in pages.items()]
    r = client.post("/documents/batch", json={"documents": docs})
    assert r.status_code == 200 and r.json()["errors"] == 0, r.text


def _matches(client: TestClient, doc_id: str) -> set[str]:
    r = client.get(f"/similar/{doc_id}", params={"threshold": 0.5, "limit": 50})
    assert r.status_code == 200, r.text
    return {m["id"] for m in r.json()["results"]}


def test_a_redesigned_sites_template_is_learned_anew_once_dropped(client: TestClient) -> None:
    """After a redesign, two thin pages that share only the new chrome match (the oracle
    says their extracted texts clear 0.5); once the template is dropped and the new pages
    sent again, the template learned from them keeps them apart."""
    words = [w for _, t in read_corpus()[40:42] for w in t.split()]
    _ingest(client, _site(_chrome(words[:40]), "old"))
    new = _site(_chrome(words[40:80]), "new")
    a, b = f"{SITE}/newthin1.html", f"{SITE}/newthin2.html"
    assert (
        oracle.exact_jaccard(oracle.shingles(extract(new[a])), oracle.shingles(extract(new[b])))
        >= 0.5
    )
    _ingest(client, new)
    assert b in _matches(client, a)  # the new chrome is their text
    assert client.delete("/sites/example.org/template").status_code == 204
    _ingest(client, new)
    assert b not in _matches(client, a) and a not in _matches(client, b)


def test_dropping_a_template_names_a_bad_site(client: TestClient) -> None:
    """A blank site, or a URL without a host, is a 422 naming site; a site with no
    template is dropped all the same (204)."""
    for bad in ("%20", "http://"):
        r = client.delete(f"/sites/{bad}/template")
        assert r.status_code == 422 and r.json()["errors"][0]["field"] == "site", r.text
    assert client.delete("/collections/other/sites/example.org/template").status_code in (204, 404)
    assert client.delete("/sites/never.example/template").status_code == 204
    # A site written as a URL, slashes and all, names its host.
    assert client.delete("/sites/https://example.org/a/template").status_code == 204
