"""Where `neardup serve` may listen: loopback freely, other interfaces only with keys."""

from __future__ import annotations

import ipaddress

from app.core.keys import KeyRing


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def bind_policy(host: str, port: int, insecure: bool, keys: KeyRing) -> tuple[bool, str]:
    """Whether `neardup serve` may listen on host, and the line it says at start-up.

    Without keys only loopback is allowed unless --insecure is given.
    """
    where = f"http://{host}:{port}"
    if keys:
        n = keys.counts()
        return True, (
            f"neardup: listening on {where}; every API route needs an API key "
            f"({n['write']} write, {n['read']} read); /healthz, the docs and the report "
            "page's own files do not"
        )
    if is_loopback(host):
        return True, (
            f"neardup: no API keys set, so listening on {where} only (this machine); "
            "to serve other machines set NEARDUP_API_KEYS or NEARDUP_API_KEYS_FILE "
            "and pass --host"
        )
    if insecure:
        return True, (
            f"neardup: WARNING: listening on {where} without API keys (--insecure): "
            "anyone who can reach it may read, change and delete every document"
        )
    return False, (
        f"neardup: refusing to listen on {host} without API keys: anyone who can reach it "
        "could read, change and delete every document. Set NEARDUP_API_KEYS "
        "(key:scope,...) or NEARDUP_API_KEYS_FILE, or pass --insecure to serve without keys"
    )
