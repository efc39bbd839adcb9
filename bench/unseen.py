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
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from app.index.formats import PDF, extract, unseen

ROOT = Path(__file__).resolve().parent.parent


def _pdf(content: bytes, forms: Sequence[bytes] = ()) -> bytes:
    """One page of this content with Helvetica as /F1; forms[i] is object /X{i}, and each
    form draws the next as /Fm (the last draws none)."""
    font = 5
    first = 6
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources "
        b"<< /Font << /F1 5 0 R >> /XObject << %s >> >> >>"
        % (b"/Fm %d 0 R" % first if forms else b""),
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, body in enumerate(forms):
        inner = b"/Fm %d 0 R" % (first + i + 1) if i + 1 < len(forms) else b""
        objects.append(
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << "
            b"/F1 %d 0 R >> /XObject << %s >> >> /Length %d >>\nstream\n"
            % (font, inner, len(body))
            + body
            + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % off for off in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def specks_after_white_glyphs(n: int) -> bytes:
    """~500 white glyphs 1.2 pt high between black words in one small place, then n
    specks painted after them over the same place."""
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
    return _pdf(b"\n".join(lines + specks))


def map_of_fills(n: int) -> bytes:
    """n small grey fills (a map, a scatter plot) and 60 lines of black text."""
    rnd = random.Random(2)
    fills = [
        b"0.6 g %.1f %.1f 1.5 1.5 re f" % (rnd.random() * 600, rnd.random() * 780) for _ in range(n)
    ]
    text = [
        b"BT 0 g /F1 9 Tf 40 %d Td (%s) Tj ET" % (40 + 12 * i, b"label " * 12) for i in range(60)
    ]
    return _pdf(b"\n".join(fills + text))


def nested_forms(depth: int, fan: int, fills: int) -> bytes:
    """Forms `depth` deep, each drawing `fills` fills and the next form `fan` times; the
    last draws a line with a white word in it."""
    forms = []
    for k in range(depth):
        body = b"\n".join(b"0.5 g %d %d 3 3 re f" % (10 + i, 10 + k) for i in range(fills))
        if k + 1 < depth:
            body += b"\n" + b"\n".join(b"q 1 0 0 1 %d 0 cm /Fm Do Q" % j for j in range(fan))
        else:
            body += b"\nBT 0 g /F1 9 Tf 50 400 Td (Leaf text) Tj 1 g ( white) Tj 0 g ( end) Tj ET"
        forms.append(body)
    return _pdf(b"q /Fm Do Q BT /F1 11 Tf 72 300 Td (Page text) Tj ET", forms)


class _NoCandidates:
    """unseen.Drawing as if no glyph could be unseen: extraction as before the rule."""

    def __init__(self, page: Any) -> None:
        self.candidates: set[int] = set()
        self.every = False


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
            specks_after_white_glyphs(args.specks),
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
