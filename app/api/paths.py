"""Paths: the convertor for document ids (any characters, '/' included), and the
check that a raw path is UTF-8."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

from starlette.convertors import Convertor, register_url_convertor


class DocIdConvertor(Convertor[str]):
    # Starlette's own "path" convertor stops at a newline: an id holding one must get
    # the id rule's 422 (app.index.ids), not a 404.
    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("docid", DocIdConvertor())


def not_utf8(raw: bytes, part: str) -> str | None:
    """Why a raw path or query string is not UTF-8 once percent-decoded, or None.

    The server decodes the path with substitution (two different invalid ids would both
    become U+FFFD and name one document), so the raw bytes are checked here first.
    """
    if b"%" not in raw and raw.isascii():
        return None
    decoded = unquote_to_bytes(raw)
    try:
        decoded.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"the {part} is not UTF-8 once percent-decoded ({exc.reason} at decoded byte "
            f"{exc.start}, 0x{decoded[exc.start]:02X}); percent-encode the UTF-8 bytes of ids"
        )
    return None
