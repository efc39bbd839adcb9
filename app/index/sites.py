"""A collection's site templates at work: pages judged as they are stored, queries
judged alike, and a site's template learned from its first pages (app.index.templates
states the rule; app.store.templates keeps the keys).

An ingest first judges its pages (each HTML page with a site: without the site's
template, or kept as pending while the template is learned), writes them, and then
settles: a site whose template another writer fixed meanwhile has this batch's pages
judged again, and a site that now has N pending pages is learned, its template fixed
(first learner wins) and its pending pages judged again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.index import records
from app.index.errors import NoShinglesError
from app.index.results import Document
from app.index.templates import (
    TEMPLATE_LEAST_PAGES,
    THIN_SHINGLES,
    distinct_pages,
    has_words,
    own_text,
    pack_text,
    site_name,
    site_of,
    template_of,
    unpack_text,
)
from app.store import Store

# Pages of a site held for learning at most, in template_pages, while its pages are copies
# of fewer than TEMPLATE_LEAST_PAGES distinct ones.
WAIT_PAGES = 5
# The index's own ingest and read, handed in by the write protocol (app.index.writes),
# which calls settle: pages judged again are stored again through it.
Ingest = Callable[[Sequence[Document]], Awaitable[Any]]
Get = Callable[[str], Awaitable["records.Record | None"]]


class AllTemplateError(NoShinglesError):
    """A page with no text of its own: every block of it is its site's template."""

    title = "Page is all template"


_ALL_TEMPLATE = "the page is all template of site "


def all_template(site: str) -> str:
    return (
        f"{_ALL_TEMPLATE}{site!r}: none of its text is its own "
        "(send a page with content, or as text/plain to compare it whole)"
    )


def no_words(error: str) -> NoShinglesError:
    """The refusal of a document stored with this error: a page all template says so,
    as a query of it does (one title for one condition), else a text without words."""
    if error.startswith(_ALL_TEMPLATE):
        return AllTemplateError(error)
    return NoShinglesError(error)


@dataclass
class Judged:
    """An ingest's pages as judged: what to index, and what is left to settle."""

    texts: list[str]
    errors: list[str | None]
    # (site, id, compressed text) of pages stored while their site is learned.
    pending: list[tuple[str, str, bytes]] = field(default_factory=list)
    # Index of each pending page in the batch.
    pending_at: list[int] = field(default_factory=list)
    # Index of each page stored already that is all template (judged again): kept whole.
    template_only: list[int] = field(default_factory=list)


class Sites:
    """Site templates of one collection; off when template_pages is 0."""

    def __init__(self, store: Store, template_pages: int) -> None:
        self.store = store
        self.pages = template_pages

    @property
    def on(self) -> bool:
        return self.pages > 0

    def thin(self, shingles: int, site: str | None) -> bool:
        """Whether a page (of a site) of this many own shingles is answered as thin."""
        return self.on and site is not None and shingles < THIN_SHINGLES

    def thin_record(self, raw: bytes, doc_id: str) -> bool:
        """Whether a stored page is answered as thin: a page of a site, little of its own
        (a document sent as text never is)."""
        if not self.on or records.plain_of(raw) or records.shingles_of(raw) >= THIN_SHINGLES:
            return False
        return site_of(doc_id, records.metadata_of(raw)) is not None

    async def judge(
        self, docs: Sequence[Document], ids: Sequence[str], stored: bool = False
    ) -> Judged:
        """Each page's text to index; an error where a page is all template, unless the
        pages are stored already (judged again once their site's template is fixed): such a
        page is kept whole, nothing stored is dropped, and listed in template_only."""
        judged = Judged([d.text for d in docs], [None] * len(docs))
        if not self.on:
            return judged
        sites = [site_of(i, d.metadata) if d.html else None for d, i in zip(docs, ids, strict=True)]
        known = list(dict.fromkeys(s for s in sites if s is not None))
        templates = dict(zip(known, await self.store.templates.templates(known), strict=True))
        for i, site in enumerate(sites):
            if site is None:
                continue
            template = templates[site]
            if template is None:
                judged.pending.append((site, ids[i], pack_text(docs[i].text)))
                judged.pending_at.append(i)
                continue
            own = own_text(docs[i].text, template)
            if has_words(own):
                judged.texts[i] = own
            elif stored:
                judged.template_only.append(i)
            else:
                judged.errors[i] = all_template(site)
        return judged

    async def query_text(self, text: str, site: str | None) -> str:
        """A query page's own text: without its site's template once that is fixed (a
        site given as an http(s) URL is its host)."""
        if not self.on or site is None:
            return text
        site = site_name(site)
        (template,) = await self.store.templates.templates([site])
        if template is None:
            return text
        own = own_text(text, template)
        if not has_words(own):
            raise AllTemplateError(all_template(site))
        return own

    async def settle(
        self, ingest: Ingest, get: Get, docs: Sequence[Document], judged: Judged
    ) -> None:
        """After an ingest's writes: pend its pages of sites being learned, and judge
        again what a template fixed meanwhile (or now) makes stale."""
        good = [
            (p, i) for p, i in zip(judged.pending, judged.pending_at, strict=True)
            if judged.errors[i] is None
        ]  # fmt: skip
        if not good:
            return
        counts = await self.store.templates.pend([p for p, _ in good])
        sites = list(counts)
        fixed = dict(zip(sites, await self.store.templates.templates(sites), strict=True))
        again: list[Document] = []
        for site in sites:
            if fixed[site] is not None:  # another writer fixed it while this one wrote
                await self.store.templates.unpend([(site, p[1]) for p, _ in good if p[0] == site])
                again += [docs[i] for p, i in good if p[0] == site]
            elif counts[site] >= self.pages:
                await self._learn(ingest, get, site)
        if again:
            await ingest(again)

    async def _learn(self, ingest: Ingest, get: Get, site: str) -> None:
        """Fix a site's template from its pending pages and judge them again."""
        pending = {i: unpack_text(t) for i, t in (await self.store.templates.pending(site)).items()}
        if not pending:
            return
        # On a worker thread: learning reads every pending page's lines, seconds for pages
        # of megabytes, while the event loop serves other requests.
        pages = await asyncio.to_thread(distinct_pages, pending)
        if len(pages) < TEMPLATE_LEAST_PAGES and len(pending) < WAIT_PAGES * self.pages:
            # Copies of one or two pages (URL variants) teach nothing: a template fixed from
            # them would be empty for good. Later pages of the site are awaited, a bound on
            # the pages held for it.
            return
        template = await asyncio.to_thread(template_of, pages)
        await self.store.templates.fix(site, template)
        again: list[Document] = []
        for doc_id, text in pending.items():
            rec = await get(doc_id)
            if rec is None or rec.plain or site_of(doc_id, rec.metadata) != site:
                continue  # deleted, expired, replaced by a text or moved to another site since
            again.append(Document(text, doc_id, rec.metadata, rec.expires_ms or None, html=True))
        await self.store.templates.unpend([(site, i) for i in pending])
        if again:
            await ingest(again)

    async def forget_replaced(self, docs: Sequence[Document], ids: Sequence[str]) -> None:
        """Pages replaced by texts (sent as text/plain, stored now): they no longer count
        toward their sites' learning, whose fixing would judge their old page again and
        store it over the text."""
        if not self.on:
            return
        gone = [(s, i) for d, i in zip(docs, ids, strict=True)
                if not d.html and (s := site_of(i, d.metadata)) is not None]  # fmt: skip
        if gone:
            await self.store.templates.unpend(gone)

    def thin_page(self, doc: Document, doc_id: str, shingles: int) -> bool:
        """Whether a page being stored is answered as thin (a text sent as such never is)."""
        return doc.html and self.thin(shingles, site_of(doc_id, doc.metadata))

    async def forget_page(self, doc_id: str, metadata: dict[str, Any] | None) -> None:
        """A page leaves: it no longer counts toward its site's learning."""
        if self.on:
            site = site_of(doc_id, metadata)
            if site is not None:
                await self.store.templates.unpend([(site, doc_id)])

    async def forget(self, site: str) -> None:
        """Drop a site's template (an explicit command): its next pages learn it anew.
        Pages stored already keep the judgement they were stored with."""
        await self.store.templates.forget(site_name(site))
