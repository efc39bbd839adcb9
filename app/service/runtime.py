"""Opening a collection's index from settings: the service and the CLI share it."""

from __future__ import annotations

import gc
import inspect
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

from app.core.settings import Settings, replica_url_list
from app.index import Index, Params
from app.index.errors import ConfigMismatchError
from app.service.embedded import EmbeddedRedis, EmbeddedRedisError
from app.store import Store, StoreError, StoreUnavailableError
from app.store.errors import StoreAuthError

log = logging.getLogger("neardup")

# The collector's thresholds while an index serves (young, middle, old generation;
# Python's are 700, 10, 10): see _serving_heap.
GC_THRESHOLDS = (5000, 20, 50)


# Indexes open in this process: the first freezes the heap and sets GC_THRESHOLDS, the
# last restores both, so indexes opened while another is open (the tests, a tool) leave
# the thresholds as they found them and never unfreeze what another froze.
_serving = 0
_saved_thresholds: tuple[int, int, int] = gc.get_threshold()


@contextmanager
def _serving_heap() -> Iterator[None]:
    """Collect the way a serving process should while an index is open.

    What starting built (modules, the app, its schemas: most of the heap) lives as long
    as the process, so no collection needs to scan it again: a full one cost ~58 ms of
    CPU, a request's worth at the p99.9, and ~1 ms frozen (bench/paced.py --gc-freeze,
    docs/figures/round-3.md). Unfrozen at the end, so a process that opens indexes one
    after another (the tests) still collects the cycles of those it closed.

    A young collection waits for 5,000 new objects (Python's 700): the requests in
    flight hold that many between them, so at 700 every POST /similar or two collected,
    2,400-2,600 times in 10 s at half the peak, promoting what was in flight towards full
    collections (18-20 of them); at 5,000, 0-2 young collections in 10 s, the longest
    1.5 ms (bench/paced.py, docs/figures/round-3.md)."""
    global _serving, _saved_thresholds
    if _serving == 0:
        gc.freeze()
        _saved_thresholds = gc.get_threshold()
        gc.set_threshold(*GC_THRESHOLDS)
    _serving += 1
    try:
        yield
    finally:
        _serving -= 1
        if _serving == 0:
            gc.set_threshold(*_saved_thresholds)
            gc.unfreeze()


def params_of(settings: Settings) -> Params:
    """The collection parameters the settings ask for."""
    return Params.create(
        settings.shingle,
        settings.num_perm,
        settings.fingerprint_size,
        settings.seed,
        settings.threshold,
        settings.capacity,
        settings.passage_words,
        settings.keep_text,
        settings.default_ttl,
        settings.template_pages,
        fingerprint_bits=settings.fingerprint_bits,
    )


def as_stored(settings: Settings, raw: bytes) -> Settings:
    """A tool's settings for a collection that exists (its stored config raw): each of
    the collection's parameters that the environment does not set is the stored one, so
    a tool opens the collection a service made with other settings (NEARDUP_KEEP_TEXT=1,
    say) from a shell without them; one set to another value is still refused."""
    stored = Params.stored(raw)
    given = {
        name: getattr(stored, name)
        for name in inspect.signature(Params.create).parameters
        if name in Settings.model_fields
        and name not in settings.model_fields_set
        and hasattr(stored, name)
    }
    return settings.model_copy(update=given)


async def _first_contact(
    store: Store, settings: Settings, check: bool = True, tool: bool = False
) -> Index:
    """Durability first (NEARDUP_DURABILITY=always, NEARDUP_MIN_REPLICAS), then the
    collection's stored parameters (not yet unless check: an UncheckedIndex). A tool
    takes the stored ones its environment does not set (as_stored)."""
    if settings.replica_urls and not settings.read_from_replicas:
        log.warning(
            "NEARDUP_REPLICA_URLS is set but NEARDUP_READ_FROM_REPLICAS is not 1: "
            "queries read the master only"
        )
    elif settings.read_from_replicas and not settings.replica_urls and not store.cluster:
        log.warning(
            "NEARDUP_READ_FROM_REPLICAS=1 on a single Redis names no replica "
            "(NEARDUP_REPLICA_URLS): queries read the master only"
        )
    if settings.min_replicas:
        fewest = await store.fewest_replicas()
        if fewest < settings.min_replicas:
            log.warning(
                "NEARDUP_MIN_REPLICAS=%d, but a Redis master has %d replicas connected: "
                "writes to it are answered 503 until enough replicas are back",
                settings.min_replicas,
                fewest,
            )
    if settings.durability == "always":
        why = await store.fsync_always()
        if why is not None:
            log.warning(
                "NEARDUP_DURABILITY=always, but %s: acknowledged writes may be lost "
                "if the Redis machine dies",
                why,
            )
    await _warn_if_evicting(store)
    if not check:
        return UncheckedIndex(store, settings, tool)
    if tool:
        raw = await store.read_config()
        if raw is not None:
            settings = as_stored(settings, raw)
    return await Index.open(
        store, params_of(settings), settings.candidate_cap, settings.max_text_bytes
    )


async def collection_conflict(settings: Settings, url: str) -> str | None:
    """Why NEARDUP_COLLECTION cannot open with these settings (a collection made with
    other parameters), asked once before the workers start, so that start-up ends on
    one line rather than every worker's traceback; None when it opens, or when Redis
    cannot be asked now (the workers wait for it and say why)."""
    store = Store.connect(url, settings.collection, settings.redis_timeout)
    try:
        await Index.open(store, params_of(settings), settings.candidate_cap)
    except (ConfigMismatchError, StoreAuthError) as exc:
        return str(exc)
    except (
        StoreError,
        StoreUnavailableError,
        OSError,
    ):  # Redis away or refusing: the workers' start-up says it
        return None
    finally:
        await store.close()
    return None


async def _warn_if_evicting(store: Store) -> None:
    """An index whose keys Redis may evict loses documents silently: say so."""
    try:
        memory = await store.memory()
    except StoreError:  # INFO refused (some managed services): nothing to tell
        return
    if memory.evicting is not None:
        tell_evicting(memory.evicting, again=True)


_TOLD: set[str] = set()  # evicting warnings this process has logged


def tell_evicting(said: str, again: bool = False) -> None:
    """Log an evicting Redis's warning: at start-up every time (again), from readiness
    once a process (a policy set while the service runs)."""
    if again or said not in _TOLD:
        _TOLD.add(said)
        log.warning("%s", said)


class UncheckedIndex(Index):
    """An index opened while its Redis was unreachable.

    It works like any Index, but the collection's parameters are checked on
    first contact: app.api.deps.get_index awaits check() before a route may
    use it, so nothing is written to a collection made with other parameters.
    Concurrent checks are harmless (each is idempotent), so there is no lock
    that requests would queue behind while Redis stays away.
    """

    def __init__(self, store: Store, settings: Settings, tool: bool = False) -> None:
        params = params_of(settings)
        super().__init__(store, params, settings.candidate_cap, settings.max_text_bytes)
        self._settings = settings
        self._tool = tool
        self.checked = False

    async def check(self) -> None:
        if not self.checked:
            opened = await _first_contact(self.store, self._settings, tool=self._tool)
            # The stored parameters win where a collection keeps its own (made before
            # tokenizer 2, id buckets...): this index reads and writes as that one would.
            stored = (opened.params, opened.candidate_cap, opened.max_text_bytes)
            Index.__init__(self, self.store, *stored, opened.pieces.config)
            self.checked = True
            log.info("Redis answers again; collection %s checked", self._settings.collection)


# A CLI tool's Redis timeout when NEARDUP_REDIS_TIMEOUT is not set: a batch job on a
# busy machine would rather wait than fail, where the service's 0.5 s is there to turn
# a stopped Redis into a quick 503.
TOOL_REDIS_TIMEOUT = 10.0


def redis_timeout_of(settings: Settings, tool: bool) -> float:
    """The seconds a Redis exchange may take: NEARDUP_REDIS_TIMEOUT when it is set or
    for the service, else TOOL_REDIS_TIMEOUT for a CLI tool."""
    if not tool or "redis_timeout" in settings.model_fields_set:
        return settings.redis_timeout
    return TOOL_REDIS_TIMEOUT


@asynccontextmanager
async def open_index(
    settings: Settings,
    *,
    wait_for_redis: bool = False,
    share_running: bool = False,
    check: bool = True,
    tool: bool = False,
    existing: bool = False,
) -> AsyncIterator[Index]:
    """The configured collection's index, on NEARDUP_REDIS_URL or an embedded Redis.

    With wait_for_redis (the service), a NEARDUP_REDIS_URL that does not answer
    yet is not fatal: the index is an UncheckedIndex, and requests get 503
    until Redis answers. With share_running (a CLI tool), an embedded Redis
    that a running service already serves from the data dir is used as it is.
    Without check (a tool working on another collection), the configured one's
    parameters are not compared yet: an UncheckedIndex, checked where it is used. A
    tool opens an existing collection with the stored parameters its environment does
    not set (as_stored); the service holds the collection to its settings. With existing
    (a tool that only reads what is stored: check, export, query...), an embedded data
    dir that holds no store is refused (EmbeddedRedisError), not started empty: the
    default data dir is relative, and a tool run from another directory found an empty
    new store there and called it consistent.
    """
    embedded = None
    url = settings.redis_url
    if url is None:
        embedded = EmbeddedRedis(settings.data_dir, settings.durability)
        if existing and not embedded.holds_data():
            raise EmbeddedRedisError(
                f"no store in {embedded.data_dir} (NEARDUP_DATA_DIR, {settings.data_dir}): "
                "run this where `neardup serve` runs, set NEARDUP_DATA_DIR to its data "
                "directory, or give --url (a service) or NEARDUP_REDIS_URL (a Redis)"
            )
        running = embedded.running_url() if share_running else None
        if running is not None:
            embedded, url = None, running
        else:
            url = embedded.start().url
    store = Store.connect(
        url,
        settings.collection,
        redis_timeout_of(settings, tool),
        min_replicas=settings.min_replicas,
        replica_timeout=settings.replica_timeout,
        read_from_replicas=settings.read_from_replicas,
        replica_urls=replica_url_list(settings.replica_urls),
    )
    try:
        try:
            index = await _first_contact(store, settings, check, tool)
        except StoreUnavailableError as exc:
            if not wait_for_redis or embedded is not None:
                raise
            log.warning("%s; answering 503 until it is back", exc)
            index = UncheckedIndex(store, settings)
        with _serving_heap():
            yield index
    finally:
        await store.close()
        if embedded is not None:
            embedded.stop()
