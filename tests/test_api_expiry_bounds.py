"""Expiry times are bounded where a client gives them, and an old out-of-range one reads."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from support.ids import handle_of

TEXT = "the lighthouse keeper wound the clock twice a day and logged every passing ship"
HUNDRED_YEARS_S = 100 * 365 * 24 * 3600  # NEARDUP_DEFAULT_TTL's bound, typed here


def _rfc3339(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S") + "Z"


def test_ttl_over_the_bound_is_a_422_naming_it(client: TestClient) -> None:
    """A ttl past 100 years (the issue's two values among them) is a 422 that names ttl
    and the bound, on POST, PUT and batch; one at the bound is stored."""
    for ttl in (2044895576742439419904, 99999999999999, HUNDRED_YEARS_S + 1):
        for r in (
            client.post("/documents", json={"id": "a", "text": TEXT, "ttl": ttl}),
            client.put("/documents/a", json={"text": TEXT, "ttl": ttl}),
            client.post("/documents/batch", json={"documents": [{"text": TEXT, "ttl": ttl}]}),
        ):
            assert r.status_code == 422, (ttl, r.text)
            detail = r.json()["detail"]
            assert "ttl" in detail and str(HUNDRED_YEARS_S) in detail, detail
    assert client.get("/documents/a").status_code == 404
    r = client.post("/documents", json={"id": "a", "text": TEXT, "ttl": HUNDRED_YEARS_S})
    assert r.status_code == 201, r.text
    assert client.get("/documents/a").status_code == 200


def test_expires_at_over_the_bound_is_a_422_naming_it(client: TestClient) -> None:
    """An expires_at more than 100 years ahead (or at the year 9999's edge) is a 422
    that names expires_at and the bound; 99 years ahead is stored and read back."""
    now = datetime.now(UTC)
    for when in ("9999-12-31T23:59:59Z", "9999-12-31T23:59:59-23:59",
                 _rfc3339(now + timedelta(seconds=HUNDRED_YEARS_S + 86400))):  # fmt: skip
        r = client.put("/documents/b", json={"text": TEXT, "expires_at": when})
        assert r.status_code == 422, (when, r.text)
        detail = r.json()["detail"]
        assert "expires_at" in detail and "100 years" in detail, detail
    fine = _rfc3339(now + timedelta(days=99 * 365))
    assert client.put("/documents/b", json={"text": TEXT, "expires_at": fine}).status_code == 201
    assert client.get("/documents/b").json()["expires_at"] == fine[:-1] + ".000Z"


def test_a_stored_out_of_range_expiry_still_reads_and_check_reports_it(
    client: TestClient, store_url: str, collection: str
) -> None:
    """A record an older release stored with an expiry in the year 3170900 reads (its
    expiry shown as the last instant of 9999), and the consistency check reports it."""
    import redis

    from app.index.check import check

    index = client.app.state.index  # type: ignore[attr-defined]
    assert client.put("/documents/old", json={"text": TEXT, "ttl": 3600}).status_code == 201
    # What an older release wrote for ttl 99999999999999: the record's last 8 bytes are
    # its expiry (app.index.records, version 2), rewritten here in Redis itself.
    far = int(time.time() * 1000) + 1000 * 99999999999999
    with redis.Redis.from_url(store_url) as r:
        handle = handle_of(r, collection, "old")
        key = f"nd:{collection}:d:{handle}"
        raw = r.get(key)
        r.set(key, raw[:-8] + far.to_bytes(8, "little"))
    for _ in range(2):  # every call, not only the first
        r = client.get("/documents/old")
        assert r.status_code == 200, r.text
        assert r.json()["expires_at"] == "9999-12-31T23:59:59.999Z"
    assert client.get("/similar/old").status_code == 200

    async def checked() -> dict[str, int]:
        return (await check(index)).found

    found = client.portal.call(checked)  # type: ignore[union-attr]
    assert found["far_expiries"] == 1, found


def test_max_pairs_is_bounded(client: TestClient) -> None:
    """max_pairs, the one other unbounded client integer, is a 422 naming it past 2**53."""
    r = client.get("/duplicates", params={"max_pairs": 10**30})
    assert r.status_code == 422, r.text
    assert "max_pairs" in r.json()["detail"]
    assert client.get("/duplicates", params={"max_pairs": 2**53}).status_code == 200


def test_expires_at_takes_every_rfc_3339_spelling(client: TestClient) -> None:
    """Lower-case t and z (RFC 3339 section 5.6) and a leap second (:60, read as the
    next second) are taken; a time without an offset is still a 422."""
    year = datetime.now(UTC).year + 2
    for when, back in (
        (f"{year}-06-30t12:00:00z", f"{year}-06-30T12:00:00.000Z"),
        (f"{year}-06-30T23:59:60Z", f"{year}-07-01T00:00:00.000Z"),
        (f"{year}-06-30T23:59:60.5+00:00", f"{year}-07-01T00:00:00.500Z"),
    ):
        r = client.put("/documents/c", json={"text": TEXT, "expires_at": when})
        assert r.status_code in (200, 201), (when, r.text)
        assert client.get("/documents/c").json()["expires_at"] == back
    r = client.put("/documents/c", json={"text": TEXT, "expires_at": f"{year}-06-30T12:00:00"})
    assert r.status_code == 422 and "offset" in r.json()["detail"]
