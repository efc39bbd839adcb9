"""Logging set-up: plain lines, or one JSON object a line (NEARDUP_LOG_FORMAT=json)."""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, cast

import orjson

from app.core import errors

# Fields a record may carry through `extra=` that belong in the output.
FIELDS = ("request_id", "method", "path", "route", "status", "duration_ms", "client", "user_agent")

# What could end a text log line, start a fake one or hide part of it (control
# characters, line and paragraph separators), and the backslash, so that an escape
# in the output always means an escaped character, never one the client sent.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\\]")
# What a key=value field cannot hold bare: the above, a space, a quote or '='.
_UNQUOTABLE = re.compile(r'[\x00-\x20"=\x7f-\x9f\u2028\u2029\\]')
_UNQUOTABLE_SEARCH = _UNQUOTABLE.search
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def _escape_one(found: re.Match[str]) -> str:
    char = found.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str) -> str:
    """text with every character that could break or forge a log line escaped
    (a newline as the two characters backslash-n); unchanged when it has none."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape_one, text)


def _field(value: Any) -> Any:
    """A key=value field's value: a string that holds a space, quote, '=' or anything
    escape() changes is escaped and quoted, so no value can fake another field."""
    if type(value) is not str or (value and _UNQUOTABLE.search(value) is None):
        return value
    return '"' + escape(value).replace('"', '\\"') + '"'


class _Seconds:
    """A record time's whole-second part, formatted once a second instead of once a line
    (the access log writes a line per request)."""

    def __init__(self, fmt: str, convert: Callable[[float], time.struct_time]) -> None:
        self._fmt = fmt
        self._convert = convert
        self._last: tuple[int, str] = (-1, "")

    def __call__(self, created: float) -> str:
        second = int(created)
        last = self._last
        if last[0] != second:
            last = (second, time.strftime(self._fmt, self._convert(created)))
            self._last = last  # one assignment: safe between threads
        return last[1]


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._seconds = _Seconds("%Y-%m-%dT%H:%M:%S", time.gmtime)

    def _out(
        self, created: float, msecs: float, level: str, name: str, message: str, fields: Any
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ts": f"{self._seconds(created)}.{int(msecs):03d}Z",
            "level": level.lower(),
            "logger": name,
            "msg": message,
        }
        for field in FIELDS:
            if field in fields:
                out[field] = fields[field]
        return out

    def format(self, record: logging.LogRecord) -> str:
        out = self._out(
            record.created,
            record.msecs,
            record.levelname,
            record.name,
            record.getMessage(),
            record.__dict__,
        )
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out).decode()

    def line(
        self, created: float, msecs: float, level: str, name: str, message: str, fields: Any
    ) -> str:
        """What format() makes of a record with these attributes and no exception."""
        return orjson.dumps(self._out(created, msecs, level, name, message, fields)).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")
        self._seconds = _Seconds(self.default_time_format, self.converter)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        # logging.Formatter's own format, "2024-01-31 12:00:00,123" in local time.
        return f"{self._seconds(record.created)},{int(record.msecs):03d}"

    @staticmethod
    def _extra(fields: Any) -> str:
        # _field inlined: this runs for every field of every access log line.
        out = []
        for name in FIELDS:
            if name in fields:
                value = fields[name]
                if type(value) is str and (not value or _UNQUOTABLE_SEARCH(value) is not None):
                    value = _field(value)
                out.append(f"{name}={value}")
        return " ".join(out)

    def formatMessage(self, record: logging.LogRecord) -> str:
        # Messages carry client-sent values (paths, ids): one record, one line.
        record.message = escape(record.message)
        return super().formatMessage(record)

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        extra = self._extra(record.__dict__)
        return f"{line} {extra}" if extra else line

    def line(
        self, created: float, msecs: float, level: str, name: str, message: str, fields: Any
    ) -> str:
        """What format() makes of a record with these attributes and no exception."""
        line = f"{self._seconds(created)},{int(msecs):03d} {level} {name} {escape(message)}"
        extra = self._extra(fields)
        return f"{line} {extra}" if extra else line


class Handler(logging.StreamHandler):
    """The handler configure() installs: a StreamHandler that can also write a line
    made without a LogRecord (see write_line()).

    Those lines (the access log's) are held and written together every HOLD_SECONDS,
    one write for many lines: a write per answered request was ~4% of GET /similar's
    CPU. Any other record, and flush() (at exit too), writes the held lines first, so
    the order of lines is kept; a process killed outright loses at most HOLD_SECONDS of
    access lines. Holding a line takes only a lock of its own, never the handler's
    lock that a write holds, so no request waits for the stream.
    """

    HOLD_SECONDS = 0.05

    def __init__(self, stream: Any = None) -> None:
        super().__init__(stream)
        self._held: list[str] = []
        self._held_lock = threading.Lock()  # _held's; the handler's own orders writes
        self._writer: threading.Thread | None = None
        os.register_at_fork(after_in_child=_forgetting(self))

    def write_line(self, level: int, name: str, message: str, fields: dict[str, Any]) -> None:
        """Hold what emit() would write for a record of logger name at level with message
        and fields as attributes; for callers that have checked direct_handler()."""
        created = time.time()
        formatter = cast(TextFormatter | JsonFormatter, self.formatter)
        msecs = (created - int(created)) * 1000
        line = formatter.line(created, msecs, logging.getLevelName(level), name, message, fields)
        with self._held_lock:
            self._held.append(line + self.terminator)
            if self._writer is None:
                self._writer = threading.Thread(
                    target=self._write_forever, name="log-writer", daemon=True
                )
                self._writer.start()

    def emit(self, record: logging.LogRecord) -> None:
        self.acquire()
        try:
            self._write_held()
            super().emit(record)
        finally:
            self.release()

    def flush(self) -> None:
        self.acquire()
        try:
            self._write_held()
            super().flush()
        finally:
            self.release()

    def _write_held(self) -> None:
        # Under the handler's lock (the order of writes); the held lines taken under theirs.
        if not self._held:
            return
        with self._held_lock:
            held, self._held = self._held, []
        text = "".join(held)
        try:
            self.stream.write(text)
        except RecursionError:
            raise
        except Exception:
            self.handleError(logging.makeLogRecord({"name": "neardup", "msg": text}))

    def _write_forever(self) -> None:
        while True:
            time.sleep(self.HOLD_SECONDS)
            if getattr(self.stream, "closed", False):
                # A closed stream (a test's capture; the interpreter ending) takes no line:
                # the held ones are dropped, and a later write_line starts a writer again.
                with self._held_lock:
                    self._held.clear()
                    self._writer = None
                return
            try:
                self.flush()
            except (OSError, ValueError):
                self._writer = None
                return


def _forgetting(handler: Handler) -> Callable[[], None]:
    """What a forked child does: it has no writer thread of its parent's (and the
    handler is not kept alive for it)."""
    ref = weakref.ref(handler)

    def forget() -> None:
        found = ref()
        if found is not None:
            found._writer = None
            found._held.clear()  # the parent writes them
            # A lock another thread held at the fork stays held in the child: a new one.
            found._held_lock = threading.Lock()

    return forget


def direct_handler(logger: logging.Logger, level: int) -> Handler | None:
    """The Handler that configure() installed, when a record of level from logger would
    reach it and nothing else: no other handler, and no filter that could drop or change
    the record on the way. Then handler.write_line() writes the line that record would have
    made, without making it (a LogRecord and its trip through logging cost more than the
    rest of an access log line); otherwise None, and the record goes through logging.
    """
    if logger.disabled or logger.filters or not logger.isEnabledFor(level):
        return None
    found: Handler | None = None
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            if (
                found is not None
                or type(handler) is not Handler
                or handler.filters
                or handler.level > level
                or type(handler.formatter) not in (TextFormatter, JsonFormatter)
            ):
                return None
            found = handler
        current = current.parent if current.propagate else None
    return found


class StreamCut(logging.Filter):
    """uvicorn logs an exception raised once a response has started, traceback and all.
    For a stream that Redis cut (it went away or stopped answering mid-way) that is an
    event the client sees (the body ends without its last chunk), not a bug: one
    warning line says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        seen = 0
        while exc is not None and not isinstance(exc, errors.Unavailable) and seen < 8:
            exc, seen = exc.__cause__ or exc.__context__, seen + 1
        if isinstance(exc, errors.Unavailable):
            record.msg = "a streamed response was cut: %s"
            record.args = (exc,)
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def configure(fmt: str, level: str) -> None:
    """Send neardup's and uvicorn's logs to stderr in the chosen format."""
    handler = Handler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    for name in ("neardup", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
    uvicorn = logging.getLogger("uvicorn.error")
    uvicorn.filters = [f for f in uvicorn.filters if not isinstance(f, StreamCut)]
    uvicorn.addFilter(StreamCut())
