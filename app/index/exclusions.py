"""What a containment query may set aside: quotations, a bibliography, short matches.

A reviewer does not count a passage the writer quoted, nor a shared reference list,
nor a phrase of a few words everyone writes. The detection is pure functions over
the query's text that answer code-point spans (`quote_spans`, `bibliography_span`,
`html_quote_spans`); `Exclusions` applies them to aligned passages in one place
(`trim`, called by the containment query right after alignment): a passage loses
its words inside an excluded span, splits around it, and a piece shorter than
`min_words` is set aside as short. What is left is what counts, so containment,
coverage, the threshold and the limit all see only it (the share's denominator stays
the whole text: excluded words are text that was not copied in a way that counts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from app.index.passages import merge

if TYPE_CHECKING:
    from app.index.passages import Layout, Passage

Reason = Literal["quote", "bibliography", "short"]

# A quotation longer than this (code points) is more likely a mark left open.
MAX_QUOTE = 4000
# Where a reference list's heading may start: past this share of the text, since it
# closes the text (a "References" line near the top is a heading of something else).
BIBLIOGRAPHY_FROM = 1 / 3


@dataclass(frozen=True)
class Span:
    """Code points [start, end) of the query text set aside, and why."""

    start: int
    end: int
    reason: Reason


# Marks that only open or only close: their pairs, each closer searched for from its
# opener on. German and Polish low-high quotes; guillemets both ways round (French
# and German use), double and single; ``...'' from plain-text news.
_PAIRS = {
    "\u201c": "\u201d",  # “ ”
    "\u201e": "\u201c\u201d",  # „ “ or „ ”
    "\u00ab": "\u00bb",  # « »
    "\u00bb": "\u00ab",  # » «
    "\u2039": "\u203a",  # single guillemets, both ways round
    "\u203a": "\u2039",
    "``": "''",
}
_OPENERS = re.compile("``|[\u201c\u201e\u00ab\u00bb\u2039\u203a]")
# Straight and curly single marks and straight double ones serve both ends (and the
# single ones are apostrophes too): an opener follows a space or an opening bracket
# and precedes a word character; a closer follows a word character or punctuation and
# precedes a space, punctuation or the end; a mark between two letters (an apostrophe)
# is neither.
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
        re.compile(r"(?<=[\w.,;:!?])'" + _AFTER_CLOSE, re.M),
    ),
    (
        re.compile(_BEFORE_OPEN + "\u2018(?=\\w)", re.M),
        re.compile("(?<=[\\w.,;:!?])\u2019" + _AFTER_CLOSE, re.M),
    ),
]
_PARAGRAPH = re.compile(r"\n\s*\n")
_WORD = re.compile(r"\w")


def _paired(text: str) -> list[tuple[int, int]]:
    """Spans of the one-way marks: each opener to the nearest closer of its kind after
    it, within MAX_QUOTE; a quotation inside another is part of it."""
    out: list[tuple[int, int]] = []
    pos = 0
    while m := _OPENERS.search(text, pos):
        mark = m.group()
        closers = _PAIRS[mark]
        if mark == "``":
            end = text.find("''", m.end(), m.end() + MAX_QUOTE)
            close_len = 2
        else:
            window = text[m.end() : m.end() + MAX_QUOTE]
            hits = [i for i in (window.find(c) for c in closers) if i >= 0]
            end = m.end() + min(hits) if hits else -1
            close_len = 1
        if end < 0 or not _WORD.search(text, m.end(), end):
            pos = m.end()
            continue
        out.append((m.start(), end + close_len))
        pos = end + close_len
    return out


def _ambiguous(text: str) -> list[tuple[int, int]]:
    """Spans of straight double and single marks: within a paragraph, an opener to the
    first closer after it."""
    out: list[tuple[int, int]] = []
    for opener, closer in _AMBIGUOUS:
        for para in _paragraphs(text):
            a, b = para
            pos = a
            while (o := opener.search(text, pos, b)) is not None:
                c = closer.search(text, o.end(), min(b, o.end() + MAX_QUOTE))
                if c is None:
                    break
                if _WORD.search(text, o.end(), c.start()):
                    out.append((o.start(), c.end()))
                pos = c.end()
    return out


def _paragraphs(text: str) -> list[tuple[int, int]]:
    out, start = [], 0
    for m in _PARAGRAPH.finditer(text):
        out.append((start, m.start()))
        start = m.end()
    out.append((start, len(text)))
    return out


def quote_spans(text: str) -> list[Span]:
    """The text's quotations, their marks included, in order."""
    return [Span(a, b, "quote") for a, b in merge(_paired(text) + _ambiguous(text))]


_HEADING = re.compile(
    r"^[ \t]*(?:[0-9IVX]+\.?[ \t]+)?(?:references|reference list|bibliography|works cited|"
    r"literature cited|cited literature|sources|literaturverzeichnis|literatur|"
    r"quellenverzeichnis|quellen|références|références bibliographiques|bibliographie|"
    r"referencias|bibliografía|bibliografia|riferimenti bibliografici|referências|"
    r"literatuurlijst|litteratur|källor)[ \t]*:?[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)


def bibliography_span(text: str) -> Span | None:
    """The trailing reference list: from the last line that is only a heading such as
    References, Bibliography, Works Cited, Literaturverzeichnis or Références (in the
    last two thirds of the text) to the end; None when there is none."""
    last = None
    for m in _HEADING.finditer(text):
        last = m
    if last is None or last.start() < BIBLIOGRAPHY_FROM * len(text):
        return None
    if not _WORD.search(text, last.end()):
        return None  # a heading with nothing under it
    return Span(last.start() + len(last.group()) - len(last.group().lstrip()), len(text),
                "bibliography")  # fmt: skip


def html_quote_spans(quoted: list[str], text: str) -> list[Span]:
    """Where the texts of a page's <blockquote> and <q> elements (`quoted`) are in the
    page's extracted text: each found as its words in order, any spacing or
    punctuation between them."""
    spans: list[tuple[int, int]] = []
    for q in quoted:
        words = re.findall(r"\w+", q)
        if not words:
            continue
        pattern = r"\W+".join(re.escape(w) for w in words)
        spans.extend((m.start(), m.end()) for m in re.finditer(pattern, text))
    return [Span(a, b, "quote") for a, b in merge(spans)]


@dataclass
class Exclusions:
    """The spans a containment query sets aside, and the least passage length that
    counts; collects the passages trimmed away as short, for the answer."""

    spans: list[Span]
    min_words: int = 0
    short: set[tuple[int, int]] = field(default_factory=set)

    def mask(self, layout: Layout) -> np.ndarray:
        """Per query word: whether it lies (even in part) in an excluded span."""
        starts, ends = layout.starts, layout.ends
        out = np.zeros(len(starts), dtype=bool)
        for s in self.spans:
            a = int(np.searchsorted(ends, s.start, side="right"))
            b = int(np.searchsorted(starts, s.end, side="left"))
            out[a:b] = True
        return out

    def trim(
        self, passages: list[Passage], query: Layout, source: Layout, least: int
    ) -> list[Passage]:
        """The passages without their excluded words: split around them (the source side
        cut at the same distance from each end, which is exact unless words were added
        or removed there); pieces under `least` words are dropped as alignment drops
        them, pieces under min_words are set aside as short."""
        from app.index.passages import Passage

        excluded = self.mask(query) if self.spans else None
        out: list[Passage] = []
        for p in passages:
            qa, qb = p.query_words
            sa, sb = p.source_words
            runs = [(qa, qb)] if excluded is None else _runs(~excluded[qa:qb], qa)
            for ra, rb in runs:
                if rb - ra < least:
                    continue
                if rb - ra < self.min_words:
                    self.short.add((int(query.starts[ra]), int(query.ends[rb - 1])))
                    continue
                ta = min(sb - 1, sa + (ra - qa))
                tb = max(ta + 1, sb - (qb - rb))
                out.append(
                    Passage(
                        (ra, rb),
                        (ta, tb),
                        int(query.starts[ra]),
                        int(query.ends[rb - 1]),
                        int(source.starts[ta]),
                        int(source.ends[tb - 1]),
                    )
                )
        return out

    def listed(self) -> list[Span]:
        """Every span set aside, in text order: the detected ones and the short passages."""
        short = [Span(a, b, "short") for a, b in merge(list(self.short))]
        return sorted([*self.spans, *short], key=lambda s: (s.start, s.end))


def _runs(keep: np.ndarray, offset: int) -> list[tuple[int, int]]:
    """[start, end) of each run of True in keep, shifted by offset."""
    if not len(keep):
        return []
    edges = np.flatnonzero(np.diff(np.concatenate(([0], keep.astype(np.int8), [0]))))
    return [
        (offset + int(a), offset + int(b)) for a, b in zip(edges[0::2], edges[1::2], strict=True)
    ]


def detect(
    text: str, quotes: bool, bibliography: bool, quoted_html: list[str] | None = None
) -> list[Span]:
    """The spans of text to set aside for these options: quotations (and the page's
    <blockquote>/<q> texts, for a page), and the trailing bibliography."""
    spans: list[Span] = []
    if quotes:
        spans.extend(quote_spans(text))
        if quoted_html:
            spans.extend(html_quote_spans(quoted_html, text))
    bib = bibliography_span(text) if bibliography else None
    if bib is not None:
        # Quotations inside the bibliography are part of it (titles are often quoted).
        spans = [s for s in spans if s.end <= bib.start]
        spans.append(bib)
    if quotes:
        quoted = merge([(s.start, s.end) for s in spans if s.reason == "quote"])
        spans = [Span(a, b, "quote") for a, b in quoted] + [s for s in spans if s.reason != "quote"]
    return sorted(spans, key=lambda s: (s.start, s.end))
