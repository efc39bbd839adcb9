"""DOCX and ODT files as archives: what a file is by its first bytes or its zip members,
and its XML parts read safely.

Each part is decompressed a chunk at a time and refused past MAX_PART bytes or
MAX_RATIO times its compressed size (a zip bomb), and an XML part with a DTD (entity
expansion; neither format uses one) is refused, before any XML is parsed. A file sent
as the wrong kind (an Office 97 document, RTF, an EPUB, a picture) is named in the
refusal, with what to do.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from typing import NamedTuple
from xml.etree import ElementTree as ET
from xml.parsers import expat

from app.index.errors import FileError

# Bounds on each XML part read: its size once decompressed, and how many times its
# compressed size that may be (checked past RATIO_FLOOR: tiny parts compress far
# better than a document does).
MAX_PART = 64 * 1024 * 1024
MAX_RATIO = 200
RATIO_FLOOR = 1024 * 1024
_CHUNK = 1024 * 1024

# First bytes: an OLE compound file (Office 97-2003, or an encrypted OOXML) and RTF.
_OLE = b"\xd0\xcf\x11\xe0"
_RTF = b"{\\rtf"

_DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_ODT_TYPE = "application/vnd.oasis.opendocument.text"


def _a(kind: str) -> str:
    """The kind with its article: a DOCX, an ODT."""
    return f"an {kind}" if kind[:1] in "AEIOU" else f"a {kind}"


def _ole_kind(raw: bytes) -> str:
    """What an OLE compound file (Office's pre-2007 container, also the wrapper of an
    encrypted OOXML file) is, from the stream names in its directory (UTF-16LE)."""

    def has(name: str) -> bool:
        return name.encode("utf-16-le") in raw

    if has("EncryptedPackage"):
        return "encrypted"
    if has("WordDocument"):
        return "a Word 97-2003 .doc"
    if has("Workbook") or has("Book"):
        return "an Excel 97-2003 .xls"
    if has("PowerPoint Document"):
        return "a PowerPoint 97-2003 .ppt"
    return "an OLE compound file (an Office 97-2003 format)"


def _not_a_zip(raw: bytes, kind: str) -> str:
    """Why bytes that are no zip are not this kind of file, naming what they are."""
    if kind == "DOCX" and raw.startswith(_OLE) and _ole_kind(raw) == "encrypted":
        return "the DOCX is encrypted: save it without a password"
    sniffed = what_it_is(raw)
    if sniffed is None or sniffed.what == _ZIP.what:
        return f"the {kind} is broken: it is not a readable zip file (is it truncated?)"
    advice = sniffed.advice
    save = "save it as .docx" if kind == "DOCX" else "save it as .odt"
    if raw.startswith(_OLE):
        advice = save
    return f"the file is {sniffed.what}, not {_a(kind)}" + (f": {advice}" if advice else "")


class Zip:
    """A DOCX's or ODT's zip; its parts read within the bounds (FileError otherwise)."""

    def __init__(self, raw: bytes, kind: str) -> None:
        self.kind = kind
        self._lowered: dict[str, str] | None = None
        try:
            self.archive = zipfile.ZipFile(io.BytesIO(raw))
        except (zipfile.BadZipFile, ValueError, EOFError):
            raise FileError(_not_a_zip(raw, kind)) from None

    def __enter__(self) -> Zip:
        return self

    def __exit__(self, *_: object) -> None:
        self.archive.close()

    def has(self, name: str) -> bool:
        return name in self.archive.NameToInfo

    def named(self, name: str) -> str | None:
        """The member a part name names, matched without regard to case (OPC's part
        names are), or None."""
        if self.has(name):
            return name
        if self._lowered is None:
            self._lowered = {n.lower(): n for n in self.archive.NameToInfo}
        return self._lowered.get(name.lower())

    def part(self, name: str) -> bytes:
        """One member, decompressed within the bounds."""
        kind = self.kind
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            other = self.other()
            raise FileError(f"the file is not {_a(kind)}: it has no {name}{other}") from None
        if info.flag_bits & 0x1:
            raise FileError(f"the {kind} is encrypted: save it without a password")
        if info.file_size > MAX_PART:
            raise FileError(_bomb(kind, name, info.file_size, info.compress_size))
        out = bytearray()
        try:
            with self.archive.open(info) as part:
                while chunk := part.read(_CHUNK):
                    out += chunk
                    size = len(out)
                    if size > MAX_PART or (
                        size > RATIO_FLOOR and size > MAX_RATIO * max(1, info.compress_size)
                    ):
                        raise FileError(_bomb(kind, name, size, info.compress_size))
        except FileError:
            raise  # a ValueError too: named already
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
            raise FileError(
                f"the {kind} is broken: {name} cannot be decompressed ({exc})"
            ) from None
        return bytes(out)

    def tree(self, name: str) -> ET.Element | None:
        """A member's XML tree, or None when the zip has no such member."""
        return parse(self.part(name), self.kind) if self.has(name) else None

    def other(self) -> str:
        """What the zip is instead, when it says (another office format: the content_type
        to send it with; an EPUB, a spreadsheet: that it is not read)."""
        what = _zip_kind(self.archive)
        if what == _ZIP or what.what == _a(self.kind):
            return ""
        return f" (it is {what})"


class Kind(NamedTuple):
    """What a file is (what_it_is), and what to do with it when that is not plain."""

    what: str
    advice: str = ""

    def __str__(self) -> str:
        return f"{self.what}: {self.advice}" if self.advice else self.what


# Files a reviewer may send by mistake, known by their first bytes, and what to do.
_NOT_READ = "which is not read"
_OCR = "(a picture of text is not read: OCR it first)"
_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", Kind(f"a PNG image {_OCR}")),
    (b"\xff\xd8\xff", Kind(f"a JPEG image {_OCR}")),
    (b"GIF87a", Kind("a GIF image")),
    (b"GIF89a", Kind("a GIF image")),
    (b"II*\x00", Kind(f"a TIFF image {_OCR}")),
    (b"MM\x00*", Kind(f"a TIFF image {_OCR}")),
    (b"\x1f\x8b", Kind("a gzip archive")),
    (b"7z\xbc\xaf\x27\x1c", Kind("a 7-Zip archive")),
    (b"Rar!", Kind("a RAR archive")),
)
_RTF_KIND = Kind("RTF", "send it with content_type application/rtf")
_ZIP = Kind("a zip file")
_AN_ODT = Kind("an ODT", f"send it with content_type {_ODT_TYPE}")
# A zip's kind by its mimetype member (OpenDocument, EPUB) or its main part (OOXML).
_ZIP_MIMETYPES = {
    "application/vnd.oasis.opendocument.text": _AN_ODT,
    "application/vnd.oasis.opendocument.spreadsheet": Kind(f"an ODS spreadsheet, {_NOT_READ}"),
    "application/vnd.oasis.opendocument.presentation": Kind(f"an ODP presentation, {_NOT_READ}"),
    "application/epub+zip": Kind(f"an EPUB e-book, {_NOT_READ} (export it as PDF)"),
}
_ZIP_PARTS = (
    ("word/document.xml", Kind("a DOCX", f"send it with content_type {_DOCX_TYPE}")),
    ("xl/workbook.xml", Kind(f"an XLSX spreadsheet, {_NOT_READ}")),
    ("ppt/presentation.xml", Kind(f"a PPTX presentation, {_NOT_READ}")),
    ("content.xml", _AN_ODT),
)


def what_it_is(raw: bytes) -> Kind | None:
    """What a file is, with the content_type to send it with (or why it is not read),
    when its first bytes tell (a DOCX, an ODT, a Word 97-2003 .doc, RTF, a PDF, an image,
    an EPUB, a spreadsheet...); None otherwise."""
    if raw.startswith(_OLE):
        ole = _ole_kind(raw)
        return Kind("a password-protected Office file" if ole == "encrypted" else ole)
    head = raw[:1024].lstrip()
    if head.startswith(_RTF):
        return _RTF_KIND
    if b"%PDF-" in raw[:1024]:
        return Kind("a PDF", "send it with content_type application/pdf")
    for magic, what in _MAGIC:
        if raw.startswith(magic):
            return what
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return Kind("a WebP image")
    if head[:15].lower().startswith((b"<!doctype html", b"<html")):
        return Kind("an HTML page", "send it as text with content_type text/html")
    if raw.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(io.BytesIO(raw)) as archive:
                return _zip_kind(archive)
        except (zipfile.BadZipFile, ValueError, EOFError):
            return _ZIP
    return None


def _zip_kind(archive: zipfile.ZipFile) -> Kind:
    """What a zip holds, as what_it_is says it."""
    names = archive.NameToInfo
    mimetype = names.get("mimetype")
    if mimetype is not None and mimetype.file_size <= 100 and mimetype.compress_size <= 200:
        try:
            # At most 101 bytes inflated, whatever the entry declares (a bomb inflates no
            # further); an entry that cannot be read names nothing.
            with archive.open(mimetype) as member:
                declared = member.read(101).decode("ascii", "replace").strip()
        except (zipfile.BadZipFile, RuntimeError, NotImplementedError, ValueError, OSError,
                EOFError, zlib.error):  # fmt: skip
            declared = ""
        if declared in _ZIP_MIMETYPES:
            return _ZIP_MIMETYPES[declared]
    for name, what in _ZIP_PARTS:
        if name in names:
            return what
    return _ZIP


def read_part(raw: bytes, name: str, kind: str) -> bytes:
    """One member of a zip file, decompressed within the bounds; FileError otherwise."""
    with Zip(raw, kind) as archive:
        return archive.part(name)


def _bomb(kind: str, name: str, size: int, packed: int) -> str:
    return (
        f"the {kind} is refused as a zip bomb: {name} decompresses to {size:,}+ bytes from "
        f"{packed:,} (at most {MAX_PART:,} bytes and {MAX_RATIO}x its compressed size)"
    )


class _Declared(Exception):
    """An XML part declares a DTD or an entity."""


def _refuse(*_: object) -> None:
    raise _Declared


def _declares_dtd(xml: bytes) -> bool:
    """Whether an XML part declares a DTD or entities, in whichever encoding the parser
    reads it (UTF-16 without a byte-order mark, a single-byte codec its declaration
    names): asked of expat itself, which reads it as the parse below will, not of its
    bytes."""
    scan = expat.ParserCreate()
    scan.StartDoctypeDeclHandler = _refuse
    scan.EntityDeclHandler = _refuse
    scan.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        scan.Parse(xml, True)
    except _Declared:
        return True
    except expat.ExpatError:
        return False  # broken: the parse below says where
    return False


def parse(xml: bytes, kind: str) -> ET.Element:
    """An XML part's tree; FileError for malformed XML or a DTD."""
    if _declares_dtd(xml):
        raise FileError(f"the {kind} is refused: its XML declares a DTD or entities")
    try:
        return ET.fromstring(xml)
    except ET.ParseError as exc:
        raise FileError(f"the {kind} is broken: its XML cannot be parsed ({exc})") from None
