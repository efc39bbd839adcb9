"""The text of an RTF document, as a reader sees it: a DOCX chunk (w:altChunk) in RTF,
which Word shows where it stands (formats/chunks.py).

Read as the DOCX reader reads its files: the body's text in order, a paragraph (and a
table cell) a line, tabs kept; letters drawn not to be seen (white on no shading of
their own, a point high, squeezed) as a DOCX run's are (formats/blanking.py); a text
box's text once (not a shape's fallback rendering), after the paragraph it is anchored
in, so a box drawn mid-sentence does not cut the sentence; footnotes after the body
under finish.NOTES_HEADING (finish.headed); hidden text (\\v), tracked deletions
(\\deleted), page headers and footers, field codes (their shown result is read),
comments, list numbers, pictures, objects' data and the header's tables and document
information left out, as are the destinations a reader may ignore (\\*) but those
that hold shown text.

Characters: \\uN with its fallback skipped (\\ucN, per group), \\'hh bytes in the
code page of the current font's charset or the document's \\ansicpgN (Windows-1252 when
none is said; charset 0 is Windows-1252; \\mac, \\pc and \\pca name theirs),
\\upr's Unicode copy, surrogate pairs joined. \\binN data is skipped whole, and
nothing after the document's closing brace is read; a file sent as RTF whose closing
brace never comes was cut short and is refused. The reading is linear in the
input; past MAX_GROUPS nested groups, deeper ones are read in the state of the last
one kept.
"""

from __future__ import annotations

import codecs
import re

from app.index.errors import FileError
from app.index.formats import blanking
from app.index.formats.archive import what_it_is
from app.index.formats.blanking import RGB, SEEN
from app.index.formats.finish import finished_text, headed

# How deep groups may nest before the rest of the document is not read.
MAX_GROUPS = 512

# One token: a control word with its optional number (one space after it is its
# delimiter), a run of hex bytes, a control symbol, a brace, line ends (not text in
# RTF), a run of text, or a lone backslash at the end.
_TOKEN = re.compile(
    rb"\\([a-zA-Z]+)(-?\d+)? ?"
    rb"|((?:\\'[0-9a-fA-F]{2}){1,4096})"
    rb"|\\([^a-zA-Z'])"
    rb"|([{}])"
    rb"|([\r\n]+)"
    rb"|([^\\{}\r\n]+)"
    rb"|(\\)",
    re.S,
)

# Destinations whose text no reader shows (or shows elsewhere: headers and footers, as
# the DOCX reader leaves them out), skipped with all they hold.
_SKIPPED = frozenset(
    {
        "fonttbl", "colortbl", "stylesheet", "info", "pict", "nonshppict", "shprslt",
        "sp", "sn", "sv", "objdata", "objclass", "objname", "fldinst", "xe", "tc", "tcn",
        "txe", "listtable", "listoverridetable", "listname", "leveltext", "levelnumbers",
        "revtbl", "rsidtbl", "filetbl", "pgdsctbl", "template", "header", "headerl",
        "headerr", "headerf", "footer", "footerl", "footerr", "footerf", "ftnsep", "ftnsepc",
        "ftncn", "aftnsep", "aftnsepc", "aftncn", "datafield", "bkmkstart", "bkmkend",
        "atnid", "atnauthor", "annotation", "private", "userprops", "docvar", "themedata",
        "colorschememapping", "latentstyles", "datastore", "xmlnstbl", "generator",
        "mmathPr", "wgrffmtfilter", "pntext", "listtext", "pntxta", "pntxtb", "title",
        "subject", "author", "manager", "company", "operator", "category", "keywords",
        "comment", "doccomm", "hlinkbase", "creatim", "revtim", "printim", "buptim",
        "falt", "panose", "fname", "nonesttables", "background", "nextfile", "bkmkpub",
    }
)  # fmt: skip
# Ignorable destinations (\*) that hold text a reader sees: a shape and its text box,
# a footnote (LibreOffice stars it), the Unicode half of \upr.
_SHOWN_IGNORABLE = frozenset({"shpinst", "shptxt", "footnote", "ud"})

# Control words that stand for text (a table cell is a line of its own, as a DOCX
# cell's paragraph is; the row's end adds none).
_TEXT = {
    "par": "\n", "line": "\n", "sect": "\n", "page": "\n", "row": "", "column": "\n",
    "cell": "\n", "nestcell": "\n", "tab": "\t", "emdash": "\u2014", "endash": "\u2013",
    "emspace": " ", "enspace": " ", "qmspace": " ", "bullet": "\u2022",
    "lquote": "\u2018", "rquote": "\u2019", "ldblquote": "\u201c", "rdblquote": "\u201d",
    "zwj": "\u200d", "zwnj": "\u200c", "zwbo": "\u200b", "zwnbo": "\ufeff",
}  # fmt: skip
# Control symbols that stand for text (\- is an optional hyphen: nothing unless the line
# breaks there).
_SYMBOLS = {
    "~": "\u00a0",
    "_": "-",
    "-": "",
    "\\": "\\",
    "{": "{",
    "}": "}",
    "\n": "\n",
    "\r": "\n",
}

# How every RTF document begins (blank lines before it tolerated).
_START = re.compile(rb"\s*\{\\rtf")
# Font charsets (\fcharsetN) and the code page each stands for (1: the document's).
_CHARSETS = {
    0: "cp1252", 1: None, 77: "mac_roman", 128: "cp932", 129: "cp949", 130: "johab",
    134: "gbk", 136: "cp950", 161: "cp1253", 162: "cp1254", 163: "cp1258", 177: "cp1255",
    178: "cp1256", 186: "cp1257", 204: "cp1251", 222: "cp874", 238: "cp1250", 255: "cp437",
}  # fmt: skip
# The document's code page named by the old switches, and \ansicpg numbers Python names
# otherwise.
_SWITCHES = {"mac": "mac_roman", "pc": "cp437", "pca": "cp850"}
_CODE_PAGES = {10000: "mac_roman", 10001: "shift_jis", 10007: "mac_cyrillic"}
# The most a control word's number counts (RTF's are 16- or 32-bit).
_NUMBER_DIGITS = 10


class _Group:
    """What a group's text is, inherited by the groups it holds (each "{" copies it)."""

    __slots__ = (
        "box",
        "char_shaded",
        "colour",
        "colours",
        "deleted",
        "font",
        "fonts",
        "hidden",
        "intbl",
        "note",
        "para_shaded",
        "scale",
        "size",
        "skip",
        "spacing",
        "uc",
        "upr",
    )  # fmt: skip

    def __init__(self) -> None:
        self.skip = self.hidden = self.deleted = self.note = self.box = self.upr = False
        self.fonts = self.colours = False  # in the font or colour table
        self.uc = 1  # fallback characters after each \uN
        self.font: int | None = None
        # How its letters are drawn: font size (half points), width scale (%), spacing
        # (twips), colour (\cfN, 0: auto), and whether they lie on a shading of their own
        # (a highlight or character background; the paragraph's; a table cell's).
        self.size, self.scale, self.spacing, self.colour = 24, 100, 0, 0
        self.char_shaded = self.para_shaded = self.intbl = False

    def copy(self) -> _Group:
        inner = _Group.__new__(_Group)
        # Written out: a loop over __slots__ took twice as long, once a "{".
        inner.skip, inner.hidden, inner.deleted = self.skip, self.hidden, self.deleted
        inner.note, inner.box, inner.upr, inner.uc = self.note, self.box, self.upr, self.uc
        inner.font, inner.fonts, inner.colours = self.font, self.fonts, self.colours
        inner.size, inner.scale, inner.spacing = self.size, self.scale, self.spacing
        inner.colour, inner.char_shaded = self.colour, self.char_shaded
        inner.para_shaded, inner.intbl = self.para_shaded, self.intbl
        return inner

    @property
    def gone(self) -> bool:
        """Whether its text is not shown at all: hidden, or a tracked deletion."""
        return self.hidden or self.deleted

    def plain(self) -> None:
        """\\plain: character formatting back to the defaults."""
        self.hidden = self.deleted = self.char_shaded = False
        self.font = None
        self.size, self.scale, self.spacing, self.colour = 24, 100, 0, 0


def _codec(name: str | None) -> str | None:
    if name is None:
        return None
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


def _code_page(n: int) -> str | None:
    return _CODE_PAGES.get(n) or _codec(f"cp{n}")


# Where a group's text goes: the body, the notes (read after it), or a text box (read
# after the paragraph it is anchored in, as the DOCX reader reads one).
_BODY, _NOTES, _BOX = 0, 1, 2


def _stream(group: _Group) -> int:
    return _BOX if group.box else _NOTES if group.note else _BODY


class _Reader:
    def __init__(self) -> None:
        self.streams: tuple[list[str], list[str], list[str]] = ([], [], [])
        self.drawn = [SEEN, SEEN, SEEN]  # each stream's open mark
        self.pending = bytearray()  # bytes awaiting their code page
        self.pending_codec = "cp1252"
        self.pending_stream = _BODY
        self.ansi = "cp1252"
        self.default_font: int | None = None
        self.charsets: dict[int, str | None] = {}  # font number -> its code page
        self.table_font: int | None = None  # the font table's entry being read
        self.colours: list[RGB | None] = []  # the colour table (None: auto)
        self.colour: list[int] = []  # the colour table's entry being read
        self.row_shaded = False  # the table row being defined shades a cell
        self.closed = False  # the document's own group was closed: not cut short

    def unseen(self, group: _Group) -> int:
        """How the group's letters are drawn (blanking.SEEN, ROOM, NO_ROOM), as the DOCX
        reader judges a run: tiny or squeezed letters take no room unless spaced apart,
        white ones on no shading of their own take a letter's room."""
        if group.size <= 2 * blanking.UNSEEN_POINTS or group.scale <= 100 * blanking.UNSEEN_SCALE:
            return blanking.ROOM if group.spacing >= 20 * blanking.ROOM_POINTS else blanking.NO_ROOM
        shaded = group.char_shaded or group.para_shaded or (group.intbl and self.row_shaded)
        if group.colour and not shaded and 0 < group.colour < len(self.colours):
            rgb = self.colours[group.colour]
            if rgb is not None and blanking.faint(rgb):
                return blanking.ROOM
        return SEEN

    def mark(self, group: _Group) -> None:
        """Open the mark of how the group draws what comes next (formats/blanking.py)."""
        kind, at = self.unseen(group), _stream(group)
        if kind != self.drawn[at]:
            self.flush()
            self._close(at)
            if kind != SEEN:
                self.streams[at].append(blanking.OPEN[kind])
            self.drawn[at] = kind

    def _close(self, at: int) -> None:
        if self.drawn[at] != SEEN:
            self.streams[at].append(blanking.CLOSE)
            self.drawn[at] = SEEN

    def codec(self, group: _Group) -> str:
        """The code page of the group's font's charset, else the document's."""
        font = group.font if group.font is not None else self.default_font
        return (self.charsets.get(font) if font is not None else None) or self.ansi

    def emit(self, group: _Group, text: str) -> None:
        self.flush()
        self.mark(group)
        at = _stream(group)
        self.streams[at].append(blanking.CONTROLS.sub("", text))
        # A body paragraph's end places its boxes (a footnote's start, inside that
        # paragraph, does not take them into the notes).
        if text == "\n" and at == _BODY and self.streams[_BOX]:
            self.place_boxes(at)

    def place_boxes(self, at: int) -> None:
        """The text boxes met since the last paragraph end, each on its own lines, after
        that paragraph of stream at."""
        self._close(_BOX)
        self._close(at)
        boxes = "".join(self.streams[_BOX]).strip("\n")
        self.streams[_BOX].clear()
        self.streams[at].append(boxes + "\n")

    def emit_bytes(self, group: _Group, data: bytes) -> None:
        codec, at = self.codec(group), _stream(group)
        if self.pending and (codec != self.pending_codec or at != self.pending_stream):
            self.flush()
        self.mark(group)
        self.pending_codec = codec
        self.pending += data
        self.pending_stream = at

    def flush(self) -> None:
        if self.pending:
            text = blanking.CONTROLS.sub(
                "", bytes(self.pending).decode(self.pending_codec, "replace")
            )
            self.streams[self.pending_stream].append(text)
            self.pending.clear()

    def text(self) -> str:
        """The body, then the notes under the DOCX reader's heading, marks unresolved."""
        self.flush()
        if self.streams[_BOX]:  # a box in the last paragraph, which no end closed
            self.streams[_BODY].append("\n")
            self.place_boxes(_BODY)
        body = "".join(self.streams[_BODY]).rstrip("\n") + blanking.CLOSE
        # Each note began with a line end of its own: the first is the heading's.
        notes = "".join(self.streams[_NOTES]).lstrip("\n") + blanking.CLOSE
        body = "\n".join([body, *headed([notes])])
        # \uN gives UTF-16 units: a pair of surrogates is one character.
        return body.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def is_rtf(raw: bytes) -> bool:
    """Whether bytes are an RTF document (its {\\rtf first, after any blanks)."""
    return _START.match(raw) is not None


def file_text(raw: bytes) -> str:
    """The text of an RTF file sent as one; FileError naming what the bytes are when they
    are not RTF, or when it shows no text."""
    if not is_rtf(raw):
        sniffed = what_it_is(raw)
        what = f"the file is {sniffed.what}, not RTF" if sniffed else "the file is not RTF"
        advice = sniffed.advice if sniffed and sniffed.advice else None
        raise FileError(f"{what}: " + (advice or "it does not start with {\\rtf"))
    reader = _read(raw)
    if not reader.closed:
        # Its groups still open at the end: the file was cut (an upload, a copy), and its
        # text would be only what came before the cut, as a truncated DOCX or PDF is a 422.
        raise FileError("the RTF is broken: it ends before its closing brace (is it truncated?)")
    return finished_text(reader.text(), "RTF", True)


def rtf_text(raw: bytes, required: bool = False) -> str:
    """The text an RTF document shows (module docstring), tidied as the DOCX reader tidies
    its own; "" for bytes that are not RTF. With required, FileError when it has none."""
    if not is_rtf(raw):
        return ""
    return finished_text(_read(raw).text(), "RTF", required)


def _number(digits: bytes | None) -> int | None:
    """A control word's number, clamped to what RTF's numbers hold."""
    if digits is None:
        return None
    sign = -1 if digits.startswith(b"-") else 1
    body = digits.lstrip(b"-")
    if len(body) > _NUMBER_DIGITS:
        return sign * 2**31
    return sign * int(body)


def _read(raw: bytes) -> _Reader:
    reader = _Reader()
    stack: list[_Group] = []
    group = _Group()
    first = False  # the token just after "{": where a destination is named
    ignorable = False  # the group began with \*
    fallback = 0  # characters of a \uN's fallback still to skip
    deeper = 0  # groups opened past MAX_GROUPS: read in the state of the one they are in
    pos, end = 0, len(raw)
    while pos < end:
        m = _TOKEN.match(raw, pos)
        if m is None:  # cannot happen: the last alternative takes any byte left
            break
        pos = m.end()
        word, number, hexbytes, symbol, brace, newline, run, _ = m.groups()
        if newline is not None:
            continue  # line ends are no text, and name nothing
        if brace is not None:
            fallback = 0
            if brace == b"{":
                first, ignorable = True, False
                if len(stack) >= MAX_GROUPS:
                    deeper += 1
                    continue
                stack.append(group)
                group = group.copy()
                if stack[-1].upr:  # \upr's groups: the ANSI one is skipped, \*\ud read
                    group.skip, group.upr = True, False
            elif deeper:
                deeper -= 1
                first = ignorable = False
            elif stack:
                group = stack.pop()
                first = ignorable = False
                if not stack:
                    reader.closed = True
                    break  # the document's own group is closed: what follows is not RTF
            continue
        starts, first = first, False
        if symbol == b"*" and starts:
            ignorable, first = True, True  # the destination's name comes next
            continue
        if word is not None:
            name = word.decode("ascii")
            n = _number(number)
            if ignorable and starts and name not in _SHOWN_IGNORABLE:
                group.skip = True
            ignorable = False
            if name == "bin" and n is not None and n > 0:
                pos = min(end, pos + n)  # binary data, whatever its bytes
                continue
            if fallback and name != "u":
                fallback -= 1
                continue
            if starts and name in _SKIPPED:
                # The font and colour tables are read for charsets and colours, not shown.
                group.skip = True
                group.fonts, group.colours = name == "fonttbl", name == "colortbl"
                continue
            if starts and name == "ud" and stack:
                group.skip = stack[-1].skip  # read as the \upr around it would be
                continue
            if group.fonts:
                _font_table(reader, name, n)
                continue
            if group.colours:
                _colour_table(reader, name, n)
                continue
            if group.skip:
                continue
            _control(reader, group, name, n, starts)
            if name == "u" and n is not None:
                fallback = group.uc
            continue
        ignorable = False
        if hexbytes is not None:
            data = bytes.fromhex(hexbytes.replace(b"\\'", b"").decode("ascii"))
            if fallback:  # each byte is one character of a fallback
                skipped = min(fallback, len(data))
                fallback -= skipped
                data = data[skipped:]
            if data and not group.skip and not group.gone:
                reader.emit_bytes(group, data)
            continue
        if symbol is not None:
            if fallback:
                fallback -= 1
            elif not group.skip and not group.gone:
                reader.emit(group, _SYMBOLS.get(symbol.decode("latin-1"), ""))
            continue
        if run is not None:
            if group.colours:  # each ";" ends a colour table entry
                for _ in range(run.count(b";")):
                    reader.colours.append(_rgb(reader.colour))
                    reader.colour = []
                continue
            if fallback:
                skipped = min(fallback, len(run))
                fallback -= skipped
                run = run[skipped:]
            if run and not group.skip and not group.gone:
                reader.emit_bytes(group, run)
    return reader


def _control(reader: _Reader, group: _Group, name: str, n: int | None, starts: bool) -> None:
    """A control word of shown text: a character, a change of how what follows is drawn
    or read, or a destination that holds shown text."""
    if name in _TEXT:
        # A hidden paragraph or cell end still ends it (as the DOCX reader's lines do).
        if not group.gone or _TEXT[name] == "\n":
            reader.emit(group, _TEXT[name])
    elif name == "u" and n is not None:
        if not group.gone and -32768 <= n <= 65535:
            reader.emit(group, chr(n % 65536))
    elif name == "uc" and n is not None:
        group.uc = max(0, min(n, 16))
    elif name == "v":
        group.hidden = n != 0
    elif name == "deleted":  # a tracked deletion, which the DOCX reader leaves out too
        group.deleted = n != 0
    elif name == "plain":
        group.plain()
    elif name == "pard":  # paragraph properties back to the defaults
        group.para_shaded = group.intbl = False
    elif name == "intbl":
        group.intbl = True
    elif name == "trowd":
        reader.row_shaded = False
    elif name in ("clcbpat", "clcfpat", "clshdng") and n:
        reader.row_shaded = True
    elif name in _DRAWING and n is not None:
        _drawn(group, name, n)
    elif name == "f" and n is not None:
        group.font = n
    elif name == "deff" and n is not None:
        reader.default_font = n
    elif name == "ansicpg" and n is not None:
        reader.ansi = _code_page(n) or reader.ansi
    elif name in _SWITCHES:
        reader.ansi = _SWITCHES[name]
    elif name == "upr" and starts:
        group.upr = True
    elif name in ("footnote", "endnote") and starts:
        group.note = True
        reader.emit(group, "\n")  # each note a paragraph of its own
    elif name == "shptxt" and starts and not group.box:
        group.box = True
        reader.emit(group, "\n")  # each box on lines of its own


def _font_table(reader: _Reader, name: str, n: int | None) -> None:
    """A control word of the font table: which font an entry is, and its charset."""
    if name == "f" and n is not None:
        reader.table_font = n
    elif name == "fcharset" and n is not None and reader.table_font is not None:
        reader.charsets[reader.table_font] = _CHARSETS.get(n)
    elif name == "cpg" and n is not None and reader.table_font is not None:
        reader.charsets[reader.table_font] = _code_page(n)


# Control words that say how letters are drawn (_drawn).
_DRAWING = frozenset({"fs", "charscalex", "expndtw", "cf", "highlight", "cb", "chcbpat", "cbpat"})


def _drawn(group: _Group, name: str, n: int) -> None:
    """A drawing control word applied to the group: size, width, spacing, colour, or
    a shading of its own (a highlight or character background; the paragraph's)."""
    if name == "fs":
        group.size = n
    elif name == "charscalex":
        group.scale = n
    elif name == "expndtw":
        group.spacing = n
    elif name == "cf":
        group.colour = n
    elif name == "cbpat":
        group.para_shaded = n > 0
    else:
        group.char_shaded = n > 0


def _colour_table(reader: _Reader, name: str, n: int | None) -> None:
    """A control word of the colour table: a component of the entry being read."""
    if name in ("red", "green", "blue") and n is not None:
        reader.colour.append(("red", "green", "blue").index(name) << 16 | max(0, min(255, n)))


def _rgb(parts: list[int]) -> RGB | None:
    """A colour table entry from its components (None, auto, when it names none)."""
    if not parts:
        return None
    got = {p >> 16: p & 255 for p in parts}
    return (got.get(0, 0), got.get(1, 0), got.get(2, 0))
