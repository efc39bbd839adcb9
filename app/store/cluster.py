"""The transport to a Redis Cluster (redis+cluster://host:port[,host:port...] URLs).

No command spans two slots and every Lua script touches one slot (layout.py
keeps a bucket and its spilled sets under one hash tag), so a batch is split
by the master of each command's key and sent to every master at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.exceptions import (
    AskError,
    MovedError,
    RedisClusterException,
    RedisError,
    TryAgainError,
)

from app.core import metrics
from app.core.deadlines import deadline_in
from app.core.redis_url import ClusterURL
from app.store import reads
from app.store.errors import ReplicationError, StoreUnavailableError, translate
from app.store.resp import Batch, Command, encode, roundtrip
from app.store.scripts import Script
from app.store.transport import SECONDS_PER_COMMAND, Transport, client_options, fall_short

# After a cluster error, the slot map is re-read at most this often.
REFRESH_INTERVAL_S = 0.2
# ... and, while reads go to replicas, at least this often: a replica that came back (or
# a master that rejoined as one) is read again.
SLOT_MAP_MAX_AGE_S = 30.0
# A replica whose exchange failed gets no reads for this long (its master takes them).
REPLICA_DOWN_S = 5.0
# Replies that mean a slot moved or is being moved (AskError covers MOVED too): each
# command is sent again to the node the reply names (after ASKING, on the same
# connection, for ASK), or, for TRYAGAIN, to its master again after a pause.
_REDIRECTS = (AskError, TryAgainError)
# TRYAGAIN lasts while a slot's keys are split between its two masters: redis-cli moves a
# slot's keys in batches and then hands the slot over, so waits that double from 25 ms
# (about 3.2 s in all) outlast a move of one slot.
MAX_REDIRECTS = 7
TRYAGAIN_WAIT_S = 0.025
_READONLY = encode(b"READONLY")
_ASKING = encode(b"ASKING")


def _acked(acked: list[Any], got: list[Any]) -> None:
    """Take an exchange's WAIT reply off its replies, into acked unless every command of
    it was redirected (nothing was written there: a node that is no longer a master
    answers WAIT with an error)."""
    wait = got.pop()
    if not all(isinstance(r, _REDIRECTS) for r in got):
        acked.append(wait)


class ClusterTransport(Transport):
    """Each batch as one packed exchange per master, all at once.

    An error that may mean the slots moved (a failover) makes it re-read the
    slot map in the background, so requests after a failover find the new masters.
    With read_from_replicas, a read that app.store.reads allows goes to the master
    or one of its replicas, whichever has been sent the fewest query commands, each
    replica exchange led by READONLY.
    """

    cluster = True

    def __init__(
        self,
        client: RedisCluster,
        *,
        timeout: float,
        min_replicas: int = 0,
        replica_timeout: float = 1.0,
        read_from_replicas: bool = False,
    ) -> None:
        super().__init__(
            client, timeout=timeout, min_replicas=min_replicas, replica_timeout=replica_timeout
        )
        self.read_from_replicas = read_from_replicas
        self.replica_reads = 0  # node exchanges a replica answered (bench, tests)
        self._sent: dict[str, int] = {}  # query commands sent to each node, by name
        self._down: dict[str, float] = {}  # replicas left out until then (monotonic s)
        self._refresh: asyncio.Task[None] | None = None
        self._refreshed_at = 0.0
        self.rereads = 0  # slot map re-reads started

    @classmethod
    def connect(
        cls,
        url: ClusterURL,
        timeout: float,
        min_replicas: int,
        replica_timeout: float,
        read_from_replicas: bool = False,
    ) -> ClusterTransport:
        client = RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in url.nodes],
            username=url.username,
            password=url.password,
            ssl=url.ssl,
            **client_options(timeout, min_replicas, replica_timeout),
        )
        return cls(
            client,
            timeout=timeout,
            min_replicas=min_replicas,
            replica_timeout=replica_timeout,
            read_from_replicas=read_from_replicas,
        )

    async def commands(self, commands: Sequence[Command], write: bool = False) -> list[Any]:
        return await self._exchange(commands, write)

    async def send(self, batch: Batch, write: bool = False) -> list[Any]:
        return await self._exchange(batch.commands(), write)

    async def eval(
        self, script: Script, calls: Sequence[Command], write: bool = False, weight: int = 0
    ) -> list[Any]:
        # EVAL, not EVALSHA: a node may not have the script cached.
        return await self._exchange(
            [(b"EVAL", script.source, script.numkeys, *c) for c in calls], write
        )

    async def _exchange(self, commands: Sequence[Command], write: bool) -> list[Any]:
        """Single-key commands (name, key, args...) grouped by the master of each key's
        slot, one packed write and one read per master, all at once.

        Commands whose replies redirect (MOVED, ASK, TRYAGAIN: a slot moved or being
        moved) are followed (_follow), and the slot map is re-read. A write with
        min_replicas ends with WAIT on the connection of each node it ran on; a slot map
        that then names another master for a slot than the one its write ran on makes
        it a ReplicationError.
        """
        if not commands:
            return []
        # The slot of a command's first key (EVAL's after the script and key count).
        slots = [key_slot(c[3] if c[0] == b"EVAL" else c[1]) for c in commands]
        before = await self._masters_of(set(slots))
        groups: dict[str, tuple[Any, list[int]]] = {}
        for i, slot in enumerate(slots):
            node = before[slot]
            groups.setdefault(node.name, (node, []))[1].append(i)
        wait = self.waits(write)
        readers = {name: node for name, (node, _) in groups.items()}
        if (
            self.read_from_replicas
            and not write
            and reads.replica_allowed()
            and all(c[0] in reads.READ_ONLY for c in commands)
        ):
            readers = self._readers(groups, slots)
        started = time.perf_counter()
        try:
            answers = await asyncio.gather(
                *(
                    self._read_or_master(readers[name], node, [commands[i] for i in idx], wait)
                    for name, (node, idx) in groups.items()
                )
            )
        except StoreUnavailableError:
            self.unavailable()
            raise
        finally:
            metrics.REDIS_SECONDS.labels("pipeline").observe(time.perf_counter() - started)
        replies: list[Any] = [None] * len(commands)
        acked: list[Any] = []
        for (_, idx), got in zip(groups.values(), answers, strict=True):
            if wait:
                _acked(acked, got)
            for i, reply in zip(idx, got, strict=True):
                replies[i] = reply
        ran = {slot: before[slot].name for slot in slots}  # the node each slot's writes ran on
        redirected = [i for i, r in enumerate(replies) if isinstance(r, _REDIRECTS)]
        if redirected:
            self.unavailable()  # MOVED: the map is stale (ASK: a slot is being moved)
            moved = await self._follow(commands, slots, redirected, replies, wait, acked, ran)
            if moved and wait:
                await self._reread_slots()  # the map the writes are checked against below
        for reply in replies:
            if isinstance(reply, Exception):
                error = translate(reply)
                if isinstance(error, StoreUnavailableError):
                    self.unavailable()
                raise error
        if wait:
            after = await self._masters_of(set(slots))
            if any(ran[slot] not in (None, after[slot].name) for slot in after):
                fall_short(self._slots_moved())
            self.check_acked(acked)
        return replies

    async def _follow(
        self,
        commands: Sequence[Command],
        slots: list[int],
        pending: list[int],
        replies: list[Any],
        wait: bool,
        acked: list[Any],
        ran: dict[int, str | None],
    ) -> bool:
        """Send the commands at pending (whose replies redirect) where their replies say,
        in place, until none redirects: after MOVED to the node named, after ASK to it
        with ASKING before each command on the same connection (a slot being moved: the
        key is already on its new master), after TRYAGAIN (a script's keys split by the
        move) to its master again after a pause. A write waits for its replicas on the
        connection it ran on. ran: the node each slot's write ran on (None: an ASK's new
        master, which the map names only once the move ends). Whether a MOVED came."""
        moved = False
        for attempt in range(MAX_REDIRECTS):
            groups: dict[tuple[str, int, bool], list[int]] = {}
            again = []
            for i in pending:
                reply = replies[i]
                if isinstance(reply, AskError):
                    asking = not isinstance(reply, MovedError)
                    moved = moved or not asking
                    groups.setdefault((reply.host, reply.port, asking), []).append(i)
                    ran[slots[i]] = None if asking else f"{reply.host}:{reply.port}"
                else:
                    again.append(i)
            if again:
                await asyncio.sleep(TRYAGAIN_WAIT_S * 2**attempt)
                masters = await self._masters_of({slots[i] for i in again})
                for i in again:
                    node = masters[slots[i]]
                    groups.setdefault((node.host, node.port, False), []).append(i)
            answers = await asyncio.gather(
                *(
                    self.node_exchange(
                        self._node(host, port), [commands[i] for i in idx], wait, False, asking
                    )
                    for (host, port, asking), idx in groups.items()
                )
            )
            for idx, got in zip(groups.values(), answers, strict=True):
                if wait:
                    _acked(acked, got)
                for i, reply in zip(idx, got, strict=True):
                    replies[i] = reply
            pending = [i for i in pending if isinstance(replies[i], _REDIRECTS)]
            if not pending:
                return moved
        self.unavailable()
        raise StoreUnavailableError(
            "Redis is unavailable: Redis Cluster kept redirecting a command (a slot is "
            "being moved); retry"
        )

    def _node(self, host: str, port: int) -> ClusterNode:
        """The client's node at host:port, which a redirect named."""
        node = self.client.get_node(host=host, port=port)
        if node is None:  # not in the map the client holds: it is being re-read
            self.unavailable()
            raise StoreUnavailableError(
                f"Redis is unavailable: a redirect named {host}:{port}, which is not in "
                "the cluster's slot map yet; retry"
            )
        return node

    async def _read_or_master(
        self, reader: ClusterNode, master: ClusterNode, commands: Sequence[Command], wait: bool
    ) -> list[Any]:
        """The exchange on reader (the master, or a replica for reads); if a replica
        cannot answer, on its master instead, the replica left out for REPLICA_DOWN_S
        and the slot map re-read (a replica that died is dropped from it)."""
        if reader is master:
            return await self.node_exchange(master, commands, wait)
        try:
            got = await self.node_exchange(reader, commands, wait, True)  # readonly
            # A replica loading its data (LOADING) or cut off from its master with
            # replica-serve-stale-data off (MASTERDOWN) answers with error replies.
            if not any(
                isinstance(r, Exception)
                and not isinstance(r, _REDIRECTS)
                and isinstance(translate(r), StoreUnavailableError)
                for r in got
            ):
                return got
        except StoreUnavailableError:
            pass
        self._down[reader.name] = time.monotonic() + REPLICA_DOWN_S
        self.unavailable()
        return await self.node_exchange(master, commands, wait)

    def _readers(self, groups: dict[str, tuple[Any, list[int]]], slots: list[int]) -> dict:
        """The node each master's group of reads goes to: of the master and its
        replicas (the slot map's), the one sent the fewest query commands so far (one
        pick per master and exchange, so a group stays one exchange). Not in turn, as
        redis-py's load balancer does: a query's exchanges come in a fixed order of
        very different sizes, and taking turns would send its large ones to the same
        node every time; nor at random, whose shares wander by several percent."""
        nodes = self.client.nodes_manager
        sent, down = self._sent, self._down
        now = time.monotonic()
        if now - self._refreshed_at > SLOT_MAP_MAX_AGE_S:
            self.unavailable()  # in the background; this exchange uses the map as it is
        readers = {}
        for name, (master, idx) in groups.items():
            serving = [
                n
                for n in nodes.slots_cache.get(slots[idx[0]]) or [master]
                if n is master or down.get(n.name, 0.0) <= now
            ]
            for n in serving:
                if n.name in down:  # back from being left out: level with the rest
                    del down[n.name]
                    sent.pop(n.name, None)
            if any(n.name not in sent for n in serving):
                # A node new to the map (a replica back, a failover) starts level with
                # the others, not at 0, where it would take every read until it caught up.
                level = max((sent[n.name] for n in serving if n.name in sent), default=0)
                for n in serving:
                    sent.setdefault(n.name, level)
            node = min(serving, key=lambda n: sent[n.name])
            sent[node.name] = sent.get(node.name, 0) + len(idx)
            readers[name] = node
            if node is not master:
                self.replica_reads += 1
        return readers

    async def node_exchange(
        self,
        node: ClusterNode,
        commands: Sequence[Command],
        wait: bool,
        readonly: bool = False,
        asking: bool = False,
    ) -> list[Any]:
        """Commands sent to one node in one write, every reply read (error replies as
        exception objects) under one timer, then WAIT's count if wait. With readonly
        (a replica), READONLY goes first, so the replica serves its master's slots; with
        asking (an ASK redirect), ASKING goes before each command."""
        if asking:
            parts = [p for c in commands for p in (_ASKING, encode(*c))]
        else:
            parts = [encode(*c) for c in commands]
        if readonly:
            parts.insert(0, _READONLY)
        budget = self.timeout + SECONDS_PER_COMMAND * len(parts)
        if wait:
            parts.append(self.wait_command())
            budget += self.replica_timeout
        try:
            conn = node.acquire_connection()
        except RedisError as exc:  # MaxConnectionsError
            raise translate(exc) from exc
        replies: list[Any] = []
        try:
            async with deadline_in(budget):  # a timer per tick, not per exchange
                await node.disconnect_if_needed(conn)  # marked by a slot map refresh
                replies = await roundtrip(conn, b"".join(parts), len(parts))
        except TimeoutError as exc:
            raise StoreUnavailableError(f"Redis is unavailable: timeout on {node.name}") from exc
        except (RedisError, OSError) as exc:
            raise translate(exc) from exc
        finally:
            node.release(conn)
        if asking:
            return replies[1 : 2 * len(commands) : 2] + replies[2 * len(commands) :]
        return replies[1:] if readonly else replies

    async def _masters_of(self, slots: set[int]) -> dict[int, Any]:
        """The master that owns each slot in the client's slot map (initialised first)."""
        await self.run(self.client.initialize())
        nodes = self.client.nodes_manager
        try:
            return {slot: nodes.get_node_from_slot(slot) for slot in slots}
        except (KeyError, RedisClusterException) as exc:  # a slot with no master yet
            self.unavailable()
            raise StoreUnavailableError(f"Redis Cluster has no master for a slot: {exc}") from exc

    def _slots_moved(self) -> ReplicationError:
        """What a write that waited for replicas gets when the slots moved under it."""
        self.unavailable()
        return ReplicationError(
            "the write was applied, but the cluster's slots moved while it ran, so "
            "it may not be replicated (NEARDUP_MIN_REPLICAS); retry"
        )

    def unavailable(self) -> None:
        """Re-read the slot map in the background.

        redis-py does so by itself only after a failed single command, not
        after a failed pipeline, and with retries off it never retries into
        the new map; so without this, exchanges would keep going to a master
        that died and whose replica took over. One re-read at a time, at most
        every REFRESH_INTERVAL_S; each is bounded by the socket timeouts.
        """
        if self._refresh is not None and not self._refresh.done():
            return
        now = time.monotonic()
        if now - self._refreshed_at < REFRESH_INTERVAL_S:
            return
        self._refreshed_at = now
        self.rereads += 1
        self._refresh = asyncio.get_running_loop().create_task(self._reread_slots())

    async def _reread_slots(self) -> None:
        try:
            await self.client.nodes_manager.initialize()
        except Exception:  # the next failed request tries again
            self._refreshed_at = time.monotonic()

    async def _ping(self) -> bool:  # every master answers, not just one
        return bool(await self.run(self.client.ping(target_nodes=RedisCluster.PRIMARIES)))

    async def fewest_replicas(self) -> int:
        infos = await self.masters_info("replication")
        return min(int(i.get("connected_slaves", 0)) for i in infos)

    async def key_count(self) -> int:
        """How many keys the masters hold together (DBSIZE on each)."""
        return int(await self.run(self.client.dbsize(target_nodes=RedisCluster.PRIMARIES)))

    async def masters_info(self, section: str) -> list[dict[str, Any]]:
        infos = await self.run(self.client.info(section, target_nodes=RedisCluster.PRIMARIES))
        return list(infos.values())

    async def _fsync_always(self) -> list[dict[Any, Any]]:
        """On every node, replicas too (one may be promoted): redis-py would send
        CONFIG to one node only. Nodes that join later need it in their own
        configuration."""
        every = {"target_nodes": RedisCluster.ALL_NODES}
        await self.client.config_set("appendfsync", "always", **every)
        return list((await self.client.config_get("appendonly", **every)).values())

    async def close(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
        await self.client.aclose()
