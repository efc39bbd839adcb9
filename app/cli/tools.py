"""The bulk tools behind `neardup ingest`, `query`, `duplicates`, `export` and `import`."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import IO, Any, TypeVar

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from app.cli.backends import Backend, BackendError, RefusedError
from app.cli.sources import Line, read_lines, total_bytes
from app.core.errors import NeardupError
from app.core.jsonl import json_line
from app.index.check import KINDS, CheckReport
from app.index.formats import workers
from app.index.html import HTMLError

BATCH = 500
IN_FLIGHT = 4


@dataclass
class IngestSummary:
    """What an ingest run did; skipped lines keep their file and line number."""

    ingested: int = 0
    created: int = 0
    updated: int = 0
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def report(self) -> str:
        rate = self.ingested / self.seconds if self.seconds else 0.0
        return (
            f"ingested {self.ingested} documents ({self.created} new, {self.updated} replaced) "
            f"in {self.seconds:.1f} s, {rate:.0f} docs/s; skipped {len(self.skipped)} lines"
        )


def _batches(lines: Iterator[Line], size: int) -> Iterator[list[Line]]:
    while chunk := list(itertools.islice(lines, size)):
        yield chunk


def page_lines(lines: Iterator[Line]) -> Iterator[Line]:
    """Lines whose texts are pages, sent as pages: the service reads them (its main-text
    extraction and the site's template, as for any text/html body)."""
    for ln in lines:
        if ln.document is not None:
            ln = dataclasses.replace(ln, document=dataclasses.replace(ln.document, html=True))
        yield ln


def html_lines(lines: Iterator[Line]) -> Iterator[Line]:
    """Lines whose texts are pages, as lines of their extracted main texts; a page with
    no text becomes a skipped line that says why (as the API's 422 would)."""
    for ln in lines:
        if ln.document is None:
            yield ln
            continue
        try:
            text = workers.shared().main_text(ln.document.text)
        except HTMLError as exc:
            yield dataclasses.replace(ln, document=None, error=str(exc))
            continue
        page = dataclasses.replace(ln.document, text=text, html=True)  # its site's template
        yield dataclasses.replace(ln, document=page)


async def ingest(
    backend: Backend,
    paths: list[str],
    err: Console,
    progress: bool = True,
    html: bool = False,
    ttl: int | None = None,
    batch: int = BATCH,
) -> IngestSummary:
    """Send every good line of every file in batches of batch lines, reporting bad lines
    as it goes; with html, each text is a page and its main text is what is sent; with
    ttl, each document expires that many seconds after its batch is stored."""
    summary = IngestSummary()
    started = time.monotonic()
    total = total_bytes(paths)
    columns = (
        SpinnerColumn(),
        BarColumn(),
        TextColumn("{task.fields[docs]} docs  {task.fields[rate]} docs/s"),
        TimeRemainingColumn(),
    )
    lines: Iterator[Line] = itertools.chain.from_iterable(read_lines(p) for p in paths)
    if html:
        lines = page_lines(lines) if backend.reads_pages else html_lines(lines)
    pending: set[asyncio.Task[None]] = set()
    with Progress(*columns, console=err, disable=not progress, transient=False) as bar:
        task = bar.add_task("ingest", total=total, docs=0, rate=0)

        async def send(chunk: list[Line]) -> None:
            good = [ln for ln in chunk if ln.document is not None]
            results = await ingest_lines(backend, good, ttl)
            for ln, r in zip(good, results, strict=True):
                if r["status"] == "error":
                    skip(ln, r.get("error") or "refused")
                else:
                    summary.ingested += 1
                    summary.created += r["status"] == "created"
                    summary.updated += r["status"] == "updated"
            elapsed = time.monotonic() - started
            bar.update(
                task,
                advance=sum(ln.size for ln in chunk),
                docs=summary.ingested,
                rate=f"{summary.ingested / elapsed:.0f}" if elapsed else 0,
            )

        def skip(ln: Line, why: str) -> None:
            message = f"{ln.source}:{ln.number}: skipped: {why}"
            summary.skipped.append(message)
            err.print(message, markup=False, highlight=False, soft_wrap=True)

        holding: dict[asyncio.Task[None], set[str]] = {}  # each batch in flight: its ids
        try:
            for chunk in _batches(lines, batch):
                for ln in chunk:
                    if ln.error is not None:
                        skip(ln, ln.error)
                ids = {ln.document.id for ln in chunk if ln.document is not None and ln.document.id}
                # An id a batch in flight holds waits for it, so the file's last line wins,
                # as a service's own batch does: batches travel concurrently otherwise.
                holding = {t: held for t, held in holding.items() if not t.done()}
                earlier = {t for t, held in holding.items() if held & ids}
                if earlier:
                    await asyncio.wait(earlier)
                sent = asyncio.create_task(send(chunk))
                holding[sent] = ids
                pending.add(sent)
                if len(pending) >= IN_FLIGHT:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    for t in done:
                        t.result()
            await asyncio.gather(*pending)
        except asyncio.CancelledError:
            # Interrupted (Ctrl-C): the batches not yet writing stop, a write in flight
            # finishes (app.cli.backends), all before the store is closed behind them.
            for t in pending:
                t.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            # What was acknowledged before it; a batch in flight may be stored without its
            # answer (a direct write in flight is let finish), and ingesting again settles it.
            said = (
                f"interrupted: {summary.ingested} documents acknowledged ({summary.created} "
                f"new, {summary.updated} replaced), {len(summary.skipped)} lines skipped; "
                "the batches in flight may be stored too (ingesting the files again settles it)"
            )
            err.print(said, markup=False, highlight=False, soft_wrap=True)
            raise
    summary.seconds = time.monotonic() - started
    return summary


async def ingest_lines(
    backend: Backend, lines: list[Line], ttl: int | None
) -> list[dict[str, Any]]:
    """Each line's ingest result. A batch refused whole (a text over the size limit, say)
    is sent again a line at a time, so only the lines at fault are refused, each with
    its reason, and the others are stored."""
    docs = [ln.document for ln in lines]
    try:
        return await backend.ingest(docs, ttl)  # type: ignore[arg-type]
    except RefusedError as exc:
        if len(lines) == 1:
            return [{"id": docs[0].id, "status": "error", "error": str(exc)}]  # type: ignore[union-attr]
    results: list[dict[str, Any]] = []
    for ln in lines:
        results += await ingest_lines(backend, [ln], ttl)
    return results


def read_texts(paths: list[str]) -> dict[str, str]:
    """id -> text of every good line of files in the ingest format."""
    return {
        ln.document.id: ln.document.text
        for path in paths
        for ln in read_lines(path)
        if ln.document is not None and ln.document.id is not None
    }


def print_similar(
    answer: dict[str, Any],
    out: Console,
    as_json: bool,
    query_text: str | None = None,
    texts: dict[str, str] | None = None,
) -> None:
    """A query answer as JSON or as a table; a containment answer's passages side by side
    where both texts are at hand (query_text, and texts by source id)."""
    if as_json:
        out.file.write(orjson.dumps(answer).decode() + "\n")
        return
    if answer.get("measure") == "containment":
        _print_containment(answer, out, query_text, texts or {})
        return
    title = f"near-duplicates of {answer['id']!r}" if answer.get("id") else "near-duplicates"
    out.print(f"{title} at threshold {answer['threshold']}", markup=False, highlight=False)
    table = Table()
    table.add_column("id", overflow="fold")
    table.add_column("similarity", justify="right")
    for r in answer["results"]:
        table.add_row(r["id"], f"{r['similarity']:.4f}")
    out.print(table)
    note = f"{answer['candidates']} candidates verified"
    if answer.get("capped"):
        note += " (candidate cap reached)"
    out.print(note)


def _print_containment(
    answer: dict[str, Any], out: Console, query_text: str | None, texts: dict[str, str]
) -> None:
    def say(line: str) -> None:
        out.print(line, markup=False, highlight=False)

    say(
        f"sources holding passages at containment >= {answer['threshold']}: "
        f"{answer['coverage']:.1%} of the text found"
    )
    table = Table()
    table.add_column("id", overflow="fold")
    table.add_column("containment", justify="right")
    table.add_column("similarity", justify="right")
    table.add_column("passages", justify="right")
    for r in answer["results"]:
        n = "" if r["passages"] is None else str(len(r["passages"]))
        table.add_row(r["id"], f"{r['containment']:.4f}", f"{r['similarity']:.4f}", n)
    out.print(table)
    for r in answer["results"]:
        source = texts.get(r["id"])
        for p in r["passages"] or []:
            where = (
                f"{r['id']}: query [{p['query_start']}, {p['query_end']}) = "
                f"source [{p['source_start']}, {p['source_end']})"
            )
            if p.get("disguised"):  # look-alike or invisible characters in the query's span
                where += f"; flagged: {p['disguised']} disguised words"
            if query_text is None or source is None:
                say(where)
                continue
            side = Table(title=where, show_lines=True, expand=True)
            side.add_column("query", ratio=1, overflow="fold")
            side.add_column("source", ratio=1, overflow="fold")
            side.add_row(
                query_text[p["query_start"] : p["query_end"]],
                source[p["source_start"] : p["source_end"]],
            )
            out.print(side)
    say(f"{answer['candidates']} candidates aligned")


T = TypeVar("T")


@asynccontextmanager
async def _closed(items: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """items, closed on the way out (an async generator's aclose), whatever happened."""
    try:
        yield items
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


async def write_duplicates(
    backend: Backend, groups: bool, threshold: float | None, sink: IO[bytes]
) -> int:
    """Write every pair (or group) as one JSON line; return how many."""
    count = 0
    # Closed here when the sink breaks (`| head`): a stream left open is closed by the
    # event loop's shutdown, which prints a traceback about it.
    async with _closed(backend.duplicates(groups, threshold)) as items:
        async for item in items:
            sink.write(orjson.dumps(item) + b"\n")
            count += 1
    sink.flush()
    return count


def stdout_bytes() -> IO[bytes]:
    return sys.stdout.buffer


def print_check(report: CheckReport, as_json: bool) -> None:
    """The consistency check's report: a table by kind, or JSON."""
    if as_json:
        sys.stdout.write(orjson.dumps(report.as_dict()).decode() + "\n")
        return
    console = Console()
    console.print(
        f"{report.ids} ids, {report.records} records, {report.band_entries} band entries: "
        + ("consistent" if report.clean else "inconsistent")
    )
    if report.clean:
        return
    table = Table("kind", "found", "repaired", "for example")
    for kind in KINDS:
        examples = "; ".join(report.examples.get(kind, []))
        table.add_row(kind, str(report.found[kind]), str(report.repaired[kind]), examples)
    console.print(table)


async def write_export(backend: Backend, where: dict | None, sink: IO[bytes]) -> int:
    """Write the export (header, one line per document, end line); how many documents."""
    count = 0
    async with _closed(backend.export(where)) as items:  # as in write_duplicates
        async for item in items:
            sink.write(json_line(item))
            if "end" in item:
                count = int(item["documents"])
    sink.flush()
    return count


class ImportFileError(Exception):
    """An export file that cannot be imported; the message names the line."""


def _export_lines(path: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) of every non-empty line of an export file ('-': stdin). A
    last line without its line end that is not JSON was cut mid-way (a copy or transfer
    that stopped): the lines before it are the file, which import_file reports as cut
    short."""
    stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
    try:
        for number, line in enumerate(stream, 1):
            if line.strip():
                try:
                    yield number, orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    if number > 1 and not line.endswith(b"\n"):
                        return
                    raise ImportFileError(f"{path}:{number}: not JSON: {exc}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


async def import_file(backend: Backend, path: str, batch: int = BATCH) -> tuple[int, int]:
    """Send an export file's documents in batches after its header; (created, updated).

    A batch the target refuses (other parameters, a damaged line) stores nothing and
    stops the import with the line numbers it covered; a file without its end line
    (or with another count on it) was cut short, which is reported after the lines it
    has are imported. Earlier batches stay, and running the import again is harmless
    (documents are replaced by id).
    """
    lines = _export_lines(path)
    first = next(lines, None)
    if first is None:
        raise ImportFileError(f"{path}: empty; expected an export's header line")
    header = first[1]
    created = updated = sent = 0
    end: dict | None = None

    def documents() -> Iterator[tuple[int, dict]]:
        nonlocal end
        for number, item in lines:
            if isinstance(item, dict) and "end" in item:
                end = item
                return
            yield number, item

    docs = documents()
    while chunk := list(itertools.islice(docs, batch)):
        try:
            c, u = await backend.import_batch(header, [doc for _, doc in chunk])
        except (BackendError, NeardupError) as exc:
            raise ImportFileError(f"{path}:{chunk[0][0]}-{chunk[-1][0]}: {exc}") from None
        created += c
        updated += u
        sent += len(chunk)
    if end is None or end.get("documents") != sent:
        said = "no end line" if end is None else f"its end line counts {end.get('documents')}"
        raise ImportFileError(
            f"{path}: the export is incomplete ({sent} documents, {said}); the "
            f"{created + updated} it has were imported; export again to get the rest"
        )
    return created, updated
