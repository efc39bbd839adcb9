"""py-spy on a server under load (--profile): where the service's CPU goes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from common import log
from load import Req, Runner
from servers import Server
from stores import ThrowawayRedis


def pyspy_record(pid: int, seconds: float, out: Path) -> subprocess.Popen | None:
    exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(exe).exists():
        log("py-spy not found; pip install py-spy to profile")
        return None
    cmd = [exe, "record", "--subprocesses", "-r", "100", "-d"]
    cmd += [str(max(1, round(seconds))), "-p", str(pid), "--format", "raw", "-o", str(out)]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


_IDLE_LEAVES = ("Condition.wait (", "_worker (concurrent/futures/thread.py", "Queue.get (")


def pyspy_top(path: Path, n: int = 25) -> dict[str, list[tuple[str, float]]]:
    """Self and inclusive shares of samples per function, from py-spy's raw output."""
    selfc: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    total = 0
    if not path.exists():
        return {}
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        c = int(count)
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        if frames[-1].startswith(_IDLE_LEAVES):  # parked pool threads, not work
            continue
        total += c
        frames = [re.sub(r"\(/.*?site-packages/", "(", f) for f in frames]
        selfc[frames[-1]] += c
        for f in set(frames):
            incl[f] += c
    if not total:
        return {}
    return {
        "self": [(f, c / total) for f, c in selfc.most_common(n)],
        "inclusive": [(f, c / total) for f, c in incl.most_common(n * 2)],
        "samples": [("total", float(total))],
    }


def profiled_load(
    runner: Runner,
    server: Server,
    redis: ThrowawayRedis,
    reqs: list[Req],
    duration: float,
    out: Path,
) -> dict[str, list[tuple[str, float]]] | None:
    """The load run again under py-spy (its figures are not kept); py-spy's top functions."""
    spy = pyspy_record(server.pid, duration, out)
    runner.run("profiled", server.port, reqs, duration, server.pid, redis)
    if spy is None:
        return None
    spy.wait(60)
    return pyspy_top(out)
