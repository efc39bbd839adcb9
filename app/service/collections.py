"""The collections a service serves, all on one store connection.

The default one (NEARDUP_COLLECTION) is opened at start-up from the settings, as
before collections were resources; every other is opened the first time a request
names it and kept (its parameters never change). New collections take the
parameters a request gives, each defaulting to the service's own setting.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import asdict
from typing import Any

from pydantic import ValidationError

from app.core import errors, metrics
from app.core.settings import PARAMETERS_ONLY, Settings, rule_said
from app.index import Index, collections
from app.index.candidates import DISCOVERY_BUDGET
from app.index.errors import DeletingError
from app.index.params import Params
from app.service.runtime import UncheckedIndex, params_of
from app.store import MAX_INLINE, Store

log = logging.getLogger("neardup")

# The parameters a collection is made with: those of Params.create that are settings
# (so a parameter added to both is accepted by POST /collections without a list here).
PARAMETERS = tuple(
    n for n in inspect.signature(Params.create).parameters if n in Settings.model_fields
)


def params_with(settings: Settings, given: dict[str, Any]) -> Params:
    """The parameters of a collection: those given, the rest from settings, checked by
    the settings' own rules (ranges, the shingle spec, passages vs shingles)."""
    unknown = sorted(set(given) - set(PARAMETERS))
    if unknown:
        raise errors.Invalid(f"unknown parameters {unknown}; a collection takes {PARAMETERS}")
    try:
        # model_validate reads no environment: only these values are checked.
        merged = Settings.model_validate(
            {**settings.model_dump(), **given}, context=PARAMETERS_ONLY
        )
    except ValidationError as exc:
        # Each refused parameter; a rule across parameters (empty loc) is the request's
        # and names them in its message.
        refusals = [
            {"field": ".".join(map(str, e["loc"])) or "request", "message": rule_said(e)}
            for e in exc.errors()
        ]
        why = "; ".join(
            r["message"] if r["field"] == "request" else f"{r['field']}: {r['message']}"
            for r in refusals
        )
        raise errors.Invalid(why, refusals) from None
    return params_of(merged)


async def describe(index: Index, name: str) -> dict[str, Any]:
    """A collection's fixed parameters, its size, and the bounds of a query's work
    (GET /collections/{name}, which the report page reads, and neardup collections)."""
    return {
        "name": name,
        "documents": await index.count(),
        "parameters": asdict(index.params),
        "candidate_cap": index.candidate_cap,
        # A band with more documents than this is hot (kept in a sorted set of its own).
        "hot_band_size": MAX_INLINE,
        # A query reads every member of its bands while they hold at most this many
        # handles together; past it, an even share of each (its work stays bounded).
        "discovery_budget": DISCOVERY_BUDGET * index.candidate_cap,
        # What the cap did to this process's queries so far, every collection together
        # (the same as /metrics).
        "since_start": {
            "queries": _sample(metrics.CANDIDATES, "_count"),
            "capped": _sample(metrics.CANDIDATES_CAPPED, "_total"),
            "verified": _sample(metrics.CANDIDATES_VERIFIED, "_total"),
            "kept": _sample(metrics.CANDIDATES_KEPT, "_total"),
        },
    }


def _sample(metric: Any, suffix: str) -> int:
    """The value of an unlabelled metric's sample with this suffix (prometheus_client's
    public collect(), not its internals)."""
    return int(sum(s.value for f in metric.collect() for s in f.samples if s.name.endswith(suffix)))


class Collections:
    """Indexes by collection name; the default one is the service's own."""

    def __init__(self, default: Index, settings: Settings) -> None:
        self.default = default
        self.settings = settings
        self._open: dict[str, Index] = {}
        self._raw: dict[str, bytes] = {}  # the config each open index was made from
        self._left_out: set[str] = set()  # collections served() could not open, logged

    def _store(self, name: str) -> Store:
        return self.default.store.sibling(name)

    async def get(self, name: str | None = None) -> Index:
        """The index of a collection (None: the default one); NotFound if there is none."""
        if name is None or name == self.settings.collection:
            if isinstance(self.default, UncheckedIndex):
                await self.default.check()  # 503 while Redis is away, as before
            return self.default
        collections.check_name(name)
        index = self._open.get(name)
        store = index.store if index is not None else self._store(name)
        # One GET per request: a collection another process deleted (or is deleting, or
        # deleted and made anew) is never written through an index opened before.
        raw = await store.read_config()
        if index is None or raw != self._raw.get(name):
            s = self.settings
            index = collections.open_config(store, raw, s.candidate_cap, s.max_text_bytes)
            self._open[name], self._raw[name] = index, raw  # type: ignore[assignment]
        return index

    async def create(self, name: str, given: dict[str, Any]) -> tuple[Index, bool]:
        """The collection made with these parameters, and whether this call made it."""
        collections.check_name(name)
        params = params_with(self.settings, given)
        default = name == self.settings.collection
        if default and isinstance(self.default, UncheckedIndex):
            # Opened without its check (a tool on another collection): the default one
            # is made from the settings first, as opening it would have, and compared.
            await self.default.check()
        store = self.default.store if default else self._store(name)
        s = self.settings
        index, created = await collections.create(
            store, params, s.candidate_cap, s.max_text_bytes, asked=given.keys()
        )
        return (self.default if default else index), created

    async def delete(self, name: str, steps: int | None = None) -> bool:
        """Delete a collection (see app.index.collections.delete); True once it is gone."""
        collections.check_name(name)
        if name == self.settings.collection:
            raise errors.Conflict(
                f"{name!r} is this service's NEARDUP_COLLECTION: it cannot be deleted while "
                "served; restart the service with another NEARDUP_COLLECTION first"
            )
        self._open.pop(name, None)
        self._raw.pop(name, None)
        return await collections.delete(self._store(name), steps)

    async def served(self) -> list[Index]:
        """The index of every collection there is (the default one first), for the
        background tasks that work on each (the expiry sweeper, the start-up check); one
        that cannot be opened (made by another release, a name refused) is logged and
        left out, not every one after it."""
        found = [self.default]
        for name in sorted(set(await self.default.store.registered()) - {self.settings.collection}):
            try:
                found.append(await self.get(name))
            except (DeletingError, collections.NoCollectionError):
                continue
            except errors.Unavailable:
                raise
            except errors.NeardupError as exc:
                if name not in self._left_out:  # once a process: the sweeper asks often
                    self._left_out.add(name)
                    log.warning("collection %r left out of the background work: %s", name, exc)
        return found

    async def listing(self) -> list[dict[str, Any]]:
        """Every collection with its number of documents; one being deleted says so."""
        names = set(await self.default.store.registered()) | {self.settings.collection}
        found: list[dict[str, Any]] = []
        for name in sorted(names):
            try:
                index = await self.get(name)
            except DeletingError:
                found.append({"name": name, "documents": None, "deleting": True})
                continue
            except collections.NoCollectionError:
                continue  # registered by a create that crashed before its config
            found.append({"name": name, "documents": await index.count(), "deleting": False})
        return found
