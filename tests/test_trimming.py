"""app.index.trimming: passages trimmed around excluded spans, their pieces judged by
the words they keep, and the mask of excluded words, against expectations written by
hand."""

from __future__ import annotations

import numpy as np

from app.index.passages import Layout, Passage
from app.index.spans import Span
from app.index.trimming import Exclusions, shorter_side


def _layout(text: str) -> Layout:
    """Word spans of a text of single-space-separated words (no anchors needed here)."""
    starts, ends, pos = [], [], 0
    for w in text.split(" "):
        starts.append(pos)
        ends.append(pos + len(w))
        pos += len(w) + 1
    n = len(starts)
    empty = np.zeros(0, np.int64)
    return Layout(np.zeros(0, np.uint32), empty, np.zeros(n, np.uint8),
                  np.array(starts), np.array(ends))  # fmt: skip


def test_trim_splits_a_passage_around_an_excluded_span() -> None:
    """A passage of words 0-19 with words 8-10 quoted becomes words 0-7 and 11-19, with
    the source side cut at the same distances; its pieces are judged by the 17 words they
    keep together: kept at min_words 17, both listed short at 18."""
    query_text = " ".join(f"w{i}" for i in range(20))
    source_text = " ".join(f"s{i}" for i in range(30))
    q, s = _layout(query_text), _layout(source_text)
    quote = Span(int(q.starts[8]), int(q.ends[10]), "quote")
    whole = Passage((0, 20), (5, 25), 0, int(q.ends[19]), int(s.starts[5]), int(s.ends[24]))
    kept, longest, total = Exclusions([quote], min_words=0).trim([whole], q, s, least=4)
    assert [(p.query_words, p.source_words) for p in kept] == [
        ((0, 8), (5, 13)),
        ((11, 20), (16, 25)),
    ]
    assert longest == total == 17  # one passage's pieces, counted together
    assert query_text[kept[1].query_start : kept[1].query_end] == " ".join(
        f"w{i}" for i in range(11, 20)
    )
    assert source_text[kept[0].source_start : kept[0].source_end] == " ".join(
        f"s{i}" for i in range(5, 13)
    )
    kept, _, _ = Exclusions([quote], min_words=17).trim([whole], q, s, least=4)
    assert [p.query_words for p in kept] == [(0, 8), (11, 20)]
    rule = Exclusions([quote], min_words=18)
    assert rule.trim([whole], q, s, least=4) == ([], 0, 0)
    assert [(x.start, x.end, x.reason) for x in rule.listed()] == [
        (0, int(q.ends[7]), "short"),
        (quote.start, quote.end, "quote"),
        (int(q.starts[11]), int(q.ends[19]), "short"),
    ]


def test_the_words_of_separate_passages_are_counted_together_and_apart() -> None:
    """Two passages of 12 and 15 query words (sentences copied from two places), the
    second's source side 10 words: each is as long as its shorter side, so the longest
    kept is 12 words and all of them together 22."""
    q = _layout(" ".join(f"w{i}" for i in range(60)))
    s = _layout(" ".join(f"s{i}" for i in range(60)))
    first = Passage((0, 12), (0, 12), 0, int(q.ends[11]), 0, int(s.ends[11]))
    second = Passage((30, 45), (40, 50), int(q.starts[30]), int(q.ends[44]), int(s.starts[40]),
                     int(s.ends[49]))  # fmt: skip
    kept, longest, total = Exclusions([]).trim([first, second], q, s, least=4)
    assert len(kept) == 2 and longest == 12 and total == 22


def test_quoted_words_sprinkled_through_a_copy_take_out_only_themselves() -> None:
    """A 60-word passage with every sixth word quoted keeps its 50 other words, in ten
    pieces, instead of losing every piece for being shorter than `least` (a copy cannot
    be hidden by quoting a word here and there); a passage that is nearly all quotation
    keeps nothing."""
    query_text = " ".join(f"w{i}" for i in range(60))
    q = s = _layout(query_text)
    quotes = [Span(int(q.starts[i]), int(q.ends[i]), "quote") for i in range(5, 60, 6)]
    whole = Passage((0, 60), (0, 60), 0, int(q.ends[59]), 0, int(q.ends[59]))
    kept, longest, total = Exclusions(quotes).trim([whole], q, s, least=10)
    assert longest == total == 50 and len(kept) == 10
    assert all(query_text[p.query_start : p.query_end] == query_text[p.source_start : p.source_end]
               for p in kept)  # fmt: skip
    mostly = [Span(int(q.starts[2]), int(q.ends[55]), "quote")]
    assert Exclusions(mostly).trim([whole], q, s, least=10) == ([], 0, 0)
    # Pieces shorter than a shingle hold none of the copy's shingles: not kept.
    thirds = [Span(int(q.starts[i]), int(q.ends[i]), "quote") for i in range(2, 60, 3)]
    assert Exclusions(thirds).trim([whole], q, s, least=10, k=3) == ([], 0, 0)
    kept, longest, _ = Exclusions(thirds).trim([whole], q, s, least=10, k=2)
    assert longest == 40 and all(b - a == 2 for a, b in (p.query_words for p in kept))


def test_the_mask_marks_every_word_a_span_touches_and_is_made_once() -> None:
    """A word is masked exactly when it overlaps an excluded span (checked word by word
    against every span), however many spans overlap or nest; asked again for the same
    layout (trim asks once per candidate source) the mask is the one already made."""
    rng = np.random.default_rng(6)
    for _ in range(50):
        words = " ".join("w" * int(n) for n in rng.integers(1, 6, rng.integers(1, 60)))
        layout = _layout(words)
        spans = []
        for _ in range(rng.integers(0, 12)):
            a = int(rng.integers(0, len(words) + 1))
            spans.append(Span(a, a + int(rng.integers(0, 15)), "quote"))
        ex = Exclusions(spans)
        expected = [
            any(e > s.start and b < s.end for s in spans)
            for b, e in zip(layout.starts.tolist(), layout.ends.tolist(), strict=True)
        ]
        assert ex.mask(layout).tolist() == expected
        assert ex.mask(layout) is ex.mask(layout)


def test_a_passage_is_as_long_as_its_shorter_side() -> None:
    """A passage of 30 query words over 24 source words counts 0.8 of its query words;
    one whose source side is longer counts all of them."""
    assert shorter_side(Passage((10, 40), (100, 124), 0, 0, 0, 0)) == 24 / 30
    assert shorter_side(Passage((10, 40), (100, 140), 0, 0, 0, 0)) == 1.0
