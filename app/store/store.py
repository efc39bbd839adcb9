"""One collection's data in Redis, as the index asks for it: configuration, write
locks, document records, texts and expiries, and the read scripts that rank a query's
candidates; its id map (ids.py), band memberships (bands.py) and site templates
(templates.py) as parts of it.

Where each thing lives is layout.py's; how commands reach Redis, one server or
a cluster, is the transport's (transport.py). Correctness comes from write
order (bands first, record last; delete record first) in app.index.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from app.core.redis_url import parse_cluster_url
from app.store import scripts
from app.store.bands import Bands
from app.store.cluster import ClusterTransport
from app.store.errors import StoreError
from app.store.ids import IdMap
from app.store.layout import Layout
from app.store.resp import Eval, Interleaved, MGet, Rows, scored
from app.store.single import SingleTransport
from app.store.templates import SiteTemplates
from app.store.transport import Transport

# The names of the collections made on this Redis (a SET outside every collection's
# keys: '@' is in no collection name).
REGISTRY = b"nd:@collections"
# Locks an unlock_many call releases (single server): Redis runs nothing else while a
# script runs, and an ingest of MAX_BATCH ids goes as two calls.
LOCKS_PER_CALL = 500


@dataclass(frozen=True)
class Candidates:
    """A query's candidates (Store.candidates): handles ascending, the record of each
    (None where there is none), whether any was left out, and how many hot band keys
    were read only in part."""

    handles: np.ndarray
    records: list[bytes | None]
    capped: bool
    cut: int


def _ranked(reply: list[Any]) -> Candidates:
    """Candidates from what scripts/rank.lua answers: capped, cut, n, n handles, n records."""
    capped, cut, n, *rest = reply
    return Candidates(np.array(rest[:n], dtype=np.int64), rest[n:], bool(capped), int(cut))


@dataclass(frozen=True)
class Memory:
    """A Redis master's used_memory against its maxmemory (0: no limit), and what it
    does when full (maxmemory_policy: only `noeviction` keeps an index whole)."""

    used: int
    limit: int
    policy: str
    # What to tell an operator when this or another master deletes keys when full.
    evicting: str | None = None

    @classmethod
    def of(cls, info: dict[str, Any]) -> Memory:
        return cls(
            int(info.get("used_memory", 0)),
            int(info.get("maxmemory", 0)),
            str(info.get("maxmemory_policy", "")),
        )

    @property
    def fraction(self) -> float:
        return self.used / self.limit if self.limit else 0.0

    def eviction_warning(self) -> str | None:
        """Why this master can lose documents silently (a maxmemory and a policy that
        deletes keys at it), or None."""
        if not self.limit or self.policy == "noeviction":
            return None
        return (
            f"Redis has maxmemory {self.limit} with maxmemory-policy {self.policy}: when "
            "full it deletes keys, and the index loses documents; set maxmemory-policy "
            "noeviction (writes are then refused with 507 when full, and nothing is lost)"
        )


class Store:
    """One collection's keys on one Redis server or cluster."""

    def __init__(self, transport: Transport, collection: str) -> None:
        self.transport = transport
        self.collection = collection
        # A write could not take back the ids it mapped (Redis failed it): the background
        # sweeper runs the id check (app.index.check.check_ids) once Redis answers.
        self.ids_to_check = False
        self._keys = Layout(collection)
        # The id map (app.store.ids): its own keys and operations.
        self.ids = IdMap(transport, self._keys)
        self._scripted = not transport.cluster
        # The band memberships (app.store.bands): their own keys and operations.
        self.bands = Bands(transport, self._keys)
        # Site templates (app.store.templates): their own keys and operations.
        self.templates = SiteTemplates(transport, self._keys.prefix)

    @property
    def scripted(self) -> bool:
        """Whether reads (and the id map's writes) go through the scripts that build their
        own keys (one exchange a step); a cluster refuses those, so it keeps the per-node
        pipelines. Tests turn it off to compare the two on one server."""
        return self._scripted

    @scripted.setter
    def scripted(self, on: bool) -> None:
        self._scripted = self.ids.scripted = on

    def sibling(self, collection: str) -> Store:
        """Another collection's store on this one's connection (closing one closes both)."""
        return Store(self.transport, collection)

    @classmethod
    def connect(
        cls,
        url: str,
        collection: str,
        timeout: float,
        *,
        min_replicas: int = 0,
        replica_timeout: float = 1.0,
        read_from_replicas: bool = False,
        replica_urls: Sequence[str] = (),
    ) -> Store:
        """A store on the server at url (redis://, rediss:// or unix://), or on the
        Redis Cluster a redis+cluster://host:port[,host:port...] URL names.

        A command fails after one timeout, never more (transport.client_options);
        with min_replicas, a write may also wait replica_timeout for its replicas.
        With read_from_replicas, the reads of queries (app.store.reads) may go to a
        cluster's replicas, or to the single server's replicas at replica_urls.
        """
        limits = (timeout, min_replicas, replica_timeout)
        cluster = parse_cluster_url(url)
        transport: Transport
        if cluster is None:
            urls = replica_urls if read_from_replicas else ()
            transport = SingleTransport.connect(url, *limits, replica_urls=urls)
        else:
            transport = ClusterTransport.connect(
                cluster, *limits, read_from_replicas=read_from_replicas
            )
        return cls(transport, collection)

    def use_band_buckets(
        self,
        buckets: int,
        short_anchors: bool = False,
        short_fields: bool = False,
        packed_spills: bool = False,
        field_bytes: int = 4,
        marks: bool = False,
    ) -> None:
        """Set the collection's number of band buckets (a power of two), whether its
        anchors' keys are 4-byte fields (layout.Layout.use_short_anchors) or every key's
        low field_bytes (layout.Layout.use_short_fields), whether hot bands spill to
        packed STRINGs (layout.Layout.use_packed_spills), and whether it keeps the marks
        of documents that share a band key (layout.Layout.use_marks)."""
        self._keys.use_band_buckets(buckets)
        self._keys.use_short_anchors(short_anchors)
        self._keys.use_short_fields(short_fields, field_bytes)
        self._keys.use_packed_spills(packed_spills)
        self._keys.use_marks(marks)

    def entry_keys(self, keys: np.ndarray) -> np.ndarray:
        """Each band key as bands.memberships gives it back (layout.Layout.entry_keys)."""
        return self._keys.entry_keys(keys)

    @property
    def cluster(self) -> bool:
        """Whether this store is on a Redis Cluster."""
        return self.transport.cluster

    async def ping(self) -> bool:
        return await self.transport.ping()

    async def fewest_replicas(self) -> int:
        """The number of replicas connected to the master with the fewest (each master)."""
        return await self.transport.fewest_replicas()

    async def fsync_always(self) -> str | None:
        """Ask Redis to fsync its append-only file before every reply.

        Returns None when that is in force, else why not.
        """
        return await self.transport.fsync_always()

    async def info(self, section: str) -> dict:
        return await self.transport.info(section)

    async def memory(self) -> Memory:
        """Memory of the fullest master (the one whose writes are refused first), with
        the warning of any master that evicts keys."""
        found = [Memory.of(info) for info in await self.transport.masters_info("memory")]
        fullest = max(found, key=lambda m: (m.fraction, m.used))
        said = next((w for m in found if (w := m.eviction_warning()) is not None), None)
        return replace(fullest, evicting=said)

    async def close(self) -> None:
        await self.transport.close()

    # collection configuration --------------------------------------------

    async def config(self, proposed: bytes) -> bytes:
        """The collection's stored configuration, storing `proposed` if there is none.

        Creating it is a write like any other (WAIT with min_replicas); reading
        an existing one is not, so a service opens a collection whose replicas
        are away and can answer reads.
        """
        key, commands = self._keys.config, self.transport.commands
        (stored,) = await commands([(b"GET", key)])
        if stored is None:
            await commands([(b"SET", key, proposed, b"NX")], write=True)
            (stored,) = await commands([(b"GET", key)])
        return stored if stored is not None else proposed

    async def read_config(self) -> bytes | None:
        """The collection's stored configuration, None when there is none."""
        (stored,) = await self.transport.commands([(b"GET", self._keys.config)])
        return stored

    async def replace_config(self, value: bytes) -> None:
        await self.transport.commands([(b"SET", self._keys.config, value)], write=True)

    async def register(self) -> None:
        """Add this collection to the registry of collections (before its config is made,
        so a collection with a config is always listed)."""
        add = (b"SADD", REGISTRY, self.collection.encode())
        await self.transport.commands([add], write=True)

    async def registered(self) -> list[str]:
        """The names in the registry of collections, sorted."""
        (names,) = await self.transport.commands([(b"SMEMBERS", REGISTRY)])
        return sorted(n.decode() for n in names)

    async def drop_some(self, most: int) -> int:
        """Unlink up to `most` keys of this collection other than its config; how many.

        A bounded step of deleting a collection: the config goes last (drop_config), so
        a crash between steps leaves a collection that a new delete finishes.
        """
        found: list[bytes] = []
        keys = self.transport.scan(self._keys.prefix + b"*")
        try:
            async for key in keys:
                if key != self._keys.config:
                    found.append(key)
                    if len(found) >= most:
                        break
        finally:
            await keys.aclose()  # the SCAN left part way is not read on
        if found:
            await self.transport.commands([(b"UNLINK", k) for k in found], write=True)
        return len(found)

    async def drop_config(self) -> None:
        """The last step of deleting a collection: its config, then its registry entry."""
        await self.transport.commands([(b"UNLINK", self._keys.config)], write=True)
        remove = (b"SREM", REGISTRY, self.collection.encode())
        await self.transport.commands([remove], write=True)

    # ids ----------------------------------------------------------------

    async def stored(self, doc_id: str) -> tuple[int | None, bytes | None]:
        """An id's handle and that handle's record (None where there is none): one
        exchange when scripted, else the handle and then the record."""
        if not self.scripted:
            (handle,) = await self.ids.handles([doc_id])
            if handle is None:
                return None, None
            (raw,) = await self.records([handle])
            return handle, raw
        name = doc_id.encode()
        call = (self._keys.id_key(name), name, self._keys.heads[0])
        handle, raw = await self._script(scripts.STORED, call, None, 2)
        return (None if handle is None else int(handle)), raw

    # locks ----------------------------------------------------------------

    async def try_lock(self, ids: Sequence[str], token: bytes, ttl_ms: int) -> list[bool]:
        """Take the write lock of each id that is free; say which were taken."""
        ttl = b"%d" % ttl_ms
        got = await self.transport.commands(
            [(b"SET", self._keys.lock(i), token, b"NX", b"PX", ttl) for i in ids]
        )
        return [g is not None for g in got]

    async def unlock(self, ids: Sequence[str], token: bytes) -> list[bool]:
        """Release the locks token holds; say which were still held (not expired)."""
        locks = [self._keys.lock(i) for i in ids]
        if self.scripted:  # LOCKS_PER_CALL a call: one reply each, not one a lock
            calls = [
                (token, *locks[at : at + LOCKS_PER_CALL])
                for at in range(0, len(locks), LOCKS_PER_CALL)
            ]
            replies = await self.transport.eval(scripts.UNLOCK_MANY, calls, weight=len(locks))
            return [bool(h) for reply in replies for h in reply]
        calls = [(lock, token) for lock in locks]
        return [bool(h) for h in await self.transport.eval(scripts.UNLOCK, calls)]

    # records ----------------------------------------------------------------

    async def records(self, handles: Sequence[int]) -> list[bytes | None]:
        """The packed record of each handle, None where there is none."""
        if len(handles) == 0:
            return []
        return await self.transport.send(MGet(self._keys.docs(handles)))

    async def have_records(self, handles: Sequence[int]) -> list[bool]:
        """Whether each handle has a record (EXISTS: nothing is read)."""
        got = await self.transport.commands([(b"EXISTS", self._keys.doc(h)) for h in handles])
        return [bool(g) for g in got]

    async def put_records(self, records: Sequence[tuple[int, bytes]]) -> None:
        commands = [(b"SET", self._keys.doc(h), raw) for h, raw in records]
        await self.transport.commands(commands, write=True)

    async def delete_records(self, handles: Sequence[int]) -> None:
        commands = [(b"DEL", self._keys.doc(h)) for h in handles]
        await self.transport.commands(commands, write=True)

    # expiries (the sweeper's queue; each record carries its own expiry too) -------

    async def add_expiries(self, entries: Sequence[tuple[int, int]]) -> None:
        """Queue (handle, expires at ms) entries, replacing a handle's earlier time."""
        if entries:
            flat = [b"%d" % x for h, ms in entries for x in (ms, h)]
            await self.transport.commands([(b"ZADD", self._keys.expiries, *flat)], write=True)

    async def drop_expiries(self, handles: Sequence[int]) -> None:
        """Take handles off the queue (absent ones are ignored)."""
        if handles:
            members = [b"%d" % h for h in handles]
            await self.transport.commands([(b"ZREM", self._keys.expiries, *members)], write=True)

    async def due_expiries(self, now_ms: int, most: int) -> list[tuple[int, int]]:
        """Up to `most` (handle, expires at ms) entries due by now_ms, soonest first."""
        command = (b"ZRANGEBYSCORE", self._keys.expiries, b"-inf", b"%d" % now_ms)
        (flat,) = await self.transport.commands(
            [(*command, b"WITHSCORES", b"LIMIT", b"0", b"%d" % most)]
        )
        return [(int(m), s) for m, s in scored(flat)]

    async def expiries(self) -> list[tuple[int, int]]:
        """Every queued (handle, expires at ms): for checks and tests, not the sweeper."""
        (flat,) = await self.transport.commands(
            [(b"ZRANGE", self._keys.expiries, b"0", b"-1", b"WITHSCORES")]
        )
        return [(int(m), s) for m, s in scored(flat)]

    # kept texts (written before the record that points at them, deleted after it) --

    async def texts(self, handles: Sequence[int]) -> list[bytes | None]:
        """The stored text of each handle, None where there is none."""
        if len(handles) == 0:
            return []
        return await self.transport.send(MGet(self._keys.texts(handles)))

    async def text_heads(self, handles: Sequence[int], size: int) -> list[bytes]:
        """The first size bytes of each handle's stored text (empty where there is none)."""
        commands = [(b"GETRANGE", k, b"0", b"%d" % (size - 1)) for k in self._keys.texts(handles)]
        return await self.transport.commands(commands)

    async def put_texts(self, texts: Sequence[tuple[int, bytes]]) -> None:
        commands = [(b"SET", self._keys.text(h), raw) for h, raw in texts]
        await self.transport.commands(commands, write=True)

    async def delete_texts(self, handles: Sequence[int]) -> None:
        commands = [(b"DEL", self._keys.text(h)) for h in handles]
        await self.transport.commands(commands, write=True)

    async def text_handles(self) -> AsyncIterator[int]:
        """The handle of every stored text, in no order (SCAN): for checks, not queries."""
        async for key in self.transport.scan(self._keys.texts_pattern):
            yield self._keys.text_handle(key)

    async def candidates(
        self, keys: np.ndarray, exclude: int | None, cap: int, budget: int, hot_most: int
    ) -> Candidates | None:
        """The handles sharing the band keys (or passage anchors), ranked and capped as
        app.index.candidates does it, with their records, in one exchange (the candidates
        script; only when scripted: a single server); None, having read only the keys'
        fields, when their hot members to read are more than hot_most."""
        if not self.scripted:
            raise StoreError("the candidates script reads keys of many slots: one server only")
        limits = (exclude or 0, cap, budget, hot_most)
        args = (*self._keys.heads, *(b"%d" % n for n in limits))
        rows = self._keys.band_commands(b"HGET", keys)
        # Its work: a lookup per key, at most the budget of hot members, a record each.
        reply = await self._script(scripts.CANDIDATES, args, rows, len(keys) + budget + cap)
        return None if reply == -1 else _ranked(reply)

    async def similar_by_id(
        self, doc_id: str, cap: int, budget: int, hot_most: int
    ) -> tuple[int | None, bytes | None, Candidates | None]:
        """A stored document's handle, its record and the candidates of the record's band
        keys (as candidates() gives them, its own handle left out), in one exchange
        (only when scripted). (None, None, None) for an unknown id; (handle, None, None)
        for a handle without a record; candidates None when the script leaves them to
        the caller: hot keys over hot_most, or a record whose band keys it cannot read."""
        if not self.scripted:
            raise StoreError("the similar_by_id script reads keys of many slots: one server only")
        args = self.similar_by_id_args(doc_id, cap, budget, hot_most)
        # Its work: the id and record, then as candidates() for the record's band keys.
        reply = await self._script(scripts.SIMILAR_BY_ID, args, None, 64 + budget + cap)
        if not reply:
            return None, None, None
        handle = int(reply[0])
        if len(reply) == 1:
            return handle, None, None
        raw, rest = reply[1], reply[2:]
        if len(rest) == 1:  # -1 (hot) or -2 (unreadable band keys)
            return handle, raw, None
        return handle, raw, _ranked(rest)

    def similar_by_id_args(
        self, doc_id: str, cap: int, budget: int, hot_most: int
    ) -> tuple[bytes, ...]:
        """similar_by_id.lua's arguments for doc_id (bench/query_scripts.py calls the
        script with them too)."""
        bits, digits = self._keys.bucket_bits, self._keys.band_heads[2]
        name = doc_id.encode()
        return (
            *self._keys.heads,
            self._keys.id_key(name),
            name,
            *(b"%d" % n for n in (cap, budget, hot_most, bits)),
            digits,
            b"2" if self._keys.short_fields else b"1" if self._keys.short_anchors else b"0",
            b"%d" % self._keys.field_bytes,
            self._keys.marks or b"",
        )

    async def _script(
        self,
        script: scripts.Script,
        args: Sequence[bytes],
        tail: Rows | Interleaved | None,
        weight: int,
    ) -> Any:
        """A read script's reply (single server), in one exchange: EVALSHA alone, since
        SCRIPT LOAD hashes the whole script again on Redis' one thread; after a
        NOSCRIPT (a restarted Redis), loaded and called in one exchange."""
        try:
            (reply,) = await self.transport.send(
                Eval(script, args, tail, weight, load=False, read_only=True)
            )
        except StoreError as exc:
            if "No matching script" not in str(exc):  # NOSCRIPT, in redis-py's words
                raise
            (reply,) = await self.transport.send(
                Eval(script, args, tail, weight, load=True, read_only=True)
            )
        return reply
