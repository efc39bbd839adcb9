"""One log line and one set of metrics per request, tied together by a request id."""

from __future__ import annotations

import logging
import re
import time
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import metrics

log = logging.getLogger("neardup.access")
_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


class Observe:
    """Log each request with its id, status and duration; count it in the metrics."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers", ())).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _SAFE_ID.match(given) else uuid.uuid4().hex
        status = 500
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            # The route template, not the raw path, keeps label values bounded.
            template = getattr(route, "path", None) or "unmatched"
            labels = (scope["method"], template, str(status))
            metrics.REQUESTS.labels(*labels).inc()
            metrics.LATENCY.labels(*labels).observe(elapsed)
            client = scope.get("client")
            log.info(
                "%s %s %d",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "request_id": request_id,
                    "method": scope["method"],
                    "path": scope["path"],
                    "route": template,
                    "status": status,
                    "duration_ms": round(elapsed * 1000, 3),
                    "client": f"{client[0]}:{client[1]}" if client else None,
                },
            )
