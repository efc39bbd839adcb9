"""One log line and one set of metrics per request, tied together by a request id.

Called by app.api.edge for every HTTP request; kept cheap, since it runs on all of them.
"""

from __future__ import annotations

import itertools
import logging
import os
import re

from starlette.routing import Match
from starlette.types import Scope

from app.core import metrics
from app.service import logs

log = logging.getLogger("neardup.access")
# A caller's request id is echoed and logged only when it is a short token.
_SAFE_ID = re.compile(rb"^[A-Za-z0-9._-]{1,64}$")
MAX_USER_AGENT = 256
_INFO = logging.INFO
_MESSAGE = "%s %s %d"


class RequestIds:
    """The caller's X-Request-ID when it is safe to echo and log, else a new one.

    A new id is 32 hex digits, like a uuid4's: 16 random ones drawn once, then a counter.
    Unique without a system call per request (uuid4 reads os.urandom every time).
    """

    def __init__(self) -> None:
        self._draw()

    def _draw(self) -> None:
        self._pid = os.getpid()
        self._prefix = os.urandom(8).hex()
        self._next = itertools.count()

    def accept(self, given: bytes | None) -> str:
        if given is not None and _SAFE_ID.match(given):
            return given.decode("ascii")
        if os.getpid() != self._pid:  # a worker forked after start-up draws its own prefix
            self._draw()
        return f"{self._prefix}{next(self._next):016x}"


def route_of(scope: Scope) -> object | None:
    """The route a request refused before routing (401, 403, 413, a URL that is not
    UTF-8) was for, so its metrics and log line name it as an answered one's do; None
    where no route takes the path (404). Only such requests pay for the search."""
    router = getattr(scope.get("app"), "router", None)
    partial = None
    for route in getattr(router, "routes", ()):
        try:
            match, _ = route.matches(scope)
        except Exception:  # a path no route can even parse is no route's
            continue
        if match is Match.FULL:  # as the router picks: the first full match
            return route
        if match is Match.PARTIAL and partial is None:
            partial = route  # the path's route for another method (405)
    return partial


def record(
    scope: Scope, request_id: str, status: int, elapsed: float, user_agent: bytes | None = None
) -> None:
    """Count the request in the metrics and write its access log line (the text format
    escapes what the client sent: app.service.logs)."""
    route = scope.get("route")
    if route is None:
        route = route_of(scope)
    # The route template, not the raw path, keeps label values bounded.
    template = getattr(route, "path", None) or "unmatched"
    method = scope["method"]
    metrics.observe_request(method, template, status, elapsed)
    if not log.isEnabledFor(_INFO):
        return
    path = scope["path"]
    client = scope.get("client")
    fields = {
        "request_id": request_id,
        "method": method,
        "path": path,
        "route": template,
        "status": status,
        "duration_ms": round(elapsed * 1000, 3),
        "client": f"{client[0]}:{client[1]}" if client else None,
    }
    if user_agent is not None:
        agent = user_agent[:MAX_USER_AGENT].decode("utf-8", "backslashreplace")
        fields["user_agent"] = agent
    handler = logs.direct_handler(log, _INFO)
    if handler is not None:
        # The usual case: the line straight to the one handler that would write it.
        handler.write_line(_INFO, log.name, _MESSAGE % (method, path, status), fields)
        return
    # What Logger.info(..., extra=fields) makes, without its walk up the stack to find
    # the caller (for fields nobody prints) and its checks of each extra name.
    line = logging.LogRecord(log.name, _INFO, __file__, 0, _MESSAGE, (method, path, status), None)
    line.__dict__.update(fields)
    log.handle(line)
