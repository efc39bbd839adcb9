"""app.index.chaining: the runs kept past the work bound (seeding and chaining end to end
are tests/test_align.py's)."""

from __future__ import annotations

import numpy as np

from app.index.chaining import longest_runs


def test_past_the_run_bound_the_longest_runs_are_kept_wherever_they_lie() -> None:
    """When a pair's runs exceed the bound, the copy's long runs are kept in their order,
    not the first runs in the query (a long Chinese or Japanese copy lost all but its
    start to chance letter pairs, and was not found at all)."""
    chance = [[q, q + 2, q + d, q + d + 2] for q in range(0, 3000, 3) for d in (-20, 7)]
    copy = [[q, q + 40, q + 500, q + 540] for q in range(100, 3000, 300)]
    runs = np.array(sorted(chance + copy), np.int64)
    kept = longest_runs(runs, 100)
    assert len(kept) == 100
    assert [list(r) for r in kept if r[1] - r[0] == 40] == copy  # every long run, in order
    assert (np.diff(kept[:, 0]) >= 0).all()
    assert longest_runs(runs[:50], 100).tolist() == runs[:50].tolist()
