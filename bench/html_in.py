"""HTML in: extraction speed, and its share of ingest time.

The pages: each of the shared articles (tests/data/articles_1000.train) written into the
news-site template of tests/data/html/site_bridge.html (cookie banner, navigation,
sitemap footer), a paragraph per 40 words; the mirror of each under the other template
(tests/data/html/mirror_bridge.html).

- extraction MB/s of app.index.html.extract over the pages (one thread), and, when they
  are installed, the other candidates measured in the same process on the same pages:
  trafilatura and inscriptis (the baseline the choice was made against);
- quality per library: mean exact word-3 Jaccard (tests/support/oracle.py) of each page's
  extract with its mirror's (high is good), and of each page's with the next article's
  page on the same site (low is good);
- ingest: the same pages through Index.ingest into a throwaway Redis, in batches of 500,
  once as pre-extracted text and timing the extraction separately: extraction's share of
  the whole (extract + index).

Figures, never assertions. Run: .venv/bin/python bench/html_in.py [--quick]
(Not bench/html.py: a script's folder comes first on sys.path, and that name would
shadow the standard library's html module.)
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import ROOT, log, oracle, read_articles
from resiliparse.extract.html2text import extract_plain_text
from stores import ThrowawayRedis

import app.index.html as html_module
from app.index import Document, Index, Params
from app.index.html import extract
from app.store import Store

PAGES = ROOT / "tests" / "data" / "html"
BATCH = 500


def _paragraphs(text: str, words: int = 40) -> list[str]:
    w = text.split()
    return [" ".join(w[i : i + words]) for i in range(0, len(w), words)]


def _templated(template: str, paragraphs: list[str], joiner: str, title: str) -> str:
    """The template with its article body (and title) replaced by these paragraphs."""
    body = joiner.join(paragraphs)
    if joiner == "<br>\n":
        html = re.sub(r'(<div class="text">).*?(</div>)', lambda m: m[1] + body + m[2], template,
                      flags=re.S)  # fmt: skip
        return html.replace("Old bridge to close for eight months of repairs", title)
    start = template.index('<p class="byline">')
    start = template.index("</p>", start) + len("</p>")
    end = template.index("</article>")
    html = template[:start] + "\n" + body + "\n" + template[end:]
    return html.replace("Old bridge to close for eight months of repairs", title)


def make_pages(n: int) -> tuple[list[str], list[str]]:
    """n site pages and their n mirrors."""
    site = (PAGES / "site_bridge.html").read_text(encoding="utf-8")
    mirror = (PAGES / "mirror_bridge.html").read_text(encoding="utf-8")
    articles = read_articles()[:n]
    pages, mirrors = [], []
    for art in articles:
        paras = _paragraphs(art)
        title = " ".join(art.split()[:8])
        pages.append(_templated(site, [f"<p>{p}</p>" for p in paras], "\n", title))
        mirrors.append(_templated(mirror, paras, "<br>\n", title))
    return pages, mirrors


def _heuristics(page: str) -> str:
    text = extract_plain_text(page, main_content=True, alt_texts=False)
    return text if re.search(r"\w", text) else extract_plain_text(page, alt_texts=False)


def _before_extract(page: str) -> str:
    """app.index.html.extract as it was: the same checks, the heuristics alone."""
    now = html_module._text
    html_module._text = _heuristics
    try:
        return extract(page)
    finally:
        html_module._text = now


def _candidates() -> dict[str, Callable[[str], str]]:
    found: dict[str, Callable[[str], str]] = {"resiliparse (app.index.html)": extract}
    # The extractor before main-content markers and hidden markup were honoured (its
    # heuristics alone in app.index.html.extract), measured in the same run.
    found["before: heuristics only"] = _before_extract
    try:
        import trafilatura

        found["trafilatura"] = lambda h: trafilatura.extract(h) or ""
    except Exception:  # not installed (it is not a dependency): measured where it is
        pass
    try:
        import inscriptis

        found["inscriptis"] = inscriptis.get_text
    except Exception:
        pass
    return found


def _quality(texts: list[str], mirror_texts: list[str]) -> tuple[float, float]:
    o = oracle()
    sh = [o.shingles(t, "word:3") for t in texts]
    msh = [o.shingles(t, "word:3") for t in mirror_texts]
    n = len(sh)
    mirror = sum(o.exact_jaccard(a, b) for a, b in zip(sh, msh, strict=True)) / n
    unrelated = sum(o.exact_jaccard(sh[i], sh[(i + 1) % n]) for i in range(n)) / n
    return mirror, unrelated


async def _ingest(texts: list[str], workdir: Path) -> float:
    redis = ThrowawayRedis(workdir, "html").start()
    try:
        params = Params.create("word:3", 128, 256, 1, 0.5, len(texts), passage_words=30)
        store = Store.connect(redis.url, "html", 30.0)
        index = await Index.open(store, params, 200)
        docs = [Document(t, f"page{i}") for i, t in enumerate(texts)]
        started = time.perf_counter()
        for k in range(0, len(docs), BATCH):
            await index.ingest(docs[k : k + BATCH])
        seconds = time.perf_counter() - started
        await store.close()
        return seconds
    finally:
        redis.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 pages")
    args = parser.parse_args()
    pages, mirrors = make_pages(200 if args.quick else 1000)
    mb = sum(len(p.encode()) for p in pages) / 1e6
    log(f"html: {len(pages)} pages, {mb:.1f} MB")
    print(f"html: {len(pages)} pages of the site template ({mb:.2f} MB), one thread")
    print(f"{'library':>30} {'MB/s':>7} {'pages/s':>8} {'mirror J':>9} {'same-site J':>12}")
    extracted: list[str] = []
    extract_seconds = 0.0
    for name, fn in _candidates().items():
        started = time.perf_counter()
        texts = [fn(p) for p in pages]
        seconds = time.perf_counter() - started
        mirror, unrelated = _quality(texts, [fn(m) for m in mirrors])
        print(
            f"{name:>30} {mb / seconds:>7.1f} {len(pages) / seconds:>8,.0f} "
            f"{mirror:>9.3f} {unrelated:>12.3f}",
            flush=True,
        )
        if not extracted:
            extracted, extract_seconds = texts, seconds
    raw_mirror, raw_unrelated = _quality(pages, mirrors)
    print(f"{'(no extraction: the raw HTML)':>30} {'':>7} {'':>8} {raw_mirror:>9.3f} "
          f"{raw_unrelated:>12.3f}")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        index_seconds = asyncio.run(_ingest(extracted, Path(tmp)))
    total = extract_seconds + index_seconds
    print(
        f"ingest of the extracted texts: {len(pages) / index_seconds:,.0f} docs/s; with "
        f"extraction {len(pages) / total:,.0f} pages/s; extraction's share "
        f"{extract_seconds / total:.0%}"
    )


if __name__ == "__main__":
    main()
