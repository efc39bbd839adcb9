"""The public client's stored checks (app.client: check, get_check, delete_check) on a
real `neardup serve`, in the service's collection and in another one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator

import pytest
from support.procs import Server

from app.client import Client, ClientError

KEY = "c" * 24
SOURCE = (
    "the committee met on tuesday to review the annual budget and agreed to fund the new "
    "library wing after a long debate about parking and the river path by the old mill"
)
ESSAY = "My own opening. " + SOURCE + " And my own close."


@pytest.fixture(scope="module")
def service(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `neardup serve` with a write key, its passage index at 8 words."""
    env = {"NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": f"cc{os.getpid()}",
           "NEARDUP_API_KEYS": f"{KEY}:write", "NEARDUP_PASSAGE_WORDS": "8"}  # fmt: skip
    with Server(tmp_path_factory.mktemp("client-checks"), **env) as server:
        server.wait_ready(authorization=f"Bearer {KEY}")
        yield server


def test_the_client_makes_reads_and_deletes_checks(service: Server) -> None:
    """check() keeps a containment check whose passage slices the copied text out of the
    essay, get_check() reads it back equal, delete_check() removes it (True, then False,
    and get_check() None); with collection= it all happens in that collection."""

    async def run() -> None:
        async with Client(service.url, api_key=KEY) as c:
            await c.put("src", SOURCE)
            made = await c.check(ESSAY, ttl=60)
            assert made["report"] == f"/ui/checks/{made['id']}"
            (result,) = made["answer"]["results"]
            (p,) = result["passages"]
            assert ESSAY[p["query_start"] : p["query_end"]] == SOURCE
            assert (await c.get_check(made["id"]))["answer"] == made["answer"]
            assert await c.delete_check(made["id"]) is True
            assert await c.delete_check(made["id"]) is False
            assert await c.get_check(made["id"]) is None
            with pytest.raises(ClientError) as refused:
                await c.check(ESSAY, measure="jaccard", evidence=True)
            assert refused.value.status == 422
            name = f"cc{os.getpid()}-other"
            await c.create_collection(name, passage_words=8)
        async with Client(service.url, api_key=KEY, collection=name) as other:
            await other.put("there", SOURCE)
            made = await other.check(ESSAY)
            assert made["report"] == f"/ui/collections/{name}/checks/{made['id']}"
            assert [r["id"] for r in made["answer"]["results"]] == ["there"]
            assert await other.get_check(made["id"]) is not None
        async with Client(service.url, api_key=KEY) as c:
            assert await c.get_check(made["id"]) is None  # not in the service's collection

    asyncio.run(run())


def test_the_client_lists_every_check_over_pages(service: Server) -> None:
    """checks() yields every stored check of the collection once, newest first, across
    pages, each with the metadata check() was given."""

    async def run() -> None:
        name = f"cc{os.getpid()}-listed"
        async with Client(service.url, api_key=KEY) as admin:
            await admin.create_collection(name, passage_words=8)
        async with Client(service.url, api_key=KEY, collection=name) as c:
            await c.put("src", SOURCE)
            made = [(await c.check(ESSAY, metadata={"n": i}))["id"] for i in range(5)]
            listed = [x async for x in c.checks(page=2)]
            assert sorted(x["id"] for x in listed) == sorted(made)
            assert {x["id"]: x["metadata"]["n"] for x in listed} == {
                m: i for i, m in enumerate(made)
            }
            assert all(x["top"]["id"] == "src" and x["sources"] == 1 for x in listed)

    asyncio.run(run())
