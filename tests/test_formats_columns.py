"""app/index/formats/columns.py: which lines a gutter cuts, and the order the pieces are
read in, on pieces written by hand (no PDF needed)."""

from __future__ import annotations

from app.index.formats.columns import Piece, in_columns, split


def _rows(left: list[str], right: list[str]) -> list[list[Piece]]:
    """Rows of a two-column page as PDFium joins them: each row's left and right piece."""
    return [
        [Piece(a, 72.0, 250.0, 0.9 - i * 0.02), Piece(b, 320.0, 500.0, 0.9 - i * 0.02)]
        for i, (a, b) in enumerate(zip(left, right, strict=True))
    ]


def test_a_gutter_is_a_gap_wider_than_a_word_space() -> None:
    """Rectangles 20 points apart on a 10-point line break at a gutter; 3 apart do not."""
    assert split([(72, 700, 200, 710), (220, 700, 400, 710)]) == [1]
    assert split([(72, 700, 200, 710), (203, 700, 400, 710)]) == []


def test_left_to_right_columns_read_left_first_and_right_to_left_ones_right_first() -> None:
    """Rows of prose read as the left column then the right one; Arabic rows read right
    column first, as Arabic is written; short cells (a table) keep their rows."""
    left = [f"the left column's line number {i} of prose" for i in range(4)]
    right = [f"the right column's line number {i} of prose" for i in range(4)]
    read = [p.text for p in in_columns(_rows(left, right))]
    assert read == left + right
    column, left_word, right_word = (
        "\u0627\u0644\u0639\u0645\u0648\u062f",
        "\u0627\u0644\u0623\u064a\u0633\u0631",
        "\u0627\u0644\u0623\u064a\u0645\u0646",
    )
    prose = "\u0633\u0637\u0631 {} \u0645\u0646 \u0627\u0644\u0646\u062b\u0631"
    arabic_left = [f"{column} {left_word} " + prose.format(i) for i in range(4)]
    arabic_right = [f"{column} {right_word} " + prose.format(i) for i in range(4)]
    read = [p.text for p in in_columns(_rows(arabic_left, arabic_right))]
    assert read == arabic_right + arabic_left
    cells = [
        p.text
        for p in in_columns(_rows([f"key {i}" for i in range(4)], [f"v{i}" for i in range(4)]))
    ]
    assert cells == [f"key {i} v{i}" for i in range(4)]


def test_a_justified_lines_wide_spaces_leave_it_one_line() -> None:
    """A narrow justified column's lines, whose spaces are wide enough to look like
    gutters, each read as one line, not a word a line (an audit's Chromium PDF read 227
    of 322 lines as single words)."""
    words = [["Harbor", "harbor", "willow"], ["marble", "zephyr", "quiver"], ["glacial", "beacon."]]
    rows = [
        [Piece(w, 72.0 + 60 * j, 100.0 + 60 * j, 0.9 - i * 0.02) for j, w in enumerate(line)]
        for i, line in enumerate(words * 3)
    ]
    assert [p.text for p in in_columns(rows)] == [" ".join(line) for line in words * 3]


def _line(text: str, y: float, left: float = 72.0, right: float = 500.0) -> list[Piece]:
    return [Piece(text, left, right, y)]


def test_a_paragraph_flowing_on_both_sides_of_a_box_reads_row_by_row() -> None:
    """Lines cut by a box mid-paragraph, with the paragraph's full lines just above and
    below at its own spacing, read in PDFium's row order (an outside audit: read as two
    columns, its sentences came apart); so does a short run at the top of the page with
    a full line just below; two columns between a title and a page foot set further off,
    or with nothing across below them, still read column by column."""
    left = [f"left part of the wrapped line {i} and" for i in range(4)]
    right = [f"its right part after the box, line {i}" for i in range(4)]
    rows = _rows(left, right)  # at 0.90, 0.88, 0.86, 0.84
    above, below = (
        _line("the paragraph's full line above the box", 0.92),
        _line("the paragraph's full line below the box", 0.82),
    )
    joined = [f"{a} {b}" for a, b in zip(left, right, strict=True)]
    read = [p.text for p in in_columns([above, *rows, below])]
    assert read == [above[0].text, *joined, below[0].text]
    assert [p.text for p in in_columns([*rows, below])] == [*joined, below[0].text]
    title, foot = (
        _line("A title across both columns of the page", 0.97),
        _line("The page's foot across both of its columns", 0.75),
    )
    read = [p.text for p in in_columns([title, *rows, foot])]
    assert read == [title[0].text, *left, *right, foot[0].text]
    assert [p.text for p in in_columns([above, *rows])] == [above[0].text, *left, *right]
