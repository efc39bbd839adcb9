"""app.core.deadlines: a Deadline behaves as asyncio.timeout_at (the oracle) in each case,
never fires early and at most a tick late, and leaves no cancel behind once left in time."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest

from app.core import deadlines
from app.core.deadlines import Deadline, deadline_in

Maker = Callable[[float], AbstractAsyncContextManager[Any]]
OURS: Maker = Deadline
ORACLE: Maker = asyncio.timeout_at


async def _overrun(at: Maker, k: float) -> str:
    loop = asyncio.get_running_loop()
    try:
        async with at(loop.time() + 0.05 * k):
            await asyncio.sleep(2 * k)
    except TimeoutError:
        return "timeout"
    return "finished"


async def _in_time(at: Maker, k: float) -> str:
    loop = asyncio.get_running_loop()
    async with at(loop.time() + 0.05 * k):
        await asyncio.sleep(0.001)
    # Past the deadline now: nothing may cancel the task any more.
    await asyncio.sleep(0.1 * k)
    return "finished"


async def _cancelled_from_outside(at: Maker, k: float) -> str:
    loop = asyncio.get_running_loop()

    async def body() -> str:
        async with at(loop.time() + 5):
            await asyncio.sleep(2 * k)
        return "finished"

    task = asyncio.ensure_future(body())
    await asyncio.sleep(0.01)
    task.cancel()
    try:
        return await task
    except asyncio.CancelledError:
        return "cancelled"
    except TimeoutError:
        return "timeout"


async def _inner_fires(at: Maker, k: float) -> str:
    loop = asyncio.get_running_loop()
    async with at(loop.time() + 5):
        try:
            async with at(loop.time() + 0.03 * k):
                await asyncio.sleep(2 * k)
        except TimeoutError:
            return "inner timeout, outer running"
    return "finished"


async def _outer_fires(at: Maker, k: float) -> str:
    loop = asyncio.get_running_loop()
    try:
        async with at(loop.time() + 0.03 * k):
            try:
                async with at(loop.time() + 5):
                    await asyncio.sleep(2 * k)
            except TimeoutError:
                return "inner timeout"
    except TimeoutError:
        return "outer timeout"
    return "finished"


async def _past_at_entry(at: Maker, k: float) -> str:
    loop = asyncio.get_running_loop()
    try:
        async with at(loop.time() - 1):
            await asyncio.sleep(0.5)
    except TimeoutError:
        return "timeout"
    return "finished"


async def _swallowed_then_awaits(at: Maker, k: float) -> str:
    """The body catches the cancel itself: as with asyncio, no TimeoutError is raised."""
    loop = asyncio.get_running_loop()
    try:
        async with at(loop.time() + 0.03 * k):
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(2 * k)
        await asyncio.sleep(0.01)
    except TimeoutError:
        return "timeout"
    return "finished"


CASES = [_overrun, _in_time, _cancelled_from_outside, _inner_fires, _outer_fires, _past_at_entry,
         _swallowed_then_awaits]  # fmt: skip


@pytest.mark.parametrize("k", [1, 5], ids=["own-timer", "tick"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__.strip("_"))
def test_a_deadline_behaves_as_asyncio_timeout_at(
    case: Callable[[Maker, float], Awaitable[str]], k: float
) -> None:
    """Each case ends the same way with a Deadline as with asyncio.timeout_at, with deadlines
    near enough for timers of their own (k=1) and far enough to share a tick's (k=5)."""
    assert asyncio.run(case(OURS, k)) == asyncio.run(case(ORACLE, k))


def test_a_deadline_fires_not_early_and_at_most_a_tick_late() -> None:
    """Bodies that overrun deadlines spread over several ticks are stopped at or after
    their own deadline, and before a plain timer set a tick past it runs (the loop runs due
    timers in order, so this holds however late a busy machine runs them both)."""

    async def run() -> list[tuple[float, bool]]:
        loop = asyncio.get_running_loop()

        async def one(delay: float) -> tuple[float, bool]:
            when = loop.time() + delay
            task = asyncio.current_task()
            assert task is not None
            stopped: list[bool] = []
            seen: list[bool] = []
            # The marker asks whether the deadline has cancelled the body by then.
            loop.call_at(
                when + deadlines.TICK + 1e-4,
                lambda: seen.append(bool(stopped) or task.cancelling() > 0),
            )
            try:
                async with Deadline(when):
                    await asyncio.sleep(2)
            except TimeoutError:
                stopped.append(True)
                lateness = loop.time() - when
                while not seen:  # the marker runs once its time has come
                    await asyncio.sleep(deadlines.TICK)
                return lateness, seen == [True]
            raise AssertionError("not stopped")

        # Short deadlines (their own timers) and longer ones (sharing a tick's).
        delays = [0.02 + i * 0.007 for i in range(6)] + [0.15 + i * 0.007 for i in range(6)]
        return await asyncio.gather(*(one(d) for d in delays))

    results = asyncio.run(run())
    assert min(late for late, _ in results) >= 0, results
    assert all(in_time for _, in_time in results), results


def test_many_deadlines_left_in_time_leave_nothing_behind() -> None:
    """A thousand blocks left in time: none of their tasks is cancelled later, and the
    loop's pending deadlines are gone once their ticks pass."""

    async def run() -> tuple[int, int]:
        async def one() -> bool:
            async with deadline_in(0.15):
                await asyncio.sleep(0)
            try:
                await asyncio.sleep(0.25)
            except asyncio.CancelledError:
                return False
            return True

        done = await asyncio.gather(*(one() for _ in range(1000)))
        await asyncio.sleep(deadlines.TICK * 3)
        pending = sum(len(d) for d in deadlines._timers()._ticks.values())
        return sum(done), pending

    assert asyncio.run(run()) == (1000, 0)


def test_the_timers_keep_no_event_loop_alive() -> None:
    """Event loops that used deadlines and ended are collected: the loops' timers are held
    only as long as their loop is."""
    import gc

    async def use() -> None:
        async with deadline_in(5):
            await asyncio.sleep(0)

    for _ in range(20):
        asyncio.run(use())
    gc.collect()
    assert len(deadlines._TIMERS) <= 1
