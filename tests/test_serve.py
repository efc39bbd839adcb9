"""`neardup serve` as a user runs it: embedded Redis, restarts, workers, bad settings."""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from pathlib import Path

import httpx
import pytest
import redis
from support.procs import RedisProc, Server, wait_until

from app.service.workers import default_workers

TEXT = "Storm waters rose along the coast on Monday as residents moved inland for safety"


def _redis_alive(workdir: Path) -> bool:
    """Whether the embedded Redis of a Server in workdir (data dir workdir/data) answers."""
    sock = workdir / "data" / "redis.sock"
    if not sock.exists():
        return False
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(sock))
            return True
        except OSError:
            return False


def test_restart_on_same_data_dir_loses_nothing(tmp_path: Path) -> None:
    """Documents written before a graceful stop are all there after a restart."""
    server = Server(tmp_path)
    server.wait_ready()
    docs = [{"id": f"d{i}", "text": f"{TEXT} number {i} of the series"} for i in range(50)]
    assert httpx.post(server.url + "/documents/batch", json={"documents": docs}).status_code == 200
    before = httpx.get(server.url + "/similar/d0").json()["results"]
    assert server.stop() == 0
    assert not _redis_alive(tmp_path)
    again = Server(tmp_path)
    try:
        again.wait_ready()
        for i in range(50):
            assert httpx.get(f"{again.url}/documents/d{i}").status_code == 200
        assert httpx.get(again.url + "/similar/d0").json()["results"] == before
        assert httpx.get(again.url + "/docs").status_code == 200
    finally:
        again.stop()


def test_kill_9_leaves_no_redis_and_no_lock(tmp_path: Path) -> None:
    """After kill -9 of serve, its Redis exits, and the next serve starts on the same data."""
    server = Server(tmp_path)
    server.wait_ready()
    httpx.put(server.url + "/documents/kept", json={"text": TEXT})
    server.stop(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _redis_alive(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _redis_alive(tmp_path)
    again = Server(tmp_path)
    try:
        again.wait_ready()
        assert httpx.get(again.url + "/documents/kept").status_code == 200
    finally:
        again.stop()


def test_two_workers_share_one_embedded_redis(tmp_path: Path) -> None:
    """With --workers 2, a write through one worker is read by every request after it."""
    server = Server(tmp_path, "--workers", "2")
    try:
        server.wait_ready()
        for i in range(20):
            httpx.put(f"{server.url}/documents/w{i}", json={"text": f"{TEXT} {i}"})
        with httpx.Client() as c:  # fresh connections spread over both workers
            for i in range(20):
                assert c.get(f"{server.url}/documents/w{i}").status_code == 200
    finally:
        assert server.stop() == 0


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


def test_kill_9_of_serve_takes_its_workers_with_it(tmp_path: Path) -> None:
    """kill -9 of a 2-worker serve leaves no worker holding the port: the next serve there
    starts."""
    server = Server(tmp_path, "--workers", "2")
    server.wait_ready()
    kids = _children(server.proc.pid)
    assert len(kids) >= 3, kids  # the embedded Redis, two workers (and a resource tracker)
    server.stop(signal.SIGKILL)
    assert wait_until(lambda: not any(_alive(p) for p in kids), 15), [p for p in kids if _alive(p)]
    again = Server(tmp_path, "--workers", "2", port=server.port)
    try:
        again.wait_ready()
    finally:
        assert again.stop() == 0


def test_a_stopped_serve_leaves_no_metrics_directory(tmp_path: Path) -> None:
    """The directory a multi-worker serve shares its metrics through goes when it stops."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    server = Server(tmp_path, "--workers", "2", TMPDIR=str(scratch))
    server.wait_ready()
    assert [p.name for p in scratch.iterdir() if p.name.startswith("neardup-metrics-")]
    assert server.stop() == 0
    assert not [p.name for p in scratch.iterdir() if p.name.startswith("neardup-metrics-")]


def test_second_server_on_same_data_dir_is_refused(tmp_path: Path) -> None:
    """A second serve on a data dir in use exits with a message instead of sharing it."""
    first = Server(tmp_path)
    try:
        first.wait_ready()
        with Server(tmp_path) as second:
            assert second.proc.wait(timeout=30) != 0
            assert "another neardup" in second.output()
    finally:
        first.stop()


@pytest.mark.parametrize(
    ("name", "value"),
    [("NEARDUP_NUM_PERM", "7"), ("NEARDUP_SHINGLE", "word:99"), ("NEARDUP_THRESHOLD", "x")],
)
def test_invalid_setting_stops_start_up_naming_it(tmp_path: Path, name: str, value: str) -> None:
    """A bad NEARDUP_* variable stops serve with a message naming that variable."""
    with Server(tmp_path, **{name: value}) as server:
        assert server.proc.wait(timeout=30) == 2
        assert name in server.output()


def test_changed_sketch_parameters_are_refused(tmp_path: Path) -> None:
    """A collection made with one threshold will not open with another: serve exits 3
    with one line naming what differs, not the workers' tracebacks."""
    server = Server(tmp_path)
    server.wait_ready()
    httpx.put(server.url + "/documents/x", json={"text": TEXT})
    server.stop()
    with Server(tmp_path, NEARDUP_THRESHOLD="0.8") as other:
        assert other.proc.wait(timeout=30) == 3
        assert "threshold: stored 0.5, configured 0.8" in other.output()
        assert "Traceback" not in other.output()


def test_a_redis_that_wants_a_password_is_named_not_retried(tmp_path: Path) -> None:
    """serve on a Redis that asks for a password its URL does not carry exits 3 with one
    line saying to put the credentials in NEARDUP_REDIS_URL; a service whose Redis starts
    asking for one answers 503 saying the same, without Retry-After (an operator must act)."""
    with RedisProc(tmp_path / "redis") as rds:
        with rds.client() as r:
            r.config_set("requirepass", "s3cret")
        with Server(tmp_path / "refused", NEARDUP_REDIS_URL=rds.url) as refused:
            assert refused.proc.wait(timeout=30) == 3
            said = refused.output()
            assert "NEARDUP_REDIS_URL" in said and "Traceback" not in said, said
        with redis.Redis(unix_socket_path=str(rds.socket), password="s3cret") as r:
            r.config_set("requirepass", "")
        server = Server(tmp_path / "served", NEARDUP_REDIS_URL=rds.url)
        try:
            server.wait_ready()
            with rds.client() as r:
                r.config_set("requirepass", "s3cret")
                r.client_kill_filter(_type="normal", skipme=True)
            time.sleep(0.2)
            resp = httpx.put(server.url + "/documents/x", json={"text": TEXT})
            assert resp.status_code == 503, resp.text
            assert "NEARDUP_REDIS_URL" in resp.json()["detail"]
            assert "retry-after" not in resp.headers
        finally:
            server.stop()
            with redis.Redis(unix_socket_path=str(rds.socket), password="s3cret") as r:
                r.config_set("requirepass", "")  # as RedisProc stops it


def test_default_workers_are_one_per_usable_cpu_capped() -> None:
    """Without --workers, serve starts one worker per CPU it may use, at least 1, at most 8."""
    assert [default_workers(n) for n in (1, 2, 3, 8, 9, 64)] == [1, 2, 3, 8, 8, 8]
    assert default_workers() == min(len(os.sched_getaffinity(0)), 8)


@pytest.mark.parametrize(
    ("pinned", "setting"), [(True, None), (False, None), (True, 2)], ids=["one-cpu", "all", "env"]
)
def test_serve_without_workers_starts_the_default(
    tmp_path: Path, pinned: bool, setting: int | None
) -> None:
    """serve without --workers runs NEARDUP_WORKERS workers, else one per usable CPU (1 when
    pinned to one), as the server processes uvicorn reports starting count them."""
    cpus = {min(os.sched_getaffinity(0))} if pinned else None
    expected = setting or (1 if pinned else min(len(os.sched_getaffinity(0)), 8))
    env = {} if setting is None else {"NEARDUP_WORKERS": str(setting)}
    server = Server(tmp_path, workers=None, cpus=cpus, **env)

    def workers() -> set[str]:
        return set(re.findall(r"Started server process \[(\d+)\]", server.output()))

    try:
        server.wait_ready()
        assert wait_until(lambda: len(workers()) >= expected, 30)
        assert len(workers()) == expected
        assert f"neardup: {expected} worker" in server.output()
    finally:
        assert server.stop() == 0
