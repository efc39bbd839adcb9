"""What a containment query may set aside: quotations and a bibliography, found as
code-point spans of the query's text.

A reviewer does not count a passage the writer quoted, nor a shared reference list,
nor a phrase of a few words everyone writes. The detection here is pure functions over
the query's text (`quote_spans`, `bibliography_spans`, `html_quote_spans`, `detect` for
a query's options); app.index.trimming applies the spans, and the least length that
counts (short matches), to aligned passages.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Literal

from app.index.passages import merge

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


# The headings of a reference list, lower-case, by language: one table, so a name is
# added in one place (docs/checks.md lists them).
REFERENCE_HEADINGS: dict[str, tuple[str, ...]] = {
    "en": ("references", "reference", "reference list", "list of references", "bibliography",
           "works cited", "works consulted", "sources cited", "literature cited",
           "cited literature", "sources", "literature", "references cited", "cited works",
           "selected bibliography", "select bibliography", "bibliography and further reading",
           "references and further reading", "notes and references", "references and notes"),
    "de": ("literaturverzeichnis", "literatur", "quellenverzeichnis", "quellen",
           "bibliografie", "referenzen", "literatur- und quellenverzeichnis",
           "quellen- und literaturverzeichnis", "literaturangaben", "quellenangaben"),
    "fr": ("références", "références bibliographiques", "bibliographie",
           "liste des références", "ouvrages cités", "références et bibliographie"),
    "es": ("referencias", "referencias bibliográficas", "bibliografía", "obras citadas",
           "fuentes"),
    "pt": ("referências", "referências bibliográficas", "bibliografia", "obras citadas",
           "fontes"),
    "it": ("riferimenti bibliografici", "bibliografia"),
    "nl": ("literatuurlijst", "literatuur", "bronnen", "bronvermelding", "referenties"),
    "sv/da/no": ("litteratur", "källor", "litteraturförteckning", "referenser",
                 "litteraturliste", "kilder"),
    "pl": ("bibliografia", "literatura", "źródła"),
    "ru": ("список литературы", "литература", "библиография",
           "список использованной литературы", "список источников"),
    "zh/ja": ("参考文献", "参考资料", "参考書目"),
    "ar": ("المراجع", "المصادر", "قائمة المراجع"),
    "tr": ("kaynakça", "kaynaklar"),
}  # fmt: skip
# What marks a line as a reference (after a bullet or dash): a number ("[3]", "3."); a name
# with initials (Smith J., Иванов И. И., H. Müller); a year with a comma or colon among its
# first four words (Smith, John. 2020; García Márquez, G.; الجاحظ، ... 1998); a year ending
# the line; or what prose does not hold (a DOI or URL, et al., a year in parentheses, pages).
_BULLET = re.compile(r"[ \t]*(?:[-\u2013\u2022*][ \t]+)?")
_NUMBERED = re.compile(r"\[\d{1,3}\]|\d{1,3}\.[ \t]")
_INITIALS = re.compile(r"(?:[^\W\d_]+,?[ \t]+)?[^\W\d_]\.[ \t]*(?:[^\W\d_]\.)?")
_YEAR = re.compile(r"(?<!\d)(?:1[5-9]|20)\d\d[a-z]?(?!\d)")
_YEAR_ENDS = re.compile(r"(?<!\d)(?:1[5-9]|20)\d\d[a-z]?[.)]?[ \t]*$")
_EARLY_COMMA = re.compile(r"^(?:\S+[ \t]+){0,3}?\S*[,:\u060c]")
_CITES = re.compile(
    r"\bdoi\b|https?://|www\.|\bet al\b|\((?:1[5-9]|20)\d\d[a-z]?\)|\bpp?\. ?\d", re.IGNORECASE
)


def _opens(line: str) -> bool:
    """Whether a line opens as a reference (after a bullet or dash): a number or a name
    with initials (see above)."""
    rest = line[_BULLET.match(line).end() :]  # type: ignore[union-attr]
    if _NUMBERED.match(rest):
        return True
    initials = _INITIALS.match(rest)
    return initials is not None and rest[:1].isupper() and initials.end() > 1


def _starts_item(line: str) -> bool:
    """Whether a line opens a new item: as a reference (_opens), or after a bullet or
    dash (which says nothing of whether the item cites)."""
    return _opens(line) or bool(line[: _BULLET.match(line).end()].strip())  # type: ignore[union-attr]


def _cites(line: str) -> bool:
    """Whether a line (or an entry's lines joined) reads as a reference (see above)."""
    rest = line[_BULLET.match(line).end() :]  # type: ignore[union-attr]
    if _opens(line) or _CITES.search(rest) or _YEAR_ENDS.search(rest):
        return True
    return bool(_YEAR.search(rest)) and _EARLY_COMMA.match(rest) is not None


_DOI = re.compile(r"10\.\d{4,}/")
_CLOSERS = "\"'\u201d\u2019)]"


def _ends_entry(line: str) -> bool:
    """Whether an entry's line is its last: it ends a sentence (closing marks after it
    aside) or with a DOI or URL (APA ends an entry with one, and sets no period after
    it). Only its last word is read, so a line of one long word costs its length."""
    words = line.rsplit(None, 1)
    last = words[-1] if words else ""
    if last.rstrip(_CLOSERS).endswith((".", "!", "?")):
        return True
    low = last.lower()
    return low.startswith(("http://", "https://", "doi:", "www.")) or bool(_DOI.match(low))


# A reference is a line or a few; an entry longer than this is prose.
REFERENCE_LINE = 400
# The headings of a section that may follow the reference list (APA puts appendices
# there): it ends the list.
END_HEADINGS: tuple[str, ...] = (
    "appendix", "appendices", "annex", "annexes", "annexe", "anhang", "anhänge",
    "apéndice", "apéndices", "anexo", "anexos", "appendice", "appendici", "allegato",
    "allegati", "bijlage", "bijlagen", "bilaga", "bilagor", "vedlegg", "bilag",
    "załącznik", "załączniki", "aneks", "приложение", "приложения", "附录", "附錄", "付録",
    "ملحق", "ملاحق", "ek", "ekler", "acknowledgements", "acknowledgments", "endnotes",
    "notes", "about the author", "author biography",
)  # fmt: skip


def _alternatives(names: object) -> str:
    """Names as one regex alternation, longest first (so "references" beats "reference"),
    spaces matching any run of spaces."""
    flat = sorted(set(names), key=len, reverse=True)  # type: ignore[call-overload]
    return "|".join(re.escape(n).replace(r"\ ", r"[ \t\u00a0]+") for n in flat)


_SPACE = r"[ \t\u00a0]"
# A heading's numbering: Markdown's #s, "4.1", "7.", "IV.", "A.2".
_NUMBER = (
    rf"(?:#{{1,6}}{_SPACE}+)?"
    rf"(?:(?:[0-9]+(?:\.[0-9]+)*|[IVXLC]+|[A-Z](?:\.[0-9]+)+)\.?{_SPACE}+)?"
)
_SPACES = re.compile(rf"{_SPACE}+")
_HEADING = re.compile(
    rf"^{_SPACE}*{_NUMBER}(?P<name>"
    + _alternatives(n for names in REFERENCE_HEADINGS.values() for n in names)
    + rf"){_SPACE}*[.:]?{_SPACE}*$",
    re.IGNORECASE | re.MULTILINE,
)
# A section that ends the reference list: a named one, with a label and a title after a
# colon or dash or not ("Appendix B: Survey questions", "Anhang 2", "Annexe").
_END_NAMED = re.compile(
    rf"{_SPACE}*{_NUMBER}(?:{_alternatives(END_HEADINGS)})"
    rf"(?:{_SPACE}+[A-Z0-9]{{1,4}})?[.:]?(?:{_SPACE}*[.:\u2013\u2014-]{_SPACE}*\S.{{0,80}})?",
    re.IGNORECASE,
)
# A numbered heading: "5 Discussion", "A.1 Survey items", "## Data". One or two digits
# first: a reference wrapped before a year ("2019 Conference on ...") is no heading.
_END_NUMBERED = re.compile(
    rf"{_SPACE}*(?:#{{1,6}}|[0-9]{{1,2}}(?:\.[0-9]+)*\.?|[A-Z](?:\.[0-9]+)+\.?){_SPACE}+"
    r"[^\W\d_][^,;()\[\]]{0,80}"
)
# A numbered division of the text ("Chapter 2: Practice", "Part II - Methods", "Kapitel 3"),
# a title after its label or not.
DIVISIONS = (
    "Chapter", "Part", "Section", "Kapitel", "Teil", "Abschnitt", "Chapitre", "Partie",
    "Capítulo", "Parte", "Sección", "Capitolo", "Hoofdstuk", "Deel", "Rozdział", "Глава",
    "Часть", "Раздел",
)  # fmt: skip
_END_DIVISION = re.compile(
    rf"{_SPACE}*(?:#{{1,6}}{_SPACE}+)?(?:{_alternatives(DIVISIONS)}){_SPACE}+"
    rf"(?:[0-9]{{1,3}}|[IVXLC]{{1,6}}|[A-Z])\.?"
    rf"(?:{_SPACE}*[.:\u2013\u2014-]?{_SPACE}*[^\W\d_].{{0,80}})?",
    re.IGNORECASE,
)
# A title on a line of its own: up to 6 words of letters (hyphens between them), no
# digits or punctuation but a closing colon (_ends_section checks their capitals).
_TITLE = re.compile("[^\\W\\d_]+(?:[ \t\u00a0-]+[^\\W\\d_]+){0,5}:?")


def _ends_section(line: str, before: str, after: str) -> bool:
    """Whether a line of a reference list is a heading that starts another section:
    a named one (Appendix, Anhang...), a numbered one or a numbered division (Chapter 2:
    Practice) that a paragraph's end precedes,
    or a title on its own that a paragraph's end precedes and a capitalised line follows
    (a reference wrapped across lines does neither)."""
    stripped = line.strip()
    if not stripped:
        return False
    if _END_NAMED.fullmatch(stripped):
        return True
    # A heading follows a paragraph's end; a reference wrapped mid-sentence does not.
    closed = not before.strip() or before.rstrip()[-1] in ".!?)]"
    if _END_NUMBERED.fullmatch(stripped) and not stripped.endswith("."):
        return closed
    if _END_DIVISION.fullmatch(stripped):
        return closed
    if not _TITLE.fullmatch(stripped) or len(stripped) > 60:
        return False
    words = re.findall(r"[^\W\d_]+", stripped)
    titled = all(w[0].isupper() for w in words if len(w) >= 4) and stripped[0].isupper()
    return titled and closed and after.strip()[:1].isupper()


def bibliography_span(text: str) -> Span | None:
    """The reference list: from the last line that is only a heading such as References,
    Bibliography, Works Cited, Literaturverzeichnis or Références (REFERENCE_HEADINGS;
    in the last two thirds of the text, or earlier over a list that reads as references
    nearly throughout: a short essay's long list) to the next heading that starts another
    section (_ends_section: an appendix after the references is not excluded with them)
    or the text's end, when that section reads as references (_references); None when
    there is none. Reference lists one after another (References, then Further Reading
    or a Bibliography) are one span from the first."""
    heads = list(_HEADING.finditer(text))
    if not heads:
        return None
    last = heads[-1]
    early = last.start() < BIBLIOGRAPHY_FROM * len(text)
    first = last
    for before in reversed(heads[:-1]):
        between = text[before.end() : first.start()]
        if before.start() < BIBLIOGRAPHY_FROM * len(text) or not _list_only(between):
            break
        first = before
    start = first.start() + len(first.group()) - len(first.group().lstrip())
    cut = _next_section(text[last.end() :])
    end = len(text) if cut is None else len(text[: last.end() + cut].rstrip())
    if not _WORD.search(text, last.end(), end):
        return None  # a heading with nothing under it
    if early and (not _WORD.search(text, 0, last.start()) or not _listed(text[last.end() : end])):
        return None  # a contents page's entry, or an early heading over prose
    if not _references(text[last.end() : end]):
        # Prose under the heading: a heading that names prose too ("Sources"), or a
        # copy hidden under "References" (an audit's: 90 copied words set aside).
        return None
    return Span(start, end, "bibliography")


# Entries under a reference heading that do not cite, one after another, holding at least
# this many words, are prose: a paragraph put among or after the references (a copy hidden
# there, which set aside with the list went unfound), so they stay in.
PROSE_WORDS = 25


def bibliography_spans(text: str) -> list[Span]:
    """The reference list (bibliography_span) without the prose in it (PROSE_WORDS): one
    span, or several around such paragraphs; none when there is no list."""
    whole = bibliography_span(text)
    if whole is None:
        return []
    out: list[Span] = []
    start = whole.start
    run: list[tuple[int, int]] = []  # the non-citing entries met since the last citing one

    def cut() -> None:
        nonlocal start
        if run and len(_WORDS.findall(text, run[0][0], run[-1][1])) >= PROSE_WORDS:
            if _WORD.search(text, start, run[0][0]):
                out.append(Span(start, run[0][0], "bibliography"))
            start = run[-1][1]
        run.clear()

    for first, last, _, cites in _entries(text[whole.start : whole.end]):
        if cites:
            cut()
        else:
            run.append((whole.start + first, whole.start + last))
    cut()
    if _WORD.search(text, start, whole.end):
        out.append(Span(start, whole.end, "bibliography"))
    return [Span(s.start, _stripped_end(text, s.start, s.end), s.reason) for s in out]


def _stripped_end(text: str, start: int, end: int) -> int:
    """end moved back over the white space before it (not past start)."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end


def _next_section(section: str) -> int | None:
    """Where in the lines after a reference heading the first one that starts another
    section begins (_ends_section; never the first line), or None."""
    lines = section.split("\n")
    pos = 0
    for i, line in enumerate(lines):
        if i > 0 and _ends_section(line, lines[i - 1], "\n".join(lines[i + 1 : i + 3])):
            return pos
        pos += len(line) + 1
    return None


def _list_only(section: str) -> bool:
    """Whether the lines between two reference headings are a reference list: words, no
    heading of another section, and read as references."""
    return bool(_WORD.search(section)) and _next_section(section) is None and _references(section)


# An early reference heading's list: at least this many entries, this share of its text
# citing.
EARLY_LIST_LINES = 5
EARLY_LIST_SHARE = 0.8


def _citing(section: str) -> tuple[int, int, int]:
    """A section's entries, its characters in lines with words, and those of its entries
    that cite (_entries)."""
    entries = _entries(section)
    return len(entries), sum(e[2] for e in entries), sum(e[2] for e in entries if e[3])


def _entries(section: str) -> list[tuple[int, int, int, bool]]:
    """A section's entries: (start, end, characters in lines with words, whether it cites).
    An entry is a line with words and the lines after it that go on with it
    (no blank line between): while its last line does not end it (_ends_entry) or the
    next goes on in lower case, the next does not open an item itself (a reference's
    number or initials, a bullet: _starts_item) nor cites on its own after a line of
    the entry that did (references that end without a period: Harvard's "(accessed 5
    May 2020)", a German list's publisher).
    So a reference wrapped in a PDF's narrow column is one entry whether its year is on
    its first line (APA) or its last (MLA), and prose is entries of its sentences, none
    citing. An entry cites when its lines, joined, read as a reference (_cites) in at
    most REFERENCE_LINE characters, or when it opens as one (_opens: a number, a name
    with initials) however long."""
    out: list[tuple[int, int, int, bool]] = []
    lines: list[str] = []  # the open entry's lines, stripped
    weight = first = last = 0  # the open entry's characters, its start and end
    cited = False  # whether a line of the open entry cites on its own
    at = 0
    for line in [*section.split("\n"), ""]:
        here, at = at, at + len(line) + 1
        text = line.strip()
        worded = _WORD.search(line) is not None
        cites = worded and _cites(line)
        goes_on = worded and (not _ends_entry(lines[-1]) or text[:1].islower()) if lines else False
        if lines and (not goes_on or (cites and cited) or _starts_item(line)):
            joined = " ".join(lines)
            # A reference too long to read as one (APA's twenty authors) opens as one.
            cites_whole = len(joined) <= REFERENCE_LINE and _cites(joined)
            out.append((first, last, weight, cites_whole or _opens(lines[0])))
            lines.clear()
            weight, cited = 0, False
        if not worded:
            cited = False
            continue
        if not lines:
            first = here
        cited = cited or cites
        lines.append(text)
        weight += len(line)
        last = here + len(line)
    return out


def _listed(section: str) -> bool:
    """Whether a section reads as references nearly throughout (an early heading's)."""
    entries, size, citing = _citing(section)
    return entries >= EARLY_LIST_LINES and citing >= EARLY_LIST_SHARE * size


def _references(section: str) -> bool:
    """Whether a section reads as a list of references: at least a third of its text is
    in entries that cite (_citing)."""
    _, size, citing = _citing(section)
    return 3 * citing >= size


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
    bib = bibliography_spans(text) if bibliography else []
    if bib:
        # Quotations inside the bibliography are part of it (titles are often quoted).
        starts = [b.start for b in bib]

        def inside(s: Span) -> bool:
            at = bisect.bisect_left(starts, s.end) - 1  # the last list span starting before
            return at >= 0 and bib[at].end > s.start

        spans = [s for s in spans if not inside(s)]
        spans.extend(bib)
    if quotes:
        quoted = merge([(s.start, s.end) for s in spans if s.reason == "quote"])
        spans = [Span(a, b, "quote") for a, b in quoted] + [s for s in spans if s.reason != "quote"]
    return sorted(spans, key=lambda s: (s.start, s.end))
