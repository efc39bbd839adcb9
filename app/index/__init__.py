"""Near-duplicate logic: sketching, LSH bands, candidates, verification, ranking.

No HTTP and no wire format: it speaks to Redis only through app.store.

Each name below is imported from its module when first asked for, so a tool that needs
one module (an id rule, a document's shape) does not load the whole index with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.index import collections, records, texts
    from app.index.errors import (
        BusyError,
        ConfigMismatchError,
        NoPassagesError,
        NoShinglesError,
        ThresholdError,
        TooLargeError,
    )
    from app.index.index import Index
    from app.index.params import Params
    from app.index.results import (
        Containment,
        ContainmentResult,
        Document,
        Group,
        IngestResult,
        Match,
        Pair,
        QueryResult,
    )

_HOMES = {
    **dict.fromkeys(
        ("BusyError", "ConfigMismatchError", "NoPassagesError", "NoShinglesError",
         "ThresholdError", "TooLargeError"),
        "app.index.errors",
    ),
    "Index": "app.index.index",
    "Params": "app.index.params",
    **dict.fromkeys(
        ("Containment", "ContainmentResult", "Document", "Group", "IngestResult", "Match",
         "Pair", "QueryResult"),
        "app.index.results",
    ),
    **{name: f"app.index.{name}" for name in ("collections", "records", "texts")},
}  # fmt: skip

__all__ = [
    "BusyError",
    "ConfigMismatchError",
    "Containment",
    "ContainmentResult",
    "Document",
    "Group",
    "Index",
    "IngestResult",
    "Match",
    "NoPassagesError",
    "NoShinglesError",
    "Pair",
    "Params",
    "QueryResult",
    "ThresholdError",
    "TooLargeError",
    "collections",
    "records",
    "texts",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(home)
    value = module if home == f"{__name__}.{name}" else getattr(module, name)
    globals()[name] = value  # asked once
    return value
