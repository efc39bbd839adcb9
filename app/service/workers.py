"""How many worker processes `neardup serve` starts when --workers is not given."""

from __future__ import annotations

import os

# Every worker shares one Redis, which runs each command on one thread: past a handful of
# workers it, not Python, is what limits a query, and each worker holds its own memory.
MAX_DEFAULT_WORKERS = 8


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a container's or taskset's cpuset),
    not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def default_workers(cpus: int | None = None) -> int:
    """One worker per usable CPU, at least 1 and at most MAX_DEFAULT_WORKERS."""
    return max(1, min(usable_cpus() if cpus is None else cpus, MAX_DEFAULT_WORKERS))
