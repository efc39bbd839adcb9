"""app.client with files, exclusions and checks, on a served process (whose extraction
workers are spawned from `neardup serve`, not from a test's process)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import oracle
from support.procs import Server

from app.client import Client
from app.index.formats import DOCX, PDF

KEY = "f" * 24
DATA = Path(__file__).parent / "data" / "formats"
ESSAY = (DATA / "essay.txt").read_text(encoding="utf-8").split("\n\n")


@pytest.fixture(scope="module")
def service(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("client-files")
    env = {"NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": f"files{os.getpid()}",
           "NEARDUP_API_KEYS": f"{KEY}:write"}  # fmt: skip
    with Server(work, **env) as server:
        server.wait_ready(authorization=f"Bearer {KEY}")
        yield server


def test_files_exclusions_and_checks_through_the_client(service: Server) -> None:
    """A PDF and a DOCX query find the stored paragraph with offsets into the returned
    text; exclude sets a quoted copy aside; a check is kept, read back and deleted."""

    async def walk() -> None:
        async with Client(service.url, api_key=KEY) as nd:
            await nd.put("p3", ESSAY[3])
            for name, kind in (("essay.pdf", PDF), ("essay.docx", DOCX)):
                found = await nd.similar(
                    file=(DATA / name).read_bytes(), content_type=kind,
                    measure="containment", evidence=True, return_text=True,
                )  # fmt: skip
                (hit,) = [r for r in found["results"] if r["id"] == "p3"]
                text = found["text"]
                words = [
                    oracle.words(text[p["query_start"] : p["query_end"]]) for p in hit["passages"]
                ]
                source = oracle.words(ESSAY[3])
                assert source in words  # the whole paragraph, as one passage
            quoted = f"Some words of mine first. \u201c{ESSAY[3]}\u201d And mine after."
            answer = await nd.similar(text=quoted, measure="containment", exclude={"quotes": True})
            assert answer["results"] == [] and answer["excluded"][0]["reason"] == "quote"
            made = await nd.check(file=(DATA / "essay.pdf").read_bytes(), content_type=PDF)
            assert made["report"] == f"/ui/checks/{made['id']}"
            assert await nd.get_check(made["id"]) == made
            assert await nd.delete_check(made["id"]) is True
            assert await nd.get_check(made["id"]) is None

    asyncio.run(walk())
