"""Hot bands and crowded neighbourhoods against a real `neardup serve` and real Redis.

The texts are 120 words, so every fingerprint is complete and the service's similarity
is the exact Jaccard: the oracle (plain Python shingle sets) must agree with every pair.
"""

from __future__ import annotations

import itertools
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from support import oracle
from support.corpus import read_corpus
from support.procs import Server
from support.textgen import VOCAB

COPIES = 150
# Far below the copies: the cap of an interactive query must not limit a scan.
CAP = 20


def _base(n: int = 120) -> list[str]:
    return next(t.split() for _, t in read_corpus() if len(t.split()) >= n)[:n]


def _edit(words: list[str], rate: float, rng: random.Random) -> str:
    return " ".join(
        f"{rng.choice(VOCAB)}{rng.randrange(10**6)}" if rng.random() < rate else w for w in words
    )


def _shingles(texts: dict[str, str]) -> dict[str, set]:
    return {i: oracle.shingles(t, "word:3") for i, t in texts.items()}


def _serve(tmp: Path, store_url: str, name: str, **env: str) -> Server:
    server = Server(
        tmp,
        NEARDUP_REDIS_URL=store_url,
        NEARDUP_COLLECTION=f"{name}{os.getpid()}x{random.randrange(10**9)}",
        NEARDUP_LOG_LEVEL="warning",
        **env,
    )
    server.wait_ready()
    return server


def _ingest(server: Server, texts: dict[str, str]) -> None:
    items = list(texts.items())
    for lo in range(0, len(items), 250):
        docs = [{"id": i, "text": t} for i, t in items[lo : lo + 250]]
        for _ in range(5):  # a 503 asks for a retry (a slow cluster node)
            r = httpx.post(f"{server.url}/documents/batch", json={"documents": docs}, timeout=60)
            if r.status_code != 503:
                break
            time.sleep(0.5)
        assert r.status_code == 200 and not r.json()["errors"], r.text[:300]


def _lines(server: Server, path: str) -> list[dict]:
    r = httpx.get(server.url + path, timeout=120)
    assert r.status_code == 200, r.text[:300]
    return [orjson.loads(x) for x in r.content.splitlines()]


@pytest.fixture(scope="module", params=["single", "cluster"])
def hot(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Server, dict[str, str]]]:
    """COPIES copies of one article, each with 2% of its words edited, on a service (on the
    single redis-server, then on the cluster) whose query cap is far below them."""
    store_url = request.getfixturevalue(
        f"{'cluster' if request.param == 'cluster' else 'redis'}_url"
    )
    rng = random.Random(18)
    base = _base()
    texts = {f"copy{i}": _edit(base, 0.02, rng) for i in range(COPIES)}
    server = _serve(
        tmp_path_factory.mktemp("hot"), store_url, "hot", NEARDUP_CANDIDATE_CAP=str(CAP)
    )
    try:
        _ingest(server, texts)
        yield server, texts
    finally:
        server.stop()


def _oracle_pairs(texts: dict[str, str], t: float) -> dict[frozenset, float]:
    sets = _shingles(texts)
    out = {}
    for a, b in itertools.combinations(sets, 2):
        j = oracle.exact_jaccard(sets[a], sets[b])
        if j >= t:
            out[frozenset((a, b))] = j
    return out


def test_hot_band_streams_every_pair_and_one_exact_group(hot: tuple[Server, dict]) -> None:
    """Every pair of a hot band comes back once with its exact Jaccard, and the groups are
    the oracle's connected components (one group of all copies)."""
    server, texts = hot
    want = _oracle_pairs(texts, 0.5)
    assert len(want) == COPIES * (COPIES - 1) // 2  # the corpus is one cluster
    got = _lines(server, "/duplicates?threshold=0.5")
    assert all("cut" not in line for line in got)
    pairs = {frozenset((p["a"], p["b"])): p["similarity"] for p in got}
    assert len(pairs) == len(got), "a pair came twice"
    assert pairs.keys() == want.keys()
    assert all(abs(pairs[k] - want[k]) < 1e-9 for k in want)
    groups = _lines(server, "/duplicates/groups?threshold=0.5")
    assert [sorted(g["members"]) for g in groups] == [sorted(texts)]
    assert groups[0]["canonical"] == "copy0"  # the oldest


def test_max_pairs_cuts_with_a_final_line_and_resumes_exactly(hot: tuple[Server, dict]) -> None:
    """With max_pairs the stream ends with an explicit cut line; resuming from it until no
    cut is left yields every pair exactly once."""
    server, _ = hot
    seen: list[frozenset] = []
    path, rounds = "/duplicates?threshold=0.5&max_pairs=1000", 0
    while True:
        lines = _lines(server, path)
        rounds += 1
        last = lines[-1]
        if "cut" not in last:
            seen += [frozenset((p["a"], p["b"])) for p in lines]
            break
        assert last["cut"] is True and len(lines) == 1001
        seen += [frozenset((p["a"], p["b"])) for p in lines[:-1]]
        path = last["resume"]
    assert rounds == -(-len(seen) // 1000)
    assert len(seen) == len(set(seen)) == COPIES * (COPIES - 1) // 2
    bad = httpx.get(f"{server.url}/duplicates?after=12-x", timeout=10)
    assert bad.status_code == 422


def test_crowded_neighbourhood_keeps_every_true_match(redis_url: str, tmp_path: Path) -> None:
    """One document, 100 true near-duplicates (Jaccard 0.55-0.97) and 400 distractors
    (0.27-0.49): at the default cap /similar finds at least 98 of the 100 and nothing else."""
    rng = random.Random(7)
    base = _base()
    query = " ".join(base)
    qs = oracle.shingles(query, "word:3")
    true: dict[str, str] = {}
    near: dict[str, str] = {}
    while len(true) < 100 or len(near) < 400:
        text = _edit(base, rng.uniform(0.005, 0.3), rng)
        j = oracle.exact_jaccard(qs, oracle.shingles(text, "word:3"))
        if 0.55 <= j <= 0.97 and len(true) < 100:
            true[f"t{len(true)}"] = text
        elif 0.27 <= j <= 0.49 and len(near) < 400:
            near[f"n{len(near)}"] = text
    docs = [("q", query), *true.items(), *near.items()]
    rng.shuffle(docs)
    server = _serve(tmp_path, redis_url, "crowd")
    try:
        _ingest(server, dict(docs))
        r = httpx.get(f"{server.url}/similar/q", params={"threshold": 0.5, "limit": 1000})
    finally:
        server.stop()
    assert r.status_code == 200
    found = {m["id"] for m in r.json()["results"]}
    assert found <= true.keys(), f"distractors returned: {sorted(found - true.keys())}"
    assert len(found) >= 98, f"{len(found)} of 100 true near-duplicates found"
