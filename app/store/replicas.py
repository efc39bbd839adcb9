"""Whether a server named in NEARDUP_REPLICA_URLS may take its master's reads.

A replica is read only while it is a replica of this very master, in sync: its
replication id is the master's (a replica of another master, or of another Redis
altogether, would answer with someone else's documents), its link is up (not
detached, promoted or resyncing), and, when writes wait for replicas
(NEARDUP_MIN_REPLICAS), it replicates the master directly: WAIT counts only direct
replicas, so a replica of a replica could miss what the master acknowledged.
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis


@dataclass(frozen=True)
class Master:
    """What a replica is compared with: the master's replication id and addresses."""

    replid: str
    host: str | None  # None for a unix socket: no address to compare
    port: int
    addresses: frozenset[str]


@dataclass(frozen=True)
class Verdict:
    """A replica's state: why it may not be read (None: it may), and whether it takes
    EVALSHA_RO (Redis 7+), None when it did not say."""

    why: str | None
    read_only_scripts: bool | None


async def _addresses(host: str, port: int) -> frozenset[str]:
    """The IP addresses host:port resolves to (none when it does not resolve)."""
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return frozenset()
    return frozenset(str(sockaddr[0]) for *_, sockaddr in found)


async def master_of(client: aioredis.Redis) -> Master:
    """The master's replication id (INFO replication) and the addresses of its URL."""
    info = await client.info("replication")
    kwargs = client.connection_pool.connection_kwargs
    host, port = kwargs.get("host"), int(kwargs.get("port", 6379))
    if "path" in kwargs or host is None:
        return Master(str(info.get("master_replid", "")), None, 0, frozenset())
    return Master(str(info.get("master_replid", "")), host, port, await _addresses(host, port))


async def judge_replica(replica: aioredis.Redis, of: Master, direct: bool) -> Verdict:
    """Whether replica may take the reads of master `of` (see the module docstring);
    direct: it must replicate the master itself."""
    info: dict[str, Any] = await replica.info("replication")
    server: dict[str, Any] = await replica.info("server")
    major = str(server.get("redis_version", "0")).split(".")[0]
    scripts = major.isdigit() and int(major) >= 7
    if info.get("role") != "slave":
        why = "it is not a replica (a master: promoted, detached, or never made one)"
    elif info.get("master_link_status") != "up":
        why = "its link to its master is down (connecting, resyncing or detached)"
    elif not of.replid or str(info.get("master_replid", "")) != of.replid:
        why = (
            "it replicates another master: its replication id is not NEARDUP_REDIS_URL's "
            "(name replicas of that server, and its database number)"
        )
    elif direct and of.host is not None and not await _replicates(info, of):
        why = (
            f"it replicates {info.get('master_host')}:{info.get('master_port')}, not "
            f"{of.host}:{of.port} itself: with NEARDUP_MIN_REPLICAS a replica of a replica "
            "may miss an acknowledged write (WAIT counts direct replicas only)"
        )
    else:
        why = None
    return Verdict(why, scripts)


async def _replicates(info: dict[str, Any], of: Master) -> bool:
    """Whether the replica's master address (INFO's master_host:master_port) is of."""
    host, port = str(info.get("master_host", "")), int(info.get("master_port", 0) or 0)
    if port != of.port:
        return False
    if host == of.host:
        return True
    return bool(await _addresses(host, port) & of.addresses)
