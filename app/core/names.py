"""What may name a collection (settings, API keys, the API and the CLI check it here)."""

from __future__ import annotations

import re

_COLLECTION = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# A collection's name is part of its Redis keys (nd:{name}:...): no ':', glob or
# hash-tag characters, so SCAN patterns and cluster slots stay its own.
COLLECTION_RULE = "1-64 letters, digits, '_' or '-'"
COLLECTION_PATTERN = _COLLECTION.pattern  # the rule as a regex, for the API's schema


def valid_collection(name: str) -> bool:
    """Whether name may name a collection (COLLECTION_RULE)."""
    return _COLLECTION.fullmatch(name) is not None
