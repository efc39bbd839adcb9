"""The HTTP servers the service benchmarks start, load and stop themselves."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import OUT, free_port, stop_process
from stores import ThrowawayRedis

HOST = "127.0.0.1"


class Server:
    """A process serving HTTP on a port, started by the bench and stopped by it."""

    def __init__(self, name: str, cmd: list[str], env: dict[str, str], port: int, ready: str):
        self.name, self.cmd, self.env, self.port, self.ready = name, cmd, env, port, ready
        self.proc: subprocess.Popen | None = None
        self.log = OUT / "logs" / f"{name}.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 90.0) -> Server:
        import httpx

        self.log.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.log, "wb")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            self.cmd,
            env=self.env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=tempfile.gettempdir(),
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        url = f"http://{HOST}:{self.port}{self.ready}"
        while True:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{self.name} exited during start-up:\n{tail}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2).status_code == 200:
                    return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{self.name} was not ready in {timeout} s; see {self.log}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, 40)
            self.proc = None


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}


def neardup_server(
    redis: ThrowawayRedis, workers: int | None, collection: str, log_level: str, capacity: int
) -> Server:
    """`neardup serve` on a free port, pointed at redis (not at an embedded Redis);
    workers None passes no --workers: serve's own default, as `make run` gets."""
    exe = Path(sys.executable).with_name("neardup")
    cmd = [str(exe) if exe.exists() else "neardup", "serve", "--host", HOST]
    port = free_port()
    cmd += ["--port", str(port)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    env = clean_env()
    env.update(
        NEARDUP_REDIS_URL=redis.url,
        NEARDUP_COLLECTION=collection,
        NEARDUP_LOG_LEVEL=log_level,
        NEARDUP_DATA_DIR=str(redis.data_dir / "unused"),
        NEARDUP_CAPACITY=str(capacity),
    )
    name = "default" if workers is None else f"{workers}w"
    return Server(f"neardup-{collection}-{name}", cmd, env, port, "/readyz")
