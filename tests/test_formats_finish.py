"""app.index.formats.finish: a reader's marked lines become the text the index takes."""

from __future__ import annotations

import pytest

from app.index.errors import FileError
from app.index.formats.blanking import CLOSE, OPEN, ROOM
from app.index.formats.finish import finished_text


def test_marked_lines_are_resolved_trimmed_and_an_empty_file_refused() -> None:
    """An unseen run between seen words reads as a space, each line loses its trailing
    blanks and the text its blank ends; a required text with no letter or digit is a
    FileError naming the kind, and an optional one is empty."""
    marked = f"\n  When{OPEN[ROOM]}x{CLOSE}we  \nspeak\t \n\n"
    assert finished_text(marked, "RTF") == "When we\nspeak"
    with pytest.raises(FileError, match="the RTF has no text"):
        finished_text(" \n - \n", "RTF")
    assert finished_text(" \n - \n", "RTF", required=False) == "-"
