"""The consistency check: what a crash (or a bug) left behind, and its safe removal.

The invariant it checks is the one app.index.locks keeps: an id maps to at
most one handle, only that handle's record answers for the id, and every
band entry belongs to a live document's record. What breaks it, by kind:

    dangling_ids    an id mapped to a handle that has no record of its own (a write
                    that stopped before its record; or, after a counter that went
                    back, a handle given again that holds another id's record)
    orphan_records  a record whose id maps elsewhere or nowhere (a handle
                    that lost its id); it could answer queries as a ghost
    orphan_bands    band entries of a handle with no record and no id
    stray_bands     band entries of a live document that its record does
                    not list (a replace that stopped before its clean-up)
    missing_bands   band entries a live record lists that the bands lack
    orphan_texts    a kept text of a handle with no record and no id (a
                    delete or a first write that stopped half-way)
    stale_texts     a live document's kept text written for another version of
                    its record (a replace that stopped between text and record)
    stale_expiries  an expiry queue entry of a handle with no record, due for
                    longer than a write lock lives (a delete that stopped before
                    its last step)
    far_expiries    a record whose expiry is more than 100 years away (stored before
                    expiries were bounded); reported, not repaired: it is a valid
                    document, which the next write of its id bounds
    handle_counter  how far the handle counter is behind the highest handle in use (an
                    id, a band entry or a kept text holds it): its key was lost (an
                    eviction, a failover to a replica that lagged, a DEL), and a new
                    document would be given a handle in use; repaired by moving the
                    counter past it (writes meanwhile refuse such a handle: a 503)
    unmarked        a live document that shares a band key's place with another as a
                    band key, and whose bit in the marks bitmap is not set (a cluster's
                    writer stopped between its band script and its marks; or a bug): its
                    GET /similar/{id} would read none of its buckets; repaired by setting
                    the bit (collections with marks)
    id_count        how far the id buckets' kept count is from the ids they hold
                    (on a cluster, a write or delete that stopped between its HSETNX
                    or HDEL and the count's HINCRBY: a crash, or
                    an exchange that failed after Redis ran it, such as a WAIT short
                    of NEARDUP_MIN_REPLICAS; one server does both in one script);
                    mended only when no id was mapped or dropped during the scan (the
                    map's generation says so), so a count under steady writes waits
                    for a quieter pass

A document that has expired is the sweeper's (app.index.expiry): whatever of it
is left, mid-sweep or not yet swept, is not a finding.

The scan is not a snapshot, so every finding is checked again, under the
id's write lock, before anything is removed: a write in flight is never
mistaken for debris. Bands are scanned before the id map: a handle's bands
and texts are only ever written after its id was mapped, so a handle with bands
or a text that no later id-map scan shows is unreachable for good.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import numpy as np

from app.core import metrics
from app.index import expiry, records, texts
from app.index.index import Index
from app.index.sketch import anchors_of
from app.store import ForeignEntry, Store


def entries_of(rec: records.Record, store: Store) -> np.ndarray:
    """Every entry a live document has in the band buckets (its bands and its anchors),
    each key as the store's bands.memberships gives it back (Store.entry_keys)."""
    return store.entry_keys(np.union1d(rec.band_keys, anchors_of(rec)))


KINDS = (
    "dangling_ids",
    "orphan_records",
    "orphan_bands",
    "foreign_bands",
    "stray_bands",
    "missing_bands",
    "unmarked",
    "orphan_texts",
    "stale_texts",
    "stale_expiries",
    "far_expiries",
    "handle_counter",
    "id_count",
)


@dataclass
class CheckReport:
    """What one pass found (counts by kind) and, with repair, what it removed or restored."""

    ids: int = 0
    records: int = 0
    band_entries: int = 0
    found: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    repaired: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    # A few examples per kind, for the operator to look at.
    examples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    @property
    def clean(self) -> bool:
        """Whether nothing was found."""
        return not any(self.found.values())

    def note(self, kind: str, example: str, n: int = 1) -> None:
        self.found[kind] += n
        if len(self.examples[kind]) < 5:
            self.examples[kind].append(example)

    def as_dict(self) -> dict:
        return {
            "ids": self.ids,
            "records": self.records,
            "band_entries": self.band_entries,
            "clean": self.clean,
            "found": dict(self.found),
            "repaired": dict(self.repaired),
            "examples": {k: list(v) for k, v in self.examples.items() if v},
        }


async def _records(
    index: Index, last: int, batch: int, pause: float
) -> AsyncIterator[tuple[int, bytes]]:
    """Every (handle, record) up to handle `last`, in handle order (handles are dense
    integers)."""
    for first in range(1, last + 1, batch):
        handles = list(range(first, min(first + batch, last + 1)))
        for h, raw in zip(handles, await index.store.records(handles), strict=True):
            if raw is not None:
                yield h, raw
        if pause:
            await asyncio.sleep(pause)


async def check(
    index: Index, repair: bool = False, batch: int = 500, pause: float = 0.0
) -> CheckReport:
    """Scan the collection for entries that break the invariant; with repair, remove them.

    Safe while the service runs. pause (seconds) is slept between batches of
    records, so a background pass leaves room for the traffic it shares Redis with.
    """
    store = index.store
    report = CheckReport()
    # 1. bands, before the id map (see the module docstring)
    bands: dict[int, list[int]] = defaultdict(list)
    foreign: list[ForeignEntry] = []  # entries another layout wrote (Layout.fits)
    async for key, handles in store.bands.memberships(foreign):
        for h in handles:
            bands[h].append(key)
            report.band_entries += 1
    for e in foreign:
        report.note("foreign_bands", f"{e.bucket.decode(errors='replace')} field {e.field.hex()}")
    keeps = index.params.keep_text
    every_text = {h async for h in store.text_handles()}
    texted = every_text if keeps else set()
    # In a collection that keeps no texts, every text is another's (a write that ran on
    # while its collection was deleted and made again without keep_text).
    foreign_texts = set() if keeps else every_text
    # 2. ids, 3. records
    kept = await store.ids.kept_count()
    mapping = {doc_id: h async for doc_id, h in store.ids.mappings()}
    report.ids = len(mapping)
    await _id_count(index, report, kept, len(mapping), 0, repair)
    last = await _handle_counter(
        index, report, max([*mapping.values(), *bands, *texted], default=0), repair
    )
    live: dict[int, np.ndarray] = {}
    banded: dict[int, np.ndarray] = {}  # a live handle's band keys' places (with marks)
    owner: dict[int, str] = {}  # a live handle's id, as its record says
    digests: dict[int, bytes] = {}  # of live records that have a kept text
    orphans: dict[int, tuple[str, np.ndarray]] = {}
    at = expiry.now_ms()
    due: set[int] = set()  # expired: the sweeper's
    async for h, raw in _records(index, last, batch, pause):
        report.records += 1
        if not expiry.alive(raw, at):
            due.add(h)
            continue
        rec = records.unpack(raw)
        if rec.expires_ms > at + 1000 * expiry.MAX_TTL_S:  # stored before ttl was bounded
            report.note("far_expiries", f"handle {h}: expires at ms {rec.expires_ms}")
        if mapping.get(rec.id) == h:
            live[h] = entries_of(rec, store)
            if index.params.marks:
                banded[h] = store.entry_keys(rec.band_keys)
            owner[h] = rec.id
            if h in texted:
                digests[h] = texts.digest(raw)
        else:
            orphans[h] = (rec.id, entries_of(rec, store))
            report.note("orphan_records", f"handle {h} says id {rec.id!r}")
    # An id without a live record of its own: none at its handle, or another id's.
    dangling = [
        (i, h)
        for i, h in mapping.items()
        if h not in due and (h not in live or owner.get(h, i) != i)
    ]
    for doc_id, h in dangling:
        report.note("dangling_ids", f"id {doc_id!r} -> handle {h}")
    mapped = set(mapping.values())
    unreachable: list[int] = []
    stray: dict[int, np.ndarray] = {}
    missing: dict[int, np.ndarray] = {}
    for h, keys in bands.items():
        if h in live:
            extra = np.setdiff1d(np.asarray(keys, np.uint64), live[h])
            if len(extra):
                stray[h] = extra
                report.note("stray_bands", f"handle {h}: {len(extra)} entries", len(extra))
        elif h not in mapped and h not in orphans and h not in due:
            unreachable.append(h)
            report.note("orphan_bands", f"handle {h}: {len(keys)} entries", len(keys))
    unmarked = await _unmarked(index, banded)
    for h in unmarked:
        report.note("unmarked", f"handle {h}")
    for h, listed in live.items():
        lacking = np.setdiff1d(listed, np.asarray(bands.get(h, []), np.uint64))
        if len(lacking):
            missing[h] = lacking
            report.note("missing_bands", f"handle {h}: {len(lacking)} entries", len(lacking))
    lost_texts = sorted(
        h for h in texted if h not in live and h not in mapped and h not in orphans and h not in due
    ) + sorted(foreign_texts)
    for h in lost_texts:
        report.note("orphan_texts", f"handle {h}")
    stale = await _stale_texts(index, digests, batch)
    for h in stale:
        report.note("stale_texts", f"handle {h}")
    queued = await _stale_expiries(index, at)
    for h in queued:
        report.note("stale_expiries", f"handle {h}")
    if repair and not report.clean:
        await _repair(index, report, bands, dangling, orphans, unreachable, stray, missing, mapping)
        if foreign:  # no key of this layout reads them: nothing can be lost
            await store.bands.drop_fields(foreign)
            report.repaired["foreign_bands"] += len(foreign)
            metrics.ORPHANS_REPAIRED.labels("foreign_bands").inc(len(foreign))
        await _repair_texts(index, report, lost_texts, stale, mapping)
        if unmarked:  # a mark to spare is always safe: no lock needed
            await store.bands.mark(unmarked)
            report.repaired["unmarked"] += len(unmarked)
            metrics.ORPHANS_REPAIRED.labels("unmarked").inc(len(unmarked))
        if queued:  # a handle without a record is never written again (module docstring)
            await index.store.drop_expiries(queued)
            report.repaired["stale_expiries"] += len(queued)
            metrics.ORPHANS_REPAIRED.labels("stale_expiries").inc(len(queued))
    return report


def _shared_places(banded: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each (place, holder) of the handles' band keys' places where the place has two
    holders or more: places ascending, and their holders."""
    uniq = {h: np.unique(keys) for h, keys in banded.items()}
    if not uniq:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    places = np.concatenate(list(uniq.values()))
    holders = np.repeat(np.fromiter(uniq, np.int64, len(uniq)), [len(u) for u in uniq.values()])
    order = np.argsort(places, kind="stable")
    places, holders = places[order], holders[order]
    same = places[1:] == places[:-1]
    shared = np.zeros(len(places), bool)
    shared[1:] |= same
    shared[:-1] |= same
    return places[shared], holders[shared]


async def _unset(index: Index, handles: np.ndarray) -> list[int]:
    """Of these handles (ascending), those whose mark is not set."""
    bits = np.frombuffer(await index.store.bands.marks(), dtype=np.uint8)
    byte = handles >> 3
    marked = np.zeros(len(handles), bool)
    inside = byte < len(bits)
    shift = (7 - (handles[inside] & 7)).astype(np.uint8)
    marked[inside] = (bits[byte[inside]] >> shift) & 1 == 1
    return handles[~marked].tolist()


async def _unmarked(index: Index, banded: dict[int, np.ndarray]) -> list[int]:
    """Live documents that share a band key's place with another live document as a band
    key, and whose mark is not set (a collection with marks). The records the scan read
    may be of versions that never lived together (a replace between them), so each one
    found is judged again on fresh records of it and of every document it shared a place
    with, read together, then the bitmap (a write sets its marks before its record)."""
    places, holders = _shared_places(banded)
    found = await _unset(index, np.unique(holders))
    if not found:
        return []
    theirs = np.isin(places, places[np.isin(holders, found)])
    related = np.unique(holders[theirs]).tolist()
    fresh = await index.store.records(related)
    at = expiry.now_ms()
    again = {
        h: index.store.entry_keys(records.unpack(raw).band_keys)
        for h, raw in zip(related, fresh, strict=True)
        if raw is not None and expiry.alive(raw, at)
    }
    still = set(await _unset(index, np.unique(_shared_places(again)[1])))
    return [h for h in found if h in still]


async def _stale_expiries(index: Index, at: int) -> list[int]:
    """Queued handles without a record, due since before a write could still be in flight."""
    old = [h for h, ms in await index.store.due_expiries(at - expiry.GRACE_MS, 2**31)]
    present = await index.store.records(old)
    return [h for h, raw in zip(old, present, strict=True) if raw is None]


async def check_ids(index: Index, repair: bool = False, batch: int = 1000) -> CheckReport:
    """Only what a crash leaves that a client can see: dangling ids (an id counted by
    /readyz that GET answers 404), a drift of the id buckets' kept count (what
    /readyz says) and a handle counter behind the ids' handles (which refuses new
    documents): the start-up pass.

    It streams the id map and asks whether each handle has a record (EXISTS), so
    it costs one cheap command per id and holds one batch, where ``check`` reads
    every band bucket and record. The band entries of a handle it drops answer
    nothing (no record); the full check removes them as orphan_bands.
    """
    report = CheckReport()
    kept = await index.store.ids.kept_count()
    part: list[tuple[str, int]] = []
    highest = 0
    async for pair in index.store.ids.mappings(batch):
        part.append(pair)
        highest = max(highest, pair[1])
        if len(part) == batch:
            await _dangling_ids(index, part, report, repair)
            part = []
    await _dangling_ids(index, part, report, repair)
    report.records = report.ids - report.found["dangling_ids"]
    ours = report.repaired["dangling_ids"]  # each unmapped one id
    await _id_count(index, report, kept, report.ids - ours, ours, repair)
    await _handle_counter(index, report, highest, repair)
    return report


async def _handle_counter(index: Index, report: CheckReport, highest: int, repair: bool) -> int:
    """Note (and with repair, undo) a handle counter behind the highest handle in use;
    the last handle to scan records up to."""
    counter = await index.store.ids.last_handle()
    if highest > counter:
        report.note(
            "handle_counter", f"counter {counter}, handle {highest} in use", highest - counter
        )
        if repair:
            # What it moved, which a writer's INCRBY since the read may have made less.
            moved = await index.store.ids.raise_counter(highest)
            report.repaired["handle_counter"] += highest - counter
            metrics.ORPHANS_REPAIRED.labels("handle_counter").inc(moved)
    return max(counter, highest)


async def _id_count(
    index: Index,
    report: CheckReport,
    began: tuple[int, int] | None,
    held: int,
    moved: int,
    repair: bool,
) -> None:
    """Note (and with repair, undo) a drift of the kept id count from the `held` ids a
    scan saw. began: the count and the id map's generation when the scan began; moved:
    the ids this pass itself unmapped since (each moved the generation by one). Only a
    map no other writer changed during the scan (the generation says so, adds and
    deletes that cancel out included) is compared; else the next pass does it."""
    now = await index.store.ids.kept_count()
    if began is None or now is None or now[1] != began[1] + moved or now[0] == held:
        return
    drift = held - now[0]
    report.note("id_count", f"kept count {now[0]}, ids in the buckets {held}", abs(drift))
    # Set only while the generation and the count are still these: passes of several
    # workers that found the same drift mend it once.
    if repair and await index.store.ids.set_count(now[1], now[0], held):
        report.repaired["id_count"] += abs(drift)
        metrics.ORPHANS_REPAIRED.labels("id_count").inc(abs(drift))


async def _dangling_ids(
    index: Index, part: list[tuple[str, int]], report: CheckReport, repair: bool
) -> None:
    store = index.store
    report.ids += len(part)
    have = await store.have_records([h for _, h in part])
    for (doc_id, h), there in zip(part, have, strict=True):
        if there:
            continue
        report.note("dangling_ids", f"id {doc_id!r} -> handle {h}")
        if not repair:
            continue
        # Again under the id's lock: a write in flight maps its id before its record.
        async with index.locked([doc_id]):
            (now,) = await store.ids.handles([doc_id])
            if now == h and not (await store.have_records([h]))[0]:
                if index.params.keep_text:
                    await store.delete_texts([h])
                await store.ids.forget([doc_id], [h])
                report.repaired["dangling_ids"] += 1
                metrics.ORPHANS_REPAIRED.labels("dangling_ids").inc()


async def _stale_texts(index: Index, digests: dict[int, bytes], batch: int) -> list[int]:
    """The live handles whose kept text carries another record's digest."""
    stale = []
    handles = sorted(digests)
    for first in range(0, len(handles), batch):
        part = handles[first : first + batch]
        heads = await index.store.text_heads(part, texts.DIGEST_BYTES)
        stale += [h for h, head in zip(part, heads, strict=True) if head and head != digests[h]]
    return stale


async def _repair_texts(
    index: Index, report: CheckReport, lost: list[int], stale: list[int], mapping: dict[str, int]
) -> None:
    """Remove unreachable texts, and texts that belong to no version of their record."""
    store = index.store
    if lost and not index.params.keep_text:  # none of them can be read: all go
        await store.delete_texts(lost)
        report.repaired["orphan_texts"] += len(lost)
        metrics.ORPHANS_REPAIRED.labels("orphan_texts").inc(len(lost))
    elif lost:
        still = {h async for _, h in store.ids.mappings()}
        gone = [h for h in lost if h not in still]
        present = await store.records(gone)
        gone = [h for h, raw in zip(gone, present, strict=True) if raw is None]
        await store.delete_texts(gone)
        report.repaired["orphan_texts"] += len(gone)
        metrics.ORPHANS_REPAIRED.labels("orphan_texts").inc(len(gone))
    owner = {h: i for i, h in mapping.items()}
    for h in stale:
        async with index.locked([owner[h]]):
            (raw,) = await store.records([h])
            (head,) = await store.text_heads([h], texts.DIGEST_BYTES)
            if raw is not None and head and not texts.belongs(head, raw):
                await store.delete_texts([h])
                report.repaired["stale_texts"] += 1
                metrics.ORPHANS_REPAIRED.labels("stale_texts").inc()


async def _repair(
    index: Index,
    report: CheckReport,
    bands: dict[int, list[int]],
    dangling: list[tuple[str, int]],
    orphans: dict[int, tuple[str, np.ndarray]],
    unreachable: list[int],
    stray: dict[int, np.ndarray],
    missing: dict[int, np.ndarray],
    mapping: dict[str, int],
) -> None:
    store = index.store

    def fixed(kind: str, n: int = 1) -> None:
        report.repaired[kind] += n
        metrics.ORPHANS_REPAIRED.labels(kind).inc(n)

    # Handles no id has pointed at since before the band scan: nothing can write them.
    if unreachable:
        still = {h async for _, h in store.ids.mappings()}
        gone = [h for h in unreachable if h not in still]
        if gone:
            present = await store.records(gone)
            gone = [h for h, raw in zip(gone, present, strict=True) if raw is None]
            await store.bands.remove([(h, np.asarray(bands[h], np.uint64)) for h in gone])
            fixed("orphan_bands", sum(len(bands[h]) for h in gone))
    # Everything else is checked again under the lock of the id it concerns.
    for doc_id, h in dangling:
        async with index.locked([doc_id]):
            (now,) = await store.ids.handles([doc_id])
            (raw,) = await store.records([h])
            if now == h and raw is None:
                if index.params.keep_text:
                    await store.delete_texts([h])
                await store.bands.remove([(h, np.asarray(bands.get(h, []), np.uint64))])
                await store.ids.forget([doc_id], [h])
                fixed("dangling_ids")
            elif now == h and raw is not None and records.id_of(raw) != doc_id:
                # Its handle was given again (a counter that went back) and holds another
                # id's document: only the mapping goes; bands and text are that one's.
                await store.ids.forget([doc_id], [h])
                fixed("dangling_ids")
    for h, (doc_id, keys) in orphans.items():
        async with index.locked([doc_id]):
            (now,) = await store.ids.handles([doc_id])
            (raw,) = await store.records([h])
            if now != h and raw is not None:
                await store.delete_records([h])
                if index.params.keep_text:
                    await store.delete_texts([h])
                extra = np.asarray(bands.get(h, []), np.uint64)
                await store.bands.remove([(h, np.union1d(keys, extra))])
                fixed("orphan_records")
    owner = {h: i for i, h in mapping.items()}
    for h, keys in stray.items():
        async with index.locked([owner[h]]):
            (raw,) = await store.records([h])
            if raw is not None:
                wrong = np.setdiff1d(keys, entries_of(records.unpack(raw), store))
                await store.bands.remove([(h, wrong)])
                fixed("stray_bands", len(wrong))
    for h, keys in missing.items():
        async with index.locked([owner[h]]):
            (raw,) = await store.records([h])
            if raw is not None:
                rec = records.unpack(raw)
                keep = np.intersect1d(keys, entries_of(rec, store))
                # Band keys apart from anchors, which mark differently; idempotent:
                # present entries stay as they are.
                banded = np.isin(keep, store.entry_keys(rec.band_keys))
                await store.bands.add([(h, keep[banded])], [(h, keep[~banded])])
                fixed("missing_bands", len(keep))
