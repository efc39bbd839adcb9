"""Copied passages through edits: PAN's measures per kind of change, before and after.

Sources: articles of tests/data (MIT licence), stored in a throwaway Redis through the
Index (in-process, no HTTP). Queries: long texts (~1,000 words) made of other articles,
never stored, each with one passage of 40-150 words of a stored source planted in, changed
in one of these ways:

- verbatim;
- edit5 / edit15: 5% / 15% of the words replaced, inserted or deleted (a third each);
- swaps: 12% of adjacent word pairs swapped, plus 3% edits;
- disguise: lower case, curly quotes, the ligatures fi/fl, no-break spaces, a zero-width
  space or soft hyphen inside some words, Cyrillic look-alikes (а е о) in some words, and
  words hyphenated at line ends (folded by the normalisation issue, #26, not by this one);
- block: the passage with one 8-word run in its middle replaced (a rewritten clause).

Each query is a containment query (`containment_of_text`, the call behind POST /similar
with measure containment and evidence) with threshold 0.01. Every passage of every
source is a detection; the plant is the truth (its code points in the query and the
source). Scored by tests/support/pan.py (PAN's macro-averaged measures), per kind and all
together. The negative control sends the hosts without a plant: every passage reported
there is false (counted, with the characters it covers).

Builds compared in the same run, on the same Redis: the layout before this work (a
collection whose config has passage_bits 0: format 1, 4-bit word hashes, packed by the
kernel and aligned by passages.align, exactly what main writes and answers) and format
3 with 4, 8 and 16 bits a word, aligned by app.index.align. Per build: plagdet by kind,
containment query latency (p50, p99), Redis bytes per stored document and ingest rate.

Run: .venv/bin/python bench/alignment.py [--quick] [--bits 0,8]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from common import ROOT, log, read_articles
from memory import used_memory
from stores import ThrowawayRedis

from app.index import Document, Index, Params
from app.store import Store

KINDS = ("verbatim", "edit5", "edit15", "swaps", "disguise", "block")
HOST_WORDS = 1000
SOURCES = 500
THRESHOLD = 0.01


def _pan() -> ModuleType:
    """tests/support/pan.py, PAN's measures (one copy, shared with the tests)."""
    path = ROOT / "tests" / "support" / "pan.py"
    spec = importlib.util.spec_from_file_location("neardup_bench_pan", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


pan = _pan()


# --- changing a passage --------------------------------------------------------------------


def _edit(words: list[str], rate: float, rng: random.Random, vocab: list[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        r = rng.random()
        if r >= rate:
            out.append(w)
        elif r < rate / 3:
            out.append(rng.choice(vocab))  # replaced
        elif r < 2 * rate / 3:
            out += [w, rng.choice(vocab)]  # a word inserted after it
        # else deleted
    return out or words[:1]


def _swap(words: list[str], rate: float, rng: random.Random) -> list[str]:
    out, i = list(words), 0
    while i < len(out) - 1:
        if rng.random() < rate:
            out[i], out[i + 1] = out[i + 1], out[i]
            i += 2
        else:
            i += 1
    return out


_LOOK_ALIKE = {"a": "\u0430", "e": "\u0435", "o": "\u043e"}


def _disguise(text: str, rng: random.Random) -> str:
    text = text.lower().replace('"', "\u201c").replace("'", "\u2019")
    text = text.replace("fi", "\ufb01").replace("fl", "\ufb02")
    out = []
    for w in text.split(" "):
        r = rng.random()
        if r < 0.15 and len(w) > 3:
            cut = rng.randrange(1, len(w) - 1)
            w = w[:cut] + rng.choice(("\u200b", "\u00ad")) + w[cut:]
        elif r < 0.35:
            w = "".join(_LOOK_ALIKE.get(c, c) if rng.random() < 0.5 else c for c in w)
        elif r < 0.40 and len(w) > 5:
            cut = rng.randrange(2, len(w) - 2)
            w = w[:cut] + "-\n" + w[cut:]
        out.append(w)
    seps = [("\u00a0" if rng.random() < 0.2 else " ") for _ in out[1:]]
    return out[0] + "".join(s + w for s, w in zip(seps, out[1:], strict=True))


def change(kind: str, piece: str, rng: random.Random, vocab: list[str]) -> str:
    words = piece.split()
    if kind == "verbatim":
        return piece
    if kind == "edit5":
        return " ".join(_edit(words, 0.05, rng, vocab))
    if kind == "edit15":
        return " ".join(_edit(words, 0.15, rng, vocab))
    if kind == "swaps":
        return " ".join(_edit(_swap(words, 0.12, rng), 0.03, rng, vocab))
    if kind == "disguise":
        return _disguise(piece, rng)
    if kind == "block":
        at = rng.randrange(len(words) // 3, max(len(words) // 3 + 1, 2 * len(words) // 3 - 8))
        return " ".join(words[:at] + rng.sample(vocab, 8) + words[at + 8 :])
    raise ValueError(kind)


# --- the plantings -------------------------------------------------------------------------


@dataclass(frozen=True)
class Planting:
    kind: str
    query: str
    truth: list  # of pan.Span; empty for the negative control


def _grams(text: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def plantings(per_kind: int, seed: int = 5) -> tuple[dict[str, str], list[Planting]]:
    """The stored sources (id -> text) and the queries with their truth.

    The articles reuse one another's sentences (710 of the 1,000 share an 8-word run with
    another), so the sources are chosen to share no 8-word run among themselves, and the
    hosts are made of sentences of the other articles that share no 5-word run with any
    source: the plant is then the only text a query shares with the store."""
    articles = read_articles()
    rng = random.Random(seed)
    order = list(range(len(articles)))
    rng.shuffle(order)
    sources: dict[str, str] = {}
    taken: set[tuple[str, ...]] = set()
    rest = []
    for i in order:
        grams = _grams(articles[i], 8)
        if len(sources) < SOURCES and not grams & taken:
            sources[f"a{i}"] = articles[i]
            taken |= grams
        else:
            rest.append(i)
    stored5 = set().union(*(_grams(t, 5) for t in sources.values()))
    pool = sorted(
        {
            sentence
            for i in rest
            for sentence in re.split(r"(?<=\.) ", articles[i])
            if not _grams(sentence, 5) & stored5
        }
    )
    vocab = sorted({w for t in pool for w in t.split() if w.isalpha()})
    src_ids = sorted(sources)
    out: list[Planting] = []
    number = 0
    for kind in (*KINDS, "control"):
        for _ in range(per_kind):
            host: list[str] = []
            while len(host) < HOST_WORDS:
                host += rng.choice(pool).split()
            host = host[:HOST_WORDS]
            qid = f"q{number}"
            number += 1
            if kind == "control":
                out.append(Planting(kind, " ".join(host), []))
                continue
            sid = rng.choice(src_ids)
            src = sources[sid]
            starts, pos = [], 0
            for w in src.split(" "):
                starts.append(pos)
                pos += len(w) + 1
            words = src.split(" ")
            n = min(rng.randint(40, 150), len(words) - 1)
            first = rng.randrange(0, len(words) - n + 1)
            s_span = (starts[first], starts[first + n - 1] + len(words[first + n - 1]))
            piece = change(kind, src[s_span[0] : s_span[1]], rng, vocab)
            at = rng.randrange(1, len(host))
            before = " ".join(host[:at]) + " "
            query = before + piece + " " + " ".join(host[at:])
            q_span = (len(before), len(before) + len(piece))
            out.append(Planting(kind, query, [pan.Span(qid, *q_span, sid, *s_span)]))
    return sources, out


# --- one build -----------------------------------------------------------------------------


async def _build(
    redis: ThrowawayRedis, bits: int, sources: dict[str, str], plants: list[Planting]
) -> dict:
    params = Params.create("word:3", 128, 256, 1, 0.5, 2_000, passage_words=30)
    store = Store.connect(redis.url, f"b{bits}", 30.0)
    if bits == 0:  # a config as main writes it: no passage_bits field (format 1)
        raw = params.to_json().replace(b',"passage_bits":8', b"")
        assert b"passage_bits" not in raw
        await store.config(raw)
    index = await Index.open(store, Params.create(
        "word:3", 128, 256, 1, 0.5, 2_000, passage_words=30, passage_bits=bits or 8
    ), 200)
    assert index.params.passage_bits == bits, index.params
    docs = [Document(t, i) for i, t in sources.items()]
    before = used_memory(redis)
    started = time.perf_counter()
    for k in range(0, len(docs), 200):
        await index.ingest(docs[k : k + 200])
    rate = len(docs) / (time.perf_counter() - started)
    per_doc = (used_memory(redis) - before) / len(docs)
    detections: dict[str, list] = {}
    latencies: list[float] = []
    capped = 0
    for number, p in enumerate(plants):
        qid = f"q{number}"
        t0 = time.perf_counter()
        answer = await index.containment_of_text(p.query, THRESHOLD, 10)
        latencies.append(time.perf_counter() - t0)
        capped += answer.capped
        detections[qid] = [
            pan.Span(qid, ps.query_start, ps.query_end, r.id, ps.source_start, ps.source_end)
            for r in answer.results
            for ps in r.passages
        ]
    await store.close()
    by_kind: dict[str, object] = {}
    for kind in (*KINDS, "all"):
        chosen = [
            (f"q{n}", p)
            for n, p in enumerate(plants)
            if p.kind == kind or (kind == "all" and p.kind != "control")
        ]
        truth = [s for _, p in chosen for s in p.truth]
        dets = [d for qid, _ in chosen for d in detections[qid]]
        by_kind[kind] = pan.score(truth, dets)
    control = [d for n, p in enumerate(plants) if p.kind == "control" for d in detections[f"q{n}"]]
    latencies.sort()
    return {
        "kinds": by_kind,
        "false": len(control),
        "false_chars": sum(len(d) for d in control),
        "p50": 1000 * statistics.median(latencies),
        "p99": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "bytes": per_doc,
        "ingest": rate,
        "capped": capped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 plantings a kind, not 75")
    parser.add_argument(
        "--bits", default="0,4,8,16", help="builds: 0 = before (format 1), else format 3's bits"
    )
    args = parser.parse_args()
    per_kind = 20 if args.quick else 75
    builds = [int(b) for b in args.bits.split(",")]
    sources, plants = plantings(per_kind)
    log(f"alignment: {len(sources)} sources, {len(plants)} queries")
    results = {}
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "align").start()
        try:
            for bits in builds:
                log(f"alignment: build {bits or 'before'}")
                results[bits] = asyncio.run(_build(redis, bits, sources, plants))
        finally:
            redis.stop()
    name = {0: "before (4-bit, format 1)"}
    print(f"alignment: {per_kind} plantings a kind, {HOST_WORDS}-word queries, "
          f"{len(sources)} stored articles; PAN measures (plagdet prec rec gran)")
    print(f"{'kind':>9} " + " ".join(f"{name.get(b, f'{b}-bit, format 3'):>26}" for b in builds))
    for kind in (*KINDS, "all"):
        cells = []
        for b in builds:
            s = results[b]["kinds"][kind]
            cells.append(
                f"{s.plagdet:.3f} {s.precision:.3f} {s.recall:.3f} {s.granularity:.2f}".rjust(26)
            )
        print(f"{kind:>9} " + " ".join(cells))
    rows = (
        ("control: false passages", "false", "{:.0f}"),
        ("control: false chars", "false_chars", "{:.0f}"),
        ("answers capped", "capped", "{:.0f}"),
        ("query p50 ms", "p50", "{:.2f}"),
        ("query p99 ms", "p99", "{:.2f}"),
        ("Redis bytes / doc", "bytes", "{:,.0f}"),
        ("ingest docs / s", "ingest", "{:,.0f}"),
    )
    for label, key, fmt in rows:
        print(f"{label:>24} " + " ".join(fmt.format(results[b][key]).rjust(19) for b in builds))


if __name__ == "__main__":
    main()
