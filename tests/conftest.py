"""Shared fixtures: one real redis-server per test session, a fresh collection per test."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from procs import redis_binary


def start_redis(directory: Path, *extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """A redis-server on a unix socket in directory; returns (process, url)."""
    sock = directory / "redis.sock"
    proc = subprocess.Popen(
        [
            redis_binary(),
            "--port",
            "0",
            "--unixsocket",
            str(sock),
            "--dir",
            str(directory),
            "--save",
            "",
            "--appendonly",
            "no",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(unix_socket_path=str(sock))
    deadline = time.monotonic() + 10
    while True:
        try:
            if client.ping():
                break
        except redis.ConnectionError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("test redis-server did not start") from None
            time.sleep(0.02)
    client.close()
    return proc, f"unix://{sock}"


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a real redis-server for the whole session."""
    directory = Path(tempfile.mkdtemp(prefix="neardup-redis-"))
    proc, url = start_redis(directory)
    yield url
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(directory, ignore_errors=True)


# Modules whose tests run twice, on the single redis-server and on a Redis Cluster
# (3 masters, 3 replicas), through the store_url fixture behind `settings`/`client`.
BOTH_STORES = {
    "test_api_documents",
    "test_api_similar",
    "test_index",
    "test_storage",
    "test_auth",
    "test_observability",
    "test_limits",
    "test_concurrency",
    "test_passages",
}


@pytest.fixture(scope="session")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL (redis+cluster://) of a real Redis Cluster for the session, started on first use."""
    from cluster_procs import LocalCluster

    cluster = LocalCluster(tmp_path_factory.mktemp("cluster")).start()
    yield cluster.url
    cluster.stop()


@pytest.fixture
def store_url(request: pytest.FixtureRequest) -> str:
    """The store of a test's service: the session's redis-server, or, in the BOTH_STORES
    modules, each of it and the session's cluster in turn (parameters "single", "cluster")."""
    kind = getattr(request, "param", "single")
    return str(request.getfixturevalue("cluster_url" if kind == "cluster" else "redis_url"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_url" in metafunc.fixturenames and metafunc.definition.path.stem in BOTH_STORES:
        metafunc.parametrize("store_url", ["single", "cluster"], indirect=True)


_collections = itertools.count()


@pytest.fixture
def collection() -> str:
    """A collection name no other test uses, so tests share one Redis safely."""
    return f"t{os.getpid()}x{next(_collections)}"


@pytest.fixture
def settings(store_url: str, collection: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    from app.core.settings import load_settings

    return load_settings(redis_url=store_url, collection=collection, data_dir=tmp_path)


@pytest.fixture
def client(settings):  # type: ignore[no-untyped-def]
    """A TestClient over the real app, on the session's Redis (or cluster, see store_url)."""
    from fastapi.testclient import TestClient

    from app.api.app import create_app

    with TestClient(create_app(settings)) as c:
        yield c
