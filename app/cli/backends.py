"""Where the CLI tools send their work: a running service, or the store itself."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Protocol
from urllib.parse import quote

import httpx
import orjson

from app.api.answers import (
    containment_answer,
    duplicate_answers,
    ingest_status,
    query_answer,
)
from app.core.settings import Settings
from app.index import Document, Index
from app.service.runtime import open_index


class BackendError(Exception):
    """The service refused or failed a request; the message says why."""


class Backend(Protocol):
    async def ingest(self, docs: Sequence[Document]) -> list[dict[str, Any]]: ...

    async def similar(
        self,
        doc_id: str | None,
        text: str | None,
        threshold: float | None,
        limit: int,
        measure: str = "jaccard",
        evidence: bool = False,
    ) -> dict[str, Any]: ...

    def duplicates(self, groups: bool, threshold: float | None) -> AsyncIterator[dict]: ...


class LocalBackend:
    """Straight into the store named by the service's own settings."""

    def __init__(self, index: Index) -> None:
        self.index = index
        # Batches are written one after another, so documents get handles in file
        # order and the oldest of a group is the one that came first in the file.
        self._order = asyncio.Lock()

    async def ingest(self, docs: Sequence[Document]) -> list[dict[str, Any]]:
        async with self._order:
            results = await self.index.ingest(docs)
        return [{"id": r.id, "status": ingest_status(r), "error": r.error} for r in results]

    async def similar(
        self,
        doc_id: str | None,
        text: str | None,
        threshold: float | None,
        limit: int,
        measure: str = "jaccard",
        evidence: bool = False,
    ) -> dict[str, Any]:
        if measure == "containment":
            c = self.index.check_containment(threshold)
            if doc_id is not None:
                found = await self.index.containment_of_id(doc_id, c, limit)
                if found is None:
                    raise BackendError(f"no document with id {doc_id!r}")
            else:
                found = await self.index.containment_of_text(text or "", c, limit)
            return containment_answer(found, c, evidence, doc_id)
        t = self.index.check_threshold(threshold)
        if doc_id is not None:
            result = await self.index.similar_to_id(doc_id, t, limit)
            if result is None:
                raise BackendError(f"no document with id {doc_id!r}")
        else:
            result = await self.index.similar_to_text(text or "", t, limit)
        return query_answer(result, t, doc_id)

    def duplicates(self, groups: bool, threshold: float | None) -> AsyncIterator[dict]:
        return duplicate_answers(self.index, groups, threshold)


class RemoteBackend:
    """A running neardup service, with the API key from NEARDUP_API_KEY."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    @staticmethod
    def _check(resp: httpx.Response) -> None:
        if resp.is_success:
            return
        try:
            detail = resp.json().get("detail", resp.text)
        except ValueError:
            detail = resp.text
        raise BackendError(f"{resp.status_code} from {resp.request.url.path}: {detail}")

    async def ingest(self, docs: Sequence[Document]) -> list[dict[str, Any]]:
        body = {"documents": [{"id": d.id, "text": d.text, "metadata": d.metadata} for d in docs]}
        resp = await self.client.post("/documents/batch", content=orjson.dumps(body))
        self._check(resp)
        return list(resp.json()["results"])

    async def similar(
        self,
        doc_id: str | None,
        text: str | None,
        threshold: float | None,
        limit: int,
        measure: str = "jaccard",
        evidence: bool = False,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {"limit": limit}
        if measure != "jaccard":
            params.update(measure=measure, evidence=evidence)
        if doc_id is not None:
            if threshold is not None:
                params["threshold"] = threshold
            path = "/similar/" + quote(doc_id, safe="").replace(".", "%2E")
            resp = await self.client.get(
                path, params={k: str(v).lower() if v is True or v is False else v
                              for k, v in params.items()}
            )  # fmt: skip
        else:
            body: dict[str, Any] = {"text": text, **params}
            if threshold is not None:
                body["threshold"] = threshold
            resp = await self.client.post("/similar", content=orjson.dumps(body))
        self._check(resp)
        return dict(resp.json())

    async def duplicates(self, groups: bool, threshold: float | None) -> AsyncIterator[dict]:
        path = "/duplicates/groups" if groups else "/duplicates"
        params = {} if threshold is None else {"threshold": threshold}
        async with self.client.stream("GET", path, params=params, timeout=None) as resp:
            if not resp.is_success:
                await resp.aread()
                self._check(resp)
            async for line in resp.aiter_lines():
                if line:
                    yield orjson.loads(line)


@asynccontextmanager
async def connect(url: str | None, settings: Settings | None) -> AsyncIterator[Backend]:
    """A backend on the service at url, or on the store the settings name."""
    if url is not None:
        key = os.environ.get("NEARDUP_API_KEY")
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as client:
            yield RemoteBackend(client)
        return
    assert settings is not None
    async with open_index(settings) as index:
        yield LocalBackend(index)
