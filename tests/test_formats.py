"""app.index.formats: PDF, DOCX and ODT text against the texts the files were made from,
and every bad file refused with a FileError that names what is wrong."""

from __future__ import annotations

import asyncio
import base64
import io
import random
import re
import struct
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest
from support import oracle
from support.corpus import read_corpus
from support.pdfgen import SCAN, pdf, text_at

from app.core.errors import Invalid
from app.index import formats, html
from app.index.formats import DOCX, ODT, PDF, RTF, FileError, archive, chunks, decode, extract
from app.index.formats import pdf as pdf_text
from app.index.formats.workers import Extractors

DATA = Path(__file__).parent / "data" / "formats"


def _words_missed(expected: str, got: str) -> tuple[int, int]:
    """(words of expected not matched in order in got, words of got not in expected),
    from the longest common subsequence of the two word lists."""
    import difflib

    a, b = oracle.words(expected), oracle.words(got)
    same = sum(
        m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    )
    return len(a) - same, len(b) - same


@pytest.mark.parametrize(
    ("name", "kind", "slack"),
    [
        ("essay.docx", DOCX, 0),
        ("essay.odt", ODT, 0),
        ("essay.rtf", RTF, 0),
        ("essay.pdf", PDF, 2),
        ("columns.pdf", PDF, 6),
    ],
)
def test_files_read_as_their_source_text(name: str, kind: str, slack: int) -> None:
    """Each fixture's text has the words of the text it was made from, in order: no
    running header or page number among them, hyphenated words joined, columns in
    reading order (a PDF may split or keep a word's hyphen now and then: slack)."""
    source = (DATA / (name.split(".")[0] + ".txt")).read_text(encoding="utf-8")
    text = extract(kind, (DATA / name).read_bytes())
    missed, extra = _words_missed(source, text)
    assert missed <= slack and extra <= slack, (missed, extra)
    assert "Journal of Reproducible" not in text and "Page 1" not in text
    if kind != PDF:  # the office formats keep paragraphs as lines
        assert [oracle.normalized(p) for p in text.split("\n")] == [
            oracle.normalized(p) for p in source.split("\n\n")
        ]


def test_running_lines_are_found_by_place_not_order() -> None:
    """A line repeated at the same height at the top or bottom of most pages, and a bare
    page number there, are dropped wherever the reading order puts them; the same words
    in the body stay, and so does a top line seen on one page only."""

    def page(body: list[str], n: int, extra_top: str | None = None) -> pdf_text.Page:
        lines = ["Annals of Tests", *body[:1], f"Page {n}", *body[1:]]
        heights = [0.95, 0.5, 0.04, 0.45]
        if extra_top:
            lines.append(extra_top)
            heights.append(0.93)
        return pdf_text.Page(lines, heights)

    pages = [
        page(["first body line", "Annals of Tests"], 1, "Chapter One"),
        page(["second body line", "more text"], 2),
        page(["third body line", "even more"], 3),
    ]
    text = pdf_text.clean(pages)
    assert text.split("\n\n") == [
        "first body line\nAnnals of Tests\nChapter One",
        "second body line\nmore text",
        "third body line\neven more",
    ]


def test_lines_a_page_repeats_are_its_text_not_its_running_lines() -> None:
    """A log whose lines differ only by number ("Day 12: ...") fills every page's top and
    bottom: a line most of whose pages hold it more than once is the text's own and
    stays (an audit lost 41 of 120 such lines), while the header set once a page goes."""
    entry = "Day {}: wind from the north, sea calm, no ships passed the point."
    pages = []
    for n in range(3):
        days = [entry.format(40 * n + i + 1) for i in range(40)]
        heights = [0.95 - i * 0.9 / 39 for i in range(40)]
        pages.append(pdf_text.Page(["Ship's log", *days], [0.98, *heights]))
    text = pdf_text.clean(pages)
    assert "Ship's log" not in text
    assert [line for line in text.split("\n") if line.strip()] == [
        entry.format(d) for d in range(1, 121)
    ]


def test_a_running_line_at_the_top_and_the_foot_of_every_page_goes() -> None:
    """A marking set at the top and again at the foot of every page ("CONFIDENTIAL") is a
    running line, though every page holds it twice: both places recur, and the page holds
    it nowhere else (a reviewer found it kept)."""
    pages = [
        pdf_text.Page(
            ["CONFIDENTIAL", f"body line {n} of the report", "more of it", "CONFIDENTIAL"],
            [0.98, 0.6, 0.5, 0.02],
        )
        for n in range(3)
    ]
    text = pdf_text.clean(pages)
    assert "CONFIDENTIAL" not in text
    assert [line for line in text.split("\n") if line.strip()] == [
        line for n in range(3) for line in (f"body line {n} of the report", "more of it")
    ]


def test_hyphenation_follows_the_documents_words() -> None:
    """A marked line-end hyphen joins a word split by hyphenation and keeps one the
    document writes with a hyphen, or between a number or a capital."""
    mark = "\ufffe"
    text = (
        f"the hear{mark}\ning was held; a four-year plan and a four{mark}\nyear plan; "
        f"route I{mark}\n75 and Bruni{mark}\nSarkozy; pro{mark}\nduction"
    )
    assert pdf_text.join_hyphenated(text) == (
        "the hearing was held; a four-year plan and a four-year plan; "
        "route I-75 and Bruni-Sarkozy; production"
    )


def test_hand_made_pdf_keeps_its_text_and_drops_the_page_numbers() -> None:
    """A PDF written by hand (two pages, a page number at the foot of each) reads as its
    lines without the numbers."""
    pages = [
        text_at([(72, 700, "The river rose over the bank at dawn"), (300, 30, "1")]),
        text_at([(72, 700, "and the village moved to the hills"), (300, 30, "2")]),
    ]
    text = extract(PDF, pdf(pages))
    assert oracle.words(text) == oracle.words(
        "The river rose over the bank at dawn and the village moved to the hills"
    )


def _body(lines: int, top: float = 700, x: float = 72) -> list[tuple[float, float, str]]:
    return [(x, top - 14 * i, f"line {i} of the harbour story goes on") for i in range(lines)]


def test_a_word_hyphenated_at_a_page_foot_is_joined_across_its_footnote() -> None:
    """A word hyphenated on a page's last body line and ended on the next page is one
    word, not glued to the footnote PDFium reads between; the footnote follows the line
    the word ends in (after the next page's own hyphenated word, if its first line has
    one), and LaTeX's page numbers (0.17 of the page from the bottom) are dropped."""
    first = text_at(
        [
            *_body(10),
            (72, 560, "and then the silt had re-"),
            (72, 170, "1 A footnote on the harbour records."),
            (300, 134, "1"),
        ]
    )
    second = text_at(
        [
            (72, 700, "turned, and the boats came back to the win-"),
            (72, 686, "ter quay"),
            (72, 672, "and the market opened again."),
            (300, 134, "2"),
        ]
    )
    lines = extract(PDF, pdf([first, second])).splitlines()
    assert lines[-4:] == [
        "line 9 of the harbour story goes on",
        "and then the silt had returned, and the boats came back to the winter quay",
        "1 A footnote on the harbour records.",
        "and the market opened again.",
    ]
    assert "1" not in lines and "2" not in lines


def test_a_word_hyphenated_at_a_column_foot_ends_at_the_next_columns_top() -> None:
    """In two columns, a word hyphenated at the left column's foot is joined with the
    right column's first line over the footnote below it, which follows that line."""
    left = [*_body(5), (72, 630, "the moment opens ma-")]
    right = [(320, 700, "chine. The journey goes on"), (320, 686, "in the right column")]
    page = text_at([*left, (72, 170, "2 A footnote here."), (300, 40, "3"), *right])
    lines = extract(PDF, pdf([page])).splitlines()
    assert lines[5:] == [
        "the moment opens machine. The journey goes on",
        "2 A footnote here.",
        "in the right column",
    ]


def test_the_lowest_line_as_a_page_number_and_lines_recurring_near_an_edge() -> None:
    """A page number alone is dropped on a page's lowest line within a quarter of the
    page from the bottom, not as a body line above it; a line recurring at the same
    height within that quarter on most pages is dropped, a body line of that shape
    that does not recur is kept."""
    pages = [
        pdf_text.Page(["Body one", "7", "Chapter notes 1", "12"], [0.8, 0.3, 0.2, 0.17]),
        pdf_text.Page(["Body two", "Chapter notes 2", "13"], [0.8, 0.2, 0.17]),
        pdf_text.Page(["Body three", "14"], [0.8, 0.17]),
    ]
    assert pdf_text.clean(pages).split("\n\n") == ["Body one\n7", "Body two", "Body three"]


def test_private_use_bullets_go_and_unspaced_lines_run_on() -> None:
    """A symbol font's private-use bullet is not text; a line break between two Han or
    kana characters is not a space and goes, one between Latin words stays."""
    bullets = [pdf_text.Page(["\uf095 first item", "\ue000", "second line"], [0.8, 0.78, 0.76])]
    assert pdf_text.clean(bullets) == "first item\nsecond line"
    lines = [
        "女たちは木陰に座って家族の話や季節の移り変わり",
        "について語り合った。",
        "A Latin",
        "line",
    ]
    text = pdf_text.clean([pdf_text.Page(lines, [0.8, 0.78, 0.76, 0.74])])
    assert (
        text == "女たちは木陰に座って家族の話や季節の移り変わりについて語り合った。\nA Latin\nline"
    )


def test_arabic_ligatures_read_as_their_letters_in_order() -> None:
    """An Arabic PDF (LibreOffice's, justified) reads every word of its source: the
    lam-alef ligatures' two letters in writing order, no kashida control characters."""
    expected = (DATA / "arabic.txt").read_text(encoding="utf-8")
    got = extract(PDF, (DATA / "arabic.pdf").read_bytes())
    assert _words_missed(expected, got)[0] == 0, got
    assert "الظلام" in got and "الظالم" not in got  # "the darkness", not "the oppressor"
    assert not any(c < " " and c not in "\t\n" for c in got)


def test_arabic_words_drawn_left_to_right_read_in_writing_order() -> None:
    """Chromium's Arabic PDF draws some words' letters left to right, which PDFium gives
    in that order ("يكتب" as "بتكي"): every word of its page reads as written (an audit's
    copy in such a PDF went unfound, 34 of 53 words reversed)."""
    html = (DATA / "arabic_chromium.html").read_text(encoding="utf-8")
    expected = " ".join(re.findall(r"<p>(.*?)</p>", html))
    got = extract(PDF, (DATA / "arabic_chromium.pdf").read_bytes())
    assert got.split() == expected.split(), got


class _Boxes:
    """Character boxes as PDFium's text page gives them: one x per character, 8 wide."""

    def __init__(self, xs: list[float]) -> None:
        self.xs = xs

    def get_charbox(self, i: int) -> tuple[float, float, float, float]:
        return (self.xs[i], 0.0, self.xs[i] + 8, 10.0)


def test_a_word_drawn_left_to_right_keeps_its_ligature_in_order() -> None:
    """A word drawn left to right whose lam-alef ligature is one glyph (its two letters
    one box) reads as written once reversed, the ligature's letters in their order (a
    reviewer found them swapped: the ligature pass read boxes by the reversed places)."""
    # "السلام" drawn left to right: meem, the lam-alef glyph, seen, lam, alef.
    drawn = "\u0645\u0644\u0627\u0633\u0644\u0627"
    boxes = _Boxes([10, 20, 20, 30, 40, 50])
    assert pdf_text._letters_in_order(boxes, drawn, 0) == "\u0627\u0644\u0633\u0644\u0627\u0645"
    # "سلام": seen, lam-alef, meem, drawn meem, lam-alef, seen.
    drawn = "\u0645\u0644\u0627\u0633"
    assert (
        pdf_text._letters_in_order(_Boxes([10, 20, 20, 30]), drawn, 0) == "\u0633\u0644\u0627\u0645"
    )


def test_note_reference_marks_are_not_read_into_words() -> None:
    """A note's reference mark, small and raised after a word or opening the note's
    text, is not read ("model,1" was one word, "1See" another); the same characters at
    the text's size (a chapter's number, a word ending in i) are read."""
    stream = (
        b"BT /F1 11 Tf 72 700 Td (the melt has outpaced every model,) Tj /F1 6 Tf 4 Ts (1) Tj ET\n"
        b"BT /F1 11 Tf 72 686 Td (and so will the glaciers. Another sentence.) Tj "
        b"/F1 6 Tf 4 Ts (ii) Tj ET\n"
        b"BT /F1 11 Tf 72 672 Td (Chapter 12 of the report on the Saudi) Tj ET\n"
        b"BT /F1 11 Tf 72 658 Td (as shown in table 3) Tj ET\n"
        b"BT /F1 6 Tf 72 200 Td 2 Ts (1) Tj /F1 8 Tf 0 Ts (See the registers.) Tj ET"
    )
    assert extract(PDF, pdf([stream])).splitlines() == [
        "the melt has outpaced every model,",
        "and so will the glaciers. Another sentence.",
        "Chapter 12 of the report on the Saudi",
        "as shown in table 3",
        "See the registers.",
    ]


def test_pages_that_are_all_furniture_keep_their_lines() -> None:
    """Two pages holding the same line near their top (a line that would be a running
    header) are read as that line, not refused as having no text layer."""
    page = text_at([(72, 760, "Minutes of the parish council meeting")])
    text = extract(PDF, pdf([page, page]))
    assert oracle.words(text) == oracle.words("Minutes of the parish council meeting") * 2


def _refused(kind: str, raw: bytes) -> str:
    with pytest.raises(FileError) as info:
        extract(kind, raw)
    return str(info.value)


def test_bad_pdfs_are_named() -> None:
    """A truncated PDF, an encrypted one, one with no text layer and bytes that are no
    PDF each get their own reason."""
    essay = (DATA / "essay.pdf").read_bytes()
    assert "broken" in _refused(PDF, essay[: len(essay) // 3])
    assert "encrypted" in _refused(PDF, (DATA / "encrypted.pdf").read_bytes())
    assert _refused(PDF, pdf([SCAN])) == "no text: the PDF has no text layer; OCR it first"
    assert "not a PDF" in _refused(PDF, b"PK\x03\x04 a zip, not a pdf")
    assert issubclass(FileError, Invalid)


def test_a_file_of_another_kind_is_named_by_its_bytes() -> None:
    """An image, an EPUB, a spreadsheet sent as a PDF, DOCX or ODT is named as what its
    first bytes say it is, and a PDF whose pages draw nothing is blank, not a scan to OCR
    (an audit got "is it truncated?" for a PNG, "no word/document.xml" for an EPUB)."""
    png = b"\x89PNG\r\n\x1a\n" + bytes(64)
    for kind in (PDF, DOCX, ODT):
        assert "a PNG image" in _refused(kind, png), kind
        assert "a JPEG image" in _refused(kind, b"\xff\xd8\xff\xe0" + bytes(64)), kind
    epub = _zip({"mimetype": b"application/epub+zip", "OEBPS/content.opf": b"<package/>"})
    for kind in (PDF, DOCX, ODT):
        assert "an EPUB e-book" in _refused(kind, epub), kind
    ods = _zip(
        {"mimetype": b"application/vnd.oasis.opendocument.spreadsheet",
         "content.xml": b'<office:document-content xmlns:office="urn:oasis:names:tc:'
                        b'opendocument:xmlns:office:1.0"><office:body><office:spreadsheet/>'
                        b"</office:body></office:document-content>"}
    )  # fmt: skip
    assert "an ODS spreadsheet" in _refused(ODT, ods)
    assert "an ODS spreadsheet" in _refused(DOCX, ods)
    assert "an XLSX spreadsheet" in _refused(DOCX, _zip({"xl/workbook.xml": b"<a/>"}))
    assert "PDF's pages are blank" in _refused(PDF, pdf([b""]))
    # A page whose only drawing is an annotation (a stamp) is one for OCR, not blank.
    stamped = pdf([b""]).replace(
        b"/MediaBox [0 0 612 792]",
        b"/MediaBox [0 0 612 792] /Annots [<< /Type /Annot /Subtype /Square "
        b"/Rect [50 500 550 560] >>]",
    )
    assert "OCR it first" in _refused(PDF, stamped)
    assert "OCR it first" in _refused(PDF, pdf([SCAN]))


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return out.getvalue()


def test_bad_office_files_are_named() -> None:
    """A truncated DOCX, a zip without the body part, a zip bomb, malformed XML, a DTD
    and a body without text are each refused with their reason."""
    docx = (DATA / "essay.docx").read_bytes()
    assert "not a readable zip" in _refused(DOCX, docx[: len(docx) // 2])
    assert "no word/document.xml" in _refused(DOCX, _zip({"other.xml": b"<a/>"}))
    assert "no content.xml" in _refused(ODT, docx)
    bomb = b"<w:document>" + b" " * (3 * archive.RATIO_FLOOR) + b"</w:document>"
    message = _refused(DOCX, _zip({"word/document.xml": bomb}))
    assert "zip bomb" in message and "word/document.xml" in message
    assert "XML cannot be parsed" in _refused(DOCX, _zip({"word/document.xml": b"<a><b></a>"}))
    dtd = b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>'
    assert "DTD" in _refused(ODT, _zip({"content.xml": dtd}))
    empty = (
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        b"<w:body><w:p/></w:body></w:document>"
    )
    assert "no text" in _refused(DOCX, _zip({"word/document.xml": empty}))


def test_a_bomb_is_stopped_before_it_is_decompressed_whole() -> None:
    """A part whose header claims a huge size is refused at once, and one that hides
    its size is cut once it passes the bound, never read to its end."""
    size = archive.MAX_PART + 1
    raw = _zip({"word/document.xml": b"\0" * size})
    assert "zip bomb" in _refused(DOCX, raw)
    # Under the size bound but compressed past the ratio: named once, as a bomb.
    packed = _zip({"word/document.xml": b"\0" * (archive.RATIO_FLOOR * 4)})
    assert _refused(DOCX, packed).startswith("the DOCX is refused as a zip bomb")


def test_base64_is_checked() -> None:
    """Base64 decodes (line breaks and missing padding allowed); anything else is named."""
    assert decode(base64.b64encode(b"hello world").decode()) == b"hello world"
    assert decode("aGVsbG8g\nd29ybGQ") == b"hello world"
    for bad in ("not base64!", "", "a", "aGVsbG8=d29y"):
        with pytest.raises(FileError, match=r"base64|empty"):
            decode(bad)


def test_workers_read_files_and_give_up_on_slow_ones() -> None:
    """The worker pool answers what extract answers (text or the same FileError); a file
    over the time limit costs its worker, and the next file gets a new one."""
    essay = (DATA / "essay.pdf").read_bytes()
    pool = Extractors(workers=1, timeout=30)
    try:
        assert pool.run(PDF, essay) == extract(PDF, essay)
        with pytest.raises(FileError, match="encrypted"):
            pool.run(PDF, (DATA / "encrypted.pdf").read_bytes())
        pool.timeout = 0.0001
        with pytest.raises(FileError, match="longer than"):
            pool.run(PDF, essay)
        pool.timeout = 30
        assert pool.run(DOCX, (DATA / "essay.docx").read_bytes()).startswith("The Supreme")
    finally:
        pool.close()


def test_a_new_workers_start_is_not_counted_in_a_files_time() -> None:
    """A file read by a worker started for it gets its whole time limit for reading: the
    worker's start (an interpreter importing the readers, 0.4-0.6 s here) came out of it,
    so a short limit failed every first file."""
    small = pdf([text_at([(72, 700, "a few words on one page of a small file")])])
    pool = Extractors(workers=1, timeout=0.2)
    try:
        assert pool.run(PDF, small) == extract(PDF, small)
    finally:
        pool.close()


def test_a_files_text_over_the_limit_is_refused_in_the_worker() -> None:
    """A file whose text runs past the pool's most bytes of UTF-8 (NEARDUP_MAX_TEXT_BYTES)
    is refused by the worker as a text too large, naming the setting, and its text never
    crosses to the service; the same file is read under a limit of its bytes."""
    from app.index.errors import TooLargeError

    docx = (DATA / "essay.docx").read_bytes()
    whole = extract(DOCX, docx)
    size = len(whole.encode("utf-8"))
    pool = Extractors(workers=1, timeout=30, max_chars=size - 1)
    try:
        with pytest.raises(TooLargeError, match="NEARDUP_MAX_TEXT_BYTES"):
            pool.run(DOCX, docx)
        pool.max_chars = size
        assert pool.run(DOCX, docx) == whole
    finally:
        pool.close()


def test_content_types_are_the_four() -> None:
    """The file types are PDF, DOCX, ODT and RTF by their registered media types (RTF's
    other names taken as it), and the CLI's suffixes map to them."""
    assert set(formats.FILE_TYPES) == {PDF, DOCX, ODT, RTF} and RTF == "application/rtf"
    assert formats.SUFFIXES == {".pdf": PDF, ".docx": DOCX, ".odt": ODT, ".rtf": RTF}
    assert set(formats.ALIASES.values()) == {RTF}


def test_a_dead_worker_is_replaced() -> None:
    """A worker process that died between files (killed, or crashed on the last one) is
    replaced, and the next file is read."""
    import os
    import signal

    docx = (DATA / "essay.docx").read_bytes()
    pool = Extractors(workers=1, timeout=30)
    try:
        first = pool.run(DOCX, docx)
        (worker,) = pool._idle
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.join(5)
        assert pool.run(DOCX, docx) == first
        assert pool._idle[0] is not worker
    finally:
        pool.close()


def test_roman_page_numbers_but_not_words_of_their_letters() -> None:
    """A bare roman numeral at a page's foot is a page number; a word made of the same
    letters ("Civil") at its top is text."""
    page = pdf_text.Page(["Civil", "war and peace in the body", "xii"], [0.95, 0.5, 0.04])
    assert pdf_text.clean([page]) == "Civil\nwar and peace in the body"


def test_workers_read_pages_as_this_process_would_and_give_up_on_slow_ones() -> None:
    """A page read by a worker is html.read_page's answer (text and quotations); a page
    that cannot be read is an HTMLError, and one over the time limit costs its worker."""
    page = (Path(__file__).parent / "data" / "html" / "site_bridge.html").read_text()
    quoted = page.replace("</p>", " <q>a quoted line here</q></p>", 1)
    pool = Extractors(workers=1, timeout=30)
    try:
        assert asyncio.run(pool.page(quoted, True)) == html.read_page(quoted, True)
        assert asyncio.run(pool.page(page, False)) == (html.extract(page), None)
        with pytest.raises(html.HTMLError, match="no text"):
            asyncio.run(pool.page("<p><img src=x></p>", False))
        # Seven megabytes of paragraphs: far more than 50 ms to parse.
        hostile = "<div>" + "<p>a few words of a paragraph</p>" * 200_000 + "</div>"
        pool.timeout = 0.05
        with pytest.raises(html.HTMLError, match="page took longer than"):
            asyncio.run(pool.page(hostile, False))
        pool.timeout = 30
        assert asyncio.run(pool.page(page, False)) == (html.extract(page), None)
    finally:
        pool.close()


def test_a_file_past_the_memory_limit_is_named_and_the_next_one_read() -> None:
    """A file whose reading needs more than the workers' address space kills its worker
    and gets a FileError naming the limit; the next file is read by a new worker."""
    small = pdf([text_at([(72, 700, "a few words on one page of a small file")])])
    line = "abcdefghij klmnopqrst " * 40
    big = pdf([text_at([(72, 800 - (i % 70) * 11, line) for i in range(3000)])])
    pool = Extractors(workers=1, timeout=60, memory=2**29)
    try:
        assert pool.run(PDF, small) == extract(PDF, small)
        with pytest.raises(FileError, match=r"more than 0\.5 GiB of memory"):
            pool.run(PDF, big)
        assert pool.run(PDF, small) == extract(PDF, small)
    finally:
        pool.close()


_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"


def _docx(body: str, ns: str = _W_NS, **parts: str) -> bytes:
    """A DOCX of this body XML (w: and mc: prefixes bound) and other parts by name
    (footnotes="..." is word/footnotes.xml's content, wrapped in its root)."""
    head = f'xmlns:w="{ns}" xmlns:mc="{_MC_NS}"'
    members = {"word/document.xml": f"<w:document {head}><w:body>{body}</w:body></w:document>"}
    for name, xml in parts.items():
        members[f"word/{name}.xml"] = f"<w:{name} {head}>{xml}</w:{name}>"
    return _zip({k: v.encode() for k, v in members.items()})


def _p(text: str, run_props: str = "") -> str:
    return f"<w:p><w:r><w:rPr>{run_props}</w:rPr><w:t>{text}</w:t></w:r></w:p>"


_ODT_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"'
)


def _odt(body: str, styles: str = "", **members: bytes) -> bytes:
    """An ODT of this office:text XML, with these automatic styles."""
    content = (
        f"<office:document-content {_ODT_NS}><office:automatic-styles>{styles}"
        f"</office:automatic-styles><office:body><office:text>{body}</office:text>"
        "</office:body></office:document-content>"
    )
    return _zip({"content.xml": content.encode(), **members})


_RELS_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
_R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _chunked(body: str, parts: dict[str, bytes], targets: dict[str, str], **types: str) -> bytes:
    """A DOCX whose body may name chunks (<w:altChunk r:id=...>): parts by zip name,
    relationships id -> target (relative to word/; "ext:" makes it external), and content
    types by part name ([Content_Types].xml only when some are given)."""
    head = f'xmlns:w="{_W_NS}" xmlns:r="{_R_NS}"'
    rels = "".join(
        f'<Relationship Id="{rid}" Target="{t.removeprefix("ext:")}" Type="x"'
        + (' TargetMode="External"/>' if t.startswith("ext:") else "/>")
        for rid, t in targets.items()
    )
    document = f"<w:document {head}><w:body>{body}</w:body></w:document>"
    relationships = f'<Relationships xmlns="{_RELS_NS}">{rels}</Relationships>'
    members = {
        "word/document.xml": document.encode(),
        "word/_rels/document.xml.rels": relationships.encode(),
        **parts,
    }
    if types:
        ns = "http://schemas.openxmlformats.org/package/2006/content-types"
        over = "".join(f'<Override PartName="/{n}" ContentType="{t}"/>' for n, t in types.items())
        members["[Content_Types].xml"] = f'<Types xmlns="{ns}">{over}</Types>'.encode()
    return _zip(members)


def _chunk(rid: str) -> str:
    return f'<w:altChunk r:id="{rid}"/>'


def test_a_docx_reads_the_documents_it_embeds_where_they_stand() -> None:
    """w:altChunk parts (an HTML page, a Windows-1252 text, an MHT archive, a DOCX that
    embeds a page of its own) are read in place, as Word shows them; an HTML chunk's
    hidden elements are not."""
    page = (b"<html><body><p>Copied words from a page.</p>"
            b"<p style='display:none'>hidden junk</p></body></html>")  # fmt: skip
    inner = _chunked(_p("Inner words.") + _chunk("rIdA"), {"word/inner.htm": b"<p>Deep page.</p>"},
                     {"rIdA": "inner.htm"})  # fmt: skip
    mht = (
        b'MIME-Version: 1.0\r\nContent-Type: multipart/related; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/html; charset=utf-8\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\n<p>Archived caf=C3=A9 page.</p>\r\n"
        b"--b--\r\n"
    )
    body = (_p("Before.") + _chunk("rId1") + _p("Middle.") + _chunk("rId2") + _chunk("rId3")
            + _chunk("rId4") + _p("After."))  # fmt: skip
    raw = _chunked(
        body,
        {"word/afchunk.htm": page, "word/notes.txt": "Naïve text.".encode("cp1252"),
         "word/chunks/a.mht": mht, "word/b.docx": inner},
        {"rId1": "afchunk.htm", "rId2": "notes.txt", "rId3": "chunks/a.mht",
         "rId4": "/word/b.docx"},
        **{"word/afchunk.htm": "application/xhtml+xml", "word/chunks/a.mht": "message/rfc822"},
    )  # fmt: skip
    assert extract(DOCX, raw).split() == [
        "Before.", "Copied", "words", "from", "a", "page.", "Middle.", "Naïve", "text.",
        "Archived", "café", "page.", "Inner", "words.", "Deep", "page.", "After.",
    ]  # fmt: skip


def test_chunks_the_reader_cannot_show_read_as_nothing() -> None:
    """An external target, one outside the zip's tree, a missing part, a Flat OPC chunk
    and a chunk naming no relationship add nothing; DOCX chunks nested past MAX_DEPTH
    are not read."""
    body = _p("Own words.") + "".join(_chunk(r) for r in ("rId1", "rId2", "rId3", "rId4", ""))
    raw = _chunked(
        body,
        {"word/x.xml": b"<pkg:package>Flat words</pkg:package>",
         "word/a.htm": b"<p>Hosted page.</p>"},
        {"rId1": "ext:http://example.com/a.htm", "rId2": "//word/a.htm",
         "rId3": "gone.htm", "rId4": "x.xml"},
        **{"word/x.xml": "application/vnd.ms-word.document.12"},
    )  # fmt: skip
    assert extract(DOCX, raw).split() == ["Own", "words."]
    nested = _chunked(_p("Level 5."), {}, {})
    for level in range(4, -1, -1):
        nested = _chunked(_p(f"Level {level}.") + _chunk("rIdN"), {"word/n.docx": nested},
                          {"rIdN": "n.docx"})  # fmt: skip
    words = extract(DOCX, nested).split()
    assert words == [w for i in range(chunks.MAX_DEPTH + 1) for w in ("Level", f"{i}.")]


def test_an_rtf_chunk_is_read_where_it_stands() -> None:
    """An RTF chunk (LibreOffice's RTF of the essay fixture, and one named only by its
    extension) reads as its source text between the words around it, as Word shows it:
    copied text put in RTF was never compared."""
    essay = (DATA / "essay.rtf").read_bytes()
    raw = _chunked(
        _p("Before.") + _chunk("rId1") + _p("Middle.") + _chunk("rId2") + _p("After."),
        {"word/afchunk.rtf": essay, "word/two.rtf": rb"{\rtf1\ansi Second caf\'e9 chunk.\par}"},
        {"rId1": "afchunk.rtf", "rId2": "two.rtf"},
        **{"word/afchunk.rtf": "application/rtf"},
    )  # fmt: skip
    source = (DATA / "essay.txt").read_text(encoding="utf-8")
    words = extract(DOCX, raw).split()
    assert words == ["Before.", *source.split(), "Middle.", "Second", "café", "chunk.", "After."]


def test_chunk_targets_are_resolved_as_the_packaging_standard_says() -> None:
    """A target's case, percent-encoding and dot segments are resolved as OPC resolves part
    names: `../../a.htm` from word/ is the package's /a.htm, never outside it."""
    names = ("AfChunk.HTM", "my%20chunk.htm", "../../top.htm", "/word/sub/../b.htm")
    body = _p("Own.") + "".join(_chunk(f"rId{i}") for i in range(len(names)))
    raw = _chunked(
        body,
        {"word/afchunk.htm": b"<p>One.</p>", "word/my chunk.htm": b"<p>Two.</p>",
         "top.htm": b"<p>Three.</p>", "word/b.htm": b"<p>Four.</p>"},
        {f"rId{i}": n for i, n in enumerate(names)},
    )  # fmt: skip
    assert extract(DOCX, raw).split() == ["Own.", "One.", "Two.", "Three.", "Four."]


def test_an_html_chunks_unseen_letters_read_as_spaces_and_drawn_ones_are_read() -> None:
    """In an HTML chunk, a white, pixel-high or mso-hide:all letter in place of a space
    reads as a space (as in the body), and text only aria-hidden (which hides nothing
    that is drawn) is read; display:none still hides."""
    page = (
        "<p>When<span style='color:#ffffff'>x</span>we<font color=white>x</font>speak"
        "<span style='font-size:1px'>x</span>of<span style='mso-hide:all'>x</span>it.</p>"
        "<p aria-hidden='true'>Drawn words.</p><p style='display:none'>junk</p>"
    )
    raw = _chunked(_chunk("rId1"), {"word/a.htm": page.encode()}, {"rId1": "a.htm"})
    assert extract(DOCX, raw).split() == ["When", "we", "speak", "of", "it.", "Drawn", "words."]


def test_chunk_encodings_broken_or_odd_are_read_or_read_as_nothing() -> None:
    """A meta tag's UTF-16 on an ASCII page reads as UTF-8, a charset no codec knows is
    passed over, a stray bad byte keeps the rest of a UTF-8 page, an XHTML part's XML
    declaration is believed, and an MHT nested past MAX_BOUNDARIES reads as nothing."""
    hello, page = "\u041f\u0440\u0438\u0432\u0435\u0442", "\u0441\u0442\u0440"  # Cyrillic
    cyrillic = f"{hello} {page}.".encode()
    parts = {
        "word/a.htm": b"<meta charset='utf-16'><p>Ascii page.</p>",
        "word/b.htm": b"<meta charset='undefined'><p>Odd charset.</p>",
        "word/c.htm": b"<p>" + cyrillic * 10 + b"\xff" + cyrillic * 10 + b"</p>",
        "word/d.xhtml": f'<?xml version="1.0" encoding="windows-1251"?><p>{hello}.</p>'.encode(
            "cp1251"
        ),
        "word/e.mht": b"".join(
            b'Content-Type: multipart/related; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
            for i in range(chunks.MAX_BOUNDARIES + 2)
        )
        + b"Content-Type: text/html\r\n\r\n<p>Deep mht.</p>\r\n",
    }
    targets = {f"rId{k}": name.removeprefix("word/") for k, name in enumerate(parts)}
    raw = _chunked("".join(_chunk(r) for r in targets), parts, targets)
    words = extract(DOCX, raw).split()
    assert words[:4] == ["Ascii", "page.", "Odd", "charset."]
    assert hello in words and f"{page}.\ufffd{hello}" in words
    assert words[-1] == f"{hello}." and "Deep" not in words


def test_a_broken_embedded_docx_or_too_many_chunk_bytes_are_refused_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An embedded DOCX that breaks the zip's bounds refuses the file as it would alone,
    naming where it is; so do chunk parts of more than MAX_BYTES together."""
    bomb = _zip({"word/document.xml": b"<a>" + b" " * (archive.RATIO_FLOOR * 4) + b"</a>"})
    raw = _chunked(_p("Own.") + _chunk("rId1"), {"word/in.docx": bomb}, {"rId1": "in.docx"})
    with pytest.raises(FileError, match=r"embedded DOCX \(word/in\.docx\).*zip bomb"):
        extract(DOCX, raw)
    pages = {f"word/p{i}.htm": b"<p>%d page.</p>" % i for i in range(5)}
    targets = {f"rId{i}": f"p{i}.htm" for i in range(5)}
    many = _chunked("".join(_chunk(r) for r in targets), pages, targets)
    assert extract(DOCX, many).split().count("page.") == 5
    monkeypatch.setattr(chunks, "MAX_BYTES", 40)
    with pytest.raises(FileError, match="more than 40 bytes"):
        extract(DOCX, many)


def test_a_broken_relationships_part_leaves_the_text_as_it_was() -> None:
    """A DOCX whose relationships part does not parse (malformed, or with a DTD) reads as
    before when it embeds nothing, and its chunks read as nothing when it does."""
    for broken in (b"<Relationships><oops></Relationships>",
                   b'<!DOCTYPE r [<!ENTITY e "x">]><Relationships/>'):  # fmt: skip
        plain = _chunked(_p("Own words."), {}, {})
        plain = _zip({**_members(plain), "word/_rels/document.xml.rels": broken})
        assert extract(DOCX, plain).split() == ["Own", "words."]
        chunked = _chunked(_p("Own words.") + _chunk("rId1"), {"word/a.txt": b"Chunk."}, {})
        chunked = _zip({**_members(chunked), "word/_rels/document.xml.rels": broken})
        assert extract(DOCX, chunked).split() == ["Own", "words."]


def _members(raw: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        return {name: z.read(name) for name in z.namelist()}


def test_a_part_named_by_many_chunks_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """One part named by many chunks is read once, and past MAX_CHARACTERS of chunk text
    the file is refused with the reason, not read into text many times its size."""
    text = {"word/a.txt": b"forty characters of text, give or take.."}
    raw = _chunked(_p("Own.") + _chunk("rId1") * 50, text, {"rId1": "a.txt"})
    assert extract(DOCX, raw).split().count("forty") == 50
    monkeypatch.setattr(chunks, "MAX_CHARACTERS", 1000)
    with pytest.raises(FileError, match="embedded chunks"):
        extract(DOCX, raw)


def test_a_docx_text_box_is_read_once() -> None:
    """A text box written as mc:Choice and again as mc:Fallback is read from the Choice
    only."""
    box = (
        "<w:p><w:r><mc:AlternateContent><mc:Choice Requires='wps'>"
        f"<w:txbxContent>{_p('Boxed words here.')}</w:txbxContent></mc:Choice><mc:Fallback>"
        f"<w:txbxContent>{_p('Boxed words here.')}</w:txbxContent></mc:Fallback>"
        "</mc:AlternateContent></w:r></w:p>"
    )
    text = extract(DOCX, _docx(_p("Before.") + box + _p("After.")))
    assert text.split() == ["Before.", "Boxed", "words", "here.", "After."]


def test_a_docx_text_box_drawn_in_a_sentence_is_read_after_its_paragraph() -> None:
    """A text box anchored mid-sentence is read on its own line after its paragraph, so
    the sentence it is drawn in stays whole (and so does a box in a box)."""
    inner = f"<w:r><w:txbxContent>{_p('Inner box.')}</w:txbxContent></w:r>"
    box = (
        "<w:r><w:txbxContent><w:p><w:r><w:t>Boxed words</w:t></w:r>"
        f"{inner}<w:r><w:t> here.</w:t></w:r></w:p></w:txbxContent></w:r>"
    )
    body = (
        f"<w:p><w:r><w:t>Half of the families on</w:t></w:r>{box}"
        "<w:r><w:t> the coast moved inland.</w:t></w:r></w:p>" + _p("After.")
    )
    lines = [line for line in extract(DOCX, _docx(body)).splitlines() if line]
    assert lines == [
        "Half of the families on the coast moved inland.",
        "Boxed words here.",
        "Inner box.",
        "After.",
    ]


def test_a_ruby_is_read_as_its_base_text() -> None:
    """Furigana (a ruby's reading over its base text) are not read, in DOCX or ODT."""
    docx_ruby = (
        "<w:p><w:r><w:t>港の</w:t></w:r><w:r><w:ruby><w:rt><w:r><w:t>りょうし</w:t></w:r>"
        "</w:rt><w:rubyBase><w:r><w:t>漁師</w:t></w:r></w:rubyBase></w:ruby></w:r>"
        "<w:r><w:t>が来た</w:t></w:r></w:p>"
    )
    odt_ruby = (
        "<text:p>港の<text:ruby><text:ruby-base>漁師</text:ruby-base>"
        "<text:ruby-text>りょうし</text:ruby-text></text:ruby>が来た</text:p>"
    )
    assert extract(DOCX, _docx(docx_ruby)) == "港の漁師が来た"
    assert extract(ODT, _odt(odt_ruby)) == "港の漁師が来た"


def test_odt_index_templates_and_alt_text_are_not_read() -> None:
    """An ODT's table of contents is read from its body, not its source's template title;
    an image's title and description (alt text) are not read."""
    toc = (
        "<text:table-of-content><text:table-of-content-source>"
        "<text:index-title-template>Never shown title</text:index-title-template>"
        "</text:table-of-content-source><text:index-body><text:p>Contents</text:p>"
        "<text:p>Chapter one 1</text:p></text:index-body></text:table-of-content>"
    )
    image = (
        '<text:p>The story holds.<draw:frame xmlns:draw="urn:oasis:names:tc:opendocument:'
        'xmlns:drawing:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0">'
        "<svg:title>Alt title</svg:title><svg:desc>A long alt text</svg:desc></draw:frame>"
        " Scientists agree.</text:p>"
    )
    text = extract(ODT, _odt(toc + image))
    assert text == "Contents\nChapter one 1\nThe story holds. Scientists agree."


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_a_dtd_is_refused_in_a_utf16_part(encoding: str) -> None:
    """A DTD or entity declared in a UTF-16 XML part (which OOXML and ODF allow) is
    refused as it is in UTF-8, not expanded."""
    xml = (
        f'<?xml version="1.0" encoding="{encoding[:6].upper()}"?>'
        '<!DOCTYPE w:document [<!ENTITY x "injected by the DTD">]>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body><w:p><w:r><w:t>My essay &x;</w:t></w:r></w:p></w:body></w:document>"
    ).encode(encoding)
    assert "DTD" in _refused(DOCX, _zip({"word/document.xml": xml}))
    # The same part without its DTD reads: the check is on the declaration, not UTF-16.
    plain = xml.decode(encoding).replace(
        '<!DOCTYPE w:document [<!ENTITY x "injected by the DTD">]>', ""
    )
    plain = plain.replace("&x;", "here")
    assert extract(DOCX, _zip({"word/document.xml": plain.encode(encoding)})) == "My essay here"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_dtd_is_refused_in_a_utf16_part_without_a_mark_or_declaration(encoding: str) -> None:
    """A UTF-16 part that opens straight with its DTD (no byte-order mark, no <?xml?>),
    which the parser reads as UTF-16 all the same, is refused too: the byte prefixes the
    check knew let it through, and its entity's text reached the index."""
    xml = (
        '<!DOCTYPE w:document [<!ENTITY x "injected by the DTD">]>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        "<w:body><w:p><w:r><w:t>My essay &x;</w:t></w:r></w:p></w:body></w:document>"
    ).encode(encoding)
    assert "DTD" in _refused(DOCX, _zip({"word/document.xml": xml}))


def test_a_docx_tracked_move_is_read_at_its_new_place_only() -> None:
    """A tracked move's old place (w:moveFrom) is skipped as a deletion is; its new
    place (w:moveTo) is read."""
    moved = "<w:r><w:t>moved words</w:t></w:r>"
    body = (
        f"<w:p><w:moveFrom>{moved}</w:moveFrom><w:r><w:t> stay </w:t></w:r>"
        f"<w:moveTo>{moved}</w:moveTo></w:p>"
    )
    assert extract(DOCX, _docx(body)) == "stay moved words"


_SECRET = (
    '<w:style w:styleId="Secret"><w:rPr><w:vanish/></w:rPr></w:style>'
    '<w:style w:styleId="Secret2"><w:basedOn w:val="Secret"/></w:style>'
)
_DEFAULTS_HIDE = (
    "<w:docDefaults><w:rPrDefault><w:rPr><w:vanish/></w:rPr></w:rPrDefault></w:docDefaults>"
)
_SHOWN = (
    '<w:style w:type="character" w:styleId="Shown"><w:rPr><w:vanish w:val="0"/></w:rPr></w:style>'
)
_NORMAL_HIDES = (
    '<w:style w:type="paragraph" w:default="1" w:styleId="Normal">'
    "<w:rPr><w:vanish/></w:rPr></w:style>"
    '<w:style w:type="paragraph" w:styleId="Body"><w:rPr><w:vanish w:val="0"/></w:rPr></w:style>'
)


@pytest.mark.parametrize(
    ("styles", "body"),
    [
        (  # a run's w:vanish, or its character or paragraph style's (through w:basedOn)
            _SECRET,
            _p("seen one") + _p("hidden one", "<w:vanish/>")
            + _p("hidden two", '<w:rStyle w:val="Secret2"/>')
            + _p("seen two", '<w:rStyle w:val="Secret"/><w:vanish w:val="0"/>')
            + '<w:p><w:pPr><w:pStyle w:val="Secret"/></w:pPr><w:r><w:t>hidden three</w:t></w:r>'
            "</w:p>",
        ),
        (  # the document defaults hide what does not say otherwise
            _DEFAULTS_HIDE + _SHOWN,
            _p("hidden one") + _p("seen one", '<w:vanish w:val="false"/>')
            + _p("seen two", '<w:rStyle w:val="Shown"/>'),
        ),
        (  # the default paragraph style too; a text box's paragraph has its own word
            _NORMAL_HIDES + _SHOWN,
            _p("hidden three")
            + '<w:p><w:pPr><w:pStyle w:val="Body"/></w:pPr><w:r><w:t>seen one</w:t></w:r>'
            "<w:r><w:txbxContent><w:p><w:r><w:t>hidden two</w:t></w:r></w:p></w:txbxContent>"
            "</w:r><w:r><w:t> seen two</w:t></w:r></w:p>",
        ),
    ],
    ids=["styles", "document-defaults", "default-paragraph-style"],
)  # fmt: skip
def test_docx_hidden_text_is_not_read(styles: str, body: str) -> None:
    """Hidden text is left out as Word cascades w:vanish: the run's own, else its character
    style's, else its paragraph's style (or the default one), else the document defaults,
    each style through w:basedOn; a run that says w:vanish off is read anyway."""
    text = extract(DOCX, _docx(body, styles=styles))
    assert text.split() == ["seen", "one", "seen", "two"]


def test_odt_hidden_text_is_not_read() -> None:
    """ODT text whose automatic style (or that style's parent in styles.xml) has
    text:display="none" is left out, span or paragraph, and so is a section hidden by
    its own text:display="none"."""
    styles = (
        '<style:style style:name="T1" style:family="text"><style:text-properties '
        'text:display="none"/></style:style><style:style style:name="P1" '
        'style:family="paragraph" style:parent-style-name="Hid"/>'
    )
    common = (
        f"<office:document-styles {_ODT_NS}><office:styles><style:style style:name='Hid' "
        "style:family='paragraph'><style:text-properties text:display='none'/></style:style>"
        "</office:styles></office:document-styles>"
    ).encode()
    body = (
        '<text:p>seen <text:span text:style-name="T1">hidden one </text:span>too</text:p>'
        '<text:p text:style-name="P1">hidden two</text:p>'
        '<text:section text:name="S1" text:display="none"><text:p>hidden three</text:p>'
        '</text:section><text:section text:name="S2"><text:p>last</text:p></text:section>'
    )
    said = extract(ODT, _odt(body, styles, **{"styles.xml": common})).split()
    assert said == ["seen", "too", "last"]


def test_docx_notes_are_read_after_the_body() -> None:
    """Footnotes and endnotes are read after the body under a Notes line, in their parts'
    order, without Word's separator notes; the body's sentence is not cut by them."""
    ref = '<w:r><w:footnoteReference w:id="2"/></w:r>'
    body = f"<w:p><w:r><w:t>A sentence</w:t></w:r>{ref}<w:r><w:t> goes on.</w:t></w:r></w:p>"
    separator = '<w:footnote w:type="separator" w:id="0"><w:p><w:r><w:separator/>'
    footnotes = f'{separator}<w:t>sep</w:t></w:r></w:p></w:footnote><w:footnote w:id="2">'
    footnotes += _p("The footnote.") + "</w:footnote>"
    endnotes = f'<w:endnote w:id="1">{_p("The endnote.")}</w:endnote>'
    raw = _docx(body, footnotes=footnotes, endnotes=endnotes)
    assert extract(DOCX, raw) == "A sentence goes on.\nNotes\nThe footnote.\nThe endnote."


def test_odt_notes_are_read_after_the_body() -> None:
    """An ODT note's body is read after the text under a Notes line, its citation mark not
    at all."""
    note = (
        '<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation>'
        "<text:note-body><text:p>The note.</text:p></text:note-body></text:note>"
    )
    raw = _odt(f"<text:p>A sentence{note} goes on.</text:p><text:p>Next.</text:p>")
    assert extract(ODT, raw) == "A sentence goes on.\nNext.\nNotes\nThe note."


def test_notes_after_a_reference_list_are_not_part_of_it() -> None:
    """A document's notes are read after its reference list, yet the bibliography it
    sets aside ends before them: a copy hidden in a footnote still counts."""
    from app.index.bibliography import bibliography_span

    prose = " ".join(f"Paragraph {i} of the essay says something of its own." for i in range(9))
    refs = "Smith, J. (2001). A book on things. Press.\nDoe, A. (1999). On more. Journal, 4."
    copied = "A copied sentence about the river and the mill that a source holds."
    ref = '<w:r><w:footnoteReference w:id="2"/></w:r>'
    body = f"<w:p><w:r><w:t>{prose}</w:t></w:r>{ref}</w:p>" + _p("References")
    body += "".join(_p(line) for line in refs.split("\n"))
    footnotes = f'<w:footnote w:id="2">{_p(copied)}</w:footnote>'
    for text in (
        extract(DOCX, _docx(body, footnotes=footnotes)),
        extract(
            ODT,
            _odt(
                f'<text:p>{prose}<text:note text:note-class="footnote"><text:note-body>'
                f"<text:p>{copied}</text:p></text:note-body></text:note></text:p>"
                "<text:p>References</text:p>"
                + "".join(f"<text:p>{line}</text:p>" for line in refs.split("\n"))
            ),
        ),
    ):
        span = bibliography_span(text)
        assert span is not None, text
        assert "Doe, A." in text[span.start : span.end], text
        assert text.index(copied) >= span.end, text


def test_strict_open_xml_docx_is_read() -> None:
    """A Strict Open XML DOCX (its own namespace) reads as the transitional one does."""
    strict = "http://purl.oclc.org/ooxml/wordprocessingml/main"
    body = _p("Strict words.") + _p("gone", "<w:vanish/>")
    assert extract(DOCX, _docx(body, ns=strict)) == "Strict words."


_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504


def test_an_ole_file_is_named_for_what_it_is() -> None:
    """An OLE file sent as DOCX or ODT is named by its streams: an encrypted OOXML, a
    Word 97-2003 .doc, an .xls."""

    def ole(stream: str) -> bytes:
        return _OLE + stream.encode("utf-16-le") + b"\0" * 64

    assert _refused(DOCX, ole("EncryptedPackage")) == (
        "the DOCX is encrypted: save it without a password"
    )
    assert _refused(DOCX, ole("WordDocument")) == (
        "the file is a Word 97-2003 .doc, not a DOCX: save it as .docx"
    )
    assert "an Excel 97-2003 .xls, not an ODT" in _refused(ODT, ole("Workbook"))


def test_other_formats_sent_as_office_files_are_named() -> None:
    """A PDF or RTF sent as a DOCX or ODT, and each office format sent as the other, as a
    PDF or as RTF, is named with the content_type to use."""
    essay_pdf = (DATA / "essay.pdf").read_bytes()
    docx, odt = (DATA / "essay.docx").read_bytes(), (DATA / "essay.odt").read_bytes()
    assert "a PDF, not a DOCX: send it with content_type application/pdf" in _refused(
        DOCX, essay_pdf
    )
    assert "RTF, not an ODT: send it with content_type application/rtf" in _refused(
        ODT, b"{\\rtf1\\ansi Hello}"
    )
    assert _refused(RTF, essay_pdf) == (
        "the file is a PDF, not RTF: send it with content_type application/pdf"
    )
    assert f"a DOCX, not RTF: send it with content_type {DOCX}" in _refused(RTF, docx)
    assert _refused(RTF, b"plain words") == "the file is not RTF: it does not start with {\\rtf"
    assert f"it is a DOCX: send it with content_type {DOCX}" in _refused(ODT, docx)
    assert f"it is an ODT: send it with content_type {ODT}" in _refused(DOCX, odt)
    assert f"it is a DOCX: send it with content_type {DOCX}" in _refused(PDF, docx)


def test_an_encrypted_odt_is_named() -> None:
    """An ODT whose manifest gives content.xml encryption-data is named encrypted, not
    broken XML."""
    ns = "urn:oasis:names:tc:opendocument:xmlns:manifest:1.0"
    manifest = (
        f'<manifest:manifest xmlns:manifest="{ns}"><manifest:file-entry '
        'manifest:full-path="content.xml"><manifest:encryption-data/></manifest:file-entry>'
        "</manifest:manifest>"
    ).encode()
    raw = _zip({"content.xml": b"\x8f\x01 encrypted bytes", "META-INF/manifest.xml": manifest})
    assert _refused(ODT, raw) == "the ODT is encrypted: save it without a password"


def test_hyphenation_of_capitals_and_of_compounds() -> None:
    """A word in capitals broken at a line end is joined (the capital after the break is
    no evidence there); a break whose first part the document starts another compound
    with keeps its hyphen, as does one whose last part ends another."""
    mark = "\ufffe"
    text = (
        f"AT{mark}\nLANTA and BAT{mark}\nTING; a top-security jail, the top team, "
        f"top{mark}\nranked; a two-year plan, a year ago, a four{mark}\nyear"
    )
    assert pdf_text.join_hyphenated(text) == (
        "ATLANTA and BATTING; a top-security jail, the top team, top-ranked; "
        "a two-year plan, a year ago, a four-year"
    )
    # one capital before the break is no word in capitals: X-Ray keeps its hyphen
    assert pdf_text.join_hyphenated(f"an X{mark}\nRay of E{mark}\nMail") == "an X-Ray of E-Mail"


def _walked(own: dict[str, bool | None], parent: dict[str, str]) -> dict[str, bool]:
    """Each style's property by the definition: up its parent chain to the first style that
    says, none if the chain ends or loops first (the plain walk, once per style)."""
    out = {}
    for name in own:
        seen, cur = set(), name
        while cur in own and own[cur] is None and cur in parent and cur not in seen:
            seen.add(cur)
            cur = parent[cur]
        if own.get(cur) is not None:
            out[name] = own[cur]
    return out


def test_style_inheritance_is_the_plain_walk_and_a_long_chain_is_read() -> None:
    """Hidden-text styles resolved once per style give what walking each style's chain
    gives, loops and dangling parents included; a chain of 20,000 styles each based on the
    next (which the walk per style read in 21 s) resolves to its root's word."""
    from app.index.formats.office import _resolved

    rng = random.Random(8)
    for _ in range(300):
        n = rng.randrange(1, 12)
        names = [f"s{i}" for i in range(n)]
        own = {s: rng.choice([None, None, True, False]) for s in names}
        parent = {s: rng.choice([*names, "missing"]) for s in names if rng.random() < 0.8}
        assert _resolved(own, parent) == _walked(own, parent), (own, parent)
    n = 20_000
    own = {f"s{i}": None for i in range(n)} | {f"s{n}": True}
    parent = {f"s{i}": f"s{i + 1}" for i in range(n)}
    assert _resolved(own, parent) == dict.fromkeys(own, True)


def test_hyphenated_words_are_joined_as_the_plain_pattern_joins_them_in_linear_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Joining PDF line-end hyphens gives what the plain pattern (a word part may start
    anywhere) gives on random texts of letters, marks and breaks; and a line of a million
    letters with one mark is joined (tried from inside the run, the plain pattern took
    time quadratic in it: a 26 KB PDF of Han lines took 36 s)."""
    from app.index.formats import pdf

    plain = re.compile("(\\w+)[\ufffe\u00ad]\\s*(\\w+)")
    rng = random.Random(9)
    for _ in range(500):
        text = "".join(rng.choice("ab ab\u00ad\ufffe\n\u4e00-") for _ in range(rng.randrange(40)))
        with monkeypatch.context() as m:
            m.setattr(pdf, "_BROKEN", plain)
            expected = pdf.join_hyphenated(text)
        assert pdf.join_hyphenated(text) == expected, repr(text)
    long = "\u4e00" * 1_000_000 + " in\u00adformation"
    assert pdf.join_hyphenated(long).endswith(" information")


def test_many_docx_text_boxes_each_with_a_box_are_read_in_their_order() -> None:
    """A paragraph drawing 5,000 text boxes, each holding a box of its own, is read with
    every box after its paragraph in order, outer then inner (the boxes held were passed
    over again at each inner paragraph's end: 40,000 took 72 s, past the reader's bound)."""
    n = 5000
    unit = (
        "<w:r><w:txbxContent><w:p><w:r><w:t>o{i}</w:t><w:txbxContent>"
        "<w:p><w:r><w:t>i{i}</w:t></w:r></w:p></w:txbxContent></w:r></w:p></w:txbxContent></w:r>"
    )
    body = (
        "<w:p><w:r><w:t>start</w:t></w:r>" + "".join(unit.format(i=i) for i in range(n)) + "</w:p>"
    )
    lines = [line for line in extract(DOCX, _docx(body)).splitlines() if line]
    assert lines == ["start", *[x for i in range(n) for x in (f"o{i}", f"i{i}")]]


def test_pdfium_indexes_of_a_line_are_its_utf16_units_counted_once() -> None:
    """The index PDFium gives the k-th character of a line is the UTF-16 length of what
    comes before it, letters past the Basic Multilingual Plane counting two (checked by
    encoding every prefix), now counted once a line, not once a mark."""
    from app.index.formats.pdf import _indexes

    rng = random.Random(10)
    for _ in range(200):
        piece = "".join(
            rng.choice("ab1\u00b9\U0001d400\U0001f600 ") for _ in range(rng.randrange(30))
        )
        unit = rng.randrange(100)
        index = _indexes(piece, unit)
        for k in range(len(piece) + 1):
            assert index(k) == unit + len(piece[:k].encode("utf-16-le")) // 2


def _two_columns(rows: bool) -> bytes:
    """A page of a full-width title, two columns of prose (the right one a line shorter)
    and a full-width closing line, the columns drawn row by row or column by column."""
    words = " ".join(t for _, t in read_corpus()[:3]).split()
    left = [" ".join(words[i * 5 : i * 5 + 5]) for i in range(9)]
    right = [" ".join(words[100 + i * 5 : 100 + i * 5 + 5]) for i in range(8)]
    title = [(72, 740, "A title that runs across the whole width of the page above both columns")]
    end = [(72, 540, "A closing line that runs across the whole width of the page below them")]
    if rows:
        body = []
        for i in range(9):
            body.append((72, 700 - 14 * i, left[i]))
            if i < len(right):
                body.append((320, 700 - 14 * i, right[i]))
    else:
        body = [(72, 700 - 14 * i, t) for i, t in enumerate(left)]
        body += [(320, 700 - 14 * i, t) for i, t in enumerate(right)]
    return pdf([text_at(title + body + end)])


def test_columns_drawn_row_by_row_read_as_columns_drawn_column_by_column() -> None:
    """PDFium joins a row's two column lines into one; the page reads as the same page
    drawn column by column does (left column, then right), title and closing line in
    place; a table of short cells drawn the same way keeps its rows."""
    by_rows = extract(PDF, _two_columns(rows=True))
    by_columns = extract(PDF, _two_columns(rows=False))
    assert by_rows == by_columns
    assert by_rows.startswith("A title") and by_rows.endswith("below them")
    cells = [(72, 700 - 14 * i, f"key {i}") for i in range(6)]
    cells += [(320, 700 - 14 * i, f"value {i}") for i in range(6)]
    table = sorted(cells, key=lambda c: (-c[1], c[0]))
    read = extract(PDF, pdf([text_at(table)]))
    assert oracle.words(read) == oracle.words(" ".join(t for _, _, t in table))


def test_an_odt_whose_mimetype_entry_lies_about_its_size_is_read() -> None:
    """A mimetype entry that declares 39 bytes and inflates to megabytes (a bomb) or
    cannot be inflated is not read to name the file: the ODT's text is read as before
    (the review of 2026-11-28 saw 2 GB of memory, and tracebacks)."""
    body = (
        b'<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:'
        b'office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">'
        b"<office:body><office:text><text:p>Words of my own text here.</text:p>"
        b"</office:text></office:body></office:document-content>"
    )
    declared = b"application/vnd.oasis.opendocument.text"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("mimetype", "w") as m:
            m.write(declared)
            for _ in range(64):
                m.write(bytes(1 << 20))
        z.writestr("content.xml", body)
    raw = bytearray(out.getvalue())
    at = raw.find(b"PK\x01\x02")  # its central directory entry: claim 39 bytes
    struct.pack_into("<I", raw, at + 16, zlib.crc32(declared))
    struct.pack_into("<I", raw, at + 24, len(declared))
    tracemalloc.start()
    try:
        assert extract(ODT, bytes(raw)) == "Words of my own text here."
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak  # the 64 MiB inside were never inflated


def _run(text: str, props: str = "") -> str:
    return f"<w:r><w:rPr>{props}</w:rPr><w:t xml:space='preserve'>{text}</w:t></w:r>"


@pytest.mark.parametrize(
    "props",
    [
        '<w:color w:val="FFFFFF"/>',
        '<w:color w:val="ffffff"/><w:shd w:val="clear" w:fill="FFFFFF"/>',
        '<w:color w:val="000000" w:themeColor="background1"/>',
        '<w:sz w:val="1"/><w:szCs w:val="1"/><w:spacing w:val="60"/>',
    ],
    ids=["white", "white-on-white", "theme-background", "half-point-spaced"],
)
def test_a_docx_letter_nobody_sees_in_place_of_each_space_reads_as_a_space(props: str) -> None:
    """The oldest trick against a checker: a white letter (or a tiny one spaced apart to
    take a letter's room) in place of each space (the words read "Whenxwexspeak" and
    share no shingle with the source) reads as a space, and so does white junk between
    words."""
    words = ["When", "we", "speak", "of", "free", "software", "we", "are", "referring"]
    body = "<w:p>" + _run("x", props).join(_run(w) for w in words) + "</w:p>"
    assert extract(DOCX, _docx(body)).split() == words
    junk = "<w:p>" + _run(" banana ", props).join(_run(w) for w in words) + "</w:p>"
    assert extract(DOCX, _docx(junk)).split() == words


@pytest.mark.parametrize(
    "props",
    ['<w:sz w:val="1"/><w:szCs w:val="1"/>', '<w:w w:val="1"/>', '<w:w w:val="5%"/>'],
    ids=["half-point", "1%-wide", "5%-wide"],
)
def test_a_docx_letter_that_takes_no_room_reads_as_nothing(props: str) -> None:
    """A letter half a point high or squeezed to a twentieth of its width takes no room:
    slipped into a word it does not split it (a reader sees "software"), between words
    it glues them as a reader sees them, and junk words so drawn between spaces go."""
    words = ["When", "we", "speak", "of", "free", "software"]
    split = (
        "<w:p>"
        + " ".join(_run(w[:2]) + _run("x", props) + _run(w[2:] + " ") for w in words)
        + "</w:p>"
    )
    assert extract(DOCX, _docx(split)).split() == words
    glued = "<w:p>" + _run("When") + _run("x", props) + _run("we") + "</w:p>"
    assert extract(DOCX, _docx(glued)) == "Whenwe"
    junk = "<w:p>" + _run(" banana ", props).join(_run(w) for w in words) + "</w:p>"
    assert extract(DOCX, _docx(junk)).split() == words


def test_docx_letters_unseen_through_their_styles_or_nearly_white_read_as_spaces() -> None:
    """A letter white by its character style, by its paragraph style (or the default
    one) or set in #FAFAFA, between seen words, reads as a space, and a paragraph style's
    dark shading makes its white letters seen; a note holding only an empty white run
    adds no Notes line."""
    styles = (
        '<w:style w:type="character" w:styleId="Ghost"><w:rPr><w:color w:val="FFFFFF"/>'
        "</w:rPr></w:style>"
        '<w:style w:type="character" w:styleId="Ghost2"><w:basedOn w:val="Ghost"/></w:style>'
        '<w:style w:type="paragraph" w:styleId="Pale"><w:rPr><w:color w:val="FFFFFF"/>'
        "</w:rPr></w:style>"
        '<w:style w:type="paragraph" w:styleId="Banner"><w:pPr><w:shd w:val="clear" '
        'w:fill="1F3864"/></w:pPr><w:rPr><w:color w:val="FFFFFF"/></w:rPr></w:style>'
    )
    black = '<w:color w:val="000000"/>'
    body = (
        "<w:p>" + _run("When") + _run("x", '<w:rStyle w:val="Ghost2"/>') + _run("we")
        + _run("x", '<w:color w:val="FAFAFA"/>') + _run("speak") + "</w:p>"
        + '<w:p><w:pPr><w:pStyle w:val="Pale"/></w:pPr>' + _run("of", black) + _run("x")
        + _run("free", black) + "</w:p>"
        + '<w:p><w:pPr><w:pStyle w:val="Banner"/></w:pPr>' + _run("Revenue") + _run(" rose", black)
        + "</w:p>"
    )  # fmt: skip
    footnotes = (
        '<w:footnote w:id="2"><w:p>' + _run("", '<w:color w:val="FFFFFF"/>') + "</w:p></w:footnote>"
    )
    said = extract(DOCX, _docx(body, styles=styles, footnotes=footnotes))
    assert said.split() == ["When", "we", "speak", "of", "free", "Revenue", "rose"]


def test_odt_letters_unseen_through_paragraph_and_link_styles_read_as_spaces() -> None:
    """An ODT paragraph styled white around a black span, a link styled white, and black
    on a black background, between seen words, read as spaces; a span at 1% of its
    parent's size inside a word, as nothing."""
    styles = (
        '<style:style style:name="PW" style:family="paragraph"><style:text-properties {FO} '
        'fo:color="#ffffff"/></style:style>'
        '<style:style style:name="B" style:family="text"><style:text-properties {FO} '
        'fo:color="#000000"/></style:style>'
        '<style:style style:name="W" style:family="text"><style:text-properties {FO} '
        'fo:color="#fafafa"/></style:style>'
        '<style:style style:name="Tiny" style:family="text"><style:text-properties {FO} '
        'fo:font-size="1%"/></style:style>'
        '<style:style style:name="Dark" style:family="text"><style:text-properties {FO} '
        'fo:color="#000000" fo:background-color="#000000"/></style:style>'
    ).replace("{FO}", _FO_NS)
    link = 'xmlns:xlink="http://www.w3.org/1999/xlink"'
    body = (
        '<text:p text:style-name="PW"><text:span text:style-name="B">When</text:span>x'
        '<text:span text:style-name="B">we</text:span></text:p>'
        f'<text:p>speak<text:a {link} xlink:href="#" text:style-name="W">x</text:a>of'
        ' fr<text:span text:style-name="Tiny">x</text:span>ee'
        '<text:span text:style-name="Dark">x</text:span>software</text:p>'
    )
    said = extract(ODT, _odt(body, styles)).split()
    assert said == ["When", "we", "speak", "of", "free", "software"]


def test_white_letters_on_a_dark_page_colour_beside_coloured_ones_are_read() -> None:
    """On a page coloured dark (DOCX w:background, an ODT page layout's background),
    white words beside yellow ones on their line are seen, and read."""
    head = f'xmlns:w="{_W_NS}"'
    yellow = '<w:color w:val="FFD700"/>'
    document = (
        f'<w:document {head}><w:background w:color="1F3864"/><w:body><w:p>'
        + _run("Annual", '<w:color w:val="FFFFFF"/>') + _run(" report", yellow)
        + "</w:p></w:body></w:document>"
    )  # fmt: skip
    assert extract(DOCX, _zip({"word/document.xml": document.encode()})).split() == [
        "Annual",
        "report",
    ]
    # Word's "White, Background 1, Darker 50%" page colour: a theme colour shaded.
    shaded = document.replace(
        'w:color="1F3864"/>', 'w:color="7F7F7F" w:themeColor="background1" w:themeShade="80"/>'
    )
    assert extract(DOCX, _zip({"word/document.xml": shaded.encode()})).split() == [
        "Annual",
        "report",
    ]
    page = (
        f"<office:document-styles {_ODT_NS} {_FO_NS}><office:automatic-styles>"
        '<style:page-layout style:name="pm1"><style:page-layout-properties '
        'fo:background-color="#1f3864"/></style:page-layout></office:automatic-styles>'
        "</office:document-styles>"
    )
    styles = (
        '<style:style style:name="W" style:family="text"><style:text-properties {FO} '
        'fo:color="#ffffff"/></style:style>'
        '<style:style style:name="Y" style:family="text"><style:text-properties {FO} '
        'fo:color="#ffd700"/></style:style>'
    ).replace("{FO}", _FO_NS)
    body = (
        '<text:p><text:span text:style-name="W">Annual</text:span> '
        '<text:span text:style-name="Y">report</text:span></text:p>'
    )
    raw = _odt(body, styles, **{"styles.xml": page.encode()})
    assert extract(ODT, raw).split() == ["Annual", "report"]


def test_docx_greys_and_legacy_or_table_shading_are_seen_and_white_fills_are_not() -> None:
    """Word's palette greys written as a shaded background theme colour, white letters on
    a legacy solid shading or a table's own shading, are read; a white letter on a white
    highlight or a white theme fill, an accent colour tinted to white, and a Latin letter
    set at 1 pt (w:sz) whatever its complex-script size, between seen words, are not."""
    grey = '<w:color w:val="7F7F7F" w:themeColor="background1" w:themeShade="7F"/>'
    white = '<w:color w:val="FFFFFF"/>'
    solid = '<w:shd w:val="solid" w:color="000000" w:fill="auto"/>'
    body = (
        "<w:p>" + _run("Figure 2: ") + _run("a grey caption", grey) + _run(" end.") + "</w:p>"
        + "<w:p>" + _run("Inverse", white + solid) + _run(" words") + "</w:p>"
        + '<w:tbl><w:tblPr><w:shd w:val="clear" w:fill="1F3864"/></w:tblPr><w:tr><w:tc>'
        + "<w:p>" + _run("Header", white) + _run(" cell", '<w:color w:val="FFD700"/>')
        + "</w:p></w:tc></w:tr></w:tbl>"
    )  # fmt: skip
    assert extract(DOCX, _docx(body)).split() == (
        ["Figure", "2:", "a", "grey", "caption", "end.", "Inverse", "words", "Header", "cell"]
    )
    tricks = [
        white + '<w:highlight w:val="white"/>',
        white + '<w:shd w:val="clear" w:fill="FFFFFF" w:themeFill="background1"/>',
        '<w:color w:val="000000" w:themeColor="accent1" w:themeTint="00"/>',
    ]
    words = ["When", "we", "speak", "of"]
    body = "".join(
        "<w:p>" + _run("x", props).join(_run(w) for w in words) + "</w:p>" for props in tricks
    )
    assert extract(DOCX, _docx(body)).split() == words * len(tricks)
    odd = '<w:color w:val="FFFFFF"/><w:shd w:val="pct1e308" w:color="FFFFFF" w:fill="000000"/>'
    body = "<w:p>" + _run("Odd") + _run(" pattern ", odd) + _run("values") + "</w:p>"
    assert extract(DOCX, _docx(body)).split() == ["Odd", "values"]  # clamped: a white fill
    latin = '<w:sz w:val="2"/><w:szCs w:val="40"/>'
    body = "<w:p>" + _run("fr") + _run("x", latin) + _run("ee") + "</w:p>"
    assert extract(DOCX, _docx(body)) == "free"


def test_odt_white_letters_on_a_filled_paragraph_or_cell_are_read() -> None:
    """White ODT spans beside orange ones in a paragraph, or a table cell, whose style
    fills its background (its own or its parent style's) are seen, and read."""
    table = 'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"'
    styles = (
        '<style:style style:name="Band" style:family="paragraph"><style:paragraph-properties '
        '{FO} fo:background-color="#1f3864"/></style:style>'
        '<style:style style:name="Band2" style:family="paragraph" '
        'style:parent-style-name="Band"/>'
        '<style:style style:name="Area" style:family="paragraph"><style:paragraph-properties '
        'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" draw:fill="solid" '
        'draw:fill-color="#1f3864"/></style:style>'
        '<style:style style:name="Dark" style:family="table-cell"><style:table-cell-properties '
        '{FO} fo:background-color="#000000"/></style:style>'
        '<style:style style:name="W" style:family="text"><style:text-properties {FO} '
        'fo:color="#ffffff"/></style:style>'
        '<style:style style:name="O" style:family="text"><style:text-properties {FO} '
        'fo:color="#ff8000"/></style:style>'
    ).replace("{FO}", _FO_NS)
    line = (
        '<text:span text:style-name="W">Revenue</text:span> <text:span text:style-name="O">'
        '(USD m)</text:span> <text:span text:style-name="W">total</text:span>'
    )
    body = (
        f'<text:p text:style-name="Band2">{line}</text:p>'
        f'<text:p text:style-name="Area">{line}</text:p>'
        f'<table:table {table}><table:table-row><table:table-cell table:style-name="Dark">'
        f"<text:p>{line}</text:p></table:table-cell></table:table-row></table:table>"
    )
    assert extract(ODT, _odt(body, styles)).split() == ["Revenue", "(USD", "m)", "total"] * 3


def test_white_docx_letters_on_a_fill_of_their_own_are_read() -> None:
    """White text on a shaded run, paragraph or table cell, or highlighted, is seen, and
    read; so is a normal size and width, and black text."""
    white = '<w:color w:val="FFFFFF"/>'
    shaded = '<w:shd w:val="clear" w:fill="1F3864"/>'
    body = (
        "<w:p>" + _run("run shaded", white + shaded) + "</w:p>"
        + f"<w:p><w:pPr>{shaded}</w:pPr>" + _run("paragraph shaded", white) + "</w:p>"
        + f"<w:tbl><w:tr><w:tc><w:tcPr>{shaded}</w:tcPr><w:p>" + _run("cell shaded", white)
        + "</w:p></w:tc></w:tr></w:tbl>"
        + "<w:p>" + _run("highlighted", white + '<w:highlight w:val="black"/>') + "</w:p>"
        + "<w:p>" + _run("normal size", '<w:sz w:val="24"/><w:w w:val="90"/>') + "</w:p>"
        + "<w:p>" + _run("black", '<w:color w:val="000000"/>') + "</w:p>"
    )  # fmt: skip
    said = extract(DOCX, _docx(body)).split()
    assert said == [
        "run",
        "shaded",
        "paragraph",
        "shaded",
        "cell",
        "shaded",
        "highlighted",
        "normal",
        "size",
        "black",
    ]


def test_docx_symbols_positional_tabs_and_unknown_choices_read_as_word_shows_them() -> None:
    """A w:sym of a character reads as it (a symbol font's private-use glyph as nothing),
    a w:ptab as a tab, and an mc:AlternateContent whose Choice requires a namespace Word
    does not know reads its Fallback, as Word shows it."""
    sym = '<w:r><w:sym w:font="Times New Roman" w:char="{}"/></w:r>'
    body = (
        "<w:p>" + _run("fr") + sym.format("0065") + _run("e")
        + sym.format("0020") + _run("software") + sym.format("F0E0")
        + "<w:r><w:ptab w:relativeTo='margin' w:alignment='left' w:leader='none'/></w:r>"
        + _run("now") + sym.format("ZZ") + sym.format("D800") + "</w:p>"
        + "<w:p><w:r><mc:AlternateContent><mc:Choice Requires='zz9'>" + _run("decoy")
        + "</mc:Choice><mc:Fallback>" + _run("shown") + "</mc:Fallback>"
        + "</mc:AlternateContent></w:r></w:p>"
    )  # fmt: skip
    assert extract(DOCX, _docx(body)).split() == ["free", "software", "now", "shown"]


_FO_NS = 'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"'


def test_odt_letters_nobody_sees_read_as_spaces_and_hidden_fields_hide() -> None:
    """An ODT span styled white (without a background of its own) reads as one space, and
    one at half a point, in a word, as nothing; a white span on a dark background is read; text a
    hidden-text field hides now, and a paragraph a hidden-paragraph field hides, are not."""
    styles = (
        '<style:style style:name="W" style:family="text"><style:text-properties {FO} '
        'fo:color="#ffffff"/></style:style>'
        '<style:style style:name="S" style:family="text"><style:text-properties {FO} '
        'fo:font-size="0.5pt"/></style:style>'
        '<style:style style:name="D" style:family="text"><style:text-properties {FO} '
        'fo:color="#FFFFFF" fo:background-color="#000080"/></style:style>'
    ).replace("{FO}", _FO_NS)
    body = (
        '<text:p>When<text:span text:style-name="W">x</text:span>we '
        'spe<text:span text:style-name="S">x</text:span>ak <text:span '
        'text:style-name="D">banner</text:span> of<text:hidden-text text:condition="ooow:1" '
        'text:string-value="junk" text:is-hidden="true">junk</text:hidden-text> free</text:p>'
        '<text:p><text:hidden-paragraph text:condition="ooow:1" text:is-hidden="true"/>'
        "a hidden paragraph</text:p><text:p>software</text:p>"
    )
    said = extract(ODT, _odt(body, styles)).split()
    assert said == ["When", "we", "speak", "banner", "of", "free", "software"]


def _shown(words: list[str], between: str, x: float = 72, y: float = 700) -> str:
    """A text object showing words in 11 pt Helvetica black with `between` (content
    stream operators and text) drawn after each but the last."""
    shows = f" {between} ".join(f"0 0 0 rg /F1 11 Tf 0 Tr ({w}) Tj" for w in words)
    return f"BT {x} {y} Td {shows} ET"


@pytest.mark.parametrize(
    "between",
    [
        "1 1 1 rg (x) Tj",  # a white letter for a space
        "3 Tr (x) Tj",  # an invisible one
        "/F1 0.5 Tf ( x ) Tj",  # half a point high, between spaces
        "3 Tr ( banana ) Tj",  # an invisible junk word
        "1 1 1 rg ( cherry apple ) Tj",  # white junk words
        "0.98 0.98 0.98 rg (x) Tj",  # near white
        "7 Tr (x) Tj",  # only a clip
        "1 1 1 RG 1 Tr (x) Tj",  # stroked in white
    ],
    ids=[
        "white-x",
        "invisible-x",
        "tiny-spaced-x",
        "invisible-word",
        "white-words",
        "near-white",
        "clip-only",
        "white-outline",
    ],
)
def test_pdf_glyphs_nobody_sees_between_seen_words_read_as_spaces(between: str) -> None:
    """Glyphs drawn white, invisible (render mode 3) or half a point high between words
    drawn to be seen read as spaces, whatever they spell ("Whenxwexspeak" is the oldest
    trick against a checker)."""
    words = ["When", "we", "speak", "of", "free", "software"]
    text = extract(PDF, pdf([_shown(words, between).encode()]))
    assert text.split() == words


def _placed(words: list[str], hide: str) -> str:
    """Words in black 11 pt Helvetica along a line, each its own text object, with a junk
    word after each but the last, drawn as `hide` makes it ({x}, {y}: the junk's place;
    {junk}: a text object showing it there)."""
    out, x = [], 72.0
    for k, word in enumerate(words):
        out.append(f"BT 0 g /F1 11 Tf {x:.1f} 700 Td ({word}) Tj ET")
        x += 7 * (len(word) + 1)
        if k < len(words) - 1:
            junk = f"BT 0 g /F1 11 Tf {x:.1f} 700 Td (zebra) Tj ET"
            out.append(hide.format(x=x, y=700, junk=junk, w=7 * 5))
            x += 7 * 6
    return "\n".join(out)


@pytest.mark.parametrize(
    "hide",
    [
        "{junk} 1 g {x} 696 {w} 14 re f 0 g",  # a white box painted over it
        "q 0 0 1 1 re W n {junk} Q",  # inside a one-point clipping path
        "q 1 0 0 1 -2000 0 cm {junk} Q",  # 2,000 points left of the page
        "q 1 0 0 1 {x} 0 cm /Cut Do Q",  # the same, in a form drawn there
        # its object starting inside a sliver of a clip, its glyphs beyond it
        "q {x} 0 1 1000 re W n BT 0 g /F1 11 Tf {x} 700 Td (zebra) Tj ET Q",
        # sent off the page and back by a kerning jump of its object (TJ)
        "BT 0 g /F1 11 Tf {x} 700 Td [220000 (zebra) -220000] TJ ET",
    ],
    ids=[
        "painted-over",
        "clipped",
        "off-the-page",
        "clipped-in-a-form",
        "clipped-past-its-start",
        "kerned-off-the-page",
    ],
)
def test_pdf_words_painted_over_clipped_or_off_the_page_read_as_spaces(hide: str) -> None:
    """Junk words between seen ones that a reader cannot see, though drawn in black: a box
    the page's colour painted over them, a clipping path they lie outside, or a place off
    the page (an outside audit: each hid a copy from the check), read as spaces."""
    words = ["When", "we", "speak", "of", "free", "software"]
    text = extract(PDF, pdf([_placed(words, hide).encode()], _CLIPPING_FORMS))
    assert text.split() == words


# Forms showing a junk word at their origin's height 700: clipped to a point (Cut), and
# clipped to a box around it in the form's own space (Held: it shows where it is drawn).
_JUNK = b"BT 0 g /F1 11 Tf 0 700 Td (zebra) Tj ET"
_CLIPPING_FORMS = {
    "Cut": b"q 0 0 1 1 re W n " + _JUNK + b" Q",
    "Held": b"q -5 690 60 20 re W n " + _JUNK + b" Q",
}


def test_pdf_words_under_a_box_drawn_before_them_or_in_a_large_clip_are_read() -> None:
    """The controls: words on a white or pale box painted before them, inside a clipping
    path that holds them (in a form too, whose clip moves with the form), under a black
    box drawn after them (a redaction's bar, not a page-coloured cover), or under a white
    fill drawn after them that their place is clipped out of or is a hole in (a review:
    judged by its bounds, such fills hid seen words), are read."""
    words = ["When", "we", "speak", "of", "free", "software"]
    for hide in (
        "1 g {x} 696 {w} 14 re f 0 g {junk}",
        "0.9 0.9 1 rg {x} 696 {w} 14 re f 0 g {junk}",
        "q 0 0 612 792 re W n {junk} Q",
        "{junk} 0 g {x} 696 {w} 14 re f",
        "q 1 0 0 1 {x} 0 cm /Held Do Q",  # a form's clip is in its own space, moved with it
        "{junk} q 0 0 612 50 re W n 1 g 0 0 612 792 re f Q 0 g",  # a white page, clipped off
        "{junk} 1 g 0 0 612 792 re 36 36 540 720 re f* 0 g",  # a white frame, its hole here
    ):
        text = extract(PDF, pdf([_placed(words, hide).encode()], _CLIPPING_FORMS))
        assert text.split().count("zebra") == len(words) - 1, (hide, text)


def test_pdf_glyphs_that_take_no_room_read_as_nothing() -> None:
    """A glyph half a point high or squeezed to a sliver takes no room: slipped into a
    word it does not split it (a reader sees "software"); between two words with no gap
    it glues them, as a reader sees them."""
    tiny = "/F1 0.5 Tf (x) Tj /F1 11 Tf"
    inside = f"BT 0 g /F1 11 Tf 72 700 Td (fr) Tj {tiny} (ee so) Tj {tiny} (ftware) Tj ET"
    squeezed = (
        "BT 0 g /F1 11 Tf 72 680 Td (sp) Tj ET BT 0.01 0 0 11 82.5 680 Tm /F1 1 Tf (x) Tj ET "
        "BT 0 g /F1 11 Tf 82.6 680 Td (eak) Tj ET"
    )
    glued = f"BT 0 g /F1 11 Tf 72 660 Td (When) Tj {tiny} (we) Tj ET"
    said = extract(PDF, pdf([f"{inside}\n{squeezed}\n{glued}".encode()])).split("\n")
    assert said == ["free software", "speak", "Whenwe"]


_SPEAK = ["When", "we", "speak", "of", "free", "software"]


@pytest.mark.parametrize(
    "page",
    [
        "0 g 0 0 612 792 re f 1 g 0 0 612 792 re f " + _shown(_SPEAK, "1 1 1 rg (x) Tj"),
        "0.97 g 0 0 612 792 re f " + _shown(_SPEAK, "1 1 1 rg (x) Tj"),
        " ".join(f"0 g {x} {y} 0.5 0.5 re f" for x in range(0, 600, 2) for y in range(690, 715, 2))
        + " " + _shown(_SPEAK, "1 1 1 rg (x) Tj"),
        "0 g 60 690 500 20 re f "
        + _shown(_SPEAK, "0 0 0 rg (x) Tj").replace("0 0 0 rg /F1", "1 1 1 rg /F1"),
        _shown(_SPEAK, "1 1 1 rg (x) Tj") + " 0 g 0 0 612 792 re f",
        "/Words Do",
        "0.88 g 60 690 500 20 re f " + _shown(_SPEAK, "3 Tr (x) Tj"),
        "q /Ghost gs 0 g 0 0 612 792 re f Q " + _shown(_SPEAK, "1 1 1 rg (x) Tj"),
        "q 612 0 0 792 0 0 cm BI /W 2 /H 1 /BPC 8 /CS /G ID \xff\xfe EI Q "
        + _shown(_SPEAK, "1 1 1 rg (x) Tj"),
    ],
    ids=[
        "white-over-black",
        "near-white-page",
        "specks",
        "black-on-black",
        "fill-drawn-after",
        "in-a-form",
        "invisible-on-a-pale-box",
        "white-on-a-ghost-of-black",
        "white-on-a-white-image",
    ],
)  # fmt: skip
def test_pdf_glyphs_in_the_colour_of_what_was_painted_under_them_read_as_spaces(
    page: str,
) -> None:
    """What lies under a glyph is what was painted last before it and covers it: a black
    page painted over in white, a near-white page, thousands of specks, a black bar under
    black letters (between white words on it), a fill painted after the text, a form
    XObject's own page, a pale box under invisible letters (only a scan makes them
    seen), black painted at alpha 0.01, and a white image (its pixels under the glyph
    of one colour), leave the letters unseen."""
    forms = {"Words": _shown(_SPEAK, "1 1 1 rg (x) Tj").encode()}
    assert extract(PDF, pdf([page.encode("latin-1")], forms=forms)).split() == _SPEAK


def test_pdf_glyphs_seen_on_images_forms_and_faint_fills_are_read() -> None:
    """White letters on an image (its colours are not judged), on a dark fill drawn by a
    form or on a gradient drawn as 2-point strips, light grey and outlined text, black
    text on navy or on a band of black at alpha 0.05, are read; a transparent
    (alpha 0) letter and one squeezed to a sliver between seen words read as spaces."""
    image = "q 200 0 0 20 70 690 cm BI /W 1 /H 1 /BPC 8 /CS /G ID \x00 EI Q "
    pages = [
        image + "BT 1 g /F1 11 Tf 72 700 Td (On image) Tj 0 g ( black after) Tj ET",
        "/Navy Do BT 1 g /F1 11 Tf 74 700 Td (Revenue) Tj 0 g ( rose) Tj ET",
        "BT 0 g /F1 11 Tf 72 700 Td (Body) Tj 0.75 g ( light grey) Tj "
        "0 0 0 RG 1 Tr ( outline) Tj ET",
        "BT 0 g /F1 11 Tf 72 700 Td (When) Tj ET q /Clear gs BT /F1 11 Tf 101 700 Td (x) Tj ET Q "
        "BT 0.01 0 0 11 107 700 Tm /F1 1 Tf (y) Tj ET BT 0 g /F1 11 Tf 110 700 Td (we) Tj ET",
    ]
    strips = " ".join(f"0 0 {0.2 + i / 100} rg 70 {600 + 2 * i} 300 2 re f" for i in range(12))
    pages += [
        "q /Faint gs 0 g 60 690 500 20 re f Q BT 0 g /F1 11 Tf 72 700 Td (Call the) Tj "
        "0 0 1 rg ( inline) Tj 0 g ( function) Tj ET",
        strips + " BT 1 g /F1 11 Tf 74 604 Td (Banner words) Tj 1 0.8 0 rg ( in yellow) Tj ET",
    ]
    forms = {"Navy": b"0 0 0.4 rg 70 696 100 18 re f"}
    said = [extract(PDF, pdf([page.encode("latin-1")], forms=forms)).split() for page in pages]
    assert said == [
        ["On", "image", "black", "after"],
        ["Revenue", "rose"],
        ["Body", "light", "grey", "outline"],
        ["When", "we"],
        ["Call", "the", "inline", "function"],
        ["Banner", "words", "in", "yellow"],
    ]


def test_pdf_lines_all_unseen_are_read_as_an_ocr_layer_or_white_on_dark_is() -> None:
    """A line that is all invisible glyphs (an OCR layer over its scan) and a line of
    white letters on a dark fill are read: no glyph beside them on their line is seen."""
    ocr = "BT 3 Tr /F1 11 Tf 72 700 Td (An OCR layer over its scan) Tj ET"
    dark = "0 0 0.4 rg 60 640 400 24 re f BT 1 1 1 rg /F1 11 Tf 72 648 Td (White on navy) Tj ET"
    seen = "BT 0 0 0 rg 0 Tr /F1 11 Tf 72 600 Td (Black text below) Tj ET"
    text = extract(PDF, pdf([f"{ocr}\n{dark}\n{seen}".encode()]))
    assert text.split() == [
        "An",
        "OCR",
        "layer",
        "over",
        "its",
        "scan",
        "White",
        "on",
        "navy",
        "Black",
        "text",
        "below",
    ]


def test_pdf_white_or_invisible_glyphs_on_something_drawn_are_read() -> None:
    """White letters on a dark fill beside black text on their line (a table's dark
    column, an inverse highlight), an invisible OCR layer over a drawn page with a visible
    stamp on its line (its scan an image), and text set at 1 pt and scaled twelve times
    by its matrix, are read; the trick in a PDF written that way is still caught (a
    review's cases)."""
    rows = (
        "0.1 0.1 0.3 rg 70 696 100 18 re f BT 1 1 1 rg /F1 11 Tf 74 700 Td (Revenue) Tj ET "
        "BT 0 0 0 rg /F1 11 Tf 180 700 Td (rose by four percent) Tj ET"
    )
    ocr = (
        "q 468 0 0 560 72 72 cm BI /W 1 /H 1 /BPC 8 /CS /G ID \x80 EI Q "
        "0 g BT 3 Tr /F1 11 Tf 72 600 Td (It was the best of times) "
        "Tj ET BT 0 Tr 0 g /F1 8 Tf 470 600 Td (Page 3) Tj ET"
    )
    scaled = "BT 0 0 0 rg /F1 1 Tf 12 0 0 12 72 500 Tm (Jane Smith wrote this) Tj ET"
    text = extract(PDF, pdf([f"{rows}\n{ocr}\n{scaled}".encode("latin-1")]))
    expected = "Revenue rose by four percent It was the best of times Page 3 Jane Smith wrote this"
    assert text.split() == expected.split(" ")
    trick = "BT 0 0 0 rg /F1 1 Tf 12 0 0 12 72 500 Tm (When) Tj 1 1 1 rg (x) Tj 0 0 0 rg (we) Tj ET"
    assert extract(PDF, pdf([trick.encode()])).split() == ["When", "we"]


def test_docx_and_odt_white_text_alone_on_its_line_or_around_seen_text_is_read() -> None:
    """White text that is all its paragraph holds (a dark page, a table style's dark
    header, whose fill the reader does not judge) is read; a text box drawn in a white run
    is read whole; a complex script's run set tiny in w:sz but 12 pt in w:szCs is read;
    an ODT white span over a parent style's dark background, and a black span nested in
    a white one, are read (a review's cases)."""
    white = '<w:color w:val="FFFFFF"/>'
    body = (
        _p("Dark page with white words", white)
        + "<w:p>" + _run("Body ") + f"<w:r><w:rPr>{white}</w:rPr><w:t>x</w:t>"
        + "<w:txbxContent><w:p><w:r><w:t>Box text in black</w:t></w:r></w:p></w:txbxContent>"
        + "</w:r></w:p>"
        + "<w:p>" + _run("Body ") + _run("مرحبا بالعالم", '<w:sz w:val="2"/><w:szCs w:val="24"/>')
        + "</w:p>"
    )  # fmt: skip
    said = extract(DOCX, _docx(body)).split()
    assert said == [
        "Dark",
        "page",
        "with",
        "white",
        "words",
        "Body",
        "Box",
        "text",
        "in",
        "black",
        "Body",
        "مرحبا",
        "بالعالم",
    ]
    styles = (
        '<style:style style:name="Inverse" style:family="text"><style:text-properties {FO} '
        'fo:background-color="#000080"/></style:style>'
        '<style:style style:name="T1" style:family="text" style:parent-style-name="Inverse">'
        '<style:text-properties {FO} fo:color="#ffffff"/></style:style>'
        '<style:style style:name="W" style:family="text"><style:text-properties {FO} '
        'fo:color="#ffffff"/></style:style>'
        '<style:style style:name="B" style:family="text"><style:text-properties {FO} '
        'fo:color="#000000"/></style:style>'
    ).replace("{FO}", _FO_NS)
    odt_body = (
        '<text:p><text:span text:style-name="T1">Inverse words</text:span> body</text:p>'
        '<text:p>body <text:span text:style-name="W"><text:span text:style-name="B">visible '
        "inner words</text:span></text:span></text:p>"
    )
    said = extract(ODT, _odt(odt_body, styles)).split()
    assert said == ["Inverse", "words", "body", "body", "visible", "inner", "words"]
