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
    """(host or socket path, port, database) that a single server's URL names, read by
    redis-py's own parser; ValueError, saying what is wrong, for one it cannot read."""
    from redis.connection import parse_url

    try:
        parts = parse_url(url)
    except ValueError as exc:
        raise ValueError(f"{shown(url)}: {exc}") from None
    if "path" in parts:
        return str(parts["path"]), 0, int(parts.get("db") or 0)
    host = str(parts.get("host") or "localhost").lower()
    return host, int(parts.get("port") or 6379), int(parts.get("db") or 0)


def shown(url: str) -> str:
    """A single server's URL as a message may show it: host:port/db or the socket's path,
    never a password (in the userinfo or a ?password= parameter)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return f"unix://{unquote(parts.path)}"
    try:
        port = parts.port
    except ValueError:
        port = None
    db = parse_qs(parts.query).get("db", [parts.path.strip("/") or "0"])[0]
    return f"{parts.scheme}://{parts.hostname or 'localhost'}:{port or 6379}/{db}"
