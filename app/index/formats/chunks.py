"""The text of a DOCX's embedded chunks (w:altChunk): another document kept as a part of
the zip, an HTML page, a plain text, an MHT archive, an RTF document (formats/rtf.py) or
a whole DOCX, which Word shows where the w:altChunk stands, so it is read there.

A reader the checker skipped would see text the checker never read: copied text put in
a chunk was the easiest way past it. A chunk of a kind not read here (Flat OPC XML),
one that points outside the file, or a page or archive that does not parse reads as
nothing; an embedded DOCX is refused as it would be alone, naming where it is. Part
names are resolved as OPC says (percent-encoding undone, dot segments removed, case
ignored). Each part is read once however often it is named, DOCX chunks nest at most
MAX_DEPTH deep, the parts read hold at most MAX_BYTES together and give at most
MAX_CHARACTERS of text together (FileError past either), and an MHT archive is read
only with at most MAX_BOUNDARIES multipart boundaries (the standard library's parser
takes time its lines times its depth).
"""

from __future__ import annotations

import codecs
import email
import posixpath
import re
import urllib.parse
from collections.abc import Callable
from email.message import Message

from app.index import html
from app.index.errors import FileError
from app.index.formats.archive import MAX_PART, Zip
from app.index.formats.blanking import CONTROLS
from app.index.formats.rtf import is_rtf, rtf_text

# How deep DOCX chunks may hold DOCX chunks (Word itself stops sooner).
MAX_DEPTH = 3
# The text all chunks of one file may give together, in characters: a file naming one
# large part many times would otherwise be read into text many times its size.
MAX_CHARACTERS = MAX_PART
# The bytes of all the parts a file's chunks read, together: hundreds of large parts
# that compress well would otherwise keep a worker parsing for its whole time limit.
MAX_BYTES = 16 * 1024 * 1024
# Multipart boundaries an MHT chunk may declare (nested parts each declare one).
MAX_BOUNDARIES = 16

_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_TYPES = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_HTML = frozenset({"text/html", "application/xhtml+xml"})
_PLAIN = frozenset({"text/plain"})
_MHT = frozenset({"message/rfc822", "multipart/related"})
_RTF = frozenset({"application/rtf", "text/rtf", "application/x-rtf"})
# A whole DOCX package in a part: its main document's content types, and the package's.
_DOCX = frozenset(
    {
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
        "application/vnd.ms-word.document.macroEnabled.main+xml",
        "application/vnd.ms-word.template.macroEnabledTemplate.main+xml",
    }
)
_PACKAGE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
# What a part's extension says it is, where [Content_Types].xml does not.
_BY_EXTENSION = {
    "htm": "text/html", "html": "text/html", "xhtml": "application/xhtml+xml",
    "txt": "text/plain", "mht": "message/rfc822", "mhtml": "message/rfc822",
    "docx": _PACKAGE, "dotx": _PACKAGE, "rtf": "application/rtf",
}  # fmt: skip
# Where an HTML part says its encoding: a meta tag, or an XHTML part's XML declaration.
_META_CHARSET = re.compile(
    rb"""<meta\b[^>]*?charset\s*=\s*["']?([A-Za-z0-9._:-]{1,40})""", re.IGNORECASE
)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml\b[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,40})""")


class Chunks:
    """The chunks of one DOCX's main document: text(r:id) is the text of the chunk that
    relationship names. docx reads a chunk that is itself a DOCX (at depth + 1)."""

    def __init__(self, archive: Zip, docx: Callable[[bytes, int], str], depth: int) -> None:
        self._archive = archive
        self._docx = docx
        self._depth = depth
        # Read at the first chunk: a file without one reads as before, whatever its
        # relationships part holds.
        self._targets: dict[str, str] | None = None
        self._types: tuple[dict[str, str], dict[str, str]] | None = None
        self._read: dict[str, str] = {}
        self._given = 0
        self._bytes = 0

    def text(self, rid: str | None) -> str:
        """The text of the chunk relationship rid names ("" for one not read)."""
        if self._targets is None:
            self._targets = self._relationships()
        target = self._targets.get(rid or "")
        name = None if target is None else self._archive.named(target)
        if name is None:
            return ""
        text = self._read.get(name)
        if text is None:
            text = self._read[name] = CONTROLS.sub("", self._part_text(name))
        self._given += len(text)
        if self._given > MAX_CHARACTERS:
            raise FileError(
                f"the DOCX's embedded chunks (w:altChunk) hold more than {MAX_CHARACTERS:,} "
                "characters of text together"
            )
        return text

    def _relationships(self) -> dict[str, str]:
        """The main document's internal relationships: id -> part name in the zip (none
        when the part is missing or broken: Word finds no chunk to show either)."""
        out: dict[str, str] = {}
        try:
            rels = self._archive.tree("word/_rels/document.xml.rels")
        except FileError:
            return out
        if rels is None:
            return out
        for rel in rels.iter(f"{_RELS}Relationship"):
            target, rid = rel.get("Target"), rel.get("Id")
            if not target or not rid or rel.get("TargetMode", "").lower() == "external":
                continue
            path = _part_name(target)
            if path is not None:
                out[rid] = path
        return out

    def _kind(self, name: str) -> str:
        """A part's media type (lower-cased, no parameters)."""
        return self._content_type(name).split(";")[0].strip().lower()

    def _charset(self, name: str) -> str | None:
        """The charset parameter of a part's content type, if it has one."""
        found = re.search(r";\s*charset\s*=\s*\"?([\w.:-]+)", self._content_type(name), re.I)
        return found.group(1) if found else None

    def _content_type(self, name: str) -> str:
        """A part's content type: [Content_Types].xml's, else its extension's."""
        if self._types is None:
            overrides: dict[str, str] = {}
            defaults: dict[str, str] = {}
            try:
                types = self._archive.tree("[Content_Types].xml")
            except FileError:  # broken: the parts' extensions say what they are
                types = None
            if types is not None:
                for el in types.iter(f"{_TYPES}Override"):
                    overrides[el.get("PartName", "").lstrip("/").lower()] = el.get(
                        "ContentType", ""
                    )
                for el in types.iter(f"{_TYPES}Default"):
                    defaults[el.get("Extension", "").lower()] = el.get("ContentType", "")
            self._types = overrides, defaults
        overrides, defaults = self._types
        extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        found = overrides.get(name.lower()) or defaults.get(extension)
        return found or _BY_EXTENSION.get(extension, "")

    def _part_text(self, name: str) -> str:
        raw = self._archive.part(name)
        self._bytes += len(raw)
        if self._bytes > MAX_BYTES:
            raise FileError(
                f"the DOCX's embedded chunks (w:altChunk) are parts of more than {MAX_BYTES:,} "
                "bytes together"
            )
        kind = self._kind(name)
        if raw.startswith(b"PK\x03\x04") or kind in _DOCX:
            if self._depth >= MAX_DEPTH:
                return ""
            try:
                return self._docx(raw, self._depth + 1)
            except FileError as exc:  # refused as the file itself would be, naming where
                raise FileError(f"an embedded DOCX ({name}): {exc}") from None
        if kind in _HTML:
            return html.visible_text(_decoded(raw, _declared(raw)))
        if kind in _PLAIN:
            return _decoded(raw, self._charset(name))
        if kind in _MHT:
            return _mht_text(raw)
        if kind in _RTF or is_rtf(raw):
            return rtf_text(raw)
        return ""  # Flat OPC XML and the rest: not read here


def _part_name(target: str) -> str | None:
    """The zip member name a relationship's internal target names (relative to word/),
    as OPC resolves it: percent-encoding undone, dot segments removed (none climbs above
    the package's root); None for a URI with a scheme or a host."""
    path = urllib.parse.unquote(target.split("#", 1)[0])
    if not path or path.startswith("//") or re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", path):
        return None
    full = posixpath.normpath(posixpath.join("/" if path.startswith("/") else "/word/", path))
    return full.lstrip("/") or None


def _declared(raw: bytes) -> str | None:
    """The charset an HTML part declares in its first bytes (its XML declaration, or a
    meta tag), if any; a meta tag's UTF-16 or UTF-32 is UTF-8, as the HTML standard
    reads it."""
    head = raw[:2048]
    xml = _XML_ENCODING.search(head)
    if xml:
        return xml.group(1).decode("ascii")
    meta = _META_CHARSET.search(head)
    if not meta:
        return None
    charset = meta.group(1).decode("ascii")
    return "utf-8" if charset.lower().replace("-", "").startswith(("utf16", "utf32")) else charset


def _decoded(raw: bytes, charset: str | None) -> str:
    """A part's bytes as text: by its byte order mark, its declared charset, UTF-8, or
    Windows-1252 (what a Windows program wrote without saying)."""
    for bom, codec in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if raw.startswith(bom):
            return raw.decode(codec, errors="replace")
    if charset:
        try:
            return raw.decode(charset, errors="replace")
        except (LookupError, UnicodeError, ValueError):  # an unknown or unusable codec
            pass
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        # A stray invalid byte in UTF-8 text (one in a hundred characters at most), not
        # another encoding: the rest is kept as written.
        text = raw.decode("utf-8", errors="replace")
        if 100 * text.count("\ufffd") <= len(text):
            return text
        return raw.decode("cp1252", errors="replace")


def _mht_text(raw: bytes) -> str:
    """An MHT archive's page: its first HTML part's visible text, else its first plain
    text part."""
    if raw.lower().count(b"boundary") > MAX_BOUNDARIES:
        return ""
    try:
        message = email.message_from_bytes(raw)
        parts = [m for m in message.walk() if not m.is_multipart()]
    except (RecursionError, ValueError, LookupError, UnicodeError):
        return ""
    for wanted in ("text/html", "text/plain"):
        for part in parts:
            if part.get_content_type() == wanted:
                body = _payload(part)
                return html.visible_text(body) if wanted == "text/html" else body
    return ""


def _payload(part: Message) -> str:
    """A MIME part's body, its transfer encoding undone, as text in its charset."""
    try:
        data = part.get_payload(decode=True)
        charset = part.get_content_charset()
    except (ValueError, LookupError, UnicodeError):
        return ""
    if not isinstance(data, bytes):
        return ""
    if part.get_content_type() == "text/html":
        charset = _declared(data) or charset
    return _decoded(data, charset)
