"""Glyphs of a PDF page a reader does not see, among glyphs they do.

A letter drawn invisible (text render mode 3), in white, or at most UNSEEN_POINTS high
in place of each space ("Whenxwexspeak"), or junk words drawn so between the words of a
copy, are the oldest ways to hide a copy from a plagiarism checker: PDFium gives their
text as any other. Such glyphs read as spaces here where the text beside them on their
line is seen. A line that is all such glyphs stays as it is: an OCR layer is drawn
invisible over its scan, and white text on a dark fill (a slide, a table's header) is
seen; what tells a hidden glyph is that the glyphs beside it are drawn to be seen.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from app.index.formats.blanking import hidden_runs

# A glyph at most this many points high is not seen.
UNSEEN_POINTS = 1.0
# A fill whose red, green and blue are all at least this is white.
WHITE = 250
# Render modes that fill a glyph (the others stroke it, or only clip): its fill colour
# is what shows.
_FILLED = frozenset({0, 2, 4, 6})


# Past this many drawn areas a page's backdrops are not looked through: no white or
# invisible glyph on it is judged hidden (a vector drawing of thousands of shapes).
MAX_BACKDROPS = 2000


def _white(r: int, g: int, b: int, a: int) -> bool:
    return min(r, g, b) >= WHITE and a > 0


def _address(obj: Any) -> int:
    return ctypes.cast(obj, ctypes.c_void_p).value or 0


def hiding(page: pdfium.PdfPage) -> frozenset[int]:
    """The page's text objects (their addresses) that may be unseen: drawn invisible, in
    white, or in a font at most UNSEEN_POINTS high once scaled by the object's matrix;
    one look at its top-level objects. A page with a form XObject, whose objects are
    not looked into, answers {0}: every glyph is looked at."""
    found = set()
    rgba = [ctypes.c_uint() for _ in range(4)]
    size = ctypes.c_float()
    matrix = pdfium_c.FS_MATRIX()
    for i in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
        obj = pdfium_c.FPDFPage_GetObject(page.raw, i)
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            return frozenset({0})
        if kind != pdfium_c.FPDF_PAGEOBJ_TEXT:
            continue
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
        white = (
            mode in _FILLED
            and pdfium_c.FPDFPageObj_GetFillColor(obj, *map(ctypes.byref, rgba))
            and _white(*(c.value for c in rgba))
        )
        tiny = False
        if pdfium_c.FPDFTextObj_GetFontSize(
            obj, ctypes.byref(size)
        ) and pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(matrix)):
            scale = abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5
            tiny = 0 < size.value * scale <= UNSEEN_POINTS
        if mode == pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE or white or tiny:
            found.add(_address(obj))
    return frozenset(found)


class Backdrops:
    """Where a page draws something text may lie on: its images and the paths it fills
    in a colour that is not white (their bounds). A white glyph on one is seen (a table's
    dark column, a highlight, a band), and so is an invisible glyph (an OCR layer over
    its scan)."""

    def __init__(self, page: pdfium.PdfPage) -> None:
        self.areas: list[tuple[float, float, float, float]] | None = []
        rgba = [ctypes.c_uint() for _ in range(4)]
        box = [ctypes.c_float() for _ in range(4)]
        fill, stroke = ctypes.c_int(), ctypes.c_int()
        for i in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
            obj = pdfium_c.FPDFPage_GetObject(page.raw, i)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
                if not (
                    pdfium_c.FPDFPath_GetDrawMode(obj, ctypes.byref(fill), ctypes.byref(stroke))
                    and fill.value != pdfium_c.FPDF_FILLMODE_NONE
                    and pdfium_c.FPDFPageObj_GetFillColor(obj, *map(ctypes.byref, rgba))
                    and not _white(*(c.value for c in rgba))
                    and rgba[3].value > 0
                ):
                    continue
            elif kind not in (pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_SHADING):
                continue
            if pdfium_c.FPDFPageObj_GetBounds(obj, *map(ctypes.byref, box)):
                if len(self.areas) >= MAX_BACKDROPS:
                    self.areas = None
                    return
                left, bottom, right, top = (c.value for c in box)
                self.areas.append((left, bottom, right, top))

    def behind(self, x: float, y: float) -> bool:
        """Whether something is drawn at (x, y); True past MAX_BACKDROPS."""
        if self.areas is None:
            return True
        return any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in self.areas)


def blanked(
    textpage: pdfium.PdfTextPage, text: str, objects: frozenset[int], backdrops: Backdrops
) -> str:
    """text (the text page's whole text) with each run of unseen glyphs of objects
    (hiding()) whose line neighbours are seen (blanking.hidden_runs) made spaces, one per
    UTF-16 unit, so PDFium's character indexes still fall where they did."""
    count = pdfium_c.FPDFText_CountChars(textpage.raw)
    units = [2 if ord(c) > 0xFFFF else 1 for c in text]
    if sum(units) != count:
        return text  # not the text page's text: nothing to line up
    out = list(text)
    hidden = _hidden(textpage, text, units, objects, backdrops)
    for start, end in hidden_runs(text, hidden):
        for j in range(start, end):
            out[j] = " " * units[j]
    return "".join(out)


def _hidden(
    textpage: pdfium.PdfTextPage,
    text: str,
    units: list[int],
    objects: frozenset[int],
    backdrops: Backdrops,
) -> list[bool]:
    """Per character of text, whether its glyph (one of objects', or any with {0}) is
    drawn to be unseen: invisible or white with nothing drawn behind it, or at most
    UNSEEN_POINTS high (its box from the font's ascent to its descent, on the page:
    whatever the font size and matrices)."""
    every = 0 in objects
    raw = textpage.raw
    rgba = [ctypes.c_uint() for _ in range(4)]
    refs = [ctypes.byref(c) for c in rgba]
    rect = pdfium_c.FS_RECTF()
    out = [False] * len(text)
    at = 0
    for k, c in enumerate(text):
        index, at = at, at + units[k]
        if c.isspace():
            continue
        obj = pdfium_c.FPDFText_GetTextObject(raw, index)
        if not obj:  # a character PDFium made up (a space, a line break)
            continue
        if not every and _address(obj) not in objects:
            continue
        if not pdfium_c.FPDFText_GetLooseCharBox(raw, index, ctypes.byref(rect)):
            continue
        if 0 < rect.top - rect.bottom <= UNSEEN_POINTS:
            out[k] = True
            continue
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
        invisible = mode == pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE
        white = (
            not invisible
            and mode in _FILLED
            and pdfium_c.FPDFText_GetFillColor(raw, index, *refs)
            and _white(*(v.value for v in rgba))
        )
        if invisible or white:
            x, y = (rect.left + rect.right) / 2, (rect.top + rect.bottom) / 2
            out[k] = not backdrops.behind(x, y)
    return out
