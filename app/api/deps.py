"""What routes receive from the application state."""

from __future__ import annotations

from fastapi import Request

from app.index import Index


def get_index(request: Request) -> Index:
    return request.app.state.index
