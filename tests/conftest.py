"""Shared fixtures: one real redis-server per test session, a fresh collection per test."""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.procs import RedisProc
from support.settings import loaded_settings


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a real redis-server for the whole session."""
    directory = Path(tempfile.mkdtemp(prefix="neardup-redis-"))
    server = RedisProc(directory, "--appendonly", "no").start()
    yield server.url
    server.stop()
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """URL (redis+cluster://) of a real Redis Cluster for the session, started on first use."""
    from support.cluster import LocalCluster

    cluster = LocalCluster(tmp_path_factory.mktemp("cluster")).start()
    yield cluster.url
    cluster.stop()


@pytest.fixture
def store_url(request: pytest.FixtureRequest) -> str:
    """The store of a test's service: the session's redis-server, or, for a test marked
    both_stores, each of it and the session's cluster in turn (parameters "single", "cluster")."""
    kind = getattr(request, "param", "single")
    return str(request.getfixturevalue("cluster_url" if kind == "cluster" else "redis_url"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked both_stores runs twice: on the session's redis-server and on a Redis
    Cluster (3 masters, 3 replicas), through the store_url fixture behind `settings`/`client`."""
    both = metafunc.definition.get_closest_marker("both_stores") is not None
    if both and "store_url" in metafunc.fixturenames:
        metafunc.parametrize("store_url", ["single", "cluster"], indirect=True)


_collections = itertools.count()


@pytest.fixture
def collection() -> str:
    """A collection name no other test uses, so tests share one Redis safely."""
    return f"t{os.getpid()}x{next(_collections)}"


@pytest.fixture
def settings(store_url: str, collection: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    return loaded_settings(redis_url=store_url, collection=collection, data_dir=tmp_path)


@pytest.fixture
def client(settings):  # type: ignore[no-untyped-def]
    """A TestClient over the real app, on the session's Redis (or cluster, see store_url)."""
    from fastapi.testclient import TestClient

    from app.api.app import create_app

    with TestClient(create_app(settings)) as c:
        yield c
