"""Passage layout packing alone (figures, not tests): format 3 by numpy and by the kernel.

Batches of 500 documents of 200-400 Zipf words (bench/common.py, as bench/alignment.py
ingests them), winnowed as an ingest winnows them (word:3 anchors of a 30-word passage,
word:1 words); then the best of --rounds of packing every batch: format 3 at --bits by
passages.pack_batch (numpy, the reference) and by kernel.pack_layouts(bits=) (the ingest
path), and format 1 by the kernel. Per document, and the numpy/kernel ratio of the same run.

Run: .venv/bin/python bench/layouts.py [--docs 5000] [--bits 8] [--rounds 7]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from common import make_corpus

from app import kernel
from app.index.passages import pack_batch

BATCH = 500


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--bits", type=int, default=8, help="of a word hash, 4 to 16")
    parser.add_argument("--rounds", type=int, default=7, help="the best of them is kept")
    args = parser.parse_args()
    corpus = make_corpus(args.docs, dup_fraction=0.0)
    texts = [corpus.text(i) for i in range(args.docs)]
    batches = []
    for k in range(0, args.docs, BATCH):
        part = texts[k : k + BATCH]
        anchors = kernel.winnow(part, shingle="word:3", passage_words=30, seed=1)
        words = kernel.winnow(part, shingle="word:1", passage_words=1, seed=1)
        batches.append((anchors, words))
    bits = args.bits

    def numpy3() -> None:
        for a, w in batches:
            pack_batch(a.hashes, a.starts, a.offsets, w.hashes, w.starts, w.ends, w.offsets, bits)

    def kernel3() -> None:
        for a, w in batches:
            kernel.pack_layouts(a, w, bits=bits)

    def kernel1() -> None:
        for a, w in batches:
            kernel.pack_layouts(a, w)

    runs: dict[str, Callable[[], None]] = {
        f"format 3 ({bits} bits), numpy pack_batch": numpy3,
        f"format 3 ({bits} bits), kernel": kernel3,
        "format 1, kernel": kernel1,
    }
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.rounds):  # the builds alternate: the machine may be shared
        for name, fn in runs.items():
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    print(f"layout packing, {args.docs} documents in batches of {BATCH}, best of {args.rounds}")
    for name, secs in best.items():
        print(f"{name:>36}: {secs * 1e6 / args.docs:6.2f} us a document")
    numpy_s, kernel_s = (best[name] for name in list(runs)[:2])
    print(f"{'numpy / kernel':>36}: {numpy_s / kernel_s:6.1f}x")


if __name__ == "__main__":
    main()
