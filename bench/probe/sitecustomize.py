"""A probe that bench/paced.py puts into `neardup serve`'s processes (PYTHONPATH), so
the bench sees what a request's latency is made of from inside the server.

Only with NDBENCH_PROBE_DIR (a directory): it records every garbage collection's
pause, wall and CPU time (gc.callbacks), and the event loop's lag (a thread schedules
a callback on the running loop every 10 ms and times how long the loop takes to run
it). The bench writes "N reset" or "N dump" into DIR/cmd; each process answers a dump
with DIR/out-PID-N.json: the pauses and lags since its last reset. Nothing of it runs
in a normal `neardup serve`. With NDBENCH_GC_FREEZE, it also calls gc.freeze() once the
server runs (an experiment: what a frozen start-up heap saves each collection).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import threading
import time
from pathlib import Path

_DIR = os.environ.get("NDBENCH_PROBE_DIR")
_LIMIT = 500_000  # samples kept at most between a reset and a dump


def _install(directory: Path) -> None:
    pauses: list[tuple[float, float, int]] = []  # wall seconds, CPU seconds, generation
    lags: list[float] = []
    started: list[tuple[float, float]] = []

    def on_gc(phase: str, info: dict) -> None:
        # CPU time beside wall time: on a busy machine a collection's wall time also
        # holds the time the process waited for a core.
        if phase == "start":
            started.append((time.perf_counter(), time.thread_time()))
        elif started and len(pauses) < _LIMIT:
            wall, cpu = started.pop()
            pauses.append(
                (time.perf_counter() - wall, time.thread_time() - cpu, int(info["generation"]))
            )

    gc.callbacks.append(on_gc)

    def running_loop() -> asyncio.AbstractEventLoop | None:
        for obj in gc.get_objects():
            if isinstance(obj, asyncio.AbstractEventLoop) and obj.is_running():
                return obj
        return None

    def watch() -> None:
        loop = None
        for _ in range(120):  # the server's loop starts within a minute, or never here
            time.sleep(0.5)
            loop = running_loop()
            if loop is not None:
                break
        if loop is not None and os.environ.get("NDBENCH_GC_FREEZE"):
            # The experiment of bench/paced.py --gc-freeze: the heap the server built
            # while starting moves to the permanent generation, which no collection scans.
            loop.call_soon_threadsafe(gc.freeze)
        seen = ""
        next_cmd = 0.0
        while True:
            t0 = time.perf_counter()
            if loop is not None and len(lags) < _LIMIT and not loop.is_closed():

                def ran(t0: float = t0) -> None:
                    lags.append(time.perf_counter() - t0)

                try:
                    loop.call_soon_threadsafe(ran)
                except RuntimeError:  # the loop closed: the server is stopping
                    return
            if t0 >= next_cmd:
                next_cmd = t0 + 0.05
                try:
                    cmd = (directory / "cmd").read_text()
                except OSError:
                    cmd = ""
                if cmd and cmd != seen:
                    seen = cmd
                    n, action = cmd.split()
                    if action == "dump":
                        out = {"pid": os.getpid(), "loop": loop is not None}
                        out |= {"gc": list(pauses), "lag": list(lags)}
                        tmp = directory / f".out-{os.getpid()}-{n}"
                        tmp.write_text(json.dumps(out))
                        tmp.rename(directory / f"out-{os.getpid()}-{n}.json")
                    pauses.clear()
                    lags.clear()
            time.sleep(0.01)

    threading.Thread(target=watch, name="bench-probe", daemon=True).start()


if _DIR:
    _install(Path(_DIR))
