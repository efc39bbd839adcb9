"""The text of DOCX and ODT files: their main XML part, read straight from the zip.

Both formats are zip files whose body is one XML part (word/document.xml,
content.xml). Reading that part with the standard library's expat-backed
ElementTree is faster than python-docx, docx2python or odfpy (bench/formats.py)
and bounds what the file may cost before any XML is parsed: the part is
decompressed a chunk at a time and refused past MAX_PART bytes or MAX_RATIO
times its compressed size (a zip bomb), and an XML part with a DTD (entity
expansion; neither format uses one) is refused.

Paragraphs become lines; tabs, line breaks and ODT's space runs are kept;
tracked deletions, footnotes and headers or footers (other parts) are left out,
so the text is the body as it reads.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from xml.etree import ElementTree as ET

from app.index.errors import FileError

# Bounds on the one XML part read: its size once decompressed, and how many times
# its compressed size that may be (checked past RATIO_FLOOR: tiny parts compress
# far better than a document does).
MAX_PART = 64 * 1024 * 1024
MAX_RATIO = 200
RATIO_FLOOR = 1024 * 1024
_CHUNK = 1024 * 1024

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"


def read_part(raw: bytes, name: str, kind: str) -> bytes:
    """One member of a zip file, decompressed within the bounds; FileError otherwise."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, ValueError, EOFError):
        hint = " (a password-protected file is not a zip: save it without a password)"
        hint = hint if raw.startswith(b"\xd0\xcf\x11\xe0") else " (is it truncated?)"
        raise FileError(f"the {kind} is broken: it is not a readable zip file{hint}") from None
    with archive:
        try:
            info = archive.getinfo(name)
        except KeyError:
            raise FileError(f"the file is not a {kind}: it has no {name}") from None
        if info.flag_bits & 0x1:
            raise FileError(f"the {kind} is encrypted: send it without a password")
        if info.file_size > MAX_PART:
            raise FileError(_bomb(kind, name, info.file_size, info.compress_size))
        out = bytearray()
        try:
            with archive.open(info) as part:
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


def _bomb(kind: str, name: str, size: int, packed: int) -> str:
    return (
        f"the {kind} is refused as a zip bomb: {name} decompresses to {size:,}+ bytes from "
        f"{packed:,} (at most {MAX_PART:,} bytes and {MAX_RATIO}x its compressed size)"
    )


def parse(xml: bytes, kind: str) -> ET.Element:
    """An XML part's tree; FileError for malformed XML or a DTD."""
    if b"<!DOCTYPE" in xml or b"<!ENTITY" in xml:
        raise FileError(f"the {kind} is refused: its XML declares a DTD or entities")
    try:
        return ET.fromstring(xml)
    except ET.ParseError as exc:
        raise FileError(f"the {kind} is broken: its XML cannot be parsed ({exc})") from None


def _walk(root: ET.Element, visit: Callable[[ET.Element, list[str]], bool]) -> str:
    """Depth-first text of a tree, without recursion (a hostile file may nest deeply):
    visit(element, out) writes what the element itself stands for and says whether to
    go into its children (DOCX keeps all text in w:t, so tails are only spacing)."""
    out: list[str] = []
    stack: list[tuple[ET.Element, bool]] = [(root, False)]
    while stack:
        el, closing = stack.pop()
        if closing:
            if el.tag in _PARAGRAPHS:
                out.append("\n")
            continue
        stack.append((el, True))
        if visit(el, out):
            stack.extend((child, False) for child in reversed(el))
    return "".join(out)


_PARAGRAPHS = frozenset({f"{_W}p", f"{_TEXT}p", f"{_TEXT}h"})


def _docx_visit(el: ET.Element, out: list[str]) -> bool:
    tag = el.tag
    if tag == f"{_W}t":
        out.append(el.text or "")
        return False
    if tag == f"{_W}tab":
        out.append("\t")
    elif tag in (f"{_W}br", f"{_W}cr"):
        out.append("\n")
    elif tag == f"{_W}noBreakHyphen":
        out.append("-")
    elif tag in (f"{_W}del", f"{_W}delText", f"{_W}instrText", f"{_W}rPr", f"{_W}pPr"):
        return False  # tracked deletions, field codes, formatting
    return True


def _text(lines: str, kind: str) -> str:
    text = "\n".join(line.rstrip() for line in lines.splitlines()).strip()
    if not any(c.isalnum() for c in text):
        raise FileError(f"the {kind} has no text")
    return text


def docx_text(raw: bytes) -> str:
    """The body text of a DOCX file, a paragraph a line."""
    root = parse(read_part(raw, "word/document.xml", "DOCX"), "DOCX")
    return _text(_walk(root, _docx_visit), "DOCX")


def odt_text(raw: bytes) -> str:
    """The body text of an ODT file, a paragraph (or heading) a line."""
    root = parse(read_part(raw, "content.xml", "ODT"), "ODT")
    body = root.find(f"{_OFFICE}body/{_OFFICE}text")
    if body is None:
        raise FileError("the file is not an ODT text document: content.xml has no office:text")
    out: list[str] = []
    # ODF is mixed content (text sits in elements and in their children's tails), so
    # its walk keeps an explicit stack of (element, phase) too.
    stack: list[tuple[ET.Element, bool]] = [(body, False)]
    while stack:
        el, closing = stack.pop()
        if closing:
            if el.tag in _PARAGRAPHS:
                out.append("\n")
            if el.tail and el is not body:
                out.append(el.tail)
            continue
        tag = el.tag
        skip = tag in _ODT_SKIP
        if not skip:
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
    return _text("".join(out), "ODT")


_ODT_SKIP = frozenset(
    {f"{_TEXT}note", f"{_TEXT}tracked-changes", f"{_TEXT}sequence-decls", f"{_OFFICE}annotation"}
)


def _count(el: ET.Element) -> int:
    try:
        return max(1, min(1000, int(el.get(f"{_TEXT}c", "1"))))
    except ValueError:
        return 1
