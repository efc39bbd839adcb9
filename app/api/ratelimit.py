"""Per-key (or per-client) request limits: 429 with Retry-After, off by default.

Each API key (each client address when the request has no valid key, or when keys
are off: a token anyone can make up must not buy a bucket of its own) has a token
bucket: NEARDUP_RATE_BURST requests at once, refilled at NEARDUP_RATE_LIMIT per
second. A request that finds the bucket empty is answered 429 with the seconds
until one token is back in Retry-After, and costs nothing else. Probes and docs
(/healthz, /readyz, /metrics, /docs...) are never limited, so an orchestrator
and a scrape never see a 429.

The buckets live in each worker process, not in Redis: a limit costs no round
trip, and with W workers a client can get up to W times the rate (set the limit
per worker). The table holds at most MAX_CLIENTS buckets: when it is full, the idle
ones (full again, the same as none) are dropped, and if too few are idle, the least
recently used tenth, so a flood of new addresses costs each request O(1) on average.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.openapi import is_doc_path
from app.api.problems import problem_doc, send_problem
from app.core.keys import KeyRing

UNLIMITED = frozenset({"/healthz", "/readyz", "/metrics"})
MAX_CLIENTS = 100_000


class Buckets:
    """Token buckets by client: take() says whether a request may go, else the wait."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        # client -> (tokens, when they were counted)
        self.state: dict[bytes, tuple[float, float]] = {}

    def take(self, client: bytes) -> float:
        """0.0 when the client may make a request now (one token taken), else the
        seconds until it may."""
        now = self.clock()
        held = self.state.pop(client, None)  # put back last: the table's order is its use
        if held is None and len(self.state) >= MAX_CLIENTS:
            self._make_room(now)
        tokens, then = held if held is not None else (self.burst, now)
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens >= 1.0:
            self.state[client] = (tokens - 1.0, now)
            return 0.0
        self.state[client] = (tokens, now)
        return (1.0 - tokens) / self.rate

    def _make_room(self, now: float) -> None:
        # A bucket untouched for burst/rate seconds is full again: the same as none. If
        # that frees too little, the least recently used tenth goes (each then starts
        # full): at most one pass over the table per MAX_CLIENTS / 10 new clients.
        idle = self.burst / self.rate
        kept = {c: s for c, s in self.state.items() if now - s[1] < idle}
        if len(kept) > MAX_CLIENTS * 9 // 10:
            kept = dict(list(kept.items())[len(kept) - MAX_CLIENTS * 9 // 10 :])
        self.state = kept


def client_of(scope: Scope, keys: KeyRing) -> bytes:
    """Who a request counts against: its API key's digest when keys are on and the key is
    one of them, else its address."""
    if keys.entries:
        for name, value in scope["headers"]:
            if name == b"authorization":
                kind, _, token = value.partition(b" ")
                token = token.strip()
                if kind.lower() == b"bearer" and token and keys.grant_of(token) is not None:
                    # A digest, so the table never holds a key itself.
                    return b"k" + hashlib.blake2b(token, digest_size=16).digest()
                break
    client = scope.get("client")
    return b"a" + (client[0].encode() if client else b"?")


class RateLimit:
    """ASGI middleware inside app.api.edge: requests over a client's rate get 429."""

    def __init__(self, app: ASGIApp, rate: float, burst: int, keys: KeyRing) -> None:
        self.app = app
        self.buckets = Buckets(rate, burst)
        self.keys = keys
        self.detail = (
            f"over {rate:g} requests per second (burst {burst}) for this API key or client "
            "(NEARDUP_RATE_LIMIT, NEARDUP_RATE_BURST); retry after Retry-After seconds"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in UNLIMITED or is_doc_path(path):
            await self.app(scope, receive, send)
            return
        wait = self.buckets.take(client_of(scope, self.keys))
        if wait == 0.0:
            await self.app(scope, receive, send)
            return
        retry = str(max(1, math.ceil(wait))).encode()
        await send_problem(send, 429, "Too many requests", self.detail, [(b"retry-after", retry)])


def burst_of(rate: float, burst: int) -> int:
    """The burst the settings mean: NEARDUP_RATE_BURST, or one second's worth (at least 1)."""
    return burst or max(1, math.ceil(rate))


def document(schema: dict[str, Any]) -> None:
    """Declare the 429 on every limited operation of the OpenAPI schema."""
    for path, ops in schema.get("paths", {}).items():
        if path in UNLIMITED:
            continue
        for op in ops.values():
            op.setdefault("responses", {}).setdefault(
                "429", problem_doc("over the rate limit; retry after Retry-After seconds")
            )
