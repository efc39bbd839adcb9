"""Disguised words in a containment query: per passage, how many words of the query's span
held look-alike letters or invisible characters (issue 26's flag).

Tokenizers 2 to 4 fold those away, so a disguised copy is found like a verbatim one; the
kernel says, per word, what it folded (kernel.DISGUISED), and this module counts those words
in each passage's query span. Ligatures, full-width forms, accents and line-end hyphens are
left out: PDF export and typesetting make them, not an intent to hide. Two compatibility
forms do hide words, and are flagged: mathematical letters in a word of two letters or more
("quick" in mathematical bold; a formula's variables are single letters) and full-width
Latin letters beside ASCII ones in one word (a full-width q, then "uick"). Tokenizers 3, 4 mark a
look-alike only in a word that mixes it with Latin letters (the kernel decides, per word), so a
Russian or Greek text copied as it is has no disguised words; tokenizer 2 marked every word
with a letter that has a Latin look-alike.

Tokenizer 1 collections are never flagged. That tokenizer folds nothing: a look-alike word
there is a different word, which a passage holds at most as an edit, never as a match the
folding made; the flag would be a guess, and it would change their answers, which stay byte
for byte what they were before tokenizer 2 (issue 26). Rebuilding the collection
(`neardup rebuild`) gives it the latest tokenizer, and the flag with it.
"""

from __future__ import annotations

import asyncio
import functools
import re
import unicodedata
from dataclasses import replace

import numpy as np

from app import kernel
from app.index.params import Params
from app.index.results import ContainmentResult

# Above this many code points the extra kernel pass runs on a worker thread (as sketching
# does: the kernel releases the GIL; below it the thread hop costs more).
THREAD_TEXT_CHARS = 256 * 1024


def disguised_spans(params: Params, text: str) -> tuple[np.ndarray, np.ndarray]:
    """The code-point spans (starts, ends; in text order) of the text's words that held
    look-alike or invisible characters, as the collection's tokenizer reads them; none for
    tokenizer 1."""
    if params.tokenizer < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    # Every word its own window of one, as app.index.sketch's words layout reads them.
    words = kernel.winnow(
        [text],
        shingle="word:1",
        passage_words=1,
        seed=params.seed,
        tokenizer=params.tokenizer,
        unspaced_k=1,
        folds=True,
    )
    assert words.folds is not None
    hit = (words.folds & np.uint8(kernel.DISGUISED)) != 0
    starts, ends = words.starts, words.ends
    # The kernel gives an invisible character between words to a word beside it; only those
    # inside a word, or between it and punctuation with no space on either side, disguise
    # it: a zero-width space beside a space, or a byte-order mark opening the text, hides
    # nothing.
    mixed = (words.folds & np.uint8(kernel.FOLD_CONFUSABLE)) != 0
    for i in np.flatnonzero(hit & ~mixed).tolist():
        hit[i] = _touched(text, int(starts[i]), int(ends[i]))
    # A unit with the micro prefix (10 μM, 5 µm) mixes a Greek letter with Latin ones, as
    # science writes it: no disguise.
    for i in np.flatnonzero(hit & mixed).tolist():
        hit[i] = not _MICRO_UNIT.fullmatch(text, int(starts[i]), int(ends[i]))
    compat = (words.folds & np.uint8(kernel.FOLD_COMPAT)) != 0
    for i in np.flatnonzero(compat & ~hit).tolist():
        hit[i] = _styled(text[int(starts[i]) : int(ends[i])])
    if params.tokenizer >= 4:
        # Tokenizer 4 reads a Hangul filler (invisible, drawn as a blank; a letter to
        # str.isalnum, so _touched passes it by) as a space: one put between two words
        # instead of a space disguises the word before it.
        hit |= np.isin(ends, _fillers_for_spaces(text))
    return np.asarray(starts[hit], np.int64), np.asarray(ends[hit], np.int64)


def _alphanumeric(c: str) -> bool:
    """A letter of the Mathematical Alphanumeric Symbols block (bold, italic, script…)."""
    return "\U0001d400" <= c <= "\U0001d7ff"


def _letterlike(c: str) -> bool:
    """A letter of the Letterlike Symbols block: the math block's holes (\u210e, \u2134),
    and notation of its own (\u211d, \u210f, \u2113)."""
    return "\u2100" <= c <= "\u214f" and c.isalpha()


def _styled(word: str) -> bool:
    """Whether a word's compatibility forms disguise it: a word of three letters or more
    all mathematical (the Letterlike ones count here), mathematical letters beside ASCII
    Latin ones, or full-width Latin letters beside ASCII ones. Typesetting makes none of
    these: a formula's variables are single letters and its products two or so (mc², dx,
    \u210f\u03c9), notation such as \u211d\u207f or the \u2113p norm mixes them with
    superscripts and Greek, and CJK text sets whole words wide."""
    letters = [c for c in word if c.isalpha()]
    if len(letters) >= 3 and all(_alphanumeric(c) or _letterlike(c) for c in letters):
        return True
    if any(map(_alphanumeric, letters)) and any(c.isascii() for c in letters):
        return True
    wide = any("\uff21" <= c <= "\uff3a" or "\uff41" <= c <= "\uff5a" for c in letters)
    return wide and any(c.isascii() for c in letters)


_FILLERS = re.compile("[\u115f\u1160\u3164\uffa0]+")


def _fillers_for_spaces(text: str) -> np.ndarray:
    """Where each run of Hangul fillers with no space on either side begins."""
    return np.fromiter(
        (
            m.start()
            for m in _FILLERS.finditer(text)
            if m.start() > 0
            and m.end() < len(text)
            and not text[m.start() - 1].isspace()
            and not text[m.end()].isspace()
        ),
        np.int64,
    )


# SI units with the micro prefix (µm, μM, µg...), as science writes them.
_MICRO_UNIT = re.compile(
    "[\u00b5\u03bc](?:m|M|g|l|L|s|sec|mol|V|A|F|W|Hz|Pa|J|N|T|H|C|K|Gy|Sv|Bq|S|Wb|lx|cd|rad"
    "|IU|U|Ci|E|Eq|eq|bar|kat|in|mho)[\u00b2\u00b323]?"
)
# Joiners and variation selectors have work to do in many scripts (Persian's ZWNJ, Indic
# conjuncts, emoji sequences and keycaps); between two letters of these they have none.
_NO_JOINERS = ("LATIN ", "GREEK ", "CYRILLIC ", "ARMENIAN ")
_JOINERS = re.compile("[\u200c\u200d\ufe00-\ufe0f\U000e0100-\U000e01ef]+")


# How far from a word an invisible character is looked for, through characters that are
# not spaces (punctuation): a bound, so a long run without spaces costs little.
TOUCH_REACH = 32


def _touched(text: str, start: int, end: int) -> bool:
    """Whether a run of invisible characters inside text[start:end], or in the characters
    that are not spaces right before or after it, has something other than a space (and
    other than the text's edge) on both sides; a run of joiners or variation selectors
    only counts between two letters of a script that never uses them."""
    lo = start
    while lo > max(0, start - TOUCH_REACH) and not text[lo - 1].isspace():
        lo -= 1
    hi = end
    while hi < min(len(text), end + TOUCH_REACH) and not text[hi].isspace():
        hi += 1
    j = lo
    while j < hi:
        if text[j].isalnum() or not _invisible(text[j]):
            j += 1
            continue
        run = j  # a run of invisible characters: what stands on each side of it
        while j < len(text) and not text[j].isalnum() and _invisible(text[j]):
            j += 1
        between = run > 0 and j < len(text) and not text[run - 1].isspace()
        if between and not text[j].isspace() and _hides(text, run, j):
            return True
    return False


def _hides(text: str, run: int, end: int) -> bool:
    """Whether the invisible run text[run:end] hides something: any but joiners and
    variation selectors does; those only between two letters of a script that never uses
    them."""
    return not _JOINERS.fullmatch(text, run, end) or _joins_nothing(text[run - 1], text[end])


def _joins_nothing(before: str, after: str) -> bool:
    """Whether a joiner or variation selector between these has no use: both are letters of
    a script that never needs one (Latin, Greek, Cyrillic, Armenian)."""
    return all(
        c.isalpha() and unicodedata.name(c, "").startswith(_NO_JOINERS) for c in (before, after)
    )


@functools.lru_cache(maxsize=4096)
def _invisible(ch: str) -> bool:
    """Whether ch is an invisible character: one that tokenizer 2 reads inside a word as
    nothing (it keeps accents and vowel signs, which tokenizer 3 folds away too)."""
    return kernel.normalize(f"a{ch}b", tokenizer=2) == "ab"


def count_in(starts: np.ndarray, ends: np.ndarray, spans: list[tuple[int, int]]) -> list[int]:
    """How many of the words (starts, ends: both non-decreasing) overlap each [start, end)."""
    if not len(starts) or not spans:
        return [0] * len(spans)
    lo = np.fromiter((s for s, _ in spans), np.int64, len(spans))
    hi = np.fromiter((e for _, e in spans), np.int64, len(spans))
    # Words starting before the span's end, less those ending at or before its start.
    inside = np.searchsorted(starts, hi, "left") - np.searchsorted(ends, lo, "right")
    return np.maximum(inside, 0).tolist()


def flagged(params: Params, text: str, result: ContainmentResult) -> ContainmentResult:
    """result with each source's `disguised`: per passage, the disguised words in its query
    span (all left empty when nothing is disguised, or with tokenizer 1)."""
    if params.tokenizer < 2 or not any(c.passages for c in result.results):
        return result
    starts, ends = disguised_spans(params, text)
    if not len(starts):
        return result
    return replace(
        result,
        results=[
            replace(
                c,
                disguised=tuple(
                    count_in(starts, ends, [(p.query_start, p.query_end) for p in c.passages])
                ),
            )
            for c in result.results
        ],
    )


async def flag(params: Params, text: str, result: ContainmentResult) -> ContainmentResult:
    """flagged, on a worker thread for a long text."""
    if len(text) >= THREAD_TEXT_CHARS:
        return await asyncio.to_thread(flagged, params, text, result)
    return flagged(params, text, result)
