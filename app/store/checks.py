"""Stored checks (POST /checks): one STRING per check, ``nd:{collection}:c:{id}``.

A check is a finished answer kept for its report page, not part of the index: nothing
else points at it and it points at nothing, so it is one key, written once, and Redis
itself drops it at its expiry (SET ... PX). The expiry sweeper's queue exists for
documents, whose band entries, text and id must go with their record in order; a
check has none of those, and a key that expires by itself never needs a sweep that
could fall behind. Deleting a collection unlinks its checks with its other keys.
"""

from __future__ import annotations

from app.store.layout import Layout
from app.store.store import Store

KIND = b"c:"


class CheckStore:
    """The stored checks of one collection, on that collection's store."""

    def __init__(self, store: Store) -> None:
        self._transport = store.transport
        self._head = Layout(store.collection).prefix + KIND

    def key(self, check_id: str) -> bytes:
        return self._head + check_id.encode()

    async def put(self, check_id: str, blob: bytes, ttl_ms: int) -> bool:
        """Store a new check for ttl_ms; False if the id is taken (NX: a 128-bit random
        id never is, but a check is never overwritten). PX, not PXAT: Redis before 6.2
        has no PXAT, and the check's own expires_at is written from the same clock."""
        command = (b"SET", self.key(check_id), blob, b"NX", b"PX", b"%d" % ttl_ms)
        (done,) = await self._transport.commands([command], write=True)
        return done is not None

    async def get(self, check_id: str) -> bytes | None:
        """A stored check, None when there is none (never made, deleted or expired)."""
        (blob,) = await self._transport.commands([(b"GET", self.key(check_id))])
        return blob

    async def delete(self, check_id: str) -> bool:
        """Remove a stored check; whether there was one."""
        (n,) = await self._transport.commands([(b"DEL", self.key(check_id))], write=True)
        return bool(n)
