"""A path convertor for document ids: any characters, '/' and newlines included."""

from __future__ import annotations

from starlette.convertors import Convertor, register_url_convertor


class DocIdConvertor(Convertor[str]):
    # Starlette's own "path" convertor stops at a newline; ids may hold one.
    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("docid", DocIdConvertor())
