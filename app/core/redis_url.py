"""Redis URLs: which schemes the service accepts and what a cluster URL names."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, unquote, urlsplit

CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")


@dataclass(frozen=True)
class ClusterURL:
    """What a redis+cluster:// URL names: startup nodes and credentials."""

    nodes: tuple[tuple[str, int], ...]
    username: str | None
    password: str | None
    ssl: bool


def parse_cluster_url(url: str) -> ClusterURL | None:
    """The parts of a redis+cluster://[user:password@]host:port[,host:port...] URL.

    None for any other URL; ValueError, saying what is wrong, for a malformed one.
    rediss+cluster:// is the same over TLS.
    """
    scheme = next((s for s in CLUSTER_SCHEMES if url.startswith(s)), None)
    if scheme is None:
        return None
    rest = url[len(scheme) :].split("/", 1)[0].split("?", 1)[0]
    userinfo, _, hosts = rest.rpartition("@")
    username = password = None
    if userinfo:
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    nodes = []
    for part in hosts.split(","):
        host, colon, port = part.strip().rpartition(":")
        host = host.strip("[]")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(
                f"{scheme}host:port[,host:port...] expected, got node {part.strip()!r}"
            )
        nodes.append((host, int(port)))
    return ClusterURL(tuple(nodes), username, password, scheme.startswith("rediss"))


def check_redis_url(url: str) -> None:
    """Raise ValueError, saying what is wrong, unless url is one the service can use."""
    schemes = ("redis://", "rediss://", "unix://", *CLUSTER_SCHEMES)
    if not url.startswith(schemes):
        raise ValueError(f"use a URL that starts with one of {', '.join(schemes)}")
    parse_cluster_url(url)


def server_of(url: str) -> tuple[str, int, int]:
    """(host or socket path, port, database) that a single server's URL names, as
    redis-py reads it: the database from the path (redis://h:p/2) or ?db=, else 0."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    db = query.get("db", [""])[0]
    if parts.scheme == "unix":
        return unquote(parts.path), 0, int(db) if db.isdigit() else 0
    path = parts.path.strip("/")
    if not db and path.isdigit():
        db = path
    host = (parts.hostname or "localhost").lower()
    return host, parts.port or 6379, int(db) if db.isdigit() else 0
