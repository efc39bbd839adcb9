"""`neardup rebuild OLD NEW`: a collection's documents sketched again into a new collection,
which reads texts with the latest tokenizer (issue 26).

Export and import carry sketches, not texts, so they cannot change how texts are read. A
collection that keeps its texts can be read back instead: every document's text, metadata
and expiry, in handle order (oldest first, so ties still rank as they did), ingested into
NEW in batches. An ingest replaces a document with the same id, so a rebuild cut short is
finished by running it again, and running it twice gives the same collection.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.cli.backends import Backend, BackendError, CollectionsBackend
from app.client import MAX_BATCH
from app.index import Document
from app.index.expiry import now_ms

# Parameters the new collection takes from the old one (capacity is not stored, and the
# tokenizer is the point: the new one gets the latest).
CARRIED = (
    "shingle",
    "num_perm",
    "fingerprint_size",
    "seed",
    "threshold",
    "passage_words",
    "keep_text",
    "default_ttl",
    "template_pages",
)
# A document due to expire this soon is left out: it would be gone before it answered,
# and an expiry in the past is refused.
EXPIRY_MARGIN_MS = 5_000


class RebuildRefused(BackendError):
    """A rebuild that cannot be done as asked; the message says why and what to do."""


@dataclass
class Rebuilt:
    """What a rebuild did."""

    copied: int = 0
    expired: int = 0  # due to expire within EXPIRY_MARGIN_MS, left out
    without_text: list[str] = field(default_factory=list)  # no text to read back
    failed: list[tuple[str, str]] = field(default_factory=list)  # (id, why) NEW refused
    tokenizer: int = 0  # the new collection's


def carried(parameters: dict[str, Any]) -> dict[str, Any]:
    """The old collection's parameters the new one is made with."""
    return {k: parameters[k] for k in CARRIED if k in parameters}


async def prepare(collections: CollectionsBackend, old: str, new: str) -> tuple[dict, dict]:
    """The old collection's description and the new one's, made if it does not exist;
    RebuildRefused for a collection that keeps no texts or a new one that reads texts
    with an older tokenizer than the old one."""
    if old == new:
        raise RebuildRefused("OLD and NEW are the same collection; name a new one")
    before = await collections.show(old)
    params = before["parameters"]
    if not params.get("keep_text"):
        raise RebuildRefused(
            f"collection {old!r} keeps no texts (it was made without keep_text), so its "
            "documents cannot be sketched again: an export carries sketches, not texts. "
            "Ingest the documents from their sources into a new collection instead"
        )
    after = await collections.create(new, carried(params))
    got = after["parameters"]
    if got.get("tokenizer", 1) < params.get("tokenizer", 1):
        raise RebuildRefused(
            f"collection {new!r} already exists and reads texts with tokenizer "
            f"{got.get('tokenizer', 1)}, older than {old!r}'s; name a new collection"
        )
    return before, after


async def rebuild(
    old: Backend,
    new: Backend,
    batch: int = MAX_BATCH,
    progress: Callable[[Rebuilt], None] | None = None,
) -> Rebuilt:
    """Ingest every document of old (text, metadata, expiry) into new, batch at a time."""
    done = Rebuilt()
    pending: list[dict[str, Any]] = []
    async for line in old.export(None):
        if "format" in line:  # the header
            continue
        if line.get("end"):
            break
        pending.append(line)
        if len(pending) >= batch:
            await _copy(old, new, pending, done)
            pending = []
            if progress is not None:
                progress(done)
    if pending:
        await _copy(old, new, pending, done)
        if progress is not None:
            progress(done)
    return done


async def _copy(old: Backend, new: Backend, lines: Sequence[dict[str, Any]], done: Rebuilt) -> None:
    soon = now_ms() + EXPIRY_MARGIN_MS
    live = [d for d in lines if not d.get("expires_ms") or d["expires_ms"] > soon]
    done.expired += len(lines) - len(live)
    texts = await old.texts([d["id"] for d in live])
    docs = []
    for line, text in zip(live, texts, strict=True):
        if text is None:
            done.without_text.append(line["id"])
            continue
        docs.append(Document(text, line["id"], line.get("metadata"), line.get("expires_ms")))
    if not docs:
        return
    for answer in await new.ingest(docs):
        if answer.get("error"):
            done.failed.append((str(answer.get("id")), str(answer["error"])))
        else:
            done.copied += 1


def report(old: str, new: str, done: Rebuilt) -> int:
    """Say what a rebuild did on stderr; the exit status (1: some documents not copied)."""
    print(
        f"neardup: rebuilt {done.copied} documents of {old!r} into {new!r} "
        f"(tokenizer {done.tokenizer})",
        file=sys.stderr,
    )
    if done.expired:
        print(f"neardup: {done.expired} documents expiring now were left out", file=sys.stderr)
    if done.without_text:
        shown = ", ".join(map(repr, done.without_text[:10]))
        print(
            f"neardup: {len(done.without_text)} documents had no text to read back (gone "
            f"meanwhile, a write of them cut short, or imported from an export, which "
            f"carries no texts; ingest their texts again): {shown}",
            file=sys.stderr,
        )
    for doc_id, why in done.failed[:10]:
        print(f"neardup: {doc_id!r} was refused by {new!r}: {why}", file=sys.stderr)
    if len(done.failed) > 10:
        print(f"neardup: ... and {len(done.failed) - 10} more refused", file=sys.stderr)
    return 1 if done.failed or done.without_text else 0
