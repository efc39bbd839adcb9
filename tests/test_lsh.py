"""LSH band planning: the recall floor, the num_perm budget and the S-curve."""

from __future__ import annotations

import itertools

import pytest

from app.index.lsh import RECALL_FLOOR, plan_bands


@pytest.mark.parametrize("threshold", [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])
@pytest.mark.parametrize("num_perm", [64, 128, 256])
def test_plan_meets_recall_floor_within_budget(threshold: float, num_perm: int) -> None:
    """Every plan fits in num_perm rows and finds a pair at the threshold with p >= floor."""
    plan = plan_bands(threshold, num_perm)
    assert plan.bands * plan.rows <= num_perm
    p = 1.0 - (1.0 - threshold**plan.rows) ** plan.bands
    assert p >= RECALL_FLOOR


def test_plan_rejects_false_positives_far_below_threshold() -> None:
    """At the default 0.5 the bands rarely pair documents under 0.1 similarity."""
    plan = plan_bands(0.5, 128)
    assert plan.candidate_probability(0.1) < 0.05
    assert plan.rows > 1


def test_s_curve_is_monotone_from_zero_to_one() -> None:
    """The S-curve of a plan starts at 0, ends at 1 and never decreases."""
    plan = plan_bands(0.5, 128)
    probs = [plan.candidate_probability(s / 20) for s in range(21)]
    assert probs[0] == 0.0 and probs[-1] == 1.0
    assert all(a <= b for a, b in itertools.pairwise(probs))


def test_higher_threshold_uses_more_rows() -> None:
    """A stricter threshold gets longer bands (fewer, more selective)."""
    assert plan_bands(0.8, 128).rows > plan_bands(0.5, 128).rows


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5])
def test_plan_refuses_thresholds_outside_unit_interval(bad: float) -> None:
    """Thresholds outside (0, 1] are refused."""
    with pytest.raises(ValueError):
        plan_bands(bad, 128)
