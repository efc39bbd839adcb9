"""Deterministic test texts: near-duplicate variants of real articles."""

from __future__ import annotations

import random

VOCAB = [
    "apple", "river", "engine", "market", "silver", "garden", "planet", "window",
    "signal", "harbor", "pencil", "thunder", "bridge", "candle", "forest", "violet",
    "rocket", "meadow", "copper", "lantern", "saddle", "quartz", "falcon", "ember",
]  # fmt: skip


def mutate(text: str, rate: float, rng: random.Random) -> str:
    """Edit about `rate` of the words: substitutions, deletions and insertions."""
    out = []
    for word in text.split():
        if rng.random() >= rate:
            out.append(word)
            continue
        kind = rng.randrange(3)
        if kind == 0:
            out.append(rng.choice(VOCAB) + str(rng.randrange(1000)))
        elif kind == 1:
            out.append(word)
            out.append(rng.choice(VOCAB) + str(rng.randrange(1000)))
        # kind 2: the word is deleted
    return " ".join(out)
