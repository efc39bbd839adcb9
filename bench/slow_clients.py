"""Slow clients against `neardup serve` with its default limits: are they closed, and is
everyone else answered meanwhile?

Opens N connections that each send half a request header and then nothing (slowloris),
and, while they are open, asks GET /readyz on a new connection every 0.2 s. Prints when
the half-open connections were closed (the server's NEARDUP_HEADER_TIMEOUT, 10 s by
default) and the other clients' latencies, next to the same latencies measured in the
same run with no slow client. Figures only, never assertions.

    .venv/bin/python bench/slow_clients.py [--connections 300] [--window 40]
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from common import free_port, log
from servers import HOST, Server, clean_env


def _serve(workdir: Path) -> Server:
    exe = Path(sys.executable).with_name("neardup")
    port = free_port()
    cmd = [str(exe) if exe.exists() else "neardup", "serve", "--host", HOST, "--port", str(port)]
    cmd += ["--workers", "1"]  # NEARDUP_MAX_CONNECTIONS is per worker: one, as measured
    env = clean_env()
    env.update(NEARDUP_DATA_DIR=str(workdir / "data"), NEARDUP_LOG_LEVEL="warning")
    return Server("slow-clients", cmd, env, port, "/readyz")


def _ask(url: str, seconds: float) -> list[float]:
    """Latencies (s) of GET url on a new connection every 0.2 s for seconds; a failed
    request counts as infinity."""
    took = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        try:
            ok = httpx.get(url, timeout=10).status_code == 200
        except httpx.HTTPError:
            ok = False
        took.append(time.monotonic() - start if ok else float("inf"))
        time.sleep(0.2)
    return took


def _summary(took: list[float]) -> str:
    failed = sum(t == float("inf") for t in took)
    done = sorted(t for t in took if t != float("inf"))
    if not done:
        return f"{len(took)} requests, all failed"
    return (
        f"{len(took)} requests, {failed} failed, p50 {statistics.median(done) * 1000:.1f} ms, "
        f"max {done[-1] * 1000:.1f} ms"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=300)
    parser.add_argument("--window", type=float, default=40.0, help="seconds to watch")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="neardup-slow-") as tmp:
        server = _serve(Path(tmp)).start()
        url = f"http://{HOST}:{server.port}/readyz"
        try:
            baseline = _ask(url, 5.0)
            log(f"no slow client: {_summary(baseline)}")
            opened = time.monotonic()
            socks = []
            for _ in range(args.connections):
                sock = socket.create_connection((HOST, server.port))
                sock.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                sock.setblocking(False)
                socks.append(sock)
            sel = selectors.DefaultSelector()
            for sock in socks:
                sel.register(sock, selectors.EVENT_READ)
            closed_at: list[float] = []
            took: list[float] = []
            end = opened + args.window
            next_ask = time.monotonic()
            while time.monotonic() < end and len(closed_at) < len(socks):
                for key, _ in sel.select(timeout=0.05):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:  # EOF: the server closed it
                        sel.unregister(sock)
                        sock.close()
                        closed_at.append(time.monotonic() - opened)
                if time.monotonic() >= next_ask:
                    start = time.monotonic()
                    try:
                        ok = httpx.get(url, timeout=10).status_code == 200
                    except httpx.HTTPError:
                        ok = False
                    took.append(time.monotonic() - start if ok else float("inf"))
                    next_ask = time.monotonic() + 0.2
            still_open = len(socks) - len(closed_at)
            for key in list(sel.get_map().values()):
                key.fileobj.close()  # type: ignore[union-attr]
            print(
                f"load average {os.getloadavg()[0]:.2f}; {args.connections} half-open connections"
            )
            if closed_at:
                print(
                    f"closed by the server: {len(closed_at)} (first at {min(closed_at):.1f} s, "
                    f"last at {max(closed_at):.1f} s after opening); "
                    f"still open after {args.window:.0f} s: {still_open}"
                )
            else:
                print(
                    f"closed by the server: 0; still open after {args.window:.0f} s: {still_open}"
                )
            print(f"other clients, no slow client: {_summary(baseline)}")
            print(f"other clients, while the slow ones were open: {_summary(took)}")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
