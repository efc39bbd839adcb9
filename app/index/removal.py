"""Deleting many documents: by ids, or by a metadata filter a bounded step at a time.

Each deletion keeps the single delete's order and lock (app.index.documents): under
the ids' write locks, records first, then kept texts, band entries and anchors,
then ids.
A filter deletion scans records in handle order, ``step`` handles per call, and
answers with a cursor to pass back for the next step, so every call does
bounded work, a client can stop and resume, and a document stored after the
scan passed its handle is never touched. Every match is checked again under its
id's lock before it goes, so a document replaced meanwhile by one that no
longer matches stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.core import errors
from app.index import records
from app.index.expiry import now_ms
from app.index.filters import Filter
from app.index.index import Index
from app.index.sketch import anchors_of

MAX_STEP = 10_000


@dataclass(frozen=True)
class Removed:
    """What one deletion call did; cursor is where the next step starts (None: done)."""

    deleted: int
    scanned: int
    cursor: str | None


async def _delete_locked(
    index: Index, ids: Sequence[str], where: Filter | None, expect: dict[str, int] | None
) -> int:
    """Delete these ids (those still matching where, still at the expected handle)."""
    ids = list(dict.fromkeys(ids))
    if not ids:
        return 0
    store = index.store
    async with index.locked(ids):
        handles = await store.ids.handles(ids)
        known = [
            (i, h)
            for i, h in zip(ids, handles, strict=True)
            if h is not None and (expect is None or expect.get(i) == h)
        ]
        raws = await store.records([h for _, h in known])
        gone = [
            (i, h, records.unpack(raw))
            for (i, h), raw in zip(known, raws, strict=True)
            if raw is not None and (where is None or where.matches_record(raw))
        ]
        await store.delete_records([h for _, h, _ in gone])
        dangling = [(i, h) for (i, h), raw in zip(known, raws, strict=True) if raw is None]
        if index.params.keep_text:  # after the records that point at them
            dropped = dangling if where is None else []
            await store.delete_texts([h for _, h, _ in gone] + [h for _, h in dropped])
        await store.bands.remove(
            [(h, rec.band_keys) for _, h, rec in gone]
            + [(h, anchors_of(rec)) for _, h, rec in gone]
        )
        # An id without a record (a write that crashed before its record) goes too,
        # when deleting by id: the id is free again either way.
        forget = [(i, h) for i, h, _ in gone] + (dangling if where is None else [])
        if forget:
            await store.ids.forget([i for i, _ in forget], [h for _, h in forget])
        # Last, as Index.delete does: the sweeper has nothing left to do for them.
        await store.drop_expiries([h for _, h, rec in gone if rec.expires_ms])
    # An expired document answered nothing already: it was not there to delete.
    at = now_ms()
    return sum(1 for _, _, rec in gone if not rec.expires_ms or rec.expires_ms > at)


async def delete_ids(index: Index, ids: Sequence[str]) -> int:
    """Delete these documents; the number that existed."""
    return await _delete_locked(index, ids, None, None)


def parse_cursor(cursor: str | None) -> int:
    """The handle a filter deletion resumes at, from the cursor it answered."""
    if cursor is None:
        return 1
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 12 or int(cursor) < 1:
        raise errors.Invalid(f"cursor {cursor!r} is not one this service gave; omit it to start")
    return int(cursor)


async def delete_where(index: Index, where: Filter, cursor: str | None, step: int) -> Removed:
    """One bounded step of deleting every document that matches where."""
    if not 1 <= step <= MAX_STEP:
        raise errors.Invalid(f"step must be 1 to {MAX_STEP}")
    first = parse_cursor(cursor)
    last = await index.store.ids.last_handle()
    end = min(first + step, last + 1)
    handles = list(range(first, end))
    raws = await index.store.records(handles)
    matched = {
        records.id_of(raw): h
        for h, raw in zip(handles, raws, strict=True)
        if raw is not None and where.matches_record(raw)
    }
    deleted = await _delete_locked(index, list(matched), where, matched)
    return Removed(deleted, len(handles), str(end) if end <= last else None)
