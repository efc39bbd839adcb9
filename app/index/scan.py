"""The whole collection's near-duplicates: every verified pair, and the exact groups.

A scan never uses the query's candidate cap: that bounds an interactive /similar, and
a bulk scan that honoured it lost pairs silently on hot bands. Instead it reads each
band's full membership and bounds its memory another way:

* Pairs are found from their older member, documents in handle order, a block of
  records at a time. A block's candidates (every member of its documents' bands above
  the block's first handle) are read once, with their fingerprints, at most UNIVERSE
  of them; a block whose bands hold more goes one document at a time, and a document
  whose bands hold more reads them in handle windows. One kernel call verifies each
  document against its candidates; pairs stream out in (older, newer) handle order,
  so a scan cut by max_pairs resumes exactly after its last pair.
* Groups are the connected components of the same pair graph, by union-find: each
  band is walked once (in the block of its oldest live member), and a member is
  verified only against one member of each other component already met in the band,
  the rest of a component only when that one fails. A cluster of n copies costs
  about n verifications, not n^2/2; the exactness argument is in _Groups._connect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from app import kernel
from app.index import records
from app.index.expiry import live_records
from app.store import Store

# Records one pass of a scan reads for its older members.
SCAN_BLOCK = 512
# The most candidate documents (fingerprint and id each) a scan holds at once.
UNIVERSE = 20_000
# Records per MGET while loading candidates.
RECORD_BATCH = 2_000
# Fingerprints a group scan keeps between bands before it starts afresh.
GROUP_CACHE = 50_000


@dataclass(frozen=True)
class PairBlock:
    """Verified pairs of one older document a with newer ones b, b ascending."""

    a: int
    a_id: str
    b: np.ndarray  # handles, int64
    b_ids: list[str]
    similarity: np.ndarray  # float64


@dataclass(frozen=True)
class Cut:
    """A pair scan stopped at its max_pairs: resume with after=after to get the rest."""

    pairs: int
    after: str


@dataclass(frozen=True)
class Mark:
    """Progress of a pair scan with no pair to show for it: every pair up to after
    (a resume token, as Cut's) has been yielded."""

    after: str


def parse_after(after: str | None) -> tuple[int, int]:
    """The (a, b) handles of a resume token "a:b" (made by Cut); (0, 0) for none."""
    if not after:
        return 0, 0
    a, sep, b = after.partition(":")
    if not sep or not a.isdigit() or not b.isdigit():
        raise ValueError("after must be the token a cut scan ended with, like 123:456")
    return int(a), int(b)


def _head(found: PairBlock, n: int) -> PairBlock:
    return PairBlock(found.a, found.a_id, found.b[:n], found.b_ids[:n], found.similarity[:n])


class _Doc(NamedTuple):
    """What a scan reads of a record."""

    id: str
    fingerprint: np.ndarray
    band_keys: np.ndarray


class _Universe:
    """Candidate documents of a pass: sorted handles, packed fingerprints and ids.

    A handle without a record (deleted meanwhile) keeps an empty fingerprint, which
    matches nothing.
    """

    def __init__(self, handles: np.ndarray, values: np.ndarray, offsets: np.ndarray, ids: list):
        self.handles, self.values, self.offsets, self.ids = handles, values, offsets, ids

    @classmethod
    async def load(cls, store: Store, handles: np.ndarray) -> _Universe:
        values, lengths, ids = [], [np.zeros(0, np.int64)], []
        for lo in range(0, len(handles), RECORD_BATCH):
            part = handles[lo : lo + RECORD_BATCH].tolist()
            raws = await live_records(store, part)
            present = [r for r in raws if r is not None]
            v, o = records.fingerprints_of(present)
            values.append(v)
            got = np.diff(o).astype(np.int64)
            full = np.zeros(len(raws), np.int64)
            full[[i for i, r in enumerate(raws) if r is not None]] = got
            lengths.append(full)
            ids += [None if r is None else records.id_of(r) for r in raws]
        offsets = np.zeros(len(handles) + 1, np.uint64)
        np.cumsum(np.concatenate(lengths), out=offsets[1:])
        packed = np.concatenate(values) if values else np.zeros(0, np.uint32)
        return cls(handles, packed, offsets, ids)

    def positions(self, members: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.handles, members)

    def verify(
        self, fingerprint: np.ndarray, cands: np.ndarray, threshold: float, fp_size: int
    ) -> np.ndarray:
        """Similarity of a fingerprint to the candidates at these (ascending) positions,
        0 below threshold. A dense run is passed to the kernel as it lies; a sparse
        one is gathered first."""
        if len(cands) == 0:
            return np.zeros(0)
        lo, hi = int(cands[0]), int(cands[-1]) + 1
        if 2 * len(cands) >= hi - lo:
            sims = kernel.jaccard_many_packed(
                fingerprint, self.values, self.offsets[lo : hi + 1], threshold,
                fingerprint_size=fp_size,
            )  # fmt: skip
            return sims[cands - lo]
        starts = self.offsets[cands].astype(np.int64)
        lens = self.offsets[cands + 1].astype(np.int64) - starts
        offsets = np.zeros(len(cands) + 1, np.uint64)
        np.cumsum(lens, out=offsets[1:])
        gather = np.arange(int(offsets[-1]), dtype=np.int64)
        gather += np.repeat(starts - offsets[:-1].astype(np.int64), lens)
        return kernel.jaccard_many_packed(
            fingerprint, self.values[gather], offsets, threshold, fingerprint_size=fp_size
        )


class Scanner:
    """The scans of one collection's store."""

    def __init__(self, store: Store, fingerprint_size: int) -> None:
        self.store = store
        self.fp_size = fingerprint_size

    async def _block(self, first: int, last: int) -> list[tuple[int, _Doc]]:
        handles = list(range(first, last + 1))
        raws = await live_records(self.store, handles)
        return [
            (h, _Doc(records.id_of(r), *records.sketch_of(r)))
            for h, r in zip(handles, raws, strict=True)
            if r
        ]

    # pairs -------------------------------------------------------------------------

    async def pairs(
        self,
        threshold: float,
        max_pairs: int | None = None,
        after: str | None = None,
        marks: bool = False,
    ) -> AsyncIterator[PairBlock | Cut | Mark]:
        """Every verified pair once, by (older, newer) handle; with max_pairs, at most
        that many, then a Cut that says where to resume; with marks, a Mark after each
        block of older documents (a resume point even where pairs are sparse)."""
        start_a, start_b = parse_after(after)
        left = max_pairs
        done = (start_a, start_b)  # the last pair streamed
        last = await self.store.ids.last_handle()
        for first in range(max(1, start_a), last + 1, SCAN_BLOCK):
            docs = await self._block(first, min(first + SCAN_BLOCK - 1, last))
            docs = [(h, r) for h, r in docs if h >= start_a]
            if not docs:
                continue
            keys = np.unique(np.concatenate([r.band_keys for _, r in docs]))
            members, complete = await self.store.bands.members(keys, first - 1, UNIVERSE)
            union = np.unique(np.concatenate(members))
            whole = len(union) <= UNIVERSE and all(complete)
            runs = (
                self._verify_block(docs, keys, members, union, threshold, (start_a, start_b))
                if whole
                else self._verify_alone(docs, threshold, (start_a, start_b))
            )
            async for found in runs:
                if not len(found.b):
                    continue
                if left is not None and len(found.b) > left:
                    if left:
                        yield _head(found, left)
                        done = (found.a, int(found.b[left - 1]))
                    yield Cut(max_pairs or 0, f"{done[0]}:{done[1]}")
                    return
                yield found
                done = (found.a, int(found.b[-1]))
                if left is not None:
                    left -= len(found.b)
            if marks:
                # Every pair whose older member is in this block has been yielded.
                yield Mark(f"{docs[-1][0] + 1}:0")

    async def _verify_block(
        self,
        docs: list[tuple[int, _Doc]],
        keys: np.ndarray,
        members: list[np.ndarray],
        union: np.ndarray,
        threshold: float,
        start: tuple[int, int],
    ) -> AsyncIterator[PairBlock]:
        """Each document of a block against every newer member of its bands, all of which
        fit in one universe."""
        universe = await _Universe.load(self.store, union)
        at = {int(k): universe.positions(m) for k, m in zip(keys.tolist(), members, strict=True)}
        mark = np.zeros(len(union), dtype=bool)
        for a, rec in docs:
            marks = np.concatenate([at[k] for k in rec.band_keys.tolist()])
            mark[marks] = True
            floor = max(start[1], a) if a == start[0] else a
            mark[: int(np.searchsorted(union, floor, "right"))] = False
            cands = np.flatnonzero(mark)
            mark[marks] = False
            yield self._found(a, rec, universe, cands, threshold)

    async def _verify_alone(
        self, docs: list[tuple[int, _Doc]], threshold: float, start: tuple[int, int]
    ) -> AsyncIterator[PairBlock]:
        """Each document on its own, its bands read in handle windows of at most UNIVERSE
        candidates: memory stays bounded however hot they are."""
        for a, rec in docs:
            keys = np.unique(rec.band_keys)
            most = max(64, UNIVERSE // len(keys))
            lo = max(start[1], a) if a == start[0] else a
            while True:
                members, complete = await self.store.bands.members(keys, lo, most)
                # A hot key read in part is ascending: the rest lies above its last.
                full = [int(m[-1]) for m, c in zip(members, complete, strict=True) if not c]
                hi = min(full) if full else None
                if hi is not None:
                    members = [m[m <= hi] for m in members]
                union = np.unique(np.concatenate(members))
                if len(union):
                    universe = await _Universe.load(self.store, union)
                    yield self._found(a, rec, universe, np.arange(len(union)), threshold)
                if hi is None:
                    break
                lo = hi

    def _found(
        self,
        a: int,
        rec: _Doc,
        universe: _Universe,
        cands: np.ndarray,
        threshold: float,
    ) -> PairBlock:
        sims = universe.verify(rec.fingerprint, cands, threshold, self.fp_size)
        hit = cands[sims >= threshold]
        ids = universe.ids
        return PairBlock(
            a,
            rec.id,
            universe.handles[hit],
            [ids[i] for i in hit.tolist()],
            sims[sims >= threshold],
        )

    # groups -------------------------------------------------------------------------

    async def groups(
        self, threshold: float, after: int = 0
    ) -> AsyncIterator[tuple[list[int], list[str]]]:
        """The connected components (two members or more) of the verified-pair graph, as
        (handles, ids), oldest first, in the order of their oldest members; with after,
        only those whose oldest member's handle is above it (a resumed stream: the
        components are computed again, as they need the whole graph)."""
        last = await self.store.ids.last_handle()
        grouping = _Groups(self.store, last, threshold, self.fp_size)
        for first in range(1, last + 1, SCAN_BLOCK):
            docs = await self._block(first, min(first + SCAN_BLOCK - 1, last))
            await grouping.add_block(first, docs)
        async for group in grouping.components():
            if group[0][0] > after:
                yield group


class _Groups:
    """Union-find over handles, fed band by band."""

    def __init__(self, store: Store, last: int, threshold: float, fp_size: int) -> None:
        self.store, self.threshold, self.fp_size = store, threshold, fp_size
        self.parent = np.arange(last + 1, dtype=np.int64)
        # Handles whose record a block has read: a band with an older live member was
        # walked in that member's block.
        self.live = np.zeros(last + 1, dtype=bool)
        self.fps: dict[int, np.ndarray] = {}

    def _roots(self, handles: np.ndarray) -> np.ndarray:
        r = self.parent[handles]
        while True:
            up = self.parent[r]
            if np.array_equal(up, r):
                break
            r = up
        self.parent[handles] = r  # path compression
        return r

    def _root(self, h: int) -> int:
        parent = self.parent
        while True:
            p = int(parent[h])
            if p == h:
                return h
            h = p

    async def add_block(self, first: int, docs: list[tuple[int, _Doc]]) -> None:
        for h, rec in docs:
            self.live[h] = True
            self.fps[h] = rec.fingerprint
        if not docs:
            return
        keys = np.unique(np.concatenate([r.band_keys for _, r in docs]))
        # A band whose oldest member is live and older was walked in that member's
        # block: one cheap look at each band's oldest member spares reading it again.
        oldest, complete = await self.store.bands.members(keys, 0, 1)
        bands = [m for m, c in zip(oldest, complete, strict=True) if c and len(m) > 1]
        hot = [i for i, c in enumerate(complete) if not c and not self._walked(oldest[i], first)]
        if hot:
            bands += (await self.store.bands.members(keys[hot], 0))[0]
        for band in bands:
            band = band[band < len(self.parent)]  # handed out after the scan began
            if len(band) < 2 or self._walked(band, first):
                continue
            roots = self._roots(band)
            if (roots == roots[0]).all():
                continue
            await self._connect(band)
        self._trim()

    def _walked(self, members: np.ndarray, first: int) -> bool:
        """Whether a band with these members was walked in an earlier block."""
        return bool(self.live[members[members < first]].any())

    async def _fingerprints(self, handles: np.ndarray) -> None:
        missing = [h for h in handles.tolist() if h not in self.fps]
        for lo in range(0, len(missing), RECORD_BATCH):
            part = missing[lo : lo + RECORD_BATCH]
            for h, raw in zip(part, await live_records(self.store, part), strict=True):
                self.fps[h] = np.zeros(0, np.uint32) if raw is None else records.sketch_of(raw)[0]

    def _trim(self) -> None:
        """Drop the cached fingerprints once there are too many: a band of any size
        holds at most a chunk of them at a time (each use fetches what it lacks)."""
        if len(self.fps) > GROUP_CACHE:
            self.fps = {}

    async def _passes(self, h: int, others: Sequence[int]) -> np.ndarray:
        """Which of others are near-duplicates of h."""
        await self._fingerprints(np.array([h, *others], dtype=np.int64))
        fps = [self.fps[o] for o in others]
        offsets = np.zeros(len(fps) + 1, np.uint64)
        np.cumsum([len(f) for f in fps], out=offsets[1:])
        # Threshold 0: one or two candidates a call, too few for the kernel's pruning.
        sims = kernel.jaccard_many_packed(
            self.fps[h], np.concatenate(fps), offsets, 0.0, fingerprint_size=self.fp_size
        )
        return sims >= self.threshold

    async def _connect(self, band: np.ndarray) -> None:
        """Join the components of a band's members that verified pairs connect.

        Exact: a member x is tried against one member (rep) of each component already
        met in the band; if that fails, against the component's other members here. So
        every candidate pair (x, y) of the band is either verified or has x and y in
        one component already, and verifying it could join nothing.
        """
        # First, the oldest member against all the others not yet with it, a chunk at
        # a time: in a cluster of copies that joins nearly everyone, and the walk below
        # then finds one root. Only verified pairs join, so the walk stays exact.
        head = int(band[0])
        for lo in range(0, len(band), UNIVERSE):
            part = band[lo : lo + UNIVERSE]
            apart = part[self._roots(part) != self._root(head)]
            if len(apart):
                ok = await self._passes(head, apart.tolist())
                merged = np.unique(np.concatenate(([self._root(head)], self._roots(apart[ok]))))
                self.parent[merged] = merged[0]
            self._trim()
        roots = self._roots(band)
        if (roots == roots[0]).all():
            return
        handles = band.tolist()
        reps: dict[int, int] = {}  # root -> a member of the band with that root
        met: list[int] = []
        for i, x in enumerate(handles):
            if x not in self.fps:  # the next chunk of the band, in one read
                self._trim()
                await self._fingerprints(band[i : i + RECORD_BATCH])
            rx = self._root(x)
            others = [r for r in reps if r != rx]
            joined = [rx]
            if others:
                ok = await self._passes(x, [reps[r] for r in others])
                failed = [r for r, good in zip(others, ok.tolist(), strict=True) if not good]
                joined += [r for r, good in zip(others, ok.tolist(), strict=True) if good]
                if failed:
                    rest = [y for y in met if self._root(y) in failed and reps[self._root(y)] != y]
                    if rest:
                        good = (await self._passes(x, rest)).tolist()
                        passed = {self._root(y) for y, g in zip(rest, good, strict=True) if g}
                        joined += list(passed)
            new = min(joined)
            for r in joined:
                self.parent[r] = new
                reps.pop(r, None)
            reps[new] = x
            met.append(x)

    async def components(self) -> AsyncIterator[tuple[list[int], list[str]]]:
        handles = np.arange(1, len(self.parent), dtype=np.int64)
        roots = self._roots(handles)
        sizes = np.bincount(roots, minlength=len(self.parent))
        grouped = sizes[roots] >= 2
        handles, roots = handles[grouped], roots[grouped]
        order = np.lexsort((handles, roots))
        handles, roots = handles[order], roots[order]
        bounds = np.flatnonzero(np.diff(roots)) + 1
        batch: list[np.ndarray] = []
        for group in np.split(handles, bounds) if len(handles) else []:
            batch.append(group)
            if sum(map(len, batch)) >= RECORD_BATCH:
                async for g in self._named(batch):
                    yield g
                batch = []
        async for g in self._named(batch):
            yield g

    async def _named(self, groups: list[np.ndarray]) -> AsyncIterator[tuple[list[int], list[str]]]:
        if not groups:
            return
        flat = np.concatenate(groups).tolist()
        names = {}
        for lo in range(0, len(flat), RECORD_BATCH):
            part = flat[lo : lo + RECORD_BATCH]
            for h, raw in zip(part, await live_records(self.store, part), strict=True):
                if raw is not None:
                    names[h] = records.id_of(raw)
        for group in groups:
            kept = [h for h in group.tolist() if h in names]
            if len(kept) >= 2:
                yield kept, [names[h] for h in kept]
