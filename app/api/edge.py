"""The one ASGI middleware every request passes: observe, authenticate, bound.

What it does, outermost first:

1. observe (app.api.observe): a request id (the caller's X-Request-ID when it is
   safe, else a new one) echoed in the response, one access log line, and the
   request counted in the metrics, whatever the answer, 401s and 413s included;
2. API keys (app.api.auth): 401/403 before anything of the body is read;
3. body limit (app.api.limits): 413 for a declared Content-Length over the limit at
   once, and for a streamed body as soon as it passes the limit;
4. deadline: 503 for a request still running after NEARDUP_REQUEST_TIMEOUT.

One layer, not four: one coroutine frame and one wrapped ``send`` per request
instead of a chain of them, and the request headers are scanned once.
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api import observe
from app.api.auth import refusal, refuse
from app.api.limits import TooLarge
from app.api.problems import RETRY_AFTER, send_problem
from app.core.keys import KeyRing

_RETRY = [(name.lower().encode(), value.encode()) for name, value in RETRY_AFTER.items()]


class Edge:
    """Observe, authenticate and bound every HTTP request; see the module docstring."""

    def __init__(self, app: ASGIApp, keys: KeyRing, max_bytes: int, timeout: float) -> None:
        self.app = app
        self.keys = keys
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.too_large = f"the request body is over {max_bytes} bytes (NEARDUP_MAX_BODY_BYTES)"
        self.timed_out = f"the request took over {timeout} s (NEARDUP_REQUEST_TIMEOUT)"
        self.ids = observe.RequestIds()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        given = declared = authorization = None
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value  # the last one, as before
            elif name == b"content-length":
                if value.isdigit() and int(value) > self.max_bytes:
                    declared = value
            elif name == b"authorization" and authorization is None:
                authorization = value
        request_id = self.ids.accept(given)
        id_header = (b"x-request-id", request_id.encode())
        status = 500
        response_started = False

        async def observed_send(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message = {**message, "headers": [*message.get("headers", ()), id_header]}
            await send(message)

        try:
            denied = refusal(self.keys, scope["method"], scope["path"], authorization)
            if denied is not None:
                await refuse(observed_send, denied)
            elif declared is not None:
                await send_problem(observed_send, 413, "Request too large", self.too_large)
            else:
                seen = 0
                max_bytes = self.max_bytes
                too_large = self.too_large

                async def limited_receive() -> Message:
                    nonlocal seen
                    message = await receive()
                    if message["type"] == "http.request":
                        seen += len(message.get("body", b""))
                        if seen > max_bytes:
                            raise TooLarge(413, too_large)
                    return message

                try:
                    if scope["path"].startswith(("/duplicates", "/export")):
                        # Streams of the whole corpus are bounded by the corpus, not a clock.
                        await self.app(scope, limited_receive, observed_send)
                    else:
                        try:
                            async with asyncio.timeout(self.timeout):  # no Task per request
                                await self.app(scope, limited_receive, observed_send)
                        except TimeoutError:
                            if not response_started:
                                await send_problem(
                                    observed_send, 503, "Request timed out", self.timed_out, _RETRY
                                )
                except TooLarge:
                    if not response_started:
                        await send_problem(observed_send, 413, "Request too large", self.too_large)
        finally:
            observe.record(scope, request_id, status, time.perf_counter() - started)
