"""Access: API keys with scopes, and the default bind of `neardup serve`."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.procs import Server, serving

pytestmark = pytest.mark.both_stores

WRITE = "w-" + "k" * 30
READ = "r-" + "k" * 30
UNKNOWN = "u-" + "k" * 30
TEXT = "The quick brown fox jumps over the lazy dog near the quiet river bank today"
WRITES = [
    ("POST", "/documents", {"id": "x", "text": TEXT}),
    ("POST", "/documents/batch", {"documents": [{"id": "x", "text": TEXT}]}),
    ("PUT", "/documents/x", {"text": TEXT}),
    ("DELETE", "/documents/x", None),
    ("POST", "/documents/delete", {"ids": ["x"]}),
    ("POST", "/import", {"header": {}, "documents": [{}]}),
]
READS = [
    ("GET", "/documents/x", None),
    ("GET", "/similar/x", None),
    ("POST", "/similar", {"text": TEXT}),
    ("GET", "/duplicates", None),
    ("GET", "/duplicates/groups", None),
    ("GET", "/readyz", None),
    ("GET", "/metrics", None),
    ("GET", "/export", None),
]
# The docs describe the API and hold no data; a browser opening them sends no key.
DOCS = ["/openapi.json", "/docs", "/redoc", "/docs-assets/swagger-ui.css"]


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def keyed(settings) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """The app with one write key and one read key, on the session's Redis."""
    from app.api.app import create_app

    with_keys = settings.model_copy(update={"api_keys": _secret(f"{WRITE}:write,{READ}:read")})
    with TestClient(create_app(with_keys)) as c:
        yield c


def _secret(value: str):  # type: ignore[no-untyped-def]
    from pydantic import SecretStr

    return SecretStr(value)


def _scope(ring, token: bytes) -> str | None:  # type: ignore[no-untyped-def]
    """The scope a key ring grants a presented key, None if it is not one of its keys."""
    grant = ring.grant_of(token)
    return None if grant is None else grant.scope


def _problem(resp, status: int) -> dict:  # type: ignore[no-untyped-def]
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    assert resp.json()["status"] == status
    return resp.json()


# key lists -------------------------------------------------------------------


def test_key_list_and_key_file_formats(tmp_path: Path) -> None:
    """NEARDUP_API_KEYS is 'key:scope,...'; NEARDUP_API_KEYS_FILE has 'key scope' lines."""
    from app.api.auth import keyring
    from app.core.keys import Grant, parse_keys
    from app.core.settings import load_settings

    assert parse_keys(f" {WRITE}:write , {READ}:read ,") == {
        WRITE: Grant("write"),
        READ: Grant("read"),
    }
    key_file = tmp_path / "keys"
    key_file.write_text(f"# comment\n\n{UNKNOWN} read\n  {WRITE}   write\n")
    s = load_settings(api_keys=f"{READ}:read", api_keys_file=key_file)
    ring = keyring(s)
    assert ring.counts() == {"read": 2, "write": 1}
    assert [_scope(ring, k.encode()) for k in (WRITE, READ, UNKNOWN)] == ["write", "read", "read"]
    assert _scope(ring, b"x" * 32) is None
    assert WRITE not in repr(s) and READ not in repr(ring)
    assert not keyring(load_settings(api_keys="  "))  # blank: no keys


@pytest.mark.parametrize(
    "spec",
    [
        "tooshortkey:write",
        f"{WRITE}",
        f"{WRITE}:admin",
        f"{WRITE}:write,{WRITE}:read",
        f"{WRITE[:-1]}!:write",
        f"{WRITE}:write,:read",
    ],
)
def test_bad_key_lists_are_refused_without_showing_keys(spec: str, tmp_path: Path) -> None:
    """A key list that cannot be used stops start-up naming the variable, never a key."""
    from app.core.settings import SettingsError, load_settings

    with pytest.raises(SettingsError) as err:
        load_settings(api_keys=spec)
    assert "NEARDUP_API_KEYS" in str(err.value)
    assert "tooshortkey" not in str(err.value) and "k" * 20 not in str(err.value)
    key_file = tmp_path / "keys"
    key_file.write_text(spec.replace(":", " ").replace(",", "\n"))
    with pytest.raises(SettingsError) as err:
        load_settings(api_keys_file=key_file)
    assert "NEARDUP_API_KEYS_FILE" in str(err.value)
    assert "tooshortkey" not in str(err.value) and "k" * 20 not in str(err.value)


def test_a_rule_across_settings_names_them_and_shows_no_secret() -> None:
    """A setting refused by a rule across settings (passage words below a shingle's) is
    named by its rule's message, and the other settings, keys and Redis password among
    them, are not printed."""
    from app.core.settings import SettingsError, load_settings

    password, key = "hunter2hunter2", "k" * 24
    with pytest.raises(SettingsError) as err:
        load_settings(
            passage_words=2,
            api_keys=f"{key}:read",
            redis_url=f"redis://:{password}@127.0.0.1:6379/0",
        )
    said = str(err.value)
    assert "passage_words (NEARDUP_PASSAGE_WORDS) must be 0" in said
    assert password not in said and key not in said
    assert "NEARDUP_:" not in said and "Value error" not in said


def test_a_key_granted_twice_differently_is_a_settings_error(tmp_path: Path) -> None:
    """A key in NEARDUP_API_KEYS and in the key file with other collections is refused by
    the settings (a line naming both variables, not a traceback at start-up); the
    same grant twice is taken."""
    from app.core.settings import SettingsError, load_settings

    key = "k" * 24
    key_file = tmp_path / "keys"
    key_file.write_text(f"{key} write c1\n")
    with pytest.raises(SettingsError) as err:
        load_settings(api_keys=f"{key}:write", api_keys_file=key_file)
    assert "NEARDUP_API_KEYS and NEARDUP_API_KEYS_FILE" in str(err.value)
    assert key not in str(err.value)
    assert load_settings(api_keys=f"{key}:write:c1", api_keys_file=key_file).api_keys_file


def test_every_key_is_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lookup runs hmac.compare_digest on every key's digest, whichever matches, if any."""
    from app.core import keys as auth

    keys = {f"key-{n}-" + "x" * 20: "read" for n in range(5)}
    ring = auth.KeyRing.of(keys)
    calls: list[tuple[int, int]] = []
    real = auth.hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    for presented in [*keys, "not-a-key-" + "y" * 30, "short"]:
        calls.clear()
        _scope(ring, presented.encode())
        assert calls == [(32, 32)] * len(keys)  # digests: same length, every key


# the service with keys -------------------------------------------------------------


def test_every_route_but_healthz_needs_a_key(keyed: TestClient) -> None:
    """No key, an unknown key or another scheme: 401 with WWW-Authenticate: Bearer."""
    assert keyed.get("/healthz").status_code == 200
    for path in DOCS:
        assert keyed.get(path).status_code == 200, path
    paths = [*WRITES, *READS, ("GET", "/no/such/route", None)]
    for method, path, body in paths:
        for headers in ({}, bearer(UNKNOWN), {"Authorization": f"Basic {WRITE}"}, bearer("")):
            resp = keyed.request(method, path, json=body, headers=headers)
            _problem(resp, 401)
            assert resp.headers["www-authenticate"].startswith('Bearer realm="neardup"')
    assert (
        "invalid_token" in keyed.get("/readyz", headers=bearer(UNKNOWN)).headers["www-authenticate"]
    )
    # Nothing was written by any of them.
    assert keyed.get("/documents/x", headers=bearer(READ)).status_code == 404


def test_a_refused_request_is_counted_under_its_route(keyed: TestClient) -> None:
    """A 401 or 403 is labelled in /metrics with the route it was for (it was
    "unmatched", so refusals could not be told apart by route); a path no route takes
    stays unmatched."""
    from prometheus_client.parser import text_string_to_metric_families

    def count(route: str, status: str) -> float:
        text = keyed.get("/metrics", headers=bearer(WRITE)).text
        return sum(
            s.value
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name == "neardup_http_requests_total"
            and s.labels.get("route") == route
            and s.labels.get("status") == status
        )

    similar = "/similar/{doc_id:docid}"
    before = (count(similar, "401"), count(similar, "403"), count("unmatched", "401"))
    assert keyed.get("/similar/some-id").status_code == 401
    assert keyed.post("/documents", json={"text": "a b c"}, headers=bearer(READ)).status_code == 403
    assert keyed.get("/no/such/route").status_code == 401
    # The route the router would pick: /documents/batch takes POST only, so a GET of it is
    # the document route's, as it is once authorised.
    one = "/documents/{doc_id:docid}"
    got = count(one, "401")
    assert keyed.get("/documents/batch").status_code == 401
    assert count(one, "401") == got + 1
    assert count(similar, "401") == before[0] + 1
    assert count("/documents", "403") >= 1
    assert count("unmatched", "401") == before[2] + 1


def test_read_key_queries_but_cannot_write(keyed: TestClient) -> None:
    """A read key gets every query answered, and 403 (insufficient_scope) on every write."""
    assert keyed.put("/documents/x", json={"text": TEXT}, headers=bearer(WRITE)).status_code == 201
    for method, path, body in READS:
        resp = keyed.request(method, path, json=body, headers=bearer(READ))
        assert resp.status_code == 200, (method, path, resp.text)
    for method, path, body in WRITES:
        resp = keyed.request(method, path, json=body, headers=bearer(READ))
        _problem(resp, 403)
        assert 'error="insufficient_scope"' in resp.headers["www-authenticate"]
    assert keyed.get("/documents/x", headers=bearer(READ)).status_code == 200  # not deleted


def test_write_key_may_do_everything(keyed: TestClient) -> None:
    """A write key may ingest, replace, delete and query."""
    # The import's header is empty: past the key check, the body itself is refused.
    expected = {"POST /documents": 201, "DELETE /documents/x": 204, "POST /import": 422}
    for method, path, body in [*WRITES, *READS]:
        if path.endswith("/x") and method == "GET":
            continue  # deleted just before
        resp = keyed.request(method, path, json=body, headers=bearer(WRITE))
        assert resp.status_code == expected.get(f"{method} {path}", 200), (method, path, resp.text)


def test_no_key_means_no_body_is_read(keyed: TestClient) -> None:
    """Without a key, a body over the size limit gets 401, not 413: nothing was read."""
    big = b"x" * (65 * 1024 * 1024)
    resp = keyed.post("/documents", content=big, headers={"content-type": "application/json"})
    _problem(resp, 401)


def test_schema_declares_the_bearer_scheme(keyed: TestClient) -> None:
    """The OpenAPI schema says which operations need a key and which need write scope."""
    schema = keyed.get("/openapi.json", headers=bearer(READ)).json()
    assert schema["components"]["securitySchemes"]["apiKey"]["scheme"] == "bearer"
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            if path == "/healthz":
                assert "security" not in op
                continue
            assert op["security"] == [{"apiKey": []}] and "401" in op["responses"]
            rest = path.removeprefix("/collections/{collection}")
            # Queries and stored checks are a reader's; every other non-GET writes, and
            # the list of every reader's checks needs write scope too.
            writes = method != "get" and rest != "/similar" and not rest.startswith("/checks")
            writes = writes or (method == "get" and rest == "/checks")
            assert ("403" in op["responses"]) == writes, (method, path)


# `neardup serve` -------------------------------------------------------------------


def test_keys_are_never_logged(tmp_path: Path) -> None:
    """With debug logging, requests with good, bad and wrong-scope keys leave no key in the log."""
    import httpx

    with serving(
        tmp_path,
        ready=False,
        NEARDUP_API_KEYS=f"{WRITE}:write,{READ}:read",
        NEARDUP_LOG_LEVEL="debug",
    ) as server:
        server.wait_ready(**bearer(READ))
        with httpx.Client(base_url=server.url) as c:
            for key in (WRITE, READ, UNKNOWN):
                for method, path, body in WRITES + READS:
                    c.request(method, path, json=body, headers=bearer(key))
        out = server.output()
    assert "every API route needs an API key (1 write, 1 read); /healthz, the docs" in out
    for key in (WRITE, READ, UNKNOWN, "k" * 20):
        assert key not in out
    bad = Server(tmp_path / "bad", NEARDUP_API_KEYS=f"{WRITE}:superuser")
    assert bad.proc.wait(timeout=30) == 2
    bad.stop()
    assert "NEARDUP_API_KEYS" in bad.output() and "k" * 20 not in bad.output()


def _local_address() -> str | None:
    """A non-loopback address of this machine, if it has one."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("192.0.2.1", 9))  # TEST-NET-1: no packet is sent
        address = str(s.getsockname()[0])
        return None if address.startswith("127.") else address
    return None


def _reachable(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


def test_without_keys_serve_binds_loopback_only_and_says_so(tmp_path: Path) -> None:
    """No keys: 127.0.0.1 only, said at start-up; not reachable on another address."""
    with serving(tmp_path) as server:
        assert f"listening on http://127.0.0.1:{server.port} only" in server.output()
        assert _reachable("127.0.0.1", server.port)
        other = _local_address()
        if other is not None:
            assert not _reachable(other, server.port)


def test_other_host_without_keys_needs_insecure(tmp_path: Path) -> None:
    """--host 0.0.0.0 without keys exits 2 saying what to do; --insecure or keys let it start."""
    refused = Server(tmp_path / "refused", "--host", "0.0.0.0")
    assert refused.proc.wait(timeout=30) == 2
    refused.stop()
    said = refused.output()
    assert "NEARDUP_API_KEYS" in said and "--insecure" in said
    assert not (tmp_path / "refused" / "data").exists()  # it stopped before starting Redis
    with serving(tmp_path / "insecure", "--host", "0.0.0.0", "--insecure") as server:
        assert "WARNING" in server.output() and "without API keys" in server.output()
    keys = {"NEARDUP_API_KEYS": f"{WRITE}:write"}
    with serving(tmp_path / "keys", "--host", "0.0.0.0", ready=False, **keys) as server:
        server.wait_ready(**bearer(WRITE))
        assert "needs an API key" in server.output()
