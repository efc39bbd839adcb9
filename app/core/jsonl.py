"""One JSON Lines line, whatever a stored value holds."""

from __future__ import annotations

import json
from typing import Any

import orjson


def json_line(item: Any) -> bytes:
    """item as one line of JSON and its newline: orjson's, or the standard library's for a
    value orjson refuses (nested past its 255 levels: a record's metadata stored before
    records.MAX_METADATA_DEPTH), so one document never cuts an export short."""
    try:
        return orjson.dumps(item) + b"\n"
    except orjson.JSONEncodeError:
        return json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
