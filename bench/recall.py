"""Recall of the planted near-duplicates and precision of what was returned.

Recall counts planted pairs whose exact word-3-shingle Jaccard is at least THRESHOLD +
RECALL_MARGIN, so pairs right at the threshold, which an estimate may put on either side,
do not decide it; precision checks every returned (query, answer) pair against the exact
Jaccard. bench/baseline.py scores datasketch with the same summary.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import numpy as np
from common import Corpus, Pair
from servers import HOST

THRESHOLD = 0.5
RECALL_MARGIN = 0.05  # planted pairs count for recall from exact Jaccard >= threshold + this
RECALL_SAMPLE = 5000  # planted pairs queried for recall, at most
J_BUCKETS = (0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 1.01)


def recall_pairs(corpus: Corpus, seed: int = 3) -> list[Pair]:
    """Planted pairs at or above the threshold, sampled to at most RECALL_SAMPLE."""
    pairs = [p for p in corpus.pairs if p.jaccard >= THRESHOLD]
    if len(pairs) > RECALL_SAMPLE:
        rng = np.random.default_rng(seed)
        pick = rng.choice(len(pairs), RECALL_SAMPLE, replace=False)
        pairs = [pairs[i] for i in sorted(pick.tolist())]
    return pairs


def recall_summary(
    corpus: Corpus, pairs: list[Pair], found: list[bool], returned: list[list[int]]
) -> dict[str, Any]:
    """Recall by exact-Jaccard bucket and precision of what was returned."""
    out: dict[str, Any] = {"buckets": {}}
    js = np.array([p.jaccard for p in pairs])
    hit = np.array(found, dtype=bool)
    for lo, hi in itertools.pairwise(J_BUCKETS):
        sel = (js >= lo) & (js < hi)
        if sel.any():
            out["buckets"][f"{lo:.2f}-{min(hi, 1.0):.2f}"] = [int(hit[sel].sum()), int(sel.sum())]
    counted = js >= THRESHOLD + RECALL_MARGIN
    out["pairs"] = int(counted.sum())
    out["recall"] = float(hit[counted].mean()) if counted.any() else None
    # precision: of the (query, answer) pairs returned, how many are >= threshold exactly
    good = total = 0
    for p, ans in zip(pairs, returned, strict=True):
        for j in ans:
            if j != p.a:
                total += 1
                good += corpus.exact(p.a, j) >= THRESHOLD
    out["returned"] = total
    out["precision"] = good / total if total else None
    return out


async def _neardup_recall(port: int, corpus: Corpus, pairs: list[Pair]) -> tuple:
    import httpx

    index = {doc_id: i for i, doc_id in enumerate(corpus.ids)}
    found: list[bool] = [False] * len(pairs)
    returned: list[list[int]] = [[] for _ in pairs]
    todo = list(range(len(pairs)))

    async def client() -> None:
        async with httpx.AsyncClient(base_url=f"http://{HOST}:{port}", timeout=60) as http:
            while todo:
                k = todo.pop()
                p = pairs[k]
                r = await http.get(
                    f"/similar/{corpus.ids[p.a]}", params={"threshold": THRESHOLD, "limit": 1000}
                )
                r.raise_for_status()
                got = [index[m["id"]] for m in r.json()["results"]]
                returned[k] = got
                found[k] = p.b in got

    await asyncio.gather(*(client() for _ in range(8)))
    return found, returned


def neardup_recall(port: int, corpus: Corpus, pairs: list[Pair]) -> dict[str, Any]:
    found, returned = asyncio.run(_neardup_recall(port, corpus, pairs))
    return recall_summary(corpus, pairs, found, returned)
