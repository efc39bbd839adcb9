"""The JSON shapes of answers, shared by the HTTP routes and the CLI's local backend.

The index returns domain objects; how they are written for a caller is decided
here, once, so `neardup query` without --url prints what the API would answer.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson

from app.index import Containment, ContainmentResult, Group, Index, IngestResult, Pair, QueryResult
from app.index.filters import Filter
from app.index.scan import Cut, Mark, PairBlock
from app.index.trimming import Exclusions

# Sources a query answers when it gives no limit.
DEFAULT_LIMIT = 10

# Bytes of NDJSON a pair stream hands the server at once.
CHUNK = 256 * 1024
# With checkpoints, a sparse scan still writes a cursor line at least this often.
CHECKPOINT_SECONDS = 1.0


def query_answer(
    result: QueryResult, threshold: float, doc_id: str | None = None
) -> dict[str, Any]:
    """A query's answer (replies.SimilarOut)."""
    answer = {
        "id": doc_id,
        "threshold": threshold,
        "results": [
            {"id": m.id, "similarity": m.similarity, "thin": True}
            if m.thin
            else {"id": m.id, "similarity": m.similarity}
            for m in result.results
        ],
        "candidates": result.candidates,
        "capped": result.capped,
    }
    if result.thin:  # only collections with site templates say it (app.index.sites)
        answer["thin"] = True
    return answer


def containment_answer(
    result: ContainmentResult, threshold: float, evidence: bool, doc_id: str | None = None
) -> dict[str, Any]:
    """A containment query's answer (replies.ContainmentOut)."""
    return {
        "id": doc_id,
        "measure": "containment",
        "threshold": threshold,
        "results": [
            {
                "id": c.id,
                "containment": c.containment,
                "similarity": c.similarity,
                "passages": _passages(c) if evidence else None,
            }
            for c in result.results
        ],
        "coverage": result.coverage,
        "candidates": result.candidates,
        "capped": result.capped,
        "common": result.common,
    }


async def text_answer(
    index: Index,
    text: str,
    measure: str,
    threshold: float | None,
    limit: int | None,
    where: Filter | None = None,
    evidence: bool = False,
    exclude: Exclusions | None = None,
    deadline: float | None = None,
    site: str | None = None,
) -> dict[str, Any]:
    """A text query's answer (its own text, a site's template already removed): with
    measure "containment" the stored documents holding passages of it, else its
    near-duplicates, at most limit of them (None: every source, or DEFAULT_LIMIT)."""
    if measure == "containment":
        c = index.check_containment(threshold)
        found = await index.containment_of_text(text, c, limit, where, exclude, deadline, site=site)
        return containment_answer(found, c, evidence)
    t = index.check_threshold(threshold)
    result = await index.similar_to_text(
        text, t, DEFAULT_LIMIT if limit is None else limit, where, site
    )
    return query_answer(result, t)


def _passages(c: Containment) -> list[dict[str, Any]]:
    """A source's passages (replies.PassageOut); "disguised" only where words were."""
    out = []
    for i, p in enumerate(c.passages):
        passage: dict[str, Any] = {
            "query_start": p.query_start,
            "query_end": p.query_end,
            "source_start": p.source_start,
            "source_end": p.source_end,
        }
        if i < len(c.disguised) and c.disguised[i]:
            passage["disguised"] = c.disguised[i]
        out.append(passage)
    return out


def excluded_answer(exclude: Exclusions) -> list[dict[str, Any]]:
    """The spans a containment query set aside (replies.ExcludedOut), in text order."""
    return [
        {"query_start": s.start, "query_end": s.end, "reason": s.reason} for s in exclude.listed()
    ]


def ingest_status(result: IngestResult) -> str:
    """created, updated or error: what happened to one ingested document."""
    if result.error:
        return "error"
    return "created" if result.created else "updated"


def pair_answer(pair: Pair) -> dict[str, Any]:
    """One near-duplicate pair, one NDJSON line."""
    return {"a": pair.a_id, "b": pair.b_id, "similarity": pair.similarity}


def group_answer(group: Group) -> dict[str, Any]:
    """One group of near-duplicates, one NDJSON line."""
    return {"canonical": group.canonical, "size": len(group.members), "members": group.members}


def cut_answer(cut: Cut, threshold: float, resume: str = "/duplicates?") -> dict[str, Any]:
    """The last line of a pair stream that max_pairs cut, with where to resume: resume
    is the request's path and its other query parameters, ending in ? or &."""
    return {
        "cut": True,
        "reason": f"max_pairs ({cut.pairs}) reached; more pairs follow",
        "after": cut.after,
        "resume": f"{resume}threshold={threshold}&max_pairs={cut.pairs}&after={cut.after}",
    }


async def duplicate_answers(
    index: Index, groups: bool, threshold: float | None
) -> AsyncIterator[dict[str, Any]]:
    """Every pair (or group) of the collection, in the shape the API streams."""
    if groups:
        async for group in index.duplicate_groups(threshold):
            yield group_answer(group)
    else:
        async for pair in index.duplicate_pairs(threshold):
            yield pair_answer(pair)


class _PairLines:
    """pair_answer's lines for blocks of pairs, written without a dict per pair (a hot
    band streams hundreds of thousands a second): each id's and each similarity's
    JSON is made once and reused, while the caches stay small."""

    def __init__(self) -> None:
        self.ids: dict[str, bytes] = {}
        self.sims: dict[float, bytes] = {}

    def __call__(self, block: PairBlock) -> bytes:
        if len(self.ids) > 100_000:
            self.ids = {}
        if len(self.sims) > 100_000:
            self.sims = {}
        ids, sims = self.ids, self.sims
        head = b'{"a":' + orjson.dumps(block.a_id)
        out = []
        for b, s in zip(block.b_ids, block.similarity.tolist(), strict=True):
            middle = ids.get(b)
            if middle is None:
                middle = ids[b] = b',"b":' + orjson.dumps(b) + b',"similarity":'
            tail = sims.get(s)
            if tail is None:
                tail = sims[s] = orjson.dumps(s) + b"}\n"
            out.append(head + middle + tail)
        return b"".join(out)


def checkpoint_answer(cursor: str, done: bool = False) -> dict[str, Any]:
    """A cursor line of a stream with checkpoints: everything up to it has been sent;
    pass it back as `cursor` to get the rest. done: the stream is complete."""
    return {"cursor": cursor, "done": done}


async def duplicate_lines(
    index: Index,
    groups: bool,
    threshold: float,
    max_pairs: int | None = None,
    after: str | None = None,
    checkpoints: int | None = None,
    resume: str = "/duplicates?",
) -> AsyncIterator[bytes]:
    """The NDJSON stream of GET /duplicates (or /duplicates/groups), in chunks of about
    CHUNK bytes; a pair stream cut by max_pairs ends with cut_answer's line (its link
    starting with resume). With
    checkpoints, a cursor line (checkpoint_answer) follows every that many pairs or
    groups, ends each chunk, comes at least every CHECKPOINT_SECONDS, and ends the
    stream with done: a client cut off resumes from the last one it read."""
    if groups:
        lines = _group_lines(index, threshold, after)
    else:
        lines = _pair_lines(index, threshold, max_pairs, after, checkpoints is not None, resume)
    chunk: list[bytes] = []
    size = count = 0
    cursor = after or ("0" if groups else "0:0")
    stamp = time.monotonic()
    done = True
    async for line, position, items, cut in lines:
        done = done and not cut
        if line:
            chunk.append(line)
            size += len(line)
        count += items
        if position is not None:
            cursor = position
        if checkpoints is not None and (
            count >= checkpoints
            or size >= CHUNK
            or (position is not None and time.monotonic() - stamp >= CHECKPOINT_SECONDS)
        ):
            chunk.append(orjson.dumps(checkpoint_answer(cursor)) + b"\n")
            count, size, stamp = 0, CHUNK, time.monotonic()
        if size >= CHUNK:
            yield b"".join(chunk)
            chunk, size = [], 0
    if checkpoints is not None:
        chunk.append(orjson.dumps(checkpoint_answer(cursor, done=done)) + b"\n")
    if chunk:
        yield b"".join(chunk)


async def _group_lines(
    index: Index, threshold: float, after: str | None
) -> AsyncIterator[tuple[bytes, str | None, int, bool]]:
    """(line, cursor after it, 1, False) per group."""
    async for group in index.duplicate_groups(threshold, int(after or 0)):
        yield orjson.dumps(group_answer(group)) + b"\n", str(group.handle), 1, False


async def _pair_lines(
    index: Index,
    threshold: float,
    max_pairs: int | None,
    after: str | None,
    marks: bool,
    resume: str,
) -> AsyncIterator[tuple[bytes, str | None, int, bool]]:
    """(lines, cursor after them, pairs, whether max_pairs cut the scan) per block of
    pairs, Mark or Cut."""
    lines = _PairLines()
    async for block in index.duplicate_pair_blocks(threshold, max_pairs, after, marks):
        if isinstance(block, Cut):
            yield orjson.dumps(cut_answer(block, threshold, resume)) + b"\n", block.after, 0, True
        elif isinstance(block, Mark):
            yield b"", block.after, 0, False
        else:
            yield lines(block), f"{block.a}:{int(block.b[-1])}", len(block.b), False
