"""Near-duplicate logic: sketching, LSH bands, candidates, verification, ranking.

No HTTP and no wire format: it speaks to Redis only through app.store.
"""

from app.index import collections, records, texts
from app.index.index import (
    BusyError,
    ConfigMismatchError,
    Containment,
    ContainmentResult,
    Document,
    Group,
    Index,
    IngestResult,
    Match,
    NoPassagesError,
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
