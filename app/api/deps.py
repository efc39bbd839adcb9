"""What routes receive from the application state."""

from __future__ import annotations

from fastapi import Request

from app.api.schemas import CollectionName
from app.index import Index

# The document, similar and duplicates routes exist twice: as they are (the
# service's NEARDUP_COLLECTION) and under this prefix (the collection it names).
COLLECTION_PREFIX = "/collections/{collection}"
# The request's deadline (the event loop's clock, time.monotonic()), set by app.api.edge.
DEADLINE = "neardup.deadline"


def deadline_of(request: Request) -> float | None:
    """When the request's time is up (time.monotonic()), or None without a deadline."""
    state = request.scope.get("state")
    return None if state is None else state.get(DEADLINE)


async def get_index(request: Request) -> Index:
    """The index of the collection the path names, or of the default one; one opened
    while Redis was down is checked first (503 until it can be)."""
    return await request.app.state.collections.get(request.path_params.get("collection"))


async def collection_path(
    collection: CollectionName,
) -> None:
    """Declares the prefix's path parameter (get_index resolves it), so the schema has it."""
