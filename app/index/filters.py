"""Metadata filters: exact matches on fields of a document's stored metadata.

A filter is ``{"metadata": {field: value, ...}}``; a document matches when its
metadata has every field with exactly that JSON value (1 and 1.0, 1 and true
differ; objects and lists compare whole). Queries apply a filter to verified
candidates before the limit, so an answer holds every match the bands found,
not the matches among the first few results; deletes and exports apply it to
every record they scan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.core import errors
from app.index import records

MAX_FIELDS = 32


class FilterError(errors.Invalid):
    """A filter that cannot be applied; the message says what to fix."""

    title = "Invalid filter"
    field = "filter"  # where a 422 lists it (app.api.problems)


def _canonical(value: Any) -> bytes:
    # One spelling per JSON value: equal values give equal bytes, and types stay apart.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


@dataclass(frozen=True)
class Filter:
    """Fields a document's metadata must hold, each with exactly this value."""

    metadata: dict[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_wanted", [(k, _canonical(v)) for k, v in self.metadata.items()])

    @classmethod
    def parse(cls, spec: Any) -> Filter:
        """A filter from its JSON form, or FilterError saying what is wrong with it."""
        if isinstance(spec, str | bytes):
            try:
                spec = orjson.loads(spec)
            except orjson.JSONDecodeError as exc:
                raise FilterError(f"filter is not JSON: {exc}") from None
        if not isinstance(spec, dict) or set(spec) != {"metadata"}:
            raise FilterError('filter must be {"metadata": {"field": value, ...}}')
        fields = spec["metadata"]
        if not isinstance(fields, dict) or not fields:
            raise FilterError("filter.metadata must be an object with at least one field")
        if len(fields) > MAX_FIELDS:
            raise FilterError(f"filter.metadata has over {MAX_FIELDS} fields")
        try:
            _canonical(fields)
        except orjson.JSONEncodeError as exc:
            raise FilterError(f"filter.metadata is not JSON: {exc}") from None
        return cls(dict(fields))

    def to_json(self) -> dict[str, Any]:
        return {"metadata": self.metadata}

    def matches(self, metadata: dict[str, Any] | None) -> bool:
        """Whether metadata holds every field of the filter with the same value."""
        if not metadata:
            return False
        wanted: list[tuple[str, bytes]] = self._wanted  # type: ignore[attr-defined]
        for key, value in wanted:
            if key not in metadata or _canonical(metadata[key]) != value:
                return False
        return True

    def matches_record(self, raw: bytes) -> bool:
        """Whether a packed record's metadata matches (see matches)."""
        return self.matches(records.metadata_of(raw))
