"""`neardup ready`: the readiness probe of a container, with the service's own key.

With API keys set, /readyz needs one (docs/access.md), and a container's HEALTHCHECK
has no header of its own to send; this command reads the keys from the same settings
the service started with, so the check passes exactly when the service is ready.
"""

from __future__ import annotations

import os
import sys

import httpx

from app.core.keys import load_keys
from app.core.settings import Settings


def probe_key(settings: Settings) -> tuple[str | None, int]:
    """NEARDUP_API_KEY if set, else a configured key that may read /readyz (one not
    limited to collections, or limited to ones that name the service's own); None
    without one. And how many keys are configured."""
    if given := os.environ.get("NEARDUP_API_KEY"):
        return given, 0
    spec = settings.api_keys.get_secret_value() if settings.api_keys is not None else None
    keys = load_keys(spec, settings.api_keys_file)
    usable = [k for k, grant in keys.items() if grant.allows(settings.collection)]
    return (usable[0] if usable else None), len(keys)


def ready(settings: Settings, url: str, timeout: float) -> int:
    """0 when the service at url answers /readyz with 200, else 1 (why, on stderr)."""
    key, configured = probe_key(settings)
    if key is None and configured:
        print(
            f"neardup ready: none of the {configured} configured API keys may read collection "
            f"{settings.collection!r} (each is limited to others): set NEARDUP_API_KEY or give "
            "a key that collection",
            file=sys.stderr,
        )
        return 1
    headers = {"authorization": f"Bearer {key}"} if key is not None else {}
    try:
        answer = httpx.get(url.rstrip("/") + "/readyz", headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        print(f"neardup ready: {url} did not answer: {exc}", file=sys.stderr)
        return 1
    if answer.status_code != 200:
        try:
            why = answer.json().get("detail", answer.text)
        except ValueError:
            why = answer.text
        print(f"neardup ready: {answer.status_code}: {why}", file=sys.stderr)
        return 1
    return 0
