"""Every source of a long submission: K copied passages planted in long unstored texts.

The store: the first 700 of the 1,000 shipped news articles (tests/data, MIT), and
synthetic documents up to 10k (or 100k with --large): each 150-400 words of sentences
drawn from the stored articles, three words in ten replaced by a random corpus word,
so the collection holds the corpus' common phrases many times over (a long query
shares common three-word anchors with thousands of documents) but no copy of a real
article's passage (with one word in eight replaced, every real sentence would be
stored again a hundred times at 100k, each a true source of a passage).

The submissions: filler from the 300 articles that are not stored, with K passages of
60-150 words planted in it, each from a different stored real article, verbatim or
with 5% of its words replaced, inserted or deleted; K = 1, 5, 20 and lengths of
1,000, 4,000 and 50,000 words (K x 150 words must fit). A negative control: 4,000
words of the collection's most common three-word phrases, strung together.

The query is what a client that trusts the defaults sends: containment, evidence,
no threshold, no limit (Index.containment_of_text(text), the route's defaults).
Printed per case: sources named (planted sources among the results), passages marked
(share of the planted characters inside a result's query-side passage), queries
capped, p50 and max latency; against "before": main's containment glue as it was
before issue #32 (copied below as `contained_before`: threshold 0.1 of the query's
shingles, limit 10, candidates by candidates.gather), run on the same store and the
same texts in the same process. The negative control prints the sources named and
whether each holds a passage of at least passage_words words.

Figures, never assertions. Run: .venv/bin/python bench/sources.py [--quick] [--large]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from common import log, read_articles
from stores import ThrowawayRedis

from app.core.shingles import parse_shingle
from app.index import Document, Index, Params, records
from app.index import candidates as candidates_mod
from app.index.passages import Layout, Query, align, covered_shingles
from app.index.results import Containment, ContainmentResult
from app.index.sketch import anchor_keys, sketch
from app.store import Store

STORED_REAL = 700
BATCH = 1000
CAP = 200  # NEARDUP_CANDIDATE_CAP's default
SYNTHETIC_EDITS = 0.3
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


# --- the collection ------------------------------------------------------------------------


def synthetic(stored: list[str], n: int, seed: int) -> list[str]:
    """n documents of sentences of the stored articles, three words in ten replaced."""
    rng = np.random.default_rng(seed)
    sentences = [s for t in stored for s in _SENTENCE.split(t) if len(s.split()) >= 4]
    vocab = np.array([w for t in stored for w in t.split()], dtype=object)
    out = []
    for _ in range(n):
        target = int(rng.integers(150, 401))
        words: list[str] = []
        while len(words) < target:
            words += sentences[int(rng.integers(0, len(sentences)))].split()
        w = np.array(words[:target], dtype=object)
        swap = rng.random(len(w)) < SYNTHETIC_EDITS
        w[swap] = vocab[rng.integers(0, len(vocab), int(swap.sum()))]
        out.append(" ".join(w.tolist()))
    return out


# --- the submissions -----------------------------------------------------------------------


@dataclass
class Submission:
    text: str
    sources: list[str]  # ids of the planted passages' sources
    spans: list[tuple[int, int]]  # their code-point spans in text


def edit(words: list[str], rate: float, rng: np.random.Generator, vocab: list[str]) -> list[str]:
    """Replace, insert or delete about `rate` of the words (a third each)."""
    out: list[str] = []
    for w in words:
        if rng.random() >= rate:
            out.append(w)
            continue
        kind = int(rng.integers(0, 3))
        if kind == 0:
            out.append(vocab[int(rng.integers(0, len(vocab)))])
        elif kind == 1:
            out += [w, vocab[int(rng.integers(0, len(vocab)))]]
    return out


def submission(
    length: int,
    k: int,
    rate: float,
    rng: np.random.Generator,
    filler: list[str],
    stored: list[str],
    vocab: list[str],
) -> Submission:
    """`length` words of filler holding k planted passages of k stored articles."""
    picks = rng.choice([i for i, t in enumerate(stored) if len(t.split()) >= 70], k, replace=False)
    pieces: list[list[str]] = []
    for i in picks.tolist():
        words = stored[i].split()
        n = min(int(rng.integers(60, 151)), len(words))
        first = int(rng.integers(0, len(words) - n + 1))
        piece = words[first : first + n]
        pieces.append(edit(piece, rate, rng, vocab) if rate else piece)
    rest = max(0, length - sum(map(len, pieces)))
    start = int(rng.integers(0, len(filler) - rest))
    fill = filler[start : start + rest]
    cuts = sorted(rng.choice(len(fill) + 1, k, replace=True).tolist())
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    pos, prev = 0, 0
    for cut, piece in zip(cuts, pieces, strict=True):
        chunk = " ".join(fill[prev:cut])
        if chunk:
            parts.append(chunk)
            pos += len(chunk) + 1
        text = " ".join(piece)
        parts.append(text)
        spans.append((pos, pos + len(text)))
        pos += len(text) + 1
        prev = cut
    if fill[prev:]:
        parts.append(" ".join(fill[prev:]))
    ids = [f"r{i}" for i in picks.tolist()]
    return Submission(" ".join(parts), ids, spans)


def common_phrases(texts: list[str], words: int) -> str:
    """A text of the corpus' most common three-word phrases, strung together."""
    grams: Counter[tuple[str, ...]] = Counter()
    for t in texts:
        w = t.split()
        grams.update(zip(w, w[1:], w[2:], strict=False))
    top = [" ".join(g) for g, _ in grams.most_common(2000)]
    out, i = [], 0
    while len(out) * 3 < words:
        out.append(top[i % len(top)])
        i += 7
    return " ".join(out)


# --- before: main's containment glue as it was before issue #32 -----------------------------


async def contained_before(index: Index, text: str) -> ContainmentResult:
    """main's containment of a text before issue #32: threshold 0.1, limit 10."""
    pieces, threshold, limit = index.pieces, 0.1, 10
    sk = await sketch(pieces.params, [text], pieces.max_text_bytes, layouts=True)
    assert sk.layouts is not None
    layout = sk.layouts[0]
    p = pieces.params
    k = parse_shingle(p.passage_shingle)[1]
    min_words = max(k + 1, p.passage_words // 3)
    handles, fetched, capped, common = await candidates_mod.gather(
        pieces.store, anchor_keys(layout.anchor_hashes), None, pieces.candidate_cap
    )
    shingles = max(1, layout.words - k + 1)
    indexed = Query(layout)
    scored = []
    for h, raw in zip(handles.tolist(), fetched, strict=True):
        if raw is None:
            continue
        rec = records.unpack(raw)
        if not rec.passages:
            continue
        passages = align(indexed, Layout.unpack(rec.passages), k, min_words)
        if passages:
            covered = covered_shingles(passages, layout.words, k)
            if covered.sum() / shingles >= threshold:
                scored.append((h, rec, passages, covered))
    scored.sort(key=lambda s: (-s[3].sum(), s[0]))
    results = [
        Containment(rec.id, float(cov.sum() / shingles), 0.0, ps)
        for _, rec, ps, cov in scored[:limit]
    ]
    return ContainmentResult(results, len(handles), capped, common, 0.0)


# --- scoring ---------------------------------------------------------------------------------


def score(sub: Submission, result: ContainmentResult) -> tuple[int, float]:
    """Planted sources named, and the share of planted characters inside a passage."""
    named = {r.id for r in result.results}
    found = sum(s in named for s in sub.sources)
    marked = np.zeros(len(sub.text), bool)
    for r in result.results:
        for p in r.passages:
            marked[p.query_start : p.query_end] = True
    planted = sum(b - a for a, b in sub.spans)
    inside = sum(int(marked[a:b].sum()) for a, b in sub.spans)
    return found, inside / max(1, planted)


Run = Callable[[str], Awaitable[ContainmentResult]]


async def measure(run: Run, subs: list[Submission]) -> dict[str, float]:
    found = planted = capped = 0
    marks, lat = [], []
    for sub in subs:
        started = time.perf_counter()
        result = await run(sub.text)
        lat.append(time.perf_counter() - started)
        f, m = score(sub, result)
        found += f
        planted += len(sub.sources)
        marks.append(m)
        capped += result.capped
    return {
        "named": found / planted,
        "marked": float(np.mean(marks)),
        "capped": capped,
        "n": len(subs),
        "p50": 1000 * statistics.median(lat),
        "max": 1000 * max(lat),
    }


async def _run(size: int, quick: bool, workdir: Path) -> None:
    articles = read_articles()
    stored, unstored = articles[:STORED_REAL], articles[STORED_REAL:]
    texts = stored + synthetic(stored, size - STORED_REAL, 7)
    ids = [f"r{i}" for i in range(STORED_REAL)] + [f"s{i}" for i in range(size - STORED_REAL)]
    filler = [w for t in unstored for w in t.split()]
    vocab = [w for t in stored for w in t.split()]
    redis = ThrowawayRedis(workdir, f"src{size}").start()
    try:
        params = Params.create("word:3", 128, 256, 1, 0.5, max(size, 100_000), passage_words=30)
        store = Store.connect(redis.url, "src", 30.0)
        index = await Index.open(store, params, CAP)
        started = time.perf_counter()
        for a in range(0, size, BATCH):
            part = zip(texts[a : a + BATCH], ids[a : a + BATCH], strict=True)
            docs = [Document(t, i) for t, i in part]
            await index.ingest(docs)
        log(f"sources: {size} documents stored in {time.perf_counter() - started:.0f} s")
        rng = np.random.default_rng(11)
        after: Run = index.containment_of_text

        async def before(text: str) -> ContainmentResult:
            return await contained_before(index, text)

        print(f"\n{size:,} stored documents (candidate cap {CAP}), defaults")
        print(
            f"{'words':>6} {'K':>3} {'edit':>5} {'n':>3} | {'build':>6} {'named':>7} "
            f"{'marked':>7} {'capped':>7} {'p50 ms':>8} {'max ms':>8}"
        )
        for length in (1_000, 4_000, 50_000):
            for k in (1, 5, 20):
                if k * 150 > length:
                    continue
                n = (3 if length > 10_000 else 10) if quick else (5 if length > 10_000 else 40)
                for rate in (0.0, 0.05):
                    subs = [
                        submission(length, k, rate, rng, filler, stored, vocab) for _ in range(n)
                    ]
                    for name, run in (("before", before), ("after", after)):
                        r = await measure(run, subs)
                        print(
                            f"{length:>6} {k:>3} {rate:>5.0%} {n:>3} | {name:>6} "
                            f"{r['named']:>7.1%} {r['marked']:>7.3f} "
                            f"{r['capped']:>3}/{r['n']:<3} {r['p50']:>8.1f} {r['max']:>8.1f}",
                            flush=True,
                        )
        control = common_phrases(texts, 4_000)
        res = await index.containment_of_text(control)
        k = parse_shingle(params.passage_shingle)[1]
        longest = [max(b - a for a, b in (p.query_words for p in r.passages)) for r in res.results]
        short = sum(n < params.passage_words for n in longest)
        print(
            f"negative control (4,000 words of common phrases): {len(res.results)} named, "
            f"{short} of them on a passage under {params.passage_words} words; "
            f"capped={res.capped} common={res.common} candidates={res.candidates} (k={k})"
        )
        await store.close()
    finally:
        redis.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer texts per case")
    parser.add_argument("--large", action="store_true", help="also 100k stored documents")
    parser.add_argument("--size", type=int, default=10_000, help="the first collection's size")
    args = parser.parse_args()
    sizes = [args.size] + ([100_000] if args.large else [])
    print("sources: K passages planted in long unstored texts, containment at the defaults")
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        for size in sizes:
            asyncio.run(_run(size, args.quick, Path(tmp)))


if __name__ == "__main__":
    main()
