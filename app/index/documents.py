"""One document by id: its reads (handle, live record, kept text) and its removal
(DELETE, and the sweeper's removal of an expired one), in the order that leaves a
crash harmless. Deletes by many ids or by filter are app.index.removal's."""

from __future__ import annotations

from app.index import records, texts
from app.index.expiry import live
from app.index.locks import locked
from app.index.params import Params
from app.index.sites import Sites
from app.index.sketch import anchors_of
from app.store import Store

# How many times read() takes a record and its kept text again when they are of two
# versions (a replace in flight); past it, the text is null, as after a crash.
READ_TRIES = 4


async def stored(store: Store, doc_id: str) -> tuple[int, bytes] | None:
    """The handle and packed record of a live (stored, unexpired) document."""
    handle, raw = await store.stored(doc_id)
    if handle is None:
        return None
    (raw,) = live([raw])
    # A record answers only for its own id (a damaged store may map another id here).
    return None if raw is None or records.id_of(raw) != doc_id else (handle, raw)


async def get(store: Store, doc_id: str) -> records.Record | None:
    """A live document's record, or None."""
    found = await stored(store, doc_id)
    return None if found is None else records.unpack(found[1])


async def read(
    store: Store, params: Params, doc_id: str
) -> tuple[records.Record, str | None] | None:
    """A document's record and its kept text (None when the collection keeps none,
    or when a write that crashed left another version's text)."""
    for _ in range(READ_TRIES):
        found = await stored(store, doc_id)
        if found is None:
            return None
        handle, raw = found
        if not params.keep_text:
            return records.unpack(raw), None
        (packed,) = await store.texts([handle])
        text = texts.unpack(packed, raw)
        if text is not None or packed is None:  # none kept (an import): nothing to wait for
            break
        # A replace writes its text before its record: read between the two, the text
        # is the next version's. Read both again rather than answer a null text.
    return records.unpack(raw), text


async def delete(store: Store, params: Params, doc_id: str) -> bool:
    """Remove a document; False if there was none (or it had expired)."""
    async with locked(store, [doc_id]):
        (handle,) = await store.ids.handles([doc_id])
        if handle is None:
            return False
        (raw,) = await store.records([handle])
        await remove(store, params, doc_id, handle, raw)
        return live([raw]) != [None]


async def expire(store: Store, params: Params, doc_id: str, handle: int, at_ms: int) -> bool:
    """The sweeper's delete of one queued handle whose record names doc_id: removed
    as DELETE removes it if it has expired by at_ms; else its queue entry is set
    right (a replace that changed the expiry and stopped before its last step)."""
    async with locked(store, [doc_id]):
        (current,) = await store.ids.handles([doc_id])
        (raw,) = await store.records([handle])
        if raw is None:
            await store.drop_expiries([handle])
            return False
        expires = records.expires_of(raw)
        if expires == 0 or expires > at_ms:
            if expires == 0 or current != handle:  # a ghost's is the check's to remove
                await store.drop_expiries([handle])
            else:
                await store.add_expiries([(handle, expires)])
            return False
        await remove(store, params, doc_id, handle, raw)
        return True


async def remove(store: Store, params: Params, doc_id: str, handle: int, raw: bytes | None) -> None:
    """Remove one handle's record, text, band entries, id and queue entry, under the
    id's lock (delete and expire: one delete).

    A live record goes first, so nothing answers for the document from the first
    step. An expired one answers nothing already, so it goes last: a sweep cut off
    midway leaves the record, and with it the band keys and the queue entry, for
    the next sweep to finish the job.
    """
    visible = raw is not None and live([raw]) != [None]
    if visible:
        await store.delete_records([handle])
    if params.keep_text:
        await store.delete_texts([handle])
    if raw is not None:
        rec = records.unpack(raw)
        await store.bands.remove([(handle, rec.band_keys), (handle, anchors_of(rec))])
        await Sites(store, params.template_pages).forget_page(doc_id, rec.metadata)
    # A mapping without a record (a write that crashed before its record)
    # goes too: the id is free again either way.
    await store.ids.forget([doc_id], [handle])
    if raw is not None and not visible:
        await store.delete_records([handle])
    if raw is not None and records.expires_of(raw):
        await store.drop_expiries([handle])
