"""The one ranking rule of every answer: best first, each id once.

Only a handle that lost its id (app.index.locks) can repeat one; the better-ranked
entry stands, and every one dropped is counted."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from app.core import metrics


def ranked(
    order: Iterable[int],
    id_of: Callable[[int], str],
    limit: int,
    keep: Callable[[int], bool] | None = None,
) -> list[tuple[int, str]]:
    """The entries of order (best first) with their ids: those keep refuses skipped
    (before the limit, so every entry the bands found can answer), each id once,
    at most limit of them."""
    out: list[tuple[int, str]] = []
    seen: set[str] = set()
    for i in order:
        if keep is not None and not keep(i):
            continue
        doc_id = id_of(i)
        if doc_id in seen:
            metrics.DUPLICATE_IDS_DROPPED.inc()
            continue
        seen.add(doc_id)
        out.append((i, doc_id))
        if len(out) == limit:
            break
    return out
