"""Kernel benchmark (figures, not tests): sketch throughput and batch Jaccard, against baselines.

Run: ``make bench`` or ``.venv/bin/python bench/kernel.py [--quick] [--baseline REV]``.

Prints, for the shared articles corpus and a generated Zipf corpus (~300 words per text):
sketch MB/s and docs/s on one thread and on all cores (threads: the C call releases the GIL),
with tokenizer 1 (what the ratios name) and, on one thread, tokenizer 2 (issue 26's folding) and
its ratios to tokenizer 1 and to datasketch, and tokenizer 3 and its ratio to tokenizer 1;
jaccard_many pairs/s at N=128 and N=256, threshold 0.5, from plain fingerprints and from the
compressed ones records keep (jaccard_many_encoded, decoding inside the call; with the bytes
a fingerprint takes either way); and same-run ratios against datasketch
(MinHash(num_perm=128).update_batch over the same word 3-shingles, shingled in Python) and a
numpy baseline (np.intersect1d per pair).

``--baseline REV`` (e.g. ``main``) also builds that git revision's native/ into a scratch
directory (bench/kernel_baseline.py) and times it in the same process, through the same Python
wrappers, against this build: sketch, winnow and jaccard_many, 1 thread, SIMD and scalar;
tokenizer 2's sketch and winnow against the baseline's when it has tokenizer 2 (kernel ABI 7),
and against this build's tokenizer 1 either way.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from common import read_articles

from app import kernel

WORD_RE = re.compile(r"[^\W_]+")


def best_time(
    fn: Callable[[], object],
    repeat: int,
    min_time: float = 0.3,
    clock: Callable[[], float] = time.thread_time,
) -> float:
    """Best time of fn over `repeat` rounds (each at least `min_time` when fn is quick).

    One-thread figures use this thread's CPU time, so other load on the machine does not
    count against them; all-core figures pass the wall clock.
    """
    best = float("inf")
    for _ in range(repeat):
        loops = 0
        start = clock()
        while True:
            fn()
            loops += 1
            elapsed = clock() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / loops)
    return best


def zipf_corpus(n_docs: int, words_per_doc: int = 300, seed: int = 42) -> list[str]:
    """Texts of Zipf-distributed words from a 50,000-word synthetic vocabulary."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = [
        "".join(letters[rng.integers(0, 26, size=int(rng.integers(2, 11)))]) for _ in range(50_000)
    ]
    ranks = rng.zipf(1.1, size=n_docs * words_per_doc)
    ranks = np.minimum(ranks, len(vocab)) - 1
    lengths = rng.integers(words_per_doc // 2, words_per_doc * 3 // 2, size=n_docs)
    docs, pos = [], 0
    for n in lengths.tolist():
        ws = [vocab[i] for i in ranks[pos : pos + n].tolist()]
        pos = (pos + n) % (len(ranks) - 2 * words_per_doc)
        # sentence-ish punctuation and capitals, so the tokenizer has work
        ws[0] = ws[0].capitalize()
        docs.append(" ".join(ws).replace(" e", ". E") + ".")
    return docs


def py_shingles(text: str, k: int = 3) -> list[bytes]:
    """Word 3-shingles in Python, as a datasketch user would make them."""
    ws = WORD_RE.findall(text.casefold())
    if len(ws) < k:
        return [" ".join(ws).encode()] if ws else []
    return [" ".join(ws[i : i + k]).encode() for i in range(len(ws) - k + 1)]


BATCH = 100  # texts per sketch call, as the service's batch ingestion sends them


def bench_sketch(docs: list[str], repeat: int) -> dict[str, float]:
    """Sketch throughput: one thread, all cores (threads), and datasketch on a subset."""
    nbytes = sum(len(d.encode()) for d in docs)
    batches = [docs[i : i + BATCH] for i in range(0, len(docs), BATCH)]
    raw_batches = [[d.encode() for d in b] for b in batches]

    def one_thread(bs: list, simd: bool = True) -> None:
        for b in bs:
            kernel.sketch(b, simd=simd)

    t1 = best_time(lambda: one_thread(batches), repeat)
    t1_tok2 = best_time(lambda: [kernel.sketch(b, tokenizer=2) for b in batches], repeat)
    t1_tok3 = best_time(lambda: [kernel.sketch(b, tokenizer=3) for b in batches], repeat)
    t1_bytes = best_time(lambda: one_thread(raw_batches), repeat)
    t1_scalar = best_time(lambda: one_thread(raw_batches, False), repeat)
    t1_whole = best_time(lambda: kernel.sketch(docs), repeat)
    cores = os.cpu_count() or 1
    with ThreadPoolExecutor(cores) as pool:

        def all_cores() -> None:
            list(pool.map(lambda b: kernel.sketch(b), batches))

        tn = best_time(all_cores, repeat, clock=time.perf_counter)

    from datasketch import MinHash

    subset = docs[: max(20, len(docs) // 20)]
    sub_bytes = sum(len(d.encode()) for d in subset)

    def datasketch_run() -> None:
        for d in subset:
            m = MinHash(num_perm=128)
            m.update_batch(py_shingles(d))

    t_ds = best_time(datasketch_run, 1, min_time=0.5)
    return {
        "docs": len(docs),
        "mb": nbytes / 1e6,
        "mbs_1": nbytes / t1 / 1e6,
        "mbs_1_tok2": nbytes / t1_tok2 / 1e6,
        "mbs_1_tok3": nbytes / t1_tok3 / 1e6,
        "docs_1": len(docs) / t1,
        "mbs_1_bytes": nbytes / t1_bytes / 1e6,
        "mbs_1_scalar": nbytes / t1_scalar / 1e6,
        "mbs_1_whole": nbytes / t1_whole / 1e6,
        "mbs_n": nbytes / tn / 1e6,
        "docs_n": len(docs) / tn,
        "cores": cores,
        "mbs_ds": sub_bytes / t_ds / 1e6,
    }


def bench_jaccard(docs: list[str], n_fp: int, repeat: int) -> dict[str, float]:
    """jaccard_many pairs/s (query against every other text), t = 0.5, and numpy per pair."""
    s = kernel.sketch(docs, fingerprint_size=n_fp)
    values, offsets = s.fp_values, s.fp_offsets
    n = len(docs)
    queries = [s.fingerprints[i] for i in range(0, n, max(1, n // 20))]

    def run(simd: bool) -> None:
        for q in queries:
            kernel.jaccard_many_packed(q, values, offsets, 0.5, fingerprint_size=n_fp, simd=simd)

    t = best_time(lambda: run(True), repeat)
    t_scalar = best_time(lambda: run(False), repeat)
    pairs = len(queries) * n
    hits = sum(
        int(
            np.count_nonzero(
                kernel.jaccard_many_packed(q, values, offsets, 0.5, fingerprint_size=n_fp)
            )
        )
        for q in queries
    )
    fps = s.fingerprints[: min(n, 500)]

    def numpy_run() -> None:
        q = queries[0]
        for f in fps:
            inter = len(np.intersect1d(q, f, assume_unique=True))
            _ = inter / (len(q) + len(f) - inter)

    t_np = best_time(numpy_run, 1)
    data, data_offsets = kernel.encode_fingerprints(values, offsets)
    enc = kernel.Encoded(
        data, data_offsets[:-1], data_offsets[1:], np.diff(offsets).astype(np.uint32)
    )

    def run_encoded() -> None:
        for q in queries:
            kernel.jaccard_many_encoded(q, enc, 0.5, fingerprint_size=n_fp)

    t_enc = best_time(run_encoded, repeat)
    return {
        "encoded_pairs_s": pairs / t_enc,
        "plain_bytes": 4 * len(values) / n,
        "encoded_bytes": len(data) / n,
        "pairs_s": pairs / t,
        "pairs_s_scalar": pairs / t_scalar,
        "numpy_pairs_s": len(fps) / t_np,
        "hits": hits,
        "pairs": pairs,
    }


def bench_against(docs: list[str], base: object, repeat: int) -> dict[str, float]:
    """MB/s (sketch, winnow) and M pairs/s (jaccard_many, N=256, t=0.5) of this build and of
    a baseline build, alternating rounds so that both see the same machine."""
    from kernel_baseline import swapped

    nbytes = sum(len(d.encode()) for d in docs)
    batches = [docs[i : i + BATCH] for i in range(0, len(docs), BATCH)]
    s = kernel.sketch(docs)
    queries = [s.fingerprints[i] for i in range(0, len(docs), max(1, len(docs) // 20))]
    jobs: dict[str, Callable[[], object]] = {
        "sketch": lambda: [kernel.sketch(b) for b in batches],
        "sketch scalar": lambda: [kernel.sketch(b, simd=False) for b in batches],
        "winnow": lambda: [kernel.winnow(b) for b in batches],
        "words": lambda: [kernel.winnow(b, shingle="word:1", passage_words=1) for b in batches],
        "jaccard": lambda: [
            kernel.jaccard_many_packed(q, s.fp_values, s.fp_offsets, 0.5) for q in queries
        ],
    }
    out: dict[str, float] = {}
    tok2: dict[str, Callable[[], object]] = {
        "sketch t2": lambda: [kernel.sketch(b, tokenizer=2) for b in batches],
        "winnow t2": lambda: [kernel.winnow(b, tokenizer=2) for b in batches],
    }
    if 2 in getattr(base, "tokenizers", (1,)):
        jobs.update(tok2)
    else:  # this build only: against its own tokenizer 1
        for name, job in tok2.items():
            out[name] = nbytes / 1e6 / min(best_time(job, 1) for _ in range(repeat))
    for name, job in jobs.items():
        mine, theirs = float("inf"), float("inf")
        for _ in range(repeat):
            mine = min(mine, best_time(job, 1))
            with swapped(base):
                theirs = min(theirs, best_time(job, 1))
        unit = len(queries) * len(docs) / 1e6 if name == "jaccard" else nbytes / 1e6
        out[name] = unit / mine
        out[name + " base"] = unit / theirs
    return out


def compare(rev: str, corpora: list[tuple[str, list[str]]], repeat: int) -> None:
    """The same-run table of this build against rev's kernel."""
    from kernel_baseline import build

    base = build(rev)
    print(
        f"\nthis build against {rev} (built from git into a scratch directory), "
        "same process, same wrappers, 1 thread: MB/s (jaccard: M pairs/s, N=256, t=0.5)\n"
    )
    names = ("sketch", "sketch scalar", "winnow", "words", "jaccard")
    header = f"{'corpus':<18} | " + " | ".join(f"{n:>24}" for n in names)
    print(header)
    print(f"{'':<18} | " + " | ".join(f"{'this':>7} {'base':>7} {'ratio':>8}" for _ in names))
    print("-" * len(header))
    for name, docs in corpora:
        r = bench_against(docs, base, repeat)
        cells = [
            f"{r[n]:>7.1f} {r[n + ' base']:>7.1f} {r[n] / r[n + ' base']:>7.3f}x" for n in names
        ]
        print(f"{name:<18} | " + " | ".join(cells))
        line = (
            f"{'':<18}   tokenizer 2, this build: sketch {r['sketch t2']:.1f} MB/s "
            f"({r['sketch t2'] / r['sketch']:.2f}x tokenizer 1), winnow "
            f"{r['winnow t2']:.1f} MB/s ({r['winnow t2'] / r['winnow']:.2f}x)"
        )
        if "sketch t2 base" in r:
            line += (
                f"; base: sketch {r['sketch t2 base']:.1f} MB/s "
                f"({r['sketch t2 base'] / r['sketch base']:.2f}x its tokenizer 1), winnow "
                f"{r['winnow t2 base']:.1f} MB/s ({r['winnow t2 base'] / r['winnow base']:.2f}x); "
                f"this / base: sketch {r['sketch t2'] / r['sketch t2 base']:.2f}x, "
                f"winnow {r['winnow t2'] / r['winnow t2 base']:.2f}x"
            )
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller corpus, fewer rounds")
    parser.add_argument(
        "--default-malloc",
        action="store_true",
        help="leave glibc's trim/mmap thresholds alone (the service tunes them at start-up)",
    )
    parser.add_argument(
        "--compare-only", action="store_true", help="with --baseline: only the comparison"
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also build git revision REV's kernel and compare it in the same run",
    )
    args = parser.parse_args()
    tuned = False if args.default_malloc else kernel.tune_allocator()
    repeat = 2 if args.quick else 5
    corpora: list[tuple[str, list[str]]] = []
    articles = read_articles()
    if articles:
        corpora.append(("articles (shared)", articles))
    corpora.append(("zipf (generated)", zipf_corpus(2000 if args.quick else 10_000)))

    if args.baseline and args.compare_only:
        compare(args.baseline, corpora, repeat)
        return
    simd = ", ".join(k for k, v in kernel.simd_level().items() if v) or "none"
    print(
        f"neardup kernel benchmark: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, SIMD: {simd}, "
        f"allocator: {'kernel.tune_allocator()' if tuned else 'glibc defaults'}"
    )
    print(
        f"sketch: word:3 shingles, num_perm=128, fingerprint_size=256, str texts in calls of "
        f"{BATCH} (bytes in: UTF-8 bytes; scalar: SIMD off; one call: the whole corpus at once)\n"
    )
    header = (
        f"{'corpus':<18} {'docs':>6} {'MB':>5} | {'1 thread MB/s':>13} {'docs/s':>7} "
        f"{'bytes in':>8} {'scalar':>6} {'one call':>8} | {'all cores MB/s':>14} {'docs/s':>7} | "
        f"{'datasketch MB/s':>15} {'ratio':>5} | {'tokenizer 2 MB/s':>16} {'vs 1':>5} "
        f"{'vs ds':>5} | {'tokenizer 3 MB/s':>16} {'vs 1':>5}"
    )
    print(header)
    print("-" * len(header))
    for name, docs in corpora:
        r = bench_sketch(docs, repeat)
        print(
            f"{name:<18} {r['docs']:>6} {r['mb']:>5.1f} | {r['mbs_1']:>13.1f} {r['docs_1']:>7.0f} "
            f"{r['mbs_1_bytes']:>8.1f} {r['mbs_1_scalar']:>6.1f} {r['mbs_1_whole']:>8.1f} | "
            f"{r['mbs_n']:>14.1f} {r['docs_n']:>7.0f} | {r['mbs_ds']:>15.2f} "
            f"{r['mbs_1'] / r['mbs_ds']:>4.0f}x | {r['mbs_1_tok2']:>16.1f} "
            f"{r['mbs_1_tok2'] / r['mbs_1']:>4.2f}x {r['mbs_1_tok2'] / r['mbs_ds']:>4.0f}x | "
            f"{r['mbs_1_tok3']:>16.1f} {r['mbs_1_tok3'] / r['mbs_1']:>4.2f}x"
        )
    print("\njaccard_many: one query against every text's fingerprint, threshold 0.5, 1 thread\n")
    header = (
        f"{'corpus':<18} {'N':>4} | {'pairs/s':>12} {'(scalar)':>12} | "
        f"{'numpy pairs/s':>13} {'ratio':>6} | {'hits':>5} | {'encoded pairs/s':>15} "
        f"{'vs plain':>8} | {'B/fp plain':>10} {'encoded':>7}"
    )
    print(header)
    print("-" * len(header))
    for name, docs in corpora:
        for n_fp in (128, 256):
            r = bench_jaccard(docs, n_fp, repeat)
            print(
                f"{name:<18} {n_fp:>4} | {r['pairs_s'] / 1e6:>10.2f} M "
                f"{r['pairs_s_scalar'] / 1e6:>10.2f} M | {r['numpy_pairs_s'] / 1e3:>11.1f} k "
                f"{r['pairs_s'] / r['numpy_pairs_s']:>5.0f}x | {r['hits']:>5} | "
                f"{r['encoded_pairs_s'] / 1e6:>13.2f} M "
                f"{r['encoded_pairs_s'] / r['pairs_s']:>7.2f}x | "
                f"{r['plain_bytes']:>10.0f} {r['encoded_bytes']:>7.0f}"
            )

    if args.baseline:
        compare(args.baseline, corpora, repeat)


if __name__ == "__main__":
    main()
