"""The one ASGI middleware every request passes: observe, authenticate, bound, check.

What it does, outermost first:

1. observe (app.api.observe): a request id (the caller's X-Request-ID when it is a
   short token, else a new one) echoed in the response, one access log line, and the
   request counted in the metrics, whatever the answer, 401s and 413s included;
2. API keys (app.api.auth): 401/403 before anything of the body is read;
3. the URL: a path or query string that is not UTF-8 once percent-decoded is a 422
   (the server would substitute U+FFFD, and two ids would name one document);
4. body limit: 413 for a declared Content-Length over the limit at once, and for a
   streamed (or decompressed) body as soon as it passes the limit;
5. the body (app.api.body): JSON per RFC 8259 in UTF-8, plain or gzip, else 415/422;
6. deadline: 503 for a request still running after NEARDUP_REQUEST_TIMEOUT.

HEAD is answered as GET without the body, for every GET route.

One layer, not six: one coroutine frame and one wrapped ``send`` per request
instead of a chain of them, and the request headers are scanned once.
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api import body, observe
from app.api.auth import collection_of, refusal, refuse
from app.api.deps import DEADLINE
from app.api.paths import not_utf8
from app.api.problems import RETRY_AFTER, send_problem
from app.core.deadlines import Deadline
from app.core.keys import KeyRing

# Streams of the whole corpus (under /collections/{name}/ too) are bounded by the corpus,
# not by NEARDUP_REQUEST_TIMEOUT.
STREAMS = ("/duplicates", "/export")
_RETRY = [(name.lower().encode(), value.encode()) for name, value in RETRY_AFTER.items()]
_CLIENT_CLOSED = 499  # logged and counted only: the client left before its body was in


class _HeadDone(Exception):
    """A HEAD answer is complete; the GET route's stream need not go on."""


class Edge:
    """Observe, authenticate, bound and check every HTTP request; see the module docstring."""

    def __init__(
        self,
        app: ASGIApp,
        keys: KeyRing,
        max_bytes: int,
        timeout: float,
        collection: str = "default",
    ) -> None:
        self.app = app
        self.keys = keys
        self.collection = collection  # what routes without /collections/{name} reach
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
        given = declared = authorization = agent = None
        content_type = encoding = None
        has_body = False
        for name, value in scope["headers"]:
            if name == b"x-request-id":
                given = value  # the last one, as before
            elif name == b"content-length":
                if value.isdigit():
                    has_body = has_body or int(value) > 0
                    if int(value) > self.max_bytes:
                        declared = value
            elif name == b"transfer-encoding":
                has_body = True
            elif name == b"content-type":
                content_type = value
            elif name == b"content-encoding":
                encoding = value
            elif name == b"authorization" and authorization is None:
                authorization = value
            elif name == b"user-agent":
                agent = value
        request_id = self.ids.accept(given)
        id_header = (b"x-request-id", request_id.encode())
        status = 500
        response_started = False
        head = scope["method"] == "HEAD"

        async def observed_send(message: Message) -> None:
            nonlocal status, response_started
            if message["type"] == "http.response.start":
                status = message["status"]
                response_started = True
                message = {**message, "headers": [*message.get("headers", ()), id_header]}
            elif head and message["type"] == "http.response.body":
                # The server sends no body for HEAD; a stream is ended here, not read.
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                if message.get("more_body", False):
                    raise _HeadDone
                return
            await send(message)

        app_scope = {**scope, "method": "GET"} if head else scope
        try:
            denied = refusal(
                self.keys, app_scope["method"], scope["path"], authorization, self.collection
            )
            where, bad_url = "path", not_utf8(scope.get("raw_path", b""), "path")
            if bad_url is None:
                where, bad_url = "query", not_utf8(scope["query_string"], "query string")
            if denied is not None:
                await refuse(observed_send, denied)
            elif bad_url is not None:
                await send_problem(observed_send, 422, "Invalid request", bad_url, field=where)
            elif declared is not None:
                await send_problem(observed_send, 413, "Request too large", self.too_large)
            else:
                gzipped = body.gzipped(content_type, encoding) if has_body else False
                if collection_of(scope["path"])[1].startswith(STREAMS):
                    # Streams of the whole corpus are bounded by the corpus, not a clock.
                    await self._run(app_scope, receive, observed_send, has_body, gzipped)
                else:
                    # The body first: a client slow to send it is NEARDUP_BODY_TIMEOUT's
                    # (408, the server's), not the deadline's 503 that invites a retry.
                    given = await self._given(app_scope, receive, has_body, gzipped)
                    # The same deadline for work the routes hand to threads (CPU work that
                    # cannot be cancelled from here checks it: app.api.deps.deadline_of).
                    deadline = asyncio.get_running_loop().time() + self.timeout
                    app_scope.setdefault("state", {})[DEADLINE] = deadline
                    try:
                        # No Task, nor a timer, per request (app.core.deadlines).
                        async with Deadline(deadline):
                            await self.app(app_scope, given, observed_send)
                    except TimeoutError:
                        if not response_started:
                            await send_problem(
                                observed_send, 503, "Request timed out", self.timed_out, _RETRY
                            )
        except body.BodyRefused as refused:
            await send_problem(
                observed_send,
                refused.status,
                refused.title,
                refused.detail,
                refused.headers,
                field="body",
            )
        except body.Disconnected:
            status = _CLIENT_CLOSED
        except _HeadDone:
            pass
        finally:
            if head:
                scope["route"] = app_scope.get("route")  # the matched route, for the metrics
            observe.record(scope, request_id, status, time.perf_counter() - started, agent)

    async def _run(
        self, scope: Scope, receive: Receive, send: Send, has_body: bool, gzipped: bool
    ) -> None:
        """The app, given the body once it is in and checked (when there is one)."""
        await self.app(scope, await self._given(scope, receive, has_body, gzipped), send)

    async def _given(
        self, scope: Scope, receive: Receive, has_body: bool, gzipped: bool
    ) -> Receive:
        """What the app receives: the body, once it is in and checked, as one message
        (when there is one), then the client's own messages."""
        if not has_body:
            return receive
        data = await body.read(receive, self.max_bytes, self.too_large)
        if gzipped:
            data = await body.gunzip(data, self.max_bytes, self.too_large)
            # The app sees what it reads: a plain body of this length.
            kept = (b"content-encoding", b"content-length")
            headers = [(n, v) for n, v in scope["headers"] if n not in kept]
            scope["headers"] = [*headers, (b"content-length", b"%d" % len(data))]
        if data:
            body.check_json(data)
        given = False

        async def replay() -> Message:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": data, "more_body": False}
            return await receive()  # http.disconnect, when the client goes

        return replay
