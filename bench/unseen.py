"""What judging unseen PDF glyphs costs (figures, not tests): extraction of pages built to
be slow to judge, and of the repository's own PDFs, with the rule (app.index.formats.
unseen) and without it, in this process.

    .venv/bin/python bench/unseen.py [--specks 300000] [--rounds 3]

"Without" reads the same pages with unseen.Drawing found to have no candidates, which is
what extraction cost before the rule existed.
"""

from __future__ import annotations

import argparse
import functools
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.index.formats import PDF, extract, unseen

ROOT = Path(__file__).resolve().parent.parent
# The tests' own writer of small PDFs (tests/support/pdfgen.py), one copy of it.
sys.path.insert(0, str(ROOT / "tests"))
from support.pdfgen import pdf  # noqa: E402


def specks_and_white_glyphs(n: int, after: bool = True) -> bytes:
    """~500 white glyphs 1.2 pt high between black words in one small place, and n
    specks painted over the same place after them (or before them)."""
    rnd = random.Random(1)
    lines = [
        b"BT 0 g /F1 1.2 Tf 96 %.1f Td (word) Tj 1 g (xxxxxxxxxx) Tj 0 g (word) Tj ET"
        % (398 + 0.5 * i)
        for i in range(48)
    ]
    specks = [
        b"0.2 g %.2f %.2f 0.2 0.2 re f" % (96 + rnd.random() * 18, 397 + rnd.random() * 23)
        for _ in range(n)
    ]
    return pdf([b"\n".join(lines + specks if after else specks + lines)])


def map_of_fills(n: int) -> bytes:
    """n small grey fills (a map, a scatter plot) and 60 lines of black text."""
    rnd = random.Random(2)
    fills = [
        b"0.6 g %.1f %.1f 1.5 1.5 re f" % (rnd.random() * 600, rnd.random() * 780) for _ in range(n)
    ]
    text = [
        b"BT 0 g /F1 9 Tf 40 %d Td (%s) Tj ET" % (40 + 12 * i, b"label " * 12) for i in range(60)
    ]
    return pdf([b"\n".join(fills + text)])


def nested_forms(depth: int, fan: int, fills: int) -> bytes:
    """Forms `depth` deep, each drawing `fills` fills and the next form `fan` times; the
    last draws a line with a white word in it."""
    forms = {}
    for k in range(depth):
        body = b"\n".join(b"0.5 g %d %d 3 3 re f" % (10 + i, 10 + k) for i in range(fills))
        if k + 1 < depth:
            body += b"\n" + b"\n".join(
                b"q 1 0 0 1 %d 0 cm /Fm%d Do Q" % (j, k + 1) for j in range(fan)
            )
        else:
            body += b"\nBT 0 g /F1 9 Tf 50 400 Td (Leaf text) Tj 1 g ( white) Tj 0 g ( end) Tj ET"
        forms[f"Fm{k}"] = body
    return pdf([b"q /Fm0 Do Q BT /F1 11 Tf 72 300 Td (Page text) Tj ET"], forms)


class _NoCandidates:
    """unseen.Drawing as if no glyph could be unseen: extraction as before the rule."""

    def __init__(self, page: Any) -> None:
        self.candidates: set[int] = set()
        self.every = False

    def may_hide(self) -> bool:
        return False


def _best(fn: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--specks", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cases: list[tuple[str, bytes]] = [
        (
            f"{args.specks:,} specks painted after ~500 white glyphs",
            specks_and_white_glyphs(args.specks),
        ),
        (
            f"{args.specks:,} specks painted before ~500 white glyphs",
            specks_and_white_glyphs(args.specks, after=False),
        ),
        (f"a map of {args.specks:,} fills and 60 lines of text", map_of_fills(args.specks)),
        ("forms 12 deep, each drawing the next twice with 50 fills", nested_forms(12, 2, 50)),
    ]
    for path in sorted((ROOT / "tests" / "data" / "formats").glob("*.pdf")):
        if "encrypted" not in path.name:
            cases.append((f"tests/data/formats/{path.name}", path.read_bytes()))
    print(f"{'page':<62} {'with the rule':>14} {'without':>10} {'ratio':>7}")
    drawing = unseen.Drawing
    for name, raw in cases:
        extract(PDF, raw)  # warm
        with_rule = _best(functools.partial(extract, PDF, raw), args.rounds)
        unseen.Drawing = _NoCandidates  # type: ignore[assignment,misc]
        try:
            without = _best(functools.partial(extract, PDF, raw), args.rounds)
        finally:
            unseen.Drawing = drawing  # type: ignore[misc]
        times = f"{with_rule * 1000:>11.1f} ms {without * 1000:>7.1f} ms"
        print(f"{name:<62} {times} {with_rule / without:>6.2f}x")


if __name__ == "__main__":
    main()
