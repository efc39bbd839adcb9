"""PAN's text-alignment measures (Potthast, Stein, Barrón-Cedeño, Rosso, "An Evaluation
Framework for Plagiarism Detection", COLING 2010), macro-averaged as PAN's evaluator does.

A case (the truth) and a detection (an answer) are both a ``Span``: a character range of a
suspicious text and one of a source text. Each stands for the set of characters it covers
in both texts together, so a detection that runs past the copy in the source costs as
much precision as one that runs past it in the query.

- ``s meet r`` is the characters s and r share when r detects s (they overlap in the
  suspicious text AND in the source, which must be the same texts), else nothing.
- recall = mean over cases s of ``|s meet (union of R)| / |s|``; precision = the same
  with the roles of cases and detections swapped (mean over detections r of
  ``|r meet (union of S)| / |r|``).
- granularity = mean, over cases detected at all, of how many detections detect each.
- plagdet = F1 / log2(1 + granularity).

PAN's conventions at the ends: no cases and no detections gives recall and precision 1;
one side empty gives 0 (so a run that reports nothing has precision 0, and a negative
control with no cases is scored by counting its detections instead, see ``score``).

It lives under tests/support so the tests import it as a module and bench/alignment.py
loads it by path, as bench/common.py loads tests/support/oracle.py: one copy, inside the
tree, and never part of the service.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """Characters [query_start, query_end) of text ``query`` copy [source_start,
    source_end) of text ``source``."""

    query: str
    query_start: int
    query_end: int
    source: str
    source_start: int
    source_end: int

    def __len__(self) -> int:
        return (self.query_end - self.query_start) + (self.source_end - self.source_start)


def detects(a: Span, b: Span) -> bool:
    """Whether two spans overlap in the suspicious text and in the source."""
    return (
        a.query == b.query
        and a.source == b.source
        and a.query_start < b.query_end
        and b.query_start < a.query_end
        and a.source_start < b.source_end
        and b.source_start < a.source_end
    )


def _covered(span_lo: int, span_hi: int, others: list[tuple[int, int]]) -> int:
    """How many characters of [span_lo, span_hi) the ranges of others cover (once each)."""
    cut = sorted((max(lo, span_lo), min(hi, span_hi)) for lo, hi in others)
    total, reach = 0, span_lo
    for lo, hi in cut:
        lo = max(lo, reach)
        if hi > lo:
            total += hi - lo
            reach = hi
    return total


def _macro_recall(cases: Sequence[Span], detections: Sequence[Span]) -> float:
    if not cases and not detections:
        return 1.0
    if not cases or not detections:
        return 0.0
    total = 0.0
    for s in cases:
        hits = [r for r in detections if detects(s, r)]
        if not hits or len(s) == 0:
            continue
        q = _covered(s.query_start, s.query_end, [(r.query_start, r.query_end) for r in hits])
        src = _covered(s.source_start, s.source_end, [(r.source_start, r.source_end) for r in hits])
        total += (q + src) / len(s)
    return total / len(cases)


def recall(cases: Sequence[Span], detections: Sequence[Span]) -> float:
    """PAN's macro-averaged character recall."""
    return _macro_recall(cases, detections)


def precision(cases: Sequence[Span], detections: Sequence[Span]) -> float:
    """PAN's macro-averaged character precision (recall with the roles swapped)."""
    return _macro_recall(detections, cases)


def granularity(cases: Sequence[Span], detections: Sequence[Span]) -> float:
    """Mean detections per detected case (1 when nothing is detected)."""
    counts = [sum(detects(s, r) for r in detections) for s in cases]
    found = [c for c in counts if c]
    return sum(found) / len(found) if found else 1.0


def plagdet(rec: float, prec: float, gran: float) -> float:
    """F1 of precision and recall, divided by log2(1 + granularity)."""
    if rec <= 0 or prec <= 0:
        return 0.0
    f1 = 2 * rec * prec / (rec + prec)
    return f1 / math.log2(1 + gran)


@dataclass(frozen=True)
class Score:
    precision: float
    recall: float
    granularity: float
    plagdet: float
    cases: int
    detections: int


def score(cases: Sequence[Span], detections: Sequence[Span]) -> Score:
    """All four measures of one run."""
    r, p, g = (
        recall(cases, detections),
        precision(cases, detections),
        granularity(cases, detections),
    )
    return Score(p, r, g, plagdet(r, p, g), len(cases), len(detections))
