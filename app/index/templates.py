"""Site templates: text blocks that recur across a site's pages are not the page's own.

A page sent as text/html is extracted to blocks, one a line (app.index.html). A block is
known by the 64-bit hash of its text case-folded, its runs of white space made one space
(a template repeats its lines verbatim; splitting at white space is several times faster
than at every non-word character, which a 400 KB page felt). A line without a letter or
digit is no block. A site's template is the set of blocks found on at least
TEMPLATE_SHARE of the first N pages of that site the collection stored (N is the
collection's template_pages). Once fixed it never changes by itself: a page is judged
when it is stored (its template blocks removed, the rest is its own text and is what is
sketched, indexed and kept), and a query naming the site is judged the same way. The
first N pages, stored while the template was learned, are judged again the moment it is
fixed. So a query's answer changes because pages of a site arrived only while the site
has fewer than N pages; pages that leave never change it.

A page's site: its metadata field ``site`` (a non-empty string) when it has one, else the
host of its id when the id is an http(s) URL; a page with neither has no site and is
compared on its whole extracted text.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import idna
import numpy as np

# A block is template when it is on at least this share of the pages learned from ...
TEMPLATE_SHARE = 0.5
# ... and on at least this many of them (so two pages alone never make one).
TEMPLATE_LEAST_PAGES = 3
# Pages of a site learned from before its template is fixed (the default of the
# collection's template_pages; 0 turns templates off).
DEFAULT_TEMPLATE_PAGES = 20
# Pages learned from whose ids are one URL but for its query or fragment (?sid=1, ?sid=2)
# and which share at least this share of their blocks are one page (learn): an article's
# copies whose view counter or timestamp line differs would otherwise be as many pages,
# and its text the site's template.
COPY_SHARE = 0.5
# Blocks on at least this share of those pages, and of their paths, are left out of that
# comparison (each read without its digits: "It is currently 10:42", "12 users online"):
# they are the template, which thin pages of one path (index.php?id=1, ?id=2: forums, blogs)
# share in full, so that judged with it every such page was a copy of the first and the
# site never learned its template. An article's own blocks, on its copies only, stay in.
UNIVERSAL_SHARE = 0.8
# A page whose own text has fewer shingles than this is answered as thin: a crawler may
# want to keep it even when it matches, as it says little of its own.
THIN_SHINGLES = 50
# The metadata field that names a page's site.
SITE_FIELD = "site"
_ALNUM = re.compile(r"[^\W_]")
_DIGITS = re.compile(r"\d+")


def site_of(doc_id: str | None, metadata: dict[str, Any] | None) -> str | None:
    """A page's site: metadata ``site``, else the host of an http(s) URL id, else None;
    named as site_name says."""
    if metadata is not None:
        named = metadata.get(SITE_FIELD)
        if isinstance(named, str) and named.strip():
            return site_name(named)
    if doc_id is not None and doc_id[:4].lower() == "http":
        host = _host(doc_id)
        if host is not None:
            return site_name(host)
    return None


# A host and its port: a name with a dot (news.example.org, 10.0.0.1) or localhost, so a
# label such as tenant:1 keeps its number.
_HOSTNAME = r"(?:[^\s/:@]*\.[^\s/:@]*|localhost)"
_PORT = re.compile(_HOSTNAME + r":\d{1,5}", re.IGNORECASE)
# A host (and port) with a path after it, no scheme: shop.example.com/p/1.
_HOST_PATH = re.compile(f"({_HOSTNAME}(?::\\d{{1,5}})?)/\\S*", re.IGNORECASE)


def site_name(name: str) -> str:
    """The one name of a site, however it is written: a host is case-insensitive and may
    end with the root's dot or carry a port, an http(s) URL or a host with a path names
    its host, and an internationalised host is its ASCII (punycode) form
    (``NEWS.example.org.``, ``news.example.org:443``, ``https://news.example.org/`` and
    ``news.example.org/a/b`` are ``news.example.org``; ``münchen.de`` is
    ``xn--mnchen-3ya.de``); any other label is compared case-insensitively."""
    name = name.strip()
    host = _host(name) if name[:4].lower() == "http" else None
    if host is not None:
        name = host
    else:  # a name, or a host that starts with "http" (httpbin.org/get)
        pathed = _HOST_PATH.fullmatch(name)
        if pathed is not None:
            name = pathed.group(1)
        if _PORT.fullmatch(name):
            name = name.rsplit(":", 1)[0]
    name = name.lower().rstrip(".") or name.lower()
    return _ascii_host(name)


def _ascii_host(name: str) -> str:
    """A host with non-ASCII labels in its ASCII (punycode) form as UTS 46 maps it, not
    transitionally (straße.de stays apart from strasse.de, as in browsers); anything else,
    or a name UTS 46 refuses, as it is."""
    if name.isascii() or "." not in name or any(c.isspace() for c in name):
        return name
    try:
        return idna.encode(name, uts46=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return name


def site_problem(site: str) -> str | None:
    """What is wrong with a site a query names (the API's `site`, the CLI's --site): blank,
    or an http(s) URL that names no host (http://, http://:80); None when nothing is."""
    name = site.strip()
    if not name:
        return "site is blank: name the page's site, or leave site out"
    if re.match(r"https?://", name, re.IGNORECASE) and _host(name) is None:
        return "site is a URL without a host: name the page's host"
    return None


def _host(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        if parts.scheme.lower() in ("http", "https") and parts.hostname:
            return parts.hostname
    except ValueError:
        pass
    return None


def _block_hash(line: str) -> int | None:
    if _ALNUM.search(line) is None:
        return None
    digest = hashlib.blake2b(" ".join(line.casefold().split()).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def blocks(text: str) -> list[int | None]:
    """Each line's block hash (None: a line without words)."""
    return [_block_hash(line) for line in text.split("\n")]


def learn(texts: Sequence[str]) -> np.ndarray:
    """The template of pages of one site with ids of their own (not URLs), sorted."""
    return template_of(distinct_pages({str(i): text for i, text in enumerate(texts)}))


def distinct_pages(pages: dict[str, str]) -> set[frozenset[int]]:
    """A site's pages (text by id) as their sets of blocks, copies of one page as one
    (template_of counts them once: one article stored under ten URL variants, tracking
    parameters, would otherwise be half the pages, and its text the site's template);
    so too pages whose ids are one URL but for its query or fragment and that share
    COPY_SHARE of their blocks, read without their digits (the same article whose
    counter or date line differs), outside those on UNIVERSAL_SHARE of the pages and of
    their paths (the template). Pages of one path that differ more (index.php?id=1,
    ?id=2), however much template they share, stay apart."""
    path_of = {doc_id: _without_query(doc_id) for doc_id in pages}
    masked_of: dict[str, frozenset[int]] = {}
    for doc_id, text in pages.items():
        hidden = (_block_hash(_DIGITS.sub("0", line)) for line in text.split("\n"))
        masked_of[doc_id] = frozenset(h for h in hidden if h is not None)
    counts: Counter[int] = Counter()
    paths: dict[str, set[int]] = {}  # each path's blocks, on any of its pages
    for doc_id, masked in masked_of.items():
        counts.update(masked)
        paths.setdefault(path_of[doc_id], set()).update(masked)
    groups: Counter[int] = Counter()
    for on_path in paths.values():
        groups.update(on_path)
    least = max(TEMPLATE_LEAST_PAGES, UNIVERSAL_SHARE * len(masked_of))
    universal = {
        h for h, n in counts.items() if n >= least and groups[h] >= UNIVERSAL_SHARE * len(paths)
    }
    kept: dict[str, list[tuple[frozenset[int], frozenset[int]]]] = {}
    for doc_id, masked in masked_of.items():
        own = masked - universal
        same_path = kept.setdefault(path_of[doc_id], [])
        if not any(_share(own, other) >= COPY_SHARE for _, other in same_path):
            page = frozenset(h for h in blocks(pages[doc_id]) if h is not None)
            same_path.append((page, own))
    return {page for group in kept.values() for page, _ in group}


def _without_query(doc_id: str) -> str:
    if not doc_id.lower().startswith(("http://", "https://")):
        return doc_id
    parts = urlsplit(doc_id)
    return f"{parts.netloc.lower()}{parts.path}"


def _share(a: frozenset[int], b: frozenset[int]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def template_of(pages: set[frozenset[int]]) -> np.ndarray:
    """The blocks on enough of the pages (distinct_pages), sorted."""
    counts: Counter[int] = Counter()
    for page in pages:
        counts.update(page)
    least = max(TEMPLATE_LEAST_PAGES, int(np.ceil(TEMPLATE_SHARE * len(pages))))
    return np.array(sorted(h for h, n in counts.items() if n >= least), dtype=np.uint64)


def own_text(text: str, template: np.ndarray) -> str:
    """The page without its template's blocks (lines), stripped as extracted texts are."""
    if len(template) == 0:
        return text
    known = set(template.tolist())
    lines = text.split("\n")
    own = (line for line, h in zip(lines, blocks(text), strict=True) if h not in known)
    return "\n".join(own).strip()


def has_words(text: str) -> bool:
    return _ALNUM.search(text) is not None


def pack_text(text: str) -> bytes:
    return zlib.compress(text.encode(), 6)


def unpack_text(packed: bytes) -> str:
    return zlib.decompress(packed).decode()
