"""A text's reference list, found as code-point spans (`bibliography_spans`): under its
last heading such as References, when what follows reads as references, less any prose
put among or after them."""

from __future__ import annotations

import re

from app.index.spans import Span

# Where a reference list's heading may start: past this share of the text, since it
# closes the text (a "References" line near the top is a heading of something else).
BIBLIOGRAPHY_FROM = 1 / 3
_WORD = re.compile(r"\w")
_WORDS = re.compile(r"\w+")


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
