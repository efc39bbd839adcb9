"""Winnowing benchmark (figures, not tests): docs/s of kernel.winnow, SIMD and scalar.

Run: ``.venv/bin/python bench/winnow.py [--quick]``.

Prints, per corpus (the shared articles and a generated Zipf corpus) and shingle spec, one-thread
docs/s and MB/s of winnow(passage_words=30) with the SIMD paths and with simd=False, the
selections per text, and sketch() on the same texts for scale (the same tokenizer and shingle
hashing, into a set and signature instead of a window). Word shingles have an AVX2 tokenizer and
an AVX2 window minimum; char shingles only the latter, so their SIMD/scalar ratio is the window
minimum's own.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
import sys
from pathlib import Path
from types import ModuleType

from common import read_articles

from app import kernel


def _sibling(name: str) -> ModuleType:
    """bench/<name>.py, loaded under another name (bench/kernel.py would shadow app.kernel)."""
    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", Path(__file__).with_name(f"{name}.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_kernel_bench = _sibling("kernel")  # its timer, batch size and Zipf corpus, so figures compare
BATCH = _kernel_bench.BATCH
best_time = _kernel_bench.best_time
zipf_corpus = _kernel_bench.zipf_corpus

SPECS = ("word:3", "word:5", "char:5")
PASSAGE = 30


def bench(docs: list[str], spec: str, repeat: int) -> dict[str, float]:
    """One-thread docs/s of winnow and sketch over batches of BATCH texts, SIMD and scalar."""
    batches = [docs[i : i + BATCH] for i in range(0, len(docs), BATCH)]

    def winnow(simd: bool) -> None:
        for b in batches:
            kernel.winnow(b, shingle=spec, passage_words=PASSAGE, simd=simd)

    def sketch(simd: bool) -> None:
        for b in batches:
            kernel.sketch(b, shingle=spec, simd=simd)

    out = {
        "winnow": len(docs) / best_time(lambda: winnow(True), repeat),
        "winnow_scalar": len(docs) / best_time(lambda: winnow(False), repeat),
        "sketch": len(docs) / best_time(lambda: sketch(True), repeat),
        "sketch_scalar": len(docs) / best_time(lambda: sketch(False), repeat),
    }
    w = kernel.winnow(docs, shingle=spec, passage_words=PASSAGE)
    out["selections"] = len(w.hashes) / len(docs)
    out["window"] = w.window
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller corpus, fewer rounds")
    args = parser.parse_args()
    kernel.tune_allocator()
    repeat = 2 if args.quick else 5
    corpora: list[tuple[str, list[str]]] = []
    articles = read_articles()
    if articles:
        corpora.append(("articles (shared)", articles))
    corpora.append(("zipf (generated)", zipf_corpus(2000 if args.quick else 10_000)))
    simd = ", ".join(k for k, v in kernel.simd_level().items() if v) or "none"
    print(f"{platform.machine()}, SIMD in use: {simd}; one thread, batches of {BATCH} texts")
    for name, docs in corpora:
        mb = sum(len(d.encode()) for d in docs) / 1e6
        print(f"\n{name}: {len(docs)} texts, {mb:.1f} MB, passage_words={PASSAGE}")
        print(
            f"  {'spec':7} {'w':>3} {'sel/text':>8}  {'winnow SIMD':>17}  {'winnow scalar':>17}"
            f"  {'SIMD/scalar':>11}  {'sketch SIMD':>11}  {'sketch scalar':>13}"
        )
        for spec in SPECS:
            r = bench(docs, spec, repeat)
            per_mb = mb / len(docs)
            print(
                f"  {spec:7} {r['window']:>3} {r['selections']:>8.1f}"
                f"  {r['winnow']:>8.0f} docs/s {r['winnow'] * per_mb:>4.0f} MB/s"
                f"  {r['winnow_scalar']:>8.0f} docs/s {r['winnow_scalar'] * per_mb:>4.0f} MB/s"
                f"  {r['winnow'] / r['winnow_scalar']:>10.2f}x"
                f"  {r['sketch']:>6.0f} docs/s  {r['sketch_scalar']:>8.0f} docs/s"
            )


if __name__ == "__main__":
    main()
