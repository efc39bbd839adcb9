"""The text of DOCX and ODT files: their XML parts, read straight from the zip.

Both formats are zip files whose body is one XML part (word/document.xml,
content.xml), read safely by formats/archive.py. Reading it with the standard
library's expat-backed ElementTree is faster than python-docx, docx2python or odfpy
(bench/formats.py).

Paragraphs become lines; tabs, line breaks and ODT's space runs are kept. The text
is what a reader sees: tracked deletions and moves' old places, hidden text, field
codes and headers or footers are left out; text a reader cannot see though it is not
hidden (white letters on no shading, a font of a point or less, letters squeezed to a
tenth of their width: a letter in place of each space is the oldest way to defeat a
plagiarism checker) reads as one space where the text beside it on its line is seen
(formats/blanking.py); a text box is read once (Word writes it
twice, as mc:Choice and mc:Fallback); footnotes and endnotes are read after the body
(word/footnotes.xml and word/endnotes.xml; ODT's text:note bodies), so a note never
cuts a sentence of the body, under a line NOTES_HEADING: the notes are not the body's
last section (a reference list there would otherwise take them in as its own lines,
and `exclude.bibliography` would set them aside).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple, TypeVar
from xml.etree import ElementTree as ET

from app.index.errors import FileError
from app.index.formats.archive import Zip, parse
from app.index.formats.blanking import (
    CLOSE,
    NO_ROOM,
    OPEN,
    RGB,
    ROOM,
    ROOM_POINTS,
    SEEN,
    UNSEEN_POINTS,
    UNSEEN_SCALE,
    WHITE,
    blend,
    faint,
    hex_colour,
)
from app.index.formats.chunks import Chunks
from app.index.formats.finish import finished_text, headed

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# Strict Open XML (ISO 29500 strict) names the same elements in another namespace.
_W_STRICT = "{http://purl.oclc.org/ooxml/wordprocessingml/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
# A relationship's id attribute (r:id), transitional and strict.
_R_IDS = (
    "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id",
    "{http://purl.oclc.org/ooxml/officeDocument/relationships}id",
)
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
_STYLE = "{urn:oasis:names:tc:opendocument:xmlns:style:1.0}"
_MANIFEST = "{urn:oasis:names:tc:opendocument:xmlns:manifest:1.0}"
_SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
_FO = "{urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0}"

_T = TypeVar("_T")


def _walk(
    root: ET.Element,
    visit: Callable[[ET.Element, list[str]], Iterable[ET.Element] | None],
    leave: Callable[[ET.Element], None] | None = None,
) -> str:
    """Depth-first text of a tree, without recursion (a hostile file may nest deeply):
    visit(element, out) writes what the element itself stands for and answers the
    children to go into, if any (DOCX keeps all text in w:t, so tails are only spacing);
    leave(element), if given, is called once its children are done."""
    out: list[str] = []
    stack: list[tuple[ET.Element, bool]] = [(root, False)]
    while stack:
        el, closing = stack.pop()
        if closing:
            if leave is not None:
                leave(el)
            if el.tag in _PARAGRAPHS:
                out.append("\n")
            continue
        stack.append((el, True))
        children = visit(el, out)
        if children is not None:
            stack.extend((child, False) for child in reversed(list(children)))
    return "".join(out)


_PARAGRAPHS = frozenset({f"{_W}p", f"{_TEXT}p", f"{_TEXT}h"})


def _on(el: ET.Element | None) -> bool:
    """Whether an OOXML on/off property (w:vanish) is on: present, and not val 0/false."""
    return el is not None and el.get(f"{_W}val", "true").lower() not in ("0", "false", "off")


class _Hiding:
    """What hides a DOCX run (w:vanish), as Word cascades it: the run's own property,
    else its character style's, else its paragraph's style (w:pStyle, or the default
    paragraph style), else the document defaults (w:docDefaults). A style that does not
    say takes its nearest w:basedOn ancestor's word."""

    def __init__(self, styles: ET.Element | None) -> None:
        own: dict[str, bool | None] = {}
        based: dict[str, str] = {}
        self.default = False
        self.paragraph_style: str | None = None
        # Per look (_LOOKS), each style's element for it, its own or its basedOn
        # ancestor's, and the document defaults'.
        self.looks: dict[str, dict[str, ET.Element]] = {look: {} for look in _LOOKS}
        self.default_looks: dict[str, ET.Element] = {}
        if styles is None:
            self.styles: dict[str, bool] = {}
            return
        self.default = _on(styles.find(f"{_W}docDefaults/{_W}rPrDefault/{_W}rPr/{_W}vanish"))
        defaults = styles.find(f"{_W}docDefaults/{_W}rPrDefault/{_W}rPr")
        own_looks: dict[str, dict[str, ET.Element | None]] = {look: {} for look in _LOOKS}
        for style in styles.iter(f"{_W}style"):
            sid = style.get(f"{_W}styleId")
            if sid is None:
                continue
            vanish = style.find(f"{_W}rPr/{_W}vanish")
            own[sid] = None if vanish is None else _on(vanish)
            for look, values in own_looks.items():
                values[sid] = style.find("/".join(f"{_W}{part}" for part in look.split("/")))
            parent = style.find(f"{_W}basedOn")
            if parent is not None and parent.get(f"{_W}val"):
                based[sid] = parent.get(f"{_W}val", "")
            if (
                self.paragraph_style is None
                and style.get(f"{_W}type") == "paragraph"
                and style.get(f"{_W}default", "").lower() in ("1", "true", "on")
            ):
                self.paragraph_style = sid
        self.styles = _resolved(own, based)
        self.looks = {look: _resolved(values, based) for look, values in own_looks.items()}
        if defaults is not None:
            for look in _LOOKS:
                found = defaults.find(f"{_W}{look.removeprefix('rPr/')}")
                if look.startswith("rPr/") and found is not None:
                    self.default_looks[look] = found

    def paragraph(self, style: str | None) -> bool:
        """Whether a run that does not say is hidden in a paragraph of this style."""
        said = self.styles.get(style) if style is not None else None
        if said is None and style is None and self.paragraph_style is not None:
            said = self.styles.get(self.paragraph_style)
        return self.default if said is None else said

    def look(
        self, props: ET.Element | None, run_style: str | None, style: str | None
    ) -> ET.Element:
        """A run's properties that tell whether it is seen (its colour, size, width,
        shading), each its own, else its character style's, else its paragraph style's
        (the default paragraph style's where the paragraph names none), else the
        document defaults'."""
        style = style if style is not None else self.paragraph_style
        merged = ET.Element(f"{_W}rPr")
        for look in _LOOKS:
            if not look.startswith("rPr/"):
                continue
            name = look.removeprefix("rPr/")
            found = props.find(f"{_W}{name}") if props is not None else None
            for sid in (run_style, style):
                if found is None and sid is not None:
                    found = self.looks[look].get(sid)
            if found is None:
                found = self.default_looks.get(look)
            if found is not None:
                merged.append(found)
        return merged

    def shaded(self, props: ET.Element | None) -> bool:
        """Whether a paragraph with these properties is shaded, by them or its style."""
        if _shaded(props):
            return True
        style = props.find(f"{_W}pStyle") if props is not None else None
        sid = style.get(f"{_W}val") if style is not None else self.paragraph_style
        shading = self.looks["pPr/shd"].get(sid or "")
        return shading is not None and _shaded_by(shading)


def _resolved(own: dict[str, _T | None], parent: dict[str, str]) -> dict[str, _T]:
    """Each style's property where it or its nearest ancestor up the parent chain says
    (own[name] None: does not say); a style whose chain never says is left out (a loop
    ends the chain)."""
    # Each style's answer is settled once, with every style its walk went through: a
    # chain of n styles each based on the next was walked n times over (20,000 styles
    # took 21 s, past the reader's bound, in a 111 KB file).
    settled: dict[str, _T | None] = {}
    for name in own:
        path, seen, cur = [], set(), name
        while (
            cur not in settled
            and cur in own
            and own[cur] is None
            and cur in parent
            and cur not in seen
        ):
            seen.add(cur)
            path.append(cur)
            cur = parent[cur]
        said = settled[cur] if cur in settled else own.get(cur)
        for on_the_way in path:
            settled[on_the_way] = said
    return {name: said for name in own if (said := settled.get(name, own[name])) is not None}


def _inherited(own: dict[str, bool | None], parent: dict[str, str]) -> frozenset[str]:
    """The styles whose property (hidden) is on, their own or their nearest ancestor's."""
    return frozenset(name for name, on in _resolved(own, parent).items() if on)


# Theme colours a reader does not see on a page with no shading of its own.
_WHITE_THEMES = frozenset({"background1", "light1", "bg1"})


# Points in a unit of ODF lengths.
_POINTS = {"pt": 1.0, "pc": 12.0, "in": 72.0, "cm": 72 / 2.54, "mm": 72 / 25.4, "px": 0.75}


def _number(value: str | None) -> float | None:
    """A number in an attribute ("12", "10%"), None when it is not one."""
    if value is None:
        return None
    try:
        number = float(value.strip().removesuffix("%"))
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _points(value: str | None) -> float | None:
    """An ODF length ("0.5pt", "0.03cm") in points, None when it is not one."""
    if value is None:
        return None
    value = value.strip().lower()
    for unit, points in _POINTS.items():
        if value.endswith(unit):
            number = _number(value.removesuffix(unit))
            return None if number is None else number * points
    return None


# What a style says of its runs' and paragraphs' looks (_Hiding.look, .shaded).
_LOOKS = (
    "rPr/color", "rPr/sz", "rPr/szCs", "rPr/w", "rPr/spacing", "rPr/shd", "rPr/highlight",
    "pPr/shd",
)  # fmt: skip


def _shaded_by(shading: ET.Element, attribute: str = "fill") -> bool:
    """Whether a w:shd (or w:background, by its w:color) fills with a colour a reader
    tells from white: its fill (a theme's, shaded or tinted as its value says), or for a
    pattern (w:val solid, pct10 ...) its colour blended over the fill by the pattern's
    share."""
    theme = shading.get(f"{_W}theme{attribute.title()}")
    # w:shd names its tones themeFillShade, themeFillTint; w:background themeShade, themeTint.
    toned = any(
        shading.get(f"{_W}theme{'Fill' if attribute == 'fill' else ''}{tone}")
        for tone in ("Shade", "Tint")
    )
    fill = shading.get(f"{_W}{attribute}", "auto")
    colour = hex_colour(fill)
    if theme and not toned:
        colour = WHITE if theme in _WHITE_THEMES else None
    elif fill.lower() == "auto":
        colour = WHITE
    pattern = shading.get(f"{_W}val", "clear").lower() if attribute == "fill" else "clear"
    if pattern not in ("clear", "nil") and colour is not None:
        share = 1.0 if pattern == "solid" else 0.5
        if pattern.startswith("pct"):
            given = _number(pattern.removeprefix("pct"))
            share = 0.5 if given is None else min(1.0, max(0.0, given / 100))
        ink = hex_colour(shading.get(f"{_W}color")) or (0, 0, 0)  # auto: black
        colour = blend(ink, colour, share)
    return colour is None or not faint(colour)


def _shaded(props: ET.Element | None) -> bool:
    """Whether a DOCX run's, paragraph's or cell's properties give it a fill of its own
    (w:shd with a colour, or a run's w:highlight): white text on it may be seen."""
    if props is None:
        return False
    shading = props.find(f"{_W}shd")
    if shading is not None and _shaded_by(shading):
        return True
    light = props.find(f"{_W}highlight")
    return light is not None and light.get(f"{_W}val", "none") not in ("none", "white")


def _unseen(props: ET.Element | None, shaded: bool, complex_script: bool = False) -> int:
    """How a DOCX run's formatting draws it (blanking.SEEN, ROOM, NO_ROOM): a font of at
    most UNSEEN_POINTS (w:sz counts half points; w:szCs instead for a complex script's
    letters) or a width scaled to at most UNSEEN_SCALE takes no room
    unless its letters are spaced apart by ROOM_POINTS or more (w:spacing); white letters
    (w:color, or a theme's background colour) where neither the run, its paragraph nor
    its table cell is shaded take a letter's room."""
    if props is None:
        return SEEN
    size = props.find(f"{_W}{'szCs' if complex_script else 'sz'}")
    halves = _number(size.get(f"{_W}val")) if size is not None else None
    width = props.find(f"{_W}w")
    scale = _number(width.get(f"{_W}val")) if width is not None else None
    if (halves is not None and 0 <= halves <= 2 * UNSEEN_POINTS) or (
        scale is not None and 0 <= scale <= 100 * UNSEEN_SCALE
    ):
        spacing = props.find(f"{_W}spacing")
        apart = _number(spacing.get(f"{_W}val")) if spacing is not None else None
        return ROOM if apart is not None and apart >= 20 * ROOM_POINTS else NO_ROOM
    color = props.find(f"{_W}color")
    if color is None or shaded or _shaded(props):
        return SEEN
    theme = color.get(f"{_W}themeColor")
    tint = color.get(f"{_W}themeTint")
    if tint is not None and _hex_byte(tint) is not None and (_hex_byte(tint) or 0) <= 0x0F:
        return ROOM  # any theme colour tinted all the way to white
    if theme is not None and not (tint or color.get(f"{_W}themeShade")):
        return ROOM if theme in _WHITE_THEMES else SEEN
    # A theme colour shaded or tinted: Word writes the colour it makes in w:val.
    colour = hex_colour(color.get(f"{_W}val"))
    return ROOM if colour is not None and faint(colour) else SEEN


def _hex_byte(value: str) -> int | None:
    """A two-digit hex byte ("0F"), None if it is not one."""
    return int(value, 16) if _HEX_BYTE.fullmatch(value) else None


_HEX_BYTE = re.compile(r"[0-9A-Fa-f]{2}")


def _complex_script(run: ET.Element, props: ET.Element | None) -> bool:
    """Whether Word sets a run's letters by its complex-script properties (w:szCs): it
    says so (w:rtl, w:cs), or its text is in a right-to-left or Indic script."""
    if props is not None and (_on(props.find(f"{_W}rtl")) or _on(props.find(f"{_W}cs"))):
        return True
    return any(
        0x0590 <= ord(c) <= 0x0EFF or 0xFB1D <= ord(c) <= 0xFEFC
        for t in run.iter(f"{_W}t")
        for c in (t.text or "")
    )


class _DocxVisitor:
    """The DOCX walk's visit: hidden runs (_Hiding) are left out. A paragraph's word on
    hiding holds for the runs inside it, down to a nested paragraph (a text box's), so
    the paragraphs being walked are a stack, left again in `leave`."""

    def __init__(self, hiding: _Hiding) -> None:
        self.hiding = hiding
        self.paragraphs: list[bool] = []
        self.paragraph_styles: list[str | None] = []
        # Whether each paragraph and table cell being walked is shaded (_shaded).
        self.shading: list[bool] = []
        # A text box's text is set on its own lines after the paragraph it is drawn
        # in, not glued into that paragraph's sentence: where each box's text starts
        # in the output, and the boxes' texts held, each with the depth of the
        # paragraph around it.
        self.out: list[str] = []
        self.boxes: list[int] = []
        self.held: list[tuple[int, str]] = []
        # The unseen runs being walked (their text is marked: formats/blanking.py).
        self.unseen: list[ET.Element] = []
        # The main document's embedded chunks (w:altChunk), read where they stand; None
        # while notes are walked (their chunks' ids are another part's relationships).
        self.chunks: Chunks | None = None

    @staticmethod
    def _style(props: ET.Element | None, name: str) -> str | None:
        found = props.find(f"{_W}{name}") if props is not None else None
        return None if found is None else found.get(f"{_W}val")

    def leave(self, el: ET.Element) -> None:
        if self.unseen and self.unseen[-1] is el:
            self.unseen.pop()
            self.out.append(CLOSE)
        if el.tag in _SHADED and self.shading:
            self.shading.pop()
        if el.tag == f"{_W}txbxContent" and self.boxes:
            start = self.boxes.pop()
            box = "".join(self.out[start:])
            del self.out[start:]
            self.held.append((len(self.paragraphs), box))
        elif el.tag == f"{_W}p" and self.paragraphs:
            depth = len(self.paragraphs)
            self.paragraphs.pop()
            self.paragraph_styles.pop()
            if self.held and self.held[-1][0] >= depth:
                # The boxes drawn in this paragraph, in their order, after its text. Held
                # boxes are in depth order (a deeper one is taken when its paragraph ends,
                # before a shallower one is held), so this paragraph's are the last ones:
                # taken without a pass over the others (n boxes in one paragraph, each
                # with a box of its own, took time quadratic in n: 40,000 took 72 s).
                cut = len(self.held)
                while cut and self.held[cut - 1][0] >= depth:
                    cut -= 1
                mine = [text for _, text in self.held[cut:]]
                del self.held[cut:]
                self.out.append("\n" + "".join(mine).rstrip("\n"))

    def visit(self, el: ET.Element, out: list[str]) -> Iterable[ET.Element] | None:
        self.out = out
        tag = el.tag
        if tag == f"{_W}t":
            out.append(el.text or "")
            return None
        if tag == f"{_W}r":
            props = el.find(f"{_W}rPr")
            vanish = props.find(f"{_W}vanish") if props is not None else None
            if vanish is not None:
                return None if _on(vanish) else el
            run_style = self._style(props, "rStyle")
            said = self.hiding.styles.get(run_style or "")
            if said is None:
                said = self.paragraphs[-1] if self.paragraphs else self.hiding.default
            if said:
                return None
            style = self.paragraph_styles[-1] if self.paragraph_styles else None
            kind = _unseen(
                self.hiding.look(props, run_style, style),
                any(self.shading),
                _complex_script(el, props),
            )
            if kind:
                # Its text is marked, not dropped: a space (or nothing) where the text
                # beside it is seen (blanking.resolved); a text box drawn in it is read.
                out.append(OPEN[kind])
                self.unseen.append(el)
            return el
        if tag == f"{_W}tc":
            self.shading.append(_shaded(el.find(f"{_W}tcPr")))
        elif tag == f"{_W}tbl":
            self.shading.append(_shaded(el.find(f"{_W}tblPr")))
        if tag == f"{_W}p":
            props = el.find(f"{_W}pPr")
            self.shading.append(self.hiding.shaded(props))
            style = self._style(props, "pStyle")
            self.paragraphs.append(self.hiding.paragraph(style))
            self.paragraph_styles.append(style)
            return el
        if tag == f"{_W}txbxContent" and self.paragraphs:
            self.boxes.append(len(out))
            return el
        if tag == f"{_MC}AlternateContent":
            # Alternatives of the same content (a text box as DrawingML and as VML): the
            # first choice Word can show (_KNOWN_CHOICES), else the fallback, as Word
            # does: a choice requiring a namespace nobody knows is never shown.
            for choice in el.findall(f"{_MC}Choice"):
                if set(choice.get("Requires", "").split()) <= _KNOWN_CHOICES:
                    return [choice]
            return el.findall(f"{_MC}Fallback")
        if tag == f"{_W}sym":
            out.append(_symbol(el.get(f"{_W}char", "")))
            return None
        if tag == f"{_W}altChunk":
            rid = el.get(_R_IDS[0]) or el.get(_R_IDS[1])
            text = self.chunks.text(rid) if self.chunks is not None else ""
            if text:
                out.append("\n" + text + "\n")
            return None
        if tag in (f"{_W}tab", f"{_W}ptab"):
            out.append("\t")
        elif tag in (f"{_W}br", f"{_W}cr"):
            out.append("\n")
        elif tag == f"{_W}noBreakHyphen":
            out.append("-")
        elif tag in _DOCX_SKIP:
            return None
        return el


# What may be shaded: a paragraph, a table cell, a table.
_SHADED = frozenset({f"{_W}p", f"{_W}tc", f"{_W}tbl"})
# The namespace prefixes Word's mc:Choice elements require (text boxes, shapes, charts,
# ink and the later versions' additions), which Word shows.
_KNOWN_CHOICES = frozenset(
    {"wps", "wpg", "wpc", "wpi", "wp14", "w14", "w15", "w16se", "w16cid", "w16", "w16cex",
     "w16sdtdh", "a14", "cx", "cx1", "cx2", "aink", "am3d", "v", "o", "w10", "m"}
)  # fmt: skip


def _symbol(code: str) -> str:
    """The character a w:sym stands for (w:char, hex), where it is a character of its
    own: a symbol font's private-use code (a Wingdings glyph) or a code that is no
    character stands for nothing a reader could copy."""
    try:
        point = int(code, 16)
    except ValueError:
        return ""
    if not 0x20 <= point <= 0x10FFFF or 0xD800 <= point <= 0xDFFF or 0xE000 <= point <= 0xF8FF:
        return ""
    char = chr(point)
    return char if char.isprintable() or char.isspace() else ""


# Tracked deletions and a move's old place, field codes, formatting, and a ruby's
# reading aid (furigana over the base text, which is read): not what is read.
_DOCX_SKIP = frozenset(
    f"{_W}{name}" for name in ("del", "delText", "moveFrom", "instrText", "rPr", "pPr", "rt")
)
# Word's note separators, which are lines, not notes.
_NOTE_FURNITURE = frozenset({"separator", "continuationSeparator", "continuationNotice"})


def _strict(root: ET.Element) -> ET.Element:
    """A Strict Open XML tree with its elements and attributes renamed to the
    transitional namespace (the same vocabulary, so one reader serves both); any other
    tree as it is."""
    if not root.tag.startswith(_W_STRICT):
        return root
    n = len(_W_STRICT)
    for el in root.iter():
        if el.tag.startswith(_W_STRICT):
            el.tag = _W + el.tag[n:]
        for key in [k for k in el.attrib if k.startswith(_W_STRICT)]:
            el.attrib[_W + key[n:]] = el.attrib.pop(key)
    return root


def _docx_tree(archive: Zip, name: str) -> ET.Element | None:
    root = archive.tree(name)
    return None if root is None else _strict(root)


def docx_text(raw: bytes) -> str:
    """The text of a DOCX file, a paragraph a line: the body (with the text of the
    documents it embeds, formats/chunks.py), then its footnotes and endnotes."""
    return _docx_text(raw, 0)


def _docx_text(raw: bytes, depth: int) -> str:
    """docx_text of a DOCX embedded `depth` deep in another (0: the file itself)."""
    with Zip(raw, "DOCX") as archive:
        root = _strict(parse(archive.part("word/document.xml"), "DOCX"))
        walker = _DocxVisitor(_Hiding(_docx_tree(archive, "word/styles.xml")))
        walker.chunks = Chunks(archive, _docx_text, depth)
        page = root.find(f"{_W}background")
        if page is not None and _shaded_by(page, "color"):
            walker.shading.append(True)  # a page colour (Design > Page Color) under it all
        parts = [_walk(root, walker.visit, walker.leave)]
        walker.chunks = None
        notes: list[str] = []
        for name, note in (("word/footnotes.xml", "footnote"), ("word/endnotes.xml", "endnote")):
            tree = _docx_tree(archive, name)
            if tree is None:
                continue
            for el in tree.iter(f"{_W}{note}"):
                if el.get(f"{_W}type") not in _NOTE_FURNITURE:
                    notes.append(_walk(el, walker.visit, walker.leave))
    # An embedded DOCX with no text is an empty chunk, not a refusal.
    joined = "\n".join(p.rstrip("\n") for p in parts + headed(notes))
    return finished_text(joined, "DOCX", required=depth == 0)


def _odt_encrypted(archive: Zip) -> bool:
    """Whether the manifest says content.xml is encrypted (ODF's own encryption keeps
    the zip readable and encrypts the parts' bytes)."""
    manifest = archive.tree("META-INF/manifest.xml")
    if manifest is None:
        return False
    return any(
        entry.get(f"{_MANIFEST}full-path") == "content.xml"
        and entry.find(f"{_MANIFEST}encryption-data") is not None
        for entry in manifest.iter(f"{_MANIFEST}file-entry")
    )


# The text properties that decide whether an ODT style's letters are seen, each
# inherited on its own through style:parent-style-name.
_SEEN_BY = (f"{_FO}font-size", f"{_STYLE}text-scale", f"{_FO}color", f"{_FO}background-color")


def _odt_page_colour(styles: ET.Element | None) -> RGB:
    """The colour of the document's pages: a page layout's background colour that is not
    white (the first), else white."""
    for layout in styles.iter(f"{_STYLE}page-layout-properties") if styles is not None else ():
        colour = hex_colour(layout.get(f"{_FO}background-color"))
        if colour is not None and not faint(colour):
            return colour
    return WHITE


def _odt_unseen_styles(page: RGB, *trees: ET.Element | None) -> dict[str, int]:
    """Per text style that says, how its letters are drawn (_odt_unseen's kinds, as
    _unseen for a DOCX run: a font of at most UNSEEN_POINTS or letters scaled to at most
    UNSEEN_SCALE take no room; letters faint on their background, or on the page's
    colour where they have none, take a letter's), each property its own or its nearest
    ancestor's (style:parent-style-name): a white automatic style over a parent with a
    dark background is seen."""
    own, parent = _odt_text_properties(trees, _SEEN_BY)
    size, scale, color, ground = (_resolved(values, parent) for values in own)
    out = {}
    for name in own[0]:
        said = _odt_unseen(size.get(name), scale.get(name), color.get(name), ground.get(name), page)
        if said is not None:
            out[name] = said
    return out


def _odt_unseen(
    size: str | None, scale: str | None, color: str | None, ground: str | None, page: RGB
) -> int | None:
    """How a style's text properties draw its letters (blanking.SEEN, ROOM: faint on
    their background; NO_ROOM: a point high or squeezed); None: they do not say."""
    points = _points(size)
    share = _number(scale)
    relative = _number(size) if size is not None and size.strip().endswith("%") else None
    if (
        (points is not None and 0 <= points <= UNSEEN_POINTS)
        or (share is not None and 0 <= share <= 100 * UNSEEN_SCALE)
        # A tenth of its parent's size or less: a point or so.
        or (relative is not None and 0 <= relative <= 100 * UNSEEN_SCALE)
    ):
        return NO_ROOM
    if color:
        colour, back = hex_colour(color), hex_colour(ground)
        if colour is None:
            return SEEN
        if ground is None or ground.strip().lower() == "transparent":
            return ROOM if faint(colour, page) else SEEN
        return ROOM if back is not None and faint(colour, back) else SEEN
    return None


def _odt_hidden_styles(*trees: ET.Element | None) -> frozenset[str]:
    """The names of text and paragraph styles with text:display="none", their own or
    through style:parent-style-name (styles.xml's and content.xml's automatic ones)."""
    (shown,), parent = _odt_text_properties(trees, (f"{_TEXT}display",))
    display = {name: None if v is None else v == "none" for name, v in shown.items()}
    return _inherited(display, parent)


def _named_styles(
    trees: tuple[ET.Element | None, ...], parent: dict[str, str]
) -> Iterator[tuple[str, ET.Element]]:
    """Every named style:style of the trees with its name, each one's parent
    (style:parent-style-name) recorded in parent on the way."""
    for tree in trees:
        if tree is None:
            continue
        for style in tree.iter(f"{_STYLE}style"):
            name = style.get(f"{_STYLE}name")
            if name is None:
                continue
            if style.get(f"{_STYLE}parent-style-name"):
                parent[name] = style.get(f"{_STYLE}parent-style-name", "")
            yield name, style


def _odt_text_properties(
    trees: tuple[ET.Element | None, ...], attributes: tuple[str, ...]
) -> tuple[list[dict[str, str | None]], dict[str, str]]:
    """Of every named style of the trees, each attribute of its style:text-properties
    (None where it does not say), one dict an attribute, and each style's parent
    (style:parent-style-name)."""
    own: list[dict[str, str | None]] = [{} for _ in attributes]
    parent: dict[str, str] = {}
    for name, style in _named_styles(trees, parent):
        props = style.find(f"{_STYLE}text-properties")
        for values, attribute in zip(own, attributes, strict=True):
            values[name] = None if props is None else props.get(attribute)
    return own, parent


def odt_text(raw: bytes) -> str:
    """The text of an ODT file, a paragraph (or heading) a line: the body, then its
    notes."""
    with Zip(raw, "ODT") as archive:
        if _odt_encrypted(archive):
            raise FileError("the ODT is encrypted: save it without a password")
        root = parse(archive.part("content.xml"), "ODT")
        styles = archive.tree("styles.xml")
        hidden = _odt_hidden_styles(styles, root)
        unseen = _Unseen(
            _odt_unseen_styles(_odt_page_colour(styles), styles, root),
            _odt_grounded(styles, root),
        )
        other = archive.other()
    body = root.find(f"{_OFFICE}body/{_OFFICE}text")
    if body is None:
        raise FileError(
            f"the file is not an ODT text document: content.xml has no office:text{other}"
        )
    notes: list[ET.Element] = []
    parts = [_odt_walk(body, hidden, unseen, notes)]
    # A note's body is read after the text (a note in a note is not ODF).
    parts += headed([_odt_walk(note, hidden, unseen, []) for note in notes])
    return finished_text("\n".join(p.rstrip("\n") for p in parts), "ODT")


class _Unseen(NamedTuple):
    """What an ODT walk knows of its styles' looks: how each text style draws its
    letters, and the paragraph, cell and frame styles that fill their ground."""

    kinds: dict[str, int]
    grounded: frozenset[str]


# Where a paragraph, a table cell and a frame name their style.
_GROUND_STYLE = {
    f"{_TEXT}p": f"{_TEXT}style-name",
    f"{_TEXT}h": f"{_TEXT}style-name",
    f"{_TABLE}table-cell": f"{_TABLE}style-name",
    f"{_DRAW}frame": f"{_DRAW}style-name",
}


def _odt_grounded(*trees: ET.Element | None) -> frozenset[str]:
    """The styles whose paragraphs, table cells or frames are filled with a colour a
    reader tells from white (fo:background-color of their paragraph, cell or graphic
    properties, their own or inherited): white letters on them are seen."""
    own: dict[str, bool | None] = {}
    parent: dict[str, str] = {}
    kinds = ("paragraph-properties", "table-cell-properties", "graphic-properties")
    for name, style in _named_styles(trees, parent):
        said: bool | None = None
        for kind in kinds:
            props = style.find(f"{_STYLE}{kind}")
            if props is None:
                continue
            value = props.get(f"{_FO}background-color")
            if value is not None:
                colour = hex_colour(value)
                said = colour is not None and not faint(colour)
            # LibreOffice's area fill: a colour, or a gradient, hatch or bitmap (judged
            # as a fill a reader tells from white).
            area = props.get(f"{_DRAW}fill")
            if area == "solid":
                colour = hex_colour(props.get(f"{_DRAW}fill-color"))
                said = colour is None or not faint(colour)
            elif area in ("gradient", "hatch", "bitmap"):
                said = True
        own[name] = said
    return _inherited(own, parent)


def _odt_walk(
    top: ET.Element, hidden: frozenset[str], unseen: _Unseen, notes: list[ET.Element]
) -> str:
    """The text under `top`, less what hidden styles hide, the letters of unseen styles'
    spans marked (formats/blanking.py); the bodies of the notes met are added to
    `notes`."""
    out: list[str] = []
    # ODF is mixed content (text sits in elements and in their children's tails), so
    # its walk keeps an explicit stack of (element, phase) too; and the styled elements
    # being walked, each with how its letters are drawn (blanking's kinds) and how the
    # letters around it were.
    stack: list[tuple[ET.Element, bool]] = [(top, False)]
    inside: list[tuple[ET.Element, int, int]] = []
    grounds: list[ET.Element] = []  # the filled paragraphs, cells and frames walked
    while stack:
        el, closing = stack.pop()
        if closing:
            if grounds and grounds[-1] is el:
                grounds.pop()
            if inside and inside[-1][0] is el:
                _, now, before = inside.pop()
                if now != before:
                    out.append((CLOSE if now else "") + (OPEN[before] if before else ""))
            if el.tag in _PARAGRAPHS:
                out.append("\n")
            if el.tail and el is not top:
                out.append(el.tail)
            continue
        tag = el.tag
        style = el.get(f"{_TEXT}style-name")
        if tag in _GROUND_STYLE and el.get(_GROUND_STYLE[tag]) in unseen.grounded:
            grounds.append(el)
        if style in unseen.kinds and (tag in _STYLED_TEXT or tag in _PARAGRAPHS):
            before = inside[-1][1] if inside else SEEN
            now = unseen.kinds[style or ""]
            if now == ROOM and grounds:
                now = SEEN  # white on a filled paragraph, cell or frame
            inside.append((el, now, before))
            if now != before:
                out.append((CLOSE if before else "") + (OPEN[now] if now else ""))
        skip = (
            tag in _ODT_SKIP
            or style in hidden
            # Text a field hides (text:hidden-text, and text:hidden-paragraph's paragraph
            # below: their condition is a formula a reader of the file cannot evaluate,
            # but one that says it is hidden now is what the writer's reader saw).
            or (tag == f"{_TEXT}hidden-text" and el.get(f"{_TEXT}is-hidden", "false") == "true")
            # A section hidden by its own attribute (display="none"; "condition" is a
            # formula of fields, which a reader of the file cannot evaluate: shown).
            or (tag == f"{_TEXT}section" and el.get(f"{_TEXT}display") == "none")
            or (tag in _PARAGRAPHS and _hidden_paragraph(el))
        )
        if tag == f"{_TEXT}note":
            note = el.find(f"{_TEXT}note-body")
            if note is not None:
                notes.append(note)
        elif not skip:
            if tag == f"{_TEXT}s":
                out.append(" " * _count(el))
            elif tag == f"{_TEXT}tab":
                out.append("\t")
            elif tag == f"{_TEXT}line-break":
                out.append("\n")
            elif el.text:
                out.append(el.text)
        stack.append((el, True))
        if not skip:
            stack.extend((child, False) for child in reversed(el))
    return "".join(out)


# What holds text in a text style of its own, besides a paragraph: a span, a link.
_STYLED_TEXT = frozenset({f"{_TEXT}span", f"{_TEXT}a"})
# Notes (read after the body), tracked changes, comments; what an index or table of
# contents is made from (its source: templates and a title never shown; the index
# itself, its body, is read); an image's title and description (alt text, not shown);
# a ruby's reading aid (furigana over the base text, which is read).
_ODT_SKIP = frozenset(
    {
        f"{_TEXT}note",
        f"{_TEXT}tracked-changes",
        f"{_TEXT}sequence-decls",
        f"{_OFFICE}annotation",
        *(
            f"{_TEXT}{kind}-source"
            for kind in (
                "table-of-content",
                "illustration-index",
                "alphabetical-index",
                "user-index",
                "table-index",
                "object-index",
                "bibliography",
            )
        ),
        f"{_SVG}title",
        f"{_SVG}desc",
        f"{_TEXT}ruby-text",
    }
)


def _hidden_paragraph(paragraph: ET.Element) -> bool:
    """Whether an ODT paragraph holds a text:hidden-paragraph field that hides it now
    (in it, or in a span of it)."""
    fields = [
        *paragraph.findall(f"{_TEXT}hidden-paragraph"),
        *paragraph.findall(f"{_TEXT}span/{_TEXT}hidden-paragraph"),
    ]
    return any(f.get(f"{_TEXT}is-hidden", "false") == "true" for f in fields)


def _count(el: ET.Element) -> int:
    try:
        return max(1, min(1000, int(el.get(f"{_TEXT}c", "1"))))
    except ValueError:
        return 1
