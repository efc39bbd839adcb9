"""Faults injected into real processes.

Redis stopped, killed or absent; the service killed mid-ingest or stopped with
work in flight; fifty writers on one id; durability settings.

Each test states the fault, what was acknowledged before it, and checks that
every acknowledged document is there afterwards. Every loop is bounded in
count and time.
"""

from __future__ import annotations

import asyncio
import random
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
import redis
from support.corpus import read_corpus
from support.ids import handle_of
from support.procs import RedisProc, Server, free_port, neardup_check, serving, wait_until

from app.index import Params
from app.store import Store
from app.store.errors import StoreUnavailableError

TEXT = "Storm waters rose along the coast on Monday as residents moved inland for safety"
FAST_S = 1.0  # the longest a request may take while Redis is away
# The service's own Redis timeout, which these tests hold it to (the tests' services wait
# longer: support.settings.LOADED_REDIS_TIMEOUT).
QUICK = {"NEARDUP_REDIS_TIMEOUT": "0.5"}


def _text(i: int) -> str:
    return f"{TEXT}, report {i} of the series filed from district {i * 7 % 13}"


def _timed(
    client: httpx.Client, method: str, path: str, body: object = None
) -> tuple[int, float, httpx.Response]:
    started = time.perf_counter()
    resp = client.request(method, path, json=body, timeout=10)
    return resp.status_code, time.perf_counter() - started, resp


# Every route that needs Redis, as (method, path, body).
NEEDS_REDIS = [
    ("GET", "/documents/d1", None),
    ("PUT", "/documents/new-put", {"text": TEXT}),
    ("POST", "/documents", {"id": "new-post", "text": TEXT}),
    ("POST", "/documents?similar=true", {"text": TEXT}),
    ("POST", "/documents/batch", {"documents": [{"id": "new-b", "text": TEXT}]}),
    ("DELETE", "/documents/d2", None),
    ("GET", "/similar/d1", None),
    ("POST", "/similar", {"text": TEXT}),
    ("GET", "/duplicates", None),
    ("GET", "/duplicates/groups", None),
    ("GET", "/readyz", None),
]


def _assert_fast_503s(url: str, rounds: int = 1) -> int:
    """Each Redis route answers 503 with Retry-After within FAST_S, one by one and all at once."""
    checked = 0
    with httpx.Client(base_url=url) as c:
        for _ in range(rounds):
            for method, path, body in NEEDS_REDIS:
                status, took, resp = _timed(c, method, path, body)
                assert status == 503, (method, path, resp.text)
                assert resp.headers["retry-after"] == "1"
                assert resp.headers["content-type"].startswith("application/problem+json")
                assert took < FAST_S, (method, path, took)
                checked += 1
            for path in ("/healthz", "/metrics"):  # up without Redis
                status, took, _ = _timed(c, "GET", path)
                assert status == 200 and took < FAST_S, (path, status, took)

    def one(req: tuple[str, str, object]) -> tuple[int, float]:
        with httpx.Client(base_url=url) as c:
            status, took, _ = _timed(c, *req)
            return status, took

    with ThreadPoolExecutor(len(NEEDS_REDIS)) as pool:
        for status, took in pool.map(one, NEEDS_REDIS):
            assert status == 503 and took < FAST_S, (status, took)
            checked += 1
    return checked


def _load(url: str, n: int) -> dict[str, int]:
    docs = [{"id": f"d{i}", "text": _text(i)} for i in range(n)]
    resp = httpx.post(url + "/documents/batch", json={"documents": docs}, timeout=30)
    assert resp.status_code == 200
    return {r["id"]: r["shingles"] for r in resp.json()["results"]}


def _all_there(url: str, acked: dict[str, int]) -> int:
    """How many acknowledged documents are found, with the shingle count acknowledged."""
    found = 0
    with httpx.Client(base_url=url, timeout=10) as c:
        for doc_id, shingles in acked.items():
            resp = c.get(f"/documents/{doc_id}")
            found += resp.status_code == 200 and resp.json()["shingles"] == shingles
    return found


def _recovers(url: str, timeout: float = 5.0) -> float:
    """Seconds until GET /documents/d1 answers 200 again (fails past timeout)."""
    started = time.monotonic()
    assert wait_until(
        lambda: httpx.get(url + "/documents/d1", timeout=2).status_code == 200, timeout
    ), f"no recovery within {timeout} s"
    return time.monotonic() - started


def test_redis_stopped_then_continued(tmp_path: Path) -> None:
    """SIGSTOP on Redis: fast 503s with Retry-After, /healthz up, /readyz down.

    SIGCONT: the service is back by itself, every acknowledged document there."""
    with (
        RedisProc(tmp_path / "redis") as rds,
        serving(
            tmp_path, NEARDUP_REDIS_URL=rds.url, NEARDUP_LOG_LEVEL="warning", **QUICK
        ) as server,
    ):
        acked = _load(server.url, 20)
        rds.pause()
        try:
            _assert_fast_503s(server.url)
        finally:
            rds.resume()
        _recovers(server.url)
        assert httpx.get(server.url + "/readyz").status_code == 200
        assert httpx.put(server.url + "/documents/after", json={"text": TEXT}).status_code == 201
        assert _all_there(server.url, acked) == len(acked)
        assert "Traceback" not in server.output()


def test_readiness_does_not_flap_when_redis_drops_its_connections(tmp_path: Path) -> None:
    """After Redis closes every client connection (CLIENT KILL, as a restart or a proxy
    does), readiness pings on every pooled connection answer on their first call: a
    dropped connection is not Redis being away; a Redis that is away still is."""

    async def run(url: str) -> None:
        store = Store.connect(url, "readiness", 5.0)
        try:
            assert all(await asyncio.gather(*(store.ping() for _ in range(16))))
            for _ in range(3):
                with redis.Redis.from_url(url) as r:
                    r.client_kill_filter(_type="normal", skipme=True)
                await asyncio.sleep(0.2)  # the closes reach the pooled sockets
                assert all(await asyncio.gather(*(store.ping() for _ in range(16))))
        finally:
            await store.close()

    port = free_port()  # over TCP, as a deployment's Redis is reached
    with RedisProc(tmp_path / "redis", "--port", str(port)) as rds:
        url = f"redis://127.0.0.1:{port}"
        asyncio.run(run(url))
        rds.kill()
        with pytest.raises(StoreUnavailableError):
            asyncio.run(run(url))


def test_a_scan_redis_does_not_answer_in_time_is_unavailable(tmp_path: Path) -> None:
    """A SCAN or HSCAN Redis does not answer in time (a collection's delete steps, the id
    scans) is StoreUnavailableError, a 503 with Retry-After, as every other command's
    timeout is (an outside audit: redis-py's TimeoutError reached the route, a 500)."""

    async def run(rds: RedisProc) -> None:
        store = Store.connect(rds.url, "scanned", 0.3)
        try:
            keys = [store._keys.prefix + b"k%d" % i for i in range(50)]
            await store.transport.commands([(b"SET", k, b"1") for k in keys], write=True)
            hashed = store._keys.prefix + b"h"
            await store.transport.commands([(b"HSET", hashed, b"f", b"v")], write=True)
            rds.pause()
            try:
                with pytest.raises(StoreUnavailableError):
                    await store.drop_some(10)
                with pytest.raises(StoreUnavailableError):
                    async for _ in store.transport.hscan(hashed, 10):
                        pass
            finally:
                rds.resume()
            assert await store.drop_some(100) == 51  # nothing dropped while it slept
        finally:
            await store.close()

    with RedisProc(tmp_path / "redis") as rds:
        asyncio.run(run(rds))


def test_a_stream_redis_cuts_is_one_log_line_not_a_traceback(tmp_path: Path) -> None:
    """A /duplicates stream whose Redis stops answering mid-way ends without its last
    chunk (the client sees it cut), and the log says so in one warning line, with no
    traceback."""
    with (
        RedisProc(tmp_path / "redis") as rds,
        serving(
            tmp_path, NEARDUP_REDIS_URL=rds.url, NEARDUP_LOG_LEVEL="warning", **QUICK
        ) as server,
    ):
        # Groups of near-copies: more documents than one block of the walk reads at once,
        # and more pairs than socket buffers hold, so the walk is mid-way when Redis stops.
        docs = [
            {"id": f"c{i}", "text": " ".join(f"w{i // 60}x{j}" for j in range(40)) + f" t{i}"}
            for i in range(1200)
        ]
        with httpx.Client(base_url=server.url, timeout=30) as c:
            for at in range(0, len(docs), 500):
                batch = {"documents": docs[at : at + 500]}
                assert c.post("/documents/batch", json=batch).status_code == 200
            cut = False
            try:
                with c.stream("GET", "/duplicates") as resp:
                    lines = resp.iter_lines()
                    assert next(lines)
                    rds.pause()
                    for _ in lines:
                        pass
            except httpx.HTTPError:
                cut = True
            finally:
                rds.resume()
        assert cut, "the stream ended as if whole"
        said = server.output()
        assert "a streamed response was cut" in said and "Redis is unavailable" in said, said
        assert "Traceback" not in said, said


def test_redis_killed_and_restarted(tmp_path: Path) -> None:
    """kill -9 of Redis (appendfsync always): fast 503s; restarted on the same socket, the
    service recovers by itself and every acknowledged document is there."""
    aof = ("--appendonly", "yes", "--appendfsync", "always")
    with (
        RedisProc(tmp_path / "redis", *aof) as rds,
        serving(
            tmp_path, NEARDUP_REDIS_URL=rds.url, NEARDUP_LOG_LEVEL="warning", **QUICK
        ) as server,
    ):
        acked = _load(server.url, 20)
        acked.update(
            {
                "late": httpx.put(server.url + "/documents/late", json={"text": TEXT}).json()[
                    "shingles"
                ]
            }
        )
        for _ in range(2):  # two crashes in a row
            rds.kill()
            _assert_fast_503s(server.url)
            rds.start()
            _recovers(server.url)
            assert _all_there(server.url, acked) == len(acked)
        assert "Traceback" not in server.output()


def test_redis_down_at_start_up(tmp_path: Path) -> None:
    """A service started before its Redis answers 503 until Redis is up, then works;
    the collection's stored parameters are still checked on that first contact."""
    rds = RedisProc(tmp_path / "redis", "--appendonly", "yes", "--appendfsync", "always")
    other = "mismatch"
    rds.start()

    stored = Params.create("word:3", 128, 256, 1, 0.8).to_json()
    with rds.client() as c:
        c.set(f"nd:{other}:config", stored)
    rds.kill()  # down before either service starts
    good = Server(tmp_path / "good", NEARDUP_REDIS_URL=rds.url, **QUICK)
    bad = Server(tmp_path / "bad", NEARDUP_REDIS_URL=rds.url, NEARDUP_COLLECTION=other, **QUICK)
    try:
        good.wait_up()
        bad.wait_up()
        assert "answering 503 until it is back" in good.output()
        _assert_fast_503s(good.url)
        rds.start()
        good.wait_ready(timeout=5)
        assert httpx.put(good.url + "/documents/d1", json={"text": TEXT}).status_code == 201
        assert httpx.get(good.url + "/documents/d1").status_code == 200
        # The other collection was made with threshold 0.8: refused, never written to.
        for resp in (
            httpx.put(bad.url + "/documents/d1", json={"text": TEXT}),
            httpx.get(bad.url + "/readyz"),
        ):
            assert resp.status_code == 503 and "threshold" in resp.json()["detail"]
        with rds.client() as c:
            assert c.get(f"nd:{other}:config") == stored
            assert list(c.scan_iter(f"nd:{other}:*")) == [f"nd:{other}:config".encode()]
    finally:
        good.stop()
        bad.stop()
        rds.kill()


def _batches(size: int = 50) -> list[list[dict[str, str]]]:
    docs = [{"id": i, "text": t} for i, t in read_corpus()]
    return [docs[k : k + size] for k in range(0, len(docs), size)]


def _send_all(client: httpx.Client, batches: list[list[dict[str, str]]]) -> None:
    for batch in batches:
        resp = client.post("/documents/batch", json={"documents": batch}, timeout=60)
        assert resp.status_code == 200 and resp.json()["errors"] == 0


def _results(answers: tuple[dict, dict]) -> tuple[dict, list]:
    """A document and its GET /similar results, without the candidates count."""
    return answers[0], answers[1]["results"]


def _answers(url: str, ids: list[str]) -> dict[str, tuple[dict, dict]]:
    """GET /documents/{id} and GET /similar/{id} of every id, over two connections."""

    def part(chunk: list[str]) -> dict[str, tuple[dict, dict]]:
        with httpx.Client(base_url=url, timeout=30) as c:
            return {
                i: (c.get(f"/documents/{i}").json(), c.get(f"/similar/{i}").json()) for i in chunk
            }

    with ThreadPoolExecutor(2) as pool:
        out: dict[str, tuple[dict, dict]] = {}
        for got in pool.map(part, [ids[0::2], ids[1::2]]):
            out.update(got)
    return out


def test_kill_9_during_bulk_ingest_loses_nothing_acknowledged(tmp_path: Path) -> None:
    """kill -9 of `neardup serve` while a batch is in flight. After a restart every
    acknowledged document is there before anything is re-sent, no id dangles (the
    start-up check repaired what the kill left) and /readyz counts exactly what GET
    reads; after re-sending everything the index equals a clean ingest: the same
    documents and the same GET /similar answer for every id of the shared corpus."""
    batches = _batches()
    ids = [d["id"] for b in batches for d in b]
    clean = Server(tmp_path / "clean", NEARDUP_LOG_LEVEL="warning")
    crashed = tmp_path / "crashed"
    server = Server(crashed, NEARDUP_LOG_LEVEL="warning")
    try:
        server.wait_ready()
        kill_at = 8  # batches acknowledged before the one the kill lands in
        acked: dict[str, int] = {}
        failure: list[BaseException] = []

        def ingest() -> None:
            with httpx.Client(base_url=server.url) as c:
                for batch in batches:
                    try:
                        resp = c.post("/documents/batch", json={"documents": batch}, timeout=60)
                    except httpx.HTTPError as exc:
                        failure.append(exc)
                        return
                    assert resp.status_code == 200
                    acked.update({r["id"]: r["shingles"] for r in resp.json()["results"]})

        sender = threading.Thread(target=ingest)
        sender.start()
        # Kill once the service has handed out handles for batch kill_at: it is then
        # inside that batch's writes (bands, records), not yet answering it.
        next_key = b"nd:default:next"
        with redis.Redis(unix_socket_path=str(crashed / "data" / "redis.sock")) as r:
            assert wait_until(
                lambda: int(r.get(next_key) or 0) > kill_at * 50, timeout=60, step=0.0005
            )
        server.stop(signal.SIGKILL)
        sender.join(60)
        assert not sender.is_alive() and failure, "the kill did not interrupt the ingest"
        # The batch the kill landed in was sent, not refused at connect.
        assert not isinstance(failure[0], httpx.ConnectError), failure[0]
        # Whole batches, from kill_at on: a loaded machine may let one more batch through
        # between the handles seen and the kill landing.
        assert len(acked) % 50 == 0 and len(acked) >= kill_at * 50, len(acked)
        kill_at = len(acked) // 50  # the batch the kill landed in

        again = Server(crashed, NEARDUP_LOG_LEVEL="warning")
        try:
            again.wait_ready()
            assert _all_there(again.url, acked) == len(acked)  # before anything is re-sent
            # The interrupted batch: each of its documents is absent or whole, never half.
            with httpx.Client(base_url=again.url) as c:
                cut = {d["id"]: c.get(f"/documents/{d['id']}") for d in batches[kill_at]}
                # No orphan outlives the crash: the start-up pass left no id dangling, and
                # the count /readyz gives is the documents GET can read. The band entries
                # of the handles it dropped answer nothing; only the full check sees them.
                _, report = neardup_check(NEARDUP_DATA_DIR=str(crashed / "data"))
                assert {k for k, n in report["found"].items() if n} <= {"orphan_bands"}, report
                readable = len(acked) + sum(r.status_code == 200 for r in cut.values())
                assert c.get("/readyz").json()["documents"] == readable
                _send_all(c, batches)
            clean.wait_ready()
            with httpx.Client(base_url=clean.url) as c:
                _send_all(c, batches)
            assert httpx.get(again.url + "/readyz").json()["documents"] == len(ids)
            assert httpx.get(clean.url + "/readyz").json()["documents"] == len(ids)
            after_crash, reference = _answers(again.url, ids), _answers(clean.url, ids)
            # Until the full check, band entries the kill left for handles the start-up
            # pass dropped are candidates that verification drops: every document and
            # every answer's results are already those of a clean ingest, their
            # `candidates` counts may be higher.
            differing = [i for i in ids if _results(after_crash[i]) != _results(reference[i])]
            assert not differing, (
                differing[:5],
                after_crash[differing[0]],
                reference[differing[0]],
            )
            assert sum(bool(reference[i][1]["results"]) for i in ids) > 0  # pairs were compared
            # Re-sending and one full check repaired the crash: nothing of it is left behind,
            # and every answer, candidates included, is a clean ingest's.
            neardup_check("--repair", NEARDUP_DATA_DIR=str(crashed / "data"))
            code, report = neardup_check(NEARDUP_DATA_DIR=str(crashed / "data"))
            assert code == 0 and report["clean"] and report["ids"] == len(ids), report
            repaired = _answers(again.url, ids)
            differing = [i for i in ids if repaired[i] != reference[i]]
            assert not differing, (differing[:5], repaired[differing[0]], reference[differing[0]])
            for doc_id, resp in cut.items():
                assert resp.status_code == 404 or resp.json() == reference[doc_id][0]
        finally:
            again.stop()
    finally:
        server.stop(signal.SIGKILL)
        clean.stop()


def _redis_alive(sock: Path) -> bool:
    with redis.Redis(unix_socket_path=str(sock), socket_timeout=1) as c:
        try:
            return bool(c.ping())
        except redis.RedisError:
            return False


def test_sigterm_finishes_the_request_in_flight(tmp_path: Path) -> None:
    """SIGTERM while a 1000-document batch is in flight: it is answered in full, serve exits 0,
    its Redis is flushed and stopped, and a restart finds all 1000 documents."""
    docs = [{"id": i, "text": t} for i, t in read_corpus()]
    server = Server(tmp_path, NEARDUP_LOG_LEVEL="warning")
    server.wait_ready()
    answer: list[httpx.Response] = []
    sender = threading.Thread(
        target=lambda: answer.append(
            httpx.post(server.url + "/documents/batch", json={"documents": docs}, timeout=60)
        )
    )
    # SIGTERM once the batch is being written (its id locks appear in Redis), not after a
    # fixed sleep: on a loaded machine the request may not even have connected by then.
    store = redis.Redis(unix_socket_path=str(tmp_path / "data" / "redis.sock"))
    idle = store.dbsize()
    sender.start()
    assert wait_until(lambda: bool(answer) or store.dbsize() > idle, 30, step=0.002)
    assert not answer, "the batch was answered before SIGTERM: nothing was in flight"
    store.close()
    assert server.stop(signal.SIGTERM) == 0
    sender.join(60)
    assert answer and answer[0].status_code == 200
    assert answer[0].json()["created"] == len(docs)
    assert not _redis_alive(tmp_path / "data" / "redis.sock")
    with serving(tmp_path, NEARDUP_LOG_LEVEL="warning") as again:
        assert httpx.get(again.url + "/readyz").json()["documents"] == len(docs)


async def _bands_holding(
    url: str, collection: str, params: Params, handle: int, want: np.ndarray
) -> tuple[set[int], set[int]]:
    """Every band key whose members include the handle, read from Redis, and the keys
    wanted as bands.memberships gives them (Store.entry_keys)."""
    store = Store.connect(url, collection, 2.0)
    store.use_band_buckets(
        params.band_buckets,
        params.short_anchors,
        params.short_fields,
        params.packed_spills,
        params.field_bytes,
    )
    try:
        got = {key async for key, handles in store.bands.memberships() if handle in handles}
        return got, set(store.entry_keys(want).tolist())
    finally:
        await store.close()


def test_fifty_concurrent_puts_to_one_id_leave_one_consistent_version(
    redis_url: str, collection: str, tmp_path: Path
) -> None:
    """50 PUTs of different texts to one id at once, through 2 workers: exactly one creates it,
    and the stored record, its band keys and the band entries holding its handle (bands and
    passage anchors) all agree with the text that won; no stale entry points at the id."""
    from app import kernel
    from app.index import records
    from app.index.sketch import anchor_keys

    rng = random.Random(6)
    words = [f"w{n}" for n in range(3000)]
    with serving(
        tmp_path, "--workers", "2", NEARDUP_REDIS_URL=redis_url, NEARDUP_COLLECTION=collection,
        NEARDUP_LOG_LEVEL="warning",
    ) as server:  # fmt: skip
        r = redis.Redis.from_url(redis_url)
        prefix = f"nd:{collection}:".encode()
        params = Params.stored(r.get(prefix + b"config"))  # stored at start-up
        for round_ in range(2):
            doc_id = f"contended-{round_}"
            texts = [" ".join(rng.choices(words, k=80)) for _ in range(50)]
            start = threading.Barrier(len(texts))

            def put(i: int, doc_id: str = doc_id, texts: list[str] = texts, start=start) -> int:
                with httpx.Client(base_url=server.url, timeout=30) as c:
                    start.wait(60)  # generous: 50 threads start slowly on a loaded machine
                    body = {"text": texts[i], "metadata": {"n": i}}
                    return c.put(f"/documents/{doc_id}", json=body).status_code

            with ThreadPoolExecutor(len(texts)) as pool:
                statuses = list(pool.map(put, range(len(texts))))
            assert sorted(statuses) == [200] * 49 + [201], statuses

            handle = handle_of(r, collection, doc_id)
            rec = records.unpack(r.get(prefix + b"d:%d" % handle))
            winner = httpx.get(f"{server.url}/documents/{doc_id}").json()["metadata"]["n"]
            assert rec.metadata == {"n": winner}
            sk = kernel.sketch(
                [texts[winner]],
                shingle=params.shingle,
                num_perm=params.num_perm,
                fingerprint_size=params.fingerprint_size,
                seed=params.seed,
            )
            want = kernel.band_keys(sk.signatures, params.bands, params.rows)[0]
            if params.short_keys:  # only the bits of the keys' places are kept
                want = want & np.uint64(0xFFFFFFFF0000FFFF)
            assert rec.band_keys.tolist() == want.tolist()
            fp = sk.fp_values[int(sk.fp_offsets[0]) : int(sk.fp_offsets[1])]
            drop = 32 - params.fingerprint_bits  # the collection keeps each value's top bits
            assert rec.fingerprint.tolist() == sorted({v >> drop << drop for v in fp.tolist()})
            # The buckets also hold the winner's passage anchors (salted), and nothing else.
            anchors = kernel.winnow(
                [texts[winner]],
                shingle=params.passage_shingle,
                passage_words=params.passage_words,
                seed=params.seed,
            ).hashes
            keys = np.concatenate([want, anchor_keys(anchors)]).astype(np.uint64)
            holding, wanted = asyncio.run(
                _bands_holding(redis_url, collection, params, handle, keys)
            )
            assert holding == wanted and len(wanted) == len(set(keys.tolist()))
            assert not list(r.scan_iter(match=prefix + b"l:*"))  # every write lock released
        r.close()


def test_durability_always_on_an_external_redis(tmp_path: Path) -> None:
    """NEARDUP_DURABILITY=always sets appendfsync always on an external Redis; where CONFIG is
    refused the service says so in its log and still serves."""
    aof = ("--appendonly", "yes", "--appendfsync", "everysec")
    with (
        RedisProc(tmp_path / "open", *aof) as open_,
        RedisProc(tmp_path / "locked", *aof, "--rename-command", "CONFIG", "") as locked,
    ):
        a = Server(tmp_path / "a", NEARDUP_REDIS_URL=open_.url, NEARDUP_DURABILITY="always")
        b = Server(tmp_path / "b", NEARDUP_REDIS_URL=locked.url, NEARDUP_DURABILITY="always")
        try:
            a.wait_ready()
            b.wait_ready()
            with open_.client() as c:
                assert c.config_get("appendfsync") == {"appendfsync": "always"}
            assert "WARNING" not in a.output()
            assert "appendfsync always was refused" in b.output()
            assert httpx.put(b.url + "/documents/x", json={"text": TEXT}).status_code == 201
        finally:
            a.stop()
            b.stop()


@pytest.mark.parametrize("durability", ["everysec", "always"])
def test_embedded_redis_durability(tmp_path: Path, durability: str) -> None:
    """The embedded Redis keeps an append-only file, fsynced as NEARDUP_DURABILITY says."""
    from app.service.embedded import EmbeddedRedis

    with EmbeddedRedis(tmp_path, durability) as emb:
        c = redis.Redis(unix_socket_path=str(emb.socket), decode_responses=True)
        assert c.config_get("appendonly") == {"appendonly": "yes"}
        assert c.config_get("appendfsync") == {"appendfsync": durability}
        c.close()
