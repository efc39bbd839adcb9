"""`neardup rebuild OLD NEW` (app.cli.rebuild) end to end, through a running service and
straight on the store: a tokenizer 1 collection that keeps its texts, rebuilt into a new
one, gets tokenizer 2 and finds a disguised copy it did not find before; texts, metadata
and expiries carry over; a second run changes nothing; a collection without texts is
refused."""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Iterator
from itertools import count
from pathlib import Path

import httpx
import orjson
import pytest
import redis
from support import oracle, plant
from support.corpus import neardup_cmd, read_corpus
from support.disguise import disguise
from support.procs import Server

from app.store.layout import Layout

KEY = "w" * 24
AUTH = {"authorization": f"Bearer {KEY}"}
_names = count()
# The containment a reviewer asks for here: the copy is mostly the source (tokenizer 1's
# alignment still finds its undisguised stretches, about two thirds of it).
FOUND = 0.8


@pytest.fixture(scope="module")
def service(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `neardup serve` with a write key, on the session's Redis."""
    work = tmp_path_factory.mktemp("rebuild")
    env = {"NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": f"rb{os.getpid()}",
           "NEARDUP_API_KEYS": f"{KEY}:write"}  # fmt: skip
    with Server(work, **env) as server:
        server.wait_ready(**AUTH)
        yield server


@pytest.fixture(scope="module")
def articles() -> list[tuple[str, str]]:
    """Twelve corpus articles of 150 words or more."""
    return [(i, t) for i, t in read_corpus() if len(t.split()) >= 150][:12]


def _cli(
    *args: str, url: str | None, redis_url: str, stdin: str | None = None
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["NEARDUP_API_KEY"] = KEY
    if url is None:  # straight on the store
        env |= {"NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": f"rbcli{os.getpid()}"}
    target = ["--url", url] if url else []
    return subprocess.run(
        [*neardup_cmd(), *args, *target],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _old_collection(service: Server, redis_url: str, keep_text: bool = True) -> str:
    """A collection as the code before tokenizer 2 wrote it: its config has no tokenizer."""
    name = f"old{os.getpid()}x{next(_names)}"
    made = httpx.post(
        service.url + "/collections", json={"name": name, "keep_text": keep_text}, headers=AUTH
    )
    assert made.status_code == 201, made.text
    r = redis.Redis.from_url(redis_url)
    config = orjson.loads(r.get(Layout(name).config))
    del config["tokenizer"]
    r.set(Layout(name).config, orjson.dumps(config, option=orjson.OPT_SORT_KEYS))
    shown = httpx.get(f"{service.url}/collections/{name}", headers=AUTH).json()
    assert shown["parameters"]["tokenizer"] == 1
    return name


def _found(service: Server, name: str, text: str) -> dict[str, float]:
    """The sources holding at least FOUND of text, with their containment."""
    answer = httpx.post(
        f"{service.url}/collections/{name}/similar",
        json={"text": text, "measure": "containment", "threshold": FOUND},
        headers=AUTH,
    )
    assert answer.status_code == 200, answer.text
    return {r["id"]: r["containment"] for r in answer.json()["results"]}


def _documents(service: Server, name: str, ids: list[str]) -> dict[str, dict]:
    out = {}
    for doc_id in ids:
        got = httpx.get(f"{service.url}/collections/{name}/documents/{doc_id}", headers=AUTH)
        assert got.status_code == 200, got.text
        body = got.json()
        del body["shingles"]  # sketched anew: the counts may differ
        out[doc_id] = body
    return out


@pytest.mark.parametrize("where", ["remote", "local"])
def test_rebuild_moves_a_collection_to_the_new_tokenizer(
    service: Server, redis_url: str, articles: list[tuple[str, str]], where: str
) -> None:
    """Rebuilt, a tokenizer 1 collection's documents (text, metadata, expiry, in batches)
    answer from a collection on the latest tokenizer (4), which finds a disguised copy the old
    one missed (small look-alikes among its disguises, which tokenizer 3 would miss too);
    a second run leaves the same documents."""
    old = _old_collection(service, redis_url)
    new = old.replace("old", "new")
    docs = [
        {"id": i, "text": t, "metadata": {"n": n}, **({"ttl": 3600} if n % 3 == 0 else {})}
        for n, (i, t) in enumerate(articles)
    ]
    put = httpx.post(
        f"{service.url}/collections/{old}/documents/batch", json={"documents": docs}, headers=AUTH
    )
    assert put.status_code == 200 and put.json()["errors"] == 0, put.text
    source_id, source = articles[4]
    copy = disguise(" ".join(source.split()[20:120]), seed=9, rate=0.6)
    copy = plant.change("homoglyphs", copy, random.Random(9), [])
    # Under tokenizer 4 the copy reads as a stretch of its source (the oracle's folding).
    assert oracle.normalized2(copy, 4) in oracle.normalized2(source, 4)
    assert oracle.normalized2(copy, 3) not in oracle.normalized2(source, 3)
    assert source_id not in _found(service, old, copy)

    url = service.url if where == "remote" else None
    done = _cli("rebuild", old, new, "--batch", "5", url=url, redis_url=redis_url)
    assert done.returncode == 0, done.stderr
    assert f"rebuilt {len(docs)} documents" in done.stderr and "tokenizer 4" in done.stderr
    shown = httpx.get(f"{service.url}/collections/{new}", headers=AUTH).json()
    assert shown["parameters"]["tokenizer"] == 4 and shown["parameters"]["keep_text"] is True
    assert shown["documents"] == len(docs)
    ids = [d["id"] for d in docs]
    before = _documents(service, old, ids)
    assert _documents(service, new, ids) == before  # text, metadata, expires_at
    assert sum("expires_at" in d for d in before.values()) == 4
    assert {d["id"]: d["text"] for d in before.values()} == {i: t for i, t in articles}
    assert _found(service, new, copy) == {source_id: 1.0}
    shown_cli = _cli(
        "query", "--evidence", "--collection", new, url=url, redis_url=redis_url, stdin=copy
    )
    assert shown_cli.returncode == 0, shown_cli.stderr
    assert "disguised words" in shown_cli.stdout + shown_cli.stderr  # the flag, in the CLI

    again = _cli("rebuild", old, new, url=url, redis_url=redis_url)
    assert again.returncode == 0, again.stderr
    assert httpx.get(f"{service.url}/collections/{new}", headers=AUTH).json()["documents"] == len(
        docs
    )
    assert _documents(service, new, ids) == before


@pytest.mark.parametrize("where", ["remote", "local"])
def test_a_collection_without_texts_is_refused(service: Server, redis_url: str, where: str) -> None:
    """A collection that keeps no texts is refused with a message saying why, and no new
    collection is made; so is an unknown one and OLD = NEW."""
    old = _old_collection(service, redis_url, keep_text=False)
    new = old.replace("old", "new")
    url = service.url if where == "remote" else None
    done = _cli("rebuild", old, new, url=url, redis_url=redis_url)
    assert done.returncode == 1
    assert "keeps no texts" in done.stderr and "Traceback" not in done.stderr
    assert httpx.get(f"{service.url}/collections/{new}", headers=AUTH).status_code == 404
    missing = _cli("rebuild", old + "zz", new, url=url, redis_url=redis_url)
    assert missing.returncode == 1 and "Traceback" not in missing.stderr
    assert old + "zz" in missing.stderr
    same = _cli("rebuild", old, old, url=url, redis_url=redis_url)
    assert same.returncode == 1 and "same collection" in same.stderr


def test_rebuild_help_names_the_command(tmp_path: Path) -> None:
    """`neardup rebuild --help` describes OLD, NEW and --batch."""
    shown = subprocess.run([*neardup_cmd(), "rebuild", "--help"], capture_output=True, text=True)
    assert shown.returncode == 0
    assert "OLD" in shown.stdout and "NEW" in shown.stdout and "--batch" in shown.stdout
