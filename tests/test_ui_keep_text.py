"""Kept texts (NEARDUP_KEEP_TEXT / Params.keep_text): stored compressed beside the record,
written before it, removed with it, and never shown with another version's record."""

from __future__ import annotations

import asyncio
import zlib
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.keys import scan_keys
from support.settings import loaded_settings

from app.api.app import create_app
from app.index import ConfigMismatchError, Document, Index, Params, records, texts
from app.index.check import check
from app.index.removal import delete_ids
from app.store import Store

pytestmark = pytest.mark.both_stores

# Non-BMP and combining characters: the kept text must come back code point for code point.
TEXT = (
    "Caf\u00e9 owners \U0001f600 along the harbour said the new ferry timetable left "
    "early workers stranded, and the council promised to review it <b>before</b> winter."
)
OTHER = "A different version of the story about the ferry timetable and the harbour cafes."


def _params(keep: bool) -> Params:
    return Params.create("word:3", 64, 128, 1, 0.5, capacity=1000, keep_text=keep)


async def _open(url: str, collection: str, keep: bool = True) -> Index:
    return await Index.open(Store.connect(url, collection, 2.0), _params(keep), 200)


async def _text_keys(index: Index) -> list[bytes]:
    return [k async for k in scan_keys(index.store) if b":t:" in k]


def test_api_returns_the_kept_text(store_url: str, collection: str, tmp_path: Path) -> None:
    """GET /documents/{id} returns exactly the text sent when texts are kept, no
    text field when not."""
    for keep, name in ((True, collection), (False, collection + "n")):
        settings = loaded_settings(
            redis_url=store_url,
            collection=name,
            data_dir=tmp_path,
            keep_text=keep,
        )
        with TestClient(create_app(settings)) as client:
            assert client.put("/documents/a/1", json={"text": TEXT}).status_code == 201
            body = client.get("/documents/a/1").json()
            assert body.get("text", "absent") == (TEXT if keep else "absent")
            info = client.get("/collection").json()
            assert info["parameters"]["keep_text"] is keep and info["documents"] == 1


def test_text_is_compressed_and_goes_with_delete(store_url: str, collection: str) -> None:
    """The stored text is zlib of the UTF-8 text behind the record's digest; replace keeps one
    text per document, delete (one or by ids) leaves no text key and a clean check."""

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(TEXT, "x"), Document(OTHER, "y")])
            await index.ingest([Document(OTHER + " Updated.", "x")])
            (h,) = await index.store.ids.handles(["x"])
            (raw,) = await index.store.records([h])
            (stored,) = await index.store.texts([h])
            assert stored is not None and raw is not None
            assert stored[: texts.DIGEST_BYTES] == texts.digest(raw)
            assert zlib.decompress(stored[texts.DIGEST_BYTES :]).decode() == OTHER + " Updated."
            assert len(await _text_keys(index)) == 2
            assert (await check(index)).clean
            assert await index.delete("x") and await delete_ids(index, ["y"]) == 1
            assert await _text_keys(index) == []
            assert (await check(index)).clean
        finally:
            await index.store.close()

    asyncio.run(run())


def test_a_replace_cut_after_its_text_never_shows_the_wrong_text(
    store_url: str, collection: str
) -> None:
    """A crash between a replace's text and its record leaves the old record with a text it
    does not match: it reads as not kept, the check reports and repairs it, a re-send heals."""

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(TEXT, "x")])
            (h,) = await index.store.ids.handles(["x"])
            # What the cut replace wrote: the new text, with the digest of the new record.
            old = records.unpack((await index.store.records([h]))[0] or b"")
            new = records.pack("x", old.fingerprint, old.band_keys, old.shingles, {"v": 2})
            await index.store.put_texts([(h, texts.pack(OTHER, new))])
            found = await index.read("x")
            assert found is not None and found[1] is None
            report = await check(index, repair=True)
            assert report.found["stale_texts"] == 1 and report.repaired["stale_texts"] == 1
            assert await index.store.texts([h]) == [None]
            await index.ingest([Document(TEXT, "x")])
            found = await index.read("x")
            assert found is not None and found[1] == TEXT
            assert (await check(index)).clean
        finally:
            await index.store.close()

    asyncio.run(run())


def test_unreachable_texts_are_found_and_removed(store_url: str, collection: str) -> None:
    """A text whose handle has no id and no record (a write or delete cut half-way) is an
    orphan_text; repair removes it and leaves live texts alone."""

    async def run() -> None:
        index = await _open(store_url, collection)
        try:
            await index.ingest([Document(TEXT, "live")])
            lost, _ = await index.store.ids.assign(["gone"])
            await index.store.put_texts([(lost[0], texts.pack(OTHER, b"no record"))])
            await index.store.ids.forget(["gone"], lost)
            report = await check(index, repair=True)
            assert report.found["orphan_texts"] == 1 and report.repaired["orphan_texts"] == 1
            assert len(await _text_keys(index)) == 1
            found = await index.read("live")
            assert found is not None and found[1] == TEXT
        finally:
            await index.store.close()

    asyncio.run(run())


def test_keep_text_is_fixed_with_the_collection(store_url: str, collection: str) -> None:
    """Opening a collection with another keep_text than it was made with is refused."""

    async def run() -> None:
        index = await _open(store_url, collection, keep=False)
        await index.store.close()
        with pytest.raises(ConfigMismatchError, match="keep_text"):
            await _open(store_url, collection, keep=True)

    asyncio.run(run())


def test_a_read_during_replaces_gets_one_whole_version(store_url: str, collection: str) -> None:
    """Reads racing replaces of the same id always get a record and the kept text of that
    record, never a null text (a replace writes its text just before its record)."""

    async def run() -> None:
        index = await _open(store_url, collection)
        versions = [f"{TEXT} version {n}" for n in range(4)]
        done = False

        async def writer(k: int) -> None:
            n = 0
            while not done:
                n += 1
                await index.ingest([Document(versions[(k + n) % 4], "busy")])

        try:
            await index.ingest([Document(versions[0], "busy")])
            writers = [asyncio.create_task(writer(k)) for k in range(3)]
            try:
                for _ in range(200):
                    got = await index.read("busy")
                    assert got is not None and got[1] in versions
            finally:
                done = True
                await asyncio.gather(*writers)
        finally:
            await index.store.close()

    asyncio.run(run())
