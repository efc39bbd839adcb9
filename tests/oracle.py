"""An independent, plain-Python statement of the shingling contract, for the kernel tests.

No hashing and no code shared with the kernel: words are runs of ``str.isalnum()`` code points
of ``text.casefold()``; shingles are tuples of K words (word shingles) or K-grams of the code
points of the words joined by single spaces (char shingles); a text with fewer than K (but at
least one) items is one shingle of all of them; a text without words has no shingles.
"""

from __future__ import annotations


def words(text: str) -> list[str]:
    """Maximal runs of alnum code points of the case-folded text."""
    out: list[str] = []
    current: list[str] = []
    for ch in text.casefold():
        if ch.isalnum():
            current.append(ch)
        elif current:
            out.append("".join(current))
            current = []
    if current:
        out.append("".join(current))
    return out


def normalized(text: str) -> str:
    """The words joined by single spaces."""
    return " ".join(words(text))


def parse(spec: str) -> tuple[str, int]:
    """("word" | "char", K) from "word:K" / "char:K"."""
    kind, _, k = spec.partition(":")
    if kind not in ("word", "char"):
        raise ValueError(spec)
    return kind, int(k)


def shingles(text: str, spec: str = "word:3") -> set[tuple[str, ...]] | set[str]:
    """The set of distinct shingles of a text."""
    kind, k = parse(spec)
    if kind == "word":
        ws = words(text)
        if not ws:
            return set()
        if len(ws) < k:
            return {tuple(ws)}
        return {tuple(ws[i : i + k]) for i in range(len(ws) - k + 1)}
    s = normalized(text)
    if not s:
        return set()
    if len(s) < k:
        return {s}
    return {s[i : i + k] for i in range(len(s) - k + 1)}


def exact_jaccard(a: set, b: set) -> float:
    """Size of the intersection over size of the union; 0 for two empty sets."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0
