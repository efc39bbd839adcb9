"""The public client (app.client) and the CLI's get/delete/export/import on a real service."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import oracle
from support.corpus import neardup_cmd
from support.ids import all_ids
from support.procs import Server

from app.cli.main import build_parser, main
from app.client import Client, ClientError

KEY = "k" * 24
A = "The quick brown fox jumps over the lazy dog by the river"
B = "The quick brown fox jumps over the lazy dog by the river bank"
C = "A quick brown fox jumps over the lazy dog by the river"


def _exact(x: str, y: str) -> float:
    return oracle.exact_jaccard(oracle.shingles(x, "word:3"), oracle.shingles(y, "word:3"))


@pytest.fixture(scope="module")
def service(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One `neardup serve` with a write key, on the session's Redis."""
    work = tmp_path_factory.mktemp("client")
    env = {"NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": f"cli{os.getpid()}",
           "NEARDUP_API_KEYS": f"{KEY}:write"}  # fmt: skip
    with Server(work, **env) as server:
        server.wait_ready(authorization=f"Bearer {KEY}")
        yield server


def test_client_runs_the_readme_walk_through(service: Server) -> None:
    """The README's walk-through through app.client: answers match the exact Jaccard of
    the texts, unknown ids are None/False, a bad key is a ClientError with the detail."""

    async def walk() -> None:
        async with Client(service.url, api_key=KEY) as nd:
            made = await nd.ingest(A, id="https://example.com/a", metadata={"lang": "en"})
            assert made == {"id": "https://example.com/a", "shingles": 10, "created": True,
                            "similar": None}  # fmt: skip
            assert (await nd.put("b", B))["created"] is True
            found = await nd.similar("b", threshold=0.5, limit=10)
            assert [(r["id"], r["similarity"]) for r in found["results"]] == [
                ("https://example.com/a", pytest.approx(_exact(A, B)))
            ]
            by_text = await nd.similar(text=A.lower())
            assert {r["id"] for r in by_text["results"]} == {"https://example.com/a", "b"}
            with_similar = await nd.ingest(C, id="c", similar=True)
            got = {r["id"]: r["similarity"] for r in with_similar["similar"]["results"]}
            want = {k: _exact(C, t) for k, t in (("https://example.com/a", A), ("b", B))}
            assert got == pytest.approx({k: v for k, v in want.items() if v >= 0.5})
            pairs = [p async for p in nd.duplicates()]
            assert {frozenset((p["a"], p["b"])) for p in pairs} >= {
                frozenset(("https://example.com/a", "b"))
            }
            only_en = await nd.similar("b", filter={"metadata": {"lang": "en"}})
            assert [r["id"] for r in only_en["results"]] == ["https://example.com/a"]
            assert await nd.get("https://example.com/a") == {
                "id": "https://example.com/a", "shingles": 10, "metadata": {"lang": "en"}
            }  # fmt: skip
            assert await nd.delete("b") is True
            assert await nd.delete("b") is False
            assert await nd.get("b") is None
            with pytest.raises(ClientError) as refused:
                await nd.similar("b")
            assert refused.value.status == 404 and "'b'" in refused.value.detail
        async with Client(service.url, api_key="x" * 24) as stranger:
            with pytest.raises(ClientError) as denied:
                await stranger.get("c")
            assert denied.value.status == 401

    asyncio.run(walk())


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`neardup ARGS` in this process (exit code, stdout, stderr): the same parser and
    tools as the console script, without a Python start-up per call."""
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return code, out, err


def test_client_sends_expiry(service: Server) -> None:
    """ingest and put take ttl or expires_at: the service stores each (GET shows it), a
    put without one clears it, and both at once is the service's 422 as a ClientError."""

    async def run() -> None:
        async with Client(service.url, api_key=KEY) as nd:
            await nd.ingest(A, id="exp-a", expires_at="2100-01-31T12:00:00+01:00")
            assert (await nd.get("exp-a"))["expires_at"] == "2100-01-31T11:00:00.000Z"
            await nd.put("exp-b", B, ttl=600)
            assert "expires_at" in (await nd.get("exp-b"))  # type: ignore[operator]
            await nd.put("exp-b", B)
            assert "expires_at" not in (await nd.get("exp-b"))  # type: ignore[operator]
            with pytest.raises(ClientError, match="not both"):
                await nd.put("exp-b", B, ttl=5, expires_at="2100-01-31T12:00:00Z")

    asyncio.run(run())


def test_cli_ingest_ttl(
    service: Server,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """neardup ingest --ttl makes every document expire that many seconds after it is
    stored, through a service and straight into the store alike; --ttl 0 is refused."""
    import time
    from datetime import datetime

    monkeypatch.setenv("NEARDUP_API_KEY", KEY)
    monkeypatch.setenv("NEARDUP_REDIS_URL", redis_url)
    monkeypatch.setenv("NEARDUP_COLLECTION", f"cli{os.getpid()}")  # the service's
    docs = tmp_path / "ttl.jsonl"
    docs.write_text(json.dumps({"id": "ttl-s", "text": A}) + "\n")
    url = ("--url", service.url)
    started = time.time()
    assert _cli(capsys, "ingest", "--quiet", "--ttl", "600", str(docs), *url)[0] == 0
    docs.write_text(json.dumps({"id": "ttl-l", "text": B}) + "\n")
    assert _cli(capsys, "ingest", "--quiet", "--ttl", "900", str(docs))[0] == 0
    finished = time.time()
    for doc_id, ttl in (("ttl-s", 600), ("ttl-l", 900)):
        code, out, _ = _cli(capsys, "get", doc_id, *url)
        ends = datetime.fromisoformat(json.loads(out)["expires_at"]).timestamp()
        assert code == 0 and started + ttl - 0.001 <= ends <= finished + ttl + 0.001
    code, _, err = _cli(capsys, "ingest", "--ttl", "0", str(docs), *url)
    assert code == 2 and "above 0" in err


def test_cli_get_delete_export_import(
    service: Server,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """neardup get/delete/export/import: an export imported (straight into another
    collection's store) exports identically, and delete --filter removes exactly the
    matching documents."""
    monkeypatch.setenv("NEARDUP_API_KEY", KEY)
    docs = tmp_path / "docs.jsonl"
    rows = [{"id": f"d{i}", "text": f"{A} number {i} of {i % 4}", "metadata": {"k": i % 4}}
            for i in range(40)]  # fmt: skip
    docs.write_text("".join(json.dumps(r) + "\n" for r in rows))
    url = ("--url", service.url)
    assert _cli(capsys, "ingest", "--quiet", str(docs), *url)[0] == 0
    code, out, _ = _cli(capsys, "get", "d7", *url)
    shingles = len(oracle.shingles(rows[7]["text"], "word:3"))
    assert json.loads(out) == {"id": "d7", "shingles": shingles, "metadata": {"k": 3}}
    assert _cli(capsys, "get", "nope", *url)[0] == 1
    code, out, _ = _cli(
        capsys, "query", "--id", "d7", "--json", "--filter", '{"metadata": {"k": 1}}', *url
    )
    found = json.loads(out)["results"]
    assert code == 0 and found and {r["id"] for r in found} <= {f"d{i}" for i in range(1, 40, 4)}
    out_file = tmp_path / "export.jsonl"
    assert _cli(capsys, "export", "-o", str(out_file), *url)[0] == 0
    lines = out_file.read_text().splitlines()
    assert len(lines) >= 42 and json.loads(lines[0])["format"] == "neardup-export"
    assert json.loads(lines[-1]) == {"end": True, "documents": len(lines) - 2}
    # A reader that goes away after the first line (`| head -1`) ends the export quietly.
    cut = subprocess.run(
        f"{shlex.join([*neardup_cmd(), 'export', *url])} | head -1",
        shell=True, capture_output=True, timeout=120,
        env={**os.environ, "NEARDUP_API_KEY": KEY},
    )  # fmt: skip
    assert json.loads(cut.stdout)["format"] == "neardup-export"
    assert b"Traceback" not in cut.stderr and b"Error" not in cut.stderr, cut.stderr
    monkeypatch.setenv("NEARDUP_REDIS_URL", redis_url)
    monkeypatch.setenv("NEARDUP_COLLECTION", f"imp{os.getpid()}")
    monkeypatch.setenv("NEARDUP_DATA_DIR", str(tmp_path / "data"))
    code, _, err = _cli(capsys, "import", str(out_file), "--batch", "7")
    assert code == 0 and f"imported {len(lines) - 2} documents" in err, err
    again = tmp_path / "again.jsonl"
    assert _cli(capsys, "export", "-o", str(again))[0] == 0
    assert again.read_text() == out_file.read_text()
    code, _, err = _cli(capsys, "delete", "--filter", '{"metadata": {"k": 2}}', *url)
    assert code == 0 and "deleted 10 documents" in err, err
    code, _, err = _cli(capsys, "delete", "d0", "d1", "d2", *url)
    assert "deleted 2 documents" in err  # d2 had k == 2: gone already
    left = [json.loads(x)["id"] for x in _cli(capsys, "export", *url)[1].splitlines()[1:-1]]
    assert {i for i in left if i.startswith("d")} == {
        f"d{i}" for i in range(40) if i % 4 != 2 and i not in (0, 1)
    }
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-6]) + "\n")  # a copy that lost its last lines
    code, _, err = _cli(capsys, "import", str(cut))
    assert code == 1 and "incomplete" in err and f"the {len(lines) - 7} it has" in err, err
    # A file that is no export at all, without a final line end, is named as such.
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("this is not an export at all")
    code, _, err = _cli(capsys, "import", str(wrong))
    assert code == 1 and "not JSON" in err, err
    # Cut mid-way through a line: the whole lines before it are imported all the same.
    mid = tmp_path / "mid.jsonl"
    whole = "\n".join(lines[:-6]) + "\n"
    mid.write_text(whole + lines[-6][: len(lines[-6]) // 2])
    code, _, err = _cli(capsys, "import", str(mid), "--batch", "500")
    assert code == 1 and "incomplete" in err and f"the {len(lines) - 7} it has" in err, err
    code, _, err = _cli(capsys, "delete", "--filter", "{}", *url)
    assert code != 0 and "filter" in err


def test_the_batch_limit_is_the_services() -> None:
    """The client's MAX_BATCH, which the CLI uses, is the limit the service enforces on
    ingest batches, deletes by ids and imports (a copy that drifts fails here), and the
    CLI refuses an import batch over it before it sends anything."""
    from app import client
    from app.api import schemas
    from app.index import transfer, writes

    assert client.MAX_BATCH == writes.MAX_BATCH == schemas.MAX_BATCH == transfer.MAX_IMPORT
    fields = [
        (schemas.BatchIn.model_fields["documents"], client.MAX_BATCH),
        (schemas.DeleteIn.model_fields["ids"], client.MAX_BATCH),
        # ... and the export's end line after a full batch (import_documents skips it)
        (schemas.ImportIn.model_fields["documents"], client.MAX_BATCH + 1),
    ]
    for info, most in fields:
        assert most in [getattr(m, "max_length", None) for m in info.metadata]
    parser = build_parser()
    assert parser.parse_args(["import", "f", "--batch", str(client.MAX_BATCH)]).batch == 1000
    with pytest.raises(SystemExit):
        parser.parse_args(["import", "f", "--batch", str(client.MAX_BATCH + 1)])


def test_cli_version_and_defaults_in_help() -> None:
    """--version prints the version; every subcommand's help shows the options' defaults."""
    done = subprocess.run([*neardup_cmd(), "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("neardup ")
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in commands.items():
        for action in sub._actions:
            if action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.option_strings} has no help"
        shown = " ".join(sub.format_help().split())
        for action in sub._actions:
            if action.option_strings and action.default not in (None, False, "==SUPPRESS=="):
                assert f"(default: {action.default})" in shown, (name, action.dest)


def test_client_tries_again_after_503_only_when_repeating_is_safe(tmp_path: Path) -> None:
    """While Redis is paused a PUT gets 503 with Retry-After: with retries off the client
    raises it, with retries on it waits and the PUT lands once Redis is back; an ingest
    the service would name is never repeated."""
    import threading

    from support.procs import RedisProc

    with RedisProc(tmp_path / "redis") as rds, Server(
        tmp_path, NEARDUP_REDIS_URL=rds.url, NEARDUP_LOG_LEVEL="warning",
        NEARDUP_REDIS_TIMEOUT="0.5",
    ) as server:  # fmt: skip
        server.wait_ready()

        async def attempt(retries: int, doc_id: str | None) -> str:
            async with Client(server.url, retries=retries) as nd:
                try:
                    if doc_id is None:
                        await nd.ingest(A)
                    else:
                        await nd.put(doc_id, A)
                except ClientError as exc:
                    return f"error {exc.status}"
                return "stored"

        rds.pause()
        try:
            assert asyncio.run(attempt(0, "once")) == "error 503"
            assert asyncio.run(attempt(5, None)) == "error 503"  # unnamed: not repeated
            # Resumed while the client waits out a Retry-After.
            threading.Timer(1.5, rds.resume).start()
            assert asyncio.run(attempt(5, "again")) == "stored"
        finally:
            rds.resume()
        ids = all_ids(rds.client(), "default")
        assert sorted(ids) == ["again"]


def test_cli_collections_and_collection_flag(
    service: Server,
    redis_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """neardup collections create/list/show/delete through a service and on the store
    itself, and --collection sends a tool's documents to that collection only."""
    monkeypatch.setenv("NEARDUP_API_KEY", KEY)
    url = ("--url", service.url)
    name = f"clicol{os.getpid()}"
    code, out, err = _cli(capsys, "collections", "create", name, "--threshold", "0.7", *url)
    assert code == 0, err
    made = json.loads(out)["parameters"]
    assert made["threshold"] == 0.7 and made["bands"] * made["rows"] <= made["num_perm"]
    code, _, err = _cli(capsys, "collections", "create", name, "--threshold", "0.8", *url)
    assert code == 1 and "threshold: stored 0.7, asked 0.8" in err
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "x", "text": A}) + "\n" + json.dumps({"id": "y", "text": B}))
    assert _cli(capsys, "ingest", "--quiet", str(docs), *url, "--collection", name)[0] == 0
    code, out, _ = _cli(capsys, "query", "--id", "x", "--json", *url, "--collection", name)
    assert [r["id"] for r in json.loads(out)["results"]] == ["y"]
    assert _exact(A, B) >= 0.7
    assert _cli(capsys, "get", "y", *url)[0] == 1  # not in the service's own collection
    code, out, _ = _cli(capsys, "collections", "list", *url)
    listed = {c["name"]: c["documents"] for c in json.loads(out)["collections"]}
    assert listed[name] == 2
    # On the store itself, without the service: the same collection, the same answers.
    monkeypatch.setenv("NEARDUP_REDIS_URL", redis_url)
    monkeypatch.setenv("NEARDUP_COLLECTION", f"cli{os.getpid()}")
    monkeypatch.setenv("NEARDUP_DATA_DIR", str(tmp_path / "data"))
    code, out, _ = _cli(capsys, "collections", "show", name)
    assert code == 0 and json.loads(out)["parameters"] == made
    assert json.loads(_cli(capsys, "get", "x", "--collection", name)[1])["id"] == "x"
    code, _, err = _cli(capsys, "collections", "delete", name)
    assert code == 0 and "deleted" in err
    code, _, err = _cli(capsys, "collections", "show", name, *url)
    assert code == 1 and "no collection" in err
    code, _, err = _cli(capsys, "collections", "create", "a:b", *url)
    assert code == 2 and "letters, digits" in err
