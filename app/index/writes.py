"""The write protocol: an ingest's rounds, and one round's writes under its ids' locks
(app.index.locks), in an order that needs no multi-key transaction.

Band memberships (band keys, then passage anchors) first, the kept text, the record
last; then the band entries the replaced version had and the new one has not. A
reader only trusts what a record says, so a crash between steps never shows a
half-written document, and re-sending repairs it. An expiring document is queued
before anything else is written, so no record expires unqueued.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from app.index import documents, records, texts
from app.index.errors import CollectionChangedError, ExpiryError, HandleCounterError
from app.index.expiry import MAX_TTL_S, live, now_ms
from app.index.locks import locked
from app.index.params import Params
from app.index.pieces import Pieces
from app.index.results import Document, IngestResult
from app.index.similarity import query
from app.index.sites import Sites
from app.index.sketch import Sketched, anchors_of, sketch
from app.store import Store

# The most documents (or ids) one call of the service takes: an ingest batch, a delete
# by ids, an import (app.api.schemas and app.index.transfer take it from here; the
# client restates it as app.client.MAX_BATCH, held equal by tests/test_client_cli.py).
MAX_BATCH = 1000


async def ingest(
    pieces: Pieces,
    docs: Sequence[Document],
    similar: bool,
    threshold: float,
    limit: int,
    stored: bool = False,
) -> list[IngestResult]:
    """Store documents (replacing any with the same id), one result each; with
    similar, each result carries the near-duplicates found before it was stored (at
    threshold, checked). A text with no words is refused in its result. stored: the
    pages are stored already and judged again now that their site's template is fixed
    (Sites.judge)."""
    store = pieces.store
    expires = expiries(pieces.params, docs)
    ids = [d.id if d.id is not None else uuid.uuid4().hex for d in docs]
    sites = Sites(store, pieces.params.template_pages)
    judged = await sites.judge(docs, ids, stored)  # each page's own text
    sk = await sketch(pieces.params, judged.texts, pieces.max_text_bytes)
    if judged.template_only:
        # Kept whole, and with no text of its own: answered as thin (Sites.thin_record).
        own = np.array(sk.shingles, copy=True)
        own[judged.template_only] = 0
        sk = replace(sk, shingles=own)
    results = [IngestResult(ids[i], int(sk.shingles[i])) for i in range(len(docs))]
    for i, r in enumerate(results):
        if (r.shingles == 0 and i not in judged.template_only) or judged.errors[i]:
            r.error = judged.errors[i] or "the text has no words (letters or digits) to compare"
            judged.errors[i] = r.error
    for i, d in enumerate(docs):  # the API checks this first; the CLI's lines come here
        problem = records.metadata_problem(d.metadata)
        if problem is not None and results[i].error is None:
            results[i].error = judged.errors[i] = problem
    good = [i for i, r in enumerate(results) if r.error is None]
    if similar:
        known = dict(zip(ids, await store.ids.handles(ids), strict=True))
        for i in good:
            # By id as well: a writer of the same id may have mapped it meanwhile.
            found = await query(
                pieces, sk.fingerprint(i), sk.band_keys[i], known[ids[i]], threshold, limit,
                exclude_id=ids[i],
            )  # fmt: skip
            # The answer says the page is thin, as a query of it with its site does.
            thin = sites.thin_page(docs[i], ids[i], int(sk.shingles[i]))
            results[i].similar = replace(found, thin=True) if thin else found
    # A batch may name an id twice: later occurrences go in later rounds,
    # so the last one wins and each round writes each id once.
    rounds: list[list[int]] = []
    seen: dict[str, int] = {}
    for i in good:
        n = seen.get(ids[i], 0)
        seen[ids[i]] = n + 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(i)
    for batch in rounds:
        created = await write(
            store,
            pieces.params,
            [ids[i] for i in batch],
            [(i, docs[i].metadata) for i in batch],
            sk,
            [judged.texts[i] for i in batch],
            [expires[i] for i in batch],
            [not docs[i].html for i in batch],
            pieces.config,
        )
        for i, c in zip(batch, created, strict=True):
            results[i].created = c
    await sites.forget_replaced([docs[i] for i in good], [ids[i] for i in good])
    await sites.settle(
        lambda again: ingest(pieces, again, False, threshold, limit, stored=True),
        lambda doc_id: documents.get(store, doc_id),
        docs,
        judged,
    )
    return results


def expiries(params: Params, docs: Sequence[Document]) -> list[int]:
    """When each document expires (ms since the epoch; 0: never): its own expiry,
    else the collection's default_ttl from now; one already past is refused."""
    now = now_ms()
    default = now + 1000 * params.default_ttl if params.default_ttl else 0
    out = [default if d.expires_ms is None else d.expires_ms for d in docs]
    for i, ms in enumerate(out):
        if ms and ms <= now:
            where = f"document {i}" if len(docs) > 1 else "the document"
            raise ExpiryError(f"{where} would expire in the past; give a later expiry")
        if ms > now + 1000 * MAX_TTL_S:  # every way in (API, CLI, import): one bound
            where = f"document {i}" if len(docs) > 1 else "the document"
            raise ExpiryError(f"{where} would expire over 100 years ({MAX_TTL_S} s) from now")
    return out


async def write(
    store: Store,
    params: Params,
    ids: list[str],
    items: list[tuple[int, dict | None]],
    sk: Sketched,
    bodies: list[str] | None = None,
    expires: list[int] | None = None,
    plain: list[bool] | None = None,
    fence: bytes | None = None,
) -> list[bool]:
    """Write one round (each id once) under the ids' locks; items are each id's
    text number in sk and metadata; bodies are the texts to keep (None: an import of
    sketches, which has none), expires when each expires (ms since the epoch, 0 or
    None: never), plain whether each was sent as text, not as a page (None: none
    was). Returns whether each id was new.

    fence: the stored config the write's parameters came from. Just before the kept texts
    and the records (which make the round visible) it must still be the stored one; a
    collection deleted, or deleted and made anew, while the round ran gets none of its
    records, and the ids it mapped are taken back (CollectionChangedError): its band
    entries answer nothing and the check removes them."""
    ends = expires if expires is not None else [0] * len(ids)
    texts_only = plain if plain is not None else [False] * len(ids)
    async with locked(store, ids):
        handles, made = await _assign(store, ids)
        added: list[tuple[int, np.ndarray]] = []  # the band entries this round adds
        # Each replaced version's band keys and anchors, read from its record once.
        prior: list[tuple[np.ndarray, np.ndarray] | None] = []
        try:
            old = await store.records(handles)
            taken = _taken(ids, old)
            # Ids mapped before this write to a handle that holds another id's record (a
            # write of theirs that never got its record, then a counter that went back
            # gave the handle again): unmapped, and each given a new handle.
            stale = [j for j in taken if not made[j]]
            if stale:
                await store.ids.forget([ids[j] for j in stale], [handles[j] for j in stale])
                handles, again = await _assign(store, ids)
                made = [m or a for m, a in zip(made, again, strict=True)]
                old = await store.records(handles)
                taken = _taken(ids, old)
            if taken:
                raise _counter_behind(ids[taken[0]], handles[taken[0]], old[taken[0]])
            pairs = list(zip(handles, items, strict=True))
            new = _packed(
                ids, items, sk, ends, texts_only, params.fingerprint_bits < 32, params.short_keys
            )
            # Queued before anything else is written, so no record expires unqueued.
            await store.add_expiries([(h, e) for h, e in zip(handles, ends, strict=True) if e])
            # Band keys, then passage anchors: one exchange (one script reply per
            # call on a single server).
            anchors = [sk.anchors(i) for _, (i, _) in pairs]
            bands = [(h, sk.band_keys[i]) for h, (i, _) in pairs]
            anchored = [(h, a) for (h, _), a in zip(pairs, anchors, strict=True)]
            prior = [None if raw is None else _entries_of(records.unpack(raw)) for raw in old]
            added = _added(bands + anchored, prior)
            await store.bands.add(bands, anchored)
            # Before the text, not between it and its record: a reader that finds the
            # next version's text beside this record reads both again, and the window
            # between the two stays one write.
            if fence is not None and await store.read_config() != fence:
                raise CollectionChangedError(
                    f"collection {store.collection!r} was deleted (or deleted and made "
                    "anew) while this write ran; nothing of it was stored: retry on the "
                    "collection as it is now"
                )
            if params.keep_text and bodies is not None:
                # Before the record that points at it; it carries that record's digest.
                kept = [texts.pack(t, raw) for t, raw in zip(bodies, new, strict=True)]
                await store.put_texts(list(zip(handles, kept, strict=True)))
        except BaseException as exc:
            # No record of the round is written yet: the ids this call mapped and the
            # band entries it added are taken back, so a refused write (a 507, a 503, the
            # request's deadline cancelling it) leaves no dangling id and no orphan entry.
            # Not the entries when the collection was made anew meanwhile: the same keys
            # and handles may be the new collection's own by now.
            mine = () if isinstance(exc, CollectionChangedError) else added
            await asyncio.shield(_unmap(store, ids, handles, made, added=mine))
            raise
        try:
            await store.put_records(list(zip(handles, new, strict=True)))
        except BaseException:
            # Some records may be written (each SET on its own): only the ids this call
            # mapped whose record is not there are taken back, with their entries.
            await asyncio.shield(_unmap(store, ids, handles, made, written=True, added=added))
            raise
        if params.keep_text and bodies is None:
            await store.delete_texts(handles)  # a replaced version's, now stale
        stale_bands, stale_anchors = [], []
        for (h, (i, _)), now, was in zip(pairs, anchors, prior, strict=True):
            if was is not None:
                stale_bands.append((h, np.setdiff1d(was[0], sk.band_keys[i])))
                stale_anchors.append((h, np.setdiff1d(was[1], now)))
        await store.bands.remove([(h, k) for h, k in stale_bands + stale_anchors if len(k)])
        # A replaced version's queue entry, now that its record no longer expires.
        await store.drop_expiries(
            [
                h
                for h, e, raw in zip(handles, ends, old, strict=True)
                if not e and raw is not None and records.expires_of(raw)
            ]
        )
        return [raw is None for raw in live(old)]


async def _assign(store: Store, ids: list[str]) -> tuple[list[int], list[bool]]:
    """store.ids.assign(ids). When it fails, Redis may have mapped them with the reply
    lost (a timeout, the request's deadline cancelling the wait): which ones is unknown
    here, so the store is marked for the sweeper's id check, which takes back any left
    without a record."""
    try:
        return await store.ids.assign(ids)
    except BaseException:
        store.ids_to_check = True
        raise


def _packed(
    ids: list[str],
    items: list[tuple[int, dict | None]],
    sk: Sketched,
    ends: list[int],
    texts_only: list[bool],
    shifted: bool,
    short_keys: bool,
) -> list[bytes]:
    """The round's records, packed (fingerprints compressed in one kernel call; shifted:
    a collection's 24-bit fingerprints, stored without their zero low bits; short_keys:
    band keys of only their place's bits, 6 bytes each)."""
    fingerprints = [sk.fingerprint(i) for i, _ in items]
    encoded = records.encode_many(fingerprints, shifted)
    sections = records.band_sections(sk.band_keys[[i for i, _ in items]], short_keys)
    out = []
    for j, (doc_id, (i, meta)) in enumerate(zip(ids, items, strict=True)):
        out.append(
            records.pack(
                doc_id,
                fingerprints[j],
                sk.band_keys[i],
                int(sk.shingles[i]),
                meta,
                sk.passages(i),
                ends[j],
                encoded[j],
                texts_only[j],
                short_keys=short_keys,
                band_section=sections[j],
            )
        )
    return out


def _taken(ids: list[str], old: list[bytes | None]) -> list[int]:
    """The places of the round whose handle holds another id's record."""
    return [j for j, raw in enumerate(old) if raw is not None and records.id_of(raw) != ids[j]]


def _counter_behind(doc_id: str, h: int, raw: bytes | None) -> HandleCounterError:
    """Why a round is refused whose new handle holds another id's record: a handle is
    never given twice, so the counter went back (its key was lost), and writing would
    overwrite."""
    other = records.id_of(raw) if raw is not None else "?"
    return HandleCounterError(
        f"the collection's handle counter is behind its documents: handle {h} for "
        f"{doc_id!r} holds {other!r} (was the counter's key lost to an eviction policy, a "
        "failover to a replica that lagged, or a DEL?); nothing was written. Run "
        "`neardup check --repair`, which moves the counter past every handle in use, then "
        "retry"
    )


def _entries_of(rec: records.Record) -> tuple[np.ndarray, np.ndarray]:
    """A stored version's band keys and passage anchors."""
    return rec.band_keys, anchors_of(rec)


def _added(
    bands: list[tuple[int, np.ndarray]], prior: list[tuple[np.ndarray, np.ndarray] | None]
) -> list[tuple[int, np.ndarray]]:
    """Of each handle's band entries (band keys, then anchors, handle by handle as in
    prior), those its stored version (prior: _entries_of, None for a new one) lacks."""
    n = len(prior)
    out = []
    for k, (h, keys) in enumerate(bands):
        was = prior[k % n]
        if was is not None:
            keys = np.setdiff1d(keys, was[0] if k < n else was[1])
        if len(keys):
            out.append((h, keys))
    return out


async def _unmap(
    store: Store,
    ids: list[str],
    handles: list[int],
    made: list[bool],
    written: bool = False,
    added: Sequence[tuple[int, np.ndarray]] = (),
) -> None:
    """Take back the id mappings this write made and the band entries it `added`, those
    of a handle with a record left alone when some may be `written` (best effort: Redis
    may be what failed, and the check mends what is left)."""
    mapped = [j for j, m in enumerate(made) if m]
    try:
        if written and mapped:
            there = await store.have_records([handles[j] for j in mapped])
            mapped = [j for j, t in zip(mapped, there, strict=True) if not t]
        if mapped:
            await store.ids.forget([ids[j] for j in mapped], [handles[j] for j in mapped])
    except Exception:  # the sweeper's id check mends it once Redis answers (ids_to_check)
        store.ids_to_check = True
        return
    # After the ids, on their own: taking a handle out of a field it shares rewrites the
    # field, which a Redis at its maxmemory may refuse; the ids' HDELs it takes.
    unmapped = {handles[j] for j in mapped}
    drop = [(h, k) for h, k in added if not written or h in unmapped]
    if drop:
        with contextlib.suppress(Exception):  # what is left, the check removes
            await store.bands.remove(drop)
