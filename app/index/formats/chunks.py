"""The text of a DOCX's embedded chunks (w:altChunk): another document kept as a part of
the zip, an HTML page, a plain text, an MHT archive or a whole DOCX, which Word shows
where the w:altChunk stands, so it is read there.

A reader the checker skipped would see text the checker never read: copied text put in
a chunk was the easiest way past it. A chunk of a kind not read here (RTF), one that
points outside the file, or one that does not parse reads as nothing, as Word shows
nothing for a chunk it cannot read. Each part is read once however often it is named,
DOCX chunks nest at most MAX_DEPTH deep, and all chunks of a file give at most
MAX_CHARACTERS of text together (FileError past it).
"""

from __future__ import annotations

import codecs
import email
import posixpath
import re
from collections.abc import Callable
from email.message import Message

from app.index import html
from app.index.errors import FileError
from app.index.formats.archive import MAX_PART, Zip

# How deep DOCX chunks may hold DOCX chunks (Word itself stops sooner).
MAX_DEPTH = 3
# The text all chunks of one file may give together, in characters: a file naming one
# large part many times would otherwise be read into text many times its size.
MAX_CHARACTERS = MAX_PART

_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_TYPES = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_HTML = frozenset({"text/html", "application/xhtml+xml"})
_PLAIN = frozenset({"text/plain"})
_MHT = frozenset({"message/rfc822", "multipart/related"})
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
    "docx": _PACKAGE, "dotx": _PACKAGE,
}  # fmt: skip
# Characters no text of a chunk keeps: controls (the blanking marks among them).
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_META_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9._:-]{1,40})""", re.IGNORECASE)


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

    def text(self, rid: str | None) -> str:
        """The text of the chunk relationship rid names ("" for one not read)."""
        if self._targets is None:
            self._targets = self._relationships()
        name = self._targets.get(rid or "")
        if name is None or not self._archive.has(name):
            return ""
        text = self._read.get(name)
        if text is None:
            text = self._read[name] = _CONTROLS.sub("", self._part_text(name))
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
            path = target.lstrip("/") if target.startswith("/") else f"word/{target}"
            path = posixpath.normpath(path)
            if not path.startswith("../") and path != "..":
                out[rid] = path
        return out

    def _kind(self, name: str) -> str:
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
        return (found or _BY_EXTENSION.get(extension, "")).split(";")[0].strip().lower()

    def _part_text(self, name: str) -> str:
        raw = self._archive.part(name)
        kind = self._kind(name)
        if raw.startswith(b"PK\x03\x04") or kind in _DOCX:
            if self._depth >= MAX_DEPTH:
                return ""
            try:
                return self._docx(raw, self._depth + 1)
            except FileError:
                return ""
        if kind in _HTML:
            return html.visible_text(_decoded(raw, _declared(raw)))
        if kind in _PLAIN:
            return _decoded(raw, None)
        if kind in _MHT:
            return _mht_text(raw)
        return ""  # RTF and the rest: not read here


def _declared(raw: bytes) -> str | None:
    """The charset an HTML part declares in its first bytes (a meta tag), if any."""
    found = _META_CHARSET.search(raw[:2048])
    return found.group(1).decode("ascii") if found else None


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
        except LookupError:
            pass
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace")


def _mht_text(raw: bytes) -> str:
    """An MHT archive's page: its first HTML part's visible text, else its first plain
    text part."""
    message = email.message_from_bytes(raw)
    parts = [m for m in message.walk() if not m.is_multipart()]
    for wanted in ("text/html", "text/plain"):
        for part in parts:
            if part.get_content_type() == wanted:
                body = _payload(part)
                return html.visible_text(body) if wanted == "text/html" else body
    return ""


def _payload(part: Message) -> str:
    """A MIME part's body, its transfer encoding undone, as text in its charset."""
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    return _decoded(data, part.get_content_charset())
