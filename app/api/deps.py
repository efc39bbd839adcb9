"""What routes receive from the application state."""

from __future__ import annotations

from fastapi import Request

from app.index import Index
from app.service.runtime import UncheckedIndex


async def get_index(request: Request) -> Index:
    """The index; one opened while Redis was down is checked first (503 until it can be)."""
    index = request.app.state.index
    if isinstance(index, UncheckedIndex):
        await index.check()
    return index
