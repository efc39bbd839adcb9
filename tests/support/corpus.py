"""The test corpus (tests/data/, see its README.md) and the installed command."""

from __future__ import annotations

import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = DATA / "articles_1000.train"
TRUTH = DATA / "articles_1000.truth"


def read_corpus() -> list[tuple[str, str]]:
    """(id, text) of the articles corpus."""
    docs = []
    with CORPUS.open(encoding="utf-8") as fh:
        for line in fh:
            doc_id, _, text = line.rstrip("\n").partition(" ")
            docs.append((doc_id, text))
    return docs


def read_truth() -> list[tuple[str, str]]:
    with TRUTH.open(encoding="utf-8") as fh:
        return [tuple(line.split()[:2]) for line in fh if line.strip()]  # type: ignore[misc]


def neardup_cmd() -> list[str]:
    """The installed console script, next to this interpreter."""
    return [str(Path(sys.executable).with_name("neardup"))]
