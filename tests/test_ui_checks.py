"""Stored checks on the report page, in a real browser (chromium via Playwright, as
tests/test_ui_browser.py): the check view moves to /ui/checks/{id}, and that link reopens the
check with the API's stored passages marked, saying which sources changed since.

Skipped without chromium or Playwright, unless NEARDUP_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support import oracle
from support.corpus import read_corpus
from support.procs import Server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
try:
    from playwright.sync_api import Browser, Page, sync_playwright
except ImportError:  # pragma: no cover - the test extras are not installed
    sync_playwright = None  # type: ignore[assignment]

if CHROMIUM is None or sync_playwright is None:
    why = "the browser suite needs chromium (apt-get install -y chromium) and the test extras"
    if os.environ.get("NEARDUP_REQUIRE_BROWSER") == "1":
        raise RuntimeError(why)
    pytest.skip(why, allow_module_level=True)

COLLECTION = f"uichecks{os.getpid()}"
READ_KEY = "read-key-checks-0123456789"
WRITE_KEY = "write-key-checks-0123456789"
READ = {"Authorization": f"Bearer {READ_KEY}"}
WRITE = {"Authorization": f"Bearer {WRITE_KEY}"}
CHECK_URL = re.compile(r".*/ui/(?:collections/[^/]+/)?checks/([A-Za-z0-9_-]{22})$")


def _words(text: str, start: int, n: int) -> str:
    return " ".join(text.split()[start : start + n])


@pytest.fixture(scope="module")
def corpus() -> dict[str, str]:
    """Twelve corpus articles that share no word 3-shingle, by id."""
    kept: dict[str, str] = {}
    seen: set = set()
    for doc_id, text in read_corpus():
        shingles = oracle.shingles(text, "word:3")
        if not shingles & seen:
            kept[doc_id] = text
            seen |= shingles
        if len(kept) == 12:
            return kept
    raise AssertionError("the corpus has no twelve unrelated articles")


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, redis_url: str, corpus: dict[str, str]
) -> Iterator[Server]:
    """A real `neardup serve` (keys on, texts kept) holding the articles."""
    with Server(
        tmp_path_factory.mktemp("uichecks"),
        NEARDUP_REDIS_URL=redis_url,
        NEARDUP_COLLECTION=COLLECTION,
        NEARDUP_KEEP_TEXT="1",
        NEARDUP_API_KEYS=f"{READ_KEY}:read,{WRITE_KEY}:write",
        NEARDUP_LOG_LEVEL="warning",
    ) as srv:
        srv.wait_ready(**WRITE)
        docs = [{"id": i, "text": t} for i, t in corpus.items()]
        answer = httpx.post(srv.url + "/documents/batch", json={"documents": docs}, headers=WRITE)
        assert answer.status_code == 200 and answer.json()["errors"] == 0, answer.text
        yield srv


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


def _tab(browser: Browser) -> Page:
    """A fresh tab (its own session storage) that holds the read key."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.add_init_script(f"sessionStorage.setItem('neardup.key', {json.dumps(READ_KEY)})")
    return context.new_page()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    p = _tab(browser)
    yield p
    p.context.close()


def _essay(corpus: dict[str, str], a: int, b: int) -> tuple[str, list[str]]:
    """A text holding a run copied from each of articles a and b (after an emoji: the API
    counts code points, JavaScript UTF-16 units), and their ids."""
    ids = list(corpus)
    text = (
        "Essay \U0001f4dd for review. My own opening thoughts come first here.\n\n"
        + _words(corpus[ids[a]], 20, 45)
        + "\n\nThen a paragraph of wholly original prose about quiet gardens and weather.\n\n"
        + _words(corpus[ids[b]], 60, 40)
        + "\n\nAnd a closing line of my own."
    )
    return text, [ids[a], ids[b]]


def _marks(page: Page) -> set[tuple[str, int, int, str]]:
    found = page.eval_on_selector_all(
        "#checked mark",
        "ms => ms.map(m => [m.dataset.source, m.dataset.start, m.dataset.end, m.textContent])",
    )
    return {(s, int(a), int(b), t) for s, a, b, t in found}


def _expected(stored: dict, text: str) -> set[tuple[str, int, int, str]]:
    """The marks the stored passages call for, their slices cut by Python (code points)."""
    return {
        (r["id"], p["query_start"], p["query_end"], text[p["query_start"] : p["query_end"]])
        for r in stored["answer"]["results"]
        for p in r["passages"]
    }


def _open(page: Page, url: str) -> None:
    page.goto(url)
    page.locator("#summary").filter(has_text="of the text was found").wait_for()


def test_the_check_view_moves_to_its_link_and_the_link_reopens_it(  # type: ignore[no-untyped-def]
    page: Page, browser: Browser, server: Server, corpus, tmp_path: Path
) -> None:
    """After a check the tab's URL is /ui/checks/{id}; GET /checks/{id} has the check; its
    marks in that tab, after a reload, and in a new tab are exactly the stored passages, each
    the copied words of the source it names."""
    text, sources = _essay(corpus, 3, 8)
    page.goto(server.url + "/ui/")
    page.get_by_label("Text to check").fill(text)
    page.get_by_role("button", name="Check").click()
    page.locator("#summary").filter(has_text="of the text was found").wait_for()
    page.wait_for_url(CHECK_URL)
    match = CHECK_URL.match(page.url)
    assert match is not None
    check_id = match.group(1)
    stored = httpx.get(f"{server.url}/checks/{check_id}", headers=READ).json()
    assert stored["answer"]["text"] == text
    expected = _expected(stored, text)
    assert {s for s, *_ in expected} == set(sources)
    for source, _, _, shown in expected:
        assert shown in corpus[source]  # really copied from the source it names
    assert _marks(page) == expected
    assert page.locator("#stored-check a").get_attribute("href") == f"/ui/checks/{check_id}"
    page.screenshot(path=str(tmp_path / "check-made.png"), full_page=True)

    page.reload()
    page.locator("#summary").filter(has_text="of the text was found").wait_for()
    assert _marks(page) == expected
    other = _tab(browser)
    try:
        _open(other, f"{server.url}/ui/checks/{check_id}")
        assert _marks(other) == expected
        summary = other.locator("#summary")
        assert float(summary.get_attribute("data-coverage")) == stored["answer"]["coverage"]
        assert other.get_by_label("Text to check").input_value() == text
        assert other.locator("#changed-sources").is_hidden()
        out = Path(os.environ.get("NEARDUP_SCREENSHOTS") or tmp_path)
        out.mkdir(parents=True, exist_ok=True)
        other.screenshot(path=str(out / "ui-stored-check.png"), full_page=True)
    finally:
        other.context.close()


def test_a_reopened_check_is_as_it_was_and_names_changed_sources(  # type: ignore[no-untyped-def]
    page: Page, server: Server, corpus, tmp_path: Path
) -> None:
    """A check whose sources were then rewritten and deleted reopens with the same marks as
    when it was made, and lists each of the two with its change."""
    text, (a, b) = _essay(corpus, 5, 9)
    made = httpx.post(server.url + "/checks", json={"text": text}, headers=READ).json()
    expected = _expected(made, text)
    assert {s for s, *_ in expected} == {a, b}
    rewritten = httpx.put(
        f"{server.url}/documents/{a}", json={"text": "A new text. " + corpus[a]}, headers=WRITE
    )
    assert rewritten.status_code == 200
    assert httpx.delete(f"{server.url}/documents/{b}", headers=WRITE).status_code == 204
    _open(page, server.url + made["report"])
    assert _marks(page) == expected
    changes = page.eval_on_selector_all(
        "#changed-list li", "ls => ls.map(l => [l.dataset.source, l.dataset.change])"
    )
    assert sorted(changes) == sorted([[a, "changed"], [b, "deleted"]])
    assert page.locator("#changed-sources").is_visible()
    page.screenshot(path=str(tmp_path / "check-changed.png"), full_page=True)


def test_a_check_in_another_collection_reopens_there(  # type: ignore[no-untyped-def]
    page: Page, server: Server, corpus
) -> None:
    """A check made under /collections/{name} reopens from its report link, its sources read
    in that collection; a deleted check's link says it is gone."""
    name = f"{COLLECTION}-other"
    assert httpx.post(
        server.url + "/collections", json={"name": name, "keep_text": True}, headers=WRITE
    ).status_code in (200, 201)
    source = corpus[next(iter(corpus))]
    put = httpx.put(
        f"{server.url}/collections/{name}/documents/only-there",
        json={"text": source},
        headers=WRITE,
    )
    assert put.status_code == 201
    text = "My own words first. " + _words(source, 10, 50)
    made = httpx.post(f"{server.url}/collections/{name}/checks", json={"text": text}, headers=READ)
    check = made.json()
    assert check["report"] == f"/ui/collections/{name}/checks/{check['id']}"
    _open(page, server.url + check["report"])
    assert _marks(page) == _expected(check, text)
    assert {s for s, *_ in _marks(page)} == {"only-there"}
    page.locator("#checked mark").first.click()
    page.locator("#source-text mark.current").wait_for()  # the source, read in that collection
    gone = httpx.delete(f"{server.url}/collections/{name}/checks/{check['id']}", headers=READ)
    assert gone.status_code == 204
    page.goto(server.url + check["report"])
    page.locator("#status", has_text="no check").wait_for()


def test_the_checks_view_lists_every_check_with_its_link(  # type: ignore[no-untyped-def]
    page: Page, server: Server, corpus, tmp_path: Path
) -> None:
    """/ui/collections/{name}/checks asks a read key's tab for a write key, then lists the
    collection's checks newest first, 50 a page and the rest behind More, each row
    linking to its report with its metadata and first source as GET /checks gives them;
    a row's link opens that check."""
    name = f"{COLLECTION}-listed"
    made = httpx.post(server.url + "/collections", json={"name": name}, headers=WRITE)
    assert made.status_code in (200, 201), made.text
    source = corpus[list(corpus)[2]]
    put = httpx.put(f"{server.url}/collections/{name}/documents/src", json={"text": source},
                    headers=WRITE)  # fmt: skip
    assert put.status_code == 201
    text = "My own words first. " + _words(source, 10, 50)
    reports = []
    for i in range(52):
        body = {"text": text, "metadata": {"student": f"s{i:03d}"}}
        got = httpx.post(f"{server.url}/collections/{name}/checks", json=body, headers=READ)
        assert got.status_code == 201, got.text
        reports.append(got.json()["report"])
    page.goto(f"{server.url}/ui/collections/{name}/checks")
    # The tab's read key may not list every reader's checks: the page asks for a write key.
    page.locator("#key-message", has_text="scope write").wait_for()
    page.locator("#key").fill(WRITE_KEY)
    page.locator("#key-form").get_by_role("button").click()
    rows = page.locator("#checks tbody tr")
    rows.nth(49).wait_for()
    assert rows.count() == 50
    page.get_by_role("button", name="More").click()
    rows.nth(51).wait_for()
    assert page.get_by_role("button", name="More").is_hidden()
    links = page.eval_on_selector_all(
        "#checks tbody a", "as => as.map(a => a.getAttribute('href'))"
    )
    assert sorted(links) == sorted(reports)
    first = rows.first.inner_text()
    assert "s051" in first and "src" in first  # the newest, and its source
    page.screenshot(path=str(tmp_path / "checks-list.png"), full_page=True)
    rows.first.locator("a").click()
    page.locator("#summary").filter(has_text="of the text was found").wait_for()
    assert page.url.endswith(reports[-1])
