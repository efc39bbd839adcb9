"""Chinese, Japanese and English passages: found, and how much of them is marked, by tokenizer.

Data: tests/data/languages (the Debian Reference in three languages, GPL-2+), 50 pages each.
Per language, 40 pages are stored in a collection (word:3, passages of 30 words); each of them
gives a passage (300 characters of Chinese or Japanese, 900 of English: about as many words)
that is planted, at a paragraph break, in one of the 10 pages never stored; the host is asked
``containment_of_text`` with evidence (in-process, no HTTP). The passage goes in as it is, and
with 5% of its letters (Chinese, Japanese: a CJK letter by another of the pages, a Latin one by
a Latin one; "5% any": any letter by a CJK one, which cuts English names into pieces) or of its
words (English: by other words of the pages) changed. Printed per language, tokenizer and
kind: sources found (the stored page among the answers with a passage overlapping the plant)
and the share of the planted passage's characters that the found source's passages mark (mean
over the 40; 0 where not found). Every tokenizer runs in the same process on the same plants:
1 (clauses are words), 2 (a letter of Han or kana is a token) and 3 (2's tokens, accents
and voicing marks folded away).

``--k`` first prints the measurement that chose K for unspaced scripts: per language and K, the
share of a never-stored page's shingles that also occur in the 40 stored pages (unrelated
text: the noise a containment query sees) and the share of a 5%-changed passage's shingles
that survive, from the plain-Python rule of tests/support/segmented.py. English word:3 is the
reference.

``--speed REV`` times instead, in one process, this build's tokenizer 2 against git revision
REV's kernel (bench/kernel_baseline.py, the same wrappers), alternating rounds: sketch and
winnow MB/s of the shared English articles corpus and of the Chinese and Japanese pages.

``--dense`` last prints, at the latest tokenizer, copies with 15% of their letters (words)
changed and with 12% swapped with the next: found, share marked, and passages a plant
found (PAN's granularity; 1.00 is one passage a copy).

Figures, never assertions. Run: .venv/bin/python bench/languages.py [--k] [--lengths]
[--dense] [--seed N] [--speed REV]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import random
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from common import ROOT, log
from stores import ThrowawayRedis

from app import kernel
from app.index import Document, Index, Params
from app.store import Store

sys.path.insert(0, str(ROOT / "tests"))
from support import oracle, segmented
from support.plant import swapped

DATA = ROOT / "tests" / "data" / "languages"
STORED, HOSTS = 40, 10
PASSAGE = {"zh": 300, "ja": 300, "en": 900}
RATE = 0.05
LATIN = "abcdefghijklmnopqrstuvwxyz"


def pages(lang: str) -> list[str]:
    """The language's 50 pages, without their section-number line."""
    with gzip.open(DATA / f"{lang}.txt.gz", "rt", encoding="utf-8") as f:
        return [p.split("\n", 1)[1] for p in f.read().split("\n\f\n")]


def change(
    text: str,
    lang: str,
    rng: random.Random,
    pool: list[str],
    mixed: bool,
    rate: float = RATE,
    swaps: float = 0.0,
) -> str:
    """rate (5%) of the letters (zh, ja) or words (en) replaced by others: a word by one
    from pool; a CJK letter by one from pool, and a letter of an English name or command
    in it by a Latin letter, as a typo would (mixed: by one from pool as well); then
    swaps of the words, or of the CJK letters, swapped with the next."""
    if lang == "en":
        words = [rng.choice(pool) if rng.random() < rate else w for w in text.split(" ")]
        return " ".join(swapped(words, swaps, rng, lambda w: True))
    letters = [
        (rng.choice(pool) if mixed or segmented.segmented(ch) else rng.choice(LATIN))
        if ch.isalnum() and rng.random() < rate
        else ch
        for ch in text
    ]
    return "".join(swapped(letters, swaps, rng, segmented.segmented))


def plants(
    lang: str,
    texts: list[str],
    seed: int,
    changed: bool,
    length: int = 0,
    mixed: bool = False,
    rate: float = RATE,
    swaps: float = 0.0,
) -> list[tuple[str, int, int]]:
    """(query, start, end) per stored page: its passage (length characters, else the
    language's PASSAGE) planted in a host page."""
    rng = random.Random(seed)
    if lang == "en":
        pool = " ".join(texts).split()
    else:
        pool = [ch for ch in "".join(texts) if segmented.segmented(ch)]
    out = []
    for i in range(STORED):
        src = texts[i]
        n = length or PASSAGE[lang]
        first = rng.randrange(0, max(1, len(src) - n))
        if lang == "en":  # whole words
            first = src.find(" ", first) + 1
            piece = src[first : first + n].rsplit(" ", 1)[0]
        else:
            piece = src[first : first + n]
        if changed:
            piece = change(piece, lang, rng, pool, mixed, rate, swaps)
        host = texts[STORED + i % HOSTS]
        breaks = [j for j in range(len(host)) if host.startswith("\n\n", j)] or [len(host)]
        at = rng.choice(breaks)
        query = host[:at] + "\n\n" + piece + "\n\n" + host[at:]
        out.append((query, at + 2, at + 2 + len(piece)))
    return out


async def run(
    lang: str, tokenizer: int, redis_url: str, seed: int, lengths: tuple[int, ...] = ()
) -> dict[str, tuple]:
    """Per kind (as is, 5% changed, or verbatim passages of each of lengths): (found, mean
    share marked over the 40 plants, mean characters marked past the plant's edges by the
    passages that overlap it, over those found)."""
    texts = pages(lang)
    params = replace(Params.create("word:3", 128, 256, 1, 0.5, 1000), tokenizer=tokenizer)
    store = Store.connect(redis_url, f"{lang}{tokenizer}{len(lengths)}", 30.0)
    index = await Index.open(store, params, 200)
    await index.ingest([Document(texts[i], f"p{i}") for i in range(STORED)])
    out = {}
    kinds = [(str(n), False, n, False) for n in lengths] or [
        ("as is", False, 0, False),
        ("5%", True, 0, False),
        ("5% any", True, 0, True),
    ]
    for kind, changed, length, mixed in kinds:
        found, marked, over = 0, 0.0, 0
        for i, (query, start, end) in enumerate(plants(lang, texts, seed, changed, length, mixed)):
            answer = await index.containment_of_text(query, 0.01, 20)
            hit = next((r for r in answer.results if r.id == f"p{i}"), None)
            if hit is None:
                continue
            near = [p for p in hit.passages if p.query_start < end and p.query_end > start]
            spans = [(max(p.query_start, start), min(p.query_end, end)) for p in near]
            if not spans:
                continue
            found += 1
            over += sum(max(0, start - p.query_start) + max(0, p.query_end - end) for p in near)
            covered = set()
            for a, b in spans:
                covered.update(range(a, b))
            marked += len(covered) / (end - start)
        out[kind] = (found, marked / STORED, over / max(found, 1))
    await store.close()
    return out


def measure_k(seed: int) -> None:
    """The noise and survival of shingles per language and K (see the module docstring)."""
    print("K for unspaced scripts: noise = share of a never-stored page's shingles found in the")
    print("40 stored pages; survive = share of a 5%-changed passage's shingles still in its source")
    print(f"{'lang':<5} {'tokens':<22} {'tok/page':>9} {'noise':>7} {'survive':>8}")
    for lang in ("en", "zh", "ja"):
        texts = pages(lang)
        rules = [("words (v1) word:3", 0)]
        if lang != "en":
            rules += [(f"letters, K={kc}", kc) for kc in (3, 4, 5, 6, 7, 8, 10)]
        for name, kc in rules:

            def grams(text: str, kc: int = kc) -> set:
                if kc:
                    return segmented.shingles(text, 3, kc)
                return oracle.shingles(text, "word:3")

            stored: set = set()
            for t in texts[:STORED]:
                stored |= grams(t)
            hosts = texts[STORED:]
            noise = sum(len(grams(h) & stored) / max(1, len(grams(h))) for h in hosts)
            survive = 0.0
            for i, (query, start, end) in enumerate(plants(lang, texts, seed, True)):
                g = grams(query[start:end])
                survive += len(g & grams(texts[i])) / max(1, len(g))
            ntok = sum(len(segmented.tokens(h) if kc else oracle.words(h)) for h in hosts)
            print(
                f"{lang:<5} {name:<22} {ntok / len(hosts):>9.0f} {noise / len(hosts):>7.3f} "
                f"{survive / STORED:>8.3f}",
                flush=True,
            )
    print()


def same_abi_build(rev: str) -> object:
    """rev's native/ compiled into a scratch directory with its own header's declarations
    (bench/kernel_baseline.py reads ABI 4 kernels only); the lib of this ABI's wrappers."""
    import importlib.util
    import io
    import subprocess
    import tarfile

    import cffi
    from kernel_baseline import FLAGS

    sys.path.insert(0, str(ROOT / "native"))
    from build_ffi import cdef_of

    from app import kernel

    tmp = Path(tempfile.mkdtemp(prefix="nd-languages-"))
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "native"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
    src = tmp / "native"
    ffi = cffi.FFI()
    ffi.cdef(cdef_of(src / "neardup.h"))
    ffi.set_source(
        "_nd_languages_base",
        '#include "neardup.h"',
        sources=[str(p) for p in sorted(src.glob("*.c"))],
        include_dirs=[str(src)],
        extra_compile_args=FLAGS,
    )
    so = ffi.compile(tmpdir=str(tmp))
    spec = importlib.util.spec_from_file_location("_nd_languages_base", so)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.lib.nd_abi_version() != kernel.ABI_VERSION:
        raise SystemExit(f"{rev} is not kernel ABI {kernel.ABI_VERSION}")
    return module.lib


def speed(rev: str) -> None:
    """MB/s of tokenizer 2's sketch and winnow, this build against rev's kernel."""
    from common import read_articles
    from kernel import best_time
    from kernel_baseline import swapped

    from app import kernel

    base = same_abi_build(rev)
    corpora = [
        ("en articles", read_articles()),
        ("zh pages", pages("zh")),
        ("ja pages", pages("ja")),
    ]
    print(f"tokenizer 2, this build against {rev}, same process, 1 thread: MB/s")
    print(
        f"{'corpus':<12} {'sketch':>8} {'base':>8} {'ratio':>7} "
        f"{'winnow':>8} {'base':>8} {'ratio':>7}"
    )
    for name, docs in corpora:
        nbytes = sum(len(d.encode()) for d in docs) / 1e6
        batches = [docs[i : i + 200] for i in range(0, len(docs), 200)]
        jobs = {
            "sketch": lambda bs=batches: [kernel.sketch(b, tokenizer=2) for b in bs],
            "winnow": lambda bs=batches: [kernel.winnow(b, tokenizer=2) for b in bs],
        }
        row = []
        for job in jobs.values():
            mine = theirs = float("inf")
            for _ in range(5):
                mine = min(mine, best_time(job, 1))
                with swapped(base):
                    theirs = min(theirs, best_time(job, 1))
            row += [nbytes / mine, nbytes / theirs, theirs / mine]
        print(
            f"{name:<12} {row[0]:>8.1f} {row[1]:>8.1f} {row[2]:>6.3f}x "
            f"{row[3]:>8.1f} {row[4]:>8.1f} {row[5]:>6.3f}x",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", action="store_true", help="first, the measurement of K")
    parser.add_argument("--lengths", action="store_true", help="last, found by passage length")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed", metavar="REV", help="only: tokenizer 2's speed against REV")
    parser.add_argument(
        "--tokenizers", default=",".join(map(str, kernel.TOKENIZERS)), help="e.g. 3"
    )
    parser.add_argument("--langs", default="zh,ja,en", help="e.g. zh,ja")
    parser.add_argument(
        "--dense", action="store_true", help="last, 15%% changed and 12%% swapped copies"
    )
    args = parser.parse_args()
    if args.speed:
        speed(args.speed)
        return
    if args.k:
        measure_k(args.seed)
    print("languages: 40 stored pages per language, a passage of each planted in an unstored one")
    print(
        f"{'lang':<5} {'tokenizer':>9} {'as is: found':>13} {'marked':>7} {'past':>5} "
        f"{'5%: found':>10} {'marked':>7} {'past':>5} {'5% any: found':>13} {'marked':>7} "
        f"{'past':>5}"
    )
    print("(past: characters marked beyond the plant's edges, mean over the plants found)")
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "languages").start()
        try:
            for lang in args.langs.split(","):
                for tokenizer in map(int, args.tokenizers.split(",")):
                    log(f"languages: {lang}, tokenizer {tokenizer}")
                    r = asyncio.run(run(lang, tokenizer, redis.url, args.seed))
                    (f1, m1, o1), (f2, m2, o2), (f3, m3, o3) = r["as is"], r["5%"], r["5% any"]
                    print(
                        f"{lang:<5} {tokenizer:>9} {f1:>10}/{STORED} {m1:>7.2f} {o1:>5.1f} "
                        f"{f2:>7}/{STORED} {m2:>7.2f} {o2:>5.1f} "
                        f"{f3:>10}/{STORED} {m3:>7.2f} {o3:>5.1f}",
                        flush=True,
                    )
            if args.lengths:
                lengths(redis.url, args.seed)
            if args.dense:
                print()
                print("dense edits, latest tokenizer: found of 40, share marked, passages a plant")
                for lang in args.langs.split(","):
                    r2 = asyncio.run(dense(lang, redis.url, args.seed))
                    print(
                        f"{lang:<5} "
                        + "  ".join(
                            f"{k}: {f}/{STORED} {m:.2f} {g:.2f}" for k, (f, m, g) in r2.items()
                        ),
                        flush=True,
                    )
        finally:
            redis.stop()


# Dense edits (--dense): the kinds of an outside audit of 2026-11-28, whose Japanese
# copies came back in pieces: (name, share of letters or words changed, share swapped).
DENSE = (("15% changed", 0.15, 0.0), ("12% swapped", 0.0, 0.12))


async def dense(lang: str, redis_url: str, seed: int) -> dict[str, tuple[int, float, float]]:
    """Per dense kind, at the latest tokenizer: (found, mean share marked over the 40
    plants, passages per plant found: PAN's granularity)."""
    texts = pages(lang)
    params = Params.create("word:3", 128, 256, 1, 0.5, 1000)
    store = Store.connect(redis_url, f"{lang}dense", 30.0)
    index = await Index.open(store, params, 200)
    await index.ingest([Document(texts[i], f"p{i}") for i in range(STORED)])
    out = {}
    for kind, rate, swaps in DENSE:
        found, marked, pieces = 0, 0.0, 0
        for i, (query, start, end) in enumerate(
            plants(lang, texts, seed, True, rate=rate, swaps=swaps)
        ):
            answer = await index.containment_of_text(query, 0.01, 20)
            hit = next((r for r in answer.results if r.id == f"p{i}"), None)
            near = [
                p
                for p in (hit.passages if hit else [])
                if p.query_start < end and p.query_end > start
            ]
            if not near:
                continue
            found += 1
            pieces += len(near)
            covered: set[int] = set()
            for p in near:
                covered.update(range(max(p.query_start, start), min(p.query_end, end)))
            marked += len(covered) / (end - start)
        out[kind] = (found, marked / STORED, pieces / max(found, 1))
    await store.close()
    return out


LENGTHS = {
    "zh": (10, 15, 20, 25, 30, 40, 60),
    "ja": (10, 15, 20, 25, 30, 40, 60),
    "en": (40, 60, 90, 120, 150, 200, 300),
}


def lengths(redis_url: str, seed: int) -> None:
    """Verbatim passages by length (characters): sources found of 40, per tokenizer."""
    print()
    print("found by passage length (characters, verbatim), of 40")
    for lang in ("zh", "ja", "en"):
        print(f"{lang:<5} {'tokenizer':>9} " + " ".join(f"{n:>5}" for n in LENGTHS[lang]))
        for tokenizer in kernel.TOKENIZERS:
            r = asyncio.run(run(lang, tokenizer, redis_url, seed, LENGTHS[lang]))
            print(
                f"{'':<5} {tokenizer:>9} " + " ".join(f"{r[str(n)][0]:>5}" for n in LENGTHS[lang]),
                flush=True,
            )


if __name__ == "__main__":
    main()
