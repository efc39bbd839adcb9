"""Extraction in worker processes, each file or page with a time and a memory limit.

A PDF parser is a large C++ library handed untrusted bytes: a hostile file may
loop, allocate without end or crash the process. So files are read in separate
processes (spawned, never forked from the service's threads), one file at a time
each, at most `workers` at once; a file that takes longer than `timeout` seconds
gets its worker killed and a FileError, and a worker that dies is replaced. The
service's own process never parses a file, and its event loop only awaits.

HTML pages (content_type text/html) are read the same way (`page`; HTMLError): the
HTML parser's and main-content heuristics' time grows with the square of a hostile
page's nesting or of one element's attributes.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from typing import Any

from app.core.errors import Invalid
from app.index import html
from app.index.errors import TooLargeError
from app.index.formats import NAMES, FileError, extract

DEFAULT_WORKERS = 2
DEFAULT_TIMEOUT = 20.0
# Address space a worker may take (RLIMIT_AS): a file that needs more fails alone.
DEFAULT_MEMORY = 2 * 1024 * 1024 * 1024
# The longest a new worker may take to start (its imports) before it counts as failed.
START_TIMEOUT = 60.0


# The kind of a page's read (html.read_page), beside the file types.
PAGE = "text/html"
_NAMES = {**NAMES, PAGE: "page"}


def _read(kind: str, payload: Any) -> Any:
    """A file's text (payload: its bytes), or a page's (payload: the page and whether its
    quotations are wanted: html.read_page's answer)."""
    if kind == PAGE:
        page, quotes = payload
        return html.read_page(page, quotes)
    return extract(kind, payload)


def _serve(conn: Connection, memory: int) -> None:
    """A worker's loop: (kind, payload, most) in, ("ok", what _read answers), ("error",
    message) or ("large", message) out: a file's text of more than `most` bytes of UTF-8
    (0: any), as NEARDUP_MAX_TEXT_BYTES counts a text sent as such, so a file that expands
    to hundreds of megabytes of text never reaches the service."""
    try:
        import resource

        if memory:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    except (ImportError, ValueError, OSError):
        pass  # no such limit here: the time limit still holds
    try:
        conn.send(("ready", None))  # started and imported: a file's time starts now
    except (OSError, ValueError):
        return
    while True:
        try:
            content_type, raw, most = conn.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[str, Any] = ("ok", _read(content_type, raw))
            text = answer[1]
            # Counted in bytes only where characters may reach them (at most 4 bytes each).
            if (
                most
                and content_type != PAGE
                and len(text) > most // 4
                and len(text.encode("utf-8", "surrogatepass")) > most
            ):
                answer = (
                    "large",
                    f"the {_NAMES[content_type]}'s text is over {most:,} bytes of UTF-8 "
                    "(NEARDUP_MAX_TEXT_BYTES); send a shorter one",
                )
        except Invalid as exc:
            answer = ("error", str(exc))
        except MemoryError:
            answer = ("error", f"the {_NAMES[content_type]} needs more memory than allowed to read")
        except Exception as exc:  # a library's own error on a malformed file
            answer = ("error", f"the {_NAMES[content_type]} cannot be read: {exc}")
        try:
            conn.send(answer)
        except (OSError, ValueError):
            return


class _Worker:
    def __init__(self, memory: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_serve, args=(child, memory), daemon=True, name="neardup-extract"
        )
        self.process.start()
        child.close()
        self.started = False

    def wait_started(self) -> bool:
        """Whether the worker said it is ready within START_TIMEOUT seconds: its start
        (a new interpreter importing the readers, a second or more on a loaded machine)
        is not counted in the first file's time limit."""
        if not self.started:
            try:
                self.started = self.conn.poll(START_TIMEOUT) and self.conn.recv()[0] == "ready"
            except (EOFError, OSError):
                return False
        return self.started

    def kill(self) -> None:
        self.process.kill()
        self.process.join(5)
        self.conn.close()


class Extractors:
    """At most `workers` files read at once, each in a worker process within `timeout`
    seconds and `memory` bytes of address space."""

    def __init__(
        self,
        workers: int = DEFAULT_WORKERS,
        timeout: float = DEFAULT_TIMEOUT,
        memory: int = DEFAULT_MEMORY,
        max_chars: int = 0,
    ) -> None:
        """max_chars: the most bytes of UTF-8 text a file may give (0: any)."""
        self.timeout, self.memory, self.max_chars = timeout, memory, max_chars
        self._threads = ThreadPoolExecutor(workers, thread_name_prefix="neardup-extract")
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()

    def run(self, content_type: str, raw: bytes) -> str:
        """The file's text (blocking: from a thread, or the CLI); FileError otherwise."""
        return str(self._threads.submit(self._run, content_type, raw).result())

    def main_text(self, page: str) -> str:
        """A page's main text (html.extract; blocking: for the CLI), read by a worker
        within the same limits (HTMLError otherwise)."""
        text, _ = self._threads.submit(self._run, PAGE, (page, False)).result()
        return str(text)

    async def text(self, content_type: str, raw: bytes) -> str:
        """The file's text, awaited: the event loop goes on while a worker reads it."""
        loop = asyncio.get_running_loop()
        return str(await loop.run_in_executor(self._threads, self._run, content_type, raw))

    async def page(self, page: str, quotes: bool) -> tuple[str, list[str] | None]:
        """A page's main text and, with quotes, its quotations (html.read_page), read by a
        worker within the same limits (HTMLError otherwise)."""
        loop = asyncio.get_running_loop()
        text, quoted = await loop.run_in_executor(self._threads, self._run, PAGE, (page, quotes))
        return text, quoted

    def _run(self, content_type: str, raw: Any) -> Any:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is not None and not worker.process.is_alive():
            worker.kill()  # reap it and close its pipe
            worker = None
        if worker is None:
            worker = _Worker(self.memory)
        kind = _NAMES.get(content_type, "file")
        failed = html.HTMLError if content_type == PAGE else FileError
        try:
            if not worker.wait_started():
                raise EOFError  # it died starting, or never got going: as a crash
            worker.conn.send((content_type, raw, self.max_chars))
            if not worker.conn.poll(self.timeout):
                worker.kill()
                raise failed(
                    f"the {kind} took longer than {self.timeout:g} s to read and was given up"
                )
            answer: Any = worker.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            worker.kill()
            # A reader that runs out of its address space mostly dies (a C++ library
            # aborts), so the limit is named: a huge text is the usual cause.
            limit = f"{self.memory / 2**30:g} GiB" if self.memory else "the memory it had"
            raise failed(
                f"the {kind} cannot be read: the extractor failed on it (it crashed, or "
                f"needed more than {limit} of memory: a text of many megabytes can)"
            ) from None
        with self._lock:
            self._idle.append(worker)
        status, value = answer
        if status == "large":
            raise TooLargeError(value)  # the title a text sent as such gets
        if status != "ok":
            raise failed(value)
        return value

    def close(self) -> None:
        """Stop every worker (they are daemons too: they end with the service)."""
        self._threads.shutdown(wait=True)
        with self._lock:
            idle, self._idle = self._idle, []
        for worker in idle:
            worker.kill()


_shared: Extractors | None = None
_shared_lock = threading.Lock()
_sizes: tuple[int, float, int, int] = (DEFAULT_WORKERS, DEFAULT_TIMEOUT, DEFAULT_MEMORY, 0)


def configure(workers: int, timeout: float, max_text_bytes: int = 0) -> None:
    """Size the process's extractors (NEARDUP_EXTRACT_WORKERS, NEARDUP_EXTRACT_TIMEOUT; a
    file's text past NEARDUP_MAX_TEXT_BYTES bytes of UTF-8 is refused in the worker);
    extractors already made with other sizes are replaced on their next use."""
    global _sizes, _shared
    with _shared_lock:
        wanted = (workers, timeout, DEFAULT_MEMORY, max_text_bytes)
        if wanted != _sizes:
            _sizes = wanted
            old, _shared = _shared, None
            if old is not None:
                old.close()


def shared() -> Extractors:
    """The process's extractors, made on first use at the configured sizes."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Extractors(*_sizes)
        return _shared
