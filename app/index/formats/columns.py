"""Columns that PDFium reads across: a page whose two columns a PDF writes row by row.

PDFium reads a page's text in the order the file draws it, and joins pieces that share
a baseline into one line. A two-column page drawn column by column reads well; one drawn
row by row (some typesetters, tables of two long cells) reads as lines that run across
the gutter: the left column's line, then the right one's, and so on. Such a line's
pieces lie on either side of a wide gap, which PDFium's text rectangles show.

`in_columns` reads those pages as a person does: where at least MIN_ROWS lines are cut
by one gutter, and the pieces on both sides are prose (lines of MIN_CHARS characters or
more, not a table's short cells), each run of lines between lines that cross the gutter
is read left column first, then the right one (right first on a page written mostly
in a right-to-left script: Arabic, Hebrew, Syriac, Thaana, N'Ko), unless the run is one
paragraph flowing on both sides of a box (full lines of it just above and below, at its
own spacing), which is read row by row. A page without such lines keeps PDFium's order
untouched, and a line's wide gaps that are no gutter (a
narrow justified column's spaces) leave it one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

# A gap between two of a line's text rectangles at least this wide (points), and this
# many times the line's height, is a gutter, not a space between words.
GUTTER_POINTS = 12.0
GUTTER_HEIGHTS = 1.2
# Lines cut by one gutter a page needs for its columns to be read as columns.
MIN_ROWS = 3
# The median length of the pieces on each side (characters): prose, not short cells.
MIN_CHARS = 20
# Cut lines with prose across the gutter just before and after them, each at most this
# many times the cut lines' own spacing away, are one paragraph wrapped around a box on
# both sides (read row by row, as PDFium gives them), not columns: a heading or a page's
# foot across the gutter stands further off.
WRAP_LEADING = 1.5
# ... and so are at most this many cut lines at the top of the page with such a line
# just after them (a box at the top of the page's first paragraph).
WRAP_ROWS = 12


@dataclass(frozen=True)
class Piece:
    """Part of a line: its text, its horizontal extent (points) and its height's middle
    (a page share, as pdf.Page.heights)."""

    text: str
    left: float
    right: float
    height: float


def split(rects: list[tuple[float, float, float, float]]) -> list[int]:
    """Where a line's rectangles (left, bottom, right, top, in order) break at a gutter:
    the indexes of the rectangles that start a new piece."""
    out = []
    for i in range(1, len(rects)):
        gap = rects[i][0] - rects[i - 1][2]
        tall = max(rects[i][3] - rects[i][1], rects[i - 1][3] - rects[i - 1][1])
        if gap >= GUTTER_POINTS and gap >= GUTTER_HEIGHTS * tall:
            out.append(i)
    return out


def _median(values: list[int]) -> float:
    ordered = sorted(values)
    return float(ordered[len(ordered) // 2]) if ordered else 0.0


def in_columns(lines: list[list[Piece]]) -> list[Piece]:
    """A page's pieces in reading order; lines: each line's pieces, in PDFium's order."""
    cut = [line for line in lines if len(line) == 2]
    flat = [_joined(line) for line in lines]
    if len(cut) < MIN_ROWS:
        return flat
    # The gutter: the space every cut line leaves between its two pieces.
    low = max(line[0].right for line in cut)
    high = min(line[1].left for line in cut)
    if low >= high:
        return flat
    if (
        min(
            _median([len(line[0].text) for line in cut]),
            _median([len(line[1].text) for line in cut]),
        )
        < MIN_CHARS
    ):
        return flat
    rtl = _right_to_left(flat)
    sides = [[_side(piece, low, high) for piece in line] for line in lines]
    across = [k for k, at in enumerate(sides) if "across" in at]
    out: list[Piece] = []
    for first, end in _runs(len(lines), across):
        if first > 0:
            out.append(flat[first - 1])  # the line across before the run
        if _wrapped(flat, first, end):
            out += flat[first:end]  # one paragraph around a box: read row by row
            continue
        left: list[Piece] = []
        right: list[Piece] = []
        for line, at in zip(lines[first:end], sides[first:end], strict=True):
            # Gaps within a column (a justified line's wide spaces) join again.
            for column, side in ((left, "left"), (right, "right")):
                pieces = [p for p, where in zip(line, at, strict=True) if where == side]
                if pieces:
                    column.append(_joined(pieces))
        out += _in_order(left, right, rtl)
    return out


def _runs(n: int, across: list[int]) -> list[tuple[int, int]]:
    """The runs of lines between the lines across the gutter: [first, end) each, a run
    after each line across (empty where two touch), the last one up to n."""
    starts = [0, *(k + 1 for k in across)]
    ends = [*across, n]
    return list(zip(starts, ends, strict=True))


def _wrapped(flat: list[Piece], first: int, end: int) -> bool:
    """Whether the cut lines [first, end) are one paragraph flowing on both sides of a
    box (a picture or frame with text wrapped around both its sides), not two columns:
    prose lines across the gutter just before and just after them, each as near as the
    run's own lines are to each other (WRAP_LEADING times their median spacing)."""
    if end >= len(flat) or end - first < 1 or (first == 0 and end > WRAP_ROWS):
        return False
    # A box at the top of the page's first paragraph has no line above it: a run that
    # short, with the paragraph going on across below it, is taken for one too.
    start = max(first - 1, 0)
    heights = [p.height for p in flat[start : end + 1]]
    run = heights[first - start : -1]
    inner = sorted(abs(a - b) for a, b in pairwise(run)) or [abs(heights[-2] - heights[-1])]
    step = inner[len(inner) // 2]
    if step <= 0:
        return False
    near = abs(heights[-2] - heights[-1]) <= WRAP_LEADING * step
    if first > 0:
        near = near and abs(heights[0] - heights[1]) <= WRAP_LEADING * step
    around = [end] if first == 0 else [first - 1, end]  # the lines across it
    return near and all(len(flat[k].text) >= MIN_CHARS for k in around)


def _joined(pieces: list[Piece]) -> Piece:
    """A line's pieces as one (a line that no gutter cuts: its gaps were wide spaces)."""
    if len(pieces) == 1:
        return pieces[0]
    text = " ".join(p.text for p in pieces)
    return Piece(text, pieces[0].left, pieces[-1].right, pieces[0].height)


def _in_order(left: list[Piece], right: list[Piece], rtl: bool) -> list[Piece]:
    """A run's two columns as they are read: the left first, or the right in a
    right-to-left script."""
    return right + left if rtl else left + right


def _right_to_left(pieces: list[Piece]) -> bool:
    """Whether most of the letters are of a right-to-left script, whose columns are read
    from the right."""
    rtl = latin = 0
    for piece in pieces:
        for c in piece.text:
            if "\u0590" <= c <= "\u08ff" or "\ufb1d" <= c <= "\ufefc":
                rtl += 1
            elif c.isalpha():
                latin += 1
    return rtl > latin


def _side(piece: Piece, low: float, high: float) -> str:
    if piece.right <= high:
        return "left"
    if piece.left >= low:
        return "right"
    return "across"
