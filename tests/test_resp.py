"""app.store.resp: a batch's replies read in bulk from a real redis-server."""

from __future__ import annotations

import asyncio

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from app.store.resp import _SLICE, encode, roundtrip


async def _exchange(redis_url: str, payload: bytes, count: int) -> list:
    client = aioredis.Redis.from_url(redis_url)
    try:
        conn = await client.connection_pool.get_connection()
        try:
            return await roundtrip(conn, payload, count)
        finally:
            await client.connection_pool.release(conn)
    finally:
        await client.aclose()


def test_many_replies_over_many_reads_come_back_in_order(redis_url: str) -> None:
    """Replies spanning several socket reads and several parse slices, an error reply
    among them, come back one per command, in order, each the reply Redis sent."""
    n = 5 * _SLICE + 7
    key = b"test-resp-%d" % n
    cmds = [encode(b"DEL", key)]
    # Values long enough that the replies take many reads of the socket.
    cmds += [encode(b"APPEND", key, b"x" * 50) for _ in range(n)]
    cmds += [encode(b"LPUSH", key, b"y")]  # a wrong-type error amid the replies
    cmds += [encode(b"STRLEN", key), encode(b"GETRANGE", key, b"0", b"-1")]
    replies = asyncio.run(_exchange(redis_url, b"".join(cmds), len(cmds)))
    assert len(replies) == len(cmds)
    assert replies[1 : n + 1] == [50 * (i + 1) for i in range(n)]
    assert isinstance(replies[n + 1], ResponseError)
    assert replies[n + 2] == 50 * n
    assert replies[n + 3] == b"x" * (50 * n)
