"""Every code point through a kernel normalizer and the plain-Python oracle, the oracle's
side in worker processes: it reads a text a character at a time in Python (seconds per
slice), while the kernel takes milliseconds, so the slices' oracle runs side by side."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

from support import oracle

SLICE = 1 << 17  # code points a text
JOINERS = ("a", " ")  # between letters, and alone


def _text(start: int, joiner: str) -> str:
    """The slice's code points from start (surrogates left out), joined by joiner."""
    end = min(start + SLICE, 0x110000)
    return joiner.join(chr(c) for c in range(start, end) if not 0xD800 <= c <= 0xDFFF)


def _oracle_slice(start: int, version: int) -> list[str]:
    return [oracle.normalized2(_text(start, j), version) for j in JOINERS]


def every_code_point(version: int) -> Iterator[tuple[str, str, str]]:
    """(where, text, the oracle's normalized text) for every slice of every code point
    with each joiner, tokenizer `version`'s rules."""
    starts = range(0, 0x110000, SLICE)
    workers = max(1, min(2, os.cpu_count() or 1))
    # spawn: a fork of the test process (its threads, its Redis clients) is not safe.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        answers = pool.map(_oracle_slice, starts, [version] * len(starts))
        for start, wants in zip(starts, answers, strict=True):
            for joiner, want in zip(JOINERS, wants, strict=True):
                yield f"{start:#x} joined by {joiner!r}", _text(start, joiner), want
