"""Rate limits: per key (or client), 429 with Retry-After, off by default."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.api.ratelimit import Buckets

KEY_A = "a" * 24
KEY_B = "b" * 24
TEXT = {"text": "The quick brown fox jumps over the lazy dog by the river"}


def _app(settings, **extra) -> TestClient:  # type: ignore[no-untyped-def]
    return TestClient(create_app(settings.model_copy(update=extra)))


@pytest.fixture
def limited(settings) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    """Three requests at once per key, then one per 100 s: no refill during a test."""
    from pydantic import SecretStr

    keys = SecretStr(f"{KEY_A}:write,{KEY_B}:read")
    with _app(settings, rate_limit=0.01, rate_burst=3, api_keys=keys) as c:
        yield c


def test_each_key_gets_its_burst_then_429_with_retry_after(limited: TestClient) -> None:
    """Past its burst a key gets 429 problem+json with Retry-After (the seconds until a
    token is back); another key is not affected; probes and docs are never limited;
    a request without a valid key is refused 401 without costing a token."""
    a = {"Authorization": f"Bearer {KEY_A}"}
    b = {"Authorization": f"Bearer {KEY_B}"}
    assert limited.get("/similar/x").status_code == 401  # no key: refused before the limit
    codes = [limited.post("/similar", json=TEXT, headers=a).status_code for _ in range(3)]
    assert codes == [200, 200, 200]
    over = limited.put("/documents/x", json=TEXT, headers=a)
    assert over.status_code == 429
    assert over.headers["content-type"].startswith("application/problem+json")
    assert 1 <= int(over.headers["retry-after"]) <= 100
    assert "NEARDUP_RATE_LIMIT" in over.json()["detail"]
    assert limited.get("/documents/x", headers=a).status_code == 429  # nothing was written
    assert limited.get("/documents/x", headers=b).status_code == 404
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"):
        for _ in range(4):
            assert limited.get(path, headers=a).status_code == 200, path
    schema = limited.get("/openapi.json").json()
    assert "429" in schema["paths"]["/similar"]["post"]["responses"]
    assert "429" not in schema["paths"]["/healthz"]["get"]["responses"]


def test_without_keys_each_client_address_is_limited(settings) -> None:  # type: ignore[no-untyped-def]
    """Without API keys the limit is per client address."""
    with _app(settings, rate_limit=0.01, rate_burst=2) as c:
        codes = [c.get("/similar/nope").status_code for _ in range(3)]
    assert codes == [404, 404, 429]


def test_off_by_default(client: TestClient) -> None:
    """Without NEARDUP_RATE_LIMIT no request is ever refused for its rate."""
    codes = {client.get("/similar/nope").status_code for _ in range(60)}
    assert codes == {404}


def test_buckets_refill_at_the_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bucket gives burst at once, then one request per 1/rate seconds (on its clock),
    and tells how long to wait; idle buckets are forgotten once the table is full."""
    now = [0.0]
    buckets = Buckets(rate=2.0, burst=3, clock=lambda: now[0])
    assert [buckets.take(b"c") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take(b"c") == pytest.approx(0.5)
    now[0] += 0.5
    assert buckets.take(b"c") == 0.0
    assert buckets.take(b"c") == pytest.approx(0.5)
    now[0] += 10
    assert [buckets.take(b"c") for _ in range(4)][:3] == [0.0, 0.0, 0.0]  # capped at burst
    assert buckets.take(b"other") == 0.0  # clients are apart
    monkeypatch.setattr("app.api.ratelimit.MAX_CLIENTS", 2)
    now[0] += 10  # both idle past burst/rate: full again
    assert buckets.take(b"third") == 0.0
    assert set(buckets.state) == {b"third"}


def test_a_made_up_token_buys_no_bucket(settings, limited: TestClient) -> None:  # type: ignore[no-untyped-def]
    """A bearer token that is not one of the keys (any token when keys are off, or one sent
    to the report page's files, which need no key) counts against the client's address:
    a fresh token per request does not escape the limit."""
    with _app(settings, rate_limit=0.01, rate_burst=2) as c:
        codes = [
            c.get("/similar/nope", headers={"Authorization": f"Bearer made-up-{i}"}).status_code
            for i in range(3)
        ]
    assert codes == [404, 404, 429]
    fresh = [
        limited.get("/ui/", headers={"Authorization": f"Bearer made-up-{i}"}).status_code
        for i in range(4)
    ]
    assert fresh == [200, 200, 200, 429]
    assert limited.get("/ui/", headers={"Authorization": f"Bearer {KEY_A}"}).status_code == 200


def test_the_table_stays_bounded_when_every_client_is_active(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the table full of clients none of which is idle, a new client makes room by
    dropping the least recently used tenth, not by growing: a client just seen stays."""
    monkeypatch.setattr("app.api.ratelimit.MAX_CLIENTS", 10)
    buckets = Buckets(rate=0.001, burst=5, clock=lambda: 0.0)
    for i in range(200):
        buckets.take(b"kept")
        assert buckets.take(b"c%d" % i) == 0.0
        assert len(buckets.state) <= 10
    assert b"kept" in buckets.state and buckets.state[b"kept"][0] < 5 - 1
