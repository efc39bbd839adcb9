"""Redis' own time per query script: this build's against a baseline revision's, in one process.

One throwaway redis-server holds one collection of N documents (bench/common.py's corpus:
200-400 Zipf words, a fifth planted near-duplicates; the service's default parameters),
ingested in-process. Then GET /similar/{id}'s script (similar_by_id.lua with rank.lua) of
this build and of the baseline revision (read from git, with this build's preamble) are
loaded side by side and called on the same ids, in turn, round after round: each round
resets INFO commandstats and reads the EVALSHA's usec_per_call, Redis' own time per call.
Each keeps its best round (a shared machine slows some).

Also printed, for this build: its time with the marks left out (a collection made before
them), how many ids were marked, and what the script is made of without marks, from probes
cut out of it (an empty script, the prelude up to the record, up to the band keys' names,
the HGETs alone). Both must give the same answer for every id without marks; with them, an
unmarked document's answer has no candidate.

    .venv/bin/python bench/query_scripts.py [--docs 20000] [--ids 4000] [--rounds 7]
        [--baseline b05b4ef]

Figures, never assertions. The default baseline is the commit before the GET script's
rewrite of 2026-11-27.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from common import log, make_corpus
from stores import ThrowawayRedis

from app.index import Document, Index, Params
from app.store import Store, scripts

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = "app/store/scripts"


def _ours(name: str) -> bytes:
    return resources.files(scripts).joinpath(f"{name}.lua").read_bytes()


def _theirs(rev: str, name: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{SCRIPTS}/{name}.lua"],
        check=True,
        capture_output=True,
    ).stdout


def _probes(body: bytes) -> dict[str, bytes]:
    """This build's GET script cut short at its stages (each returns {} there)."""
    text = body.decode()
    stop = "do return {} end\n"
    at_bands = text.index("-- The band keys' place in the record")
    at_rank = text.index("local exclude, cap, budget")
    hgets = (
        "local n = 0\nfor i = 1, #bands, 2 do\n"
        "  if redis.call('HGET', bands[i], bands[i + 1]) then n = n + 1 end\nend\nreturn {n}\n"
    )
    return {
        "empty script": b"return {}\n",
        "  + the id's handle and record": (text[:at_bands] + stop).encode(),
        "  + the band keys' bucket names and fields": (text[:at_rank] + stop).encode(),
        "  + one HGET a band key": (text[:at_rank] + hgets).encode(),
    }


async def _build(url: str, n: int, ids: int) -> list[tuple[bytes, ...]]:
    corpus = make_corpus(n, dup_fraction=0.2)
    store = Store.connect(url, "qs", 30.0)
    index = await Index.open(store, Params.create("word:3", 128, 256, 1, 0.5, n), 200)
    log(f"ingesting {n:,} documents")
    for k in range(0, n, 500):
        docs = [Document(corpus.text(i), corpus.ids[i]) for i in range(k, min(n, k + 500))]
        await index.ingest(docs)
    # The arguments Store.similar_by_id sends, for each id: a cap of 50, 1,000 hot
    # members read in full, at most 4,000.
    step = max(1, n // ids)
    out = [store.similar_by_id_args(corpus.ids[i], 50, 1000, 4000) for i in range(0, n, step)]
    await store.close()
    return out


def _usec_per_call(r: Any, sha: str, argsets: list[tuple[bytes, ...]]) -> float:
    r.config_resetstat()
    pipe = r.pipeline(transaction=False)
    for j, args in enumerate(argsets, 1):
        pipe.evalsha(sha, 0, *args)
        if j % 50 == 0:
            pipe.execute()
    pipe.execute()
    return float(r.info("commandstats")["cmdstat_evalsha"]["usec_per_call"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--ids", type=int, default=4_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--baseline", default="b05b4ef")
    args = parser.parse_args()
    ours = scripts.PREAMBLE + _ours("similar_by_id") + _ours("rank")
    theirs = scripts.PREAMBLE + _theirs(args.baseline, "similar_by_id")
    theirs += _theirs(args.baseline, "rank")
    with tempfile.TemporaryDirectory() as tmp:
        redis = ThrowawayRedis(Path(tmp), "qs").start()
        try:
            argsets = asyncio.run(_build(redis.url, args.docs, args.ids))
            r = redis.client()
            baseline = f"baseline {args.baseline}"
            shas = {"this build": r.script_load(ours), baseline: r.script_load(theirs)}
            # The same script without marks (its last argument empty): what the probes cut.
            unmarked = [(*a[:-1], b"") for a in argsets]
            skipped = 0
            for a, u in zip(argsets, unmarked, strict=True):
                ours_got, base_got = [r.evalsha(shas[k], 0, *a) for k in shas]
                assert r.evalsha(shas["this build"], 0, *u) == base_got, (
                    f"the builds answer {a[4]!r} differently without marks"
                )  # the id
                if ours_got != base_got:
                    # A document whose bit is 0 answers no candidate; the baseline may read
                    # strangers' handles from band fields that share a place (verified and
                    # dropped by the service), never one sharing a band key.
                    assert ours_got[2:] == [0, 0, 0] and ours_got[:2] == base_got[:2], a[4]
                    skipped += 1
            probes = {k: r.script_load(scripts.PREAMBLE + v) for k, v in _probes(ours).items()}
            best = {k: float("inf") for k in [*shas, "  without marks", *probes]}
            runs = [(k, sha, argsets) for k, sha in shas.items()]
            runs.append(("  without marks", shas["this build"], unmarked))
            runs += [(k, sha, unmarked) for k, sha in probes.items()]
            for _ in range(args.rounds):
                for k, sha, sets in runs:
                    best[k] = min(best[k], _usec_per_call(r, sha, sets))
            marked = sum(1 for a in argsets if r.getbit(a[-1], int(r.hget(a[3], a[4]))))
        finally:
            redis.stop()
    base, now = best[baseline], best["this build"]
    print(
        f"GET /similar/{{id}}'s script, {args.docs:,} documents, {len(argsets):,} ids, "
        f"Redis' µs per call (best of {args.rounds} rounds):"
    )
    for k in [*shas, "  without marks"]:
        print(f"  {k:<46}{best[k]:>8.1f}")
    print(f"  {'ratio (this build / baseline)':<46}{now / base:>8.2f}")
    print(
        f"ids whose document shares a band key (marked): {marked:,} of {len(argsets):,}; "
        f"answered without candidates the baseline read from shared places: {skipped:,}"
    )
    print("this build's script without marks, cut short at each stage:")
    for k in probes:
        print(f"  {k:<46}{best[k]:>8.1f}")
    print(f"  {'  + ranking, the candidates records (whole)':<46}{best['  without marks']:>8.1f}")


if __name__ == "__main__":
    main()
