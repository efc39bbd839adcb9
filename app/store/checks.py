"""Stored checks (POST /checks): one STRING per check, ``nd:{collection}:c:{id}``, and
the list of them (GET /checks): ``checks:made`` and ``checks:ends``, sorted sets of the
ids by when each was made and when it expires, and ``checks:about``, a HASH of each
one's summary.

A check is a finished answer kept for its report page, not part of the index: nothing
else points at it and it points at nothing, so it is one key, written once, and Redis
itself drops it at its expiry (SET ... PX). The expiry sweeper's queue exists for
documents, whose band entries, text and id must go with their record in order; a
check has none of those, and a key that expires by itself never needs a sweep that
could fall behind. Its place in the list cannot expire with it, so each new check
takes out of the list up to PRUNE that have expired (more than it adds), and a page of
the list leaves out any that expired since. Deleting a collection unlinks its checks
with its other keys.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.store.layout import Layout
from app.store.resp import scored
from app.store.store import Store

KIND = b"c:"
MADE, ENDS, ABOUT = b"checks:made", b"checks:ends", b"checks:about"
# Expired checks a new one takes out of the list.
PRUNE = 64


class CheckStore:
    """The stored checks of one collection, on that collection's store."""

    def __init__(self, store: Store) -> None:
        self._transport = store.transport
        prefix = Layout(store.collection).prefix
        self._head = prefix + KIND
        self._made, self._ends, self._about = prefix + MADE, prefix + ENDS, prefix + ABOUT

    def key(self, check_id: str) -> bytes:
        return self._head + check_id.encode()

    async def put(
        self, check_id: str, blob: bytes, ttl_ms: int, made_ms: int, about: bytes
    ) -> bool:
        """Store a new check for ttl_ms and list it, made at made_ms (now), with its
        summary (about); False if the id is taken (NX: a 128-bit random id never is, but a check
        is never overwritten). PX, not PXAT: Redis before 6.2 has no PXAT, and the
        check's own expires_at is written from the same clock."""
        command = (b"SET", self.key(check_id), blob, b"NX", b"PX", b"%d" % ttl_ms)
        (done,) = await self._transport.commands([command], write=True)
        if done is None:
            return False
        name = check_id.encode()
        (expired,) = await self._transport.commands(
            [
                (
                    b"ZRANGEBYSCORE",
                    self._ends,
                    b"-inf",
                    b"%d" % made_ms,
                    b"LIMIT",
                    b"0",
                    b"%d" % PRUNE,
                )
            ]
        )
        await self._transport.commands(
            [
                (b"ZADD", self._made, b"%d" % made_ms, name),
                (b"ZADD", self._ends, b"%d" % (made_ms + ttl_ms), name),
                (b"HSET", self._about, name, about),
                *self._unlisted(expired),
            ],
            write=True,
        )
        return True

    async def get(self, check_id: str) -> bytes | None:
        """A stored check, None when there is none (never made, deleted or expired)."""
        (blob,) = await self._transport.commands([(b"GET", self.key(check_id))])
        return blob

    async def delete(self, check_id: str) -> bool:
        """Remove a stored check and its place in the list; whether there was one."""
        n, *_ = await self._transport.commands(
            [(b"DEL", self.key(check_id)), *self._unlisted([check_id.encode()])], write=True
        )
        return bool(n)

    async def page(
        self, before: tuple[int, bytes] | None, most: int
    ) -> list[tuple[bytes, int, bytes | None]]:
        """Up to `most` listed checks, newest first, after `before` (the (made ms, id) of
        the last one a previous page gave): (id, made ms, summary or None) each, None
        also where the check's own key is gone (deleted with its collection mid-write,
        or evicted). Checks made in one millisecond come in descending id order, as
        Redis orders them."""
        top = b"+inf" if before is None else b"%d" % before[0]
        out: list[tuple[bytes, int]] = []
        skip = 0
        while len(out) < most:
            want = most - len(out)
            (rows,) = await self._transport.commands(
                [(b"ZREVRANGEBYSCORE", self._made, top, b"-inf", b"WITHSCORES",
                  b"LIMIT", b"%d" % skip, b"%d" % want)]
            )  # fmt: skip
            got = scored(rows)
            skip += len(got)
            # The same millisecond as the cursor: only the ids after it, in Redis' order.
            out += [(m, s) for m, s in got if before is None or (s, m) < before]
            if len(got) < want:
                break
        if not out:
            return []
        about, *there = await self._transport.commands(
            [
                (b"HMGET", self._about, *(m for m, _ in out)),
                *((b"EXISTS", self._head + m) for m, _ in out),
            ]
        )
        return [
            (m, s, a if kept else None) for (m, s), a, kept in zip(out, about, there, strict=True)
        ]

    async def unlist(self, ids: Sequence[bytes]) -> None:
        """Take checks out of the list (they expired, or their key is gone)."""
        if ids:
            await self._transport.commands(self._unlisted(ids), write=True)

    def _unlisted(self, ids: Sequence[bytes]) -> list[tuple[bytes, ...]]:
        if not ids:
            return []
        return [
            (b"ZREM", self._made, *ids),
            (b"ZREM", self._ends, *ids),
            (b"HDEL", self._about, *ids),
        ]
