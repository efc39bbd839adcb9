"""Sketches as a collection keeps them (app.index.sketch): 24-bit fingerprints against the
oracle's bottom-N of the top 24 bits, what a record of them costs, and collections that
keep whole hashes."""

from __future__ import annotations

import asyncio
import random

import numpy as np
import orjson
from support import oracle

from app import kernel
from app.index import Document, Index, Params, records
from app.index.params import DEFAULT_FINGERPRINT_BITS
from app.index.sketch import anchor_keys_many, kept_bits, sketch_now
from app.store import ANCHOR_SALT, ANCHOR_SPREAD, Store

VOCABULARY = [f"w{i}" for i in range(20_000)]


def _text(words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCABULARY) for _ in range(words))


def _kept(hashes: set[int], n: int, bits: int) -> list[int]:
    """The oracle's bottom-n fingerprint of each hash's top `bits` bits (the rest zero)."""
    drop = 32 - bits
    return sorted({(h >> 32) >> drop << drop for h in hashes})[:n]


def test_new_collections_keep_24_bits_and_older_configs_read_as_32() -> None:
    """Params.create defaults to 24-bit fingerprints; a stored config without the field
    (a collection made before) keeps whole hashes."""
    p = Params.create("word:3", 128, 256, 1, 0.5)
    assert p.fingerprint_bits == DEFAULT_FINGERPRINT_BITS == 24
    old = orjson.loads(p.to_json())
    del old["fingerprint_bits"]
    assert Params.stored(orjson.dumps(old)).fingerprint_bits == 32


def test_24_bit_fingerprints_are_the_oracles_for_short_and_long_texts() -> None:
    """Each text's fingerprint is the bottom-256 of its hashes cut to 24 bits, exactly,
    also for a text long enough that some of its smallest hashes share their top 24 bits
    (the kernel is asked for enough spare values)."""
    p = Params.create("word:3", 128, 256, 1, 0.5, passage_words=0)
    texts = [_text(n, n) for n in (1, 2, 3, 50, 255, 256, 258, 300, 2_000)]
    texts.append(_text(400_000, 7))  # ~2.4 pairs among its 256 smallest share 24 bits
    sk = sketch_now(p, texts)
    for i, text in enumerate(texts):
        want = _kept(oracle.sketch_hashes(text), 256, 24)
        assert sk.fingerprint(i).tolist() == want, i
    whole = sorted({h >> 32 for h in oracle.sketch_hashes(texts[-1])})[:300]
    assert len({v >> 8 for v in whole}) < len(whole)  # the long text did need its spares


def test_kept_bits_merges_equal_tops_per_text_and_cuts_each_to_size() -> None:
    """Values equal in their kept bits are one; texts are never merged with each other;
    each keeps its `size` smallest."""
    values = np.array([0x100, 0x1FF, 0x200, 0x2FF, 0x1FF, 0x300, 0x400, 0x500], np.uint32)
    offsets = np.array([0, 4, 4, 8], np.uint64)
    got, offs = kept_bits(values, offsets, 24, 3)
    assert offs.tolist() == [0, 2, 2, 5]
    assert got.tolist() == [0x100, 0x200, 0x100, 0x300, 0x400]


def _anchor_keys(hashes: list[int]) -> list[int]:
    """A text's passage index keys in plain Python: each hash's low 32 bits, spread and
    salted in 64 bits, distinct and sorted."""
    return sorted({((h & 0xFFFFFFFF) * ANCHOR_SPREAD % 2**64) ^ ANCHOR_SALT for h in hashes})


def test_anchor_keys_of_a_batch_are_each_texts_own_distinct_keys() -> None:
    """anchor_keys_many gives each text the keys plain Python makes of its hashes, empty
    texts and repeated hashes among them, and an ingest's sketch writes exactly those."""
    rng = random.Random(5)
    for _ in range(50):
        texts = [
            [rng.choice([rng.getrandbits(64), 7, 2**32 + 7, 0]) for _ in range(rng.randrange(6))]
            for _ in range(rng.randrange(1, 8))
        ]
        cuts = np.cumsum([0] + [len(t) for t in texts])
        flat = np.array([h for t in texts for h in t], dtype=np.uint64)
        keys, at = anchor_keys_many(flat, cuts)
        got = [keys[at[i] : at[i + 1]].tolist() for i in range(len(texts))]
        assert got == [_anchor_keys(t) for t in texts]
    p = Params.create("word:3", 128, 256, 1, 0.5, 1000)
    batch = [_text(n, n) for n in (0, 5, 40, 300)] + [_text(40, 40)]
    sk = sketch_now(p, batch)
    for i, text in enumerate(batch):
        winnowed = kernel.winnow(
            [text], shingle=p.passage_shingle, passage_words=p.passage_words, seed=p.seed,
            tokenizer=p.tokenizer,
        )  # fmt: skip
        assert sk.anchors(i).tolist() == _anchor_keys(winnowed.hashes.tolist())


def test_a_24_bit_record_is_smaller_and_verifies_like_the_oracle(redis_url: str) -> None:
    """The same documents cost ~200 bytes less a record with 24-bit fingerprints (stored
    shifted; a collection of whole hashes keeps the plain encoding older releases read),
    read back as the oracle's, and a near-duplicate's score is the oracle's estimate."""

    async def stored(bits: int, name: str) -> tuple[list[int], int, float, int]:
        store = Store.connect(redis_url, name, 2.0)
        p = Params.create("word:3", 128, 256, 1, 0.5, fingerprint_bits=bits)
        index = await Index.open(store, p, 1000)
        try:
            base = _text(600, 1)
            words = base.split()
            words[::12] = ["changed"] * len(words[::12])
            near = " ".join(words)
            await index.ingest([Document(base, "a"), Document(near, "b")])
            handle = (await store.ids.handles(["a"]))[0]
            raw = (await store.records([handle]))[0]
            found = await index.similar_to_id("a", 0.5, 5)
            assert found is not None
            score = next(r.similarity for r in found.results if r.id == "b")
            assert raw is not None
            flag = raw[records.HEADER_WORDS * 4] & kernel.lib.ND_FP_SHIFTED  # the L byte
            return records.unpack(raw).fingerprint.tolist(), len(raw), score, flag
        finally:
            await store.close()

    fp24, size24, score24, flag24 = asyncio.run(stored(24, "fp24"))
    fp32, size32, score32, flag32 = asyncio.run(stored(32, "fp32"))
    assert flag24 and not flag32
    base = _text(600, 1)
    hashes = oracle.sketch_hashes(base)
    assert fp24 == _kept(hashes, 256, 24)
    assert fp32 == _kept(hashes, 256, 32)
    assert size32 - size24 >= 200
    assert abs(score24 - score32) <= 0.02
