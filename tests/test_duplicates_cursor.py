"""Resumable /duplicates and /duplicates/groups: cursor lines, and resuming after a cut."""

from __future__ import annotations

import random
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from support.corpus import neardup_cmd, read_corpus
from support.procs import Server
from support.textgen import mutate


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A served collection with ~3,500 pairs: 150 articles in threes, and one of 80 copies."""
    work = tmp_path_factory.mktemp("cursor")
    rng = random.Random(13)
    articles = [text for _, text in read_corpus()[:151]]
    docs = []
    for i, text in enumerate(articles[:150]):
        docs += [
            {"id": f"a{i}-{k}", "text": mutate(text, 0.02, rng) if k else text} for k in range(3)
        ]
    docs += [{"id": f"hot-{k}", "text": mutate(articles[150], 0.02, rng)} for k in range(80)]
    with Server(work) as srv:
        srv.wait_ready()
        for lo in range(0, len(docs), 500):
            r = httpx.post(srv.url + "/documents/batch", json={"documents": docs[lo : lo + 500]})
            assert r.status_code == 200 and r.json()["errors"] == 0
        yield srv


def _lines(url: str, path: str, **params: object) -> list[dict]:
    r = httpx.get(url + path, params=params, timeout=60)
    assert r.status_code == 200, r.text
    return [orjson.loads(x) for x in r.text.splitlines() if x]


def _cut_after(url: str, path: str, cursors: int, **params: object) -> list[dict]:
    """The lines of a stream read until `cursors` cursor lines have come, then the
    connection is closed under it."""
    got: list[dict] = []
    seen = 0
    with httpx.Client(timeout=60) as c, c.stream("GET", url + path, params=params) as r:
        for line in r.iter_lines():
            if line:
                got.append(orjson.loads(line))
                seen += "cursor" in got[-1]
            if seen == cursors:
                break  # leaving the with closes the socket mid-stream
    return got


def _vouched(lines: list[dict]) -> tuple[list[dict], str]:
    """The items before the last cursor line, and that cursor."""
    last = max(i for i, x in enumerate(lines) if "cursor" in x)
    return [x for x in lines[:last] if "cursor" not in x], lines[last]["cursor"]


@pytest.mark.parametrize(
    ("path", "every"), [("/duplicates", 300), ("/duplicates/groups", 40)], ids=["pairs", "groups"]
)
def test_cursor_resume_equals_one_uninterrupted_scan(server: Server, path: str, every: int) -> None:
    """A stream cut after a few cursor lines, resumed from the last one read, gives exactly
    the items of one uninterrupted scan, in the same order, none twice."""
    whole = _lines(server.url, path)
    assert len(whole) > 3 * every  # enough for several checkpoints
    assert not any("cursor" in x for x in whole)  # no cursor lines unless asked for
    first = _cut_after(server.url, path, 3, checkpoints=every)
    before, cursor = _vouched(first)
    assert before and len(before) < len(whole)
    rest = _lines(server.url, path, cursor=cursor, checkpoints=every)
    assert rest[-1] == {"cursor": rest[-1]["cursor"], "done": True}
    assert [x for x in rest if "cursor" in x][:-1] == [
        x for x in rest if "cursor" in x and not x["done"]
    ]
    assert before + [x for x in rest if "cursor" not in x] == whole


def test_checkpointed_stream_is_the_plain_one_plus_cursors(server: Server) -> None:
    """With checkpoints, dropping the cursor lines leaves the plain stream, and a cursor
    line comes at least every `checkpoints` pairs plus one block."""
    whole = _lines(server.url, "/duplicates")
    marked = _lines(server.url, "/duplicates", checkpoints=500)
    assert [x for x in marked if "cursor" not in x] == whole
    assert marked[-1]["done"] is True
    run = longest = 0
    for x in marked:
        run = 0 if "cursor" in x else run + 1
        longest = max(longest, run)
    assert longest <= 500 + 80  # one block of pairs can overshoot by a hot document's


def test_cursor_and_after_together_are_422(server: Server) -> None:
    """after (a max_pairs cut) and cursor (a disconnect) are one position: both is 422."""
    r = httpx.get(server.url + "/duplicates", params={"after": "1:2", "cursor": "1:2"})
    assert r.status_code == 422 and "cursor" in r.json()["detail"]
    r = httpx.get(server.url + "/duplicates/groups", params={"cursor": "1:2"})
    assert r.status_code == 422


class _CuttingProxy:
    """A TCP proxy to the server that closes the first connection after `limit` bytes of
    its answer, and passes later ones whole; it keeps each request's first line."""

    def __init__(self, port: int, limit: int) -> None:
        self.port, self.limit = port, limit
        self.requests: list[str] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for n in range(20):  # bounded: a test makes a handful of connections
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client, n == 0), daemon=True).start()

    def _serve(self, client: socket.socket, cut: bool) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.port))
        request = client.recv(65536)
        self.requests.append(request.split(b"\r\n", 1)[0].decode())
        upstream.sendall(request)
        sent = 0
        try:
            while data := upstream.recv(65536):
                if cut and sent + len(data) >= self.limit:
                    client.sendall(data[: self.limit - sent])
                    break
                client.sendall(data)
                sent += len(data)
        finally:
            client.close()
            upstream.close()

    def close(self) -> None:
        self.listener.close()


@pytest.mark.parametrize("groups", [False, True], ids=["pairs", "groups"])
def test_cli_duplicates_resumes_after_a_dropped_connection(
    server: Server, tmp_path: Path, groups: bool
) -> None:
    """`neardup duplicates --url` through a connection dropped mid-stream writes exactly
    the uninterrupted scan's lines (pairs resume from a cursor; groups start over when
    the cut comes before their first cursor line)."""
    path = "/duplicates/groups" if groups else "/duplicates"
    whole = _lines(server.url, path)
    size = sum(len(orjson.dumps(x)) + 1 for x in whole)
    proxy = _CuttingProxy(server.port, size // 2)
    try:
        out = tmp_path / "out.ndjson"
        args = ["duplicates", "--url", proxy.url, "-o", str(out), *(["--groups"] if groups else [])]
        done = subprocess.run([*neardup_cmd(), *args], capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert [orjson.loads(x) for x in out.read_bytes().splitlines()] == whole
        assert len(proxy.requests) == 2, proxy.requests
        if not groups:  # a pair stream is cut after its first cursor line (every 1,000)
            assert "cursor=" in proxy.requests[1]
    finally:
        proxy.close()
