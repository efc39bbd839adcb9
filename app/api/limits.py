"""ASGI middleware that bounds what one request may take: body size and time."""

from __future__ import annotations

import asyncio

import orjson
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PROBLEM = b"application/problem+json"


class _TooLarge(HTTPException):
    """Raised from receive() once a streamed body passes the limit.

    An HTTPException because FastAPI's body parsing re-raises those (the
    app's handler then answers 413) and turns any other exception into a 400.
    """


async def _send_problem(send: Send, status: int, title: str, detail: str, retry: bool) -> None:
    body = orjson.dumps({"type": "about:blank", "title": title, "status": status, "detail": detail})
    headers = [(b"content-type", PROBLEM), (b"content-length", str(len(body)).encode())]
    if retry:
        headers.append((b"retry-after", b"1"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class _Started:
    """Wraps send, noting whether the response has started (then no problem can follow)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)


class BodyLimit:
    """Answer 413 to a body over max_bytes, declared or streamed."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        detail = f"the request body is over {self.max_bytes} bytes (NEARDUP_MAX_BODY_BYTES)"
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                await _send_problem(send, 413, "Request too large", detail, False)
                return
        seen = 0
        tracked = _Started(send)

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(413, detail)
            return message

        try:
            await self.app(scope, limited_receive, tracked.send)
        except _TooLarge:
            if not tracked.started:
                await _send_problem(send, 413, "Request too large", detail, False)


class Deadline:
    """Answer 503 to a request still running after timeout seconds."""

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path", "").startswith("/duplicates"):
            # Streams of the whole corpus are bounded by the corpus, not a clock.
            await self.app(scope, receive, send)
            return
        tracked = _Started(send)
        try:
            async with asyncio.timeout(self.timeout):  # same task: no Task per request
                await self.app(scope, receive, tracked.send)
        except TimeoutError:
            if not tracked.started:
                detail = f"the request took over {self.timeout} s (NEARDUP_REQUEST_TIMEOUT)"
                await _send_problem(send, 503, "Request timed out", detail, True)
