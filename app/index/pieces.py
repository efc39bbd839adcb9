"""What every room of one collection's index works with: its store, its parameters
and its limits (Index holds one; the rooms' functions take it)."""

from __future__ import annotations

from dataclasses import dataclass

from app.index.params import Params
from app.store import Store

DEFAULT_MAX_TEXT_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class Pieces:
    """One collection's store and parameters, with the service's limits on queries."""

    store: Store
    params: Params
    candidate_cap: int
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    # The stored config the index was opened from (None: not known); a write checks it
    # is still the stored one before its records make it visible (writes.write).
    config: bytes | None = None
