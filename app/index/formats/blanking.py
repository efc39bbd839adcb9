"""Text drawn not to be seen, read as spaces where the text beside it is seen.

A letter nobody sees in place of each space ("Whenxwexspeak"), or junk words so drawn
between a copy's words, hide a copy from a plagiarism checker. The readers mark what
their format draws unseen (a white letter, one a point high; formats/unseen.py for a
PDF's glyphs, office.py for DOCX runs and ODT spans); here a run of it becomes a space
(or nothing, where it takes no room) where the nearest text on its line, either side,
is seen. A line that is all unseen is
left as it is: white text on a dark fill that the reader cannot judge (a table style's,
a page's) and an OCR layer are seen, and what tells a hidden run is that the text beside
it on its line was drawn to be seen.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

RGB = tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
# Text whose colour is within this of the colour under it, in each of red, green and
# blue (0-255), is not seen: white on white, #FAFAFA on white, black on black. Light
# grey on white (#E6E6E6) and black on navy are seen, if faintly.
FAINT = 24
# Letters of an office format (DOCX, ODT, RTF) in a font of at most this many points, or
# scaled to at most this share of their width, are not seen; spaced apart by ROOM_POINTS
# or more, they take room all the same.
UNSEEN_POINTS = 1.0
UNSEEN_SCALE = 0.1
ROOM_POINTS = 2.0

# How a character is drawn: seen; unseen, taking the room of a letter (white, invisible:
# a reader sees a gap, so the run reads as a space); unseen and taking no room (a point
# high, squeezed to a sliver: a reader sees the letters beside it touch, so it reads as
# nothing, and a letter slipped into a word does not split it).
SEEN, ROOM, NO_ROOM = 0, 1, 2
# Characters no text a reader gives keeps: controls, among them the marks below (a text
# that held them would mark runs of its own).
CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
# What the DOCX and ODT readers put around unseen text (OPEN[kind] ... CLOSE):
# characters XML 1.0 cannot hold, so no file's text can hold them.
OPEN = {ROOM: "\x01", NO_ROOM: "\x03"}
CLOSE = "\x02"
_MARKS = {"\x01": ROOM, "\x03": NO_ROOM}


def faint(colour: RGB, under: RGB = WHITE) -> bool:
    """Whether text in colour on under is too close to it to be seen (FAINT)."""
    return max(abs(x - y) for x, y in zip(colour, under, strict=True)) <= FAINT


def blend(top: RGB, under: RGB, share: float) -> RGB:
    """top laid over under at this share (0-1) of its strength: a translucent fill, a
    shading pattern's ink over its ground."""
    r, g, b = (round(share * t + (1 - share) * u) for t, u in zip(top, under, strict=True))
    return (r, g, b)


def hex_colour(value: str | None) -> RGB | None:
    """An RRGGBB colour ("#" optional) as numbers; None if it is not one."""
    value = (value or "").strip().lstrip("#")
    if len(value) != 6:
        return None
    try:
        n = int(value, 16)
    except ValueError:
        return None
    return (n >> 16, (n >> 8) & 255, n & 255)


def _blank(c: str) -> bool:
    return c.isspace() and c not in "\r\n"


def hidden_runs(text: str, hidden: Sequence[int]) -> list[tuple[int, int, str]]:
    """The (start, end, reading) of each run of unseen characters of text (hidden[k]
    ROOM or NO_ROOM, with the blanks between them) whose nearest characters on its line,
    either side, are seen where there are any, and there is one at least: its reading a
    space if a character of it takes room, else nothing."""
    runs = []
    k, n = 0, len(text)
    while k < n:
        if not hidden[k] or _blank(text[k]):
            k += 1
            continue
        end = k
        while end < n and (hidden[end] or _blank(text[end])):
            end += 1
        while end > k and _blank(text[end - 1]):
            end -= 1
        if _seen_beside(text, hidden, k, end):
            room = any(hidden[j] == ROOM for j in range(k, end))
            runs.append((k, end, " " if room else ""))
        k = max(end, k + 1)
    return runs


def _seen_beside(text: str, hidden: Sequence[int], start: int, end: int) -> bool:
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


def resolved(marked: str) -> str:
    """A reader's text with its OPEN ... CLOSE marks resolved: each hidden run
    (hidden_runs) read as it reads, other marked text as it is, the marks gone."""
    if not any(mark in marked for mark in _MARKS):
        return marked.replace(CLOSE, "")
    chars: list[str] = []
    hidden: list[int] = []
    kinds: list[int] = []
    for c in marked:
        if c in _MARKS:
            kinds.append(_MARKS[c])
        elif c == CLOSE:
            if kinds:
                kinds.pop()
        else:
            chars.append(c)
            hidden.append(kinds[-1] if kinds else SEEN)
    text = "".join(chars)
    out, at = [], 0
    for start, end, reading in hidden_runs(text, hidden):
        out += [text[at:start], reading]
        at = end
    out.append(text[at:])
    return "".join(out)
