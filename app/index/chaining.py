"""Seeds and chains: the word-level primitives of alignment (app.index.align) and of the
search for a reordered copy's sentences (app.index.reorder).

A seed is a run of seed_length words keyed by its word hashes sorted (order-free, so an
adjacent swap keeps its key); seeds that follow one another on one diagonal are one run
(seed_runs), and runs are chained colinearly with gap and diagonal-shift costs
(chained: minimap2's dynamic programme, Li 2018). A chain's edges are extended past its
last seeds with an X-drop (extend), so an edge stops at the first and last matching word.
"""

from __future__ import annotations

import numpy as np

# A seed's key holds at least this many bits of word hashes (n = SEED_BITS / bits words,
# two at least): two words from 6 bits a word up, three of 4 or 5 bits.
SEED_BITS = 12
# Chaining: a seed looks back at this many predecessors, and links only to one at most
# MAX_GAP words before it in both texts.
LOOKBACK = 24
MAX_GAP = 20
# ... and, beyond those, at the latest run on its own diagonal (minimap2 keeps such a
# predecessor too): where a source repeats a paragraph, each copied word seeds a run on
# every repeat's diagonal, the LOOKBACK runs before a run are all short ones on the other
# repeats, and the copy's own diagonal, cut by a key too common to seed, was chained onto
# the wrong repeat (an audit's man page, every option's paragraph the same). Only its own:
# with the two diagonals either side too, a chain stepped over a reordered copy's short
# sentence and split the copy (an audit's reordered copies: granularity 1.075 -> 1.150).
# A word between two chained seeds costs GAP_COST, a shift of diagonal DIAG_COST a word.
GAP_COST = 0.3
DIAG_COST = 0.5
# Extension past a chain's ends: a match scores EXT_MATCH, a mismatch -1; stop XDROP
# below the best score. With 1, an edited word is taken only when two matches follow it:
# with 2, "... quick. Meanwhile the" was marked against "... quick. When the" (one chance
# stopword past a replaced word). bench/alignment.py's PAN table moved by at most 0.001
# a kind (edit15 recall 0.978 -> 0.977, swaps 0.971 -> 0.970, precision 0.999 -> 1.000).
EXT_MATCH = 1
# ... and a letter of a script written without spaces (Chinese, Japanese: a token a letter)
# as much: one frequent kana or particle matched past an edit is chance, not the copy
# going on, so two must follow it.
EXT_LETTER = 1
# Runs of such letters shorter than this are not chained: a few letters matched near a
# copy's end (こと, いる) are met by chance, as a run of as many words in English is not.
# Just under a shingle of such letters (2K + 1 = 7, as rare in Japanese as an English word
# trigram): bench/languages.py's Japanese edges overshot 1.2-2.9 characters on average
# before, 0.6-1.1 with 4 and 0.1-0.5 with 6, every plant still found and as much marked.
LETTER_RUN = 6
XDROP = 3
# A seed key occurring more than this many times in either text is not seeded: a
# repeat, which the anchors find instead (align.REPEAT_HITS).
MAX_OCC = 32
# A chain: (query first, query end, source first, source end, query words matched, its
# runs as seed_runs gives them, in order).
Chain = tuple[int, int, int, int, int, list[list[int]]]


def seed_length(bits: int) -> int:
    """Words a seed holds for word hashes of this many bits."""
    return max(2, -(-SEED_BITS // bits))


def seed_keys(hashes: np.ndarray, bits: int) -> np.ndarray:
    """Order-free keys of every run of seed_length(bits) words (int64; empty if shorter)."""
    n = seed_length(bits)
    h = np.asarray(hashes, np.int64)
    if len(h) < n:
        return np.zeros(0, np.int64)
    if n == 2:  # 6 bits a word or more (most collections): the pair's smaller first
        return (np.minimum(h[:-1], h[1:]) << bits) | np.maximum(h[:-1], h[1:])
    runs = np.sort(np.lib.stride_tricks.sliding_window_view(h, n), axis=1)
    keys = np.zeros(len(runs), np.int64)
    for j in range(n):
        keys = (keys << bits) | runs[:, j]
    return keys


def spread(first: np.ndarray, per: np.ndarray) -> np.ndarray:
    """first[i], first[i] + 1, ... per[i] places from each start, in turn: where each
    key's matches lie in a sorted array, from where they start and how many there are."""
    return np.repeat(first - np.cumsum(per) + per, per) + np.arange(int(per.sum()))


def seed_runs(q_hit: np.ndarray, s_hit: np.ndarray, n: int) -> np.ndarray:
    """Seeds that follow one another on one diagonal as one run: rows (query first, query
    end, source first, source end) of the words they cover, sorted by query then source.
    A verbatim stretch of any length is then one run for the chaining."""
    if not len(q_hit):
        return np.zeros((0, 4), np.int64)
    diag = s_hit - q_hit
    order = np.lexsort((q_hit, diag))
    d, q = diag[order], q_hit[order]
    start = np.ones(len(q), bool)
    start[1:] = (d[1:] != d[:-1]) | (q[1:] != q[:-1] + 1)
    firsts = np.flatnonzero(start)
    lasts = np.concatenate((firsts[1:], [len(q)])) - 1
    q0, q1 = q[firsts], q[lasts] + n
    runs = np.stack((q0, q1, q0 + d[firsts], q1 + d[firsts]), 1)
    return runs[np.lexsort((runs[:, 2], runs[:, 0]))]


def without_short_letter_runs(
    runs: np.ndarray, letters: np.ndarray, counted: np.ndarray | None = None
) -> np.ndarray:
    """The runs less those shorter than LETTER_RUN words that are all letters of a script
    written without spaces (letters: per query word; counted, the running total of what
    each query word counts for, align.Query.counted, so that a run of kana or Thai letters
    needs twice as many; None: one each)."""
    if not len(runs) or not letters.any():
        return runs
    held = np.concatenate(([0], np.cumsum(letters)))
    width = runs[:, 1] - runs[:, 0]
    length = width if counted is None else counted[runs[:, 1]] - counted[runs[:, 0]]
    short = (length < LETTER_RUN) & (held[runs[:, 1]] - held[runs[:, 0]] == width)
    return runs[~short]


def longest_runs(runs: np.ndarray, most: int) -> np.ndarray:
    """The most longest runs (in the query), in their order. Past the bound, most runs are
    single seeds met by chance (a text of letters, as Chinese or Japanese is read,
    repeats its letter pairs everywhere), and a copy's own runs are the long ones,
    wherever they lie: the first runs in query order would keep the copy's start only."""
    longest = np.argsort(runs[:, 0] - runs[:, 1], kind="stable")[:most]
    return runs[np.sort(longest)]


def chained(runs: list[list[int]], seed: int) -> list[Chain]:
    """Colinear chains of runs (minimap2's DP on word runs): a run continues the best
    chain among its LOOKBACK predecessors, and the latest run on its own diagonal, that
    start before it and end before it ends in both texts, at most MAX_GAP words away,
    gaining the query words it adds, less GAP_COST a word between them and DIAG_COST a
    word of diagonal shift. Each chain as (query first, query end, source first, source
    end, query words matched, its runs), best first, less a lone seed (seed words) at
    either end that its gap outweighs (_without_chance_ends)."""
    count = len(runs)
    score = [0.0] * count
    back = [-1] * count
    last_on: dict[int, int] = {}  # diagonal: the latest run on it
    for i in range(count):
        qi0, qi1, si0, si1 = runs[i]
        best, arg = float(qi1 - qi0), -1
        diagonal = si0 - qi0
        window = range(i - 1, i - 1 - LOOKBACK if i > LOOKBACK else -1, -1)
        same = last_on.get(diagonal, i)  # beyond the window, or none
        for j in (*window, same) if same <= window.stop else window:
            qj0, qj1, sj0, sj1 = runs[j]
            if qj0 >= qi0 or sj0 >= si0 or qj1 >= qi1 or sj1 >= si1:
                continue
            dq, ds = qi0 - qj1, si0 - sj1
            if dq > MAX_GAP or ds > MAX_GAP:
                continue
            gain = float(qi1 - (qi0 if qi0 > qj1 else qj1))
            gap = dq if dq > ds else ds
            if gap > 0:
                gain -= GAP_COST * gap
            shift = (si0 - qi0) - (sj0 - qj0)
            gain -= DIAG_COST * (shift if shift > 0 else -shift)
            if score[j] + gain > best:
                best, arg = score[j] + gain, j
        score[i], back[i] = best, arg
        last_on[diagonal] = i
    used = [False] * count
    out = []
    for end in sorted(range(count), key=lambda i: -score[i]):
        if used[end]:
            continue
        members = []
        i = end
        while i >= 0 and not used[i]:
            members.append(i)
            used[i] = True
            i = back[i]
        members.reverse()
        members = _without_chance_ends(runs, members, seed)
        matched, reach = 0, -1
        for m in members:
            q0, q1 = runs[m][0], runs[m][1]
            matched += max(0, q1 - max(q0, reach))
            reach = max(reach, q1)
        first, last = runs[members[0]], runs[members[-1]]
        out.append((first[0], last[1], first[2], last[3], matched, [runs[m] for m in members]))
    return out


def _without_chance_ends(runs: list[list[int]], members: list[int], seed: int) -> list[int]:
    """A chain's runs less each lone seed (a run of seed words) at either end whose words
    do not outweigh its gap to the next run in (in either text): as extend judges words
    past an edit (EXT_MATCH each, -1 a word of gap), so a chain's edge is where its
    extension would put it. Two common words a few words before a copy on its diagonal
    (`of the` in both texts), or two whose 8-bit hashes collide, otherwise moved the
    passage's edge onto words that were not copied: an outside audit saw it in 2 of 84
    verbatim copies in real text; on bench/alignment.py's plants (75 a kind) recall 0.985
    -> 0.984 (edited copies' first or last two words past two edits), precision 1.000."""
    lo, hi = 0, len(members)
    while hi - lo > 1:
        edge, inner = runs[members[lo]], runs[members[lo + 1]]
        if not _chance(edge, max(inner[0] - edge[1], inner[2] - edge[3]), seed):
            break
        lo += 1
    while hi - lo > 1:
        inner, edge = runs[members[hi - 2]], runs[members[hi - 1]]
        if not _chance(edge, max(edge[0] - inner[1], edge[2] - inner[3]), seed):
            break
        hi -= 1
    return members[lo:hi]


def _chance(edge: list[int], gap: int, seed: int) -> bool:
    words = edge[1] - edge[0]
    return gap > 0 and words <= seed and EXT_MATCH * words <= gap


def extend(
    q: np.ndarray,
    qi: int,
    s: np.ndarray,
    si: int,
    step: int,
    letters: np.ndarray | None = None,
    most: int = -1,
) -> int:
    """Words to take from q[qi], s[si] on (stepping by step): the best-scoring prefix, a
    match EXT_MATCH (EXT_LETTER where letters, the query's, marks a letter of a script
    written without spaces), a mismatch -1, stopping XDROP below the best, or after most
    words (-1: no bound)."""
    score = best = taken = n = 0
    while 0 <= qi < len(q) and 0 <= si < len(s) and n != most:
        if q[qi] != s[si]:
            score -= 1
        else:
            score += EXT_LETTER if letters is not None and letters[qi] else EXT_MATCH
        n += 1
        if score > best:
            best, taken = score, n
        elif best - score >= XDROP:
            break
        qi += step
        si += step
    return taken


def extend_edges(
    qh: np.ndarray,
    sh: np.ndarray,
    pieces: list[list[int]],
    letters: np.ndarray | None = None,
    others: list[list[int]] | None = None,
) -> list[list[int]]:
    """The pieces (qa, qb, sa, sb, matched) with their edges extended (extend), and the
    words their extensions match added to matched, in place.

    An edge goes no further than the next piece in the query begins, or the one before
    it ends (others' too, which are not extended): those words are that piece's, which the
    merge joins. So a long copy that a work bound cut into many pieces costs its length
    once, not once a piece (a 300,000-word verbatim copy in 130 pieces took 39 million
    steps of extension, seconds past the request's deadline)."""
    extended = {id(p) for p in pieces}
    every = sorted([*pieces, *(others or [])], key=lambda p: p[0])
    reach = 0  # the furthest query word the pieces before reach, extended
    for k, piece in enumerate(every):
        qa, qb, sa, sb, _ = piece
        if id(piece) in extended:
            room = max(0, every[k + 1][0] - qb) if k + 1 < len(every) else -1
            left = extend(qh, qa - 1, sh, sa - 1, -1, letters, max(0, qa - reach))
            right = extend(qh, qb, sh, sb, 1, letters, room)
            # The words the extensions match count as the piece's own: a copy whose
            # chain a work bound ended early is carried to its end by its extension, and
            # must not be judged by the chain's share of it.
            piece[4] += int(
                np.count_nonzero(qh[qa - left : qa] == sh[sa - left : sa])
                + np.count_nonzero(qh[qb : qb + right] == sh[sb : sb + right])
            )
            piece[:4] = qa - left, qb + right, sa - left, sb + right
        reach = max(reach, piece[1])
    return pieces
