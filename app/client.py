"""A typed Python client for a running neardup service (httpx, asyncio).

The CLI's ``--url`` tools use it; so can any program::

    import asyncio
    from app.client import Client

    async def main() -> None:
        async with Client("http://127.0.0.1:8000", api_key=None) as nd:
            await nd.ingest("The quick brown fox jumps over the lazy dog", id="a")
            answer = await nd.similar(text="the quick brown fox jumps over the lazy dog")
            print(answer["results"])

    asyncio.run(main())

Every method is one documented API call (docs/api.md lists them) and returns
the JSON answer as the TypedDicts below describe it. A 503 or 429 (Redis away, a
failover, a rate limit) is tried again after its Retry-After, up to ``retries``
times, for every call that is safe to repeat: all but an ingest that lets the
service name the document and a check, which a repeat could store twice, and
ready(), whose 503 is its answer. A refused or failed request raises ClientError
with the status and the service's problem ``detail``; an unknown id is None (get)
or False (delete). It imports nothing else of app: a client needs only httpx.
"""

from __future__ import annotations

import asyncio
import base64
import os
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any, Literal, NotRequired, TypedDict
from urllib.parse import quote

import httpx
import orjson

Filter = dict[str, dict[str, Any]]  # {"metadata": {field: exact value}}


class ClientError(Exception):
    """The service refused or failed a request; status and detail say why."""

    def __init__(self, status: int, path: str, detail: str) -> None:
        super().__init__(f"{status} from {path}: {detail}")
        self.status = status
        self.detail = detail


class Match(TypedDict):
    id: str
    similarity: float


class Similar(TypedDict):
    id: str | None
    threshold: float
    results: list[Match]
    candidates: int
    capped: bool


class Ingested(TypedDict):
    id: str
    shingles: int
    created: bool
    similar: Similar | None


class BatchItem(TypedDict):
    id: str
    status: Literal["created", "updated", "error"]
    shingles: int
    error: str | None


class Batch(TypedDict):
    created: int
    updated: int
    errors: int
    results: list[BatchItem]


class StoredDocument(TypedDict):
    id: str
    shingles: int
    metadata: dict[str, Any] | None
    expires_at: NotRequired[str]  # RFC 3339, only for a document that expires


class Imported(TypedDict):
    created: int
    updated: int


def _expiry(ttl: int | None, expires_at: str | None) -> dict[str, Any]:
    """The expiry fields of an ingest body, only those given (the service checks them)."""
    given = {"ttl": ttl, "expires_at": expires_at}
    return {k: v for k, v in given.items() if v is not None}


def _content(text: str | None, file: bytes | None, content_type: str | None) -> dict[str, Any]:
    """A body's text, or its file base64-encoded with its content type."""
    if file is not None:
        return {"content_type": content_type, "data": base64.b64encode(file).decode()}
    return {"text": text, "content_type": content_type}


def _present(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def path_of(doc_id: str) -> str:
    """An id as one path segment: every reserved byte and '.' percent-encoded."""
    return quote(doc_id, safe="").replace(".", "%2E")


def _query_value(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return orjson.dumps(value).decode()
    return value


# Answers that say "try again later": the service was briefly unable, not the request wrong.
# The most documents (or ids) the service takes in one call: POST /documents/batch,
# /documents/delete by ids and /import. The client imports nothing of app, so this is
# the service's limit restated; tests/test_client_cli.py fails if it drifts from
# app.api.schemas.MAX_BATCH or app.index.transfer.MAX_IMPORT. The CLI takes it from here.
MAX_BATCH = 1000
RETRY_STATUSES = frozenset({429, 503})
# The longest wait between tries, whatever Retry-After says.
MAX_WAIT_S = 30.0


def retry_wait(resp: httpx.Response, attempt: int) -> float:
    """Seconds to wait before trying again: Retry-After when it is a number, else a
    doubling back-off from 0.25 s."""
    try:
        wait = float(resp.headers.get("retry-after", ""))
    except ValueError:
        wait = 0.25 * 2**attempt
    return min(max(wait, 0.0), MAX_WAIT_S)


# The routes that exist in every collection (and unprefixed, in the service's own).
_DATA_ROUTES = ("/documents", "/similar", "/checks", "/duplicates", "/export", "/import")


class Client:
    """One neardup service at base_url; the key defaults to NEARDUP_API_KEY."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        transport: httpx.AsyncBaseTransport | None = None,
        retries: int = 5,
        collection: str | None = None,
    ) -> None:
        self.retries = retries
        # The document, similar and duplicates calls go to this collection (None: the
        # service's NEARDUP_COLLECTION), under /collections/{name}.
        self.prefix = "" if collection is None else f"/collections/{quote(collection, safe='')}"
        key = api_key if api_key is not None else os.environ.get("NEARDUP_API_KEY")
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        self.http = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout, transport=transport
        )

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    # plumbing ------------------------------------------------------------------

    @staticmethod
    def _raise(resp: httpx.Response) -> None:
        try:
            detail = str(resp.json().get("detail", resp.text))
        except ValueError:
            detail = resp.text
        raise ClientError(resp.status_code, resp.request.url.path, detail)

    async def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        params: dict[str, Any] | None = None,
        missing: Any = ...,
        repeatable: bool = True,
    ) -> Any:
        """One request (tried again on 503/429 when repeatable); its JSON answer, or
        `missing` on a 404 when one is given."""
        query = {k: _query_value(v) for k, v in (params or {}).items() if v is not None}
        try:
            content = None if body is None else orjson.dumps(body)
        except TypeError as exc:  # text that is not UTF-8, an integer past 64 bits
            raise ClientError(0, path, f"not sent: the body cannot be JSON ({exc})") from None
        path = self._at(path)
        attempt = 0
        while True:
            resp = await self.http.request(method, path, content=content, params=query)
            if resp.status_code not in RETRY_STATUSES or not repeatable:
                break
            if attempt == self.retries:
                break
            await asyncio.sleep(retry_wait(resp, attempt))
            attempt += 1
        if resp.status_code == 404 and missing is not ... and not _no_collection(resp):
            return missing
        if not resp.is_success:
            self._raise(resp)
        return None if resp.status_code == 204 else resp.json()

    def _at(self, path: str) -> str:
        """A data route's path in the client's collection."""
        return self.prefix + path if path.startswith(_DATA_ROUTES) else path

    async def _lines(self, path: str, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        query = {k: _query_value(v) for k, v in params.items() if v is not None}
        async with self.http.stream("GET", self._at(path), params=query, timeout=None) as resp:
            if not resp.is_success:
                await resp.aread()
                self._raise(resp)
            async for line in resp.aiter_lines():
                if line:
                    yield orjson.loads(line)

    # documents -----------------------------------------------------------------

    async def ingest(
        self,
        text: str,
        id: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        similar: bool = False,
        threshold: float | None = None,
        limit: int | None = None,
        ttl: int | None = None,
        expires_at: str | None = None,
    ) -> Ingested:
        """POST /documents (ingest_document); with similar=True also the near-duplicates
        found before it was stored; ttl (seconds) or expires_at (RFC 3339) make it expire."""
        body = {"id": id, "text": text, "metadata": metadata, **_expiry(ttl, expires_at)}
        params = {"similar": similar or None, "threshold": threshold, "limit": limit}
        answer: Ingested = await self._call(
            "POST", "/documents", body, params, repeatable=id is not None
        )
        return answer

    async def ingest_batch(self, documents: Sequence[dict[str, Any]]) -> Batch:
        """POST /documents/batch (ingest_batch): up to MAX_BATCH `{id?, text, metadata?}`."""
        named = all(d.get("id") is not None for d in documents)
        body = {"documents": documents}
        answer: Batch = await self._call("POST", "/documents/batch", body, repeatable=named)
        return answer

    async def put(
        self,
        doc_id: str,
        text: str,
        metadata: dict[str, Any] | None = None,
        *,
        ttl: int | None = None,
        expires_at: str | None = None,
    ) -> Ingested:
        """PUT /documents/{id} (upsert_document): create or replace; ttl (seconds) or
        expires_at (RFC 3339) make it expire, and the new version's expiry replaces the old."""
        body = {"text": text, "metadata": metadata, **_expiry(ttl, expires_at)}
        answer: Ingested = await self._call("PUT", "/documents/" + path_of(doc_id), body)
        return answer

    async def get(self, doc_id: str) -> StoredDocument | None:
        """GET /documents/{id} (get_document): the stored record, None for an unknown id."""
        answer: StoredDocument | None = await self._call(
            "GET", "/documents/" + path_of(doc_id), missing=None
        )
        return answer

    async def delete(self, doc_id: str) -> bool:
        """DELETE /documents/{id} (delete_document): False for an unknown id."""
        gone = await self._call("DELETE", "/documents/" + path_of(doc_id), missing=False)
        return gone is not False

    async def delete_many(
        self, ids: Sequence[str] | None = None, filter: Filter | None = None, step: int = 1000
    ) -> int:
        """POST /documents/delete (delete_documents): by ids (MAX_BATCH per call), or every
        document whose metadata matches filter, step by step to the end; how many went."""
        deleted = 0
        body: dict[str, Any]
        if ids is not None:
            for i in range(0, len(ids), MAX_BATCH):
                body = {"ids": list(ids[i : i + MAX_BATCH])}
                deleted += (await self._call("POST", "/documents/delete", body))["deleted"]
            return deleted
        cursor = None
        while True:
            body = {"filter": filter, "step": step, "cursor": cursor}
            answer = await self._call("POST", "/documents/delete", body)
            deleted += answer["deleted"]
            cursor = answer["cursor"]
            if cursor is None:
                return deleted

    # queries -------------------------------------------------------------------

    async def similar(
        self,
        doc_id: str | None = None,
        text: str | None = None,
        *,
        threshold: float | None = None,
        limit: int | None = None,
        measure: Literal["jaccard", "containment"] | None = None,
        evidence: bool | None = None,
        filter: Filter | None = None,
        file: bytes | None = None,
        content_type: str | None = None,
        exclude: dict[str, Any] | None = None,
        return_text: bool | None = None,
        site: str | None = None,
    ) -> dict[str, Any]:
        """Near-duplicates of a stored document (GET /similar/{id}, find_similar) or of a
        text (POST /similar, find_similar_to_text), or of a file's text (file: its bytes,
        content_type: application/pdf, DOCX's or ODT's); a page (content_type text/html)
        may name its site, whose template is then not compared. See docs/api.md for the
        answer's shape (Similar for Jaccard; containment adds passages and coverage, and
        with exclude {quotes, bibliography, min_words} the spans set aside)."""
        options = {"threshold": threshold, "limit": limit, "measure": measure,
                   "evidence": evidence, "filter": filter}  # fmt: skip
        if doc_id is not None:
            answer: dict[str, Any] = await self._call(
                "GET", "/similar/" + path_of(doc_id), params=options
            )
            return answer
        body = {**_content(text, file, content_type), "exclude": exclude,
                "return_text": return_text, "site": site, **options}  # fmt: skip
        answer = await self._call("POST", "/similar", _present(body))
        return answer

    # checks --------------------------------------------------------------------

    async def check(
        self,
        text: str | None = None,
        *,
        file: bytes | None = None,
        content_type: str | None = None,
        exclude: dict[str, Any] | None = None,
        ttl: int | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """POST /checks (create_check): a containment check of a text or a file, kept;
        the answer has its id and report path. options: POST /similar's other fields,
        and `metadata` to keep and list with the check."""
        body = {**_content(text, file, content_type), "exclude": exclude, "ttl": ttl, **options}
        # Not tried again: a retry could keep a second check.
        answer: dict[str, Any] = await self._call(
            "POST", "/checks", _present(body), repeatable=False
        )
        return answer

    async def get_check(self, check_id: str) -> dict[str, Any] | None:
        """GET /checks/{id} (get_check): the check as it was, None when gone or expired."""
        answer: dict[str, Any] | None = await self._call(
            "GET", "/checks/" + path_of(check_id), missing=None
        )
        return answer

    async def checks(self, page: int = 100) -> AsyncIterator[dict[str, Any]]:
        """GET /checks (list_checks), every page: each stored check's summary, newest
        first (page: checks a request, 1-1000)."""
        cursor = None
        while True:
            params = {"limit": page, "cursor": cursor}
            answer: dict[str, Any] = await self._call("GET", "/checks", params=params)
            for listed in answer["checks"]:
                yield listed
            cursor = answer["cursor"]
            if cursor is None:
                return

    async def delete_check(self, check_id: str) -> bool:
        """DELETE /checks/{id} (delete_check): False when there was none."""
        gone = await self._call("DELETE", "/checks/" + path_of(check_id), missing=False)
        return gone is not False

    async def duplicates(
        self, groups: bool = False, threshold: float | None = None, checkpoints: int = 1000
    ) -> AsyncIterator[dict[str, Any]]:
        """GET /duplicates or /duplicates/groups, streamed: one dict per pair or group,
        each exactly once even when the connection drops: the stream is asked for cursor
        lines (every `checkpoints` items), items are handed on as each cursor line
        vouches for them, and a cut stream (a transport error, or an end without the
        done line) is resumed from the last cursor, up to `retries` times in a row."""
        path = "/duplicates/groups" if groups else "/duplicates"
        cursor: str | None = None
        failures = 0
        while True:
            held: list[dict[str, Any]] = []  # items the next cursor line will vouch for
            params = {"threshold": threshold, "checkpoints": checkpoints, "cursor": cursor}
            try:
                async for item in self._lines(path, params):
                    if "cursor" not in item:
                        held.append(item)
                        continue
                    for kept in held:
                        yield kept
                    held, cursor, failures = [], item["cursor"], 0
                    if item["done"]:
                        return
                raise httpx.RemoteProtocolError(f"{path}: the stream ended before its done line")
            except httpx.TransportError:
                failures += 1
                if failures > self.retries:
                    raise
                await asyncio.sleep(min(0.1 * 2**failures, 5.0))

    # the collection ------------------------------------------------------------

    def export(self, filter: Filter | None = None) -> AsyncIterator[dict[str, Any]]:
        """GET /export (export_documents), streamed: the header, one dict per document,
        and the end line `{"end": true, "documents": n}` (without it, the export was cut)."""
        return self._lines("/export", {"filter": filter})

    async def import_batch(
        self, header: dict[str, Any], documents: Sequence[dict[str, Any]]
    ) -> Imported:
        """POST /import (import_documents): up to MAX_BATCH export lines after its header."""
        body = {"header": header, "documents": list(documents)}
        answer: Imported = await self._call("POST", "/import", body)
        return answer

    async def ready(self) -> dict[str, Any]:
        """GET /readyz (check_ready): raises ClientError(503) while Redis is away."""
        answer: dict[str, Any] = await self._call("GET", "/readyz", repeatable=False)
        return answer

    # collections ---------------------------------------------------------------------

    async def create_collection(self, name: str, **params: Any) -> dict[str, Any]:
        """Make a collection (parameters not given: the service's settings); as it is
        when it exists with these parameters, ClientError 409 with others."""
        answer: dict[str, Any] = await self._call("POST", "/collections", {"name": name, **params})
        return answer

    async def collections(self) -> dict[str, Any]:
        """{default, collections: [{name, documents, deleting}]}."""
        answer: dict[str, Any] = await self._call("GET", "/collections")
        return answer

    async def collection(self, name: str) -> dict[str, Any]:
        """A collection's parameters and size (ClientError 404 when there is none)."""
        answer: dict[str, Any] = await self._call("GET", "/collections/" + quote(name, safe=""))
        return answer

    async def delete_collection(self, name: str) -> None:
        """Remove a collection and every key of it (again: finishes a delete cut off)."""
        await self._call("DELETE", "/collections/" + quote(name, safe=""))


def _no_collection(resp: httpx.Response) -> bool:
    """Whether a 404 says the collection, not the document, is unknown: an error, never
    an answer of "no such document"."""
    try:
        detail = resp.json().get("detail", "")
    except (ValueError, AttributeError):
        return False
    return isinstance(detail, str) and detail.startswith("no collection named")
