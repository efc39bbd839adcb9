"""app.index.reorder: which copies show signs of reordering (the alignment of reordered
copies end to end is tests/test_align.py's)."""

from __future__ import annotations

from app.index.reorder import JUMP, jumps


def test_only_a_copy_with_signs_of_reordering_is_filled() -> None:
    """A chain's runs on one diagonal, or moved by an edit's word or two, show no reordering
    (its copy is not filled); a jump of a sentence's length between two runs does."""
    on_one = [[0, 10, 100, 110], [12, 30, 112, 130]]
    edited = [[0, 10, 100, 110], [11, 20, 112, 121], [22, 40, 122, 140]]
    moved = [[0, 10, 100, 110], [10, 20, 110 + JUMP + 1, 120 + JUMP + 1]]
    assert not jumps(on_one) and not jumps(edited) and not jumps(on_one[:1])
    assert jumps(moved) and jumps([[0, 8, 300, 308], [8, 16, 200, 208]])
