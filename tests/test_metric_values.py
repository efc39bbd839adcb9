"""app.core.metric_values: buffered multiprocess metrics lose, double and delay nothing
a scrape can see. Each case runs in fresh interpreters sharing one metrics directory,
as `neardup serve --workers N` runs them."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

_TOTAL = """
from prometheus_client import CollectorRegistry, multiprocess
registry = CollectorRegistry()
multiprocess.MultiProcessCollector(registry)
print(sum(s.value for f in registry.collect() for s in f.samples
          if s.name == "neardup_candidates_verified_total"))
"""


def _run(code: str, directory: Path) -> str:
    env = {"PROMETHEUS_MULTIPROC_DIR": str(directory), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _total(directory: Path) -> float:
    """What a scrape from another process reads from the shared files."""
    return float(_run(_TOTAL, directory))


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    d = tmp_path / "metrics"
    d.mkdir()
    return d


def test_a_scrape_in_the_process_sees_its_latest_changes(directory: Path) -> None:
    """render() writes the process's own changes before it reads the files."""
    out = _run(
        """
        from app.core import metrics
        metrics.CANDIDATES_VERIFIED.inc(7)
        body, _ = metrics.render()
        line = [l for l in body.decode().splitlines()
                if l.startswith("neardup_candidates_verified_total")]
        print(line[0].split()[-1])
        """,
        directory,
    )
    assert float(out) == 7


def test_another_process_sees_the_changes_after_the_flush_interval(directory: Path) -> None:
    """A worker that keeps running has its changes in the files within a few flushes."""
    code = """
        import sys, time
        from app.core import metrics
        metrics.CANDIDATES_VERIFIED.inc(5)
        print("ready", flush=True)
        time.sleep(30)
        """
    env = {"PROMETHEUS_MULTIPROC_DIR": str(directory), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        seen = 0.0
        for _ in range(50):  # polls for up to ~10 s; the flusher writes every 0.5 s
            seen = _total(directory)
            if seen == 5:
                break
            time.sleep(0.2)
        assert seen == 5
    finally:
        proc.kill()
        proc.wait()


def test_a_process_that_exits_writes_its_changes(directory: Path) -> None:
    """Changes made just before a normal exit reach the files (the exit flush)."""
    _run("from app.core import metrics\nmetrics.CANDIDATES_VERIFIED.inc(3)\n", directory)
    _run("from app.core import metrics\nmetrics.CANDIDATES_VERIFIED.inc(4)\n", directory)
    assert _total(directory) == 7


def test_threads_lose_no_increment(directory: Path) -> None:
    """Four threads incrementing one counter at once: every increment is counted."""
    _run(
        """
        import sys, threading
        from app.core import metrics
        sys.setswitchinterval(1e-6)  # threads switch often, inside an increment too
        def work():
            for _ in range(20000):
                metrics.CANDIDATES_VERIFIED.inc()
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads: t.start()
        for t in threads: t.join()
        """,
        directory,
    )
    assert _total(directory) == 80000


def test_a_subprocess_started_with_preexec_fn_makes_no_files(directory: Path) -> None:
    """A child forked only to exec (Popen with preexec_fn, as the embedded Redis is
    started) makes no metric files of its own pid before it execs."""
    out = _run(
        """
        import subprocess
        from app.core import metrics
        metrics.CANDIDATES_VERIFIED.inc(2)
        child = subprocess.Popen(["true"], preexec_fn=lambda: None)
        child.wait()
        print(child.pid)
        """,
        directory,
    )
    assert not list(directory.glob(f"*_{out}.db")), sorted(p.name for p in directory.iterdir())
    assert _total(directory) == 2


def test_a_forked_child_counts_its_own_changes_once(directory: Path) -> None:
    """A child forked with unwritten changes in its parent counts only its own, in its
    own file: the parent's are not counted twice."""
    _run(
        """
        import os
        from app.core import metrics
        metrics.CANDIDATES_VERIFIED.inc(3)  # not written yet when the fork comes
        pid = os.fork()
        if pid == 0:
            metrics.CANDIDATES_VERIFIED.inc(2)
            metrics.metric_values.flush()
            os._exit(0)
        os.waitpid(pid, 0)
        """,
        directory,
    )
    assert _total(directory) == 5
    assert len(list(directory.glob("counter_*.db"))) == 2
