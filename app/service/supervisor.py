"""Keeps the embedded Redis running: a server that dies is logged and started again.

A thread of `neardup serve` (the process that owns the redis-server child)
watches the child. When it exits, the exit status is logged as an error and
the server is launched again on the same data dir, so it loads the same
append-only file. Until it answers, requests get 503 as for any Redis that is
away. A launch that fails (a corrupt append-only file, a full disk) is logged
with what redis-server said and retried with a growing pause; meanwhile a
status file in the data dir holds the reason, and /healthz answers 503 with
it, so an orchestrator restarts the container or calls an operator.

A file, not shared memory: with `--workers N` the routes run in other
processes, and each only needs to know whether the file is there.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from pathlib import Path

from app.service.embedded import EmbeddedRedis, EmbeddedRedisError, exit_status

log = logging.getLogger("neardup")

POLL_S = 0.2
# Pauses before each launch after a death: never a busy crash loop, first try within 1 s.
BACKOFF_S = (1.0, 1.0, 2.0, 5.0)
DOWN_FILE = "redis.down"
# How long a child's exit waits for serve's own shutdown before it counts as a death.
STOP_GRACE_S = 0.5


def down_file(data_dir: Path) -> Path:
    """Where the supervisor says the embedded Redis cannot be started, and why."""
    return Path(data_dir).resolve() / DOWN_FILE


def down_reason(data_dir: Path) -> str | None:
    """Why the embedded Redis of data_dir is down for good, or None while it is not."""
    try:
        return down_file(data_dir).read_text(errors="replace").strip() or "unknown reason"
    except FileNotFoundError:
        return None


def supervised_dir(redis_url: str | None, data_dir: Path) -> Path | None:
    """The data dir whose supervisor status applies when the service uses redis_url:
    set only when redis_url is the embedded Redis of data_dir (as `neardup serve` hands it on)."""
    return data_dir if redis_url == EmbeddedRedis(data_dir).url else None


class Supervisor:
    """Watches an started EmbeddedRedis from a thread and launches it again when it dies."""

    def __init__(self, embedded: EmbeddedRedis, poll: float = POLL_S) -> None:
        self.embedded = embedded
        self.poll = poll
        self.restarts = 0
        self._stopping = threading.Event()
        self._down = down_file(embedded.data_dir)
        self._thread = threading.Thread(target=self._run, name="redis-supervisor", daemon=True)

    def start(self) -> Supervisor:
        with contextlib.suppress(FileNotFoundError):
            self._down.unlink()  # left by an earlier run
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop watching (before the server is stopped on purpose)."""
        self._stopping.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        while not self._stopping.wait(self.poll):
            code = self.embedded.poll()
            if code is not None:
                # A signal to the whole process group (Ctrl-C, `timeout`, systemd) stops
                # the child and serve together: if serve is stopping too, this is no death.
                if self._stopping.wait(STOP_GRACE_S):
                    return
                log.error(
                    "embedded redis-server (pid %s) %s; starting it again on %s",
                    self.embedded.pid,
                    exit_status(code),
                    self.embedded.data_dir,
                )
                self._relaunch()

    def _relaunch(self) -> None:
        died = time.monotonic()
        attempt = 0
        while not self._stopping.wait(BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]):
            attempt += 1
            try:
                # Launched from this thread, which lives as long as the server should.
                self.embedded.launch(timeout=120)
            except EmbeddedRedisError as exc:
                self._down.write_text(f"embedded Redis cannot be started: {exc}\n")
                log.error(
                    "embedded redis-server could not be started again (attempt %d): %s; "
                    "/healthz answers 503 until it is; retrying",
                    attempt,
                    exc,
                )
                continue
            with contextlib.suppress(FileNotFoundError):
                self._down.unlink()
            self.restarts += 1
            log.warning(
                "embedded redis-server is back (pid %s), %.1f s after it died",
                self.embedded.pid,
                time.monotonic() - died,
            )
            return
