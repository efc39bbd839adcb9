"""Texts into what the index stores and compares: the kernel's sketch (shingle count,
fingerprint, band keys) and, with a passage index, each text's anchors and word layout;
and the keys under which passage anchors share the band buckets."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from app import kernel
from app.index import records
from app.index.errors import TooLargeError
from app.index.params import Params
from app.index.passages import Layout, layouts_of
from app.store import ANCHOR_SALT as _SALT
from app.store import ANCHOR_SPREAD as _SPREAD
from app.store import PLACE_BITS

# Sketching runs on a worker thread (the kernel releases the GIL) once a
# request carries this much text; below it the thread hop costs more.
THREAD_TEXT_BYTES = 256 * 1024
# XORed into anchor hashes (app.index.passages) to make their keys in the band buckets,
# after an odd multiplier that moves a 32-bit anchor's bits into the top bits that pick
# its bucket (the store's, which keeps an anchor's key as its hash: app.store.layout).
ANCHOR_SALT = np.uint64(_SALT)
ANCHOR_SPREAD = np.uint64(_SPREAD)


def anchor_keys(hashes: np.ndarray) -> np.ndarray:
    """The passage index's keys of anchor hashes (their low 32 bits, as records keep
    them): distinct, spread over 64 bits, and salted, because they share the band
    buckets (and with them the bounds on hot entries, the write order and the
    consistency check) with band keys, which they must never meet."""
    return np.unique(anchor_key_each(hashes))


def anchor_key_each(hashes: np.ndarray) -> np.ndarray:
    """anchor_keys, one per hash in the hashes' order (repeats kept)."""
    low = np.asarray(hashes, np.uint64) & np.uint64(0xFFFFFFFF)
    return (low * ANCHOR_SPREAD) ^ ANCHOR_SALT


def anchor_keys_many(hashes: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """anchor_keys of many texts at once (text i's hashes are hashes[offsets[i] :
    offsets[i + 1]]): their keys concatenated, each text's sorted and distinct, and
    where each text's begin (len(offsets) values). One pass over a batch instead of a
    sort per text, which cost an ingest's Python more than any other step."""
    offsets = np.asarray(offsets, np.int64)
    counts = np.diff(offsets)
    keys = anchor_key_each(np.asarray(hashes)[offsets[0] : offsets[-1]])
    owner = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    order = np.lexsort((keys, owner))
    keys, owner, kept = _distinct_each(keys[order], owner[order], len(counts))
    out = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(kept, out=out[1:])
    return keys, out


def _distinct_each(
    values: np.ndarray, owner: np.ndarray, texts: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of values sorted within each text (owner: each value's text, ascending), each
    text's distinct ones, their owners, and how many each of the `texts` keeps."""
    keep = np.ones(len(values), bool)
    keep[1:] = (values[1:] != values[:-1]) | (owner[1:] != owner[:-1])
    values, owner = values[keep], owner[keep]
    return values, owner, np.bincount(owner, minlength=texts)


def anchors_of(rec: records.Record) -> np.ndarray:
    """The passage index's keys of a stored document."""
    if not rec.passages:
        return np.zeros(0, np.uint64)
    return anchor_keys(Layout.unpack(rec.passages).anchor_hashes)


@dataclass(frozen=True)
class Sketched:
    """Sketches of a batch of texts, in the form the writer (app.index.writes) takes."""

    shingles: np.ndarray
    fp_values: np.ndarray
    fp_offsets: np.ndarray
    band_keys: np.ndarray
    layouts: list[Layout] | None = None
    # What an ingest writes of the passages, without a Layout per text: each text's
    # passage section packed by the kernel, and the texts' anchor keys (anchor_keys_many:
    # concatenated, and where each text's begin).
    packed: list[bytes] | None = None
    anchor_keys: tuple[np.ndarray, np.ndarray] | None = None

    def fingerprint(self, i: int) -> np.ndarray:
        return self.fp_values[int(self.fp_offsets[i]) : int(self.fp_offsets[i + 1])]

    def anchors(self, i: int) -> np.ndarray:
        """The passage index entries of text i (see anchor_keys)."""
        if self.anchor_keys is not None:
            keys, at = self.anchor_keys
            return keys[int(at[i]) : int(at[i + 1])]
        if self.layouts is None:
            return np.zeros(0, np.uint64)
        return anchor_keys(self.layouts[i].anchor_hashes)

    def passages(self, i: int) -> bytes:
        if self.packed is not None:
            return self.packed[i]
        return b"" if self.layouts is None else self.layouts[i].pack()


def check_size(texts: Sequence[str], limit: int) -> None:
    """Raise TooLargeError for a text over limit bytes of UTF-8."""
    for i, text in enumerate(texts):
        # Code points bound the UTF-8 size from below, four bytes each from above.
        if len(text) > limit or (len(text) * 4 > limit and len(text.encode()) > limit):
            where = f"text {i}" if len(texts) > 1 else "the text"
            raise TooLargeError(f"{where} is over {limit} bytes of UTF-8 (NEARDUP_MAX_TEXT_BYTES)")


async def sketch(
    params: Params,
    texts: Sequence[str],
    max_text_bytes: int,
    layouts: bool = False,
    passages: bool = True,
    dense_words: int = 0,
) -> Sketched:
    """Sketch texts; with layouts, each text's passage Layout (a containment query
    aligns it; with dense_words, with the anchors query_layout adds), else its passage
    section packed as an ingest writes it; without passages (a similarity query),
    none of that."""
    check_size(texts, max_text_bytes)
    if sum(map(len, texts)) >= THREAD_TEXT_BYTES:
        return await asyncio.to_thread(sketch_now, params, texts, layouts, passages, dense_words)
    return sketch_now(params, texts, layouts, passages, dense_words)


def sketch_now(
    p: Params,
    texts: Sequence[str],
    layouts: bool = False,
    passages: bool = True,
    dense_words: int = 0,
) -> Sketched:
    """sketch, on this thread and without the size check."""
    s = kernel.sketch(
        list(texts),
        shingle=p.shingle,
        num_perm=p.num_perm,
        fingerprint_size=p.fingerprint_size + _spare(p, texts),
        seed=p.seed,
        tokenizer=p.tokenizer,
    )
    keys = kept_keys(kernel.band_keys(s.signatures, p.bands, p.rows), p)
    values, offsets = s.fp_values, s.fp_offsets
    if p.fingerprint_bits < 32:
        values, offsets = kept_bits(values, offsets, p.fingerprint_bits, p.fingerprint_size)
    sketched = Sketched(np.asarray(s.shingles), values, offsets, keys)
    if not (p.passage_words and passages):
        return sketched
    if layouts:
        made = passage_layouts(p, texts)
        if dense_words:
            made = [
                query_layout(p, t, lay, dense_words) for t, lay in zip(texts, made, strict=True)
            ]
        return replace(sketched, layouts=made)
    # Packed in one kernel call, format 1 or 3 (passages.pack_batch is format 3's numpy
    # reference): a Layout per text, packed by numpy, cost more than the rest of an
    # ingest's Python, and the batch in numpy still cost the ingest about 9%.
    anchors, words = _winnowed(p, texts)
    packed = kernel.pack_layouts(anchors, words, bits=p.passage_bits)
    return replace(
        sketched, packed=packed, anchor_keys=anchor_keys_many(anchors.hashes, anchors.offsets)
    )


def _spare(p: Params, texts: Sequence[str]) -> int:
    """Values to ask the kernel for beyond fingerprint_size, so that fingerprint_size
    remain once hashes equal in their kept bits are one: twice the expected number of
    such pairs among the smallest, plus 8 (a text of n shingles has about
    size * n / 2**(bits + 1) of them; n is at most its characters)."""
    if p.fingerprint_bits >= 32 or not texts:
        return 0
    longest = max(map(len, texts))
    pairs = p.fingerprint_size * longest / 2 ** (p.fingerprint_bits + 1)
    return min(int(2 * pairs) + 8, kernel.MAX_FINGERPRINT_SIZE - p.fingerprint_size)


def kept_keys(keys: np.ndarray, p: Params) -> np.ndarray:
    """Band keys as the collection keeps them: whole, or with short keys only the bits
    of their place (PLACE_BITS; the rest is never read)."""
    return keys & np.uint64(PLACE_BITS) if p.short_keys else keys


def kept_bits(
    values: np.ndarray, offsets: np.ndarray, bits: int, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Fingerprints (sorted values, offsets of each) as a collection of `bits`-bit
    fingerprints keeps them: each value's top `bits` bits (the rest zero), distinct, the
    `size` smallest of each. Values are hashes, so this is the bottom-`size` fingerprint
    of the hashes cut to their top bits, provided the input held enough (_spare)."""
    counts = np.diff(np.asarray(offsets, np.int64)).astype(np.int64)
    cut = (values & np.uint32((0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF)).astype(np.uint32)
    owner = np.repeat(np.arange(len(counts)), counts)
    cut, owner, kept = _distinct_each(cut, owner, len(counts))
    first = np.zeros(len(counts), np.int64)
    np.cumsum(kept[:-1], out=first[1:])
    rank = np.arange(len(cut)) - first[owner]
    inside = rank < size
    out = np.zeros(len(counts) + 1, np.uint64)
    np.cumsum(np.minimum(kept, size), out=out[1:])
    return cut[inside], out


def _winnowed(p: Params, texts: Sequence[str]) -> tuple[kernel.Winnowed, kernel.Winnowed]:
    """The texts' anchors and their words, in two kernel calls."""
    anchors = kernel.winnow(
        list(texts),
        shingle=p.passage_shingle,
        passage_words=p.passage_words,
        seed=p.seed,
        tokenizer=p.tokenizer,
    )
    # Every word is its own window of one: its hash and its span (tokenizers 2 to 4: a
    # letter of a script written without spaces is a word, one item long too).
    words = kernel.winnow(
        list(texts),
        shingle="word:1",
        passage_words=1,
        seed=p.seed,
        tokenizer=p.tokenizer,
        unspaced_k=1 if p.tokenizer >= 2 else 0,
    )
    return anchors, words


def passage_layouts(p: Params, texts: Sequence[str]) -> list[Layout]:
    """Each text's anchors and words (app.index.passages), in two kernel calls."""
    a, w = _winnowed(p, texts)
    return layouts_of(
        a.hashes, a.starts, a.offsets, w.hashes, w.starts, w.ends, w.offsets, p.passage_bits
    )


def query_layout(p: Params, text: str, layout: Layout, words: int) -> Layout:
    """A containment query's layout with more anchors: its own, and those of a window
    that a copy of `words` words fills (in text order).

    The stored anchors of a text shorter than passage_words are the minimum of its
    one window; inside a long query, windows of passage_words also hold the words
    around the copy, whose shingles may hash lower, so that minimum may not be
    picked. A window that fits inside the copy picks it: a whole copy of a source of
    at least `words` words is then found and aligned, as containment counts it."""
    dense = kernel.winnow(
        [text],
        shingle=p.passage_shingle,
        passage_words=words,
        seed=p.seed,
        tokenizer=p.tokenizer,
    )
    hashes = np.concatenate(
        (layout.anchor_hashes, (dense.hashes & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    )
    at = np.concatenate(
        (
            np.asarray(layout.anchor_words, np.int64),
            np.searchsorted(layout.starts, dense.starts).astype(np.int64),
        )
    )
    # Each (word, anchor) once, in text order: the layout's are mostly among the dense.
    pairs = np.unique(np.stack((at, hashes.astype(np.int64))), axis=1)
    return Layout(
        pairs[1].astype(np.uint32),
        pairs[0],
        layout.word_hashes,
        layout.starts,
        layout.ends,
        bits=layout.bits,
    )
