"""Copies whose sentences were reordered: their pieces rehomed, their missing sentences
sought, and the pieces merged into one passage (as PAN counts a copy).

Chains (app.index.chaining) of one copy follow one another in the query; where their
source ranges, in any order, leave no hole over SOURCE_HOLE words they are one copy
(merge). Before the merge, the query words such a copy's pieces leave between them, just
past its ends, or skipped inside a chain are looked up in its part of the source whatever
their diagonal (fill); and a piece that took a repeated sentence's first occurrence moves
to the one beside its neighbours (rehome).
"""

from __future__ import annotations

import bisect
import itertools

import numpy as np

from app.index.chaining import MAX_OCC, Chain, chained, seed_keys, seed_length, seed_runs, spread

# Chains whose ends meet within this many words in both texts are one passage.
MERGE_GAP = 10
# ... counting a letter of a script written without spaces (a token of Chinese or
# Japanese) as this much of a word, as a word of either is about two letters: counted
# whole, the gap a dense run of edits leaves was twice as long as in English, and an
# audit's Japanese copies with 12% of their letters swapped came back in 2-3 passages
# (granularity 1.44).
LETTER_WORD = 0.5
# ... and where the gap is mostly such letters, a chain that goes on on the diagonal of
# the one before it (within DIAGONAL_SHIFT words, an edit's shift or two), after a gap of
# up to this many, continues it: dense edits of letters leave stretches no seed bridges
# (the audit's Japanese copies with 12% of their letters swapped left gaps of 24-41
# letters). Not in a gap of words: 15 words of the writer's own between two copied
# stretches are the writer's, not the copy's (a review's English case).
DIAGONAL_GAP = 20
DIAGONAL_SHIFT = 3
# ... and chains that follow one another in the query (within MERGE_GAP) are one passage
# where their source ranges, in any order, leave no hole over this many words: a sentence
# of a reordered copy that holds no seed (PAN's cases keep such a copy whole).
SOURCE_HOLE = 30
# Sentences of a reordered copy missed by the seeding are sought between its pieces and
# beyond its ends (fill), beyond them at most this many times (each time SOURCE_HOLE words).
FILL_ROUNDS = 3
# ... only for a copy found in several pieces, or in one whose chain's diagonal jumps by
# more than this many words between two runs (an edit moves it by a word or two): a
# copy found whole on its diagonal, the usual verbatim or edited one, has nothing to fill.
JUMP = 4
# ... each piece found so holding a run of at least this many bits of word hashes (five
# words of 8 bits, ten of 4): found without an anchor, it must be as unlikely by chance.
FILL_BITS = 40


def fill(
    qh: np.ndarray,
    sh: np.ndarray,
    pieces: list[list[int]],
    members: dict[int, list[list[int]]],
    taken: np.ndarray,
    bits: int,
    least: int,
    min_words: int,
) -> list[list[int]]:
    """Pieces of a reordered copy's sentences that the seeding missed, sought where they
    must lie: in the query words between (and up to SOURCE_HOLE words before and after)
    pieces that follow one another within SOURCE_HOLE words in the query and lie in one
    part of the source (_source_parts), against that part (and SOURCE_HOLE words either
    side of it).

    A short sentence of a reordered copy often holds no anchor, and its diagonal can lie
    more than BAND from every anchor's: it is not seeded at all. Or its seeds joined a
    chain with a repeat of a neighbouring sentence elsewhere in the source, which a better
    chain then put aside whole. Either way its copy is split at it (a query gap over
    MERGE_GAP, a source hole over SOURCE_HOLE) and its words are lost. Here every seed of
    the gap is looked up in the part's source words, whatever its diagonal; chains of at
    least least matched words fill it, those in the part's source holes (words no run of
    its pieces holds) first. One before the first piece or after the last must reach
    within MERGE_GAP words of it.

    The gaps inside a piece (between the runs of its chain, members by the piece's id)
    are sought too where the words skipped are not those of the source on either run's
    diagonal: a chain of a reordered copy can link two sentences over a third from
    elsewhere in the source, whose words it then covers in the query but not in the
    source. Only a chain in a source hole of the part fills such a gap.

    Only a part whose pieces match min_words words is filled: a fill completes a copy
    found, it never makes one. The gaps are short and the parts no longer than the copies
    they hold. Query words filled are marked in taken; the new pieces are returned (qa,
    qb, sa, sb, matched)."""
    added: list[list[int]] = []
    filled = np.zeros(len(taken), bool)  # query words of the pieces added
    sought: set[int] = set()  # pieces whose inner gaps were sought
    ordered = sorted(pieces, key=lambda p: p[:4])
    for _ in range(FILL_ROUNDS):  # an edge filled may leave another sentence beyond it
        grown = False
        for group in _groups(ordered):
            if sum(p[4] for p in group) < min_words:
                continue  # a fill completes a copy found, it never makes one
            if len(group) == 1 and not jumps(members.get(id(group[0]), [group[0]])):
                continue  # one piece on one diagonal, edits aside: no sign of reordering
            lo = max(0, min(p[2] for p in group) - SOURCE_HOLE)
            hi = min(len(sh), max(p[3] for p in group) + SOURCE_HOLE)
            covered = np.zeros(hi - lo, bool)  # source words the group's runs hold
            gaps = [(a[1], b[0], 0) for a, b in itertools.pairwise(group)]
            gaps.append((max(0, group[0][0] - SOURCE_HOLE), group[0][0], -1))
            gaps.append((group[-1][1], min(len(qh), group[-1][1] + SOURCE_HOLE), 1))
            for p in group:
                runs = members.get(id(p), [p])
                # Its runs, and the words its extension took past them.
                for r in [*runs, [0, 0, p[2], runs[0][2]], [0, 0, runs[-1][3], p[3]]]:
                    covered[max(0, r[2] - lo) : max(0, r[3] - lo)] = True
                if id(p) not in sought:
                    sought.add(id(p))
                    gaps += [(g0, g1, 2) for g0, g1 in _skipped(qh, sh, runs)]
            keys: tuple[np.ndarray, np.ndarray] | None = None  # the part's, made once
            run_words = max(least, -(-FILL_BITS // bits))
            for q0, q1, edge in gaps:
                mask = filled if edge == 2 else taken
                if q1 - q0 < least or mask[q0:q1].all():
                    continue
                if keys is None:
                    s_keys = seed_keys(sh[lo:hi], bits)
                    order = np.argsort(s_keys, kind="stable")
                    keys = (s_keys[order], order + lo)
                for chain in _placed(_local(qh, q0, q1, keys, bits), covered, lo):
                    qa, qb, sa, sb, matched, runs_found = chain
                    if matched < least or mask[qa:qb].sum() > (qb - qa) // 2:
                        continue
                    if max(r[1] - r[0] for r in runs_found) < run_words:
                        continue
                    if (edge == -1 and q1 - qb > MERGE_GAP) or (edge == 1 and qa - q0 > MERGE_GAP):
                        continue  # not next to the copy
                    if edge == 2 and 2 * covered[sa - lo : sb - lo].sum() > sb - sa:
                        continue
                    taken[qa:qb] = filled[qa:qb] = True
                    for r in runs_found:
                        covered[r[2] - lo : r[3] - lo] = True
                    added.append([qa, qb, sa, sb, matched])
                    members[id(added[-1])] = runs_found
                    grown = grown or edge in (-1, 1)
        if not grown:
            break
        ordered = sorted(pieces + added, key=lambda p: p[:4])
    return added


def jumps(runs: list[list[int]]) -> bool:
    """Whether a chain's runs change diagonal by more than an edit does (JUMP words)
    between two that follow one another: sentences of a reordered copy it linked."""
    return any(abs((b[2] - b[0]) - (a[2] - a[0])) > JUMP for a, b in itertools.pairwise(runs))


def rehome(pieces: list[list[int]], runs_of: list[list[list[int]]], others: list[Chain]) -> None:
    """Pieces moved, in place, to the occurrence near their copy's other pieces of a
    sentence the source holds more than once.

    Chains over the same query words tie when the source repeats a sentence, and the
    first occurrence wins; a piece whose source range lies away from those of its
    neighbours in the query (within SOURCE_HOLE words) takes instead a chain put aside
    over nearly the same words (9/10 of them) that matches as many and lies within
    SOURCE_HOLE words of a neighbour's source range, so the copy stays one passage."""

    def near(a: list[int], sa: int, sb: int) -> bool:
        return sa - a[3] <= SOURCE_HOLE and a[2] - sb <= SOURCE_HOLE

    for i, piece in enumerate(pieces):
        qa, qb, sa, sb, matched = piece
        neighbours = [
            p
            for j, p in enumerate(pieces)
            if j != i and p[0] - qb <= SOURCE_HOLE and qa - p[1] <= SOURCE_HOLE
        ]
        if not neighbours or any(near(p, sa, sb) for p in neighbours):
            continue
        for oa, ob, osa, osb, omatched, held in others:
            same = min(ob, qb) - max(oa, qa)
            if omatched < matched or 10 * same < 9 * (qb - qa) or 10 * same < 9 * (ob - oa):
                continue
            if any(near(p, osa, osb) for p in neighbours):
                pieces[i] = [oa, ob, osa, osb, omatched]
                runs_of[i] = held
                break


def _groups(ordered: list[list[int]]) -> list[list[list[int]]]:
    """Pieces (in query order) that follow one another within SOURCE_HOLE words in the
    query and lie in one part of the source (_source_parts), each group in query order."""
    out = []
    for run in _near(ordered, SOURCE_HOLE):
        part = _source_parts(run)
        for number in sorted(set(part)):
            out.append([p for p, x in zip(run, part, strict=True) if x == number])
    return out


def _near(pieces: list[list[int]], gap: int, at: np.ndarray | None = None) -> list[list[list[int]]]:
    """Pieces in query order cut into runs in which each starts within gap words of the
    query words the run's earlier ones reach, or, given at (query_places: how many words
    lie before each word, letters counting part of one), within DIAGONAL_GAP of those of
    the one reaching furthest where it lies on that one's diagonal and the gap is mostly
    letters."""
    runs = []
    i = 0
    while i < len(pieces):
        j, end, last = i + 1, pieces[i][1], pieces[i]
        while j < len(pieces):
            piece = pieces[j]
            if at is None:
                if piece[0] - end > gap:
                    break
            else:
                apart = at[piece[0]] - at[end]
                if apart > gap:
                    tokens = piece[0] - end
                    letters = (tokens - apart) / (1 - LETTER_WORD)  # in the gap
                    shift = abs((piece[2] - piece[0]) - (last[3] - last[1]))
                    if 2 * letters < tokens or apart > DIAGONAL_GAP or shift > DIAGONAL_SHIFT:
                        break
            if piece[1] > end:
                end, last = piece[1], piece
            j += 1
        runs.append(pieces[i:j])
        i = j
    return runs


def _placed(chains: list[Chain], covered: np.ndarray, lo: int) -> list[Chain]:
    """The chains with those mostly on source words covered (from word lo) last, in
    their order otherwise (best first): a missed sentence lies in a hole of its copy."""
    return sorted(chains, key=lambda c: 2 * covered[c[2] - lo : c[3] - lo].sum() > c[3] - c[2])


def _skipped(qh: np.ndarray, sh: np.ndarray, runs: list[list[int]]) -> list[tuple[int, int]]:
    """The query words (first, end) between runs of a chain that follow one another
    where they are not, mostly, the source's on either run's diagonal (a sentence from
    elsewhere, not edits between the two)."""
    out = []
    for a, b in itertools.pairwise(runs):
        g0, g1 = a[1], b[0]
        if g1 <= g0:
            continue
        same = 0
        for d in {a[2] - a[0], b[2] - b[0]}:
            lo, hi = max(g0, -d), min(g1, len(sh) - d)
            if hi > lo:
                same = max(same, int((qh[lo:hi] == sh[lo + d : hi + d]).sum()))
        if 2 * same < g1 - g0:
            out.append((g0, g1))
    return out


def _local(
    qh: np.ndarray, q0: int, q1: int, keys: tuple[np.ndarray, np.ndarray], bits: int
) -> list[Chain]:
    """Chains of the seeds that query words [q0, q1) share with a range of source words,
    whatever their diagonals, as chained gives them, best first. keys: the range's seed
    keys sorted and the source word each starts at; a key more than MAX_OCC times in the
    range is left out."""
    q_keys = seed_keys(qh[q0:q1], bits)
    ranked, where = keys
    if not len(q_keys) or not len(ranked):
        return []
    first = np.searchsorted(ranked, q_keys)
    per = np.searchsorted(ranked, q_keys, "right") - first
    per[per > MAX_OCC] = 0
    total = int(per.sum())
    if not total:
        return []
    q_hit = np.repeat(np.arange(len(q_keys)), per) + q0
    s_hit = where[spread(first, per)]
    n = seed_length(bits)
    return chained(seed_runs(q_hit, s_hit, n).tolist(), n)


def query_places(letters: np.ndarray) -> np.ndarray:
    """Per query word (and one past the last), how many words lie before it, a letter of
    a script written without spaces counting LETTER_WORD (letters: align.Query.letters)."""
    return np.concatenate(([0.0], np.cumsum(np.where(letters, LETTER_WORD, 1.0))))


def merge(pieces: list[list[int]], at: np.ndarray | None = None) -> list[list[int]]:
    """Pieces (qa, qb, sa, sb, matched) that continue one another in both texts, as one.

    Pieces that follow one another in the query, each within MERGE_GAP words of the last
    (at: query_places, so letters count as part of a word),
    are one passage where their source ranges, in whatever order, leave no hole over
    SOURCE_HOLE words: a copy whose sentences were reordered is one copy, as PAN counts it
    (granularity), and its ends are the ends of its extreme pieces in each text. A piece
    from elsewhere in the source between two such pieces keeps them apart, unless a better
    piece holds most of its query words (_unshadowed)."""
    merged: list[list[int]] = []
    for run in _near(sorted(_unshadowed(pieces)), MERGE_GAP, at):
        part = _source_parts(run)
        for n, piece in enumerate(run):
            if n and part[n] == part[n - 1]:
                last = merged[-1]
                last[1], last[3] = max(last[1], piece[1]), max(last[3], piece[3])
                last[2] = min(last[2], piece[2])
                last[4] += piece[4]
            else:
                merged.append(list(piece))
    return merged


def _unshadowed(pieces: list[list[int]]) -> list[list[int]]:
    """The pieces less each of at most SOURCE_HOLE query words whose query words, more
    than half of them, a piece with more matched words holds, and whose source range lies
    more than SOURCE_HOLE words from every unshadowed piece's: a few words matched by
    chance elsewhere in the source (a phrase the source repeats) inside a copy's piece
    kept the copy's pieces apart (an audit's reordered man page copies came back as 3 and
    4 passages). One so shadowed within the copy's own part of the source stays: a short
    sentence of it inside a chain that ran through another."""
    if len(pieces) < 2:
        return pieces
    taken = np.zeros(max(p[1] for p in pieces) + 1, bool)
    clear, shadowed = [], []
    for piece in sorted(pieces, key=lambda p: (-p[4], p[0])):
        qa, qb = piece[0], piece[1]
        # A chance match is short: a longer piece over the same words is a copy too.
        if qb - qa <= SOURCE_HOLE and taken[qa:qb].sum() * 2 > qb - qa:
            shadowed.append(piece)
            continue
        taken[qa:qb] = True
        clear.append(piece)
    if not shadowed:
        return pieces
    # The clear pieces' source ranges, merged across holes of up to SOURCE_HOLE words.
    spans: list[list[int]] = []
    for sa, sb in sorted((p[2], p[3]) for p in clear):
        if spans and sa - spans[-1][1] <= SOURCE_HOLE:
            spans[-1][1] = max(spans[-1][1], sb)
        else:
            spans.append([sa, sb])
    starts = [a for a, _ in spans]
    for piece in shadowed:
        at = bisect.bisect_right(starts, piece[3] + SOURCE_HOLE) - 1
        if at >= 0 and piece[2] - spans[at][1] <= SOURCE_HOLE:
            clear.append(piece)
    return clear


def _source_parts(run: list[list[int]]) -> list[int]:
    """For each piece of run, which part of the source it lies in: pieces whose source
    ranges reach within SOURCE_HOLE words of one another, in source order, share a part."""
    part = [0] * len(run)
    reach: int | None = None
    n = 0
    for x in sorted(range(len(run)), key=lambda x: run[x][2]):
        if reach is not None and run[x][2] - reach > SOURCE_HOLE:
            n += 1
        part[x] = n
        reach = run[x][3] if reach is None else max(reach, run[x][3])
    return part
