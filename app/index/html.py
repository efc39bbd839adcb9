"""HTML in: the main text of a page, for documents and queries sent as text/html.

A page that marks its main content says so itself, and that is believed first: its first
``<main>`` or ``role="main"`` element with words that markup does not hide, else the
page's one ``<article>``, is extracted whole, its own lists of links included (a section
index is those links); markers with no words in any is a page with no text of its own
(HTMLError), not one to guess about.
Markup that hides an element (``hidden``, ``aria-hidden="true"``, an inline ``display:none`` or
``visibility:hidden``, a ``<dialog>`` that is not open, ``<template>``, ``<noscript>``,
and ruby annotations ``<rt>``, ``<rp>``: furigana is a reading aid, not the text)
is dropped everywhere: a keyboard-help dialog in every page's markup is template text no
reader sees. On real documentation sites the heuristics below kept such dialogs and
dropped the page's own link lists, so two thin pages of one site were their template.

A page without such markers goes to resiliparse's main-content extraction (a C++ DOM
parser with boilerplate heuristics), which drops navigation, footers, cookie banners
and asides, so two pages of one site do not share their template's shingles, and one
article under two templates keeps the same text. It was chosen by measuring (docs/html.md and
the figures of round one): trafilatura kept mirrors a little closer but extracted about 7x slower;
inscriptis keeps the boilerplate.

The service reads pages in its extraction worker processes, with their time limit
(app.index.formats.workers), never on its event loop: the parser's and the heuristics'
time grows faster than linearly in a hostile page's nesting and attributes.

The page arrives as a str (the API body is JSON), so its bytes were already decoded:
a <meta charset> that names another encoding is moot and is ignored, except for the
one mistake that can be undone exactly, UTF-8 bytes decoded as Latin-1 or Windows-1252
(mojibake).
"""

from __future__ import annotations

import codecs
import html as html_lib
import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any, Literal

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import DOMNode, HTMLTree, NodeType

from app.core.errors import Invalid

ContentType = Literal["text/plain", "text/html"]
PLAIN: ContentType = "text/plain"
HTML: ContentType = "text/html"

# C0 controls other than tab, newline, form feed and carriage return: no HTML page
# holds them; a body full of them is a binary file (an image, a gzip) sent as text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
# A share of such characters (or of U+FFFD, what a wrong decoder leaves) past this
# says the page was not text; below it a stray one is dropped with the markup.
_JUNK_SHARE = 0.01
# C1 controls: what a page in a charset with bytes 0x80-0x9F (Shift_JIS) read as Latin-1
# leaves, a good share of its characters; counted once a misread UTF-8 page is repaired
# (whose continuation bytes were such characters), against the same share.
_C1 = re.compile(r"[\x80-\x9f]")
_WORD = re.compile(r"\w")
# Latin-1 characters that UTF-8's lead and continuation bytes become: "Ã©" for "é";
# in Windows-1252, which browsers use for Latin-1, continuation bytes 0x80-0x9F are
# mostly punctuation instead: "â€”" for an em dash.
_CP1252_HIGH = "\u20ac\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\u017d"
_CP1252_HIGH += (
    "\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\u017e\u0178"
)
_MOJIBAKE = re.compile(f"[\u00c2-\u00f4][\u0080-\u00bf{_CP1252_HIGH}]")


def _cp1252_gaps(err: UnicodeError) -> tuple[bytes, int]:
    """The five bytes Windows-1252 leaves undefined, which a browser's decoder (WHATWG)
    turns into U+0081, U+008D, U+008F, U+0090 and U+009D: back to those bytes."""
    assert isinstance(err, UnicodeEncodeError)
    bad = err.object[err.start : err.end]
    if all(0x80 <= ord(c) <= 0x9F for c in bad):
        return bad.encode("latin-1"), err.end
    raise err


codecs.register_error("neardup-cp1252-gaps", _cp1252_gaps)


# Elements hidden by markup alone (no stylesheet is read): skipped wherever they are,
# each selector with the text a page must hold for it to match anything (a selector
# costs a walk of the whole tree, so only the ones a page may need are given).
_HIDING = (
    ("hidden", "[hidden]"),
    ("hidden", '[aria-hidden="true" i]'),
    ("<dialog", "dialog:not([open])"),
    ("<template", "template"),
    ("<noscript", "noscript"),
    ("display", '[style*="display:none" i]'),
    ("display", '[style*="display: none" i]'),
    ("visibility", '[style*="visibility:hidden" i]'),
    ("visibility", '[style*="visibility: hidden" i]'),
    # ruby annotations (furigana, pinyin): a reading aid over the text, not the text, so a
    # learners' page with readings on every kanji reads as its plain mirror does
    ("<rt", "rt"),
    ("<rp", "rp"),
)
HIDDEN = tuple(selector for _, selector in _HIDING)
EMPTY_MAIN = (
    "the page's main content (its <main>, role=main or one <article>) has no words: it has "
    "no text of its own to compare (a page whose script fills it in has its text only once "
    "rendered: send the rendered page)"
)
# The page's own marker of its main content, in the order they are believed.
_MAIN = "main, [role=main i]"
_ARTICLE = "article"
# Markers looked at, in page order, for one that is shown and has words.
MAX_MARKERS = 16
# A page whose markup cannot hold a marker is not parsed to look for one: a page
# without markers is parsed once, by the heuristics, as before.
_ROLE_MAIN = re.compile(r"role\s*=\s*[\"']?main\b")
# Elements nested deeper than this under <body> turn the boilerplate heuristics off: their
# time grows with the square of the nesting (30,000 nested <div>s took 9 s), and no page
# written for a reader nests so deep (browsers stop nesting layout at 512). Such a page is
# read whole, in linear time.
MAX_DEPTH = 512
_DEEPER = "body" + " > *" * (MAX_DEPTH + 1)
# Attributes one element may have: the HTML parser's time grows with the square of one
# element's attributes (25,000 took 1.7 s, 50,000 eleven), and no page written for a reader
# has more than a few dozen. They are counted as the HTML tokenizer reads a tag (a name
# runs to a space, a slash, > or =; a quote opens a value only after =), outside comments
# and raw text (a script's "i<n" is no tag), and only when some stretch that reads as a
# tag is long enough to hold that many (two characters each at least): a regex that never
# fails once it starts, so never backtracks (8 ms a megabyte of real pages, a tenth of
# their extraction), run in the extraction worker, never on the event loop.
MAX_ATTRIBUTES = 2_000
_ATTRIBUTE = (
    r"[\t\n\f\r /]*[^\t\n\f\r />][^\t\n\f\r />=]*"
    r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"|'[^']*'|[^\t\n\f\r >]*))?"""
)
_TAG = re.compile(r"<[A-Za-z][^\t\n\f\r />]*(?:" + _ATTRIBUTE + ")*")
_ONE_ATTRIBUTE = re.compile(_ATTRIBUTE)
_MARKUP = re.compile(r"<(?:!--|[A-Za-z])")
_TAG_NAME = re.compile(r"[^\t\n\f\r />]*")
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes",
             "noscript", "plaintext")  # fmt: skip
_RAW_END = {name: re.compile(f"</{name}", re.IGNORECASE) for name in _RAW_TEXT}
# The quotation elements; only those not inside another are read (an inner one is part
# of its outer one's text: reading each of 2,000 nested <q>s took 10 s).
_QUOTES = ("q", "blockquote")


# resiliparse 2.0's main-content mode drops a text node of one character that is three
# bytes of UTF-8 (it takes any such for an icon font's private-use glyph), so the particle
# between two links or ruby groups (東京<b>の</b>, <a>A</a>の<a>B</a>) vanished from
# Chinese, Japanese, Thai and Hindi pages. Such a letter or digit gets a noncharacter after it
# for the heuristics, taken out of what they return.
# Written as a character reference (&#x3092; &#12290;), it is the same character.
_LONE_WIDE = re.compile(
    r">([ \t\r\n]*)"
    r"([\u0800-\uffff]|&#[xX]0*[0-9a-fA-F]{1,6};|&#0*[0-9]{1,7};|&[a-zA-Z][a-zA-Z0-9]{1,31};)"
    r"([ \t\r\n]*)<"
)
_PAD = "\ufdd0"


def _padded(page: str) -> str:
    """The page with _PAD after each lone three-byte letter or digit between two tags, or
    a character reference to one (a lone separator, a bullet or an arrow between links,
    stays dropped as it was: site templates learned from lines without it still match)."""
    return _LONE_WIDE.sub(lambda m: f">{m[1]}{m[2]}{_PAD}{m[3]}<" if _kept(m[2]) else m[0], page)


def _kept(written: str) -> bool:
    """A letter or digit, or CJK punctuation (a sentence's 。 after a link), as a character
    of three UTF-8 bytes or a reference to one."""
    ch = html_lib.unescape(written) if written[0] == "&" else written
    if len(ch) != 1 or ch < "\u0800":
        return False
    return ch.isalnum() or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef"


def _may_mark(low: str) -> bool:
    """Whether a lower-cased page may have a main-content marker (cheap, may say yes)."""
    return "<main" in low or "<article" in low or ("role" in low and bool(_ROLE_MAIN.search(low)))


def _skips(low: str, hiding: tuple[tuple[str, str], ...] = _HIDING) -> list[str]:
    """The hiding selectors (of `hiding`) this lower-cased page may need."""
    return [selector for needle, selector in hiding if needle in low]


class HTMLError(Invalid):
    """A page that has no text to extract, or is not HTML text at all."""


def _repair(html: str) -> str:
    """The page itself when it was UTF-8 decoded as Latin-1 or Windows-1252, else as given."""
    if not _MOJIBAKE.search(html):
        return html
    for encoding, errors in (("latin-1", "strict"), ("cp1252", "neardup-cp1252-gaps")):
        try:
            return html.encode(encoding, errors).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
    return html  # real Latin-1 or Windows-1252 text (or other characters): it stands


def check_page(html: str) -> None:
    """Refuse (HTMLError) an empty page, or one that is not HTML text: cheap, before
    anything parses it."""
    if not html.strip():
        raise HTMLError("the HTML is empty")
    junk = len(_CONTROL.findall(html)) + html.count("\ufffd")
    if junk > _JUNK_SHARE * len(html):
        raise HTMLError(
            f"the HTML is not text: {junk} of its {len(html)} characters are control "
            "characters or U+FFFD (send the page decoded with its real charset, not a "
            "binary file)"
        )


def most_attributes(page: str) -> int:
    """The most attributes an element of the page has, as the HTML tokenizer reads them
    (counted up to MAX_ATTRIBUTES + 1; 0 when no stretch of it is long enough to hold
    more than MAX_ATTRIBUTES)."""
    if max(map(len, _TAG.findall(page)), default=0) <= 2 * MAX_ATTRIBUTES:
        return 0
    most = pos = 0
    while (markup := _MARKUP.search(page, pos)) is not None:
        if markup.group() == "<!--":
            end = page.find("-->", markup.end())
            if end < 0:
                break
            pos = end + 3
            continue
        name = _TAG_NAME.match(page, markup.start() + 1)
        assert name is not None  # it matches the empty string
        pos, count = name.end(), 0
        while count <= MAX_ATTRIBUTES and (one := _ONE_ATTRIBUTE.match(page, pos)) is not None:
            count, pos = count + 1, one.end()
        most = max(most, count)
        if most > MAX_ATTRIBUTES:
            break
        raw = _RAW_END.get(name.group().lower())
        if raw is not None:  # its text holds no tags, up to its end tag
            end_tag = raw.search(page, pos)
            if end_tag is None:
                break
            pos = end_tag.start()
    return most


def marked_text(page: str, low: str, skips: list[str]) -> str | None:
    """The text of the page's own main-content marker: its first ``<main>`` or
    ``role="main"`` element (of the first MAX_MARKERS in page order) that markup does not
    hide and that has words, else its ``<article>`` when it has exactly one; None when it
    has no marker that shows. HTMLError when the markers that show have no words."""
    # The tree never leaves this frame (it may only be dropped on the thread that made
    # it): what is returned is a str, and every name of the tree or its nodes is cleared
    # before the frame ends, so not even an error's traceback carries one away.
    if not _may_mark(low):
        return None
    tree = body = node = found = None
    try:
        tree = HTMLTree.parse(page)
        body = tree.body
        if body is None:
            return None
        shown = False
        found = _shown_markers(body)
        for node in found:
            shown = True
            text = _text_of(node.html, skips)
            if _WORD.search(text):
                return text
        if shown:
            # Believed when empty too: what lies outside them is the site's (a dialog its
            # stylesheet hides, a footer), which the heuristics kept and a learned
            # template never saw (an audit's empty pages were twins at 1.0).
            raise HTMLError(EMPTY_MAIN)
        return None
    finally:
        tree = body = node = found = None


def _shown_markers(body: Any) -> Iterator[Any]:
    """The page's main-content markers that markup does not hide, in the order they are
    believed: its first MAX_MARKERS ``<main>`` or ``role="main"`` elements, then its
    ``<article>`` when exactly one shows. Found by walks, not by reading a selector's
    collection item by item, which walks from its start for each (4,000 <article> cards:
    27 s)."""
    hiding = ", ".join(HIDDEN)

    def shown(found: Iterator[Any]) -> Iterator[Any]:
        return (node for node in found if node.closest(hiding) is None)

    yield from itertools.islice(
        shown(_elements(body.query_selector(_MAIN), body, _is_main)), MAX_MARKERS
    )
    # An <article> inside another is a second one.
    articles = _elements(body.query_selector(_ARTICLE), body, _is_article, inside=True)
    first_two = list(itertools.islice(shown(articles), 2))
    if len(first_two) == 1:
        yield first_two[0]


def _text_of(marked: str, skips: list[str]) -> str:
    """A marked element's text, whole: its lists of links are the page's own."""
    return extract_plain_text(marked, alt_texts=False, list_bullets=False, skip_elements=skips)


def _is_main(node: Any) -> bool:
    return bool(node.tag == "main" or (node.getattr("role") or "").strip().lower() == "main")


def _is_article(node: Any) -> bool:
    return bool(node.tag == "article")


def _elements(
    first: DOMNode | None, root: DOMNode, wanted: Callable[[Any], bool], inside: bool = False
) -> Iterator[Any]:
    """The elements from first on that are wanted, in page order, looking inside one only
    when told (an <article> inside another is a second one; a marker inside a marker is
    part of its text).

    Walked by the nodes' own links, as _outer_quotes is: a page of thousands of markers
    took time quadratic in them read from a selector's collection."""
    node: Any = first  # an element node where it is one (the stubs type links as Node)
    while node is not None:
        down = None
        if node.type == NodeType.ELEMENT and wanted(node):
            yield node
            if inside:
                down = node.first_child
        else:
            down = node.first_child
        if down is not None:
            node = down
            continue
        while node.next_sibling is None:
            node = node.parent
            if node is None or node == root:
                return
        node = node.next_sibling


def _deep(tree: HTMLTree) -> bool:
    """Whether a parsed page nests elements deeper than MAX_DEPTH under its <body>
    (one selector, linear time)."""
    body = tree.body
    try:
        return body is not None and body.query_selector(_DEEPER) is not None
    finally:
        body = None  # see marked_text


def too_deep(page: str) -> bool:
    """Whether the page nests elements deeper than MAX_DEPTH under its <body>."""
    tree = None  # never leaves this frame (see marked_text)
    try:
        tree = HTMLTree.parse(page)
        return _deep(tree)
    finally:
        tree = None


def _text(page: str) -> str:
    low = page.lower()
    skips = _skips(low)
    text = marked_text(page, low, skips)
    if text is not None:
        return text
    # One parse serves the depth probe and both extractions (the tree never leaves this
    # frame, as in marked_text).
    tree = None
    try:
        tree = HTMLTree.parse(_padded(page))
        text = ""
        if not _deep(tree):
            text = extract_plain_text(
                tree, main_content=True, alt_texts=False, list_bullets=False, skip_elements=skips
            ).replace(_PAD, "")
        if not _WORD.search(text):
            # A page too plain for the heuristics (no article markup), or nested too
            # deep for them: all its visible text.
            text = extract_plain_text(
                tree, alt_texts=False, list_bullets=False, skip_elements=skips
            ).replace(_PAD, "")
        return text
    finally:
        tree = None


def extract(html: str) -> str:
    """The main text of a page, blocks separated by newlines; HTMLError when there is
    none or the input is not HTML text."""
    check_page(html)
    page = _CONTROL.sub("", _repair(html))
    misread = len(_C1.findall(page))
    if misread > _JUNK_SHARE * len(page):
        raise HTMLError(
            f"the HTML is not text as sent: {misread} of its {len(page)} characters are C1 "
            "control characters, what a page read with the wrong charset leaves (send the "
            "page decoded with its real charset, as its Content-Type or <meta charset> says)"
        )
    if most_attributes(page) > MAX_ATTRIBUTES:
        raise HTMLError(
            f"an element of the HTML has over {MAX_ATTRIBUTES:,} attributes, more than a "
            "page is read with (send the page as a browser would show it)"
        )
    # The page goes in as a str, never as a parsed HTMLTree: a tree may only be dropped
    # on the thread that made it, and an error's traceback can carry one to another.
    try:
        text = _text(page)
    except HTMLError:
        raise
    except Exception as exc:  # the parser's own errors; its classes are not API
        raise HTMLError(f"the HTML cannot be parsed: {exc}") from None
    text = text.strip()
    if not _WORD.search(text):
        if text:  # punctuation or symbols alone: visible, but nothing to compare
            raise HTMLError("the page has no words (letters or digits) to compare")
        raise HTMLError("the page has no text: nothing visible is left once markup is removed")
    return text


# What hides an element of a page a document embeds (a DOCX's w:altChunk): the list
# above less aria-hidden, which hides nothing that is drawn.
_DRAWN_HIDING = tuple((n, selector) for n, selector in _HIDING if "aria-hidden" not in selector)
# An inline element holding only text, and what in its attributes draws letters nobody
# sees (white, a pixel or a point high or less) or hides them in Word (mso-hide:all).
_INLINE = re.compile(
    r"<(span|font|b|i|u|em|strong|a|sup|sub|small|mark|s)\b([^<>]*)>([^<]*)</\1\s*>",
    re.IGNORECASE,
)
_UNSEEN_STYLE = re.compile(
    r"mso-hide\s*:\s*all"
    r"|font-size\s*:\s*(?:0*\.\d+|0+|1)\s*(?:px|pt)?\s*(?:[;\"'!]|$)"
    r"|(?<![-\w])color\s*[:=]\s*[\"']?\s*(?:white\b|#f{3}(?:f{3})?\b|rgb\(\s*255\s*,\s*255\s*,\s*255\s*\))",
    re.IGNORECASE,
)


def _unseen_to_spaces(page: str) -> str:
    """The page with each inline element that draws no visible letters read as a space
    (the "Whenxwexspeak" trick: a white x in place of each space), as a DOCX body's unseen
    runs are."""
    return _INLINE.sub(lambda m: " " if _UNSEEN_STYLE.search(m[2]) else m[0], page)


def visible_text(page: str) -> str:
    """All the visible text of a page, blocks separated by newlines, with none of
    extract's main-content heuristics: what a document that embeds the page shows of it
    (a DOCX's w:altChunk). Empty when nothing is visible or it does not parse."""
    page = _unseen_to_spaces(_CONTROL.sub("", _repair(page)))
    tree = None  # never leaves this frame (see marked_text)
    try:
        tree = HTMLTree.parse(_padded(page))
        skips = _skips(page.lower(), _DRAWN_HIDING)
        text = extract_plain_text(tree, alt_texts=False, list_bullets=False, skip_elements=skips)
        return text.replace(_PAD, "").strip()
    except Exception:  # the parser's own errors; its classes are not API
        return ""
    finally:
        tree = None


def read_page(page: str, quotes: bool) -> tuple[str, list[str] | None]:
    """The page's main text (extract) and, with quotes, its quotations (quoted_texts):
    what a worker process reads of a page (app.index.formats.workers)."""
    return extract(page), quoted_texts(page) if quotes else None


def quoted_texts(html: str) -> list[str]:
    """The visible text of each <blockquote> and <q> of a page (a quotation inside
    another is part of it), for excluding quotations (app.index.exclusions)."""
    try:
        tree = HTMLTree.parse(_CONTROL.sub("", _repair(html)))
        if tree.body is None:
            return []
        return [extract_plain_text(el.html, alt_texts=False) for el in _outer_quotes(tree.body)]
    except Exception:  # the page was extracted already; a parser quirk here loses no text
        return []


def _outer_quotes(root: DOMNode) -> Iterator[DOMNode]:
    """The <q> and <blockquote> elements under root that no other one holds, in page order.

    Walked by the nodes' own links, not by a selector: resiliparse reaches the n-th node
    of a selector's collection by walking the n before it, so reading every quotation of
    a page of thousands took time quadratic in them (2,000 <q>: 11 s; now 0.1 s). A
    quotation is not looked inside: a quotation in it is part of it."""
    return _elements(root.first_child, root, lambda node: node.tag in _QUOTES)
