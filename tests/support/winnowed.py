"""The kernel's winnow selections as rows, the shape tests/support/oracle.py's winnow2 gives."""

from __future__ import annotations

from app import kernel


def rows(w: kernel.Winnowed) -> list[tuple[int, int, int, int]]:
    """(hash, start, end, folds) of every selection."""
    assert w.folds is not None
    cols = (w.hashes.tolist(), w.starts.tolist(), w.ends.tolist(), w.folds.tolist())
    return list(zip(*cols, strict=True))
