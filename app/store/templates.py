"""Site templates in Redis: a site's pages while its template is learned, and the
template once it is fixed (app.index.templates says the rule).

Two keys per site, under the collection's prefix:

- ``P:{site}`` (HASH): id -> the page's extracted text, zlib-compressed: the site's
  pages stored while its template is not fixed yet (about N of them at most);
- ``T:{site}`` (STRING): the fixed template, its blocks' 64-bit hashes sorted,
  little-endian (empty: a site without template).

The template is written with SET NX, so the first learner fixes it and every later one
reads that; the pending pages are deleted once they were judged. Every operation is
one-key commands in one pipelined exchange, so it runs alike on a cluster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from app.store.transport import Transport

# A site name longer than this is keyed by its digest (a metadata field may be long).
_LONGEST_SITE = 200


class SiteTemplates:
    """One collection's site templates and their pending pages."""

    def __init__(self, transport: Transport, prefix: bytes) -> None:
        self.transport = transport
        self._pending = prefix + b"P:"
        self._template = prefix + b"T:"

    @staticmethod
    def _site(site: str) -> bytes:
        raw = site.encode()
        if len(raw) > _LONGEST_SITE:
            return b"#" + hashlib.blake2b(raw, digest_size=16).hexdigest().encode()
        return raw

    async def templates(self, sites: Sequence[str]) -> list[np.ndarray | None]:
        """Each site's fixed template (sorted block hashes), None while it is learned."""
        if not sites:
            return []
        replies = await self.transport.commands(
            [(b"GET", self._template + self._site(s)) for s in sites]
        )
        return [None if r is None else np.frombuffer(r, "<u8").astype(np.uint64) for r in replies]

    async def fix(self, site: str, blocks: np.ndarray) -> np.ndarray:
        """Fix a site's template unless another learner did first; the one that holds."""
        key = self._template + self._site(site)
        packed = np.asarray(blocks, "<u8").tobytes()
        _, held = await self.transport.commands(
            [(b"SET", key, packed, b"NX"), (b"GET", key)], write=True
        )
        return np.frombuffer(held, "<u8").astype(np.uint64)

    async def pend(self, pages: Sequence[tuple[str, str, bytes]]) -> dict[str, int]:
        """Keep (site, id, compressed text) as pending pages; each site's pending count."""
        if not pages:
            return {}
        sites = list(dict.fromkeys(s for s, _, _ in pages))
        commands: list[tuple[bytes, ...]] = [
            (b"HSET", self._pending + self._site(s), i.encode(), t) for s, i, t in pages
        ]
        commands += [(b"HLEN", self._pending + self._site(s)) for s in sites]
        replies = await self.transport.commands(commands, write=True)
        return dict(zip(sites, (int(n) for n in replies[len(pages) :]), strict=True))

    async def pending(self, site: str) -> dict[str, bytes]:
        """A site's pending pages: id -> compressed text."""
        (flat,) = await self.transport.commands([(b"HGETALL", self._pending + self._site(site))])
        if isinstance(flat, dict):
            return {k.decode(): v for k, v in flat.items()}
        return {flat[i].decode(): flat[i + 1] for i in range(0, len(flat), 2)}

    async def unpend(self, pages: Sequence[tuple[str, str]]) -> None:
        """Forget (site, id) pending pages (deleted, or judged)."""
        if pages:
            commands = [(b"HDEL", self._pending + self._site(s), i.encode()) for s, i in pages]
            await self.transport.commands(commands, write=True)

    async def forget(self, site: str) -> None:
        """Drop a site's template and pending pages: the next N pages learn it anew."""
        key = self._site(site)
        commands = [(b"DEL", self._template + key), (b"DEL", self._pending + key)]
        await self.transport.commands(commands, write=True)
