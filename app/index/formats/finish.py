"""What the office readers (DOCX, ODT, RTF) give as a file's text: their marked lines
resolved and tidied, and the line their notes are read under."""

from __future__ import annotations

from app.index.errors import FileError
from app.index.formats.blanking import resolved

# The line the notes of a document are read under, after the body: a heading that ends
# a reference list before it (bibliography.END_HEADINGS).
NOTES_HEADING = "Notes"


def finished_text(lines: str, kind: str, required: bool = True) -> str:
    """A reader's marked lines as its text: unseen runs resolved (formats/blanking.py),
    lines right-trimmed, the ends stripped; FileError when required and it has none."""
    lines = resolved(lines)
    text = "\n".join(line.rstrip() for line in lines.splitlines()).strip()
    if required and not any(c.isalnum() for c in text):
        raise FileError(f"the {kind} has no text")
    return text


def headed(notes: list[str]) -> list[str]:
    """The notes' texts under NOTES_HEADING; none when no note has text (an empty
    unseen run's marks are no text)."""
    return [NOTES_HEADING, *notes] if any(resolved(n).strip() for n in notes) else []
