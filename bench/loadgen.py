"""The Python load generator: keep-alive HTTP/1.1 connections, one request in flight each.

bench/load.py runs it in a process of its own when wrk is not installed, so its CPU is
counted apart from the bench's and the servers':

    python bench/loadgen.py SPEC.json OUT.json

SPEC holds host, port, connections, duration (s) and requests ([method, path, body|null]);
each connection cycles through the requests from its own offset until the duration is up.
OUT gets requests, errors (non-200), seconds, latency percentiles (ms), the answers'
counters [answered, candidates, capped, results] and the client's CPU in cores.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

_CANDIDATES = re.compile(rb'"candidates":(\d+)')
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)")


class _Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, one request in flight."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.need = -1
        self.head_end = 0
        self.status = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if self.need < 0:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buf[:end]).lower()
            self.status = int(head[9:12])
            m = _CONTENT_LENGTH.search(head)
            if m is None:
                self._fail(RuntimeError("response without content-length"))
                return
            length = int(m.group(1))
            self.head_end = end + 4
            self.need = self.head_end + length
        if len(self.buf) >= self.need:
            body = bytes(self.buf[self.head_end : self.need])
            del self.buf[: self.need]
            self.need = -1
            waiter, self.waiter = self.waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_result((self.status, body))

    def _fail(self, exc: Exception) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"connection lost: {exc}"))

    async def send(self, raw: bytes) -> tuple[int, bytes]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return await self.waiter


async def _loadgen(spec: dict) -> dict:
    host, port = spec["host"], spec["port"]
    raws = []
    for method, path, body in spec["requests"]:
        data = b"" if body is None else body.encode()
        head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        raws.append(head.encode() + b"\r\n" + data)
    loop = asyncio.get_running_loop()
    conns = []
    for _ in range(spec["connections"]):
        _, proto = await loop.create_connection(_Conn, host, port)
        conns.append(proto)
    lat: list[float] = []
    stats = [0, 0, 0, 0]  # answered, candidates, capped, results
    errors = 0
    deadline = time.perf_counter() + spec["duration"]

    async def worker(k: int, conn: _Conn) -> None:
        nonlocal errors
        i = (k * 7919) % len(raws)
        clock = time.perf_counter
        while clock() < deadline:
            i = (i + 1) % len(raws)
            t0 = clock()
            status, body = await conn.send(raws[i])
            lat.append(clock() - t0)
            if status != 200:
                errors += 1
                continue
            m = _CANDIDATES.search(body)
            if m is not None:
                stats[0] += 1
                stats[1] += int(m.group(1))
                stats[2] += b'"capped":true' in body
                stats[3] += body.count(b'"similarity":')

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(k, c) for k, c in enumerate(conns)))
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    for c in conns:
        if c.transport is not None:
            c.transport.close()
    a = np.asarray(lat) * 1000
    return {
        "requests": len(lat),
        "errors": errors,
        "seconds": elapsed,
        "p50": float(np.percentile(a, 50)) if len(a) else 0.0,
        "p99": float(np.percentile(a, 99)) if len(a) else 0.0,
        "p999": float(np.percentile(a, 99.9)) if len(a) else 0.0,
        "max": float(a.max()) if len(a) else 0.0,
        "stats": stats,
        "client_cpu": cpu / elapsed,
    }


def main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text())
    try:
        import uvloop

        result = uvloop.run(_loadgen(spec))
    except ImportError:
        result = asyncio.run(_loadgen(spec))
    Path(out_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
