"""Files in: the text of a PDF, DOCX, ODT or RTF document sent base64-encoded.

`decode` turns a body's `data` into bytes (strict base64); `extract` turns a file's
bytes into the text that is indexed, compared and kept (every passage offset refers
to it). Both raise `FileError` (an `Invalid`: a 422) naming what is wrong with the
file, never anything else. `workers.Extractors` runs `extract` in worker processes
with a time and memory limit, off the event loop: a hostile file costs one
request's time. docs/formats.md says why these libraries.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Literal

from app.index.errors import FileError

__all__ = ["NAMES", "FileError", "decode", "extract"]

PDF = "application/pdf"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ODT = "application/vnd.oasis.opendocument.text"
RTF = "application/rtf"
FileType = Literal[
    "application/pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.oasis.opendocument.text",
    "application/rtf",
]
FILE_TYPES: tuple[str, ...] = (PDF, DOCX, ODT, RTF)
# Other names of these types that clients send (RTF's registered type is application/rtf;
# text/rtf is registered too, and older tools wrote application/x-rtf).
ALIASES = {"text/rtf": RTF, "application/x-rtf": RTF}
# What a file name's suffix says it is (the CLI's inputs).
SUFFIXES = {".pdf": PDF, ".docx": DOCX, ".odt": ODT, ".rtf": RTF}
NAMES = {PDF: "PDF", DOCX: "DOCX", ODT: "ODT", RTF: "RTF"}

_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_SPACE = re.compile(r"\s+")


def decode(data: str) -> bytes:
    """The bytes of base64 `data` (standard alphabet, padding optional, whitespace
    such as MIME line breaks ignored); FileError when it is not base64."""
    packed = _SPACE.sub("", data)
    if packed[:5].lower() == "data:":
        raise FileError(
            "data is a data: URL: send only the base64 after its comma "
            "(strip the 'data:...;base64,' prefix)"
        )
    if not packed:
        raise FileError("data is empty: send the file's bytes base64-encoded")
    if not _BASE64.fullmatch(packed) or len(packed) % 4 == 1:
        bad = next((c for c in packed if not (c.isascii() and (c.isalnum() or c in "+/="))), None)
        where = f" (found {bad!r})" if bad else ""
        raise FileError(
            f"data is not base64{where}: send the file's bytes base64-encoded "
            "(standard alphabet A-Z a-z 0-9 + /)"
        )
    try:
        return base64.b64decode(packed + "=" * (-len(packed) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise FileError(f"data is not base64: {exc}") from None


def extract(content_type: str, raw: bytes) -> str:
    """The text of a file of this content type (in this process: see workers for the
    bounded way)."""
    # Imported here: a worker process pays for the one library it uses.
    if content_type == PDF:
        from app.index.formats import pdf

        return pdf.extract(raw)
    if content_type == DOCX:
        from app.index.formats import office

        return office.docx_text(raw)
    if content_type == ODT:
        from app.index.formats import office

        return office.odt_text(raw)
    if content_type == RTF:
        from app.index.formats import rtf

        return rtf.file_text(raw)
    raise FileError(f"content_type {content_type!r} is not a file type: {', '.join(FILE_TYPES)}")
