"""Plain-Python statement of tokenizer 2's rule for scripts written without spaces (issue 31),
for the kernel tests and bench/languages.py. Nothing shared with the kernel or its tables.

Scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) have no
word boundaries to find, so each of their letters or digits is a token of its own, as search
engines' standard analyzers do it; everything else keeps tokenizer 2's word rule
(oracle.word_letters2: its folds, then maximal runs of letters and digits). Korean is written
with spaces and keeps word tokens. Mixed text tokenizes each part by its own rule:
``"用Python编程"`` is ``用 python 编 程``.

Which code points are "written without spaces" is said here by Unicode block ranges, typed in
from the Unicode standard's Blocks.txt, with the few edge cases of the Script property noted;
the kernel's tables take the Script and Script_Extensions properties instead, and the tests
check the two agree on every code point.

Shingles: the shingle that ends at token i covers the last ``kc`` tokens if token i is such a
character, else the last ``k`` (the collection's K), and exists once that many tokens have been
read; so a shingle that reaches across a change of script takes the length of the script it
ends in; kc is 2K + 1 (at most 16) unless a call says otherwise. A text with tokens but no
whole shingle is one shingle of all its tokens (the sketch; winnowing has none). A character
token's item hash is the word hash of that one character. Winnowing breaks ties robustly
(robust_positions).

``token_letters(text, version=1)`` applies the rule to tokenizer 1's case folding instead, for
the measurement of bench/languages.py.
"""

from __future__ import annotations

from support import oracle

# Blocks whose letters and digits are written without spaces (first, last code point).
SEGMENTED = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer Symbols
    (0x2E80, 0x2FDF),  # CJK Radicals Supplement, Kangxi Radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # vertical kana repeat marks
    (0x3038, 0x303C),  # Hangzhou numerals ten to thirty, iteration and masu marks
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana (with the prolonged sound mark)
    (0x3190, 0x319F),  # Kanbun
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3220, 0x3247),  # parenthesized ideographs
    (0x3280, 0x32B0),  # circled ideographs
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA9E0, 0xA9FF),  # Myanmar Extended-B
    (0xAA60, 0xAA7F),  # Myanmar Extended-A
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),  # halfwidth Katakana
    (0x16FE2, 0x16FE3),  # ideographic full stop, Old Chinese iteration mark (Han)
    (0x16FF0, 0x16FF1),  # Vietnamese alternate reading marks (Han; spacing marks, Mc)
    (0x1AFF0, 0x1B16F),  # Kana Extended-B, Kana Supplement, Kana Extended-A, Small Kana Ext.
    (0x1D360, 0x1D371),  # counting rod numerals (Han); the tally marks after them are Common
    (0x20000, 0x3FFFF),  # CJK Extensions B to I, Compatibility Supplement
)


def segmented(ch: str) -> bool:
    """Whether a (folded) code point is a character of a script written without spaces."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in SEGMENTED)


def default_kc(k: int) -> int:
    """The K of a shingle ending at a letter of an unspaced script, for word:K: 2K + 1."""
    return min(2 * k + 1, 16)


def is_letter_token(letters: list[tuple[str, int]]) -> bool:
    """Whether a token (its letters) is one letter of an unspaced script."""
    return len(letters) == 1 and segmented(letters[0][0])


def token_letters(text: str, version: int = 2) -> list[tuple[bool, list[tuple[str, int]]]]:
    """Tokens in order: (is a character token, [(folded letter, index of its code point)])."""
    if version in (2, 3, 4):
        return [(is_letter_token(w), w) for w, _ in oracle.word_letters2(text, version=version)]
    out: list[tuple[bool, list[tuple[str, int]]]] = []
    current: list[tuple[str, int]] = []
    for j, ch in enumerate(text):
        for f in ch.casefold():
            if f.isalnum() and segmented(f):
                if current:
                    out.append((False, current))
                    current = []
                out.append((True, [(f, j)]))
            elif f.isalnum():
                current.append((f, j))
            elif current:
                out.append((False, current))
                current = []
    if current:
        out.append((False, current))
    return out


def tokens(text: str, version: int = 2) -> list[str]:
    """The tokens of a text: words, and single characters of the unspaced scripts."""
    return ["".join(f for f, _ in t) for _, t in token_letters(text, version)]


def windows(flags: list[bool], k: int, kc: int) -> list[tuple[int, int]]:
    """[first, last] token of every whole shingle, in text order."""
    out = []
    for i, is_char in enumerate(flags):
        n = kc if is_char else k
        if i + 1 >= n:
            out.append((i - n + 1, i))
    return out


def shingles(text: str, k: int = 3, kc: int = 7, version: int = 2) -> set[tuple[str, ...]]:
    """The distinct shingles (token tuples) of a text, a short one being one shingle."""
    toks = token_letters(text, version)
    words = ["".join(f for f, _ in t) for _, t in toks]
    wins = windows([c for c, _ in toks], k, kc)
    if not wins:
        return {tuple(words)} if words else set()
    return {tuple(words[a : b + 1]) for a, b in wins}


def sketch_hashes(text: str, k: int = 3, kc: int = 7, seed: int = 1, version: int = 2) -> set[int]:
    """The distinct 64-bit shingle hashes of a word:K sketch under version 2's (or 3's)
    segmentation."""
    toks = token_letters(text, version)
    items = [oracle.word_hash("".join(f for f, _ in t), seed) for _, t in toks]
    wins = windows([c for c, _ in toks], k, kc)
    if not wins:
        return {oracle.shingle_hash(items, "word", k, seed)} if items else set()
    return {oracle.shingle_hash(items[a : b + 1], "word", k, seed) for a, b in wins}


def spanned_shingles(
    text: str, k: int = 3, kc: int = 7, seed: int = 1
) -> list[tuple[int, int, int]]:
    """(hash, start, end) of every whole shingle in text order: a shingle covers its first
    token's first code point to one past its last token's last one."""
    toks = token_letters(text)
    items = [oracle.word_hash("".join(f for f, _ in t), seed) for _, t in toks]
    return [
        (
            oracle.shingle_hash(items[a : b + 1], "word", k, seed),
            toks[a][1][0][1],
            toks[b][1][-1][1] + 1,
        )
        for a, b in windows([c for c, _ in toks], k, kc)
    ]


def robust_positions(hashes: list[int], w: int) -> list[int]:
    """Robust winnowing (Schleimer, Wilkerson, Aiken 2003, section 4.2): of each window of w
    hashes (one window of all when there are fewer), the minimum; on a tie, the previous
    window's selection if it is still inside, else the rightmost minimum. Each once, in order."""
    if not hashes:
        return []
    span = min(w, len(hashes))
    picked: set[int] = set()
    prev = -1
    for s in range(len(hashes) - span + 1):
        win = hashes[s : s + span]
        m = min(win)
        if not (prev >= s and hashes[prev] == m):
            prev = s + span - 1 - win[::-1].index(m)
        picked.add(prev)
    return sorted(picked)


def winnow(text: str, k: int, kc: int, window: int, seed: int = 1) -> list[tuple[int, int, int]]:
    """(hash, start, end) of the selected shingles, window by window, robustly (no folds)."""
    spanned = spanned_shingles(text, k, kc, seed)
    chosen = robust_positions([h for h, _, _ in spanned], window)
    return [spanned[i] for i in chosen]
