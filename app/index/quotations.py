"""A text's quotations, found as code-point spans: by their marks in plain text
(`quote_spans`: the marks of many languages, straight ones only where they clearly
quote, a mark left open taking nothing), and a page's <blockquote> and <q> texts placed
in its extracted text (`html_quote_spans`)."""

from __future__ import annotations

import bisect
import re

from app.index.passages import merge
from app.index.spans import Span

# A quotation longer than this (code points) is more likely a mark left open.
MAX_QUOTE = 4000

# Marks that only open or only close: their pairs, each closer searched for from its
# opener on. German and Polish low-high quotes (German and Czech single ones too);
# guillemets both ways round (French and German use), double and single; ``...'' from
# plain-text news; the corner brackets of Japanese and traditional Chinese, single and
# double (nested).
_PAIRS = {
    "\u201c": "\u201d",  # “ ”
    "\u201e": "\u201c\u201d",  # „ “ or „ ”
    "\u201a": "\u2018\u2019",  # single low-high (German, Czech; Polish, Dutch): _SINGLE_CLOSE
    "\u00ab": "\u00bb",  # « »
    "\u00bb": "\u00ab",  # » «
    "\u2039": "\u203a",  # single guillemets, both ways round
    "\u203a": "\u2039",
    "\u300c": "\u300d",  # 「 」
    "\u300e": "\u300f",  # 『 』
    "``": "''",
}
_OPENERS = re.compile("``|[\u201c\u201e\u201a\u00ab\u00bb\u2039\u203a\u300c\u300e]")
# Straight and curly single marks and straight double ones serve both ends (and the
# single ones are apostrophes too): an opener follows a space or an opening bracket
# and precedes a word character; a closer follows a word character, punctuation, a
# closing bracket or a hyphen ('posix-') and precedes a space, punctuation or the end;
# a mark between two letters (an apostrophe) is neither.
_DASHES = "\u2014\u2013"
_BEFORE_OPEN = rf"(?:(?<=^)|(?<=[\s(\[{{{_DASHES}-]))"
_AFTER_CLOSE = rf"(?=[\s.,;:!?)\]}}{_DASHES}-]|$)"
_AMBIGUOUS = [
    (
        re.compile(_BEFORE_OPEN + r'"(?=[^\s"])', re.M),
        re.compile(r'(?<=[^\s"])"' + _AFTER_CLOSE, re.M),
    ),
    (
        re.compile(_BEFORE_OPEN + r"'(?=\w)", re.M),
        re.compile(r"(?<=[\w.,;:!?)\]%/*-])'" + _AFTER_CLOSE, re.M),
    ),
    (
        re.compile(_BEFORE_OPEN + "\u2018(?=\\w)", re.M),
        re.compile("(?<=[\\w.,;:!?)\\]%/*-])\u2019" + _AFTER_CLOSE, re.M),
    ),
    # Marks that open and close alike: Swedish and Finnish ”…”, full-width U+FF02,
    # Hebrew gershayim ״…״ (inside a word, an acronym's mark: never an opener).
    *(
        (
            re.compile(_BEFORE_OPEN + f"{m}(?=[^\\s{m}])", re.M),
            re.compile(f"(?<=[^\\s{m}]){m}" + _AFTER_CLOSE, re.M),
        )
        for m in ("\u201d", "\uff02", "\u05f4")
    ),
]
_PARAGRAPH = re.compile(r"\n\s*\n")
_LINE_END = re.compile(r"\n(?:[ \t\u00a0]*\n)*")  # a line end, with the blank lines after it
_INDENT = re.compile(r"[ \t\u00a0\u3000]*")
_WORD = re.compile(r"\w")


def _paired(text: str, breaks: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans of the one-way marks: each opener to the closer of its kind that balances
    it (a quotation nested in marks of the same kind is part of it), within MAX_QUOTE;
    where none balances it, to the nearest closer (breaks: the text's, _breaks)."""
    out: list[tuple[int, int]] = []
    pos = 0
    ahead = _Ahead(text)
    while m := _OPENERS.search(text, pos):
        word = ahead.word(m.end())
        if word >= m.end() + MAX_QUOTE:
            # No quotation from here to MAX_QUOTE before the next word can hold one: a
            # run of marks without words is passed over at once, not mark by mark.
            pos = max(m.end(), word - MAX_QUOTE - 2)
            continue
        mark = m.group()
        if mark == "``":
            end = text.find("''", m.end(), m.end() + MAX_QUOTE)
            close_len = 2
        else:
            end = _balanced(text, m.end(), mark, ahead, breaks)
            close_len = 1
        if end < 0 or word >= end or not _goes_on(text, mark, m.end(), end, breaks):
            pos = m.end()
            continue
        out.append((m.start(), end + close_len))
        pos = end + close_len
    return out


def _goes_on(text: str, mark: str, start: int, end: int, breaks: re.Pattern[str]) -> bool:
    """Whether a quotation opened by `mark` may run from start to end: within a paragraph,
    or across paragraphs each of which opens with the mark again (after its indent), as
    typesetting continues a quotation; an opener left unclosed would otherwise take the
    paragraphs after it. In hard-wrapped text (a PDF's, whose blank lines are its pages)
    it may also cross one blank line that is a page break: in mid-sentence ("... Passwort
    zu", then "wechseln ..."), or after a sentence when the closer comes in the paragraph
    right after it with no opener of its kind before it there (a closer with nothing
    else to close)."""
    crossed = False
    for brk in breaks.finditer(text, start, end):
        if text.startswith(mark, _INDENT.match(text, brk.end()).end()):  # type: ignore[union-attr]
            continue
        if (
            breaks is _PARAGRAPH
            and not crossed
            and (_mid_sentence(text, brk.start()) or _closed_after(text, mark, brk.end(), end))
        ):
            crossed = True
            continue
        return False
    return True


def _closed_after(text: str, mark: str, at: int, end: int) -> bool:
    """Whether the closer at `end` is in the paragraph that starts at `at`, with no opener
    `mark` before it there."""
    return _PARAGRAPH.search(text, at, end) is None and mark not in text[at:end]


def _mid_sentence(text: str, at: int) -> bool:
    """Whether the text before `at` stops in the middle of a sentence: its last character
    is a letter, a digit, a comma or a dash (a paragraph ends with a stop, a colon, a
    closing mark)."""
    before = text[max(0, at - 200) : at].rstrip()
    return bool(before) and (before[-1].isalnum() or before[-1] in ",-\u2013\u2014")


def _breaks(text: str) -> re.Pattern[str]:
    """What ends a paragraph in this text: a line end where its lines are paragraphs (a
    DOCX or ODT: longer than a wrapped line on average, WRAPPED_LINE, or most of them ending
    a sentence, PARAGRAPH_ENDS), else a blank line (hard-wrapped text: a PDF's lines)."""
    lines = [line for line in text.split("\n") if line.strip()]
    if len(lines) < 2:
        return _PARAGRAPH
    long = sum(map(len, lines)) > WRAPPED_LINE * len(lines)
    ended = sum(line.rstrip()[-1] in _ENDS_SENTENCE for line in lines) >= PARAGRAPH_ENDS * len(
        lines
    )
    return _LINE_END if long or ended else _PARAGRAPH


_ENDS_SENTENCE = ".!?:;\"'\u201d\u2019\u00bb\u00ab)]\u3002\uff01\uff1f"
# Share of lines ending a sentence past which they are paragraphs, not wrapped lines.
PARAGRAPH_ENDS = 0.6
# Characters a line of hard-wrapped text holds at most, on average (80 is usual).
WRAPPED_LINE = 120


class _Ahead:
    """The next place of each mark at or after a position, found once per place: the
    openers are met in text order, so each search goes on where the last one stopped
    (a text of a million marks costs a million finds, not a million scans)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: dict[str, int] = {}

    def next(self, mark: str, at: int) -> int:
        """Where `mark` next is at or after `at`; len(text) if nowhere."""
        hit = self.found.get(mark, -1)
        if hit < at:
            hit = self.text.find(mark, at)
            hit = len(self.text) if hit < 0 else hit
            self.found[mark] = hit
        return hit

    def word(self, at: int) -> int:
        """Where the next word character is at or after `at`; len(text) if nowhere (a
        text of marks without words: each opener's quotation holds none, found once)."""
        hit = self.found.get("", -1)
        if hit < at:
            found = _WORD.search(self.text, at)
            hit = len(self.text) if found is None else found.start()
            self.found[""] = hit
        return hit


# How many marks after an opener are weighed to balance it, when another opener of its
# kind comes before its nearest closer: nested quotations are a level or two deep, and
# a hostile text of marks must not cost a long scan per mark.
BALANCE_MARKS = 16
_MARKS = {mark: re.compile(f"[{re.escape(mark + closers)}]") for mark, closers in _PAIRS.items()
          if mark != "``"}  # fmt: skip


# A single low-high quotation's closer: a single high mark that no letter or digit
# follows (one that does is an apostrophe: geht\u2019s).
_SINGLE_CLOSE = re.compile("[\u2018\u2019](?!\\w)")


def _balanced(text: str, at: int, opener: str, ahead: _Ahead, breaks: re.Pattern[str]) -> int:
    """Where the closer is that balances an opener ending at `at` (within MAX_QUOTE and
    BALANCE_MARKS marks); else the nearest closer within MAX_QUOTE unless another opener
    of its kind comes before it in the opener's paragraph; else -1."""
    if opener == "\u201a":
        # Its closers are apostrophes too (and the mark a comma in mojibake): the nearest
        # in a closing place, within the paragraph (_goes_on), never nested.
        close = _SINGLE_CLOSE.search(text, at, min(len(text), at + MAX_QUOTE))
        return -1 if close is None else close.start()
    closers = _PAIRS[opener]
    nearest = min(ahead.next(c, at) for c in closers)
    if nearest >= at + MAX_QUOTE or nearest >= len(text):
        return -1
    if ahead.next(opener, at) > nearest:
        return nearest  # nothing nested: the nearest closer is the one
    depth = 1
    for n, m in enumerate(_MARKS[opener].finditer(text, at, at + MAX_QUOTE)):
        if n == BALANCE_MARKS:
            break
        if m.group() in closers:
            depth -= 1
            if depth == 0:
                return m.start()
        else:
            depth += 1
    # Unbalanced. An opener of its kind again before its paragraph ends means this one
    # was stray: taking everything up to the later quotation's closer set aside the words
    # between (a copy, after a stray mark), so it takes nothing and the later one pairs.
    # (One in a later paragraph may go on a quotation of several, or nest in it.)
    brk = breaks.search(text, at, nearest)
    if ahead.next(opener, at) < (nearest if brk is None else brk.start()):
        return -1
    return nearest


def _ambiguous(text: str, breaks: re.Pattern[str]) -> list[tuple[int, int]]:
    """Spans of straight double and single marks: within a paragraph (breaks: the text's,
    _breaks), an opener to the first closer after it, unless another opener comes first
    (then the first one was an apostrophe or left open, and the later one is tried)."""
    out: list[tuple[int, int]] = []
    paragraphs = _paragraphs(text, breaks)
    for opener, closer in _AMBIGUOUS:
        for para in paragraphs:
            a, b = para
            pos = a
            while (o := opener.search(text, pos, b)) is not None:
                c = closer.search(text, o.end(), min(b, o.end() + MAX_QUOTE))
                if c is None:
                    break
                # The closer pairs with the last opener before it (the others were
                # apostrophes or left open): found in one pass, then on past the closer.
                for later in opener.finditer(text, o.end(), c.start()):
                    o = later
                if _WORD.search(text, o.end(), c.start()):
                    out.append((o.start(), c.end()))
                pos = c.end()
    return out


def _paragraphs(text: str, breaks: re.Pattern[str]) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in breaks.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return out


def quote_spans(text: str) -> list[Span]:
    """The text's quotations, their marks included, in order."""
    breaks = _breaks(text)
    return [Span(a, b, "quote") for a, b in merge(_paired(text, breaks) + _ambiguous(text, breaks))]


# Places of a quotation's rarest word tried, after the quotation before it and then
# before: a bound on a page of thousands of quotations its text does not hold.
QUOTE_LOOKUPS = 64
_WORDS = re.compile(r"\w+")


def html_quote_spans(quoted: list[str], text: str) -> list[Span]:
    """Where the texts of a page's <blockquote> and <q> elements (`quoted`, in page order)
    are in the page's extracted text: each as its words in a row, any spacing or
    punctuation between them; the first such place after the quotation found before it,
    else the first before that.

    The text's words are indexed once and a quotation is looked up at the places of its
    rarest word (QUOTE_LOOKUPS of them at most): a page of thousands of quotations costs
    about its length, where a search of the whole text per quotation took 22 s for
    16,000 <q>s."""
    tokens = list(_WORDS.finditer(text))
    words = [m.group() for m in tokens]
    places: dict[str, list[int]] = {}
    for i, w in enumerate(words):
        places.setdefault(w, []).append(i)
    spans: list[tuple[int, int]] = []
    after = 0  # the first word past the quotation found last
    for q in quoted:
        sought = _WORDS.findall(q)
        if not sought or any(w not in places for w in sought):
            continue
        k = min(range(len(sought)), key=lambda j: len(places[sought[j]]))
        start = _placed(words, places[sought[k]], sought, k, after)
        if start is not None:
            spans.append((tokens[start].start(), tokens[start + len(sought) - 1].end()))
            after = start + len(sought)
    return [Span(a, b, "quote") for a, b in merge(spans)]


def _placed(
    words: list[str], places: list[int], sought: list[str], k: int, after: int
) -> int | None:
    """The first word i (from after on, else from the start) where sought begins, its k-th
    word at one of places (ascending); at most QUOTE_LOOKUPS of them tried each way."""
    first = bisect.bisect_left(places, after + k)
    for lo, hi in ((first, len(places)), (0, first)):
        for p in places[lo : min(hi, lo + QUOTE_LOOKUPS)]:
            i = p - k
            if i >= 0 and words[i : i + len(sought)] == sought:
                return i
    return None
