"""Logging set-up: plain lines, or one JSON object a line (NEARDUP_LOG_FORMAT=json)."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

# Fields a record may carry through `extra=` that belong in the output.
FIELDS = ("request_id", "method", "path", "route", "status", "duration_ms", "client")


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

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": f"{self._seconds(record.created)}.{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = record.__dict__
        for name in FIELDS:
            if name in fields:
                out[name] = fields[name]
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out).decode()


class TextFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")
        self._seconds = _Seconds(self.default_time_format, self.converter)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        if datefmt:
            return super().formatTime(record, datefmt)
        # logging.Formatter's own format, "2024-01-31 12:00:00,123" in local time.
        return f"{self._seconds(record.created)},{int(record.msecs):03d}"

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = record.__dict__
        extra = " ".join(f"{n}={fields[n]}" for n in FIELDS if n in fields)
        return f"{line} {extra}" if extra else line


def configure(fmt: str, level: str) -> None:
    """Send neardup's and uvicorn's logs to stderr in the chosen format."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    for name in ("neardup", "uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level.upper())
        logger.propagate = False
