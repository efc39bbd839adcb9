"""Keep-alive connections spread evenly over `neardup serve`'s workers.

uvicorn's workers share one listening socket, and uvloop accepts every pending connect
in one go: the worker that wakes first takes most of a burst of connects (16/0 and 13/3
of a client's 16 were seen). A keep-alive connection stays with its worker, so that
worker then serves a client's burst of requests one after another while another idles,
and the latency of a paced load is the busier worker's.

Here each worker accepts itself, one connection at a time, from the shared socket: a
worker that holds more open connections than another live worker leaves a pending
connect to it for GRACE_S, and takes it only if it is still pending then (the other may
be busy in a long request). Each worker publishes its count in its slot of a small file
that every worker maps (WorkerShares); a slot belongs to the worker holding its lock,
so a worker that died (its lock gone with it) is not waited for.
"""

from __future__ import annotations

import asyncio
import fcntl
import logging
import mmap
import os
import socket
import struct
import tempfile
from collections.abc import Callable
from typing import Any

import uvicorn
from uvicorn.supervisors import multiprocess

from app.service.lineage import die_with_parent

log = logging.getLogger("neardup.server")

# Where the workers' shares file is named for them (set by install(), read by each worker).
ENV = "_NEARDUP_WORKER_SHARES"  # not NEARDUP_*: settings refuse names they do not know
# How long a worker holding more connections leaves a connect to another: one tick of
# the event loop's timers (libuv's are in milliseconds).
GRACE_S = 0.001
# How often a worker publishes its count when nothing is accepted (connections close).
PUBLISH_EVERY_S = 0.05
# How long a worker stops accepting after accept() failed (out of file descriptors): the
# socket stays readable, and trying again at once would spin.
RETRY_S = 0.5
_SLOT = struct.Struct("<q")
# What a worker that stopped accepting publishes: more than any worker holds.
STOPPING = 2**62


class WorkerShares:
    """One slot per worker in a shared file: the open connections of the worker that
    holds the slot's lock."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDWR)
        size = os.fstat(self._fd).st_size
        self._slots = size // _SLOT.size
        self._map = mmap.mmap(self._fd, size)
        self.mine = self._claim()

    def _claim(self) -> int | None:
        for i in range(self._slots):
            if self._lock(i):
                _SLOT.pack_into(self._map, i * _SLOT.size, 0)
                return i
        return None  # more workers than slots (a restart racing its predecessor's exit)

    def publish(self, count: int) -> None:
        if self.mine is not None:
            _SLOT.pack_into(self._map, self.mine * _SLOT.size, count)

    def someone_has_fewer(self, count: int) -> bool:
        """Whether another live worker holds fewer open connections than count."""
        for i in range(self._slots):
            if i == self.mine or _SLOT.unpack_from(self._map, i * _SLOT.size)[0] >= count:
                continue
            if self._alive(i):
                return True
        return False

    def _alive(self, i: int) -> bool:
        # A slot's lock is held by its worker for the worker's life; getting it means
        # nobody holds it (POSIX record locks go with the process that held them).
        if not self._lock(i):
            return True
        fcntl.lockf(self._fd, fcntl.LOCK_UN, _SLOT.size, i * _SLOT.size)
        return False

    def _lock(self, i: int) -> bool:
        """Whether this process got slot i's lock (without waiting)."""
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, _SLOT.size, i * _SLOT.size)
        except OSError:
            return False
        return True


class Acceptor:
    """Accepts from a shared listening socket one connection at a time, leaving a
    connect to a less busy worker (see the module's docstring)."""

    def __init__(
        self,
        sock: socket.socket,
        make_protocol: Callable[[], asyncio.Protocol],
        open_connections: Callable[[], int],
        shares: WorkerShares,
        backlog: int,
    ) -> None:
        sock.setblocking(False)  # another worker may take a connect this one was woken for
        sock.listen(backlog)  # the supervisor binds it; listening is left to the server
        self._sock = sock
        self._make = make_protocol
        self._open = open_connections
        self._shares = shares
        self._loop = asyncio.get_running_loop()
        self._starting = 0  # accepted, not yet handed to a protocol
        self._waiting: asyncio.TimerHandle | None = None
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop.add_reader(sock.fileno(), self._ready)
        self._tick = self._loop.call_later(PUBLISH_EVERY_S, self._publish_again)

    def _count(self) -> int:
        return self._open() + self._starting

    def _publish_again(self) -> None:
        self._shares.publish(self._count())
        self._tick = self._loop.call_later(PUBLISH_EVERY_S, self._publish_again)

    def _ready(self) -> None:
        count = self._count()
        self._shares.publish(count)
        if self._shares.someone_has_fewer(count):
            self._loop.remove_reader(self._sock.fileno())
            self._waiting = self._loop.call_later(GRACE_S, self._take, True)
        else:
            self._take(False)

    def _take(self, waited: bool) -> None:
        self._waiting = None
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError):
            pass  # another worker took it
        except OSError as exc:  # out of file descriptors and the like: said, not fatal
            log.warning("accepting a connection failed (tried again in %s s): %s", RETRY_S, exc)
            if not waited:
                self._loop.remove_reader(self._sock.fileno())
            self._waiting = self._loop.call_later(RETRY_S, self._resume)
            return
        else:
            conn.setblocking(False)
            # As uvloop's own server sets it: without it, a response written in two
            # parts waits on the client's delayed ACK.
            if conn.family in (socket.AF_INET, socket.AF_INET6):
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._starting += 1
            self._shares.publish(self._count())
            task = self._loop.create_task(self._connect(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        if waited and not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._ready)

    def _resume(self) -> None:
        self._waiting = None
        if not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._ready)

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._make, conn)
        except OSError:
            conn.close()  # the client went away meanwhile
        finally:
            self._starting -= 1

    def close(self) -> None:
        """Stop accepting (the listening socket stays open: it is the parent's)."""
        if self._closed:
            return
        self._closed = True
        self._tick.cancel()
        if self._waiting is not None:
            self._waiting.cancel()
        else:
            self._loop.remove_reader(self._sock.fileno())
        # A stopping worker takes no more connects: none is to be left to it.
        self._shares.publish(STOPPING)


class BalancedServer(uvicorn.Server):
    """uvicorn's server, whose workers accept through an Acceptor (uvicorn's own start-up,
    lifespan and shutdown otherwise)."""

    _acceptors: list[Acceptor]

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        path = os.environ.get(ENV)
        if not sockets or not path or self.config.ssl is not None:
            return await super().startup(sockets)
        # uvicorn's start-up with no socket of its own: the lifespan and its state.
        await super().startup(sockets=[])
        shares = WorkerShares(path)
        config, state = self.config, self.server_state

        def make_protocol() -> asyncio.Protocol:
            return config.http_protocol_class(  # type: ignore[call-arg]
                config=config, server_state=state, app_state=self.lifespan.state
            )

        self._acceptors = [
            Acceptor(s, make_protocol, lambda: len(state.connections), shares, config.backlog)
            for s in sockets
        ]

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for acceptor in getattr(self, "_acceptors", []):
            acceptor.close()
        await super().shutdown(sockets)


class BalancedProcess(multiprocess.Process):
    """uvicorn's worker process, running a BalancedServer, that exits when serve does
    (even after kill -9 of serve, which leaves uvicorn no time to stop its workers)."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket]) -> None:
        self.parent = os.getpid()  # set before uvicorn pickles self.target for the child
        super().__init__(config, sockets)

    def target(self, sockets: list[socket.socket] | None = None) -> None:
        die_with_parent(self.parent)
        super().target(sockets)

    @property
    def server(self) -> uvicorn.Server:
        if self._server is None:
            self._server = BalancedServer(config=self.config)
        return self._server


def install(workers: int) -> str:
    """Make uvicorn's worker processes balance their connections: a shares file of a
    slot per worker (named in ENV, which the workers inherit), and uvicorn's supervisor
    made to start BalancedProcess workers. Returns the file's path."""
    fd, path = tempfile.mkstemp(prefix="neardup-workers-")
    os.ftruncate(fd, _SLOT.size * max(1, workers))
    os.close(fd)
    os.environ[ENV] = path
    # The supervisor names its worker class at each (re)start; workers are spawned, so
    # the class travels by reference and each worker imports this module.
    multiprocess.Process = BalancedProcess  # type: ignore[misc]
    return path
