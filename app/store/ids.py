"""A collection's id map in Redis: external id -> handle, and the handles' counter.

New collections spread the map over id buckets (HASHes chosen by CRC-32 of the id,
layout.Layout.id_key) with a kept count: a HASH of `n` (how many ids) and `gen` (how
many times an id was mapped or dropped). On one server a script maps or unmaps ids and
moves the count in the same step (ids_add.lua, ids_forget.lua); on a cluster the count
follows in a second exchange, and a crash between the two is what the check's
`id_count` finds and mends (set_count). Older collections keep one `ids` HASH, whose
HLEN is its count.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from app.store import scripts
from app.store.layout import IDS_PER_BUCKET, Layout
from app.store.resp import pairs
from app.store.scripts import Script
from app.store.transport import Transport

# Ids a call of the ids_add / ids_forget scripts maps or drops (single server): Redis
# runs nothing else while a script runs, so a batch of thousands goes as several calls.
IDS_PER_CALL = 500
# From this many id buckets on, mappings() first asks how many keys the Redis holds: a
# collection made for a billion ids has 2^26 buckets, which took ~170 s to read empty.
SPARSE_FROM = 1 << 16


class IdMap:
    """One collection's id -> handle mappings (Store.ids)."""

    def __init__(self, transport: Transport, keys: Layout) -> None:
        self.transport = transport
        self._keys = keys
        # Whether the map's scripts (which name keys across slots) may run: a single
        # server only; Store.scripted sets it with the store's other scripted paths.
        self.scripted = not transport.cluster

    def use_buckets(self, buckets: int) -> None:
        """Split the id map into this many HASHes (a power of two; 0: one ids HASH)."""
        self._keys.use_id_buckets(buckets)

    async def handles(self, ids: Sequence[str]) -> list[int | None]:
        """The handle of each id, None where the id is unknown."""
        if not ids:
            return []
        keys = self._keys
        if keys.id_buckets:
            names = [i.encode() for i in ids]
            raw = await self.transport.commands([(b"HGET", keys.id_key(n), n) for n in names])
        else:
            command = (b"HMGET", keys.ids, *(i.encode() for i in ids))
            (raw,) = await self.transport.commands([command])
        return [None if h is None else int(h) for h in raw]

    async def assign(self, ids: Sequence[str]) -> tuple[list[int], list[bool]]:
        """A handle for each id, creating one where the id has none, and whether this
        call made it (mapped the id).

        HSETNX settles races: a concurrent writer of the same new id loses
        the field and takes the winner's handle.
        """
        known = await self.handles(ids)
        made = [False] * len(ids)
        missing = [i for i, h in enumerate(known) if h is None]
        if missing:
            keys, commands = self._keys, self.transport.commands
            counter = (b"INCRBY", keys.next, b"%d" % len(missing))
            (last,) = await commands([counter], write=True)
            first = last - len(missing) + 1
            wanted = {ids[i]: first + n for n, i in enumerate(missing)}
            named = [(i.encode(), h) for i, h in wanted.items()]
            places = [(keys.id_key(n), n, b"%d" % h) for n, h in named]
            won = dict(zip(wanted, await self._map(places), strict=True))
            lost = [i for i in missing if not won[ids[i]]]
            for i in missing:
                if won[ids[i]]:
                    known[i], made[i] = wanted[ids[i]], True
            if lost:
                settled = await self.handles([ids[i] for i in lost])
                for i, h in zip(lost, settled, strict=True):
                    known[i] = h
        if any(h is None for h in known):  # deleted between the two reads
            again, also = await self.assign(ids)
            return again, [a or b for a, b in zip(made, also, strict=True)]
        return [int(h) for h in known], made  # type: ignore[arg-type]

    async def _map(self, places: list[tuple[bytes, bytes, bytes]]) -> list[int]:
        """HSETNX of each (HASH, id, handle): 1 where it mapped the id, 0 where another
        writer had. With id buckets the kept count follows: in the same script on a
        single server (nothing can come between), after the replies on a cluster (a
        crash between the two, or an exchange that fails after Redis ran it, is the
        check's id_count)."""
        keys, transport = self._keys, self.transport
        if keys.id_buckets and self.scripted:
            return await self._script(scripts.IDS_ADD, places)
        sets = [(b"HSETNX", *place) for place in places]
        won = [int(w) for w in await transport.commands(sets, write=True)]
        if keys.id_buckets and any(won):
            await self._move_count(sum(won))
        return won

    async def _move_count(self, by: int) -> None:
        """A cluster's count after its HSETNXes or HDELs: 'n' by their net change, the
        generation by the ids changed (both one key, one exchange)."""
        count, move = self._keys.id_count, b"%d" % by
        steps = [(b"HINCRBY", count, b"n", move), (b"HINCRBY", count, b"gen", b"%d" % abs(by))]
        await self.transport.commands(steps, write=True)

    async def _script(self, script: Script, places: list[tuple[bytes, bytes, bytes]]) -> list[int]:
        """An ids_add / ids_forget script over the places, IDS_PER_CALL a call, every call
        in one exchange; each place's reply, in order."""
        count = self._keys.id_count
        calls = [
            (count, *(part for place in places[at : at + IDS_PER_CALL] for part in place))
            for at in range(0, len(places), IDS_PER_CALL)
        ]
        replies = await self.transport.eval(script, calls, write=True, weight=len(places))
        return [int(r) for reply in replies for r in reply]

    async def forget(self, ids: Sequence[str], handles: Sequence[int]) -> None:
        """Drop id -> handle mappings that still point at these handles (with id buckets,
        the kept count follows, as in _map)."""
        keys, transport = self._keys, self.transport
        names = [i.encode() for i in ids]
        places = [(keys.id_key(n), n, b"%d" % h) for n, h in zip(names, handles, strict=True)]
        if keys.id_buckets and self.scripted:
            await self._script(scripts.IDS_FORGET, places)
            return
        gone = sum(await transport.eval(scripts.FORGET_ID, places, write=True))
        if keys.id_buckets and gone:
            await self._move_count(-gone)

    async def last_handle(self) -> int:
        """The largest handle handed out so far (0 for an empty collection)."""
        (raw,) = await self.transport.commands([(b"GET", self._keys.next)])
        return int(raw or 0)

    async def raise_counter(self, highest: int) -> int:
        """Move the handle counter up to at least `highest` (never down: a writer's
        INCRBY meanwhile only takes it further); how far it moved."""
        behind = highest - await self.last_handle()
        if behind > 0:
            await self.transport.commands(
                [(b"INCRBY", self._keys.next, b"%d" % behind)], write=True
            )
        return max(0, behind)

    async def count(self) -> int:
        """How many ids the collection maps: its id buckets' kept count (never below 0),
        or the HLEN of its one ids HASH."""
        kept = await self.kept_count()
        if kept is not None:
            return max(0, kept[0])
        (n,) = await self.transport.commands([(b"HLEN", self._keys.ids)])
        return int(n)

    async def kept_count(self) -> tuple[int, int] | None:
        """The id buckets' kept count as stored (a crash can leave it off, even below 0)
        and the id map's generation, which every mapping and unmapping moves up; None
        for a collection with one ids HASH, whose HLEN needs no keeping."""
        if not self._keys.id_buckets:
            return None
        (raw,) = await self.transport.commands([(b"HMGET", self._keys.id_count, b"n", b"gen")])
        return int(raw[0] or 0), int(raw[1] or 0)

    async def set_count(self, generation: int, was: int, value: int) -> bool:
        """Set the id buckets' kept count from was to value while the id map's generation
        is still this one (the check's repair of a drift: nothing mapped or dropped since
        its scan began, and concurrent passes mend it once); whether it did."""
        if not self._keys.id_buckets:
            return False
        call = (self._keys.id_count, b"%d" % generation, b"%d" % was, b"%d" % value)
        (done,) = await self.transport.eval(scripts.ID_COUNT_SET, [call], write=True)
        return bool(done)

    async def mappings(self, batch: int = 1000) -> AsyncIterator[tuple[str, int]]:
        """Every (id, handle) mapping, in no order, a batch at a time (HSCAN of the ids
        HASH, or HGETALL of about `batch` ids' worth of id buckets an exchange)."""
        keys = self._keys
        if not keys.id_buckets:
            async for doc_id, handle in self.transport.hscan(keys.ids, batch):
                yield doc_id.decode(), int(handle)
            return
        step = max(1, batch // IDS_PER_BUCKET)
        if keys.id_buckets >= SPARSE_FROM and await self.transport.key_count() < keys.id_buckets:
            # Fewer keys in the whole Redis than buckets: the buckets that exist are found
            # by SCAN, which walks those keys, not the buckets that are not there.
            parts = self._existing_buckets(step)
        else:
            parts = self._every_bucket(step)
        async for part in parts:
            for reply in await self.transport.commands([(b"HGETALL", k) for k in part]):
                for doc_id, handle in pairs(reply):
                    yield doc_id.decode(), int(handle)

    async def _every_bucket(self, step: int) -> AsyncIterator[list[bytes]]:
        for first in range(0, self._keys.id_buckets, step):
            yield self._keys.id_keys(first, first + step)

    async def _existing_buckets(self, step: int) -> AsyncIterator[list[bytes]]:
        """The id buckets that exist, `step` at a time, each once (SCAN may name a key
        twice: a bitmap of bucket numbers, id_buckets bits, keeps them apart)."""
        keys = self._keys
        seen = bytearray((keys.id_buckets + 7) // 8)
        part: list[bytes] = []
        async for key in self.transport.scan(keys.id_pattern()):
            number = keys.id_bucket_number(key)
            if number is None or seen[number >> 3] & (1 << (number & 7)):
                continue
            seen[number >> 3] |= 1 << (number & 7)
            part.append(key)
            if len(part) == step:
                yield part
                part = []
        if part:
            yield part
