"""Reading documents to ingest: JSON Lines, the `id text` line format, or a PDF, DOCX
or ODT file (one document, its file name as id, its extracted text)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from app.index import Document
from app.index.errors import TooLargeError
from app.index.formats import SUFFIXES, FileError, workers
from app.index.ids import check_id


@dataclass(frozen=True)
class Line:
    """One input line: a document, or the reason it cannot be one."""

    source: str
    number: int
    size: int  # bytes of input the line took, for progress
    document: Document | None
    error: str | None = None


def _is_jsonl(path: str, first: bytes) -> bool:
    if path.endswith((".jsonl", ".ndjson", ".json")):
        return True
    try:
        return isinstance(orjson.loads(first), dict)
    except orjson.JSONDecodeError:
        return False


def _parse_json(raw: bytes) -> Document:
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object with id and text")
    doc_id, text, meta = obj.get("id"), obj.get("text"), obj.get("metadata")
    if not isinstance(doc_id, str):
        raise ValueError("'id' must be a string (ids make re-ingesting idempotent)")
    if not isinstance(text, str):
        raise ValueError("'text' must be a string")
    if meta is not None and not isinstance(meta, dict):
        raise ValueError("'metadata' must be a JSON object")
    unknown = set(obj) - {"id", "text", "metadata"}
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}")
    return Document(text=text, id=doc_id, metadata=meta)


def _parse_text(raw: bytes) -> Document:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    doc_id, sep, text = line.partition(" ")
    if not doc_id or not sep:
        raise ValueError("expected 'id text' separated by a space")
    return Document(text=text, id=doc_id)


def _check_id(doc: Document) -> None:
    check_id(doc.id or "")


_SUFFIX_OF = {kind: suffix for suffix, kind in SUFFIXES.items()}
_SEND_AS = re.compile("send it with content_type (" + "|".join(map(re.escape, _SUFFIX_OF)) + ")")


def file_text(path: str) -> str | None:
    """The text of a .pdf, .docx, .odt or .rtf file (FileError when it cannot be read, saying
    what a command-line user can do: its type comes from its name); None for any other
    file."""
    kind = SUFFIXES.get(Path(path).suffix.lower())
    if kind is None:
        return None
    raw = Path(path).read_bytes()
    if not raw:
        raise FileError("the file is empty")
    try:
        # In a worker, within the service's time and memory limits: a hostile file
        # (forms drawing each other) must not take the user's machine.
        return workers.shared().run(kind, raw)
    except FileError as exc:
        # The API's advice (another content_type) is a name here: the file's suffix.
        renamed = _SEND_AS.sub(lambda m: f"name it *{_SUFFIX_OF[m.group(1)]}", str(exc))
        raise FileError(renamed) from None


def read_lines(path: str) -> Iterator[Line]:
    """Every non-blank line of a file ('-' is stdin) as a document or an error; a PDF,
    DOCX, ODT or RTF file is one document, with its file name as its id."""
    if path != "-" and Path(path).suffix.lower() in SUFFIXES:
        size = Path(path).stat().st_size
        name = Path(path).name
        try:
            text = file_text(path)
            check_id(name)
        except (FileError, TooLargeError, ValueError) as exc:
            yield Line(path, 1, size, None, str(exc))
            return
        yield Line(path, 1, size, Document(text=text or "", id=name))
        return
    stream: IO[bytes]
    if path == "-":
        stream, name = sys.stdin.buffer, "<stdin>"
    else:
        stream, name = Path(path).open("rb"), path  # noqa: SIM115 - closed below
    try:
        parse = None
        for number, line in enumerate(stream, start=1):
            raw = line.rstrip(b"\r\n")
            if raw.startswith(b"\xef\xbb\xbf"):
                # A UTF-8 byte order mark (Windows editors write one), on any line: files
                # joined by `cat a.txt b.txt |` carry b's at one of their lines' starts.
                raw = raw[3:]
            if not raw.strip():
                continue
            if parse is None:
                parse = _parse_json if _is_jsonl(path, raw) else _parse_text
            try:
                doc = parse(raw)
                _check_id(doc)
            except ValueError as exc:
                yield Line(name, number, len(line), None, str(exc))
                continue
            yield Line(name, number, len(line), doc)
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def total_bytes(paths: list[str]) -> int | None:
    """The size of all inputs, or None when one is stdin."""
    if "-" in paths:
        return None
    return sum(Path(p).stat().st_size for p in paths)
