"""Site templates on real pages: do thin pages of one site still match on the template?

The pages: tests/data/sites (two of Rust's mdBook books, Python's Sphinx documentation,
Git's AsciiDoc manual pages, GNU diffutils' Texinfo manual; each under its licence),
ids their URLs on their hosts; and the same pages with a keyboard-help dialog that only
a stylesheet hides written at the top of every page's body (as a newer mdBook writes
one into every page: the trap the issue found, which these generators' releases lack).
 Every page is ingested as text/html through the real app (TestClient, in
process, a throwaway redis-server), then a lightly edited copy of each page (its middle
paragraph deleted, or a word added to a short page) is asked with POST /similar
(threshold 0.5, limit 20, content_type text/html, site its host), and every stored page
with GET /similar/{id} (all pairs).

Truth is independent of app/: each page's own text taken by the standard library's
html.parser from the element the site marks as its main content (``<main>`` on Rust's
mdBook pages, ``role="main"`` on the Python pages, ``div#content`` on Git's, the body
without its ``div.header`` navigation on diffutils'; the body of a page without its
site's marker, a redirect stub), then exact Jaccard over the oracle's word-3 shingle
sets (tests/support/oracle.py).

Two builds in the same run, each on a fresh collection:
- before: the extractor as it was (resiliparse's heuristics alone, swapped in for
  app.index.html's) and no site templates (template_pages 0): the code before this work;
- after: main-content markers honoured, hidden markup dropped, templates learned
  (template_pages 20).

Printed per build: mirrors found (edited copies whose true Jaccard with their page is
>= 0.6, found at >= 0.5), score error p95 against the true Jaccard over every answer,
answers whose own texts share < 0.3 (POST and GET, target 0; with the highest such
score), thin answers, and POST /similar p50 / p99 in ms (in process: no network).

Each query is asked --rounds times (default 3) of each build in turn, and its latency is
the median of those: the machine is shared, and one slow moment must not be one build's.

Run: .venv/bin/python bench/templates.py [--rounds N]
"""

from __future__ import annotations

import argparse
import gzip
import logging
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from common import ROOT, log, oracle
from fastapi.testclient import TestClient
from resiliparse.extract.html2text import extract_plain_text
from stores import ThrowawayRedis

import app.index.html as html_module
from app.api.app import create_app
from app.core.settings import load_settings

SITES = ROOT / "tests" / "data" / "sites"
THRESHOLD = 0.5
LIMIT = 20
MIRROR_TRUTH = 0.6
FALSE_TRUTH = 0.3
BATCH = 100


# --- truth: a plain parser, nothing of app/ -------------------------------------------


class _Own(HTMLParser):
    """The text inside the first element a predicate picks, without script, style,
    template or markup-hidden subtrees, nor subtrees another predicate drops."""

    SKIP: ClassVar = {"script", "style", "template", "noscript"}
    VOID: ClassVar = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed",
            "source", "track", "wbr", "param"}  # fmt: skip

    def __init__(self, pick: Callable[[str, dict], bool], drop: Callable[[str, dict], bool]):
        super().__init__(convert_charrefs=True)
        self.pick, self.drop = pick, drop
        self.stack: list[tuple[str, bool, bool]] = []  # tag, inside pick, skipping
        self.parts: list[str] = []
        self.done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.VOID or self.done:
            return
        a = {k: v or "" for k, v in attrs}
        inside = self.stack[-1][1] if self.stack else False
        skipping = self.stack[-1][2] if self.stack else False
        if not inside and self.pick(tag, a):
            inside = True
        hidden = "hidden" in a or a.get("aria-hidden", "").lower() == "true"
        hidden = hidden or a.get("class") == "shortcuts-help"  # the variant's dialog
        if tag in self.SKIP or hidden or (inside and self.drop(tag, a)):
            skipping = True
        self.stack.append((tag, inside, skipping))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID or self.done:
            return
        for k in range(len(self.stack) - 1, -1, -1):
            if self.stack[k][0] == tag:
                was_inside = self.stack[k][1] and (k == 0 or not self.stack[k - 1][1])
                del self.stack[k:]
                if was_inside:
                    self.done = True  # the first picked element only
                return

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1][1] and not self.stack[-1][2] and not self.done:
            self.parts.append(data)
        if self.stack and self.stack[-1][1]:
            self.parts.append(" ")


_RULES: dict[str, tuple[Callable[[str, dict], bool], Callable[[str, dict], bool]]] = {
    "doc.rust-lang.org": (lambda t, a: t == "main", lambda t, a: False),
    "docs.python.org": (lambda t, a: a.get("role") == "main", lambda t, a: False),
    "git-scm.com": (lambda t, a: a.get("id") == "content", lambda t, a: False),
    "www.gnu.org": (
        lambda t, a: t == "body",
        lambda t, a: "header" in a.get("class", "").split() or "nav-panel" in a.get("class", ""),
    ),
}


def truth_text(host: str, page: str) -> str:
    """The page's own text; a page without its site's marker (a redirect stub): its body."""
    for pick, drop in (_RULES[host], (lambda t, a: t == "body", lambda t, a: False)):
        parser = _Own(pick, drop)
        parser.feed(page)
        parser.close()
        text = " ".join(parser.parts)
        if re.search(r"[^\W_]", text):
            return text
    return ""


# --- pages and their edited copies ------------------------------------------------------

_P = re.compile(r"<p>.*?</p>", re.S)
_SHORT = re.compile(r"</(h1|h2|p|li)>")


def edited(page: str) -> str:
    """A lightly edited copy: its middle paragraph deleted, or a word added to a short page."""
    paragraphs = list(_P.finditer(page))
    if len(paragraphs) >= 3:
        m = paragraphs[len(paragraphs) // 2]
        return page[: m.start()] + page[m.end() :]
    short = _SHORT.search(page)
    if short is None:
        return page
    return page[: short.start()] + " revised" + page[short.start() :]


def load_pages() -> list[tuple[str, str, str]]:
    """(host, url, html) of every page, sites interleaved in path order."""
    per_site = []
    for folder in sorted(p for p in SITES.iterdir() if p.is_dir()):
        files = sorted(folder.rglob("*.html.gz"))
        per_site.append(
            [
                (folder.name, f"https://{folder.name}/{f.relative_to(folder).as_posix()[:-3]}",
                 gzip.decompress(f.read_bytes()).decode("utf-8"))
                for f in files
            ]
        )  # fmt: skip
    out = []
    for k in range(max(map(len, per_site))):
        out += [site[k] for site in per_site if k < len(site)]
    return out


# --- the two builds ---------------------------------------------------------------------


def _before_text(page: str) -> str:
    """app.index.html's extraction as it was before main-content markers."""
    text = extract_plain_text(page, main_content=True, alt_texts=False)
    if not re.search(r"\w", text):
        text = extract_plain_text(page, alt_texts=False)
    return text


@dataclass
class Build:
    """One build's collection and what its answers scored."""

    name: str
    template_pages: int
    text: Callable[[str], str]
    client: Any = None
    errors: list[float] = field(default_factory=list)
    falses: list[tuple[float, str, str, str]] = field(default_factory=list)
    thin: int = 0
    found: int = 0
    lat: list[float] = field(default_factory=list)


def _as(build: Build) -> None:
    html_module._text = build.text  # type: ignore[assignment]


def run(
    url: str, variant: str, pages: list, dress: Callable[[str], str], rounds: int
) -> tuple[list[Build], int]:
    """Both builds over these pages, each dressed (the variant): ingest each, then every
    query of both builds in turn (before, after, before, ...) so a busy machine weighs on
    both alike; a query's latency is the median of its rounds. An edited copy is the
    page edited, then dressed."""
    truth = {u: truth_text(host, dress(h)) for host, u, h in pages}
    o = oracle()
    sets = {k: o.shingles(v, "word:3") for k, v in truth.items()}
    builds = [Build("before", 0, _before_text), Build("after", 20, html_module._text)]
    mirrors = 0
    try:
        for b in builds:
            settings = load_settings(
                redis_url=url, collection=f"bench{variant}{b.name}", redis_timeout=10.0,
                template_pages=b.template_pages, keep_text=False,
            )  # fmt: skip
            b.client = TestClient(create_app(settings)).__enter__()
            _as(b)
            for k in range(0, len(pages), BATCH):
                docs = [
                    {"id": u, "text": dress(h), "content_type": "text/html"}
                    for _, u, h in pages[k : k + BATCH]
                ]
                r = b.client.post("/documents/batch", json={"documents": docs})
                assert r.status_code == 200, r.text
        for host, u, h in pages:
            copy = dress(edited(h))
            q = o.shingles(truth_text(host, copy), "word:3")
            mirror = o.exact_jaccard(q, sets[u]) >= MIRROR_TRUTH
            mirrors += mirror
            body = {"text": copy, "content_type": "text/html", "threshold": THRESHOLD,
                    "limit": LIMIT, "site": host}  # fmt: skip
            times: dict[str, list[float]] = {b.name: [] for b in builds}
            replies = {}
            for _ in range(rounds):  # each build in turn, rounds times
                for b in builds:
                    _as(b)
                    t0 = time.perf_counter()
                    replies[b.name] = b.client.post("/similar", json=body)
                    times[b.name].append(time.perf_counter() - t0)
            for b in builds:
                b.lat.append(float(np.median(times[b.name])))
                r = replies[b.name]
                assert r.status_code == 200, r.text
                ids = set()
                for m in r.json()["results"]:
                    tj = o.exact_jaccard(q, sets[m["id"]])
                    b.errors.append(abs(m["similarity"] - tj))
                    b.thin += bool(m.get("thin"))
                    if tj < FALSE_TRUTH:
                        b.falses.append((m["similarity"], u, m["id"], "POST"))
                    ids.add(m["id"])
                b.found += mirror and u in ids
        for b in builds:
            for _, u, _ in pages:
                r = b.client.get(f"/similar/{u}", params={"threshold": THRESHOLD, "limit": LIMIT})
                for m in r.json()["results"]:
                    tj = o.exact_jaccard(sets[u], sets[m["id"]])
                    b.errors.append(abs(m["similarity"] - tj))
                    if tj < FALSE_TRUTH:
                        b.falses.append((m["similarity"], u, m["id"], "GET"))
    finally:
        html_module._text = builds[1].text  # type: ignore[assignment]
        for b in builds:
            if b.client is not None:
                b.client.__exit__(None, None, None)
    return builds, mirrors


# The keyboard-help dialog a newer mdBook writes into every page's markup, hidden by its
# stylesheet only: the variant puts one (same words) at the top of every page's body.
HELP = (
    '<div class="shortcuts-help"><h2>Keyboard shortcuts</h2><p>Press the left or right '
    "arrow key to go to the previous or next chapter. Press S or / to search in the book. "
    "Press ? to show this help. Press Esc to hide this help.</p></div>"
)
_BODY = re.compile(r"<body[^>]*>", re.I)


def with_help(page: str) -> str:
    m = _BODY.search(page)
    return page if m is None else page[: m.end()] + HELP + page[m.end() :]


def extraction_ms(pages: list) -> dict[str, tuple[float, float]]:
    """Per site, app.index.html.extract's mean time per page with each build's _text:
    each page's best of 5, the builds in turn (extraction is most of a page query)."""
    after = html_module._text
    per: dict[str, list[float]] = {}
    try:
        for host, _, h in pages:
            best = [float("inf"), float("inf")]
            for _ in range(5):
                for k, text in enumerate((_before_text, after)):
                    html_module._text = text
                    t0 = time.perf_counter()
                    html_module.extract(h)
                    best[k] = min(best[k], time.perf_counter() - t0)
            sums = per.setdefault(host, [0.0, 0.0, 0])
            sums[0] += best[0]
            sums[1] += best[1]
            sums[2] += 1
    finally:
        html_module._text = after
    return {h: (s[0] / s[2] * 1000, s[1] / s[2] * 1000) for h, s in per.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=3, help="asks of each query per build (median taken)"
    )
    args = parser.parse_args()
    logging.disable(logging.INFO)  # no access log lines
    shipped = load_pages()
    mb = sum(len(h.encode()) for _, _, h in shipped) / 1e6
    hosts = sorted({p[0] for p in shipped})
    log(f"templates: {len(shipped)} pages of {len(hosts)} sites, {mb:.1f} MB")
    variants: dict[str, Callable[[str], str]] = {
        "as shipped": lambda h: h,
        "+ help dialog": with_help,
    }
    print(f"templates: {len(shipped)} real pages of {', '.join(hosts)} ({mb:.1f} MB HTML);")
    print(f"POST /similar (threshold {THRESHOLD}, limit {LIMIT}, in process) per edited copy,")
    print("GET /similar per page; truth: exact Jaccard of the pages' own texts (html.parser)")
    print(f"{'pages':>14} {'build':>7} {'mirrors found':>14} {'err p95':>8} {'own<0.3':>8} "
          f"{'max such':>9} {'thin':>5} {'POST p50 ms':>12} {'p99 ms':>7}")  # fmt: skip
    examples = []
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "templates").start()
        try:
            for k, (variant, dress) in enumerate(variants.items()):
                builds, mirrors = run(redis.url, str(k), shipped, dress, args.rounds)
                for b in builds:
                    ms = np.array(b.lat) * 1000
                    worst = max((f[0] for f in b.falses), default=0.0)
                    print(
                        f"{variant:>14} {b.name:>7} {f'{b.found}/{mirrors}':>14} "
                        f"{np.percentile(b.errors, 95):>8.3f} {len(b.falses):>8} "
                        f"{worst:>9.2f} {b.thin:>5} {np.percentile(ms, 50):>12.1f} "
                        f"{np.percentile(ms, 99):>7.1f}",
                        flush=True,
                    )
                    examples += [(variant, b.name, *f) for f in sorted(b.falses)[-2:]]
        finally:
            redis.stop()
    for variant, name, sim, a, b_, how in examples:
        print(f"  e.g. {variant}, {name}: {how} {a} ~ {b_} at {sim:.2f}")
    print("extraction, ms per page (each page's best of 5), before -> after:")
    for host, (was, now) in sorted(extraction_ms(shipped).items()):
        print(f"  {host:>18} {was:.3f} -> {now:.3f} ({now / was:.2f}x)")


if __name__ == "__main__":
    main()
