"""PAN's measures (tests/support/pan.py) against examples worked out by hand."""

from __future__ import annotations

import math

import pytest
from support.pan import Span, granularity, plagdet, precision, recall, score


def _span(qa: int, qb: int, sa: int, sb: int, q: str = "q", s: str = "s") -> Span:
    return Span(q, qa, qb, s, sa, sb)


def test_an_exact_detection_scores_one() -> None:
    """A detection equal to the case: precision, recall, granularity and plagdet are 1."""
    case = _span(10, 20, 0, 10)
    got = score([case], [case])
    assert (got.precision, got.recall, got.granularity, got.plagdet) == (1, 1, 1, 1)


def test_overshoot_costs_precision_over_both_texts() -> None:
    """A detection 5 characters past a 10+10-character case: precision 20/25, recall 1."""
    case, det = _span(0, 10, 0, 10), _span(0, 15, 0, 10)
    assert precision([case], [det]) == pytest.approx(0.8)
    assert recall([case], [det]) == 1
    assert score([case], [det]).plagdet == pytest.approx(2 * 0.8 / 1.8)


def test_a_case_in_two_pieces_has_granularity_two() -> None:
    """Two pieces covering 90 of 100 characters on each side: recall 0.9, granularity 2,
    plagdet = F1(0.9, 1) / log2(3)."""
    case = _span(0, 100, 0, 100)
    dets = [_span(0, 40, 0, 40), _span(50, 100, 50, 100)]
    got = score([case], dets)
    assert got.recall == pytest.approx(0.9)
    assert got.precision == 1
    assert got.granularity == 2
    assert got.plagdet == pytest.approx((2 * 0.9 / 1.9) / math.log2(3))


def test_overlap_in_one_text_only_is_no_detection() -> None:
    """A detection that overlaps the case in the query but not in the source (or names
    another source) detects nothing: recall and precision 0."""
    case = _span(0, 10, 0, 10)
    for det in (_span(0, 10, 20, 30), _span(0, 10, 0, 10, s="other")):
        assert recall([case], [det]) == 0
        assert precision([case], [det]) == 0
        assert granularity([case], [det]) == 1


def test_recall_and_precision_are_macro_averages() -> None:
    """One of two cases found exactly: recall (1 + 0) / 2; a detection spanning two cases
    and the gap between them: precision 40/60, each case detected once."""
    a, b = _span(0, 10, 0, 10), _span(100, 120, 50, 70)
    assert recall([a, b], [a]) == pytest.approx(0.5)
    assert score([a, b], [a]).plagdet == pytest.approx(2 * 0.5 / 1.5)
    c, d = _span(0, 10, 0, 10), _span(20, 30, 20, 30)
    wide = _span(0, 30, 0, 30)
    assert recall([c, d], [wide]) == 1
    assert precision([c, d], [wide]) == pytest.approx(40 / 60)
    assert granularity([c, d], [wide]) == 1


def test_overlapping_detections_count_characters_once() -> None:
    """Two detections covering the same characters of a case add nothing twice."""
    case = _span(0, 10, 0, 10)
    dets = [_span(0, 8, 0, 8), _span(4, 10, 4, 10)]
    assert recall([case], dets) == 1
    assert granularity([case], dets) == 2


def test_empty_sides_follow_pan() -> None:
    """Nothing to find and nothing found: 1; one side empty: 0; plagdet 0 without recall."""
    case = _span(0, 10, 0, 10)
    assert recall([], []) == 1 and precision([], []) == 1
    assert recall([case], []) == 0 and precision([case], []) == 0
    assert precision([], [case]) == 0
    assert plagdet(0.0, 1.0, 1.0) == 0
