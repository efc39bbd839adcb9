"""Queries read from replicas (app/store/reads.py; NEARDUP_READ_FROM_REPLICAS): on the
3+3 cluster and on a single master with one replica, answers equal master reads and the
exact oracle's, replicas serve a share of the query commands, and consistency=strong
and every write stay on the masters."""

from __future__ import annotations

import contextlib
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient
from support.oracle import exact_jaccard, shingles
from support.procs import RedisProc, wait_until
from support.settings import loaded_settings
from support.textgen import mutate

from app.api.app import create_app
from app.core.redis_url import parse_cluster_url
from app.core.settings import Settings, SettingsError, load_settings

# The commands a query sends (its reads); writes and the replication stream are others.
QUERY_COMMANDS = ("get", "mget", "hget", "hmget", "zrange", "zrangebyscore", "evalsha")


def _corpus(n: int = 24) -> dict[str, str]:
    """n//2 random texts of 120 words and a near-duplicate (2% of words edited) of each."""
    rng = random.Random(29)
    vocab = [f"w{i}" for i in range(3000)]
    docs = {}
    for i in range(n // 2):
        text = " ".join(rng.choice(vocab) for _ in range(120))
        docs[f"a{i}"] = text
        docs[f"b{i}"] = mutate(text, 0.02, rng)
    return docs


def _nodes(url: str) -> list[redis.Redis]:
    """A client of each node a store URL names: each node of a cluster, or the
    servers of comma-separated URLs."""
    parsed = parse_cluster_url(url)
    if parsed is None:
        return [redis.Redis.from_url(u, socket_timeout=5) for u in url.split(",")]
    return [redis.Redis(host=h, port=p, socket_timeout=5) for h, p in parsed.nodes]


def _query_calls(node: redis.Redis) -> int:
    stats = node.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{c}", {}).get("calls", 0)) for c in QUERY_COMMANDS)


def _is_replica(node: redis.Redis) -> bool:
    return node.info("replication")["role"] in ("slave", "replica")


@contextlib.contextmanager
def _service(settings: Settings, **changes: object) -> Iterator[TestClient]:
    with TestClient(create_app(settings.model_copy(update=changes))) as client:
        yield client


def _ask(client: TestClient, docs: dict[str, str], query: str = "") -> list[object]:
    """Every query kind once per document: GET /similar, POST /similar, containment by
    text, and the duplicate pairs; their JSON answers, in order."""
    answers: list[object] = []
    for doc_id, text in docs.items():
        got = client.get(f"/similar/{doc_id}{query}")
        assert got.status_code == 200, got.text
        answers.append(got.json())
        got = client.post(f"/similar{query}", json={"text": text, "limit": 5})
        assert got.status_code == 200, got.text
        answers.append(got.json())
        got = client.post(
            f"/similar{query}", json={"text": text, "measure": "containment", "evidence": True}
        )
        assert got.status_code == 200, got.text
        answers.append(got.json())
    pairs = client.get(f"/duplicates{query}")
    assert pairs.status_code == 200
    answers.append(sorted(pairs.text.splitlines()))
    return answers


def _check_oracle(client: TestClient, docs: dict[str, str]) -> None:
    """Each document's answer holds exactly the stored ones whose exact Jaccard clears
    0.5 (the planted twins, at about 0.85; unrelated texts share none)."""
    sets = {k: shingles(v) for k, v in docs.items()}
    for doc_id in docs:
        found = {m["id"] for m in client.get(f"/similar/{doc_id}").json()["results"]}
        expected = {o for o in docs if o != doc_id and exact_jaccard(sets[doc_id], sets[o]) > 0.5}
        assert found == expected, doc_id


def _check_replicas(url: str, settings: Settings, nodes: list[redis.Redis]) -> None:
    docs = _corpus()
    # Written with min_replicas=1: acknowledged only once a replica has it.
    with _service(settings, redis_url=url, min_replicas=1) as writer:
        got = writer.post("/documents/batch", json={"documents": [
            {"id": k, "text": v} for k, v in docs.items()
        ]})  # fmt: skip
        assert got.status_code == 200, got.text
        on_masters = _ask(writer, docs)
    replicas = [n for n in nodes if _is_replica(n)]
    assert replicas
    with _service(settings, redis_url=url, read_from_replicas=True) as reader:
        for n in nodes:
            n.config_resetstat()
        on_replicas = _ask(reader, docs)
        served = [_query_calls(n) for n in nodes]
        by_replicas = sum(c for n, c in zip(nodes, served, strict=True) if _is_replica(n))
        assert on_replicas == on_masters
        _check_oracle(reader, docs)
        assert by_replicas >= 0.4 * sum(served), served

        for n in nodes:
            n.config_resetstat()
        assert _ask(reader, docs, "?consistency=strong") == on_masters
        assert sum(_query_calls(n) for n in replicas) == 0


def test_cluster_replica_reads_answer_as_masters_and_take_their_share(
    cluster_url: str, settings: Settings
) -> None:
    """On the 3+3 cluster, replica reads answer exactly as master reads (and the oracle),
    replicas serve at least 40% of the query commands, and consistency=strong none."""
    _check_replicas(cluster_url, settings, _nodes(cluster_url))


@pytest.fixture
def master_and_replica() -> Iterator[tuple[str, str]]:
    """A master and its replica (redis-server --replicaof over TCP), their URLs."""
    from support.procs import free_port

    directory = Path(tempfile.mkdtemp(prefix="neardup-replica-"))
    port = free_port()
    master = RedisProc(directory / "m", "--port", str(port), "--bind", "127.0.0.1").start()
    replica = RedisProc(directory / "r", "--replicaof", "127.0.0.1", str(port)).start()
    try:
        assert wait_until(lambda: master.client().info("replication")["connected_slaves"], 30)
        # In sync, not syncing: a replica that is not yet is left out of reads.
        assert wait_until(
            lambda: replica.client().info("replication")["master_link_status"] == "up", 30
        )
        yield master.url, replica.url
    finally:
        replica.stop()
        master.stop()
        shutil.rmtree(directory, ignore_errors=True)


def test_single_master_replica_reads_answer_as_master(
    master_and_replica: tuple[str, str], collection: str, tmp_path: Path
) -> None:
    """With NEARDUP_REPLICA_URLS, one server's replica serves its share of the query
    commands (its read scripts too) with the master's answers; strong reads none."""
    master, replica = master_and_replica
    settings = loaded_settings(
        redis_url=master,
        collection=collection,
        data_dir=tmp_path,
        replica_urls=replica,
    )
    _check_replicas(master, settings, _nodes(f"{master},{replica}"))


def test_a_replica_that_cannot_answer_or_is_detached_is_left_out(
    master_and_replica: tuple[str, str],
    collection: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A replica that takes no command (CLIENT PAUSE) makes no query fail: its read goes
    to the master, where a third of the queries got 503 for as long as it was away. A
    replica detached from its master (REPLICAOF NO ONE: it misses what the master takes
    from then on) gets no more reads once its ROLE is asked, so a document written after
    is found by every query."""
    monkeypatch.setattr("app.store.single.ROLE_CHECK_S", 0.2)
    master, replica = master_and_replica
    settings = load_settings(
        redis_url=master,
        collection=collection,
        data_dir=tmp_path,
        replica_urls=replica,
        redis_timeout=2.0,  # the pause below (3 s) outlasts it
    )
    docs = _corpus(8)
    with _service(settings, min_replicas=1) as writer:
        batch = [{"id": k, "text": v} for k, v in docs.items()]
        assert writer.post("/documents/batch", json={"documents": batch}).status_code == 200
    with _service(settings, read_from_replicas=True) as reader:
        want = [reader.get(f"/similar/{k}?consistency=strong").json() for k in docs]
        paused = redis.Redis.from_url(replica)
        paused.execute_command("CLIENT", "PAUSE", "3000")
        try:
            got = [reader.get(f"/similar/{k}") for k in docs]
        finally:
            redis.Redis.from_url(replica).execute_command("CLIENT", "UNPAUSE")
        assert [g.status_code for g in got] == [200] * len(docs)
        assert [g.json() for g in got] == want
        redis.Redis.from_url(replica).replicaof("NO", "ONE")
        assert wait_until(lambda: not _is_replica(redis.Redis.from_url(replica)), 10)
        time.sleep(0.3)
        assert reader.get("/similar/a1").status_code == 200  # asks the ROLEs again
        time.sleep(0.5)
        late = docs["a2"] + " written after the replica was detached"
        assert reader.put("/documents/late", json={"text": late}).status_code == 201

        def found_by_all() -> bool:
            answers = [reader.post("/similar", json={"text": late}).json() for _ in range(12)]
            return all("late" in [m["id"] for m in a["results"]] for a in answers)

        # Once the ROLE check (every ROLE_CHECK_S, in the background) has seen it detached.
        assert wait_until(found_by_all, 10)


def test_replica_urls_must_name_single_servers() -> None:
    """A cluster URL or a malformed one in NEARDUP_REPLICA_URLS is refused, naming it."""
    with pytest.raises(SettingsError, match=r"NEARDUP_REPLICA_URLS.*single server"):
        load_settings(replica_urls="redis+cluster://127.0.0.1:7000")
    with pytest.raises(SettingsError, match="NEARDUP_REPLICA_URLS"):
        load_settings(replica_urls="http://example")


def test_only_marked_read_only_commands_reach_a_replica(
    master_and_replica: tuple[str, str],
) -> None:
    """A replica gets reads only inside replica_reads(), never a command that writes
    (even one not flagged as a write), and none once the request asked strong."""
    import asyncio

    from app.store import reads
    from app.store.single import SingleTransport

    master, replica = master_and_replica

    async def run() -> list[int]:
        transport = SingleTransport.connect(master, 5.0, 0, 1.0, replica_urls=[replica])
        seen = []
        try:
            for _ in range(20):
                await transport.commands([(b"GET", b"k")])
            seen.append(transport.replica_reads)  # unmarked: the master
            with reads.replica_reads():
                # A replica is read once a check found it one of this master's, in sync.
                for _ in range(200):
                    if transport.replica_reads:
                        break
                    await transport.commands([(b"GET", b"k")])
                    await asyncio.sleep(0.005)
                before = transport.replica_reads
                assert before > 0
                for i in range(20):
                    await transport.commands([(b"SET", b"k", b"%d" % i)])  # a replica refuses
                seen.append(transport.replica_reads)
                for _ in range(20):
                    await transport.commands([(b"GET", b"k")])
                seen.append(transport.replica_reads)
                reads.strong()
                for _ in range(20):
                    await transport.commands([(b"GET", b"k")])
                seen.append(transport.replica_reads)
        finally:
            await transport.close()
        return seen

    unmarked, writes, marked, strong = asyncio.run(run())
    assert unmarked == 0
    assert writes == 1  # the warm-up's first replica read, and no write after it
    assert 5 <= marked - writes <= 15  # about half of 20, by the fewest-commands rule
    assert strong == marked


def test_cluster_reads_of_a_replica_that_cannot_answer_go_to_its_master(
    cluster_url: str, collection: str
) -> None:
    """With every replica of the 3+3 cluster paused (CLIENT PAUSE: it takes no command),
    each query's replica exchange times out and is read from its master instead: the
    answers are the masters', not 503s."""
    import asyncio

    from app.index import Document, Index, Params
    from app.store import Store, reads

    docs = _corpus(8)
    params = Params.create("word:3", 128, 256, 1, 0.5)
    replicas = [n for n in _nodes(cluster_url) if _is_replica(n)]

    async def run() -> tuple[list, list]:
        masters = Store.connect(cluster_url, collection, 5.0)
        mixed = Store.connect(cluster_url, collection, 0.5, read_from_replicas=True)
        try:
            index = await Index.open(masters, params, 1000)
            await index.ingest([Document(t, k) for k, t in docs.items()])
            want = [[m.id for m in (await index.similar_to_id(k)).results] for k in docs]
            reader = await Index.open(mixed, params, 1000)
            for n in replicas:
                n.execute_command("CLIENT", "PAUSE", "4000")
            try:
                with reads.replica_reads():
                    got = [[m.id for m in (await reader.similar_to_id(k)).results] for k in docs]
            finally:
                for n in replicas:
                    n.execute_command("CLIENT", "UNPAUSE")
            return want, got
        finally:
            await masters.close()
            await mixed.close()

    want, got = asyncio.run(run())
    assert got == want and any(want)


def test_replica_urls_must_name_replicas_of_the_master_in_its_database() -> None:
    """NEARDUP_REPLICA_URLS without NEARDUP_REDIS_URL (the service's own Redis has no
    replicas), beside a cluster URL, naming the master itself, or another database
    number is refused, saying what to set."""
    cases = [
        ({"replica_urls": "redis://127.0.0.1:6380/0"}, "without NEARDUP_REDIS_URL"),
        (
            {"redis_url": "redis+cluster://127.0.0.1:7000", "replica_urls": "redis://h:6380"},
            "cluster's replicas are found",
        ),
        (
            {"redis_url": "redis://127.0.0.1:6379/0", "replica_urls": "redis://127.0.0.1:6379"},
            "master itself",
        ),
        (
            {"redis_url": "redis://m:6379/0", "replica_urls": "redis://r:6379/3"},
            "reads database 3, NEARDUP_REDIS_URL database 0",
        ),
        (
            {"redis_url": "redis://m:6379?db=2", "replica_urls": "redis://r:6379"},
            "reads database 0, NEARDUP_REDIS_URL database 2",
        ),
    ]
    for given, said in cases:
        with pytest.raises(SettingsError, match=said):
            load_settings(**given)
    # The same database, given either way, is accepted.
    load_settings(redis_url="redis://m:6379/2", replica_urls="redis://r:6379?db=2")
    # A password in a replica's URL is never shown, wherever it is written.
    for urls in (
        "redis://127.0.0.1:6379/1?password=hunter2",
        "redis://:hunter2@127.0.0.1:6379/1",
        "redis+cluster://:hunter2@127.0.0.1:7000",
    ):
        with pytest.raises(SettingsError) as refused:
            load_settings(redis_url="redis://127.0.0.1:6379/0", replica_urls=urls)
        assert "hunter2" not in str(refused.value), refused.value


@pytest.fixture
def other_master() -> Iterator[str]:
    """A second master, with nothing to do with master_and_replica's, its URL."""
    directory = Path(tempfile.mkdtemp(prefix="neardup-other-"))
    server = RedisProc(directory, "--appendonly", "no").start()
    try:
        yield server.url
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def _replica_reads(master: str, replica_urls: list[str], min_replicas: int = 0) -> int:
    """How many of 40 read exchanges inside replica_reads() a replica answered."""
    import asyncio

    from app.store import reads
    from app.store.single import SingleTransport

    async def run() -> int:
        transport = SingleTransport.connect(
            master, 5.0, min_replicas, 1.0, replica_urls=replica_urls
        )
        try:
            with reads.replica_reads():
                for _ in range(40):
                    await transport.commands([(b"GET", b"k")])
                    await asyncio.sleep(0.005)  # the first check runs meanwhile
            return transport.replica_reads
        finally:
            await transport.close()

    return asyncio.run(run())


def test_a_replica_of_another_master_is_never_read_and_the_log_says_why(
    master_and_replica: tuple[str, str], other_master: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """A server named as a replica that replicates another master (its replication id
    differs) answers none of the reads, and a warning names it and why; the same
    replica named beside a dead one under its own master is read."""
    from app.service import logs

    logs.configure("text", "info")
    master, replica = master_and_replica
    assert _replica_reads(other_master, [replica]) == 0
    assert "replicates another master" in capfd.readouterr().err
    from support.procs import free_port

    dead = f"redis://127.0.0.1:{free_port()}/0"
    assert _replica_reads(master, [dead, replica]) > 5


def test_with_min_replicas_a_replica_of_a_replica_is_not_read(
    master_and_replica: tuple[str, str],
) -> None:
    """WAIT counts direct replicas only: with NEARDUP_MIN_REPLICAS a replica of a replica
    (which may miss an acknowledged write) takes no reads; without it, it does; a direct
    replica does either way."""
    from support.procs import free_port

    master, _replica = master_and_replica
    port = redis.Redis.from_url(master).config_get("port")["port"]
    tcp_master = f"redis://127.0.0.1:{port}/0"
    mid_port = free_port()
    directory = Path(tempfile.mkdtemp(prefix="neardup-chained-"))
    mid = RedisProc(
        directory / "mid", "--port", str(mid_port), "--bind", "127.0.0.1",
        "--replicaof", "127.0.0.1", str(port),
    ).start()  # fmt: skip
    chained = RedisProc(directory / "end", "--replicaof", "127.0.0.1", str(mid_port)).start()
    try:
        for server in (mid, chained):
            assert wait_until(
                lambda s=server: s.client().info("replication")["master_link_status"] == "up",
                30,
            )
        assert _replica_reads(tcp_master, [chained.url], min_replicas=1) == 0
        assert _replica_reads(tcp_master, [chained.url]) > 5
        assert _replica_reads(tcp_master, [mid.url], min_replicas=1) > 5
        # The master named by its unix socket: told by the ports its replicas announced.
        assert _replica_reads(master, [chained.url], min_replicas=1) == 0
        assert _replica_reads(master, [mid.url], min_replicas=1) > 5
    finally:
        chained.stop()
        mid.stop()
        shutil.rmtree(directory, ignore_errors=True)


def test_replicas_are_not_read_when_the_masters_info_is_refused(
    master_and_replica: tuple[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    """A master whose ACL refuses INFO (some managed Redis) leaves no replica to compare
    with it: none is read, and the log says why."""
    from app.service import logs

    logs.configure("text", "info")
    master, replica = master_and_replica
    for url in (master, replica):  # a replica keeps an ACL of its own
        with redis.Redis.from_url(url) as r:
            r.acl_setuser(
                "app", enabled=True, passwords=["+pw"], commands=["+@all", "-info"], keys=["*"]
            )
    path = master.removeprefix("unix://")
    try:
        assert _replica_reads(f"unix://app:pw@{path}", [replica]) == 0
        assert "master's INFO replication" in capfd.readouterr().err
    finally:
        for url in (master, replica):
            with redis.Redis.from_url(url) as r:
                r.acl_deluser("app")
