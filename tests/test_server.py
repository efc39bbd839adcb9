"""The HTTP protocol's one-send transport (app.service.server._OneSend), on real sockets.

Each test runs an asyncio transport over a real socket pair and counts the sends the
wrapped transport makes by the segments the peer's reads could see apart.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable

from app.service.server import _OneSend


class _Sink(asyncio.Protocol):
    """The server side's protocol: nothing to do, the tests write through its transport."""


class _Counting:
    """A real transport whose writes are counted on their way to the socket."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.transport.write(data)

    def __getattr__(self, name: str) -> object:
        return getattr(self.transport, name)


async def _with_pair(body: Callable[[_OneSend, _Counting, socket.socket], Awaitable[None]]) -> None:
    loop = asyncio.get_running_loop()
    ours, theirs = socket.socketpair()
    theirs.settimeout(5)
    transport, _ = await loop.create_connection(_Sink, sock=ours)
    counting = _Counting(transport)  # type: ignore[arg-type]
    try:
        await body(_OneSend(counting, loop), counting, theirs)  # type: ignore[arg-type]
    finally:
        transport.abort()
        theirs.close()


def _read(sock: socket.socket, size: int) -> bytes:
    got = b""
    while len(got) < size:
        chunk = sock.recv(size - len(got))
        if not chunk:
            break
        got += chunk
    return got


def test_a_head_and_its_body_go_out_in_one_write() -> None:
    """A response's head and body, written one after the other, are one send."""

    async def body(one: _OneSend, counting: _Counting, peer: socket.socket) -> None:
        one.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        assert counting.writes == []
        one.write(b"{}")
        assert counting.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
        await asyncio.sleep(0)
        assert len(counting.writes) == 1  # nothing left to release
        assert _read(peer, 40) == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"

    asyncio.run(_with_pair(body))


def test_a_write_with_nothing_after_it_goes_out_on_the_loops_next_turn() -> None:
    """A lone write (a HEAD's head, a stream's last chunk) is sent one loop turn later."""

    async def body(one: _OneSend, counting: _Counting, peer: socket.socket) -> None:
        one.write(bytearray(b"HTTP/1.1 204 No Content\r\n\r\n"))
        assert counting.writes == []
        assert one.get_write_buffer_size() == 27
        await asyncio.sleep(0)
        assert counting.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"]
        assert _read(peer, 27) == b"HTTP/1.1 204 No Content\r\n\r\n"

    asyncio.run(_with_pair(body))


def test_a_stream_keeps_its_order_in_pairs() -> None:
    """Many writes leave in order, two to a send, the odd last one on the next turn."""

    async def body(one: _OneSend, counting: _Counting, peer: socket.socket) -> None:
        chunks = [f"chunk {i};".encode() for i in range(7)]
        for chunk in chunks:
            one.write(chunk)
        await asyncio.sleep(0)
        assert len(counting.writes) == 4
        assert b"".join(counting.writes) == b"".join(chunks)
        assert _read(peer, len(b"".join(chunks))) == b"".join(chunks)

    asyncio.run(_with_pair(body))


def test_close_sends_what_is_held_first_and_abort_drops_it() -> None:
    """close() sends a held write before closing; abort() closes without it."""

    async def closing(one: _OneSend, counting: _Counting, peer: socket.socket) -> None:
        one.write(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
        one.close()
        assert counting.writes == [b"HTTP/1.1 408 Request Timeout\r\n\r\n"]
        await asyncio.sleep(0)  # the socket closes on the loop's next turn
        assert _read(peer, 100) == b"HTTP/1.1 408 Request Timeout\r\n\r\n"  # then EOF

    async def aborting(one: _OneSend, counting: _Counting, peer: socket.socket) -> None:
        one.write(b"never sent")
        one.abort()
        await asyncio.sleep(0)
        assert counting.writes == []
        assert _read(peer, 100) == b""

    asyncio.run(_with_pair(closing))
    asyncio.run(_with_pair(aborting))


def test_a_write_held_when_the_connection_goes_is_dropped() -> None:
    """A write held while the transport closes under it is not sent to a closed socket."""

    async def body(one: _OneSend, counting: _Counting, peer: socket.socket) -> None:
        one.write(b"late")
        counting.transport.close()  # the connection goes (uvicorn's own close, a reset)
        await asyncio.sleep(0)
        assert counting.writes == []

    asyncio.run(_with_pair(body))
