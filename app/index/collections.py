"""Collections by name on one Redis: open, create, delete in bounded steps.

A collection is its config key plus everything else under ``nd:{name}:``; the
registry (app.store.store.REGISTRY) lists the names. Creating registers the name
first and writes the config last; deleting marks the config first (the collection
is then refused to readers and writers), unlinks the other keys a batch at a time,
and removes the config and the name last. So a crash at any step leaves a state
that the same request, sent again, completes.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, replace

import orjson

from app.core import errors
from app.core.names import COLLECTION_RULE, valid_collection
from app.index.index import Index
from app.index.params import DELETING, Params
from app.store import Store

# Keys unlinked per step of a delete: one SCAN's worth, a bounded pause for Redis.
DROP_BATCH = 500


class CollectionNameError(errors.Invalid):
    title = "Invalid collection name"
    field = "name"  # the body's name on POST /collections, the path's elsewhere


class NoCollectionError(errors.NotFound):
    """No collection has this name."""


class ParameterConflictError(errors.Conflict):
    """The collection exists with other parameters."""


def check_name(name: str) -> None:
    """Raise CollectionNameError unless name may name a collection."""
    if not valid_collection(name):
        raise CollectionNameError(f"collection name {name!r}: use {COLLECTION_RULE}")


def open_config(store: Store, raw: bytes | None, candidate_cap: int, max_text_bytes: int) -> Index:
    """The collection of store, whose stored config (Store.read_config) is raw."""
    if raw is None:
        raise NoCollectionError(f"no collection named {store.collection!r}")
    return Index(store, Params.stored(raw), candidate_cap, max_text_bytes, config=raw)


async def create(
    store: Store,
    params: Params,
    candidate_cap: int,
    max_text_bytes: int,
    asked: Collection[str] = (),
) -> tuple[Index, bool]:
    """The collection of store made with params, and whether this call made it.

    Asking again with the same parameters is answered with the collection as it
    is; with other parameters it is a ParameterConflictError that names them. Of an
    existing collection, the storage formats are the stored ones, and so are the
    fingerprint's bits and the band buckets unless `asked` names them (Params.keeping).
    """
    proposed = params.to_json_made()
    raw = await store.read_config()
    created = raw is None
    if raw is None:
        await store.register()
        raw = await store.config(proposed)  # SET NX: of two concurrent creators, one wins
    stored = Params.stored(raw)
    if b'"template_pages"' not in raw:
        # Made before site templates: it has none, and asking again is not a conflict.
        params = replace(params, template_pages=0)
    params = params.keeping(stored, asked)
    if stored != params:
        theirs, ours = asdict(stored), asdict(params)
        diff = ", ".join(
            f"{k}: stored {theirs[k]!r}, asked {ours[k]!r}" for k in ours if ours[k] != theirs[k]
        )
        raise ParameterConflictError(
            f"collection {store.collection!r} exists with other parameters ({diff}); "
            "ask for the stored ones, or choose another name"
        )
    return Index(store, stored, candidate_cap, max_text_bytes, config=raw), created


async def delete(store: Store, steps: int | None = None, batch: int = DROP_BATCH) -> bool:
    """Delete the collection of store, `batch` keys a step; True once it is gone.

    With steps, stop after that many (False: not finished; calling again goes on).
    """
    raw = await store.read_config()
    if raw is None:
        # Gone already; but a write that was in flight when the delete began may have
        # landed after the SCAN passed its key: that is removed (204), else 404.
        known = store.collection in await store.registered()
        if not known and await store.drop_some(batch) == 0:
            raise NoCollectionError(f"no collection named {store.collection!r}")
    else:
        fields = orjson.loads(raw)
        if not fields.get(DELETING):
            # First of all: from here on the collection is refused to every request.
            fields[DELETING] = True
            await store.replace_config(orjson.dumps(fields, option=orjson.OPT_SORT_KEYS))
    taken = 0
    while steps is None or taken < steps:
        taken += 1
        if await store.drop_some(batch) == 0:
            await store.drop_config()
            return True
    return False
