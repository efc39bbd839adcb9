"""Whether a server named in NEARDUP_REPLICA_URLS may take its master's reads.

A replica is read only while it is a replica of this very master, in sync: its
replication id is the master's (a replica of another master, or of another Redis
altogether, would answer with someone else's documents), and its link is up (not
detached, promoted or resyncing). When writes wait for replicas (NEARDUP_MIN_REPLICAS)
it must also replicate the master directly: WAIT counts only direct replicas, so a
replica of a replica could miss what the master acknowledged. Direct means either that
the master lists a replica on the port the replica listens on (INFO replication's
slaveN, as the replica announced it), or that the address the replica replicates
resolves to the one the service reaches the master at. A replica of a replica on the
same port as a direct one passes (servers on 6379 each); a direct replica that both
announces another port and is reached under another address does not, and the log says
so.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

# How long a name's addresses are kept, and how long resolving one may take (seconds).
RESOLVED_FOR = 60.0
RESOLVE_WITHIN = 2.0
_resolved: dict[tuple[str, int], tuple[float, frozenset[str]]] = {}


@dataclass(frozen=True)
class Master:
    """What a replica is compared with: the master's replication id, the ports its
    replicas announced, and its host and port (None for a unix socket)."""

    replid: str
    replica_ports: frozenset[int]
    host: str | None
    port: int


@dataclass(frozen=True)
class Verdict:
    """A replica's state: why it may not be read (None: it may), and whether it takes
    EVALSHA_RO (Redis 7+), None when it did not say."""

    why: str | None
    read_only_scripts: bool | None


async def master_of(client: aioredis.Redis) -> Master:
    """The master's replication id and replicas (INFO replication), and its address."""
    info = await client.info("replication")
    ports = frozenset(
        int(v["port"])
        for k, v in info.items()
        if k.startswith("slave") and isinstance(v, dict) and str(v.get("port", "")).isdigit()
    )
    kwargs = client.connection_pool.connection_kwargs
    host = None if "path" in kwargs else kwargs.get("host")
    return Master(str(info.get("master_replid", "")), ports, host, int(kwargs.get("port", 6379)))


async def judge_replica(
    replica: aioredis.Redis, of: Master, direct: bool, timeout: float
) -> Verdict:
    """Whether replica may take the reads of master `of` (see the module docstring);
    direct: it must replicate the master itself. timeout bounds its INFO replies."""
    async with asyncio.timeout(timeout):
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
    elif direct and not await _direct(info, server, of):
        where = "a unix socket" if of.host is None else f"{of.host}:{of.port}"
        why = (
            f"NEARDUP_MIN_REPLICAS counts direct replicas only, and this one is not seen as "
            f"one: the master lists no replica on its port {server.get('tcp_port')}, and "
            f"the {info.get('master_host')}:{info.get('master_port')} it replicates is not "
            f"{where}, where the service reaches the master (a replica of a replica could "
            "miss an acknowledged write)"
        )
    else:
        why = None
    return Verdict(why, scripts)


async def _direct(info: dict[str, Any], server: dict[str, Any], of: Master) -> bool:
    listens = int(server.get("tcp_port", 0) or 0)
    if listens > 0 and listens in of.replica_ports:  # 0: no TCP port, nothing to tell by
        return True
    if of.host is None:
        return False
    host, port = str(info.get("master_host", "")), int(info.get("master_port", 0) or 0)
    if port != of.port:
        return False
    if host.lower() == of.host.lower():
        return True
    return bool(await _addresses(host, port) & await _addresses(of.host, of.port))


async def _addresses(host: str, port: int) -> frozenset[str]:
    """The IP addresses host resolves to (itself for an IP; none when it does not
    resolve in RESOLVE_WITHIN), kept RESOLVED_FOR seconds."""
    try:
        return frozenset({str(ipaddress.ip_address(host))})
    except ValueError:
        pass
    now = time.monotonic()
    kept = _resolved.get((host, port))
    if kept is not None and now - kept[0] < RESOLVED_FOR:
        return kept[1]
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_WITHIN):
            found = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError):
        return frozenset()
    addresses = frozenset(str(sockaddr[0]) for *_, sockaddr in found)
    _resolved[(host, port)] = (now, addresses)
    return addresses
