"""The exception that bounds a streamed request body (raised by app.api.edge)."""

from __future__ import annotations

from starlette.exceptions import HTTPException


class TooLarge(HTTPException):
    """Raised from receive() once a streamed body passes the limit.

    An HTTPException because FastAPI's body parsing re-raises those (the
    app's handler then answers 413) and turns any other exception into a 400.
    """
