"""A PDF's text as a person reads it, with pypdfium2 (PDFium, Chrome's PDF library).

PDFium orders a page's characters into lines and columns itself, and marks a word
it finds hyphenated at a line end with U+FFFE, so line-end hyphenation is joined
exactly (a hard hyphen, as in "four-game", stays). What PDFium cannot know is
which lines are the page's furniture: `running_lines` drops, among each page's
first and last lines, those that recur at the same place on other pages (digits
aside: "Page 3") and those that are only a page number, so they are not glued into
the sentence that crosses the page break (in a two-column page PDFium reads the
footer between the columns, so where a line sits, not its place in the reading
order, is what tells).
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from app.index.errors import FileError
from app.index.formats import columns, unseen
from app.index.formats.archive import what_it_is

# A page number alone whose line's middle lies within this share of the page's height
# from its top or bottom edge is furniture.
EDGE_BAND = 0.12
# Within this share, so is a page number alone on the page's lowest (highest) line
# (LaTeX sets its page number 0.17 of the page from the bottom), and a line that
# recurs at the same height on other pages.
EXTREME_BAND = 0.25
# A line-end hyphen's word goes on in the next line when that line lies at most this
# many of the page's usual line gaps below; a line farther below is a footnote or a
# footer between the column's last line and the next column or page.
NEXT_LINE_GAPS = 1.6
# A line near an edge of the same shape within this many points of the same height on
# at least this share of the pages (two at least) is furniture.
SAME_PLACE = 6.0
REPEAT_SHARE = 0.5
NO_TEXT = "no text: the PDF has no text layer; OCR it first"
# ... and nothing to OCR: its pages draw nothing at all.
BLANK = "no text: the PDF's pages are blank (they draw nothing); send the document's own file"

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")
# A page number alone: "7", "- 7 -", "Page 7", "7 of 20", "Seite 7 / 20", "vii".
_PAGE_NUMBER = re.compile(
    "[-\u2013\u2014\\s]*(?:(?:page|p\\.|seite|página|pagina)\\s*)?"
    # A number, or a well-formed roman one below 400 (never a word such as "civil").
    "(?:#|(?=[ivxlc])c{0,3}(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))"
    "(?:\\s*(?:of|/|von|de|sur)\\s*#)?[-\u2013\u2014\\s]*",
    re.IGNORECASE,
)
# PDFium's mark of a hyphen it found at a line end (U+FFFE; a soft hyphen, U+00AD,
# in some files), with the word parts either side. The first part starts where a word
# does: tried from inside a long run of letters (a page of Han lines glued together),
# each start scanned the rest of the run, in time quadratic in it (64,000: 36 s).
_BROKEN = re.compile("(?<!\\w)(\\w+)[\ufffe\u00ad]\\s*(\\w+)")
_STRAY_HYPHENS = re.compile("[\ufffe\u00ad]")
_WORDS = re.compile(r"\w+(?:-\w+)*")
_PIECES = re.compile("[^\r\n\ufffe]*\ufffe|[^\r\n\ufffe]+|\r\n|\r|\n")
# Glyphs with no meaning a reader shares, not text: Unicode's private use area (a
# symbol font's list bullet, as LibreOffice writes it) and control characters (what
# PDFium gives for the kashida that stretch a justified Arabic line).
_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ue000-\uf8ff]+")
# Scripts written without spaces between words (Han, kana, their punctuation and
# full-width forms): a line break between two of their characters is not a space.
_UNSPACED = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
# A word of Hebrew or Arabic letters (their marks and presentation forms; no punctuation
# or digits, which the line's direction places).
# PDFium gives most in writing order, but some PDFs (Chromium's, for Arabic) draw some
# words' letters left to right, which it then gives in that order: "يكتب" as "بتكي".
_RTL_RUN = re.compile(
    "[\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u05d0-\u05ea\u05ef-\u05f2"
    "\u0610-\u061a\u0620-\u065f\u066e-\u06d3\u06d5-\u06ef\u06fa-\u06ff\u0750-\u077f"
    "\u08a0-\u08ff\ufb1d-\ufb4f\ufb50-\ufd3d\ufd50-\ufdff\ufe70-\ufefc]{2,}"
)
# An alef then a lam: how PDFium writes Arabic's lam-alef ligature (one glyph for the
# two letters) when it reorders a right-to-left line, letters swapped ("الظلام", the
# darkness, read as "الظالم", the oppressor); a real alef-lam pair is two glyphs.
_ALEF_LAM = re.compile("[\u0622\u0623\u0625\u0627]\u0644")
# A note's reference mark as a word processor sets it, small and raised: digits (or a
# small roman number) right after a word or its punctuation ("model,1"), or opening a
# note's own text ("1See the registers"); the font size tells it from text.
_MARKS = re.compile(
    r"(?<=[^\W\d_])[.,;:!?)\]\u201d\u2019]?(?P<after>\d{1,3}|[ivx]{1,4})(?=\s|$)"
    r"|^\s*(?P<opening>\d{1,3})(?=[^\W\d_])"
)
# ... at most this share of the neighbouring letter's font size.
MARK_SIZE = 0.8
_UNSPACED_BREAK = re.compile(f"(?<=[{_UNSPACED}])\n(?=[{_UNSPACED}])")


@dataclass(frozen=True)
class Page:
    """A page as PDFium reads it: its lines in reading order, and where each sits
    (0 at the bottom edge, 1 at the top)."""

    lines: list[str]
    heights: list[float]


def _shape(line: str) -> str:
    """A line with its numbers blanked and its spacing and case evened: what recurs."""
    return _SPACES.sub(" ", _DIGITS.sub("#", line)).strip().lower()


def _edge(height: float) -> int:
    """1 in the top band, -1 in the bottom band, 0 in the body."""
    return 1 if height >= 1 - EDGE_BAND else -1 if height <= EDGE_BAND else 0


def _alone_edges(page: Page) -> list[bool]:
    """Whether each line of a page is where a page number alone is furniture: in the top
    or bottom band, or the page's highest or lowest line within EXTREME_BAND."""
    out = [bool(_edge(h)) for h in page.heights]
    if page.heights:
        low = min(range(len(page.heights)), key=page.heights.__getitem__)
        high = max(range(len(page.heights)), key=page.heights.__getitem__)
        out[low] = out[low] or page.heights[low] <= EXTREME_BAND
        out[high] = out[high] or page.heights[high] >= 1 - EXTREME_BAND
    return out


def _wide(height: float) -> bool:
    """Whether a line is where a line recurring on other pages is furniture."""
    return height <= EXTREME_BAND or height >= 1 - EXTREME_BAND


def running_lines(pages: list[Page], page_height: float = 792.0) -> list[set[int]]:
    """For each page, the indexes of its lines that are headers, footers or page
    numbers: a page number alone in the top or bottom band (or the page's extreme line
    in EXTREME_BAND), or a line whose shape recurs at about the same height within
    EXTREME_BAND of an edge on at least REPEAT_SHARE of the pages, unless most of the
    pages that hold it hold it again away from the places where it recurs."""
    slot = SAME_PLACE / page_height
    shapes = [[_shape(line) for line in page.lines] for page in pages]
    seen: Counter[tuple[int, str]] = Counter()
    for page, shaped in zip(pages, shapes, strict=True):
        keys: set[tuple[int, str]] = set()
        for shape, h in zip(shaped, page.heights, strict=True):
            if _wide(h):
                # Two neighbouring slots, so a line just across a slot's border still meets.
                keys.update((int(h / slot) + d, shape) for d in (0, 1))
        seen.update(keys)
    least = max(2, math.ceil(REPEAT_SHARE * len(pages)))

    def recurring(shape: str, h: float) -> bool:
        """Whether a line's shape recurs at its height near an edge of enough pages."""
        at = int(h / slot)
        return _wide(h) and max(seen[at, shape], seen[at + 1, shape]) >= least

    # Pages that hold a shape, and pages that hold it again away from the places where
    # it recurs: a header or footer is set once a page (or once at the top and once at
    # the foot, "CONFIDENTIAL"), so a shape most of whose pages repeat it elsewhere is
    # the text's own (a log's "Day 12: wind from the north", a table's rows).
    holding: Counter[str] = Counter()
    repeating: Counter[str] = Counter()
    slotted = [
        [recurring(shape, h) for shape, h in zip(shaped, page.heights, strict=True)]
        for page, shaped in zip(pages, shapes, strict=True)
    ]
    for shaped, marks in zip(shapes, slotted, strict=True):
        counts = Counter(shaped)
        elsewhere = {shape for shape, mark in zip(shaped, marks, strict=True) if not mark}
        holding.update(counts.keys())
        repeating.update(shape for shape, n in counts.items() if n > 1 and shape in elsewhere)
    out: list[set[int]] = []
    for page, shaped, marks in zip(pages, shapes, slotted, strict=True):
        drop: set[int] = set()
        alone = _alone_edges(page)
        for i, (shape, h) in enumerate(zip(shaped, page.heights, strict=True)):
            if not _wide(h):
                continue
            if (alone[i] and _PAGE_NUMBER.fullmatch(shape)) or (
                marks[i] and 2 * repeating[shape] < holding[shape]
            ):
                drop.add(i)
        out.append(drop)
    return out


def join_hyphenated(text: str) -> str:
    """Words PDFium found broken at a line end, joined as the document writes them.

    PDFium marks every hyphen at a line end, a hyphenation point or a real hyphen
    ("four-year"). The document's own words decide: the hyphenated form is kept when
    the document writes it so elsewhere; else, when the joined word does not occur
    elsewhere, it is kept if both parts are words the document uses on their own, or
    if one part is such a word and the document starts ("top-security" for
    "top-ranked") or ends another compound with it; a number either side keeps it
    ("I-75"), and so does a capital after the break unless the part before it is in
    capitals too ("Bruni-Sarkozy", but "AT-LANTA" is "ATLANTA"). Otherwise the parts
    are one word ("hear-ing").
    """
    if "\ufffe" not in text and "\u00ad" not in text:
        return text
    words: Counter[str] = Counter()  # words, compounds and the compounds' parts
    alone: Counter[str] = Counter()  # words written on their own
    heads: Counter[str] = Counter()  # first parts of compounds ("top" of "top-security")
    tails: Counter[str] = Counter()  # last parts ("year" of "four-year")
    # The vocabulary of the words that are not broken.
    for w in _WORDS.findall(_STRAY_HYPHENS.sub("", _BROKEN.sub(" ", text)).lower()):
        words[w] += 1
        if "-" in w:
            parts = w.split("-")
            words.update(parts)
            heads[parts[0]] += 1
            tails[parts[-1]] += 1
        else:
            alone[w] += 1

    def join(m: re.Match[str]) -> str:
        a, b = m.group(1), m.group(2)
        la, lb = a.lower(), b.lower()
        joined, hyphened = la + lb, f"{la}-{lb}"
        if words[hyphened] or b[0].isdigit() or a[-1].isdigit():
            keep = True
        elif words[joined]:
            keep = False
        else:
            # A word on its own either side, or one the document compounds elsewhere
            # on the same side; a capital after the break, where the part before it is
            # not a word in capitals (a heading in capitals breaks like any word; a
            # single capital, as in X-Ray or E-Mail, is no such word).
            keep = (
                (words[la] > 0 and words[lb] > 0)
                or (alone[la] > 0 and heads[la] > 0)
                or (alone[lb] > 0 and tails[lb] > 0)
                or (b[0].isupper() and not (len(a) > 1 and a.isupper()))
            )
        return f"{a}-{b}" if keep else a + b

    return _STRAY_HYPHENS.sub("", _BROKEN.sub(join, text))


def clean(pages: list[Page], page_height: float = 792.0) -> str:
    """A document's text from its pages: furniture dropped, hyphenation joined; a
    line that ends in a hyphen runs on into the next without a space. A document that
    would be all furniture (pages that repeat the same few lines) keeps its lines."""
    text = _joined(pages, running_lines(pages, page_height))
    if not any(c.isalnum() for c in text):
        text = _joined(pages, [set() for _ in pages])
    return text


def _joined(pages: list[Page], drops: list[set[int]]) -> str:
    kept = [
        Page(
            [line for i, line in enumerate(page.lines) if i not in drop],
            [h for i, h in enumerate(page.heights) if i not in drop],
        )
        for page, drop in zip(pages, drops, strict=True)
    ]
    texts = []
    for lines in _broken_words_rejoined(kept):
        lines = [line for line in (_NOT_TEXT.sub("", x).strip() for x in lines) if line]
        text = re.sub(r"(?<=\w-)\n(?=\w)", "", "\n".join(lines))
        texts.append(_UNSPACED_BREAK.sub("", text))
    return join_hyphenated("\n\n".join(t for t in texts if t).strip())


def _line_gap(heights: list[float]) -> float:
    """A page's usual gap between a line and the next one below it (a page share)."""
    gaps = sorted(a - b for a, b in pairwise(heights) if 0 < a - b < 0.1)
    return gaps[len(gaps) // 2] if gaps else 0.02


def _broken_words_rejoined(pages: list[Page]) -> list[list[str]]:
    """Each page's lines, with the lines PDFium reads between a word hyphenated at the
    foot of a column and the word's end (a footnote, a footer the page has once) moved
    after the line the word ends in: the next column's top, or the next page's first
    line.

    Such lines lie below the hyphenated one, farther than a line's gap: the word's own
    next line would be within NEXT_LINE_GAPS of the page's usual gap.
    """
    out: list[list[str]] = []
    carried: dict[int, list[str]] = {}
    for p, page in enumerate(pages):
        order, carry = _reordered(page)
        out.append([page.lines[k] for k in order])
        if not carry:
            continue
        nxt = next((q for q in range(p + 1, len(pages)) if pages[q].lines), None)
        if nxt is None:
            out[p].extend(page.lines[k] for k in carry)
        else:
            carried.setdefault(nxt, []).extend(page.lines[k] for k in carry)
    for q, lines in carried.items():
        # After the line the word ends in, and the words hyphenated on from it.
        at = next((k for k, line in enumerate(out[q]) if not line.endswith("\ufffe")), None)
        at = len(out[q]) if at is None else at + 1
        out[q][at:at] = lines
    return out


def _reordered(page: Page) -> tuple[list[int], list[int]]:
    """A page's line indexes in the order _broken_words_rejoined reads them, and those
    that go after the next page's first line."""
    order = list(range(len(page.lines)))
    if not any(line.endswith("\ufffe") for line in page.lines):
        return order, []
    heights = page.heights
    reach = NEXT_LINE_GAPS * _line_gap(heights)
    i = 0
    while i < len(order) - 1:
        at = order[i]
        j = i + 1
        if page.lines[at].endswith("\ufffe"):
            while j < len(order) and heights[order[j]] < heights[at] - reach:
                j += 1
        between = order[i + 1 : j]
        if between and j == len(order):  # the word ends on the next page
            return order[: i + 1], between
        if between:  # the word ends at the next column's top
            order[i + 1 : j + 1] = [order[j], *between]
        i += 1
    return order, []


def _open(raw: bytes) -> pdfium.PdfDocument:
    if not raw.startswith(b"%PDF-") and b"%PDF-" not in raw[:1024]:
        what = what_it_is(raw)
        raise FileError(
            "the file is not a PDF: it does not start with %PDF-"
            + (f" (it is {what})" if what else "")
        )
    try:
        return pdfium.PdfDocument(raw)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == pdfium_c.FPDF_ERR_PASSWORD:
            raise FileError("the PDF is encrypted: send it without a password") from None
        if code == pdfium_c.FPDF_ERR_SECURITY:
            raise FileError("the PDF uses an unsupported security handler") from None
        raise FileError(
            "the PDF is broken or truncated: its structure cannot be read (save or export it again)"
        ) from None


def _page(textpage: pdfium.PdfTextPage, height: float, page: pdfium.PdfPage | None = None) -> Page:
    """A text page's lines and their heights (of each line's first character's box), a
    page that PDFium reads across its columns read column by column (columns.py); given
    the page, glyphs it draws not to be seen among seen ones as spaces (unseen.py)."""
    text = textpage.get_text_range()
    if page is not None:
        drawing = unseen.Drawing(page)
        if drawing.may_hide():
            text = unseen.blanked(textpage, text, drawing)
    rows: list[list[columns.Piece]] = []
    unit = 0  # PDFium's character index (_units)
    # A line ends at a line break, and at PDFium's hyphen mark, which it writes with
    # no break before the word's second part, even when a footer comes between.
    for m in _PIECES.finditer(text):
        piece = m.group()
        size = _units(piece)
        if piece.strip() and piece[0] not in "\r\n":
            row = [
                _piece(textpage, part, at, height)
                for part, at in _parts(textpage, piece, unit, size)
            ]
            rows.append([p for p in row if p.text])
        unit += size
    ordered = columns.in_columns([row for row in rows if row])
    # Glyphs read as nothing (unseen.NOTHING) leave now that the lines are made, with a
    # line they leave blank.
    kept = [
        (text, p.height)
        for p in ordered
        if (text := p.text.replace(unseen.NOTHING, "")).strip() or unseen.NOTHING not in p.text
    ]
    return Page([text for text, _ in kept], [height for _, height in kept])


def _parts(textpage: pdfium.PdfTextPage, piece: str, unit: int, size: int) -> list[tuple[str, int]]:
    """A line's parts either side of a gutter (one part for most lines), each with
    PDFium's character index of its start."""
    try:
        rects = [textpage.get_rect(i) for i in range(textpage.count_rects(unit, size))]
    except pdfium.PdfiumError:
        return [(piece, unit)]
    cuts = columns.split(rects)
    if not cuts:
        return [(piece, unit)]
    starts = [0]
    for i in cuts:
        left, bottom, _, top = rects[i]
        at = textpage.get_index(left + 0.5, (bottom + top) / 2, 1.0, 1.0)
        offset = _offset(piece, at - unit) if at is not None and at > unit else None
        if offset is not None and starts[-1] < offset < len(piece):
            starts.append(offset)
    if len(starts) == 1:
        return [(piece, unit)]
    bounds = [*starts, len(piece)]
    return [(piece[a:b], unit + _units(piece[:a])) for a, b in pairwise(bounds)]


def _offset(piece: str, units: int) -> int | None:
    """The index in piece of the character PDFium numbers units past its start."""
    seen = 0
    for k, c in enumerate(piece):
        if seen == units:
            return k
        seen += 2 if ord(c) > 0xFFFF else 1
        if seen > units:
            return None
    return None


def _piece(textpage: pdfium.PdfTextPage, part: str, unit: int, height: float) -> columns.Piece:
    """A line's part as read (ligatures in order, note marks dropped, stripped), where it
    sits across the page (points) and its height (a page share, of its first character)."""
    if not part.strip():
        return columns.Piece("", 0.0, 0.0, 0.5)
    first = unit + _units(part[: len(part) - len(part.lstrip())])
    last = unit + _units(part.rstrip()) - 1
    try:
        left, bottom, _, top = textpage.get_charbox(first)
        right = textpage.get_charbox(last)[2]
        middle = ((bottom + top) / 2) / height if height > 0 else 0.5
    except pdfium.PdfiumError:
        # No box for it: a line of the body, never dropped, never in a column.
        left, right, middle = 0.0, math.inf, 0.5
    part = _letters_in_order(textpage, part, unit)
    if _MARKS.search(part):
        part = _marks_dropped(textpage, part, unit)
    return columns.Piece(part.strip(), float(left), float(right), middle)


def _units(text: str) -> int:
    """PDFium's character indexes a text takes: UTF-16 units (two for a character past
    the Basic Multilingual Plane)."""
    return len(text.encode("utf-16-le")) // 2


def _indexes(piece: str, unit: int) -> Callable[[int], int]:
    """PDFium's character index of piece[k], piece starting at index unit: k plus the
    characters past the Basic Multilingual Plane before it (two units each). Counted once
    a line: re-encoding the line's start for every mark took time quadratic in a long
    line (1.2 million characters: 23 s)."""
    wide = [i for i, c in enumerate(piece) if ord(c) > 0xFFFF]
    if not wide:
        return lambda k: unit + k
    return lambda k: unit + k + bisect.bisect_left(wide, k)


def _marks_dropped(textpage: pdfium.PdfTextPage, piece: str, unit: int) -> str:
    """A line without its notes' reference marks: a _MARKS candidate whose characters'
    font size is at most MARK_SIZE of the letter beside it (before it, or after an
    opening mark), so "model,1" reads "model," and "1See" "See"."""

    def size(at: int) -> float:
        return float(pdfium_c.FPDFText_GetFontSize(textpage.raw, at))

    index = _indexes(piece, unit)
    drop: list[tuple[int, int]] = []
    for m in _MARKS.finditer(piece):
        group = "after" if m.group("after") else "opening"
        a, b = m.span(group)
        letter = size(index(a) - 1) if group == "after" else size(index(b))
        if letter > 0 and all(size(index(k)) <= MARK_SIZE * letter for k in range(a, b)):
            drop.append((a, b))
    for a, b in reversed(drop):
        piece = piece[:a] + piece[b:]
    return piece


def _letters_in_order(textpage: pdfium.PdfTextPage, part: str, unit: int) -> str:
    """A line's Arabic and Hebrew letters in writing order (_ligatures_in_order, then
    _rtl_words_in_order: both read character boxes by the places PDFium gave, and a
    reversed word keeps a ligature's letters together, in their order)."""
    if _ALEF_LAM.search(part):
        part = _ligatures_in_order(textpage, part, unit)
    if _RTL_RUN.search(part):
        part = _rtl_words_in_order(textpage, part, unit)
    return part


def _rtl_words_in_order(textpage: pdfium.PdfTextPage, piece: str, unit: int) -> str:
    """A line's right-to-left words in writing order: a run of Hebrew or Arabic letters
    whose first character's box lies left of its last's was given in the order it is
    drawn (left to right), so its glyphs are reversed, the letters of one glyph (a
    lam-alef ligature, one box) kept in their order."""
    index = _indexes(piece, unit)
    chars = list(piece)
    for m in _RTL_RUN.finditer(piece):
        try:
            boxes = [textpage.get_charbox(index(k)) for k in range(m.start(), m.end())]
        except pdfium.PdfiumError:
            continue
        if boxes[0][0] < boxes[-1][0]:
            glyphs: list[list[str]] = []
            for k, box in enumerate(boxes):
                if k and box == boxes[k - 1]:
                    glyphs[-1].append(piece[m.start() + k])
                else:
                    glyphs.append([piece[m.start() + k]])
            chars[m.start() : m.end()] = [c for glyph in reversed(glyphs) for c in glyph]
    return "".join(chars)


def _ligatures_in_order(textpage: pdfium.PdfTextPage, piece: str, unit: int) -> str:
    """A line's lam-alef ligatures with their letters in writing order: an alef and a
    lam that share one glyph's box are the ligature's two letters, swapped."""
    chars = list(piece)
    index = _indexes(piece, unit)
    for m in _ALEF_LAM.finditer(piece):
        at = index(m.start())
        try:
            same = textpage.get_charbox(at) == textpage.get_charbox(at + 1)
        except pdfium.PdfiumError:
            continue
        if same:
            chars[m.start()], chars[m.start() + 1] = chars[m.start() + 1], chars[m.start()]
    return "".join(chars)


def pages_of(raw: bytes) -> tuple[list[Page], float]:
    """Each page's lines as PDFium reads them, and the first page's height in points."""
    doc = _open(raw)
    try:
        if len(doc) == 0:
            raise FileError("the PDF has no pages")
        pages = []
        first_height = 792.0
        for i in range(len(doc)):
            page = doc[i]
            try:
                height = page.get_height()
                if i == 0 and height > 0:
                    first_height = height
                textpage = page.get_textpage()
                pages.append(_page(textpage, height, page))
                textpage.close()
            except pdfium.PdfiumError:
                raise FileError(f"page {i + 1} of the PDF is broken and cannot be read") from None
            finally:
                page.close()
        return pages, first_height
    finally:
        doc.close()


def extract(raw: bytes) -> str:
    """A PDF's text; FileError when it is not a readable PDF or has no text layer."""
    text = clean(*pages_of(raw))
    if not any(c.isalnum() for c in text):
        raise FileError(NO_TEXT if _draws(raw) else BLANK)
    return text


def _draws(raw: bytes) -> bool:
    """Whether any page draws anything (a scan's image, text drawn as outlines or in an
    annotation: what OCR would read); asked only of a PDF without text."""
    doc = _open(raw)
    try:
        for i in range(len(doc)):
            page = doc[i]
            try:
                # Annotations draw too (a stamp's text lies in its appearance stream).
                if pdfium_c.FPDFPage_CountObjects(page.raw) or pdfium_c.FPDFPage_GetAnnotCount(
                    page.raw
                ):
                    return True
            finally:
                page.close()
        return False
    finally:
        doc.close()
