"""Glyphs of a PDF page a reader does not see, among glyphs they do.

A letter drawn invisible (text render mode 3 or 7, or fully transparent), in the colour
of what lies under it (white on the page, black on a black box), at most UNSEEN_POINTS
high or squeezed to a sliver, in place of each space ("Whenxwexspeak"), or junk words
drawn so between the words of a copy, are the oldest ways to hide a copy from a
plagiarism checker: PDFium gives their text as any other. So is a glyph drawn in black
and then painted over by a box the colour of its ground, drawn outside its clipping
path, or drawn off the page. Such glyphs read as spaces
here where the text beside them on their line is seen. A line that is all such glyphs
stays as it is: an OCR layer is drawn invisible over its scan, and what tells a hidden
glyph is that the glyphs beside it are drawn to be seen.

What lies under a glyph is found the way the page is painted: the filled paths, images
and shadings drawn before the glyph's text object (forms walked into) that cover half
the glyph's box, or hold its centre and a tenth of it, the top one's colour blended by
its alpha with those below, down to an opaque one or the page's white. An image is
ground of the colour of its pixels under the glyph where those looked at are of one
colour, and seen ground otherwise (a scan, a photo); an invisible glyph is seen on an
image and on nothing else (an OCR layer lies on its scan).
"""

from __future__ import annotations

import bisect
import ctypes
import math
from typing import Any, NamedTuple

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c

from app.index.formats.blanking import NO_ROOM, RGB, ROOM, SEEN, WHITE, blend, faint, hidden_runs

# A glyph at most this many points high, or squeezed to at most this share of its
# height wide (a narrow letter, an i or a period, is a fifth of it), is not seen.
UNSEEN_POINTS = 1.0
UNSEEN_ASPECT = 0.06
# A glyph drawn with at most this alpha (of 255) is not seen.
UNSEEN_ALPHA = 26
# Render modes that fill a glyph (its fill colour shows), that only stroke it (its
# stroke colour does), and that draw nothing.
_FILLED = frozenset({0, 2, 4, 6})
_STROKED = frozenset({1, 5})
_INVISIBLE = frozenset({3, 7})
# What lies under a glyph is looked up in a GRID x GRID partition of the page. Past
# MAX_CELLS area-cells a page's later areas are not recorded, and past MAX_WALK areas
# in one cell a glyph is taken to lie on the page: a page built to be slow to judge is
# judged toward catching, its white glyphs read as on white.
GRID = 32
MAX_CELLS = 1_000_000
MAX_WALK = 512
# Forms nested deeper than this are not walked into, and past MAX_OBJECTS objects (forms
# drawn within forms multiply them) the walk stops: every glyph is looked at then.
MAX_DEPTH = 12
MAX_OBJECTS = 200_000
# Past this many filled areas (a map, a scatter plot of thousands of marks), a page's
# later paths are not read: their glyphs are judged on what was read.
MAX_AREAS = 20_000
# An area is under a glyph when it covers half the glyph's box, or holds the box's
# centre and covers this share of it (a gradient drawn as strips, a scan stored in bands;
# not a speck under each letter).
STRIP_SHARE = 0.1
# Past this many distinct path colours, every text object drawn after is looked at.
MAX_COLOURS = 64
# A clipping path of more paths, or a path of more points, than these is not read (a
# glyph is judged as unclipped): the clips that hide text are boxes, and reading a long
# path for each of a page's text objects cost seconds (a review's 1,000-point clip).
MAX_CLIP_PATHS = 4
MAX_CLIP_POINTS = 16

Matrix = tuple[float, float, float, float, float, float]
_IDENTITY: Matrix = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)


class _Area(NamedTuple):
    order: int
    obj: Any  # its page object: its bounds are read only when a glyph is judged
    matrix: Matrix  # the forms' it is drawn in, onto the page
    colour: RGB | None  # None: an image or a shading, judged by its pixels or not at all
    alpha: int  # 0-255: a translucent fill shows what lies under it through it
    image: bool = False  # an image, whose pixels are looked at under a glyph


def _address(obj: Any) -> int:
    return ctypes.cast(obj, ctypes.c_void_p).value or 0


def _then(m: Matrix, outer: Matrix) -> Matrix:
    """m applied first, then outer."""
    a, b, c, d, e, f = m
    A, B, C, D, E, F = outer
    return (
        a * A + b * C,
        a * B + b * D,
        c * A + d * C,
        c * B + d * D,
        e * A + f * C + E,
        e * B + f * D + F,
    )


def _on_page(
    box: tuple[float, float, float, float], m: Matrix
) -> tuple[float, float, float, float]:
    if m == _IDENTITY:
        return box
    a, b, c, d, e, f = m
    x0, y0, x1, y1 = box
    xs, ys = [], []
    for x, y in ((x0, y0), (x0, y1), (x1, y0), (x1, y1)):
        xs.append(a * x + c * y + e)
        ys.append(b * x + d * y + f)
    return min(xs), min(ys), max(xs), max(ys)


def _least_scale(m: Matrix) -> float:
    """The matrix's smallest stretch of a unit length (its least singular value)."""
    a, b, c, d = m[:4]
    s = a * a + b * b + c * c + d * d
    det = a * d - b * c
    return math.sqrt(max(0.0, (s - math.sqrt(max(0.0, s * s - 4 * det * det))) / 2))


def _one_rectangle(obj: Any) -> bool:
    """Whether a path object is one closed rectangle's outline (`re`, or four lines),
    axis-aligned in its own space: filled, it covers all of its bounds."""
    n = pdfium_c.FPDFPath_CountSegments(obj)
    if not 4 <= n <= 6:
        return False
    x, y = ctypes.c_float(), ctypes.c_float()
    xs: set[float] = set()
    ys: set[float] = set()
    for k in range(n):
        seg = pdfium_c.FPDFPath_GetPathSegment(obj, k)
        kind = pdfium_c.FPDFPathSegment_GetType(seg)
        if (k == 0) != (
            kind == pdfium_c.FPDF_SEGMENT_MOVETO
        ) or kind == pdfium_c.FPDF_SEGMENT_BEZIERTO:
            return False
        if not pdfium_c.FPDFPathSegment_GetPoint(seg, ctypes.byref(x), ctypes.byref(y)):
            return False
        xs.add(round(x.value, 2))
        ys.add(round(y.value, 2))
    return len(xs) <= 2 and len(ys) <= 2


_NOWHERE = (0.0, 0.0, -1.0, -1.0)


def _clip_box(obj: Any, unread: Any = None) -> tuple[float, float, float, float] | None:
    """The bounding box of a page object's clipping path (the intersection of its
    paths' boxes), in the space the object is drawn in; None when it has none, and
    `unread` when it is past MAX_CLIP_PATHS or MAX_CLIP_POINTS."""
    clip = pdfium_c.FPDFPageObj_GetClipPath(obj)
    if not clip:
        return None
    x, y = ctypes.c_float(), ctypes.c_float()
    paths = pdfium_c.FPDFClipPath_CountPaths(clip)
    if paths > MAX_CLIP_PATHS:
        return unread
    boxes: list[tuple[float, float, float, float]] = []
    for p in range(max(0, paths)):
        points = pdfium_c.FPDFClipPath_CountPathSegments(clip, p)
        if points > MAX_CLIP_POINTS:
            return unread
        xs: list[float] = []
        ys: list[float] = []
        for k in range(max(0, points)):
            seg = pdfium_c.FPDFClipPath_GetPathSegment(clip, p, k)
            if seg and pdfium_c.FPDFPathSegment_GetPoint(seg, ctypes.byref(x), ctypes.byref(y)):
                xs.append(x.value)
                ys.append(y.value)
        if xs:
            boxes.append((min(xs), min(ys), max(xs), max(ys)))
    if not boxes:
        return None
    x0s, y0s, x1s, y1s = zip(*boxes, strict=True)
    return max(x0s), max(y0s), min(x1s), min(y1s)


def _holds(box: tuple[float, float, float, float], x: float, y: float) -> bool:
    """Whether the point (x, y) lies in box (left, bottom, right, top)."""
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


class Drawing:
    """A page's objects walked once in the order they are painted: the text objects
    that may be unseen (`candidates`: drawn invisible or transparent, in a colour faint
    on white or on a path filled before them, or in a font at most UNSEEN_POINTS once
    scaled along either axis), and what each glyph lies on (`under`)."""

    def __init__(self, page: pdfium.PdfPage) -> None:
        self.candidates: set[int] = set()
        self.every = False  # a form too deep to walk: every glyph is looked at
        self._order: dict[int, int] = {}
        self._areas: list[_Area] = []
        self._colours: set[RGB] = set()
        left, bottom, right, top = page.get_bbox()
        self._frame = (left, bottom, max(right - left, 1.0), max(top - bottom, 1.0))
        self._cells: tuple[list[list[int]], list[list[int]]] | None = None
        self._bitmaps: dict[int, _Bitmap | None] = {}
        self._boxes: list[tuple[float, float, float, float]] = []  # each area's, on the page
        # Where a text object's clipping path lets its glyphs show (its bounding box on
        # the page), for a text object that has one; and the last opaque fill painted,
        # which may cover the text objects painted before it.
        self._clips: dict[int, tuple[float, float, float, float]] = {}
        self._last_cover = -1
        self._covers: dict[int, tuple[float, float, float, float] | None] = {}  # _cover's
        # Buffers PDFium writes into, made once for the walk's thousands of objects.
        self._rgba = [ctypes.c_uint() for _ in range(4)]
        self._rgba_refs = [ctypes.byref(c) for c in self._rgba]
        self._size = ctypes.c_float()
        self._size_ref = ctypes.byref(self._size)
        self._matrix = pdfium_c.FS_MATRIX()
        self._matrix_ref = ctypes.byref(self._matrix)
        self._box = [ctypes.c_float() for _ in range(4)]
        self._box_refs = [ctypes.byref(c) for c in self._box]
        self._count = 0
        self._walk(
            page.raw, pdfium_c.FPDFPage_CountObjects, pdfium_c.FPDFPage_GetObject, _IDENTITY, 0
        )

    def _walk(self, parent: Any, count: Any, get: Any, matrix: Matrix, depth: int) -> None:
        rgba, refs = self._rgba, self._rgba_refs
        fill, stroke = ctypes.c_int(), ctypes.c_int()
        for i in range(count(parent)):
            if self._count >= MAX_OBJECTS:
                self.every = True
                return
            obj = get(parent, i)
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            order = self._count
            self._count += 1
            if kind == pdfium_c.FPDF_PAGEOBJ_FORM:
                own = pdfium_c.FS_MATRIX()
                if depth >= MAX_DEPTH or not pdfium_c.FPDFPageObj_GetMatrix(obj, ctypes.byref(own)):
                    self.every = True
                    continue
                inner = (own.a, own.b, own.c, own.d, own.e, own.f)
                self._walk(
                    obj,
                    pdfium_c.FPDFFormObj_CountObjects,
                    pdfium_c.FPDFFormObj_GetObject,
                    _then(inner, matrix),
                    depth + 1,
                )
                continue
            if kind == pdfium_c.FPDF_PAGEOBJ_TEXT:
                self._text(obj, order, matrix)
                continue
            if len(self._areas) >= MAX_AREAS:
                continue
            colour: RGB | None = None
            alpha = 255
            if kind == pdfium_c.FPDF_PAGEOBJ_PATH:
                if not (
                    pdfium_c.FPDFPath_GetDrawMode(obj, ctypes.byref(fill), ctypes.byref(stroke))
                    and fill.value != pdfium_c.FPDF_FILLMODE_NONE
                    and pdfium_c.FPDFPageObj_GetFillColor(obj, *refs)
                    and rgba[3].value > 0
                ):
                    continue
                colour = (rgba[0].value, rgba[1].value, rgba[2].value)
                alpha = rgba[3].value
                if alpha >= 255 - UNSEEN_ALPHA:
                    self._last_cover = order
                    if len(self._colours) <= MAX_COLOURS:
                        self._colours.add(colour)
            elif kind not in (pdfium_c.FPDF_PAGEOBJ_IMAGE, pdfium_c.FPDF_PAGEOBJ_SHADING):
                continue
            image = kind == pdfium_c.FPDF_PAGEOBJ_IMAGE
            self._areas.append(_Area(order, obj, matrix, colour, alpha, image))

    def _text(self, obj: Any, order: int, matrix: Matrix) -> None:
        address = _address(obj)
        self._order[address] = order
        # An object reaching off the page, or out of its clipping path, has its glyphs
        # looked at (a glyph a kerning jump sends off the page lies in its bounds).
        if pdfium_c.FPDFPageObj_GetBounds(obj, *self._box_refs):
            x0, y0, x1, y1 = _on_page(tuple(c.value for c in self._box), matrix)  # type: ignore[arg-type]
            left, bottom, width, height = self._frame
            if x0 < left or y0 < bottom or x1 > left + width or y1 > bottom + height:
                self.candidates.add(address)
            clip = _clip_box(obj)
            if clip is not None:
                c0, c1, c2, c3 = _on_page(clip, matrix)
                if x0 < c0 or y0 < c1 or x1 > c2 or y1 > c3:
                    self._clips[address] = (c0, c1, c2, c3)
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
        colour = self._colour_of(obj, mode)
        may = colour is None or faint(colour) or len(self._colours) > MAX_COLOURS
        if not may and self._colours:
            may = any(faint(colour, c) for c in self._colours)  # type: ignore[arg-type]
        if not may:
            size, own = self._size, self._matrix
            if pdfium_c.FPDFTextObj_GetFontSize(obj, self._size_ref) and (
                pdfium_c.FPDFPageObj_GetMatrix(obj, self._matrix_ref)
            ):
                mine = (own.a, own.b, own.c, own.d, own.e, own.f)
                scaled = mine if matrix is _IDENTITY else _then(mine, matrix)
                may = 0 < size.value * _least_scale(scaled) <= UNSEEN_POINTS
        if may:
            self.candidates.add(address)

    def _colour_of(self, obj: Any, mode: int) -> RGB | None:
        """The colour a text object's glyphs show in; None if they show nothing."""
        if mode in _FILLED:
            ok = pdfium_c.FPDFPageObj_GetFillColor(obj, *self._rgba_refs)
        elif mode in _STROKED:
            ok = pdfium_c.FPDFPageObj_GetStrokeColor(obj, *self._rgba_refs)
        else:
            return None
        if not ok:
            return (0, 0, 0)
        r, g, b, a = (c.value for c in self._rgba)
        return None if a <= UNSEEN_ALPHA else (r, g, b)

    def may_hide(self) -> bool:
        """Whether any glyph of the page may be unseen (else none is looked at)."""
        return bool(self.every or self.candidates or self._clips or self._last_cover >= 0)

    def looks_at(self, obj: Any) -> bool:
        """Whether a glyph of this text object is to be looked at."""
        address = _address(obj)
        return (
            self.every
            or address in self.candidates
            or address in self._clips
            or self._order.get(address, self._count) < self._last_cover
        )

    def clipped(self, obj: Any, box: tuple[float, float, float, float]) -> bool:
        """Whether a glyph of obj with this box on the page lies off the page or outside
        its object's clipping path (its centre out of the path's bounding box): drawn,
        never shown."""
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        left, bottom, width, height = self._frame
        if not _holds((left, bottom, left + width, bottom + height), cx, cy):
            return True
        clip = self._clips.get(_address(obj))
        return clip is not None and not _holds(clip, cx, cy)

    def covered(self, obj: Any, box: tuple[float, float, float, float], ground: RGB) -> bool:
        """Whether a glyph of obj with this box on the page is painted over: an opaque
        fill drawn after obj, in a colour faint on the glyph's ground (a box the colour of
        the page), holds the glyph's centre and half its box."""
        order, here, orders, (cx, cy), size = self._place(obj, box)
        if order >= self._last_cover:
            return False
        x0, y0, x1, y1 = box
        start = bisect.bisect_right(orders, order)
        for index in here[start : start + MAX_WALK]:
            area = self._areas[index]
            if area.colour is None or area.alpha < 255 - UNSEEN_ALPHA:
                continue
            if not _holds(self._boxes[index], cx, cy):
                continue
            if index not in self._covers:
                self._covers[index] = self._cover(index)
            cover = self._covers[index]
            if cover is None or not _holds(cover, cx, cy):
                continue
            ax0, ay0, ax1, ay1 = cover
            w = min(x1, ax1) - max(x0, ax0)
            h = min(y1, ay1) - max(y0, ay0)
            if size > 0 and (w <= 0 or h <= 0 or w * h < 0.5 * size):
                continue
            if faint(area.colour, ground):
                return True
        return False

    def _cover(self, index: int) -> tuple[float, float, float, float] | None:
        """What an area covers for sure, on the page: its bounds less what its clip (a
        form's box among it) cuts off, if it is one plain rectangle; else None."""
        area = self._areas[index]
        if not _one_rectangle(area.obj):
            return None
        ax0, ay0, ax1, ay1 = self._boxes[index]
        clip = _clip_box(area.obj, unread=_NOWHERE)  # a clip not read: covers nothing
        if clip is None:
            return ax0, ay0, ax1, ay1
        c0, c1, c2, c3 = _on_page(clip, area.matrix)
        return max(ax0, c0), max(ay0, c1), min(ax1, c2), min(ay1, c3)

    def under(
        self, obj: Any, box: tuple[float, float, float, float], images: bool = True
    ) -> RGB | None:
        """The colour a glyph of obj with this box on the page lies on: the areas painted
        before obj that are under it (STRIP_SHARE), the top one's colour blended by its
        alpha with those below it, down to an opaque one or the page's WHITE; an image's
        where its pixels under the box are of one colour (and images is true); None where
        an image of several colours, or a shading, is the ground."""
        order, here, orders, (cx, cy), size = self._place(obj, box)
        x0, y0, x1, y1 = box
        layers: list[_Area] = []
        ground: RGB | None = WHITE
        # The cell's areas are in paint order: those painted after obj are skipped at once.
        k = bisect.bisect_left(orders, order)
        for walked, at in enumerate(range(k - 1, -1, -1)):
            if walked >= MAX_WALK:
                break  # judged as on the page
            index = here[at]
            area = self._areas[index]
            ax0, ay0, ax1, ay1 = self._boxes[index]
            if size > 0:
                w = min(x1, ax1) - max(x0, ax0)
                h = min(y1, ay1) - max(y0, ay0)
                if w <= 0 or h <= 0:
                    continue
                share = w * h / size
                inside = _holds(self._boxes[index], cx, cy)
                if share < 0.5 and not (inside and share >= STRIP_SHARE):
                    continue
            elif not _holds(self._boxes[index], cx, cy):
                continue
            if area.alpha <= UNSEEN_ALPHA:
                continue  # paints nothing to speak of
            if area.colour is None or area.alpha >= 255 - UNSEEN_ALPHA:
                ground = area.colour
                if area.image and images:
                    ground = self._pixels(area, box)
                break
            layers.append(area)
        if ground is None:
            return None
        for area in reversed(layers):
            assert area.colour is not None
            ground = blend(area.colour, ground, area.alpha / 255)
        return ground

    def _place(
        self, obj: Any, box: tuple[float, float, float, float]
    ) -> tuple[int, list[int], list[int], tuple[float, float], float]:
        """A glyph's object's paint order, the areas of its box's centre's cell (indexes,
        and their orders, in paint order), that centre and the box's size."""
        if self._cells is None:
            self._cells = self._grid()
        cells, orders = self._cells
        x0, y0, x1, y1 = box
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        cell = self._cell(cx, cy)
        size = max(x1 - x0, 0.0) * max(y1 - y0, 0.0)
        order = self._order.get(_address(obj), self._count)
        return order, cells[cell], orders[cell], (cx, cy), size

    def _pixels(self, area: _Area, box: tuple[float, float, float, float]) -> RGB | None:
        """The colour of an image's pixels under a glyph's box (five of them looked at),
        if they are all of one colour (within FAINT); else None."""
        key = _address(area.obj)
        if key not in self._bitmaps:
            self._bitmaps[key] = _bitmap(area.obj)
        bitmap = self._bitmaps[key]
        own = pdfium_c.FS_MATRIX()
        if bitmap is None or not pdfium_c.FPDFPageObj_GetMatrix(area.obj, ctypes.byref(own)):
            return None
        a, b, c, d, e, f = _then((own.a, own.b, own.c, own.d, own.e, own.f), area.matrix)
        det = a * d - b * c
        if abs(det) < 1e-9:
            return None
        x0, y0, x1, y1 = box
        found: list[RGB] = []
        for fx, fy in ((0.5, 0.5), (0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)):
            x, y = x0 + fx * (x1 - x0) - e, y0 + fy * (y1 - y0) - f
            u, v = (d * x - c * y) / det, (a * y - b * x) / det  # the unit square's point
            colour = bitmap.at(u, v)
            if colour is None:
                return None
            found.append(colour)
        first = found[0]
        return first if all(faint(other, first) for other in found) else None

    def _cell(self, x: float, y: float) -> int:
        left, bottom, width, height = self._frame
        col = min(GRID - 1, max(0, int((x - left) / width * GRID)))
        row = min(GRID - 1, max(0, int((y - bottom) / height * GRID)))
        return row * GRID + col

    def _grid(self) -> tuple[list[list[int]], list[list[int]]]:
        """Per cell, the areas over it (indexes, in paint order) and their orders."""
        cells: list[list[int]] = [[] for _ in range(GRID * GRID)]
        recorded = 0
        box = [ctypes.c_float() for _ in range(4)]
        refs = [ctypes.byref(c) for c in box]
        self._boxes = []
        for k, area in enumerate(self._areas):  # in paint order: each cell's list is too
            if not pdfium_c.FPDFPageObj_GetBounds(area.obj, *refs):
                self._boxes.append((0.0, 0.0, -1.0, -1.0))  # under no glyph
                continue
            x0, y0, x1, y1 = _on_page(
                (box[0].value, box[1].value, box[2].value, box[3].value), area.matrix
            )
            self._boxes.append((x0, y0, x1, y1))
            first, last = self._cell(x0, y0), self._cell(x1, y1)
            rows = range(first // GRID, last // GRID + 1)
            cols = range(first % GRID, last % GRID + 1)
            recorded += len(rows) * len(cols)
            if recorded > MAX_CELLS:
                break
            for row in rows:
                for col in cols:
                    cells[row * GRID + col].append(k)
        orders = [[self._areas[k].order for k in cell] for cell in cells]
        return cells, orders


# Images of more pixels than this are not decoded to judge what lies under a glyph.
MAX_PIXELS = 40_000_000


class _Bitmap(NamedTuple):
    """An image's pixels, decoded: rows top to bottom, each `stride` bytes."""

    width: int
    height: int
    stride: int
    channels: int  # 1 grey, 3 BGR, 4 BGRx or BGRA
    data: bytes

    def at(self, u: float, v: float) -> RGB | None:
        """The colour at (u, v) of the image's unit square (v up); None off it."""
        if not (0 <= u <= 1 and 0 <= v <= 1):
            return None
        col = min(self.width - 1, int(u * self.width))
        row = min(self.height - 1, int((1 - v) * self.height))
        at = row * self.stride + col * self.channels
        if self.channels == 1:
            g = self.data[at]
            return (g, g, g)
        return (self.data[at + 2], self.data[at + 1], self.data[at])


_CHANNELS = {
    pdfium_c.FPDFBitmap_Gray: 1,
    pdfium_c.FPDFBitmap_BGR: 3,
    pdfium_c.FPDFBitmap_BGRx: 4,
    pdfium_c.FPDFBitmap_BGRA: 4,
}


def _bitmap(image: Any) -> _Bitmap | None:
    """An image object's pixels (its mask not applied); None if PDFium cannot give them."""
    width, height = ctypes.c_uint(), ctypes.c_uint()
    if not pdfium_c.FPDFImageObj_GetImagePixelSize(
        image, ctypes.byref(width), ctypes.byref(height)
    ):
        return None
    if not 0 < width.value * height.value <= MAX_PIXELS:
        return None
    bitmap = pdfium_c.FPDFImageObj_GetBitmap(image)
    if not bitmap:
        return None
    try:
        channels = _CHANNELS.get(pdfium_c.FPDFBitmap_GetFormat(bitmap))
        w, h = pdfium_c.FPDFBitmap_GetWidth(bitmap), pdfium_c.FPDFBitmap_GetHeight(bitmap)
        stride = pdfium_c.FPDFBitmap_GetStride(bitmap)
        buffer = pdfium_c.FPDFBitmap_GetBuffer(bitmap)
        if channels is None or w <= 0 or h <= 0 or not buffer:
            return None
        return _Bitmap(w, h, stride, channels, ctypes.string_at(buffer, stride * h))
    finally:
        pdfium_c.FPDFBitmap_Destroy(bitmap)


# What a run of glyphs that take no room is read as until the page's lines are made
# (pdf.py drops it then): a character of its own keeps PDFium's indexes in place.
NOTHING = "\u200b"


def blanked(textpage: pdfium.PdfTextPage, text: str, drawing: Drawing) -> str:
    """text (the text page's whole text) with each run of unseen glyphs whose line
    neighbours are seen (blanking.hidden_runs) made spaces, or NOTHING where no glyph of
    it takes room (a point high, a sliver wide), one per UTF-16 unit, so PDFium's
    character indexes still fall where they did."""
    count = pdfium_c.FPDFText_CountChars(textpage.raw)
    units = [2 if ord(c) > 0xFFFF else 1 for c in text]
    if sum(units) != count:
        return text  # not the text page's text: nothing to line up
    out = list(text)
    hidden = _hidden(textpage, text, units, drawing)
    for start, end, reading in hidden_runs(text, hidden):
        for j in range(start, end):
            out[j] = (reading or NOTHING) * units[j]
    return "".join(out)


def _hidden(
    textpage: pdfium.PdfTextPage, text: str, units: list[int], drawing: Drawing
) -> list[int]:
    """Per character of text, how its glyph (of one of the drawing's candidates) is
    drawn (blanking.SEEN, ROOM, NO_ROOM): at most UNSEEN_POINTS high, or squeezed to
    UNSEEN_ASPECT of its height wide (its box from the font's ascent to its descent, on
    the page), takes no room; invisible (or at most UNSEEN_ALPHA opaque) anywhere but on
    an image or a shading, or in a colour faint on what lies under it, takes a letter's."""
    raw = textpage.raw
    rgba = [ctypes.c_uint() for _ in range(4)]
    refs = [ctypes.byref(c) for c in rgba]
    rect = pdfium_c.FS_RECTF()
    out = [SEEN] * len(text)
    at = 0
    for k, c in enumerate(text):
        index, at = at, at + units[k]
        if c.isspace():
            continue
        obj = pdfium_c.FPDFText_GetTextObject(raw, index)
        if not obj or not drawing.looks_at(obj):  # not obj: a character PDFium made up
            continue
        if not pdfium_c.FPDFText_GetLooseCharBox(raw, index, ctypes.byref(rect)):
            continue
        height, width = rect.top - rect.bottom, rect.right - rect.left
        if 0 < height <= UNSEEN_POINTS or 0 < width <= height * UNSEEN_ASPECT:
            out[k] = NO_ROOM
            continue
        box = (rect.left, rect.bottom, rect.right, rect.top)
        if drawing.clipped(obj, box):
            out[k] = ROOM
            continue
        mode = pdfium_c.FPDFTextObj_GetTextRenderMode(obj)
        colour: RGB | None = None
        if mode not in _INVISIBLE:
            read = (
                pdfium_c.FPDFText_GetFillColor
                if mode in _FILLED
                else pdfium_c.FPDFText_GetStrokeColor
            )
            if not read(raw, index, *refs):
                continue  # a colour PDFium cannot give: seen
            if rgba[3].value > UNSEEN_ALPHA:
                colour = (rgba[0].value, rgba[1].value, rgba[2].value)
        # An invisible glyph on any image is seen (an OCR layer over its scan).
        under = drawing.under(obj, box, images=colour is not None)
        if under is None:
            continue  # on a shading or an image of several colours: seen
        # Invisible letters are seen only on a scan; coloured ones where they stand out,
        # and are not painted over.
        if colour is None or faint(colour, under) or drawing.covered(obj, box, under):
            out[k] = ROOM
    return out
