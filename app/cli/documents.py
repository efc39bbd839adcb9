"""The `neardup` commands on a collection's documents (ingest, query, duplicates, get,
delete, export, import) and ready, on a running service (--url) or on the store itself."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import httpx

from app.cli import arguments, files
from app.core.settings import Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from app.cli.backends import Backend


def settings_or_exit() -> Settings:
    """The NEARDUP_* settings (exit 2 naming a bad one); files and pages this process reads
    are read as the service reads them, in workers within its time and size limits."""
    from app.index.formats import workers

    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"neardup: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    workers.configure(settings.extract_workers, settings.extract_timeout, settings.max_text_bytes)
    return settings


def run_tool(
    args: argparse.Namespace, work: Callable[[Backend], Awaitable[int]], writes: bool = False
) -> int:
    """Run work on the backend that --url (or the settings) names, reporting failures;
    a command that writes makes its --collection on a store when it does not exist, one
    that reads is refused it."""
    from app.cli.backends import BackendError, connect
    from app.core.errors import NeardupError
    from app.service.embedded import EmbeddedRedisError

    settings = None if args.url else settings_or_exit()

    async def main() -> int:
        async with connect(args.url, settings, args.collection, writes) as backend:
            return await work(backend)

    try:
        return asyncio.run(main())
    except (BackendError, NeardupError) as exc:
        print(f"neardup: {exc}", file=sys.stderr)
    except EmbeddedRedisError as exc:
        print(f"neardup: {exc}; to use a running service pass --url", file=sys.stderr)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        print(f"neardup: cannot reach {args.url}: {exc}", file=sys.stderr)
    except BrokenPipeError:
        raise  # a reader that stopped early (| head): main() ends quietly
    except OSError as exc:  # a file the command writes (-o)
        print(f"neardup: {exc.strerror or exc}: {exc.filename or ''}", file=sys.stderr)
    return 1


def ingest_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from app.cli import tools

    err = Console(stderr=True)
    problems = [p for p in (files.unreadable(f) for f in args.files if f != "-") if p]
    if problems:
        print(f"neardup: {'; '.join(problems)}", file=sys.stderr)
        return 2

    async def work(backend: Backend) -> int:
        summary = await tools.ingest(
            backend, args.files, err, progress=not args.quiet, html=args.html, ttl=args.ttl,
            batch=args.batch,
        )  # fmt: skip
        print(summary.report())
        # 3, as check's "done, and found something": a script tells a run that skipped
        # lines from a clean one without reading stderr.
        return 3 if summary.skipped else 0

    return run_tool(args, work, writes=True)


def query_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from app.cli import tools

    text = None
    if args.file is not None and args.id is not None:
        print("neardup: give --id or --file, not both", file=sys.stderr)
        return 2
    from app.index.templates import site_problem

    page = args.html and args.id is None and args.file is None
    if args.site is not None and not page:
        print(
            "neardup: --site names the site of a page on stdin: give it with --html, "
            "without --id or --file",
            file=sys.stderr,
        )
        return 2
    problem = None if args.site is None else site_problem(args.site)
    if problem is not None:
        print(f"neardup: --site: {problem}", file=sys.stderr)
        return 2
    if args.file is not None:
        from app.cli.sources import file_text
        from app.index.errors import TooLargeError
        from app.index.formats import FileError

        problem = files.unreadable(args.file)
        if problem:
            print(f"neardup: {problem}", file=sys.stderr)
            return 2
        if args.url is None:
            settings_or_exit()  # the file is read within its NEARDUP_* limits
        try:
            text = file_text(args.file)
        except (FileError, TooLargeError, OSError) as exc:
            print(f"neardup: {args.file}: {exc}", file=sys.stderr)
            return 2
        if text is None:
            print(f"neardup: {args.file}: not a .pdf, .docx, .odt or .rtf file", file=sys.stderr)
            return 2
    elif args.id is None:
        text = files.stdin_text()
        if text is None:
            return 1
    measure = "containment" if args.containment or args.evidence else "jaccard"
    where = arguments.filter_arg(args.filter)
    try:
        texts = tools.read_texts(args.texts) if args.texts else {}
    except OSError as exc:  # a --texts file missing, a folder, unreadable
        print(f"neardup: --texts: {exc.strerror or exc}: {exc.filename or ''}", file=sys.stderr)
        return 2

    async def work(backend: Backend) -> int:
        answer = await backend.similar(
            args.id, text, args.threshold, args.limit, measure, args.evidence, where,
            page=page, site=args.site,
        )  # fmt: skip
        query_text = text if text is not None else texts.get(args.id or "")
        if page:  # the answer's offsets are in the page's own text, not its markup
            query_text = answer.pop("text", None)
        tools.print_similar(answer, Console(), args.json, query_text, texts)
        return 0

    return run_tool(args, work)


def duplicates_command(args: argparse.Namespace) -> int:
    from app.cli import tools

    async def work(backend: Backend) -> int:
        if args.output == "-":
            sink = tools.stdout_bytes()
            n = await tools.write_duplicates(backend, args.groups, args.threshold, sink)
        else:
            with files.replacing(args.output) as sink:
                n = await tools.write_duplicates(backend, args.groups, args.threshold, sink)
        kind = "groups" if args.groups else "pairs"
        print(f"neardup: {n} {kind} written to {args.output}", file=sys.stderr)
        return 0

    return run_tool(args, work)


def ready_command(args: argparse.Namespace) -> int:
    from app.cli.ready import ready

    return ready(settings_or_exit(), args.url, args.timeout)


def get_command(args: argparse.Namespace) -> int:
    import orjson

    async def work(backend: Backend) -> int:
        found = await backend.get(args.id)
        if found is None:
            print(f"neardup: no document with id {args.id!r}", file=sys.stderr)
            return 1
        print(orjson.dumps(found).decode())
        return 0

    return run_tool(args, work)


def delete_command(args: argparse.Namespace) -> int:
    where = arguments.filter_arg(args.filter)
    if bool(args.ids) == (where is not None):
        print("neardup: delete: give ids or --filter (one of them)", file=sys.stderr)
        return 2

    async def work(backend: Backend) -> int:
        n = await backend.delete(args.ids or None, where)
        print(f"neardup: deleted {n} documents", file=sys.stderr)
        return 0

    return run_tool(args, work)


def export_command(args: argparse.Namespace) -> int:
    from app.cli import tools

    where = arguments.filter_arg(args.filter)

    async def work(backend: Backend) -> int:
        if args.output == "-":
            n = await tools.write_export(backend, where, tools.stdout_bytes())
        else:
            with files.replacing(args.output) as sink:
                n = await tools.write_export(backend, where, sink)
        to = "standard output" if args.output == "-" else args.output
        print(f"neardup: {n} documents exported to {to}", file=sys.stderr)
        return 0

    return run_tool(args, work)


def import_command(args: argparse.Namespace) -> int:
    from app.cli import tools

    problem = None if args.file == "-" else files.unreadable(args.file)
    if problem:
        print(f"neardup: {problem}", file=sys.stderr)
        return 2

    async def work(backend: Backend) -> int:
        try:
            created, updated = await tools.import_file(backend, args.file, args.batch)
        except tools.ImportFileError as exc:
            print(f"neardup: {exc}", file=sys.stderr)
            return 1
        print(f"neardup: imported {created + updated} documents ({created} new, "
              f"{updated} replaced)", file=sys.stderr)  # fmt: skip
        return 0

    return run_tool(args, work, writes=True)
