"""app.index.chaining: the runs kept past the work bound (seeding and chaining end to end
are tests/test_align.py's)."""

from __future__ import annotations

import itertools

import numpy as np

from app.index.chaining import (
    LETTER_RUN,
    LOOKBACK,
    chained,
    extend,
    extend_edges,
    longest_runs,
    without_short_letter_runs,
)


def test_past_the_run_bound_the_longest_runs_are_kept_wherever_they_lie() -> None:
    """When a pair's runs exceed the bound, the copy's long runs are kept in their order,
    not the first runs in the query (a long Chinese or Japanese copy lost all but its
    start to chance letter pairs, and was not found at all)."""
    chance = [[q, q + 2, q + d, q + d + 2] for q in range(0, 3000, 3) for d in (-20, 7)]
    copy = [[q, q + 40, q + 500, q + 540] for q in range(100, 3000, 300)]
    runs = np.array(sorted(chance + copy), np.int64)
    kept = longest_runs(runs, 100)
    assert len(kept) == 100
    assert [list(r) for r in kept if r[1] - r[0] == 40] == copy  # every long run, in order
    assert (np.diff(kept[:, 0]) >= 0).all()
    assert longest_runs(runs[:50], 100).tolist() == runs[:50].tolist()


def test_a_copy_of_a_repeated_paragraph_chains_on_its_own_diagonal() -> None:
    """A source that repeats a paragraph seeds each copied word on every repeat's
    diagonal: the copy's own diagonal, cut once, is still one chain (its pieces more than
    LOOKBACK runs apart), not a chain hopping onto the next repeat (an audit's man page)."""
    own = [[20, 60, 120, 160], [62, 100, 162, 200]]  # cut at a key too common to seed
    # Words the repeats share with the copy's paragraph (they differ here and there).
    repeats = [[q, q + 2, q + d, q + d + 2] for q in range(20, 100, 3) for d in (140, 190)]
    runs = sorted(own + repeats)
    assert sum(1 for r in runs if own[0][0] < r[0] < own[1][0]) > LOOKBACK
    best = chained(runs, 2)[0]
    assert best[:5] == (20, 100, 120, 200, 78)


def test_only_short_runs_wholly_of_unspaced_letters_are_left_unchained() -> None:
    """A run is dropped exactly when it is shorter than LETTER_RUN and every query word it
    covers is a letter of a script written without spaces (a plain loop says which)."""
    rng = np.random.default_rng(5)
    letters = rng.random(400) < 0.7
    starts = rng.integers(0, 390, 2000)
    widths = rng.integers(1, 10, 2000)
    runs = np.stack((starts, starts + widths, starts + 3, starts + widths + 3), 1)
    kept = without_short_letter_runs(runs, letters).tolist()
    expected = [
        r for r in runs.tolist() if r[1] - r[0] >= LETTER_RUN or not letters[r[0] : r[1]].all()
    ]
    assert kept == expected and len(expected) < len(runs)
    spaced = np.zeros(400, bool)  # English: no word is such a letter, nothing is dropped
    assert without_short_letter_runs(runs, spaced).tolist() == runs.tolist()


def test_an_edge_is_extended_no_further_than_the_next_piece() -> None:
    """Pieces of one long verbatim copy (a work bound cut it) are each extended only up to
    their neighbours, so every query word is taken by at most one edge and the extension
    costs the copy's length once (it was once per piece: 39 million steps for a 300,000-word
    copy in 130 pieces); the pieces then meet, and merge into the whole copy."""
    rng = np.random.default_rng(3)
    source = rng.integers(0, 256, 8000)
    query = np.concatenate(
        (rng.integers(0, 256, 100), source[1000:6000], rng.integers(0, 256, 100))
    )
    pieces = [[q, q + 10, q + 900, q + 910, 10] for q in range(100, 5100, 50)]
    before = sum(p[1] - p[0] for p in pieces)
    extend_edges(query, source, pieces)
    assert sum(p[1] - p[0] for p in pieces) - before <= 5000 - before  # each word once
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(pieces))  # no overlap
    assert pieces[0][0] == 100 and pieces[-1][1] == 5100  # the copy's own ends, exactly
    assert all(a[1] == b[0] for a, b in itertools.pairwise(pieces))  # they meet


def test_an_edited_word_past_an_edge_is_taken_only_when_two_matches_follow_it() -> None:
    """Past a chain's end a replaced word followed by one matching word (a chance "the")
    is not taken; followed by two it is, with both."""
    one = extend(np.array([5, 1, 9]), 0, np.array([6, 1, 8]), 0, 1)
    two = extend(np.array([5, 1, 2, 9]), 0, np.array([6, 1, 2, 8]), 0, 1)
    assert (one, two) == (0, 3)
    backwards = extend(np.array([9, 2, 1, 5]), 3, np.array([8, 2, 1, 6]), 3, -1)
    assert backwards == 3
