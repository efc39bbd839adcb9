"""An independent, plain-Python statement of the shingling contract, for the kernel tests.

No code shared with the kernel: words are runs of ``str.isalnum()`` code points of
``text.casefold()``; shingles are tuples of K words (word shingles) or K-grams of the code
points of the words joined by single spaces (char shingles); a text with fewer than K (but at
least one) items is one shingle of all of them; a text without words has no shingles.

Winnowing is stated here too: the shingle hash written out from the formulas in
native/neardup.h (Python integers, nothing of the C code's rolling or chunking), the code
points each shingle covers, and the selection as the paper defines it, window by window.
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


# --- shingle hashes (the formulas of native/neardup.h) ---------------------------------------

MASK = (1 << 64) - 1
M = 0x9E3779B97F4A7C15
B = 0xD6E8FEB86659FD93
KINDS = {"word": 0, "char": 1}


def fmix64(k: int) -> int:
    """MurmurHash3's 64-bit finalizer."""
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & MASK
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & MASK
    k ^= k >> 33
    return k


def seed_part(seed: int, tag: int) -> int:
    """part(t) of the header: an independent 64-bit constant per use of the seed."""
    return fmix64((seed * 0x2545F4914F6CDD1D + tag * M + 0x632BE59BD9B4E019) & MASK)


def word_hash(word: str, seed: int) -> int:
    """A word's item hash: its UTF-8 bytes in little-endian 8-byte chunks, then its length."""
    data = word.encode("utf-8")
    h = seed_part(seed, 2)
    for i in range(0, len(data), 8):
        h = ((h ^ int.from_bytes(data[i : i + 8], "little")) * M) & MASK
    return fmix64((h + len(data)) & MASK)


def char_hash(ch: str, seed: int) -> int:
    """A code point's item hash."""
    return fmix64((((ord(ch) + 1) * M) & MASK) ^ seed_part(seed, 3))


def shingle_hash(items: list[int], kind: str, k: int, seed: int) -> int:
    """The polynomial in B of the item hashes, oldest first, finalized with the seed part."""
    total = sum(x * pow(B, len(items) - 1 - i, 1 << 64) for i, x in enumerate(items)) & MASK
    return fmix64(total ^ seed_part(seed, 1) ^ (KINDS[kind] << 8 | k))


def sketch_hashes(text: str, spec: str = "word:3", seed: int = 1) -> set[int]:
    """The distinct 64-bit shingle hashes the sketch is made of (short texts: one shingle)."""
    kind, k = parse(spec)
    if kind == "word":
        items = [word_hash(w, seed) for w in words(text)]
    else:
        items = [char_hash(c, seed) for c in normalized(text)]
    if not items:
        return set()
    if len(items) < k:
        return {shingle_hash(items, kind, k, seed)}
    return {shingle_hash(items[i : i + k], kind, k, seed) for i in range(len(items) - k + 1)}


# --- winnowing --------------------------------------------------------------------------------


def word_letters(text: str) -> list[list[tuple[str, int]]]:
    """Each word as its folded letters and digits, each with the index of the code point of
    text it comes from (folding can make several of one, even of two words)."""
    out: list[list[tuple[str, int]]] = []
    current: list[tuple[str, int]] = []
    for j, ch in enumerate(text):
        for f in ch.casefold():
            if f.isalnum():
                current.append((f, j))
            elif current:
                out.append(current)
                current = []
    if current:
        out.append(current)
    return out


def spanned_shingles(text: str, spec: str, seed: int = 1) -> list[tuple[int, int, int]]:
    """(hash, start, end) of every whole shingle in text order; none if fewer than K items.

    A word covers the code points from its first letter's to its last letter's; a word shingle
    from its first word's start to its last word's end. A char shingle covers its first to its
    last letter, or, when it is nothing but a space (char:1), the gap between the two words.
    """
    kind, k = parse(spec)
    ws = word_letters(text)
    if kind == "word":
        hashes = [word_hash("".join(f for f, _ in w), seed) for w in ws]
        return [
            (shingle_hash(hashes[i : i + k], kind, k, seed), ws[i][0][1], ws[i + k - 1][-1][1] + 1)
            for i in range(len(ws) - k + 1)
        ]
    chars: list[tuple[str, int | None]] = []  # the normalized text; None marks a space
    gaps: dict[int, tuple[int, int]] = {}  # space -> (end of the word before, start of the next)
    for n, w in enumerate(ws):
        if n:
            gaps[len(chars)] = (ws[n - 1][-1][1] + 1, w[0][1])
            chars.append((" ", None))
        chars.extend(w)
    out = []
    for i in range(len(chars) - k + 1):
        gram = chars[i : i + k]
        h = shingle_hash([char_hash(c, seed) for c, _ in gram], kind, k, seed)
        letters = [j for _, j in gram if j is not None]
        if letters:
            out.append((h, letters[0], letters[-1] + 1))
        else:
            a, b = gaps[i]
            out.append((h, min(a, b), max(a, b)))
    return out


def window(spec: str, passage_words: int) -> int:
    """w: shingles per window so that a shared run of passage_words words holds a whole one."""
    kind, k = parse(spec)
    return passage_words - k + 1 if kind == "word" else 2 * passage_words - k


def winnow_positions(hashes: list[int], w: int) -> list[int]:
    """Positions selected: of each window of w consecutive hashes (one window of all of them
    when there are fewer), the rightmost minimum; each position once, in order."""
    if not hashes:
        return []
    span = min(w, len(hashes))
    picked = set()
    for s in range(len(hashes) - span + 1):
        win = hashes[s : s + span]
        picked.add(s + span - 1 - win[::-1].index(min(win)))
    return sorted(picked)


def winnow(text: str, spec: str, passage_words: int, seed: int = 1) -> list[tuple[int, int, int]]:
    """(hash, start, end) of the selected shingles of a text, in text order."""
    shingles = spanned_shingles(text, spec, seed)
    chosen = winnow_positions([h for h, _, _ in shingles], window(spec, passage_words))
    return [shingles[i] for i in chosen]
