"""Near-duplicate logic: sketching, LSH bands, candidates, verification, ranking.

No HTTP and no wire format: it speaks to Redis only through app.store.
"""

from app.index.index import (
    BusyError,
    ConfigMismatchError,
    Document,
    Group,
    Index,
    IngestResult,
    Match,
    NoShinglesError,
    Pair,
    Params,
    QueryResult,
    ThresholdError,
    TooLargeError,
)

__all__ = [
    "BusyError",
    "ConfigMismatchError",
    "Document",
    "Group",
    "Index",
    "IngestResult",
    "Match",
    "NoShinglesError",
    "Pair",
    "Params",
    "QueryResult",
    "ThresholdError",
    "TooLargeError",
]
