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
import math

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

# A glyph at most this many points high is not seen.
UNSEEN_POINTS = 1.0
# A fill whose red, green and blue are all at least this is white.
WHITE = 250
# Render modes that fill a glyph (the others stroke it, or only clip): its fill colour
# is what shows.
_FILLED = frozenset({0, 2, 4, 6})


def _white(r: int, g: int, b: int, a: int) -> bool:
    return min(r, g, b) >= WHITE and a > 0


def may_hide(page: pdfium.PdfPage) -> bool:
    """Whether any of the page's text objects may be unseen (one look at its top-level
    objects; a form XObject, whose objects are not looked into, may)."""
    rgba = [ctypes.c_uint() for _ in range(4)]
    size = ctypes.c_float()
    matrix = pdfium_c.FS_MATRIX()
    for i in range(pdfium_c.FPDFPage_CountObjects(page.raw)):
        obj = pdfium_c.FPDFPage_GetObject(page.raw, i)
        kind = pdfium_c.FPDFPageObj_GetType(obj)
        if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
            return True
        if kind != pdfium_c.FPDF_PAGEOBJ_TEXT:
            continue
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
        if mode == pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE:
            return True
        if (
            mode in _FILLED
            and pdfium_c.FPDFPageObj_GetFillColor(obj, *map(ctypes.byref, rgba))
            and _white(*(c.value for c in rgba))
        ):
            return True
        if pdfium_c.FPDFTextObj_GetFontSize(
            obj, ctypes.byref(size)
        ) and pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(matrix)):
            scale = math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c))
            if 0 < size.value * scale <= UNSEEN_POINTS:
                return True
    return False


def blanked(textpage: pdfium.PdfTextPage, text: str) -> str:
    """text (the text page's whole text) with each run of unseen glyphs whose line
    neighbours are seen made spaces, one per UTF-16 unit, so PDFium's character indexes
    still fall where they did."""
    count = pdfium_c.FPDFText_CountChars(textpage.raw)
    units = [2 if ord(c) > 0xFFFF else 1 for c in text]
    if sum(units) != count:
        return text  # not the text page's text: nothing to line up
    hidden = _hidden(textpage, text, units)
    out = list(text)
    k, n = 0, len(text)
    while k < n:
        if not hidden[k]:
            k += 1
            continue
        end = k
        while end < n and (hidden[end] or _blank(text[end])):
            end += 1
        while end > k and _blank(text[end - 1]):
            end -= 1
        if _seen_beside(text, hidden, k, end):
            for j in range(k, end):
                out[j] = " " * units[j]
        k = max(end, k + 1)
    return "".join(out)


def _blank(c: str) -> bool:
    return c.isspace() and c not in "\r\n"


def _seen_beside(text: str, hidden: list[bool], start: int, end: int) -> bool:
    """Whether the glyphs nearest a run on its line, either side, are seen where there
    are any, and there is one at least."""
    sides = []
    i = start - 1
    while i >= 0 and _blank(text[i]):
        i -= 1
    if i >= 0 and text[i] not in "\r\n":
        sides.append(not hidden[i])
    i = end
    while i < len(text) and _blank(text[i]):
        i += 1
    if i < len(text) and text[i] not in "\r\n":
        sides.append(not hidden[i])
    return bool(sides) and all(sides)


def _hidden(textpage: pdfium.PdfTextPage, text: str, units: list[int]) -> list[bool]:
    """Per character of text, whether its glyph is drawn to be unseen."""
    raw = textpage.raw
    rgba = [ctypes.c_uint() for _ in range(4)]
    refs = [ctypes.byref(c) for c in rgba]
    out = [False] * len(text)
    at = 0
    for k, c in enumerate(text):
        index, at = at, at + units[k]
        if c.isspace():
            continue
        obj = pdfium_c.FPDFText_GetTextObject(raw, index)
        if not obj:  # a character PDFium made up (a space, a line break)
            continue
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
        if mode == pdfium_c.FPDF_TEXTRENDERMODE_INVISIBLE:
            out[k] = True
        elif mode in _FILLED and pdfium_c.FPDFText_GetFillColor(raw, index, *refs):
            out[k] = _white(*(v.value for v in rgba))
        if not out[k]:
            size = pdfium_c.FPDFText_GetFontSize(raw, index)
            out[k] = 0 < size <= UNSEEN_POINTS
    return out
