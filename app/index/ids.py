"""What a document id may be: the one rule the API and the CLI's files share."""

from __future__ import annotations

MAX_ID_BYTES = 512


def check_id(value: str) -> str:
    """Return value if it is 1-512 bytes of valid UTF-8, else raise ValueError saying why."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("id must be valid Unicode (no lone surrogates)") from None
    if not 1 <= size <= MAX_ID_BYTES:
        raise ValueError(f"id must be 1 to {MAX_ID_BYTES} bytes of UTF-8, got {size}")
    return value
