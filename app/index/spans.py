"""A span of a query's text that containment sets aside: its code points, and why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Reason = Literal["quote", "bibliography", "short"]


@dataclass(frozen=True)
class Span:
    """Code points [start, end) of the query text set aside, and why."""

    start: int
    end: int
    reason: Reason
