"""The Redis protocol (RESP) by hand: commands encoded in bulk, replies read in bulk.

redis-py encodes, sends and parses one command at a time in Python, which costs
more than Redis takes to run a band command, and a document has tens of them.
Here a batch of commands is encoded in one piece (band commands by numpy, from
one template row), sent in one write, and its replies are parsed by hiredis
straight from the connection's reader. This is the one module that reaches into
redis-py's connections and parsers.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import hiredis
import numpy as np
from redis._parsers import hiredis as _redis_hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from app.store.reads import READ_ONLY


@dataclass(frozen=True)
class Script:
    """A Lua script as Redis runs it: EVAL source numkeys ..., or EVALSHA sha numkeys ..."""

    name: str
    source: bytes
    sha: bytes  # hex SHA1 of source, the name EVALSHA knows it by
    numkeys: bytes  # how many leading arguments of a call are keys (decimal)


Command = tuple[bytes, ...]


def encode(*args: bytes) -> bytes:
    """One command in RESP, ready to send."""
    return b"*%d\r\n" % len(args) + b"".join([b"$%d\r\n%s\r\n" % (len(a), a) for a in args])


class Batch(ABC):
    """Single-key commands (name, key, args...) made together, which a single server
    takes packed in one piece and a cluster one by one, each sent to the master of
    its key's slot."""

    size: int  # how many commands, or keys of one multi-key command: the work asked of Redis
    read_only = False  # whether every command of it only reads (a replica may serve it)

    @abstractmethod
    def commands(self) -> Sequence[Command]:
        """Each command on its own, its key second."""

    @abstractmethod
    def packed(self) -> tuple[bytes, int]:
        """The batch in RESP, and how many replies it gets."""

    def replies(self, replies: list[Any]) -> list[Any]:
        """Each command's reply, from the replies to packed()."""
        return replies


class MGet(Batch):
    """GET of many keys: one MGET on a single server, one GET per key on a cluster."""

    read_only = True

    def __init__(self, keys: Sequence[bytes]) -> None:
        self._keys = keys
        self.size = len(keys)

    def commands(self) -> list[Command]:
        return [(b"GET", k) for k in self._keys]

    def packed(self) -> tuple[bytes, int]:
        keys = self._keys
        mget = b"*%d\r\n$4\r\nMGET\r\n" % (len(keys) + 1)
        return mget + b"".join([b"$%d\r\n%s\r\n" % (len(k), k) for k in keys]), 1

    def replies(self, replies: list[Any]) -> list[Any]:
        return list(replies[0])


class Template:
    """A command whose arguments have the same length every time: its RESP as a numpy
    row, and where each argument's bytes are in it.

    Every such command differs only in bytes at fixed places, so numpy can build
    many at once by copying the row and writing those bytes in as columns.
    """

    def __init__(self, *args: bytes) -> None:
        self.name = args[0]
        self.row = np.frombuffer(encode(*args), dtype=np.uint8)
        self.spans: list[tuple[int, int]] = []
        at = len(b"*%d\r\n" % len(args))
        for a in args:
            at += len(b"$%d\r\n" % len(a))
            self.spans.append((at, at + len(a)))
            at += len(a) + len(b"\r\n")
        # A row's arguments, cut from its bytes.
        self.args: Callable[[bytes], Command] = itemgetter(*(slice(*s) for s in self.spans))

    def at(self, arg: int) -> int:
        """Where argument arg (0 is the command's name) starts in the row."""
        return self.spans[arg][0]


class Rows(Batch):
    """Commands from one Template: row i has columns[j][1][i] written at columns[j][0]."""

    def __init__(
        self, template: Template, columns: Iterable[tuple[int, np.ndarray]], count: int
    ) -> None:
        self._template = template
        self._columns = columns
        self.size = count
        self.read_only = template.name in READ_ONLY

    def matrix(self) -> np.ndarray:
        """The commands in RESP, one row each (uint8)."""
        row = self._template.row
        rows = np.empty((self.size, len(row)), dtype=np.uint8)
        rows[:] = row
        for start, column in self._columns:
            rows[:, start : start + column.shape[1]] = column
        return rows

    @property
    def name_end(self) -> int:
        """Where a row's arguments after the command's name start."""
        return self._template.spans[0][1] + 2  # past the name and its CRLF

    @property
    def arity(self) -> int:
        """Arguments a row has after the command's name."""
        return len(self._template.spans) - 1

    def packed(self) -> tuple[bytes, int]:
        return self.matrix().tobytes(), self.size

    def commands(self) -> list[Command]:
        raw, args, width = self.packed()[0], self._template.args, len(self._template.row)
        return [args(raw[row : row + width]) for row in range(0, len(raw), width)]

    def arguments(self) -> tuple[bytes, int]:
        """Every row's arguments after the command's name, in RESP, end to end (the
        tail of another command: Eval), and how many arguments that is."""
        if not self.size:
            return b"", 0
        return self.matrix()[:, self.name_end :].tobytes(), self.size * self.arity


class Interleaved(Batch):
    """Rows batches of one command (their templates differ in the width of an argument)
    as one batch in a given order: part (rows, at) gives command at[i] its row i.

    Packed part after part (the replies put back in order after), which costs a join;
    as a script's arguments, where the order is the script's, row by row in order."""

    def __init__(self, parts: Sequence[tuple[Rows, np.ndarray]], count: int) -> None:
        self._parts = parts
        self.size = count
        self.read_only = all(rows.read_only for rows, _ in parts)

    def _arguments(self) -> bytes:
        """Every part's rows without the command's name, in the given order."""
        mats = []
        widths = np.zeros(self.size, dtype=np.int64)
        for rows, at in self._parts:
            mat = rows.matrix()[:, rows.name_end :]
            widths[at] = mat.shape[1]
            mats.append((mat, at))
        starts = np.cumsum(widths) - widths
        out = np.empty(int(widths.sum()), dtype=np.uint8)
        for mat, at in mats:
            out[starts[at][:, None] + np.arange(mat.shape[1])] = mat
        return out.tobytes()

    def packed(self) -> tuple[bytes, int]:
        return b"".join(rows.packed()[0] for rows, _ in self._parts), self.size

    def replies(self, replies: list[Any]) -> list[Any]:
        # Where each command's reply is, taken in C: a Python loop cost an ingest ~6 us
        # a document (and numpy would spread a reply that is a list).
        order = np.concatenate([at for _, at in self._parts])
        if len(order) < 2 or bool(np.all(order[1:] > order[:-1])):  # in order already
            return list(replies)
        where = np.argsort(order, kind="stable")
        return list(itemgetter(*where.tolist())(replies))

    def commands(self) -> list[Command]:
        out: list[Command] = [()] * self.size
        for rows, at in self._parts:
            for i, command in zip(at.tolist(), rows.commands(), strict=True):
                out[i] = command
        return out

    def arguments(self) -> tuple[bytes, int]:
        """As Rows.arguments, every part's rows in the given order."""
        if not self.size:
            return b"", 0
        return self._arguments(), sum(len(at) * rows.arity for rows, at in self._parts)


class Eval(Batch):
    """One call of a script whose arguments may end in a Rows batch's (its rows without
    their command's name, as numpy made them); with load, the script is loaded in the
    same exchange (after a NOSCRIPT: a restarted Redis). Single server only: its
    commands are not split. A read_only script's call may go to a replica, where
    read_only_call() names it EVALSHA_RO (Redis 7+, which then refuses any write
    in it; older servers refuse a script's writes on a read-only replica anyway)."""

    def __init__(
        self,
        script: Script,
        args: Sequence[bytes],
        tail: Rows | Interleaved | None,
        weight: int,
        load: bool,
        read_only: bool = False,
    ) -> None:
        self._source = script.source
        self._load = encode(b"SCRIPT", b"LOAD", script.source) if load else b""
        self._head: tuple[bytes, ...] = (b"EVALSHA", script.sha, script.numkeys, *args)
        self._tail = tail
        self.size = weight
        self.read_only = read_only

    def loading(self) -> Eval:
        """The same call, the script loaded before it in the same exchange."""
        loaded = copy.copy(self)
        loaded._load = encode(b"SCRIPT", b"LOAD", self._source)
        return loaded

    def read_only_call(self) -> Eval:
        """The same call as EVALSHA_RO."""
        ro = copy.copy(self)
        ro._head = (b"EVALSHA_RO", *self._head[1:])
        return ro

    def commands(self) -> list[Command]:
        raise NotImplementedError("a script call is sent whole, to one server")

    def packed(self) -> tuple[bytes, int]:
        tail, count = self._tail.arguments() if self._tail is not None else (b"", 0)
        head = self._head
        call = b"*%d\r\n" % (len(head) + count) + b"".join(
            [b"$%d\r\n%s\r\n" % (len(a), a) for a in head]
        )
        return self._load + call + tail, 2 if self._load else 1

    def replies(self, replies: list[Any]) -> list[Any]:
        return replies[-1:]


def pairs(reply: Any) -> Iterable[tuple[bytes, bytes]]:
    """The (field, value) pairs of a map reply (HGETALL): a dict on a RESP3 connection,
    a flat list on a RESP2 one."""
    if isinstance(reply, dict):
        return reply.items()
    return zip(reply[::2], reply[1::2], strict=True)


def scored(reply: Any) -> list[tuple[bytes, int]]:
    """(member, integer score) of a WITHSCORES reply: pairs on a RESP3 connection, a flat
    list on a RESP2 one."""
    if reply and isinstance(reply[0], list):
        return [(m, int(float(s))) for m, s in reply]
    return [(m, int(float(s))) for m, s in zip(reply[::2], reply[1::2], strict=True)]


# What redis-py's hiredis reader answers while a reply is incomplete.
_INCOMPLETE = getattr(_redis_hiredis, "NOT_ENOUGH_DATA", False)


# Replies parsed per slice: large enough that the comprehension's setup is nothing, small
# enough that a slice running past the data read so far wastes little.
_SLICE = 1024


def bulk_readable(conn: Any) -> bool:
    """Whether replies on a redis-py connection are parsed by hiredis, so they can be read
    in bulk and as they come (roundtrip, some_replies)."""
    parser = getattr(conn, "_parser", None)
    reader = getattr(parser, "_reader", None)
    return isinstance(reader, hiredis.Reader) and hasattr(parser, "read_from_socket")


async def roundtrip(conn: Any, payload: bytes, count: int) -> list[Any]:
    """Send payload on a connected redis-py connection in one write and read the next
    count replies, error replies as exception objects.

    With hiredis (a dependency) the replies are parsed in bulk from its reader:
    redis-py's read_response spends far more Python per reply than parsing
    takes, and a band lookup is tens of replies. On any failure, or
    cancellation, the connection is disconnected before the error goes on:
    replies may be left unread on it, so it must not be reused.
    """
    try:
        await conn.send_packed_command(payload, check_health=False)
        if not bulk_readable(conn):
            return await _read_one_by_one(conn, count)
        parser = conn._parser
        gets = parser._reader.gets
        replies: list[Any] = []
        while len(replies) < count:
            # Parsed in slices by a comprehension: a band write gets one reply per entry,
            # tens a document, and a Python loop per reply cost more than hiredis' parse.
            # Past the data read so far each call answers _INCOMPLETE at once.
            got = [gets() for _ in range(min(count - len(replies), _SLICE))]
            if got[-1] is _INCOMPLETE:
                got = got[: got.index(_INCOMPLETE)]  # list.index matches it by identity first
                if not got:
                    await parser.read_from_socket()
                    continue
            for reply in got:
                if isinstance(reply, RedisConnectionError):
                    raise reply
            replies += got
        return replies
    except BaseException:
        await conn.disconnect()
        raise


def write_now(conn: Any, payload: bytes) -> None:
    """Hand payload to a connected redis-py connection's transport, not waiting for it
    to drain (app.store.pipe: called from a plain callback)."""
    conn._writer.write(payload)


async def some_replies(conn: Any) -> list[Any]:
    """The replies that have come on a bulk_readable connection, at least one (waiting for
    data if none has), error replies as exception objects."""
    parser = conn._parser
    gets = parser._reader.gets
    while True:
        got = []
        reply = gets()
        while reply is not _INCOMPLETE:
            got.append(reply)
            reply = gets()
        if got:
            return got
        await parser.read_from_socket()


async def _read_one_by_one(conn: Any, n: int) -> list[Any]:
    """The next n replies through redis-py's own parser, with no per-reply timer
    (timeout=inf): the caller times the whole exchange."""
    replies: list[Any] = []
    for _ in range(n):
        try:
            replies.append(await conn.read_response(timeout=math.inf))
        except ResponseError as exc:  # the connection stays in step
            replies.append(exc)
    return replies
