"""The service's index when Redis was away at start-up: checked on first contact."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path

from support.ids import key_for
from support.procs import RedisProc

from app import kernel
from app.core.settings import load_settings
from app.index import Document
from app.service.runtime import UncheckedIndex, params_of
from app.store import Store

TEXT = "the harbour master counted the boats that came in before the storm reached the town"


def test_an_index_opened_while_redis_was_away_takes_the_stored_parameters(
    tmp_path: Path,
) -> None:
    """A service that started while Redis was away reads and writes a collection made by
    an older release as that release did, once Redis answers: its stored tokenizer and
    its one ids HASH, not the configured ones."""
    redis = RedisProc(tmp_path / "redis", "--appendonly", "no")  # away at start-up
    settings = load_settings(redis_url=redis.url, collection="old", data_dir=tmp_path)
    configured = params_of(settings)
    assert configured.tokenizer == kernel.LATEST_TOKENIZER == 4 and configured.id_buckets > 0
    # What an older release stored: tokenizer 1, no id buckets.
    older = re.sub(rb',?"id_buckets":\d+', b"", replace(configured, tokenizer=1).to_json())

    async def run() -> None:
        store = Store.connect(redis.url, "old", 2.0)
        index = UncheckedIndex(store, settings)
        try:
            redis.start()
            with redis.client() as r:
                r.set("nd:old:config", older)
            await index.check()
            assert index.params.tokenizer == 1 and index.params.id_buckets == 0
            assert index.pieces.params == index.params
            await index.ingest([Document(TEXT, "a")])
            with redis.client() as r:
                assert r.hget(key_for("old", 0, "a"), "a") is not None
                assert not list(r.scan_iter("nd:old:I{*"))
            assert await index.count() == 1
        finally:
            await store.close()

    try:
        asyncio.run(run())
    finally:
        redis.stop()


def test_an_open_index_collects_at_the_service_thresholds_and_gives_them_back(
    redis_url: str, tmp_path: Path
) -> None:
    """While an index serves, young collections wait for GC_THRESHOLDS' 5,000 new objects
    (not 700: the requests in flight hold more, and every other one collected); closed,
    the process collects as before."""
    import gc

    from app.service.runtime import GC_THRESHOLDS, open_index

    settings = load_settings(redis_url=redis_url, collection="gcthresholds", data_dir=tmp_path)
    before = gc.get_threshold()

    async def run() -> tuple[int, int, int]:
        async with open_index(settings) as _:
            return gc.get_threshold()

    assert asyncio.run(run()) == GC_THRESHOLDS and GC_THRESHOLDS[0] > 700
    assert gc.get_threshold() == before


def test_indexes_open_together_keep_the_heap_frozen_until_the_last_closes(
    redis_url: str, tmp_path: Path
) -> None:
    """Two indexes open at once, closed in the order they opened: the thresholds stay the
    service's and the heap frozen until the second closes, then both are as before (a
    reviewer found the first close restoring Python's thresholds under the second)."""
    import gc

    from app.service.runtime import GC_THRESHOLDS, open_index

    first = load_settings(redis_url=redis_url, collection="gcone", data_dir=tmp_path)
    second = load_settings(redis_url=redis_url, collection="gctwo", data_dir=tmp_path)
    before, frozen_before = gc.get_threshold(), gc.get_freeze_count()

    async def run() -> list[tuple[tuple[int, int, int], bool]]:
        seen = []
        a = open_index(first)
        await a.__aenter__()
        b = open_index(second)
        await b.__aenter__()
        await a.__aexit__(None, None, None)
        seen.append((gc.get_threshold(), gc.get_freeze_count() > frozen_before))
        await b.__aexit__(None, None, None)
        seen.append((gc.get_threshold(), gc.get_freeze_count() > frozen_before))
        return seen

    assert asyncio.run(run()) == [(GC_THRESHOLDS, True), (before, False)]


def test_a_tool_waits_longer_for_redis_unless_its_timeout_is_set(
    redis_url: str, tmp_path: Path
) -> None:
    """A CLI tool's store waits TOOL_REDIS_TIMEOUT for Redis when NEARDUP_REDIS_TIMEOUT
    is not set (a batch job on a busy machine failed at 0.5 s), the service keeps the
    setting's 0.5 s, and a timeout that is set is what both use."""
    from app.service.runtime import TOOL_REDIS_TIMEOUT, open_index

    unset = load_settings(redis_url=redis_url, collection="tooltimeout", data_dir=tmp_path)
    given = load_settings(
        redis_url=redis_url, collection="tooltimeout", data_dir=tmp_path, redis_timeout=0.7
    )

    async def timeout_of(settings: object, tool: bool) -> float:
        async with open_index(settings, tool=tool) as index:  # type: ignore[arg-type]
            return float(index.store.transport.timeout)

    assert unset.redis_timeout == 0.5 < TOOL_REDIS_TIMEOUT
    assert asyncio.run(timeout_of(unset, tool=True)) == TOOL_REDIS_TIMEOUT
    assert asyncio.run(timeout_of(unset, tool=False)) == 0.5
    assert asyncio.run(timeout_of(given, tool=True)) == 0.7
    assert asyncio.run(timeout_of(given, tool=False)) == 0.7
