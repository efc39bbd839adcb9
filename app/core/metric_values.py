"""prometheus_client's multiprocess metric values, written to their files a moment later.

With several workers (PROMETHEUS_MULTIPROC_DIR set) each of prometheus_client's values
takes a lock, asks the OS for the process id and writes its mmap file on every change:
about 0.7 µs, some nine of them an answered query, which cost GET /similar about 8% of
its rate (bench/service.py, 2026-11-27). Here a change is made in memory and the value
marked; a thread of the process writes the marked values every FLUSH_SECONDS, the
process answering /metrics writes its own before it reads the files (flush), and a
process that exits normally writes them at exit. A scrape may so lag another worker's
latest changes by up to FLUSH_SECONDS, and a worker killed outright loses at most the
changes of its last FLUSH_SECONDS.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from typing import Any

from prometheus_client import values

FLUSH_SECONDS = 0.5
log = logging.getLogger("neardup")

_lock = threading.Lock()
_dirty: set[Any] = set()
_flusher: threading.Thread | None = None
_installed: type | None = None
_any_value: Any = None
_forked = False  # a forked child's values still name its parent's files (see _after_fork)


def install() -> None:
    """Make the multiprocess values of metrics created from now on buffered (once;
    only where prometheus_client chose its multiprocess values)."""
    global _installed
    if _installed is not None or not getattr(values.ValueClass, "_multiprocess", False):
        return
    _installed = _buffered(values.MultiProcessValue())
    values.ValueClass = _installed
    atexit.register(flush)
    os.register_at_fork(
        before=_lock.acquire, after_in_parent=_lock.release, after_in_child=_after_fork
    )


def flush() -> None:
    """Write this process's changed values to its files now. A value its file refuses
    (a full disk) stays changed, for the next flush: a scrape still answers."""
    with _lock:
        _moved()
        kept = set()
        for value in _dirty:
            try:
                value._file.write_value(value._key, value._value, value._timestamp)
            except (OSError, ValueError):
                kept.add(value)
        _dirty.clear()
        _dirty.update(kept)
    if kept:
        log.warning("metrics: %d values could not be written to their files", len(kept))


def _buffered(base: type) -> type:
    class BufferedValue(base):
        """A multiprocess value whose changes reach its file at the next flush."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # A new value may grow and remap the file the flusher is writing.
            global _any_value
            with _lock:
                super().__init__(*args, **kwargs)
                _any_value = self

        def inc(self, amount: float) -> None:
            with _lock:
                if _forked:
                    _moved()
                self._value += amount
                self._timestamp = 0.0
                _dirty.add(self)
            if _flusher is None:
                _start()

        def set(self, value: float, timestamp: float | None = None) -> None:
            with _lock:
                if _forked:
                    _moved()
                self._value = value
                self._timestamp = timestamp or 0.0
                _dirty.add(self)
            if _flusher is None:
                _start()

        def get(self) -> float:
            with _lock:
                if _forked:
                    _moved()
                return float(self._value)

    return BufferedValue


def _start() -> None:
    global _flusher
    with _lock:
        if _flusher is not None:
            return
        _flusher = threading.Thread(target=_flush_forever, name="metrics-flush", daemon=True)
    _flusher.start()


def _flush_forever() -> None:
    while True:
        time.sleep(FLUSH_SECONDS)
        try:
            flush()
        except Exception:  # the thread must outlive a bad moment; the next flush retries
            log.exception("metrics: flushing to the shared files failed")


def _after_fork() -> None:
    # Only flags set here: a child may be a subprocess about to exec (preexec_fn), which
    # must not make files of its own. Its values still name its parent's files and hold
    # its parent's counts; _moved moves them, on the child's first use of a metric.
    global _flusher, _forked
    _flusher = None
    _dirty.clear()
    _forked = True
    _lock.release()  # taken before the fork, so that no flush was half done in it


def _moved() -> None:
    """After a fork, once (under _lock): prometheus_client moves every value to files of
    this process's pid, from zero, once one of them sees the pid change."""
    global _forked
    if _forked:
        _forked = False
        if _any_value is not None:
            _any_value._MmapedValue__check_for_pid_change()
