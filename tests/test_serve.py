"""`neardup serve` as a user runs it: embedded Redis, restarts, workers, bad settings."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from corpus import neardup_cmd

TEXT = "Storm waters rose along the coast on Monday as residents moved inland for safety"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A `neardup serve` child process on a free port."""

    def __init__(self, data_dir: Path, *args: str, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        environ = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
        environ.update({"NEARDUP_DATA_DIR": str(data_dir), **env})
        self.proc = subprocess.Popen(
            [*neardup_cmd(), "serve", "--port", str(self.port), *args],
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                out = self.proc.stdout.read().decode() if self.proc.stdout else ""
                raise AssertionError(f"serve exited with {self.proc.returncode}:\n{out}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError("serve did not become ready")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=30)
        finally:
            if self.proc.stdout:
                self.proc.stdout.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "data"


def _redis_alive(data_dir: Path) -> bool:
    sock = data_dir / "redis.sock"
    if not sock.exists():
        return False
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(sock))
            return True
        except OSError:
            return False


def test_restart_on_same_data_dir_loses_nothing(data_dir: Path) -> None:
    """Documents written before a graceful stop are all there after a restart."""
    server = Server(data_dir)
    server.wait_ready()
    docs = [{"id": f"d{i}", "text": f"{TEXT} number {i} of the series"} for i in range(50)]
    assert httpx.post(server.url + "/documents/batch", json={"documents": docs}).status_code == 200
    before = httpx.get(server.url + "/similar/d0").json()["results"]
    assert server.stop() == 0
    assert not _redis_alive(data_dir)
    again = Server(data_dir)
    try:
        again.wait_ready()
        for i in range(50):
            assert httpx.get(f"{again.url}/documents/d{i}").status_code == 200
        assert httpx.get(again.url + "/similar/d0").json()["results"] == before
        assert httpx.get(again.url + "/docs").status_code == 200
    finally:
        again.stop()


def test_kill_9_leaves_no_redis_and_no_lock(data_dir: Path) -> None:
    """After kill -9 of serve, its Redis exits, and the next serve starts on the same data."""
    server = Server(data_dir)
    server.wait_ready()
    httpx.put(server.url + "/documents/kept", json={"text": TEXT})
    server.stop(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _redis_alive(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _redis_alive(data_dir)
    again = Server(data_dir)
    try:
        again.wait_ready()
        assert httpx.get(again.url + "/documents/kept").status_code == 200
    finally:
        again.stop()


def test_two_workers_share_one_embedded_redis(data_dir: Path) -> None:
    """With --workers 2, a write through one worker is read by every request after it."""
    server = Server(data_dir, "--workers", "2")
    try:
        server.wait_ready()
        for i in range(20):
            httpx.put(f"{server.url}/documents/w{i}", json={"text": f"{TEXT} {i}"})
        with httpx.Client() as c:  # fresh connections spread over both workers
            for i in range(20):
                assert c.get(f"{server.url}/documents/w{i}").status_code == 200
    finally:
        assert server.stop() == 0


def test_second_server_on_same_data_dir_is_refused(data_dir: Path) -> None:
    """A second serve on a data dir in use exits with a message instead of sharing it."""
    first = Server(data_dir)
    try:
        first.wait_ready()
        second = Server(data_dir)
        assert second.proc.wait(timeout=30) != 0
        assert second.proc.stdout is not None
        assert b"another neardup" in second.proc.stdout.read()
    finally:
        first.stop()


@pytest.mark.parametrize(
    ("name", "value"),
    [("NEARDUP_NUM_PERM", "7"), ("NEARDUP_SHINGLE", "word:99"), ("NEARDUP_THRESHOLD", "x")],
)
def test_invalid_setting_stops_start_up_naming_it(data_dir: Path, name: str, value: str) -> None:
    """A bad NEARDUP_* variable stops serve with a message naming that variable."""
    server = Server(data_dir, **{name: value})
    assert server.proc.wait(timeout=30) == 2
    assert server.proc.stdout is not None
    assert name.encode() in server.proc.stdout.read()


def test_changed_sketch_parameters_are_refused(data_dir: Path) -> None:
    """A collection made with one threshold will not open with another."""
    server = Server(data_dir)
    server.wait_ready()
    httpx.put(server.url + "/documents/x", json={"text": TEXT})
    server.stop()
    other = Server(data_dir, NEARDUP_THRESHOLD="0.8")
    assert other.proc.wait(timeout=30) != 0
    assert other.proc.stdout is not None
    assert b"threshold" in other.proc.stdout.read()
