"""The report page in a real browser: Debian's chromium driven by Playwright, against a real
`neardup serve` on a real Redis, with API keys on and texts kept.

One server and one browser for the module. Without chromium (or Playwright) the module is
skipped with the command that installs it, unless NEARDUP_REQUIRE_BROWSER=1 (set by .ci/run),
which turns the skip into a failure. NEARDUP_SCREENSHOTS=DIR makes test_screenshots write the
README's screenshots there (`make screenshots`).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import redis
from support import oracle
from support.corpus import read_corpus
from support.disguise import disguise
from support.ids import handle_of
from support.procs import Server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
INSTALL = "apt-get install -y chromium"
try:
    from axe_playwright_python.sync_playwright import Axe
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - the test extras are not installed
    sync_playwright = None  # type: ignore[assignment]

if CHROMIUM is None or sync_playwright is None:
    why = (
        f"the browser suite needs chromium ({INSTALL}) and the test extras (pip install '.[test]')"
    )
    if os.environ.get("NEARDUP_REQUIRE_BROWSER") == "1":
        raise RuntimeError(why)
    pytest.skip(why, allow_module_level=True)

COLLECTION = f"ui{os.getpid()}"
READ_KEY = "read-key-0123456789abcdef"
# A read key limited to the page's own collection: it may not list collections.
LIMITED_KEY = "limited-key-0123456789abcdef"
# A read key limited to another collection (ESSAYS), as a reviewer of one course gets it.
ESSAYS = f"{COLLECTION}-essays"
ESSAYS_KEY = "essays-key-0123456789abcdef"
WRITE_KEY = "write-key-0123456789abcdef"
WRITE = {"Authorization": f"Bearer {WRITE_KEY}"}
READ = {"Authorization": f"Bearer {READ_KEY}"}
HOSTILE_TEXT = (
    "Harbour notice <img src=x onerror=alert(1)> the ferry from the northern pier leaves at "
    "seven every morning except on public holidays when the first boat sails at nine "
    "</textarea><script>alert(2)</script> passengers with bicycles board at the rear ramp."
)
HOSTILE_META = {
    "title": "<script>alert(3)</script><b>bold</b>",
    "url": "javascript:alert(4)",
}


def _words(text: str, start: int, n: int) -> str:
    return " ".join(text.split()[start : start + n])


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    """Twenty articles of the test corpus that are no near-duplicates of another (so a copied
    passage has one source), by id."""
    kept: dict[str, str] = {}
    seen: set = set()
    for doc_id, text in read_corpus():
        shingles = oracle.shingles(text, "word:3")
        if not shingles & seen:
            kept[doc_id] = text
            seen |= shingles
        if len(kept) == 20:
            return kept
    raise AssertionError("the corpus has no twenty unrelated articles")


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, redis_url: str, corpus: dict[str, str]
) -> Iterator[Server]:
    """A real `neardup serve` (keys on, texts kept) holding the corpus and a hostile document."""
    work = tmp_path_factory.mktemp("ui")
    keys = (
        f"{READ_KEY}:read,{WRITE_KEY}:write,{LIMITED_KEY}:read:{COLLECTION},"
        f"{ESSAYS_KEY}:read:{ESSAYS}"
    )
    with Server(
        work,
        NEARDUP_REDIS_URL=redis_url,
        NEARDUP_COLLECTION=COLLECTION,
        NEARDUP_KEEP_TEXT="1",
        NEARDUP_API_KEYS=keys,
        NEARDUP_LOG_LEVEL="warning",
    ) as srv:
        srv.wait_ready(**WRITE)
        docs = [
            {
                "id": i,
                "text": t,
                "metadata": {"title": f"Wire story {i}", "url": f"https://news.example/{i}"},
            }
            for i, t in corpus.items()
        ]
        docs.append({"id": "hostile/<b>1</b>", "text": HOSTILE_TEXT, "metadata": HOSTILE_META})
        answer = httpx.post(srv.url + "/documents/batch", json={"documents": docs}, headers=WRITE)
        assert answer.status_code == 200 and answer.json()["errors"] == 0, answer.text
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def requests_seen() -> list[str]:
    """Every URL any page of this module asked for."""
    return []


def _page(browser: Browser, server: Server, seen: list[str], key: str | None) -> Page:
    context = browser.new_context(viewport={"width": 1360, "height": 900}, accept_downloads=True)
    if key is not None:
        # The key a reviewer typed in earlier in this tab (sessionStorage).
        context.add_init_script(f"sessionStorage.setItem('neardup.key', {json.dumps(key)})")
    page = context.new_page()
    page.on("request", lambda r: seen.append(r.url))
    return page


@pytest.fixture
def page(browser: Browser, server: Server, requests_seen: list[str]) -> Iterator[Page]:
    """A fresh tab holding the read key."""
    p = _page(browser, server, requests_seen, READ_KEY)
    yield p
    p.context.close()


@pytest.fixture(scope="module")
def pasted(corpus: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A text holding a passage copied from each of two stored articles, after an emoji
    (outside the BMP: the API's offsets count code points, JavaScript's strings do not)."""
    ids = list(corpus)
    a, b = ids[3], ids[11]
    copied = {a: _words(corpus[a], 20, 45), b: _words(corpus[b], 60, 40)}
    text = (
        "Essay \U0001f4dd submitted for review. My own opening thoughts come first here.\n\n"
        + copied[a]
        + "\n\nThen a paragraph of wholly original prose about quiet gardens and weather.\n\n"
        + copied[b]
        + "\n\nAnd a closing line of my own."
    )
    return text, copied


def _check(page: Page, server: Server, text: str, goto: bool = True) -> None:
    if goto:
        page.goto(server.url + "/ui/")
    page.get_by_label("Text to check").fill(text)
    page.get_by_role("button", name="Check").click()
    page.locator("#summary").filter(has_text="of the text was found").wait_for()


def _marks(page: Page, selector: str, names: tuple[str, ...]) -> list[tuple]:
    return page.eval_on_selector_all(
        selector,
        "(ms, names) => ms.map(m => [...names.map(n => m.getAttribute(n)), m.textContent])",
        list(names),
    )


def test_marks_are_the_api_passages(page: Page, server: Server, pasted, corpus) -> None:
    """Every <mark> is one passage of the API's answer with exactly that slice of the checked
    text (in code points), that slice is copied from the source it names, the summary is the
    API's coverage, and choosing a passage marks the API's source span in the source's text."""
    text, copied = pasted
    _check(page, server, text)
    api = httpx.post(
        server.url + "/similar",
        json={
            "text": text,
            "threshold": 0.1,
            "limit": 50,
            "measure": "containment",
            "evidence": True,
        },
        headers=READ,
    ).json()
    expected = {
        (r["id"], p["query_start"], p["query_end"]) for r in api["results"] for p in r["passages"]
    }
    marks = _marks(page, "#checked mark", ("data-source", "data-start", "data-end"))
    assert {(s, int(a), int(b)) for s, a, b, _ in marks} == expected
    assert {s for s, *_ in marks} == set(copied)  # both copied sources, nothing else
    for source, start, end, shown in marks:
        assert shown == text[int(start) : int(end)]  # Python slices code points
        assert shown in corpus[source]  # really copied from the source it names
    summary = page.locator("#summary")
    assert float(summary.get_attribute("data-coverage")) == api["coverage"]
    assert f"{100 * api['coverage']:.1f}%" in summary.inner_text()
    assert summary.get_attribute("data-sources") == str(len(api["results"]))
    ranked = page.eval_on_selector_all("#sources tbody tr", "rs => rs.map(r => r.dataset.source)")
    assert ranked == [r["id"] for r in api["results"]]

    second = page.locator("#checked mark").nth(1)
    source = second.get_attribute("data-source")
    q = (int(second.get_attribute("data-start")), int(second.get_attribute("data-end")))
    second.click()
    span = next(
        (p["source_start"], p["source_end"])
        for r in api["results"]
        if r["id"] == source
        for p in r["passages"]
        if (p["query_start"], p["query_end"]) == q
    )
    current = page.locator("#source-text mark.current")
    assert (
        int(current.get_attribute("data-source-start")),
        int(current.get_attribute("data-source-end")),
    ) == span
    assert current.inner_text() == corpus[source][span[0] : span[1]]
    assert current.is_visible()


def test_overlapping_sources_mark_every_character_of_every_passage(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """Three stored sources share stretches of a checked text (wire stories sharing
    sentences): every character the API reports inside some passage is marked exactly
    once, for the best-ranked source holding it, and every source with a passage is
    named on some mark, its own or as another source of it (+n)."""
    words = [f"ov{i}{'bcdfghjklmnpqrstvwz'[i % 19]}er" for i in range(120)]
    fill = [[f"fill{k}x{i}" for i in range(40)] for k in range(3)]
    stored = {
        "overlap-a": " ".join(words[0:50] + fill[0]),
        "overlap-b": " ".join(words[30:110] + fill[1]),
        "overlap-c": " ".join(fill[2] + words[40:120]),
    }
    docs = [{"id": i, "text": t} for i, t in stored.items()]
    made = httpx.post(server.url + "/documents/batch", json={"documents": docs}, headers=WRITE)
    assert made.status_code == 200 and made.json()["errors"] == 0, made.text
    text = " ".join(words)
    _check(page, server, text)
    query = {"text": text, "threshold": 0.1, "limit": 50, "measure": "containment"}
    api = httpx.post(server.url + "/similar", json={**query, "evidence": True}, headers=READ).json()
    ranked = [r["id"] for r in api["results"]]
    assert set(stored) <= set(ranked)
    # The oracle: each character's best-ranked source, from the API's passages alone.
    best: dict[int, str] = {}
    for r in api["results"]:
        for p in r["passages"]:
            for i in range(p["query_start"], p["query_end"]):
                best.setdefault(i, r["id"])
    marks = _marks(page, "#checked mark", ("data-source", "data-start", "data-end", "data-also"))
    marked: dict[int, str] = {}
    named = set()
    for source, start, end, also, shown in marks:
        assert shown == text[int(start) : int(end)]
        for i in range(int(start), int(end)):
            assert i not in marked, i  # marked once
            marked[i] = source
        named.add(source)
        named.update(ranked[int(n) - 1] for n in (also or "").split())
    assert marked == best  # every character of the union, each for its best source
    assert named == {r["id"] for r in api["results"] if r["passages"]}
    assert any(also for *_, also, _ in marks)  # shared stretches say so
    page.screenshot(path=str(tmp_path / "overlap.png"), full_page=True)


def test_a_phone_wide_report_scrolls_its_tables_not_the_page(
    page: Page, server: Server, pasted
) -> None:
    """At a phone's width (390 px) the report is no wider than the screen: the sources
    table scrolls in its own box (the page was 643 px wide, its last columns off screen)."""
    text, _ = pasted
    page.set_viewport_size({"width": 390, "height": 900})
    _check(page, server, text)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_keyboard_moves_from_passage_to_passage(page: Page, server: Server, pasted) -> None:
    """n and p move the focus along the passages in text order and show each one's source."""
    text, _ = pasted
    _check(page, server, text)
    starts = [int(s) for _, s, *_ in _marks(page, "#checked mark", ("data-source", "data-start"))]
    assert starts == sorted(starts) and len(starts) >= 2
    page.locator("h1").click()
    seen = []
    for key in ("n", "n", "p"):
        page.keyboard.press(key)
        seen.append(int(page.evaluate("document.activeElement.dataset.start")))
    assert seen == [starts[0], starts[1], starts[0]]
    page.keyboard.press("Enter")
    page.locator("#source-text mark.current").wait_for()


def test_a_disguised_passage_is_flagged(page: Page, server: Server, corpus, tmp_path) -> None:
    """A passage copied with look-alike letters and invisible characters gets a flag whose
    tooltip gives the API's count of its disguised words, a verbatim passage gets none, and
    axe-core finds no serious violation with flags shown."""
    ids = list(corpus)
    a, b = ids[5], ids[14]
    text = (
        "My essay, in my own words at first, about the harbour and its boats.\n\n"
        + disguise(_words(corpus[a], 30, 60), seed=2, rate=0.5)
        + "\n\nA paragraph of my own about gardens in the rain.\n\n"
        + _words(corpus[b], 40, 50)
    )
    _check(page, server, text)
    api = _containment(server, {"text": text})
    flagged = {
        (r["id"], p["query_start"], p["query_end"]): p["disguised"]
        for r in api["results"]
        for p in r["passages"]
        if "disguised" in p
    }
    assert flagged and {source for source, *_ in flagged} == {a}
    # Each flag stands right before its passage's first mark (after its number badge).
    shown = page.eval_on_selector_all(
        "#checked .flag",
        """fs => fs.map(f => {
            let m = f.nextElementSibling;
            while (m && m.tagName !== "MARK") m = m.nextElementSibling;
            return [m.dataset.source, +m.dataset.start, +f.dataset.disguised, f.title,
                    f.getBoundingClientRect().width > 0];
        })""",
    )
    assert {(s, start, n) for s, start, n, *_ in shown} == {
        (s, start, n) for (s, start, _), n in flagged.items()
    }
    for _, _, n, title, visible in shown:
        assert title.startswith(f"{n} word") and "look-alike or invisible" in title and visible
    assert page.locator("#checked mark[data-source='" + b + "']").count() > 0
    assert page.locator("#checked mark[data-source='" + b + "'][data-disguised]").count() == 0
    row = page.locator(f"#sources tbody tr[data-source='{a}'] .flag")
    assert row.get_attribute("data-disguised") == str(sum(flagged.values()))
    assert page.locator(f"#sources tbody tr[data-source='{b}'] .flag").count() == 0
    assert page.locator("#flag-note").is_visible()
    page.screenshot(path=str(tmp_path / "ui-flag.png"), full_page=True)
    found = Axe().run(page).response["violations"]  # the flags read and contrast as the rest
    assert [v["id"] for v in found if v["impact"] in ("serious", "critical")] == []


def test_hostile_data_is_shown_as_text(page: Page, server: Server) -> None:
    """A document whose text, id and metadata hold markup and a javascript: URL shows those
    characters in the check view and its own view, opens no dialog and runs nothing."""
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    _check(page, server, HOSTILE_TEXT)
    row = page.locator("#sources tbody tr").first
    assert row.get_attribute("data-source") == "hostile/<b>1</b>"
    assert HOSTILE_META["title"] in row.inner_text() and HOSTILE_META["url"] in row.inner_text()
    assert page.locator("a[href^='javascript']").count() == 0
    page.locator("#checked mark").first.click()
    page.locator("#source-text mark").first.wait_for()
    assert "<img src=x onerror=alert(1)>" in page.locator("#source-text").inner_text()

    page.goto(server.url + "/ui/documents/" + "hostile%2F%3Cb%3E1%3C%2Fb%3E")
    page.locator("#report").wait_for()
    assert page.locator("h1").inner_text() == "Document hostile/<b>1</b>"
    shown = page.locator("#checked").inner_text()
    assert "</textarea><script>alert(2)</script>" in shown
    assert page.locator("img, b, main script, iframe").count() == 0
    assert page.evaluate("document.scripts.length") == 1
    assert dialogs == []


def test_a_lost_text_is_said_not_shown(page: Page, server: Server, redis_url: str, corpus) -> None:
    """A source whose kept text is gone (a write cut short) is named, its passages listed
    by offset, and the page says in one sentence why its text is not shown."""
    doc_id = list(corpus)[15]
    client = redis.Redis.from_url(redis_url)
    handle = handle_of(client, COLLECTION, doc_id)
    assert client.delete(f"nd:{COLLECTION}:t:{handle}") == 1
    _check(page, server, _words(corpus[doc_id], 5, 60))
    page.locator("#checked mark").first.click()
    page.locator("#source-note", has_text="not available").wait_for()
    assert page.locator("#source-text mark").count() == 0
    assert re.search(r"source \d+\u2013\d+", page.locator("#source-text").inner_text())


def test_keys_missing_wrong_then_read(
    browser: Browser, server: Server, requests_seen, pasted
) -> None:
    """With keys on the page loads without one, says so when none or a wrong one is given,
    and shows the report with a read key."""
    page = _page(browser, server, requests_seen, None)
    try:
        page.goto(server.url + "/ui/")
        message = page.locator("#key-message")
        message.filter(has_text="needs an API key").wait_for()
        page.get_by_label("API key").fill("not-a-key-at-all-0000")
        page.get_by_role("button", name="Use this key").click()
        message.filter(has_text="was not accepted").wait_for()
        assert page.locator("#key-form").is_visible()
        page.get_by_label("API key").fill(READ_KEY)
        page.get_by_role("button", name="Use this key").click()
        page.locator("#key-form").wait_for(state="hidden")
        page.get_by_label("Text to check").fill(pasted[0])
        page.get_by_role("button", name="Check").click()
        page.locator("#checked mark").first.wait_for()
    finally:
        page.context.close()


def test_a_check_sent_before_the_collection_answers_takes_its_threshold(
    page: Page, server: Server, pasted
) -> None:
    """A text checked while GET /collection is still unanswered (the threshold field not yet
    filled) is checked at the collection's own threshold, not refused for a number nobody
    typed, and marks the passages the API gives a query that names no threshold."""
    held: list = []  # the page's requests for the collection(s), answered only at the end
    page.route(re.compile(r"/collections?(\?.*)?$"), lambda route: held.append(route))
    text, _ = pasted
    try:
        page.goto(server.url + "/ui/")
        page.get_by_label("Text to check").fill(text)
        assert held and page.locator("#threshold").input_value() == ""
        page.get_by_role("button", name="Check").click()
        page.locator("#checked mark").first.wait_for()
        api = _containment(server, {"text": text})
        expected = {
            (r["id"], p["query_start"], p["query_end"])
            for r in api["results"]
            for p in r["passages"]
        }
        marks = _marks(page, "#checked mark", ("data-source", "data-start", "data-end"))
        assert expected and {(s, int(a), int(b)) for s, a, b, _ in marks} == expected
        assert page.locator("#threshold").input_value() == ""  # still not answered
    finally:
        for route in held:
            route.continue_()


def test_collection_view_draws_the_s_curve(page: Page, server: Server, corpus) -> None:
    """The collection view shows the stored parameters (tokenizer, site templates and id
    buckets too), what the candidate cap did to the
    queries so far, and the candidate probability
    1 - (1 - s^r)^b at the threshold, with the threshold marked on the curve."""
    query = {"text": " ".join(corpus[k] for k in list(corpus)[:3]), "limit": 5}
    assert httpx.post(server.url + "/similar", json=query, headers=READ).status_code == 200
    info = httpx.get(server.url + "/collection", headers=READ, follow_redirects=True).json()
    b, r, t = (info["parameters"][k] for k in ("bands", "rows", "threshold"))
    page.goto(server.url + "/ui/collection")
    page.locator("#curve polyline").wait_for()
    text = page.locator("#params").inner_text()
    assert f"{b} bands of {r} rows" in text and str(info["documents"]) in text
    params = info["parameters"]
    assert f"Tokenizer\n{params['tokenizer']}: " in text  # the version answers are read with
    assert f"first {params['template_pages']} pages" in text
    assert f"Id buckets\n{params['id_buckets']:,}" in text  # the id map's HASHes
    seen = info["since_start"]
    assert seen["queries"] > 0
    assert f"{seen['queries']:,}, {seen['capped']:,} of them cut by the candidate cap" in text
    assert f"{seen['verified']:,}, {seen['kept']:,} kept at the threshold" in text
    cells = page.eval_on_selector_all(
        "#curve-table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))"
    )
    table = {float(s): p for s, p in cells}
    assert table[t] == f"{100 * (1 - (1 - t**r) ** b):.1f}%"
    x = float(page.locator("#curve line.threshold").get_attribute("x1"))
    assert x == pytest.approx(60 + t * 430)


def test_download_json_holds_the_report(page: Page, server: Server, pasted) -> None:
    """Download JSON gives the checked text and the API's answer."""
    _check(page, server, pasted[0])
    with page.expect_download() as got:
        page.get_by_role("button", name="Download JSON").click()
    report = json.loads(Path(got.value.path()).read_text())
    assert report["checked_text"] == pasted[0]
    assert {r["id"] for r in report["answer"]["results"]} == set(pasted[1])


def test_no_serious_accessibility_violations(page: Page, server: Server, pasted) -> None:
    """axe-core finds no serious or critical violation on the check, document and collection
    views."""
    axe = Axe()
    _check(page, server, pasted[0])
    page.locator("#checked mark").first.click()
    views = {
        "check": (None, "#source-text mark"),
        "document": ("/ui/documents/" + next(iter(pasted[1])), "#report"),
        "collection": ("/ui/collection", "#curve polyline"),
    }
    bad = {}
    for name, (path, ready) in views.items():
        if path is not None:
            page.goto(server.url + path)
        page.locator(ready).first.wait_for()
        found = axe.run(page).response["violations"]
        bad[name] = [v["id"] for v in found if v["impact"] in ("serious", "critical")]
    assert bad == {name: [] for name in views}


def test_page_files_and_csp(server: Server) -> None:
    """Every /ui/ answer carries the strict CSP and loads without a key; the HTML has no inline
    script or handler; the API behind it still needs the key."""
    for path in (
        "/ui/",
        "/ui/app.js",
        "/ui/style.css",
        "/ui/collection",
        "/ui/documents/a%2Fb",
        "/ui/nope.js",
    ):
        answer = httpx.get(server.url + path)
        assert answer.status_code == (404 if path == "/ui/nope.js" else 200), path
        csp = answer.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe" not in csp
    html = httpx.get(server.url + "/ui/").text
    assert re.findall(r"<script\b[^>]*>", html) == ['<script src="/ui/app.js" defer>']
    assert not re.search(r"\son[a-z]+\s*=", html) and "http" not in html.replace("http-equiv", "")
    assert httpx.get(server.url + "/collection").status_code == 401


def test_screenshots(page: Page, server: Server, pasted, tmp_path: Path) -> None:
    """The check, source and collection views render (written to NEARDUP_SCREENSHOTS for the
    README by `make screenshots`)."""
    out = Path(os.environ.get("NEARDUP_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    _check(page, server, pasted[0])
    page.screenshot(path=str(out / "ui-check.png"), full_page=True)
    page.locator("#checked mark").nth(1).click()
    page.locator("#source-text mark.current").wait_for()
    page.locator("#report .panes").screenshot(path=str(out / "ui-source.png"))
    # The A4 print of the report (kept beside the test's files, not in docs/).
    pdf = page.pdf(format="A4", print_background=True)
    (tmp_path / "report.pdf").write_bytes(pdf)
    assert pdf.startswith(b"%PDF") and len(pdf) > 10_000
    source = page.locator("#checked mark").nth(1).get_attribute("data-source")
    page.goto(server.url + "/ui/documents/" + source)
    page.locator("#near tbody tr").first.wait_for()
    page.screenshot(path=str(tmp_path / "ui-document.png"), full_page=True)  # not in the README
    page.goto(server.url + "/ui/collection")
    page.locator("#curve polyline").wait_for()
    page.screenshot(path=str(out / "ui-collection.png"), full_page=True)
    for name in ("ui-check.png", "ui-source.png", "ui-collection.png"):
        assert (out / name).stat().st_size > 10_000


def test_jaccard_file_pick_and_print(page: Page, server: Server, corpus) -> None:
    """A .txt file picked fills the text box; Jaccard ranks a stored copy first with its
    verified similarity; the print layout keeps the report and drops the controls."""
    doc_id, text = next(iter(corpus.items()))
    page.goto(server.url + "/ui/")
    page.locator("#title", has_text="against").wait_for()
    page.set_input_files(
        "#file", files=[{"name": "essay.txt", "mimeType": "text/plain", "buffer": text.encode()}]
    )
    page.locator("#status", has_text="essay.txt").wait_for()
    assert page.get_by_label("Text to check").input_value() == text
    page.get_by_label("Jaccard (whole-text similarity)").check()
    assert page.locator("#threshold").input_value() == "0.5"  # the collection's threshold
    page.get_by_role("button", name="Check").click()
    page.locator("#summary", has_text="near-duplicate").wait_for()
    first = page.locator("#sources tbody tr").first
    assert first.get_attribute("data-source") == doc_id
    assert "100.0%" in first.inner_text()
    page.emulate_media(media="print")
    assert not page.locator("#check-form").is_visible() and page.locator("#report").is_visible()


def test_no_request_leaves_the_origin(
    page: Page, server: Server, requests_seen: list[str], pasted
) -> None:
    """Of every request the module's pages made, and of every view opened here, none left
    the origin."""
    _check(page, server, pasted[0])
    page.locator("#checked mark").first.click()
    page.locator("#source-text mark").first.wait_for()
    for path, ready in (
        ("/ui/documents/" + next(iter(pasted[1])), "#near tbody tr"),
        ("/ui/collection", "#curve polyline"),
    ):
        page.goto(server.url + path)
        page.locator(ready).first.wait_for()
    assert any(u.endswith("/checks") for u in requests_seen)  # the check view keeps its checks
    # A download is a blob: URL of the page itself.
    outside = [u for u in requests_seen if not u.removeprefix("blob:").startswith(server.url + "/")]
    assert outside == []


def test_the_collection_chooser_routes_the_page_to_the_chosen_collection(
    page: Page, server: Server, requests_seen: list[str], corpus: dict[str, str]
) -> None:
    """With two collections the chooser shows; choosing the other sends the page's query to
    /collections/{name}/checks, which finds the document stored only there."""
    name = f"{COLLECTION}-other"
    made = httpx.post(server.url + "/collections", json={"name": name}, headers=WRITE)
    assert made.status_code in (200, 201), made.text
    text = _words(next(iter(corpus.values())), 0, 60)
    put = httpx.put(
        f"{server.url}/collections/{name}/documents/only-there", json={"text": text}, headers=WRITE
    )
    assert put.status_code in (200, 201), put.text
    page.goto(server.url + "/ui/")
    page.locator("#collection-row").wait_for()
    page.select_option("#collection", name)
    page.get_by_label("Text to check").fill(text)
    page.get_by_role("button", name="Check").click()
    page.locator("#summary").filter(has_text="of the text was found").wait_for()
    assert "only-there" in page.locator("#sources").inner_text()
    assert any(u == f"{server.url}/collections/{name}/checks" for u in requests_seen)
    # A document's own view names the collection, so its link opens it in any tab.
    view = page.locator("#source-title a")
    if not view.count():
        page.locator("#sources").get_by_text("only-there").first.click()
    href = view.get_attribute("href")
    assert href == f"/ui/collections/{name}/documents/only-there", href
    other = _page(page.context.browser, server, requests_seen, READ_KEY)  # type: ignore[arg-type]
    try:
        other.goto(server.url + href)
        other.locator("#checked-title", has_text="only-there").wait_for()
        assert any(
            u == f"{server.url}/collections/{name}/documents/only-there" for u in requests_seen
        )
    finally:
        other.context.close()


FORMATS = Path(__file__).resolve().parent / "data" / "formats"
PDF = "application/pdf"


def _containment(server: Server, body: dict) -> dict:
    """The API's own containment answer for a body (the reference the page is held to)."""
    query = {**body, "measure": "containment", "evidence": True, "limit": 50}
    answer = httpx.post(server.url + "/similar", json=query, headers=READ)
    assert answer.status_code == 200, answer.text
    return answer.json()


DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _marks_are_the_api_passages(page: Page, server: Server, name: str, kind: str) -> None:
    """The checked file's text box holds the API's extracted text, and the marks cover
    exactly the characters of the API's passages for that file, each for its best-ranked
    source, every mark inside one of its source's passages and slicing the extracted text."""
    page.locator("#summary").filter(has_text="of the text was found").wait_for()
    data = base64.b64encode((FORMATS / name).read_bytes()).decode()
    api = _containment(server, {"content_type": kind, "data": data, "return_text": True})
    text = api["text"]
    assert page.get_by_label("Text to check").input_value() == text
    assert re.search(r"/ui/checks/[A-Za-z0-9_-]+$", page.url)  # kept, with its link
    passages = {
        (r["id"], p["query_start"], p["query_end"]) for r in api["results"] for p in r["passages"]
    }
    assert passages  # the essay holds stored articles
    best: dict[int, str] = {}  # each character's best-ranked source, from the API alone
    for r in api["results"]:
        for p in r["passages"]:
            for i in range(p["query_start"], p["query_end"]):
                best.setdefault(i, r["id"])
    marks = _marks(page, "#checked mark", ("data-source", "data-start", "data-end"))
    marked: dict[int, str] = {}
    for source, start, end, shown in marks:
        a, b = int(start), int(end)
        assert shown == text[a:b]  # the offsets refer to the extracted text
        assert any(s == source and ps <= a and b <= pe for s, ps, pe in passages)
        marked.update((i, source) for i in range(a, b))
    assert marked == best


def test_a_chosen_pdf_is_checked_and_marked_at_the_api_offsets(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """Choosing a PDF (stored corpus articles as an essay) checks it at once, and the page
    marks the API's passages for that file at the offsets of the extracted text."""
    page.goto(server.url + "/ui/")
    page.locator("#title", has_text="against").wait_for()
    page.set_input_files("#file", str(FORMATS / "essay.pdf"))
    _marks_are_the_api_passages(page, server, "essay.pdf", PDF)
    page.screenshot(path=str(tmp_path / "ui-pdf.png"), full_page=True)


def _drop(page: Page, path: Path, name: str) -> None:
    """Drop the file at path on the text box under name, with no type (as browsers often
    give a DOCX or ODT)."""
    data = base64.b64encode(path.read_bytes()).decode()
    page.evaluate(
        """([data, name]) => {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const drop = new DataTransfer();
            drop.items.add(new File([bytes], name));
            document.getElementById("text").dispatchEvent(
                new DragEvent("drop", { dataTransfer: drop, bubbles: true, cancelable: true }));
        }""",
        [data, name],
    )


def test_a_dropped_docx_is_checked_and_marked_at_the_api_offsets(
    page: Page, server: Server
) -> None:
    """A DOCX dropped on the text box (with no type, as browsers often give) is checked
    as DOCX, and the page marks the API's passages for that file."""
    page.goto(server.url + "/ui/")
    page.locator("#title", has_text="against").wait_for()
    _drop(page, FORMATS / "essay.docx", "essay.docx")
    _marks_are_the_api_passages(page, server, "essay.docx", DOCX)


def test_a_file_misnamed_is_checked_as_what_its_bytes_are(page: Page, server: Server) -> None:
    """A DOCX named .pdf (dropped, no type given) is sent as the DOCX its first bytes say
    it is, so it is checked and marked, not refused for its name."""
    page.goto(server.url + "/ui/")
    page.locator("#title", has_text="against").wait_for()
    _drop(page, FORMATS / "essay.docx", "essay.pdf")
    _marks_are_the_api_passages(page, server, "essay.docx", DOCX)


def test_an_rtf_file_is_checked_as_rtf_by_its_first_bytes(
    page: Page, server: Server, tmp_path: Path
) -> None:
    """An RTF file dropped under a .txt name (no type given) is sent as the RTF its
    first bytes say it is, not pasted as its markup, and marked at the API's offsets."""
    page.goto(server.url + "/ui/")
    page.locator("#title", has_text="against").wait_for()
    _drop(page, FORMATS / "essay.rtf", "essay.txt")
    _marks_are_the_api_passages(page, server, "essay.rtf", "application/rtf")
    assert "\\rtf1" not in page.get_by_label("Text to check").input_value()
    page.screenshot(path=str(tmp_path / "ui-rtf.png"), full_page=True)


def test_a_refused_file_says_the_api_detail(page: Page, server: Server) -> None:
    """An encrypted PDF chosen is not checked: the page says the API's 422 detail."""
    data = base64.b64encode((FORMATS / "encrypted.pdf").read_bytes()).decode()
    body = {"content_type": PDF, "data": data, "measure": "containment"}
    refused = httpx.post(server.url + "/similar", json=body, headers=READ)
    assert refused.status_code == 422
    page.goto(server.url + "/ui/")
    page.locator("#title", has_text="against").wait_for()
    page.set_input_files("#file", str(FORMATS / "encrypted.pdf"))
    status = page.locator("#status.alarm")
    status.wait_for()
    assert refused.json()["detail"] in status.inner_text()
    assert "encrypted.pdf" in status.inner_text()
    assert page.locator("#report").is_hidden()


def test_excluded_quotes_are_greyed_not_marked(page: Page, server: Server, tmp_path: Path) -> None:
    """With "exclude quotes" on, a quoted copy is greyed with reason quote at the API's
    excluded span and holds no mark, while an unquoted copy of the same source is marked
    (axe finds no serious violation, the check's link shows the same); with the filter off,
    the quoted copy is marked too."""
    words = [f"qu{i}{'bcdfghjklmnpqrstvwz'[i % 19]}te" for i in range(90)]
    put = httpx.put(
        server.url + "/documents/quote-source", json={"text": " ".join(words)}, headers=WRITE
    )
    assert put.status_code in (200, 201), put.text
    quoted = " ".join(words[0:35])
    plain = " ".join(words[45:90])
    text = (
        "My own opening sentence about rivers and hills.\n\nAs the author wrote, \u201c"
        + quoted
        + ",\u201d and that was all.\n\nA paragraph of my own about the weather in spring.\n\n"
        + plain
        + "\n\nMy own closing words."
    )
    qs = text.index(quoted)
    qe, ps = qs + len(quoted), text.index(plain)
    pe = ps + len(plain)
    try:
        page.goto(server.url + "/ui/")
        page.locator("#title", has_text="against").wait_for()
        page.get_by_label("Exclude quotes").check()
        _check(page, server, text, goto=False)
        api = _containment(server, {"text": text, "exclude": {"quotes": True}})
        grey = page.eval_on_selector_all(
            "#checked .excluded",
            "es => es.map(e => [e.dataset.reason, +e.dataset.start, +e.dataset.end, "
            "e.textContent, e.title])",
        )
        assert {(r, a, b) for r, a, b, *_ in grey} == {
            (e["reason"], e["query_start"], e["query_end"]) for e in api["excluded"]
        }
        quote = [g for g in grey if g[0] == "quote" and g[1] <= qs and qe <= g[2]]
        assert len(quote) == 1  # the quoted copy, whole, is greyed as a quote
        _, start, end, shown, title = quote[0]
        assert shown == text[start:end] and "quotation" in title
        marks = _marks(page, "#checked mark", ("data-source", "data-start", "data-end"))
        marked = {i for _, a, b, _ in marks for i in range(int(a), int(b))}
        assert not marked & set(range(qs, qe))  # the quote is no passage
        assert set(range(text.index(words[50]), text.index(words[85]))) <= marked
        assert qe <= min(marked) and max(marked) < pe  # between the quote and the copy's end
        assert {s for s, *_ in marks} == {"quote-source"}
        legend = page.locator("#excluded-legend")
        assert legend.is_visible() and "quotation" in legend.inner_text()
        page.screenshot(path=str(tmp_path / "ui-excluded.png"), full_page=True)
        report = page.url
        found = Axe().run(page).response["violations"]  # greyed spans read and contrast too
        assert [v["id"] for v in found if v["impact"] in ("serious", "critical")] == []

        page.goto(server.url + "/ui/")  # the same text with the filter off
        page.locator("#title", has_text="against").wait_for()
        _check(page, server, text, goto=False)
        marks = _marks(page, "#checked mark", ("data-source", "data-start", "data-end"))
        marked = {i for _, a, b, _ in marks for i in range(int(a), int(b))}
        assert marked & set(range(qs, qe))
        assert page.locator("#checked .excluded").count() == 0
        page.goto(report)  # the check with the filter on, reopened from its link
        page.locator("#checked .excluded").first.wait_for()
        again = page.eval_on_selector_all(
            "#checked .excluded",
            "es => es.map(e => [e.dataset.reason, +e.dataset.start, +e.dataset.end, "
            "e.textContent, e.title])",
        )
        assert again == grey
        # ... with the filter it was made with ticked again, the others not
        assert page.get_by_label("Exclude quotes").is_checked()
        assert not page.get_by_label("Exclude bibliography").is_checked()
    finally:
        httpx.delete(server.url + "/documents/quote-source", headers=WRITE)


def _store(server: Server, doc_id: str, text: str, metadata: dict | None = None) -> None:
    body = {"text": text, "metadata": metadata}
    path = "/documents/" + quote(doc_id, safe="")
    answer = httpx.put(server.url + path, json=body, headers=WRITE)
    assert answer.status_code in (200, 201), answer.text


def test_a_source_link_opens_its_source_whatever_the_query_adds(
    page: Page, server: Server, corpus
) -> None:
    """/ui/documents/{id}?source=S (with what a mail tool appends) is the page, which opens
    S beside the text; the page's query string is never the API's 422."""
    source = list(corpus)[16]
    _store(server, "cites-16", "Opening words of mine. " + _words(corpus[source], 10, 50))
    link = "/ui/documents/cites-16?source=" + quote(source, safe="") + "&utm_source=mail"
    answer = httpx.get(server.url + link)
    assert answer.status_code == 200 and "content-security-policy" in answer.headers
    page.goto(server.url + link)
    page.locator("#source-title", has_text=source).wait_for()
    assert page.locator("#source-text mark").count() > 0


def test_ids_and_titles_are_isolated_from_right_to_left_text(
    page: Page, server: Server, corpus
) -> None:
    """An id and a title holding a right-to-left override are each in their own <bdi>, so
    they cannot reorder the page's own words around them."""
    source = list(corpus)[17]
    rtl_id, rtl_title = "rtl\u202egnp.exe", "\u202eevil title"
    _store(server, rtl_id, _words(corpus[source], 0, 60), {"title": rtl_title})
    page.goto(server.url + "/ui/documents/" + quote(source, safe=""))
    page.locator("#report").wait_for()
    assert page.locator("h1 bdi").inner_text() == source
    row = page.locator(f"#sources tbody tr[data-source='{rtl_id}']")
    assert row.locator("bdi").first.inner_text() == rtl_title
    page.goto(server.url + "/ui/documents/" + quote(rtl_id, safe=""))
    page.locator("#report").wait_for()
    assert page.locator("h1 bdi").inner_text() == rtl_id
    assert page.locator("#report-title bdi").inner_text() == rtl_id


def test_a_right_to_left_paragraph_reads_from_the_right(page: Page, server: Server, corpus) -> None:
    """In a text of English and Hebrew paragraphs each takes its own direction: the Hebrew
    one ends at the pane's right edge, its full stop at its left end, and the English one
    starts at the left edge (an audit saw Hebrew laid out left to right)."""
    hebrew = "\u05d6\u05d4\u05d5 \u05de\u05e9\u05e4\u05d8 \u05d1\u05e2\u05d1\u05e8\u05d9\u05ea."
    english = _words(corpus[list(corpus)[18]], 0, 40)
    _store(server, "mixed-rtl", f"{english}\n\n{hebrew}", {})
    page.goto(server.url + "/ui/documents/mixed-rtl")
    page.locator("#report").wait_for()
    edges = page.evaluate(
        """(hebrew) => {
            const pane = document.getElementById("checked");
            const walk = document.createTreeWalker(pane, NodeFilter.SHOW_TEXT);
            const box = (node, at, end) => {
                const range = document.createRange();
                range.setStart(node, at); range.setEnd(node, end);
                return range.getBoundingClientRect();
            };
            let first = null, line = null, stop = null;
            for (let n = walk.nextNode(); n; n = walk.nextNode()) {
                if (first === null && n.data.trim()) first = box(n, 0, 1);
                const at = n.data.indexOf(hebrew.slice(0, 3));
                if (at >= 0) {
                    line = box(n, at, at + hebrew.length);
                    stop = box(n, at + hebrew.length - 1, at + hebrew.length);
                }
            }
            const outer = pane.getBoundingClientRect(), style = getComputedStyle(pane);
            const bar = pane.offsetWidth - pane.clientWidth;  // border and scroll bar
            const right = outer.right - parseFloat(style.paddingRight) - bar;
            const left = outer.left + parseFloat(style.paddingLeft);
            return {right, left, lineRight: line.right, lineLeft: line.left,
                    stopLeft: stop.left, firstLeft: first.left};
        }""",
        hebrew,
    )
    assert abs(edges["lineRight"] - edges["right"]) < 3, edges
    assert edges["stopLeft"] - edges["lineLeft"] < 3, edges  # the full stop ends it, at its left
    # The English one from the left (its first word marked: a mark's own padding).
    assert edges["firstLeft"] - edges["left"] < 10, edges


def test_a_key_limited_to_the_collection_checks_texts(
    browser: Browser, server: Server, requests_seen, pasted
) -> None:
    """A read key limited to the page's collection may not list collections (403); the
    check view goes on without the chooser and checks a text."""
    page = _page(browser, server, requests_seen, LIMITED_KEY)
    try:
        assert httpx.get(server.url + "/collections", headers={
            "Authorization": f"Bearer {LIMITED_KEY}"}).status_code == 403  # fmt: skip
        _check(page, server, pasted[0])
        assert page.locator("#collection-row").is_hidden()
        assert page.locator("#checked mark").count() > 0
    finally:
        page.context.close()


def test_a_key_limited_to_another_collection_checks_there_from_its_link(
    browser: Browser, server: Server, requests_seen, corpus: dict[str, str]
) -> None:
    """/ui/collections/{name}/ opens the check view in that collection: a key limited to it
    (no chooser, since it may not list collections) checks a text there and finds the
    document stored only there; /ui/collections/{name}/collection shows its parameters."""
    made = httpx.post(server.url + "/collections", json={"name": ESSAYS}, headers=WRITE)
    assert made.status_code in (200, 201), made.text
    text = _words(list(corpus.values())[1], 0, 60)
    put = httpx.put(
        f"{server.url}/collections/{ESSAYS}/documents/essay-1", json={"text": text}, headers=WRITE
    )
    assert put.status_code in (200, 201), put.text
    page = _page(browser, server, requests_seen, ESSAYS_KEY)
    try:
        page.goto(f"{server.url}/ui/collections/{ESSAYS}/")
        _check(page, server, text, goto=False)
        assert "essay-1" in page.locator("#sources").inner_text()
        assert page.locator("#collection-row").is_hidden()
        assert f"{server.url}/collections/{ESSAYS}/checks" in requests_seen
        page.goto(f"{server.url}/ui/collections/{ESSAYS}/collection")
        page.locator("#curve polyline").wait_for()
    finally:
        page.context.close()


@pytest.mark.parametrize(
    ("view", "heading"),
    [("checks", "Checks kept in "), ("collection", "Collection "), ("", "Check a text against ")],
)
def test_a_refused_named_view_keeps_its_own_heading(
    browser: Browser, server: Server, requests_seen, tmp_path: Path, view: str, heading: str
) -> None:
    """A key kept to another collection, opening a named view of this one, reads the
    refusal under that view's heading and the collection's name, not the check view's."""
    page = _page(browser, server, requests_seen, ESSAYS_KEY)
    try:
        page.goto(f"{server.url}/ui/collections/{COLLECTION}/{view}")
        page.locator("#status.alarm").wait_for()
        assert page.locator("#title").inner_text() == heading + COLLECTION
        page.screenshot(path=str(tmp_path / f"refused-{view or 'check'}.png"), full_page=True)
    finally:
        page.context.close()


def test_a_document_of_a_collection_without_passages_shows_its_near_duplicates(
    page: Page, server: Server, corpus: dict[str, str]
) -> None:
    """/ui/collections/{name}/documents/{id} of a mirror-detection collection (no passage
    index) lists the document's near-duplicates as the API gives them, and says why no
    passages are marked (the containment query's 422 blanked the view)."""
    name = f"{COLLECTION}-mirrors"
    made = httpx.post(
        server.url + "/collections",
        json={"name": name, "threshold": 0.8, "passage_words": 0},
        headers=WRITE,
    )
    assert made.status_code in (200, 201), made.text
    text = _words(list(corpus.values())[2], 0, 80)
    for doc_id, body in (("page-a", text), ("page-b", text + " with one more line")):
        put = httpx.put(
            f"{server.url}/collections/{name}/documents/{doc_id}",
            json={"text": body},
            headers=WRITE,
        )
        assert put.status_code in (200, 201), put.text
    near = httpx.get(f"{server.url}/collections/{name}/similar/page-a", headers=READ).json()
    assert [r["id"] for r in near["results"]] == ["page-b"]
    page.goto(f"{server.url}/ui/collections/{name}/documents/page-a")
    page.locator("#summary", has_text="no passage index").wait_for()
    assert page.locator("#status").inner_text().strip() == ""
    assert "page-b" in page.locator("#near").inner_text()
    assert "page-b" in page.locator("#sources").inner_text()


def test_a_bad_link_leaves_the_tab_where_it_was(page: Page, server: Server) -> None:
    """A check link into a collection that does not exist says so, and the tab's next view
    is its own collection's again; a malformed %-escape in a link is said, not a blank page."""
    for link in ("/ui/collections/nope/checks/" + "A" * 22, "/ui/collections/nope/"):
        page.goto(server.url + link)
        page.locator("#status", has_text="no collection named 'nope'").wait_for()
        page.goto(server.url + "/ui/collection")
        page.locator("#curve polyline").wait_for()
    page.goto(server.url + "/ui/documents/%ZZ")
    page.locator("#status", has_text="malformed %-escape").wait_for()


def test_a_pasted_key_loses_invisible_characters_and_a_foreign_one_is_refused(
    browser: Browser, server: Server, requests_seen, pasted
) -> None:
    """A key typed with a zero-width space after it works; one holding a character outside
    the key alphabet is refused on the form and asked for again, never sent."""
    page = _page(browser, server, requests_seen, None)
    try:
        page.goto(server.url + "/ui/")
        page.locator("#key-message").filter(has_text="needs an API key").wait_for()
        page.get_by_label("API key").fill(READ_KEY + "\u00e9")
        page.get_by_role("button", name="Use this key").click()
        page.locator("#key-message").filter(has_text="holds other characters").wait_for()
        page.get_by_label("API key").fill(READ_KEY + "\u200b ")
        page.get_by_role("button", name="Use this key").click()
        page.locator("#key-form").wait_for(state="hidden")
        _check(page, server, pasted[0], goto=False)
    finally:
        page.context.close()
