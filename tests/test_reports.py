"""Stored checks' own rules (app.index.reports): ids, the stored form, and versions."""

from __future__ import annotations

import base64
import json
import zlib

from app.index import reports
from app.index.texts import digest


def test_ids_are_128_random_bits_in_22_url_safe_characters() -> None:
    """A new id decodes to 16 bytes, passes is_id, and 1,000 of them are all different;
    is_id refuses other lengths and characters."""
    made = [reports.new_id() for _ in range(1000)]
    assert len(set(made)) == 1000
    for i in made[:50]:
        assert reports.is_id(i) and len(base64.urlsafe_b64decode(i + "==")) == 16
    for bad in ("", "a" * 21, "a" * 23, "a" * 21 + "=", "a" * 21 + "/", "a" * 21 + "é"):
        assert not reports.is_id(bad)


def test_the_stored_form_is_zlib_json_and_reads_back_whole() -> None:
    """pack writes zlib-compressed JSON of the text, answer, times and sources; unpack
    gives back an equal check, non-ASCII text and all."""
    saved = reports.SavedCheck(
        reports.new_id(),
        1_700_000_000_000,
        1_700_000_060_000,
        "Essay \U0001f4dd über Flüsse",
        {"measure": "containment", "results": [{"id": "a", "passages": []}], "coverage": 0.5},
        {"a": "00ff00ff00ff00ff"},
    )
    raw = reports.pack(saved)
    body = json.loads(zlib.decompress(raw))
    assert body["text"] == saved.text and body["sources"] == saved.sources
    assert reports.unpack(saved.id, raw) == saved


def test_versions_are_record_digests_and_none_for_the_missing(client) -> None:  # type: ignore[no-untyped-def]
    """versions() answers each stored id's record digests (blake2b of its record as the
    store holds it without its expiry word, then of the whole record, which checks stored
    before compared) and None for an id never stored."""
    text = "one two three four five six"
    assert client.put("/documents/a", json={"text": text, "ttl": 3600}).status_code == 201
    index = client.app.state.index

    async def read() -> tuple[dict, bytes | None]:
        _, raw = await index.store.stored("a")
        return await reports.versions(index, ["a", "nope"]), raw

    found, raw = client.portal.call(read)  # the app's own event loop
    assert raw is not None
    assert found == {"a": (digest(raw[:-8]).hex(), digest(raw).hex()), "nope": None}
