"""What bounds one request: its body size and its time (enforced by app.api.edge)."""

from __future__ import annotations

import orjson
from starlette.exceptions import HTTPException
from starlette.types import Send

PROBLEM = b"application/problem+json"


class TooLarge(HTTPException):
    """Raised from receive() once a streamed body passes the limit.

    An HTTPException because FastAPI's body parsing re-raises those (the
    app's handler then answers 413) and turns any other exception into a 400.
    """


async def send_problem(send: Send, status: int, title: str, detail: str, retry: bool) -> None:
    """A problem+json answer sent straight from the middleware."""
    body = orjson.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail})
    headers = [(b"content-type", PROBLEM), (b"content-length", str(len(body)).encode())]
    if retry:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
