"""app.index.reorder: which copies show signs of reordering (the alignment of reordered
copies end to end is tests/test_align.py's)."""

from __future__ import annotations

import numpy as np

from app.index.reorder import JUMP, SOURCE_HOLE, jumps, merge, query_places


def test_only_a_copy_with_signs_of_reordering_is_filled() -> None:
    """A chain's runs on one diagonal, or moved by an edit's word or two, show no reordering
    (its copy is not filled); a jump of a sentence's length between two runs does."""
    on_one = [[0, 10, 100, 110], [12, 30, 112, 130]]
    edited = [[0, 10, 100, 110], [11, 20, 112, 121], [22, 40, 122, 140]]
    moved = [[0, 10, 100, 110], [10, 20, 110 + JUMP + 1, 120 + JUMP + 1]]
    assert not jumps(on_one) and not jumps(edited) and not jumps(on_one[:1])
    assert jumps(moved) and jumps([[0, 8, 300, 308], [8, 16, 200, 208]])


def test_a_chance_match_from_elsewhere_inside_a_copy_does_not_split_it() -> None:
    """Five words matched far elsewhere in the source, lying inside one of a reordered
    copy's pieces, no longer keep its pieces apart (an audit's man page copies came back
    in 3 and 4 passages); a short sentence of the copy's own source part lying inside a
    chain through another sentence still counts, its source words the copy's."""
    copy = [[0, 40, 1000, 1040, 40], [40, 80, 960, 1000, 40], [80, 120, 1040, 1080, 40]]
    far = [50, 55, 1000 + 40 + 10 * SOURCE_HOLE, 1045 + 10 * SOURCE_HOLE, 5]
    assert merge([[*p] for p in copy]) == [[0, 120, 960, 1080, 120]]
    assert merge([[*p] for p in [*copy, far]]) == [[0, 120, 960, 1080, 120]]
    own = [90, 96, 950, 956, 6]  # the copy's first source words, inside the third piece
    assert merge([[*p] for p in [*copy, own]]) == [[0, 120, 950, 1080, 126]]
    # A long piece over half a copy's words is another copy, not chance: both stay.
    other = [[0, 100, 1000, 1100, 100], [55, 140, 5000, 5085, 85]]
    assert merge([[*p] for p in other]) == other


def test_pieces_on_one_diagonal_join_over_letters_and_letters_count_as_half() -> None:
    """With the query's places, two pieces 30 Chinese or Japanese letters apart (15 words'
    gap) join when the second lies on the first's diagonal (an edited stretch), and stay
    apart 5 letters off it or 42 letters away; 15 words apart they stay apart on the
    diagonal too (the writer's own words between two copied stretches)."""
    words = query_places(np.zeros(200, bool))
    letters = query_places(np.ones(200, bool))
    on = [[0, 40, 100, 140, 40], [70, 90, 170, 190, 20]]
    off = [[0, 40, 100, 140, 40], [70, 90, 175, 195, 20]]
    far = [[0, 40, 100, 140, 40], [82, 90, 182, 190, 8]]
    assert merge([[*p] for p in on], letters) == [[0, 90, 100, 190, 60]]
    assert merge([[*p] for p in off], letters) == off
    assert merge([[*p] for p in far], letters) == far
    assert merge([[*p] for p in on], words) == on
    assert merge([[*p] for p in on]) == on  # without places: MERGE_GAP words only
    near = [[0, 40, 100, 140, 40], [50, 90, 150, 190, 40]]  # 10 words: MERGE_GAP
    assert merge([[*p] for p in near], words) == [[0, 90, 100, 190, 80]]
