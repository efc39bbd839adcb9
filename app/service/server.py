"""The HTTP protocol `neardup serve` runs: uvicorn's, with limits for slow clients.

uvicorn times out idle keep-alive connections only: a client that opens a connection
and sends nothing, or half a request header, or a body one byte a minute, holds a
connection (and a file descriptor) for ever, and enough of them stop the service.
Here every connection has one timer at a time:

- from the moment it opens (or, on a kept-alive connection, from the first byte of
  the next request), the request headers must be in within NEARDUP_HEADER_TIMEOUT;
- from the end of the headers, the body must be in within NEARDUP_BODY_TIMEOUT;

otherwise the connection is closed, with a 408 when the client had started a request
it has not finished (the route, if it was reading the body, sees a disconnect). And a
connection beyond NEARDUP_MAX_CONNECTIONS open in this worker is answered 503 with
Retry-After as soon as its headers are in, without reaching the application. A
request whose headers run past MAX_HEADER_BYTES is answered 431 and closed: the
timeout bounds time, not bytes, and uvicorn keeps every header it is sent in memory.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app.core import metrics
from app.core.settings import Settings, load_settings

log = logging.getLogger("neardup.server")

# Seconds between two log lines about closed or refused connections (each line counts
# what happened since the last): a flood of slow clients must not flood the log.
_LOG_EVERY = 10.0

_NEW, _HEADERS, _BODY, _DONE = range(4)
# The most bytes a request's line and headers may take (nginx allows 4 buffers of 8 KB
# by default; a long bearer key and cookies fit many times over).
MAX_HEADER_BYTES = 64 * 1024
# How long a connection refused for its headers is read (and dropped) before it closes.
LINGER_S = 1.0


def _problem(status: bytes, detail: str, *headers: bytes) -> bytes:
    body = orjson.dumps(
        {
            "type": "about:blank",
            "title": status.decode()[4:],
            "status": int(status[:3]),
            "detail": detail,
        }
    )
    head = [
        b"HTTP/1.1 " + status,
        b"content-type: application/problem+json",
        b"content-length: %d" % len(body),
        b"connection: close",
        *headers,
    ]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


class _Tally:
    """Counts one kind of closed connection: a metric each, and a log line at most every
    _LOG_EVERY s saying how many since the last one."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        self.message = message
        self.count = 0
        self.flush: asyncio.TimerHandle | None = None

    def add(self) -> None:
        metrics.CONNECTIONS_CLOSED.labels(self.reason).inc()
        self.count += 1
        if self.flush is None:  # the first in a while is said at once
            self._log()

    def _log(self) -> None:
        """Say how many since the last line; while there are more, again in a while."""
        if self.count:
            log.warning(self.message, self.count)
            self.count = 0
            self.flush = asyncio.get_running_loop().call_later(_LOG_EVERY, self._log)
        else:
            self.flush = None


class Limits:
    """The slow-client limits of this process, from the settings (read once)."""

    def __init__(self, settings: Settings) -> None:
        self.header_timeout = settings.header_timeout
        self.body_timeout = settings.body_timeout
        self.max_connections = settings.max_connections
        self.header_408 = _problem(
            b"408 Request Timeout",
            f"the request headers took over {self.header_timeout} s (NEARDUP_HEADER_TIMEOUT)",
        )
        self.body_408 = _problem(
            b"408 Request Timeout",
            f"the request body took over {self.body_timeout} s (NEARDUP_BODY_TIMEOUT)",
        )
        self.busy_503 = _problem(
            b"503 Service Unavailable",
            f"over {self.max_connections} open connections (NEARDUP_MAX_CONNECTIONS); "
            "retry after Retry-After",
            b"retry-after: 1",
        )
        self.headers_late = _Tally(
            "header_timeout",
            f"closed %d connection(s) that did not send their request headers within "
            f"{self.header_timeout} s (NEARDUP_HEADER_TIMEOUT)",
        )
        self.body_late = _Tally(
            "body_timeout",
            f"closed %d connection(s) that did not send their request body within "
            f"{self.body_timeout} s (NEARDUP_BODY_TIMEOUT)",
        )
        self.headers_431 = _problem(
            b"431 Request Header Fields Too Large",
            f"the request line and headers ran past {MAX_HEADER_BYTES} bytes; send fewer "
            "or shorter headers",
        )
        self.headers_big = _Tally(
            "header_size",
            f"closed %d connection(s) whose request headers ran past {MAX_HEADER_BYTES} bytes",
        )
        self.too_many = _Tally(
            "max_connections",
            f"refused %d connection(s) over NEARDUP_MAX_CONNECTIONS={self.max_connections}",
        )


class _OneSend:
    """A connection's transport that sends a response's head and body in one write.

    uvicorn writes a response's head, then its body: two sends and two TCP segments an
    answer, and on a busy server each send is a good part of what the answer costs
    (server CPU per GET /similar fell about 4% with one). A write is held until the next
    one, which it goes out with, or until the event loop's next turn when none comes in
    the meantime (a HEAD, a 204, a stream's last chunk): the bytes leave in order, and
    at most one turn later than they would have.
    """

    __slots__ = ("_held", "_loop", "_release", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._held: bytes | None = None
        self._release: asyncio.Handle | None = None

    def write(self, data: bytes) -> None:
        held = self._held
        if held is None:
            self._held = bytes(data)
            self._release = self._loop.call_soon(self._flush)
            return
        self._held = None
        if self._release is not None:
            self._release.cancel()
            self._release = None
        self._transport.write(held + data)

    def _flush(self) -> None:
        self._release = None
        held, self._held = self._held, None
        # A connection lost in the meantime has no one to send to.
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def writelines(self, chunks: Any) -> None:
        self.write(b"".join(chunks))

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def write_eof(self) -> None:
        self._flush()
        self._transport.write_eof()

    def abort(self) -> None:
        if self._release is not None:
            self._release.cancel()
        self._held = self._release = None
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + len(self._held or b"")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with header and body timeouts and a connection cap."""

    limits: ClassVar[Limits | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cls = type(self)
        if cls.limits is None:  # each worker process reads its settings once
            cls.limits = Limits(load_settings())
        self._limits: Limits = cls.limits
        self._phase = _NEW
        self._timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._head_bytes = 0  # the request line's and headers' bytes so far, as parsed
        self._head_reads = 0  # bytes read while the headers were not complete
        self._oversize = False  # answered 431: nothing more of this connection is read

    # A timer is armed after the parser has seen the bytes that arrived, not in its
    # callbacks: a whole request in one read arms and cancels nothing.

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(_OneSend(transport, self.loop))  # type: ignore[arg-type]
        limits = self._limits
        if len(self.connections) > limits.max_connections:
            self._refused = True
        self._timer = self.loop.call_later(limits.header_timeout, self._expired)

    def data_received(self, data: bytes) -> None:
        if self._oversize:
            return
        if self._phase <= _HEADERS:
            self._head_reads += len(data)
        super().data_received(data)
        # Headers still not complete after this read: the parser holds a header value
        # whole until it ends (and tells on_header only then), so the bytes read count.
        if self._head_bytes > MAX_HEADER_BYTES or (
            self._phase <= _HEADERS and self._head_reads > MAX_HEADER_BYTES
        ):
            self._too_big()
            return
        if self._timer is None and not self.transport.is_closing():
            if self._phase == _HEADERS:
                self._timer = self.loop.call_later(self._limits.header_timeout, self._expired)
            elif self._phase == _BODY:
                self._timer = self.loop.call_later(self._limits.body_timeout, self._expired)

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        # A new connection's timer, already running, counts from the opening.
        self._phase = _HEADERS
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._head_bytes += len(url)
        if self._head_bytes <= MAX_HEADER_BYTES:
            super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes <= MAX_HEADER_BYTES:  # past it, nothing more is kept
            super().on_header(name, value)

    def _too_big(self) -> None:
        """Answer 431 and close: the request line and headers ran past MAX_HEADER_BYTES.

        The answer is followed by a FIN, and what the client still sends is read and
        dropped for LINGER_S before the connection closes: closed at once with its bytes
        unread, the connection would be reset, and a client still sending would lose the
        431 (lingering close, as web servers do it)."""
        self._cancel()
        self._phase = _DONE
        self._oversize = True
        if not self.transport.is_closing():
            self.transport.write(self._limits.headers_431)
            self.transport.write_eof()
            self._timer = self.loop.call_later(LINGER_S, self.transport.close)
            self._limits.headers_big.add()

    def on_headers_complete(self) -> None:
        if self._oversize:  # a request pipelined after a refused one
            return
        if self._head_bytes > MAX_HEADER_BYTES:
            self._too_big()
            return
        self._head_bytes = self._head_reads = 0
        self._cancel()
        self._phase = _BODY
        if self._refused:
            if self.transport.is_closing():  # a pipelined request after the refusal
                return
            self.transport.write(self._limits.busy_503)
            self.transport.close()
            self._limits.too_many.add()
            return
        super().on_headers_complete()

    def handle_websocket_upgrade(self) -> None:
        # The connection is handed to another protocol: its timers are no longer ours.
        self._cancel()
        self._phase = _DONE
        super().handle_websocket_upgrade()

    def on_body(self, body: bytes) -> None:
        if not self._refused and not self._oversize:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._cancel()
        self._phase = _DONE
        if not self._refused and not self._oversize:
            super().on_message_complete()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expired(self) -> None:
        self._timer = None
        if self.transport.is_closing():
            return
        limits = self._limits
        if self._phase == _BODY:
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(limits.body_408)
            limits.body_late.add()
        else:
            if self._phase == _HEADERS:  # part of a request came: say why it ends
                self.transport.write(limits.header_408)
            limits.headers_late.add()  # _NEW: a connection that never sent a byte
        self.transport.close()
