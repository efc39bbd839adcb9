"""app.core.jsonl: one JSON line for any stored value."""

from __future__ import annotations

import json

from app.core.jsonl import json_line


def test_an_export_line_survives_a_value_nested_past_the_encoders_bound() -> None:
    """json_line writes a value nested 400 deep (past orjson's 255 levels: metadata stored
    before the depth bound) as one line of JSON that reads back equal."""
    value: object = "leaf"
    for _ in range(400):
        value = {"m": value}
    line = json_line({"id": "x", "metadata": value})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"id": "x", "metadata": value}
    assert json_line({"id": "y"}) == b'{"id":"y"}\n'
