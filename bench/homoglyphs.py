"""Homoglyph disguise: PAN's measures of passages planted with look-alike letters, by tokenizer.

Sources, hosts and plantings are bench/alignment.py's (tests/support/plant.py, articles of
tests/data, MIT licence): the articles that share no 5-word run, up to 500, stored; 1,000-word
queries never stored, each with one passage of 40-150 words of a source planted in, changed
one of these ways:

- verbatim: as it is (the reference: both tokenizers must find it alike);
- disguise: alignment.py's mixed disguise (Cyrillic a, e, o; zero-width characters; soft and
  line-end hyphens; ligatures; no-break spaces; lower case);
- homoglyphs: lower case, and half the letters that have a look-alike swapped for one picked
  at random among the small letters of Latin, Greek, Cyrillic, Armenian and Cherokee that
  confusables.txt (UTS #39) gives that letter as prototype: what a homoglyph tool does.

Each tokenizer (--tokenizers, default 3,4) gets a collection of its own (word:3, passages of
30 words) on one throwaway Redis, and every query goes to each, as a containment query with
evidence (`containment_of_text`, threshold 0.01). Printed per kind and tokenizer: plagdet,
precision, recall and granularity (tests/support/pan.py), and the control's false passages.

Figures, never assertions. Run: .venv/bin/python bench/homoglyphs.py [--quick] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from common import ROOT, log, pan_table
from stores import ThrowawayRedis

from app.index import Document, Index, Params
from app.store import Store

sys.path.insert(0, str(ROOT / "tests"))
from support import pan
from support.plant import Planting, plantings, scores_by_kind

KINDS = ("verbatim", "disguise", "homoglyphs")
THRESHOLD = 0.01


async def _run(
    redis: ThrowawayRedis, tokenizers: list[int], sources: dict[str, str], plants: list[Planting]
) -> dict[int, dict]:
    """Per tokenizer: PAN's scores per kind and all together, and the control's false
    passages."""
    docs = [Document(t, i) for i, t in sources.items()]
    out: dict[int, dict] = {}
    for tok in tokenizers:
        store = Store.connect(redis.url, f"t{tok}", 30.0)
        params = Params.create("word:3", 128, 256, 1, 0.5, 2_000, passage_words=30, tokenizer=tok)
        index = await Index.open(store, params, 200)
        assert index.params.tokenizer == tok
        for k in range(0, len(docs), 200):
            await index.ingest(docs[k : k + 200])
        found: dict[str, list[pan.Span]] = {}
        for n, p in enumerate(plants):
            qid = f"q{n}"
            answer = await index.containment_of_text(p.query, THRESHOLD, 10)
            found[qid] = [
                pan.Span(qid, ps.query_start, ps.query_end, r.id, ps.source_start, ps.source_end)
                for r in answer.results
                for ps in r.passages
            ]
        await store.close()
        scores = scores_by_kind(KINDS, plants, found)
        false = [d for n, p in enumerate(plants) if p.kind == "control" for d in found[f"q{n}"]]
        out[tok] = {"kinds": scores, "false": len(false)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 plantings a kind, not 75")
    parser.add_argument("--seed", type=int, default=5, help="of the plantings")
    parser.add_argument("--tokenizers", default="3,4", help="compared, e.g. 3,4")
    args = parser.parse_args()
    per_kind = 20 if args.quick else 75
    tokenizers = [int(t) for t in args.tokenizers.split(",")]
    sources, plants = plantings(per_kind, args.seed, kinds=KINDS)
    log(f"homoglyphs: {len(sources)} sources, {len(plants)} queries, tokenizers {tokenizers}")
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "homoglyphs").start()
        try:
            results = asyncio.run(_run(redis, tokenizers, sources, plants))
        finally:
            redis.stop()
    print(
        f"homoglyphs: {per_kind} plantings a kind, {len(sources)} stored articles; "
        "PAN measures (plagdet prec rec gran)"
    )
    columns = {f"tokenizer {t}": results[t]["kinds"] for t in tokenizers}
    print("\n".join(pan_table((*KINDS, "all"), columns, 10)))
    print(f"{'control: false passages':>24} " + " ".join(
        f"{results[t]['false']:>12}" for t in tokenizers
    ))  # fmt: skip


if __name__ == "__main__":
    main()
