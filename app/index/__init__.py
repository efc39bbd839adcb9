"""Near-duplicate logic: sketching, LSH bands, candidates, verification, ranking.

No HTTP and no wire format: it speaks to Redis only through app.store.
"""

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
