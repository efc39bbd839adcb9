"""Deadlines for many tasks at once: asyncio.timeout_at's behaviour, one timer a tick.

asyncio.timeout_at arms a timer per use (~3.5 µs to enter and leave, with uvloop or
without), and a query used two: the request's deadline and its Redis exchange's. Here
the deadlines of one event loop that fall in the same TICK share one timer, and leaving
one in time costs a set removal. A deadline fires at most TICK late; it never fires early.
One less than EXACT_BELOW away gets a timer of its own, as with asyncio.

What the body sees is asyncio.timeout_at's: cancelled at the deadline, the CancelledError
turned into TimeoutError as the block is left, unless something else also cancelled the
task meanwhile (then the CancelledError goes on).
"""

from __future__ import annotations

import asyncio
import math
import weakref
from types import TracebackType

# How far past its deadline a block may still run (the timers' grain), in seconds.
TICK = 0.01
# A deadline nearer than this gets a timer of its own, exact as asyncio's.
EXACT_BELOW = 10 * TICK


class _Timers:
    """The pending deadlines of one event loop, by tick."""

    def __init__(self) -> None:
        # No reference to the loop: _TIMERS holds this as long as its loop lives.
        self._ticks: dict[int, set[Deadline]] = {}

    def add(self, deadline: Deadline) -> None:
        loop = asyncio.get_running_loop()
        if deadline.when - loop.time() < EXACT_BELOW:
            # A short one gets its own timer: a tick late would be late by much of it.
            deadline.tick = 0
            deadline.handle = loop.call_at(deadline.when, deadline.expire)
            return
        tick = math.ceil(deadline.when / TICK)
        deadline.tick = tick
        due = self._ticks.get(tick)
        if due is None:
            due = self._ticks[tick] = set()
            loop.call_at(tick * TICK, self._fire, tick)
        due.add(deadline)

    def discard(self, deadline: Deadline) -> None:
        if deadline.handle is not None:
            deadline.handle.cancel()
            return
        due = self._ticks.get(deadline.tick)
        if due is not None:
            due.discard(deadline)

    def _fire(self, tick: int) -> None:
        for deadline in self._ticks.pop(tick, ()):
            deadline.expire()


_TIMERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Timers] = weakref.WeakKeyDictionary()


def _timers() -> _Timers:
    loop = asyncio.get_running_loop()
    timers = _TIMERS.get(loop)
    if timers is None:
        timers = _TIMERS[loop] = _Timers()
    return timers


class Deadline:
    """``async with Deadline(when):`` as ``async with asyncio.timeout_at(when):`` (when on
    the running loop's clock), up to TICK late."""

    __slots__ = ("_cancelling", "_expired", "_task", "_timers", "handle", "tick", "when")

    def __init__(self, when: float) -> None:
        self.when = when
        self.tick = 0
        self.handle: asyncio.TimerHandle | None = None  # a short deadline's own timer
        self._expired = False
        self._task: asyncio.Task[object] | None = None
        self._timers: _Timers | None = None
        self._cancelling = 0

    async def __aenter__(self) -> Deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a Deadline is used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        self._timers = _timers()
        self._timers.add(self)
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._timers is not None and self._task is not None
        self._timers.discard(self)
        if self._expired:
            self._expired = False
            # As asyncio.Timeout: the cancel this made is taken back; a TimeoutError only
            # when no other cancel came meanwhile.
            if self._task.uncancel() <= self._cancelling and kind is asyncio.CancelledError:
                raise TimeoutError from exc

    def expire(self) -> None:
        """Cancel the task inside the block (the tick's timer calls this)."""
        task = self._task
        if task is not None and not task.done():
            self._expired = True
            task.cancel()


def deadline_in(seconds: float) -> Deadline:
    """A Deadline that many seconds from now (asyncio.timeout's counterpart)."""
    return Deadline(asyncio.get_running_loop().time() + seconds)
