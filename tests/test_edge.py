"""Hostile clients against a real `neardup serve`: ids, logs, slow clients, strict protocol.

One server for the module (short slow-client limits, a small body limit) on the
session's Redis; every answer is read over real HTTP or a raw socket.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
from support.corpus import neardup_cmd
from support.procs import Server, wait_until

from app.core.settings import simd_variable

TEXT = "Storm waters rose along the coast on Monday as residents moved inland for safety"
HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
MAX_CONNECTIONS = 40
MAX_BODY = 1 << 20
# How long a test waits for what a timeout of 1 s must do: generous, never a speed check.
PATIENCE = 20.0


@pytest.fixture(scope="module")
def server(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    served = Server(
        tmp_path_factory.mktemp("edge"),
        NEARDUP_REDIS_URL=redis_url,
        NEARDUP_COLLECTION=f"edge{os.getpid()}",
        NEARDUP_HEADER_TIMEOUT=str(HEADER_TIMEOUT),
        NEARDUP_BODY_TIMEOUT=str(BODY_TIMEOUT),
        NEARDUP_MAX_CONNECTIONS=str(MAX_CONNECTIONS),
        NEARDUP_MAX_BODY_BYTES=str(MAX_BODY),
    )
    try:
        served.wait_ready()
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def http(server: Server) -> Iterator[httpx.Client]:
    """One client for the module (a client per call builds an SSL context each time)."""
    with httpx.Client(base_url=server.url, timeout=PATIENCE) as client:
        yield client


def _problem(resp: httpx.Response, status: int) -> str:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/problem+json"
    return str(resp.json()["detail"])


def _put(http: httpx.Client, raw_id: str, text: str = TEXT) -> httpx.Response:
    return http.put(f"/documents/{raw_id}", json={"text": text})


def _connect(server: Server, first: bytes = b"") -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE)
    if first:
        sock.sendall(first)
    return sock


def _read_to_eof(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (or PATIENCE passes)."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


# --- 18.3: one id rule ----------------------------------------------------------------


def test_ids_that_are_not_utf8_are_refused_not_merged(server: Server, http: httpx.Client) -> None:
    """%C3%28 and %C4%28 (invalid UTF-8) are each 422; before, both became U+FFFD( and
    the second PUT replaced the first."""
    for raw in ("%C3%28", "%C4%28", "a%FF", "%ED%A0%80"):  # the last: an encoded surrogate
        detail = _problem(_put(http, raw), 422)
        assert "not UTF-8" in detail
        _problem(http.get(f"/similar/{raw}"), 422)
    _problem(http.get(f"/documents/{quote(chr(0xFFFD) + '(')}"), 404)


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        ("line\nbreak", "U+000A"),
        ("tab\there", "U+0009"),
        ("nul\x00", "U+0000"),
        ("del\x7f", "U+007F"),
        ("c1\x85", "U+0085"),
        ("ls\u2028", "U+2028"),
    ],
)
def test_control_characters_in_ids_are_422_on_every_route(
    server: Server, http: httpx.Client, bad: str, code: str
) -> None:
    """An id with a control character is refused by path and by body, and the reason
    names the character."""
    path = quote(bad, safe="")
    for resp in (
        _put(http, path),
        http.get(f"/documents/{path}"),
        http.delete(f"/documents/{path}"),
        http.get(f"/similar/{path}"),
        http.post("/documents", json={"id": bad, "text": TEXT}),
        http.post("/documents/batch", json={"documents": [{"id": bad, "text": TEXT}]}),
    ):
        detail = _problem(resp, 422)
        assert "control characters" in detail and code in detail


@pytest.mark.parametrize("dots", [".", ".."])
def test_dot_ids_are_422_and_longer_dot_runs_are_ids(
    server: Server, http: httpx.Client, dots: str
) -> None:
    """ "." and ".." cannot be ids (a URL path segment of them is removed before it is
    sent, so no browser could read or delete the document): refused in bodies with the
    reason; "...", ".a" and "a/.." are ids like any other."""
    for resp in (
        http.post("/documents", json={"id": dots, "text": TEXT}),
        http.post("/documents/batch", json={"documents": [{"id": dots, "text": TEXT}]}),
    ):
        assert "a URL path cannot name it" in _problem(resp, 422)
    for fine in ("...", ".a", "a/.."):
        assert http.post("/documents", json={"id": fine, "text": TEXT}).status_code == 201
        assert http.get(f"/documents/{quote(fine, safe='')}").status_code == 200


def test_the_cli_applies_the_same_id_rule(
    server: Server, http: httpx.Client, tmp_path: Path
) -> None:
    """`neardup query --id` refuses an id with a newline; `neardup ingest` skips such a
    line with the reason and ingests the rest."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    done = subprocess.run(
        [*neardup_cmd(), "query", "--url", server.url, "--id", "a\nb"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "control characters" in done.stderr
    lines = tmp_path / "docs.jsonl"
    docs = [{"id": "cli\nbad", "text": TEXT}, {"id": "cli-ok", "text": TEXT}]
    lines.write_text("".join(json.dumps(d) + "\n" for d in docs))
    done = subprocess.run(
        [*neardup_cmd(), "ingest", "--quiet", "--url", server.url, str(lines)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "docs.jsonl:1: skipped" in done.stderr and "U+000A" in done.stderr, done.stderr
    assert http.get("/documents/cli-ok").status_code == 200


# --- 18.4: logs cannot be forged ------------------------------------------------------


def test_client_values_cannot_forge_or_split_log_lines(server: Server, http: httpx.Client) -> None:
    """A path with a newline, a User-Agent with C1 and separator characters and an
    X-Request-Id that is no short token leave one escaped line each, none of their own."""
    forged = "2026-01-01 00:00:00,000 INFO neardup.access GET /healthz 200 FORGED"
    http.get(f"/similar/x{quote(chr(10) + forged, safe='')}")
    # Raw control characters are refused by the HTTP parser itself; these bytes pass it.
    agent = "agent \u0085FORGED2 \u2028FORGED3 \\".encode()
    long_id = "r" * 65
    resp = http.get("/healthz", headers={"user-agent": agent, "x-request-id": long_id})
    assert resp.status_code == 200
    assert resp.headers["x-request-id"] != long_id  # replaced, and the new one is logged
    short = http.get("/healthz", headers={"x-request-id": "trace-42.a_b"})
    assert short.headers["x-request-id"] == "trace-42.a_b"
    assert wait_until(lambda: resp.headers["x-request-id"] in server.output(), PATIENCE)
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")
    lines = [line for line in server.output().splitlines() if not line.startswith("neardup: ")]
    assert lines and all(stamp.match(line) for line in lines), lines
    path_line = next(line for line in lines if "FORGED 422" in line)
    assert "/similar/x\\n2026-01-01" in path_line
    agent_line = next(line for line in lines if resp.headers["x-request-id"] in line)
    assert 'user_agent="agent \\x85FORGED2 \\u2028FORGED3 \\\\"' in agent_line
    assert long_id not in server.output()


# --- 18.5: slow clients ---------------------------------------------------------------


def test_a_slow_body_is_the_body_timeouts_408_not_the_deadlines_503(
    redis_url: str, tmp_path: Path
) -> None:
    """With NEARDUP_REQUEST_TIMEOUT shorter than NEARDUP_BODY_TIMEOUT, a body still being
    sent when the request deadline would pass gets the body timeout's 408 (no
    Retry-After): the deadline counts the work from the body's arrival."""
    served = Server(
        tmp_path,
        NEARDUP_REDIS_URL=redis_url,
        NEARDUP_COLLECTION=f"slowbody{os.getpid()}",
        NEARDUP_REQUEST_TIMEOUT="1",
        NEARDUP_BODY_TIMEOUT="3",
    )
    try:
        served.wait_ready()
        slow_body = _connect(
            served,
            b"POST /similar HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            b'content-length: 100\r\n\r\n{"te',
        )
        answer = _read_to_eof(slow_body)
        slow_body.close()
        assert answer.startswith(b"HTTP/1.1 408 ") and b"NEARDUP_BODY_TIMEOUT" in answer, answer
        assert b"retry-after" not in answer.lower()
    finally:
        served.stop()


def test_half_open_connections_are_closed_while_others_are_answered(
    server: Server, http: httpx.Client
) -> None:
    """Connections that send half a header, nothing at all, or half a body are closed
    (408 when a request was begun) after the timeouts; meanwhile other clients get 200."""
    half = [_connect(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ") for _ in range(20)]
    silent = [_connect(server) for _ in range(3)]
    slow_body = _connect(
        server,
        b"POST /similar HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
        b'content-length: 100\r\n\r\n{"te',
    )
    answered = [http.get("/healthz").status_code for _ in range(5)]
    assert answered == [200] * 5
    for sock in half:
        assert _read_to_eof(sock).startswith(b"HTTP/1.1 408 ")
    for sock in silent:
        assert _read_to_eof(sock) == b""
    body_answer = _read_to_eof(slow_body)
    assert body_answer.startswith(b"HTTP/1.1 408 ") and b"NEARDUP_BODY_TIMEOUT" in body_answer
    for sock in [*half, *silent, slow_body]:
        sock.close()
    assert http.get("/healthz").status_code == 200
    metrics = http.get("/metrics").text
    assert re.search(r'neardup_connections_closed_total\{reason="header_timeout"\} (\d+)', metrics)


def test_connections_over_the_cap_are_refused_at_once_until_the_idle_ones_go(
    server: Server,
) -> None:
    """With MAX_CONNECTIONS idle connections open, a request gets 503 with Retry-After;
    once the header timeout has closed them, requests are answered again."""
    idle = [_connect(server) for _ in range(MAX_CONNECTIONS)]
    # A new connection each (httpx.get): the cap is checked when a connection opens.
    refused = httpx.get(f"{server.url}/healthz")
    assert "NEARDUP_MAX_CONNECTIONS" in _problem(refused, 503)
    assert refused.headers["retry-after"] == "1"
    for sock in idle:
        assert _read_to_eof(sock) == b""
        sock.close()
    assert wait_until(
        lambda: httpx.get(f"{server.url}/healthz").status_code == 200, PATIENCE, step=0.2
    )


# --- 18.8: strict protocol ------------------------------------------------------------


def _post_raw(http: httpx.Client, path: str, body: bytes, **headers: str) -> httpx.Response:
    headers.setdefault("content-type", "application/json")
    return http.post(path, content=body, headers=headers)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b'{"id": "j1", "text": "%s", "metadata": {"a": NaN}}', "NaN and Infinity"),
        (b'{"id": "j1", "text": "%s", "metadata": {"a": -Infinity}}', "NaN and Infinity"),
        (b'{"id": "j1", "text": "%s", "metadata": {"a": 1e400}}', "too large for a double"),
        (b'{"id": "j1",\n  "text": "x",,}', "line 2, column 15"),
    ],
)
def test_json_outside_rfc_8259_is_422_saying_where(
    server: Server, http: httpx.Client, raw: bytes, says: str
) -> None:
    """NaN, Infinity and numbers past a double are refused (not stored as null); a
    malformed body's detail gives line and column in words."""
    detail = _problem(_post_raw(http, "/documents", raw.replace(b"%s", TEXT.encode())), 422)
    assert says in detail and "line " in detail
    _problem(http.get("/documents/j1"), 404)


@pytest.mark.parametrize(
    "body",
    [
        {"text": TEXT, "limit": True},
        {"text": TEXT, "threshold": True},
        {"text": TEXT, "limit": "5"},
    ],
)
def test_json_types_are_taken_as_sent(server: Server, http: httpx.Client, body: dict) -> None:
    """true is not a limit or a threshold, and "5" is not a number."""
    field = next(k for k in body if k != "text")
    assert field in _problem(http.post("/similar", json=body), 422)


def test_bodies_are_utf8_json_plain_or_gzip(server: Server, http: httpx.Client) -> None:
    """UTF-16 is 422 saying UTF-8; gzip is taken; other codings and media types are 415;
    a gzip bomb is 413 by its decompressed size, and nothing of it is stored."""
    doc = f'{{"id": "enc", "text": "{TEXT}"}}'
    assert "UTF-8" in _problem(_post_raw(http, "/documents", doc.encode("utf-16")), 422)
    assert "UTF-8" in _problem(
        _post_raw(http, "/documents", doc.encode("utf-16-le")), 422
    )  # no byte order mark: NUL bytes
    resp = _post_raw(
        http, "/documents", gzip.compress(doc.encode()), **{"content-encoding": "gzip"}
    )
    assert resp.status_code == 201 and resp.json()["id"] == "enc"
    assert http.get("/documents/enc").status_code == 200
    refused = _post_raw(http, "/documents", doc.encode(), **{"content-encoding": "br"})
    assert "Content-Encoding br" in _problem(refused, 415)
    assert refused.headers["accept-encoding"] == "gzip"
    for media in (
        "text/plain",
        "application/x-www-form-urlencoded",
        "application/json; charset=latin-1",
    ):
        _problem(_post_raw(http, "/documents", doc.encode(), **{"content-type": media}), 415)
    bomb = gzip.compress(b'{"id": "bomb", "text": "' + b"a " * (4 * MAX_BODY) + b'"}')
    assert len(bomb) < MAX_BODY // 10
    detail = _problem(_post_raw(http, "/documents", bomb, **{"content-encoding": "gzip"}), 413)
    assert "decompressed" in detail
    _problem(http.get("/documents/bomb"), 404)
    cut = gzip.compress(doc.encode())[:-6]
    _problem(_post_raw(http, "/documents", cut, **{"content-encoding": "gzip"}), 422)


def test_head_answers_every_get_route_as_get_without_a_body(
    server: Server, http: httpx.Client
) -> None:
    """Every GET route of the served schema answers HEAD with GET's status and headers."""
    assert _put(http, "head-doc").status_code in (200, 201)
    paths = http.get("/openapi.json").json()["paths"]
    gets = [p for p, ops in paths.items() if "get" in ops]
    assert {"/healthz", "/readyz", "/metrics", "/duplicates"} <= set(gets)
    default = http.get("/collections").json()["default"]
    check = http.post("/checks", json={"text": "a check to read by HEAD"}).json()["id"]
    for template in gets:
        named = template.replace("{collection}", default)  # the served collection
        named = named.replace("{check_id}", check)  # a stored check's id
        path = re.sub(r"\{[^}]+\}", "head-doc", named)
        got = http.get(f"{path}")
        head = http.head(f"{path}")
        # GET /collection moved (a 308 to /collections/{name}); every other GET is a 200.
        assert head.status_code == got.status_code == (308 if path == "/collection" else 200)
        assert head.content == b""
        assert head.headers.get("content-type") == got.headers.get("content-type"), path
        assert head.headers.get("location") == got.headers.get("location"), path


# --- 14.2: strictness -----------------------------------------------------------------


def test_unknown_query_parameters_are_422_naming_them_on_every_route(
    server: Server, http: httpx.Client
) -> None:
    """?sort=abc on every operation of the served schema is a 422 that names it."""
    paths = http.get("/openapi.json").json()["paths"]
    assert len(paths) >= 8
    for template, ops in paths.items():
        path = re.sub(r"\{[^}]+\}", "some-id", template)
        for method in ops:
            resp = http.request(method.upper(), f"{path}?sort=abc&limt=5")
            detail = _problem(resp, 422)
            assert "'sort'" in detail and "'limt'" in detail, (method, template)
    ok = http.get("/duplicates?threshold=0.9")
    assert ok.status_code == 200


def test_unknown_body_fields_are_422_naming_them(server: Server, http: httpx.Client) -> None:
    """A misspelt field in any body is named, not ignored."""
    for method, path, body in [
        ("POST", "/documents", {"id": "u", "text": TEXT, "metdata": {}}),
        ("PUT", "/documents/u", {"text": TEXT, "metdata": {}}),
        ("POST", "/documents/batch", {"documents": [{"id": "u", "text": TEXT, "metdata": {}}]}),
        ("POST", "/similar", {"text": TEXT, "metdata": {}}),
    ]:
        detail = _problem(http.request(method, path, json=body), 422)
        assert "metdata: unknown field" in detail
    _problem(http.get("/documents/u"), 404)


def _start_with(tmp_path: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """`neardup serve` run with these NEARDUP_* variables only, until it exits."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env.update(settings, NEARDUP_DATA_DIR=str(tmp_path))
    return subprocess.run(
        [*neardup_cmd(), "serve", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_misspelt_setting_stops_start_up_with_a_suggestion(tmp_path: Path) -> None:
    """NEARDUP_THRESHHOLD stops `neardup serve` before it listens, naming NEARDUP_THRESHOLD."""
    done = _start_with(tmp_path, NEARDUP_THRESHHOLD="0.8")
    assert done.returncode == 2
    assert "NEARDUP_THRESHHOLD" in done.stderr and "did you mean NEARDUP_THRESHOLD?" in done.stderr
    assert not (tmp_path / "redis.sock").exists()


def test_a_simd_switch_the_kernel_does_not_take_stops_start_up(tmp_path: Path) -> None:
    """NEARDUP_SIMD=OFF (the kernel takes only lower-case off, 0, scalar, none) stops
    `neardup serve` with a message naming it, where SIMD would silently have stayed on."""
    done = _start_with(tmp_path, NEARDUP_SIMD="OFF")
    assert done.returncode == 2
    assert "NEARDUP_SIMD: 'OFF' is not a value it takes" in done.stderr
    for taken in ("off", "0", "scalar", "none", ""):
        assert simd_variable({"NEARDUP_SIMD": taken}) == []


def test_pipelined_requests_are_answered_whole_and_in_order(server: Server) -> None:
    """Four requests sent at once get four whole answers in order, a HEAD's without a body."""
    sent = [("GET", "/healthz", ""), ("HEAD", "/healthz", ""), ("GET", "/nowhere", "")]
    sent.append(("GET", "/healthz", "connection: close\r\n"))
    requests = b"".join(f"{m} {p} HTTP/1.1\r\nhost: x\r\n{h}\r\n".encode() for m, p, h in sent)
    with _connect(server, requests) as sock:
        rest = _read_to_eof(sock)
    statuses = []
    for method, _, _ in sent:
        head, _, rest = rest.partition(b"\r\n\r\n")
        statuses.append(head[9:12])
        length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))  # type: ignore[union-attr]
        if method == "GET":
            body, rest = rest[:length], rest[length:]
            assert body.startswith(b"{") and body.endswith(b"}"), body
    assert statuses == [b"200", b"200", b"404", b"200"]
    assert rest == b""


def test_headers_past_the_bound_are_431_and_a_big_body_is_not(server: Server) -> None:
    """A request whose headers run past 64 KiB (one huge header, many small ones, or one
    that never ends) is answered 431 and closed without reaching a route; a request with
    60 KiB of headers, or a 1 MB body sent in the same write as its headers, is served."""
    for headers in (
        b"x-big: " + b"a" * 70_000 + b"\r\n\r\n",
        b"x-n: 1234567890\r\n" * 6_000 + b"\r\n",
        b"x-never-ends: " + b"a" * 200_000,  # the parser holds it whole until it ends
    ):
        sent = b"GET /healthz HTTP/1.1\r\nhost: x\r\n" + headers
        with _connect(server, sent) as sock:
            answer = _read_to_eof(sock)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
        assert b"ran past 65536 bytes" in answer
    ok = (
        b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-fine: "
        + b"a" * 60_000
        + b"\r\nconnection: close\r\n\r\n"
    )
    with _connect(server, ok) as sock:
        assert _read_to_eof(sock).startswith(b"HTTP/1.1 200 ")
    body = b'{"text": "' + b"word " * 200_000 + b'"}'
    head = b"POST /similar HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    head += b"content-length: %d\r\nconnection: close\r\n\r\n" % len(body)
    with _connect(server, head + body) as sock:
        assert _read_to_eof(sock).startswith(b"HTTP/1.1 200 ")
