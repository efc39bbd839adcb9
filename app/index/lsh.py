"""Choosing LSH bands and rows for a collection's threshold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# A band pair is a candidate with probability 1 - (1 - s^r)^b. Verification
# removes false positives, but a false negative is lost for good, so the
# choice first demands this candidate probability at the threshold itself
# and only then trades false positives against false negatives.
RECALL_FLOOR = 0.99
FALSE_POSITIVE_WEIGHT = 0.1
FALSE_NEGATIVE_WEIGHT = 0.9


@dataclass(frozen=True)
class BandPlan:
    """b bands of r rows, with the areas under the S-curve that chose them."""

    bands: int
    rows: int
    threshold: float
    false_positive_area: float
    false_negative_area: float

    def candidate_probability(self, similarity: float) -> float:
        """Probability that a pair of this Jaccard similarity shares a band."""
        return float(1.0 - (1.0 - similarity**self.rows) ** self.bands)


def _areas(threshold: float, bands: int, rows: int) -> tuple[float, float]:
    below = np.linspace(0.0, threshold, 201)
    above = np.linspace(threshold, 1.0, 201)
    fp = np.trapezoid(1.0 - (1.0 - below**rows) ** bands, below)
    fn = np.trapezoid((1.0 - above**rows) ** bands, above)
    return float(fp), float(fn)


def plan_bands(threshold: float, num_perm: int) -> BandPlan:
    """Pick (bands, rows) with bands * rows <= num_perm for this threshold.

    Among the plans whose candidate probability at the threshold reaches
    RECALL_FLOOR, take the one with the smallest weighted error area; if no
    plan reaches the floor, take the one that comes closest to it.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError("threshold must be in (0, 1]")
    best: tuple[float, float, BandPlan] | None = None
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        fp, fn = _areas(threshold, bands, rows)
        plan = BandPlan(bands, rows, threshold, fp, fn)
        shortfall = max(0.0, RECALL_FLOOR - plan.candidate_probability(threshold))
        cost = FALSE_POSITIVE_WEIGHT * fp + FALSE_NEGATIVE_WEIGHT * fn
        key = (shortfall, cost, plan)
        if best is None or key[:2] < best[:2]:
            best = key
    assert best is not None
    return best[2]
