"""What a document id may be: the one rule every route, the CLI and its files share."""

from __future__ import annotations

import re

MAX_ID_BYTES = 512

# Control characters (Unicode Cc: C0, DEL, C1) and the line and paragraph separators:
# an id holding one can break a log line, a terminal or a line-based file.
_FORBIDDEN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def id_problem(value: str) -> str | None:
    """Why value cannot be an id, or None when it can: 1-512 bytes of UTF-8 (no lone
    surrogates), not "." or "..", no control characters. U+FFFD is an ordinary character here: the
    HTTP edge refuses a path that is not UTF-8 instead of substituting it."""
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return (
            f"id must be valid UTF-8, but has a lone surrogate "
            f"U+{ord(value[exc.start]):04X} at character {exc.start}"
        )
    if not 1 <= size <= MAX_ID_BYTES:
        return f"id must be 1 to {MAX_ID_BYTES} bytes of UTF-8, got {size}"
    if value in (".", ".."):
        # A URL path segment of these is a dot segment: browsers (and RFC 3986 clients)
        # remove it before sending, so the id could never be read or deleted by its path.
        return f"id must not be {value!r}: a URL path cannot name it"
    found = _FORBIDDEN.search(value)
    if found is not None:
        return (
            f"id must not hold control characters, but has U+{ord(found.group()):04X} "
            f"at character {found.start()}"
        )
    return None


def check_id(value: str) -> str:
    """Return value if it may be an id (see id_problem), else raise ValueError saying why."""
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value
