"""A collection's band memberships in Redis: which documents each band key (or passage
anchor) holds, written, removed, read for queries and scanned whole.

A band key's members sit inline in a field of its bucket HASH until they spill to a key
of their own (layout.py says where; scripts/band_ops.lua how an add or a remove moves
them). Store.bands is the collection's; the read scripts that rank candidates from these
entries are Store's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import NamedTuple

import numpy as np

from app.store import scripts
from app.store.errors import StoreError
from app.store.layout import HANDLE, MAX_HANDLE, MAX_INLINE, SPILLED, Layout
from app.store.resp import Command, pairs
from app.store.scripts import Script
from app.store.transport import Transport

_NONE = np.zeros(0, dtype=np.int64)
# A spilled band's field starts with SPILLED, then its set's size (a HANDLE).
_MARK = len(SPILLED)

# Buckets read in one exchange by a full scan (memberships).
BUCKETS_PER_READ = 500

# Band entries per band_*_many script call on a single server. Redis runs nothing
# else while a script runs, so a call stays well under a millisecond; in
# bench/band_calls.py larger calls cost Redis more CPU per entry and saved the client
# nothing more.
ENTRIES_PER_CALL = 64


def _handles(members: list[bytes]) -> np.ndarray:
    """Handles a sorted set holds (decimal members) as int64."""
    return np.fromiter(map(int, members), dtype=np.int64, count=len(members))


def _packed(raw: bytes | None) -> np.ndarray:
    """Handles a packed spill holds (uint32 LE, ascending) as int64."""
    raw = raw or b""
    return np.frombuffer(raw, dtype="<u4", count=len(raw) // 4).astype(np.int64)


def _entries(memberships: Sequence[tuple[int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The band keys of memberships, concatenated (uint64), and each one's handle."""
    for h, _ in memberships:
        if not 0 < h <= MAX_HANDLE:
            raise StoreError(f"handle {h} is out of range: the collection is full")
    keys = np.concatenate([np.asarray(k, dtype=np.uint64) for _, k in memberships])
    handles = np.repeat([h for h, _ in memberships], [len(k) for _, k in memberships])
    return keys.astype("<u8"), handles


class ForeignEntry(NamedTuple):
    """A band entry of another layout than the collection's (Layout.fits): its bucket,
    its field, and whether its members were spilled to a key of their own."""

    bucket: bytes
    field: bytes
    spilled: bool


class Bands:
    """The band memberships of one collection's store."""

    def __init__(self, transport: Transport, keys: Layout) -> None:
        self.transport = transport
        self._keys = keys
        # Band writes that need a script (a band that has members, any removal) as
        # band_*_many calls of many entries instead of one call each: a single server
        # only, as those scripts name their own keys across slots. Tests and benches
        # turn it off to compare the two paths.
        self.batched = not transport.cluster

    async def add(
        self,
        memberships: Sequence[tuple[int, np.ndarray]],
        anchors: Sequence[tuple[int, np.ndarray]] = (),
    ) -> None:
        """Add each handle to each of its band keys (memberships) and passage anchors.

        HSETNX settles the usual case, a band nobody has yet, natively, in one
        packed exchange; only bands that already have members go through a script:
        band_add_many, ENTRIES_PER_CALL of them a call, on a single server, or
        band_add, one call each, on a cluster. In a collection with marks, those scripts
        also mark the documents that now share a band key (layout.Layout.use_marks).
        """
        if not memberships and not anchors:
            return
        keys, handles = _entries([*memberships, *anchors])
        created = await self.transport.send(
            self._keys.band_commands(b"HSETNX", keys, handles), write=True
        )
        bands = sum(len(k) for _, k in memberships)  # the first entries are band keys
        had = np.flatnonzero(np.asarray(created, dtype=np.int64) == 0)  # had members
        if self.batched:
            # had is ascending: its band keys come first.
            cut = int(np.searchsorted(had, bands))
            await self._band_script(scripts.BAND_ADD_MANY, keys[had], handles[had], cut)
            return
        kinds = [(int(i), i < bands) for i in had.tolist()]
        calls = [
            c
            for i, band in kinds
            for c in self._keys.band_calls(int(handles[i]), [int(keys[i])], band)
        ]
        replies = await self.transport.eval(scripts.BAND_ADD, calls, write=True)
        if self._keys.marks is not None:
            # The script cannot set them itself: the bitmap lies in another slot.
            await self.mark(sorted({HANDLE.unpack(h)[0] for r in replies for h in r[1:]}))

    async def remove(self, memberships: Sequence[tuple[int, np.ndarray]]) -> None:
        """Remove each handle from each of its band keys."""
        if self.batched:
            if memberships:
                await self._band_script(scripts.BAND_REMOVE_MANY, *_entries(memberships))
            return
        calls = [c for h, keys in memberships for c in self._keys.band_calls(h, keys.tolist())]
        await self.transport.eval(scripts.BAND_REMOVE, calls, write=True)

    async def marks(self) -> bytes:
        """The collection's marks bitmap (layout.Layout.use_marks; b"" when it keeps none
        or none is set): bit h, counted from each byte's highest, is document h's."""
        if self._keys.marks is None:
            return b""
        (raw,) = await self.transport.commands([(b"GET", self._keys.marks)])
        return raw or b""

    async def mark(self, handles: Sequence[int]) -> None:
        """Set the marks of these handles (a repair: a bit to spare is always safe)."""
        if self._keys.marks is not None and handles:
            sets = [(b"SETBIT", self._keys.marks, b"%d" % h, b"1") for h in handles]
            await self.transport.commands(sets, write=True)

    async def _band_script(
        self, script: Script, keys: np.ndarray, handles: np.ndarray, bands: int | None = None
    ) -> None:
        """Run a band_*_many script over the entries in order, ENTRIES_PER_CALL a call,
        every call in one exchange: one reply per call instead of one per entry. The
        first `bands` entries are band keys, the rest anchors (None: all band keys),
        which an add marks differently (layout.Layout.use_marks)."""
        head = (*self._keys.band_heads, b"%d" % MAX_INLINE)
        marks = self._keys.marks or b""
        cut = len(keys) if bands is None else bands
        calls = [
            (*head, rows[at : at + ENTRIES_PER_CALL].tobytes(), b"%d" % width, marks, band)
            for part, band in ((slice(0, cut), b"1"), (slice(cut, None), b"0"))
            for width, rows in self._keys.band_entries(keys[part], handles[part])
            for at in range(0, len(rows), ENTRIES_PER_CALL)
        ]
        if calls:
            await self.transport.eval(script, calls, write=True, weight=len(keys))

    async def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The inline handles of all the band keys, concatenated (uint32; a handle once
        per band that has it), and (position, size) of each spilled (hot) band key,
        whose handles window reads."""
        inline, hot = await self._fields(keys)
        return np.frombuffer(b"".join(v for _, v in inline), dtype="<u4"), hot

    async def split(self, keys: np.ndarray) -> tuple[list[np.ndarray], list[tuple[int, int]]]:
        """lookup, each key apart: every key's inline handles (int64; empty where it
        has none or is spilled), and (position, size) of each spilled (hot) key."""
        held, hot = await self._fields(keys)
        inline = [_NONE] * len(keys)
        for i, v in held:
            inline[i] = np.frombuffer(v, dtype="<u4").astype(np.int64)
        return inline, hot

    async def _fields(
        self, keys: np.ndarray
    ) -> tuple[list[tuple[int, bytes]], list[tuple[int, int]]]:
        """Each band key's field, read in one exchange: (position, inline handles) of
        the keys that hold them, and (position, size) of each spilled (hot) key."""
        values = await self.transport.send(self._keys.band_commands(b"HGET", keys))
        inline, hot = [], []
        for i, v in enumerate(values):
            if v is None:
                continue
            if v[:_MARK] == SPILLED:
                hot.append((i, HANDLE.unpack_from(v, _MARK)[0]))
            else:
                inline.append((i, v))
        return inline, hot

    async def window(
        self, keys: np.ndarray, starts: Sequence[int], counts: Sequence[int]
    ) -> list[np.ndarray]:
        """counts[i] handles of spilled band key i, from rank starts[i] in handle order.

        One O(log n) ZRANGE each, however hot the band: SRANDMEMBER would cost
        time per member read; packed, one GETRANGE of their bytes.
        """
        if self._keys.packed_spills:
            width = HANDLE.size
            # (A count of 0 would read GETRANGE key 0 -1: the whole band.)
            wanted = [(k, s, n) for k, s, n in zip(keys.tolist(), starts, counts, strict=True)]
            reads = [
                (b"GETRANGE", self._keys.band_place(k)[2], b"%d" % (width * start),
                 b"%d" % (width * (start + n) - 1))
                for k, start, n in wanted if n > 0
            ]  # fmt: skip
            got = iter(await self.transport.commands(reads)) if reads else iter(())
            return [_packed(next(got)) if n > 0 else _NONE for _, _, n in wanted]
        commands = [
            (b"ZRANGE", self._keys.band_place(k)[2], b"%d" % start, b"%d" % (start + n - 1))
            for k, start, n in zip(keys.tolist(), starts, counts, strict=True)
        ]
        return [_handles(members) for members in await self.transport.commands(commands)]

    async def members(
        self, keys: np.ndarray, above: int = 0, most: int | None = None
    ) -> tuple[list[np.ndarray], list[bool]]:
        """The handles of each band key above `above` (int64), and whether that is all of
        them: a hot (spilled) key gives only its `most` smallest, ascending, and a
        caller that wants more reads on above the last; inline handles come whole, in
        no order.

        Whole memberships, for the scans of the collection; a query reads windows
        (window) instead.
        """
        values = await self.transport.send(self._keys.band_commands(b"HGET", keys))
        out = [_NONE] * len(values)
        complete = [True] * len(values)
        spilled, inline = [], []
        for i, v in enumerate(values):
            if v is None:
                continue
            if v[:_MARK] == SPILLED:
                spilled.append(i)
                complete[i] = most is None
            else:
                inline.append(i)
        if inline:
            # All inline handles parsed at once; each key gets a slice of them.
            raw = [values[i] for i in inline]
            handles = np.frombuffer(b"".join(raw), dtype="<u4").astype(np.int64)
            keep = handles > above
            counts = np.add.reduceat(keep, np.cumsum([0] + [len(v) // 4 for v in raw[:-1]]))
            ends = np.cumsum(counts).tolist()
            handles = handles[keep]
            start = 0
            for i, end in zip(inline, ends, strict=True):
                out[i] = handles[start:end]
                start = end
        if spilled and self._keys.packed_spills:
            # A page each, found in Redis: a hot band may hold millions of handles.
            page = (b"%d" % above, b"%d" % (most or 0))
            calls = [(self._keys.band_place(int(keys[i]))[2], *page) for i in spilled]
            replies = await self.transport.eval(scripts.PACKED_MEMBERS, calls)
            for i, (left, raw) in zip(spilled, replies, strict=True):
                out[i] = _packed(raw)
                complete[i] = most is None or int(left) <= most
        elif spilled:
            low = b"(%d" % above
            limit = () if most is None else (b"LIMIT", b"0", b"%d" % most)
            commands = [
                (b"ZRANGEBYSCORE", self._keys.band_place(int(keys[i]))[2], low, b"+inf", *limit)
                for i in spilled
            ]
            for i, members in zip(spilled, await self.transport.commands(commands), strict=True):
                out[i] = _handles(members)
                complete[i] = complete[i] or len(members) < (most or 0)
        return out, complete

    async def memberships(
        self, foreign: list[ForeignEntry] | None = None
    ) -> AsyncIterator[tuple[int, list[int]]]:
        """Every band key (as Store.entry_keys gives it) with its handles, in no order: for
        checks and tools, not queries. Each entry this layout cannot have written
        (Layout.fits) goes to foreign instead, if given."""
        buckets: list[bytes] = []
        async for bucket in self.transport.scan(self._keys.buckets_pattern):
            buckets.append(bucket)
            if len(buckets) == BUCKETS_PER_READ:
                async for entry in self._bucket_members(buckets, foreign):
                    yield entry
                buckets = []
        async for entry in self._bucket_members(buckets, foreign):
            yield entry

    async def drop_fields(self, entries: Sequence[ForeignEntry]) -> None:
        """Delete these entries, whatever they hold, and a spilled one's members: check's
        repair of entries of another layout."""
        commands: list[Command] = []
        for bucket, field, spilled in entries:
            commands.append((b"HDEL", bucket, field))
            if spilled:
                commands += [(b"DEL", k) for k in self._keys.spills_of(bucket, field)]
        if commands:
            await self.transport.commands(commands, write=True)

    async def _bucket_members(
        self, buckets: list[bytes], foreign: list[ForeignEntry] | None = None
    ) -> AsyncIterator[tuple[int, list[int]]]:
        # A collection has tens of buckets per document slot: one exchange per
        # bucket made a full scan cost a round trip each (50,000 for 1,000 documents).
        if not buckets:
            return
        commands = self.transport.commands
        replies = await commands([(b"HGETALL", b) for b in buckets])
        for bucket, fields in zip(buckets, replies, strict=True):
            for field, value in pairs(fields):
                if not self._keys.fits(bucket, field):
                    if foreign is not None:
                        foreign.append(ForeignEntry(bucket, field, value[:_MARK] == SPILLED))
                    continue
                key = self._keys.band_key(bucket, field)
                if value[:_MARK] != SPILLED:
                    yield key, np.frombuffer(value, dtype="<u4").tolist()
                elif self._keys.packed_spills:
                    (raw,) = await commands([(b"GET", self._keys.band_place(key)[2])])
                    yield key, _packed(raw).tolist()
                else:
                    spill = self._keys.band_place(key)[2]
                    (members,) = await commands([(b"ZRANGE", spill, b"0", b"-1")])
                    yield key, [int(m) for m in members]
