"""app.service.balance: `neardup serve`'s workers split keep-alive connections evenly."""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import tempfile
import time
from pathlib import Path

import httpx
from support.procs import Server
from support.shares import hold_a_slot

from app.service.balance import WorkerShares

CONNECTIONS = 16


def test_each_worker_claims_its_own_slot_and_a_dead_one_is_not_waited_for() -> None:
    """Two processes claim different slots; a count below this one's is someone with fewer
    only while the process that published it lives."""
    ctx = multiprocessing.get_context("spawn")
    with tempfile.NamedTemporaryFile() as f:
        f.truncate(8 * 3)
        f.flush()
        ready, done = ctx.Queue(), ctx.Queue()
        busy = ctx.Process(target=hold_a_slot, args=(f.name, 9, ready, done))
        idle = ctx.Process(target=hold_a_slot, args=(f.name, 2, ready, done))
        busy.start()
        first = ready.get(timeout=60)
        idle.start()
        second = ready.get(timeout=60)
        mine = WorkerShares(f.name)  # this process: the third slot
        assert {first, second, mine.mine} == {0, 1, 2}
        assert mine.someone_has_fewer(5)  # the idle one's 2
        assert not mine.someone_has_fewer(2)  # nobody below 2
        done.put(None)
        done.put(None)
        busy.join(60)
        idle.join(60)
        assert not mine.someone_has_fewer(5)  # their counts stay, their locks are gone


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


def _established_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "01" and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def _connections_per_worker(server: Server) -> dict[int, int]:
    """Open client connections each worker process holds (from /proc)."""
    inodes = _established_inodes(server.port)
    counts = {}
    for pid in _children(server.proc.pid):
        held = 0
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    held += 1
        except OSError:
            continue
        if held:  # serve's other children (its embedded redis-server) hold none
            counts[pid] = held
    return counts


def _wait_started(server: Server, workers: int) -> None:
    """Until workers worker processes have said their start-up is complete (a connect
    made before a worker accepts goes to the others, as it should)."""
    deadline = time.monotonic() + 60
    while server.output().count("Application startup complete") < workers:
        assert time.monotonic() < deadline, server.output()
        time.sleep(0.1)
    time.sleep(0.2)  # from start-up complete to accepting


def _open_keep_alive(server: Server, n: int) -> list[socket.socket]:
    """n connections, each answered once and kept open, one after another."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200"), "the connection was not served"
        out.append(s)
        time.sleep(0.01)
    return out


def test_two_workers_hold_half_of_sixteen_keep_alive_connections_each(tmp_path: Path) -> None:
    """Sixteen keep-alive connections opened one after another end 8/8 between two workers
    (one either way allowed: a worker descheduled past the grace leaves one to the other),
    where uvicorn's own accept gave 16/0 to 9/7; a worker killed is replaced and takes its
    share of new connections, and the service answers throughout."""
    server = Server(tmp_path, "--workers", "2")
    held: list[socket.socket] = []
    try:
        server.wait_ready()
        _wait_started(server, 2)
        held = _open_keep_alive(server, CONNECTIONS)
        counts = _connections_per_worker(server)
        assert sorted(counts.values()) in ([8, 8], [7, 9]), counts
        for s in held:
            s.close()
        held = []
        victim = next(iter(counts))
        os.kill(victim, signal.SIGKILL)
        _wait_started(server, 3)  # uvicorn's supervisor starts a new worker
        assert httpx.get(server.url + "/healthz", timeout=30).status_code == 200
        held = _open_keep_alive(server, CONNECTIONS)
        counts = _connections_per_worker(server)
        assert victim not in counts and sorted(counts.values()) in ([8, 8], [7, 9]), counts
    finally:
        for s in held:
            s.close()
        assert server.stop() == 0
