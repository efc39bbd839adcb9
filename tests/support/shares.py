"""A process that holds a slot of app.service.balance's shares file (for tests/test_balance.py:
slots are claimed by locks, which belong to a process, so each claimer is a process)."""

from __future__ import annotations

from typing import Any

from app.service.balance import WorkerShares


def hold_a_slot(path: str, count: int, ready: Any, done: Any) -> None:
    """Claim a slot, publish count, say which slot, and hold it until told."""
    shares = WorkerShares(path)
    shares.publish(count)
    ready.put(shares.mine)
    done.get()
