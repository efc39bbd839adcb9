"""What a request body must be, checked once for every route by app.api.edge.

JSON as RFC 8259 has it (no NaN or Infinity, every number a finite double), in UTF-8,
sent plain or gzip-compressed, within NEARDUP_MAX_BODY_BYTES once decompressed. The
checks run before any route does, so routes added later get them too.
"""

from __future__ import annotations

import asyncio
import zlib

import orjson
from starlette.types import Receive

# Gzip bodies this large are decompressed in a thread: the event loop keeps answering.
_THREAD_BYTES = 256 * 1024


class BodyRefused(Exception):
    """A body the service does not take: the status, title and detail of the answer."""

    def __init__(
        self, status: int, title: str, detail: str, headers: tuple[tuple[bytes, bytes], ...] = ()
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.headers = headers


class Disconnected(Exception):
    """The client went away before its body was in."""


def _media(content_type: bytes | None) -> BodyRefused | None:
    if content_type is None:
        return BodyRefused(
            415, "Unsupported media type", "send the body as Content-Type: application/json"
        )
    media, _, params = content_type.decode("latin-1").partition(";")
    media = media.strip().lower()
    is_json = media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )
    if not is_json:
        return BodyRefused(
            415,
            "Unsupported media type",
            f"Content-Type {media or '(empty)'} is not accepted: send application/json",
        )
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            return BodyRefused(
                415,
                "Unsupported media type",
                f"charset {value.strip()} is not accepted: send the body in UTF-8",
            )
    return None


def gzipped(content_type: bytes | None, content_encoding: bytes | None) -> bool:
    """Whether the body is gzip-compressed; raises BodyRefused (415) for a media type or
    content coding the service does not take."""
    refused = _media(content_type)
    if refused is not None:
        raise refused
    if content_encoding is None:
        return False
    coding = content_encoding.decode("latin-1").strip().lower()
    if coding in ("", "identity"):
        return False
    if coding in ("gzip", "x-gzip"):
        return True
    raise BodyRefused(
        415,
        "Unsupported media type",
        f"Content-Encoding {coding} is not accepted: send the body plain or as gzip",
        ((b"accept-encoding", b"gzip"),),
    )


async def read(receive: Receive, max_bytes: int, too_large: str) -> bytes:
    """The whole body as sent; BodyRefused (413) as soon as it passes max_bytes."""
    chunks = []
    seen = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > max_bytes:
            raise BodyRefused(413, "Request too large", too_large)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _gunzip(data: bytes, max_bytes: int, too_large: str) -> bytes:
    out = []
    total = 0
    stream = zlib.decompressobj(wbits=31)  # gzip only
    try:
        while data:
            # Never more than the limit allows: a small bomb cannot fill the memory.
            piece = stream.decompress(data, max_bytes + 1 - total)
            total += len(piece)
            if total > max_bytes:
                raise BodyRefused(413, "Request too large", f"{too_large}, once decompressed")
            out.append(piece)
            data = stream.unconsumed_tail
            if not data and stream.eof and stream.unused_data:  # another gzip member
                data = stream.unused_data
                stream = zlib.decompressobj(wbits=31)
    except zlib.error as exc:
        raise BodyRefused(422, "Invalid request", f"body: not valid gzip ({exc})") from None
    if not stream.eof:
        raise BodyRefused(422, "Invalid request", "body: the gzip stream is cut short")
    return b"".join(out)


async def gunzip(data: bytes, max_bytes: int, too_large: str) -> bytes:
    """The decompressed body; BodyRefused 413 past max_bytes of output, 422 if not gzip."""
    if len(data) > _THREAD_BYTES:
        return await asyncio.to_thread(_gunzip, data, max_bytes, too_large)
    return _gunzip(data, max_bytes, too_large)


def _why_not_json(body: bytes, exc: orjson.JSONDecodeError) -> str:
    if body.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "body: it starts with a UTF-16 byte order mark; send UTF-8 JSON"
    if body.startswith(b"\xef\xbb\xbf"):
        return "body: it starts with a byte order mark; send UTF-8 JSON without one"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as bad:
        return (
            f"body: not UTF-8 (byte 0x{body[bad.start]:02X} at byte {bad.start} is "
            f"{bad.reason}); send UTF-8 JSON"
        )
    where = f"line {exc.lineno}, column {exc.colno}"
    what = exc.msg
    rest = body[exc.pos : exc.pos + 9].lstrip(b"-+")
    if rest.startswith((b"NaN", b"Infinity")):
        what = "NaN and Infinity are not JSON numbers"
    elif "infinity when parsed" in what:
        what = "a number too large for a double"
    elif b"\x00" in body:
        what += " (the body holds NUL bytes: UTF-16 or UTF-32? send UTF-8)"
    return f"body: not valid JSON at {where}: {what}"


def check_json(body: bytes) -> None:
    """Raise BodyRefused (422) unless body is one JSON text per RFC 8259 in UTF-8."""
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise BodyRefused(422, "Invalid request", _why_not_json(body, exc)) from None
