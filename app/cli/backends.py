"""Where the CLI tools send their work: a running service, or the store itself (the
documents of one collection: connect; the collections themselves: connect_collections)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from typing import Any, Protocol

from app.api.answers import (
    DEFAULT_LIMIT,
    containment_answer,
    duplicate_answers,
    ingest_status,
    query_answer,
    text_answer,
)
from app.client import MAX_BATCH, Client, ClientError
from app.core.errors import Invalid
from app.core.settings import Settings
from app.index import Document, Index
from app.index.collections import NoCollectionError
from app.index.expiry import now_ms, rfc3339
from app.index.filters import Filter
from app.index.formats import workers
from app.index.html import HTMLError
from app.index.removal import MAX_STEP, delete_ids, delete_where
from app.index.transfer import export, import_documents
from app.service.collections import Collections, describe
from app.service.runtime import open_index

# Document reads texts() has in flight at once (GET /documents/{id} calls, remotely).
READS_IN_FLIGHT = 16


class BackendError(Exception):
    """The service refused or failed a request; the message says why."""


class RefusedError(BackendError):
    """The request's input was refused (a 422): another request may still go through."""


class Backend(Protocol):
    # Whether it reads pages itself (a service: main text and site templates, as its API
    # does), so the CLI sends them as text/html instead of their text extracted here.
    reads_pages: bool

    async def ingest(
        self, docs: Sequence[Document], ttl: int | None = None
    ) -> list[dict[str, Any]]: ...

    async def similar(
        self,
        doc_id: str | None,
        text: str | None,
        threshold: float | None,
        limit: int | None,
        measure: str = "jaccard",
        evidence: bool = False,
        where: dict | None = None,
        page: bool = False,
        site: str | None = None,
    ) -> dict[str, Any]: ...

    def duplicates(self, groups: bool, threshold: float | None) -> AsyncIterator[dict]: ...

    async def get(self, doc_id: str) -> dict[str, Any] | None: ...

    async def delete(self, ids: Sequence[str] | None, where: dict | None) -> int: ...

    def export(self, where: dict | None) -> AsyncIterator[dict[str, Any]]: ...

    async def import_batch(self, header: dict, docs: Sequence[dict]) -> tuple[int, int]: ...

    async def texts(self, ids: Sequence[str]) -> list[str | None]:
        """Each document's kept text (None: gone, or no text kept for it)."""
        ...


class LocalBackend:
    """Straight into the store named by the service's own settings."""

    reads_pages = False

    def __init__(self, index: Index) -> None:
        self.index = index
        # Batches are written one after another, so documents get handles in file
        # order and the oldest of a group is the one that came first in the file.
        self._order = asyncio.Lock()

    async def ingest(
        self, docs: Sequence[Document], ttl: int | None = None
    ) -> list[dict[str, Any]]:
        if ttl is not None:  # from now, as the service counts a ttl from its request
            ends = now_ms() + 1000 * ttl
            docs = [replace(d, expires_ms=ends) for d in docs]
        try:
            async with self._order:
                write = asyncio.ensure_future(self.index.ingest(docs))
                try:
                    results = await asyncio.shield(write)
                except asyncio.CancelledError:
                    # An interrupted tool (Ctrl-C) lets the write in flight finish: cut
                    # between its steps it would leave ids without records (the check's
                    # dangling_ids), which a service's own writes never leave.
                    await asyncio.wait([write])
                    if not write.cancelled():
                        write.exception()  # read: the tool is stopping either way
                    raise
        except Invalid as exc:  # the batch refused whole, as the service's 422
            raise RefusedError(str(exc)) from None
        return [{"id": r.id, "status": ingest_status(r), "error": r.error} for r in results]

    async def similar(
        self,
        doc_id: str | None,
        text: str | None,
        threshold: float | None,
        limit: int | None,
        measure: str = "jaccard",
        evidence: bool = False,
        where: dict | None = None,
        page: bool = False,
        site: str | None = None,
    ) -> dict[str, Any]:
        match = None if where is None else Filter.parse(where)
        if page:  # as the API reads a text/html body: its main text, less its site's template
            try:
                text, _ = await workers.shared().page(text or "", False)
            except HTMLError as exc:
                raise RefusedError(str(exc)) from None
            if site is not None:
                text = await self.index.sites.query_text(text, site)
        else:
            site = None
        shown = {"text": text} if page else {}  # what the offsets refer to, as return_text
        if doc_id is None:
            answer = await text_answer(
                self.index, text or "", measure, threshold, limit, match, evidence, site=site
            )
            return answer | shown
        if measure == "containment":
            c = self.index.check_containment(threshold)
            found = await self.index.containment_of_id(doc_id, c, limit, match)
            if found is None:
                raise BackendError(f"no document with id {doc_id!r}")
            return containment_answer(found, c, evidence, doc_id)
        t = self.index.check_threshold(threshold)
        result = await self.index.similar_to_id(
            doc_id, t, DEFAULT_LIMIT if limit is None else limit, match
        )
        if result is None:
            raise BackendError(f"no document with id {doc_id!r}")
        return query_answer(result, t, doc_id)

    def duplicates(self, groups: bool, threshold: float | None) -> AsyncIterator[dict]:
        return duplicate_answers(self.index, groups, threshold)

    async def get(self, doc_id: str) -> dict[str, Any] | None:
        rec = await self.index.get(doc_id)
        if rec is None:
            return None
        return {"id": rec.id, "shingles": rec.shingles, "metadata": rec.metadata}

    async def delete(self, ids: Sequence[str] | None, where: dict | None) -> int:
        if ids is not None:
            return sum([await delete_ids(self.index, ids[i : i + MAX_BATCH])
                        for i in range(0, len(ids), MAX_BATCH)])  # fmt: skip
        match, deleted, cursor = Filter.parse(where), 0, None
        while True:
            step = await delete_where(self.index, match, cursor, MAX_STEP)
            deleted += step.deleted
            cursor = step.cursor
            if cursor is None:
                return deleted

    def export(self, where: dict | None) -> AsyncIterator[dict[str, Any]]:
        return export(self.index, None if where is None else Filter.parse(where))

    async def import_batch(self, header: dict, docs: Sequence[dict]) -> tuple[int, int]:
        async with self._order:
            return await import_documents(self.index, header, docs)

    async def texts(self, ids: Sequence[str]) -> list[str | None]:
        out: list[str | None] = []
        # A bounded number in flight: a thousand at once outwait the store's timeout.
        for at in range(0, len(ids), READS_IN_FLIGHT):
            found = await asyncio.gather(
                *(self.index.read(i) for i in ids[at : at + READS_IN_FLIGHT])
            )
            out.extend(None if f is None else f[1] for f in found)
        return out


class RemoteBackend:
    """A running neardup service, through the public client (app.client)."""

    reads_pages = True

    def __init__(self, client: Client) -> None:
        self.client = client

    @staticmethod
    def _failed(exc: ClientError) -> BackendError:
        return BackendError(str(exc))

    async def ingest(
        self, docs: Sequence[Document], ttl: int | None = None
    ) -> list[dict[str, Any]]:
        given = {} if ttl is None else {"ttl": ttl}
        body: list[dict[str, Any]] = [
            {"id": d.id, "text": d.text, "metadata": d.metadata, **given, **_expiry(d, ttl)}
            for d in docs
        ]
        for item, d in zip(body, docs, strict=True):
            if d.html:
                item["content_type"] = "text/html"
        try:
            return [dict(r) for r in (await self.client.ingest_batch(body))["results"]]
        except ClientError as exc:
            if exc.status == 422:
                raise RefusedError(exc.detail) from None
            raise self._failed(exc) from None

    async def similar(
        self,
        doc_id: str | None,
        text: str | None,
        threshold: float | None,
        limit: int | None,
        measure: str = "jaccard",
        evidence: bool = False,
        where: dict | None = None,
        page: bool = False,
        site: str | None = None,
    ) -> dict[str, Any]:
        containment = measure == "containment"
        try:
            return await self.client.similar(
                doc_id,
                text,
                threshold=threshold,
                limit=limit,
                measure="containment" if containment else None,
                evidence=evidence if containment else None,
                filter=where,
                content_type="text/html" if page else None,
                site=site if page else None,
                return_text=True if page else None,
            )
        except ClientError as exc:
            raise self._failed(exc) from None

    async def duplicates(self, groups: bool, threshold: float | None) -> AsyncIterator[dict]:
        try:
            async for item in self.client.duplicates(groups, threshold):
                yield item
        except ClientError as exc:
            raise self._failed(exc) from None

    async def get(self, doc_id: str) -> dict[str, Any] | None:
        try:
            found = await self.client.get(doc_id)
        except ClientError as exc:
            raise self._failed(exc) from None
        return None if found is None else dict(found)

    async def delete(self, ids: Sequence[str] | None, where: dict | None) -> int:
        try:
            return await self.client.delete_many(ids, where)
        except ClientError as exc:
            raise self._failed(exc) from None

    async def export(self, where: dict | None) -> AsyncIterator[dict[str, Any]]:
        try:
            async for item in self.client.export(where):
                yield item
        except ClientError as exc:
            raise self._failed(exc) from None

    async def import_batch(self, header: dict, docs: Sequence[dict]) -> tuple[int, int]:
        try:
            done = await self.client.import_batch(header, docs)
        except ClientError as exc:
            raise self._failed(exc) from None
        return done["created"], done["updated"]

    async def texts(self, ids: Sequence[str]) -> list[str | None]:
        gate = asyncio.Semaphore(READS_IN_FLIGHT)

        async def text(doc_id: str) -> str | None:
            async with gate:
                found = await self.client.get(doc_id)
            return None if found is None else found.get("text")  # type: ignore[return-value]

        try:
            return list(await asyncio.gather(*(text(i) for i in ids)))
        except ClientError as exc:
            raise self._failed(exc) from None


def _expiry(doc: Document, ttl: int | None) -> dict[str, str]:
    """A document's own expiry as the API takes it (a ttl given for the batch wins)."""
    if ttl is not None or doc.expires_ms is None:
        return {}
    return {"expires_at": rfc3339(doc.expires_ms)}


@asynccontextmanager
async def connect(
    url: str | None,
    settings: Settings | None,
    collection: str | None = None,
    creates: bool = True,
) -> AsyncIterator[Backend]:
    """A backend on the service at url, or on the store the settings name; in that
    collection (None: the service's or the settings' NEARDUP_COLLECTION), made on the
    store when it does not exist if creates (see collection_index)."""
    if url is not None:
        async with Client(url, collection=collection) as client:  # key: NEARDUP_API_KEY
            yield RemoteBackend(client)
        return
    assert settings is not None
    # Another collection's tool must not trip over NEARDUP_COLLECTION's parameters; one
    # that only reads (query, get, delete, export, duplicates) makes no store to read.
    opened = open_index(settings, check=collection is None, tool=True, existing=not creates)
    async with opened as default:
        yield LocalBackend(await collection_index(default, settings, collection, creates))


async def collection_index(
    default: Index, settings: Settings, collection: str | None, creates: bool = True
) -> Index:
    """The index of a collection on default's store, with the parameters it was made
    with; one that does not exist is made from the settings, as NEARDUP_COLLECTION is,
    when creates (a command that writes), else NoCollectionError (one that reads: a
    misspelt name must not leave an empty collection behind)."""
    if collection is None:
        return default
    served = Collections(default, settings)  # checks the default when it is the one named
    try:
        return await served.get(collection)
    except NoCollectionError:
        if not creates:
            raise
        index, _ = await served.create(collection, {})
        return index


class CollectionsBackend(Protocol):
    """Collections as `neardup collections` manages them; each answer is the API's."""

    async def create(self, name: str, given: dict[str, Any]) -> dict[str, Any]: ...

    async def listing(self) -> dict[str, Any]: ...

    async def show(self, name: str) -> dict[str, Any]: ...

    async def delete(self, name: str) -> None: ...


class LocalCollections:
    """The collections of the store the settings name (app.service.collections)."""

    def __init__(self, served: Collections, settings: Settings) -> None:
        self.served = served
        self.settings = settings

    async def create(self, name: str, given: dict[str, Any]) -> dict[str, Any]:
        made, _ = await self.served.create(name, given)
        return await describe(made, name)

    async def listing(self) -> dict[str, Any]:
        return {"default": self.settings.collection, "collections": await self.served.listing()}

    async def show(self, name: str) -> dict[str, Any]:
        return await describe(await self.served.get(name), name)

    async def delete(self, name: str) -> None:
        await self.served.delete(name)


class RemoteCollections:
    """The collections of a running service, through the public client (ClientError
    when it refuses)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def create(self, name: str, given: dict[str, Any]) -> dict[str, Any]:
        return await self.client.create_collection(name, **given)

    async def listing(self) -> dict[str, Any]:
        return await self.client.collections()

    async def show(self, name: str) -> dict[str, Any]:
        return await self.client.collection(name)

    async def delete(self, name: str) -> None:
        await self.client.delete_collection(name)


@asynccontextmanager
async def connect_rebuild(
    url: str | None, settings: Settings | None
) -> AsyncIterator[tuple[CollectionsBackend, Callable[[str], Awaitable[Backend]]]]:
    """The collections of the service at url (or of the store the settings name), and an
    opener of a backend on one of them that exists (NoCollectionError, ClientError
    otherwise), for `neardup rebuild`."""
    async with AsyncExitStack() as stack:
        if url is not None:
            listed = await stack.enter_async_context(Client(url))

            async def remote(name: str) -> Backend:
                await listed.collection(name)  # refuses an unknown one
                client = await stack.enter_async_context(Client(url, collection=name))
                return RemoteBackend(client)

            yield RemoteCollections(listed), remote
            return
        assert settings is not None
        # Each collection is checked where it is used (the default one too, if named).
        opened = open_index(settings, share_running=True, check=False, tool=True, existing=True)
        served = Collections(await stack.enter_async_context(opened), settings)

        async def local(name: str) -> Backend:
            return LocalBackend(await served.get(name))

        yield LocalCollections(served, settings), local


@asynccontextmanager
async def connect_collections(
    url: str | None, settings: Settings | None, existing: bool = False
) -> AsyncIterator[CollectionsBackend]:
    """The collections of the service at url, or of the store the settings name (an
    embedded Redis a running service started is shared, not started again; with
    existing, one whose data dir holds no store is refused: runtime.open_index)."""
    if url is not None:
        async with Client(url) as client:
            yield RemoteCollections(client)
        return
    assert settings is not None
    opened = open_index(settings, share_running=True, check=False, tool=True, existing=existing)
    async with opened as index:
        yield LocalCollections(Collections(index, settings), settings)
