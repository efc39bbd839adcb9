"""The `neardup` command line: argument parsing and what each subcommand runs."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import shutil
import signal
import stat
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

import httpx

from app.client import MAX_BATCH
from app.core.settings import Settings, SettingsError, load_settings
from app.service.workers import MAX_DEFAULT_WORKERS, default_workers

if TYPE_CHECKING:
    from app.cli.backends import Backend


def _serve(args: argparse.Namespace) -> int:
    from app.service import logs
    from app.service.embedded import EmbeddedRedis, EmbeddedRedisError
    from app.service.supervisor import Supervisor

    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"neardup: {exc}", file=sys.stderr)
        return 2
    from app.api.auth import keyring
    from app.service.bind import bind_policy

    keys = keyring(settings)
    allowed, said = bind_policy(args.host, args.port, args.insecure, keys)
    print(said, file=sys.stderr)
    if not allowed:
        return 2
    embedded = supervisor = None
    if settings.redis_url is None:
        # One Redis for all workers: started here, handed to them by URL, and
        # started again by the supervisor if it dies.
        try:
            embedded = EmbeddedRedis(settings.data_dir, settings.durability).start()
        except EmbeddedRedisError as exc:
            print(f"neardup: {exc}", file=sys.stderr)
            return 1
        logs.configure(settings.log_format, settings.log_level)
        supervisor = Supervisor(embedded).start()
        os.environ["NEARDUP_REDIS_URL"] = embedded.url
        print(f"neardup: embedded Redis, data in {embedded.data_dir}", file=sys.stderr)
    from app.service.runtime import collection_conflict

    try:
        url = embedded.url if embedded is not None else settings.redis_url
        conflict = asyncio.run(collection_conflict(settings, url)) if url else None
        if conflict is not None:
            print(f"neardup: {conflict}", file=sys.stderr)
            return 3
        _run_workers(args, settings)
    finally:
        if supervisor is not None:
            supervisor.stop()
        if embedded is not None:
            embedded.stop()
    return 0


def _run_workers(args: argparse.Namespace, settings: Settings) -> None:
    """uvicorn's workers for serve, until a signal stops them."""
    import uvicorn

    workers = args.workers or settings.workers or default_workers()
    if args.workers is None:
        plural = "s" if workers > 1 else ""
        chosen = (
            "NEARDUP_WORKERS"
            if settings.workers
            else f"one per usable CPU, at most {MAX_DEFAULT_WORKERS}; --workers or "
            "NEARDUP_WORKERS sets it"
        )
        print(f"neardup: {workers} worker{plural} ({chosen})", file=sys.stderr)
    metrics_dir = None
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # Workers share their metrics through files in one directory, this run's own.
        metrics_dir = tempfile.mkdtemp(prefix="neardup-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    # uvicorn re-raises the signal that stopped it once it has shut down; with
    # a handler of our own in place that re-raise returns here instead of
    # killing the process, so serve flushes and stops the embedded Redis.
    stop_signals: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: stop_signals.append(signum))
    from app.service import balance
    from app.service.server import GuardedHttpProtocol, Limits

    GuardedHttpProtocol.limits = Limits(settings)  # workers read theirs from the same env
    shares = balance.install(workers) if workers > 1 else None  # connections spread evenly
    try:
        uvicorn.run(
            "app.api.app:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=workers,
            log_level=settings.log_level,
            access_log=False,  # app.api.observe logs each request with its id
            http=GuardedHttpProtocol,  # header and body timeouts, a connection cap
            timeout_graceful_shutdown=30,
        )
    finally:
        if shares is not None:
            os.unlink(shares)
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)


def _settings_or_exit() -> Settings:
    try:
        return load_settings()
    except SettingsError as exc:
        print(f"neardup: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _run_tool(
    args: argparse.Namespace, work: Callable[[Backend], Awaitable[int]], writes: bool = False
) -> int:
    """Run work on the backend that --url (or the settings) names, reporting failures;
    a command that writes makes its --collection on a store when it does not exist, one
    that reads is refused it."""
    from app.cli.backends import BackendError, connect
    from app.core.errors import NeardupError
    from app.service.embedded import EmbeddedRedisError

    settings = None if args.url else _settings_or_exit()

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


@contextlib.contextmanager
def _replacing(path: str) -> Iterator[BinaryIO]:
    """A regular file (or a new one) written beside it and put in its place only when
    the writing ends well, with the mode it had: a command that fails (a service away, a
    refused request) leaves an earlier file whole. Anything else (a device, a pipe) is
    written as it is, and a symlink's target is the file replaced."""
    try:
        mode = os.stat(path).st_mode  # through symlinks: /dev/stdout is the pipe
    except FileNotFoundError:
        umask = os.umask(0o022)
        os.umask(umask)
        mode = stat.S_IFREG | (0o666 & ~umask)  # as open() would make it
    if not stat.S_ISREG(mode):
        with open(path, "wb") as sink:
            yield sink
        return
    target = os.path.realpath(path)
    try:
        fd, part = tempfile.mkstemp(prefix=".neardup-", dir=os.path.dirname(target))
    except OSError as exc:  # named by the path given, not by the temporary file's
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        os.fchmod(fd, stat.S_IMODE(mode))
        with os.fdopen(fd, "wb") as sink:
            yield sink
        os.replace(part, target)
    except BaseException:
        os.unlink(part)
        raise


def _finite(value: str) -> float:
    """A number argument: finite (nan and inf would reach a service as JSON null)."""
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{value!r} is not a finite number")
    return x


def _positive_float(value: str) -> float:
    """A number argument above 0."""
    x = _finite(value)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number above 0")
    return x


def _counted(value: str, most: float, wrong: str, least: int = 1) -> int:
    """An integer argument from least to most; else argparse's error saying wrong."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(wrong) from None
    if not least <= n <= most:
        raise argparse.ArgumentTypeError(wrong)
    return n


def _limit(value: str) -> int:
    """--limit: an integer from 1 to the API's most results."""
    from app.api.schemas import MAX_LIMIT

    return _counted(value, MAX_LIMIT, f"{value!r} is not an integer from 1 to {MAX_LIMIT}")


def _service_url(value: str) -> str:
    """--url: an http(s) URL with a host, and a port, if any, that a socket can take."""
    try:
        url = httpx.URL(value)
        port = url.port
    except (httpx.InvalidURL, ValueError) as exc:
        raise argparse.ArgumentTypeError(f"{value!r} is not a URL: {exc}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise argparse.ArgumentTypeError(f"{value!r} is not an http(s) URL with a host")
    if port is not None and not 0 < port <= 65535:
        raise argparse.ArgumentTypeError(f"{value!r} names port {port}, not 1 to 65535")
    segments = [s for s in url.path.split("/") if s]
    named = next((i for i in range(len(segments) - 1) if segments[i] == "collections"), None)
    if named is not None and (named + 2 == len(segments) or segments[-1] in _ROUTE_NAMES):
        # …/collections/x, or a route under it (…/collections/x/documents)
        base = str(url.copy_with(path="/" + "/".join(segments[:named]), query=None))
        raise argparse.ArgumentTypeError(
            f"{value!r} names a collection; give the service's base URL "
            f"({base.rstrip('/')}) and --collection {segments[named + 1]}"
        )
    if segments and segments[-1] in _ROUTE_NAMES:
        base = str(url.copy_with(path="/" + "/".join(segments[:-1]), query=None))
        raise argparse.ArgumentTypeError(
            f"{value!r} ends in the route /{segments[-1]}; give the service's base URL "
            f"({base.rstrip('/')})"
        )
    return value


# The first segments of the service's routes: a --url ending in one names a route, not a
# service (its requests would go to /documents/documents/batch and the like).
_ROUTE_NAMES = frozenset(
    ("documents", "similar", "collections", "checks", "duplicates", "export", "import",
     "metrics", "healthz", "readyz", "docs", "ui", "openapi.json")
)  # fmt: skip


def _port(value: str) -> int:
    """--port: a TCP port, 0 (any free one) to 65535."""
    return _counted(value, 65535, f"{value!r} is not a TCP port (0 to 65535)", least=0)


def _workers(value: str) -> int:
    """--workers: as many as NEARDUP_WORKERS may say."""
    from app.core.settings import MAX_WORKERS

    return _counted(value, MAX_WORKERS, f"{value!r} is not an integer from 1 to {MAX_WORKERS}")


def _positive_int(value: str) -> int:
    """An argument that must be an integer above 0."""
    return _counted(value, math.inf, f"{value!r} is not an integer above 0")


def _unreadable(path: str) -> str | None:
    """Why a named input file cannot be read, said the same by every tool; None if it can.
    A device or a FIFO is refused: it would be read without end."""
    if os.path.isfile(path):
        return None
    if os.path.isdir(path):
        return f"{path}: a directory, not a file (name the files in it)"
    if os.path.exists(path):
        return f"{path}: not a regular file"
    return f"no such file: {path}"


def _ingest(args: argparse.Namespace) -> int:
    from rich.console import Console

    from app.cli import tools

    err = Console(stderr=True)
    problems = [p for p in (_unreadable(f) for f in args.files if f != "-") if p]
    if problems:
        print(f"neardup: {'; '.join(problems)}", file=sys.stderr)
        return 2

    async def work(backend: Backend) -> int:
        summary = await tools.ingest(
            backend, args.files, err, progress=not args.quiet, html=args.html, ttl=args.ttl
        )
        print(summary.report())
        # 3, as check's "done, and found something": a script tells a run that skipped
        # lines from a clean one without reading stderr.
        return 3 if summary.skipped else 0

    return _run_tool(args, work, writes=True)


def _query(args: argparse.Namespace) -> int:
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
        from app.index.formats import FileError

        problem = _unreadable(args.file)
        if problem:
            print(f"neardup: {problem}", file=sys.stderr)
            return 2
        try:
            text = file_text(args.file)
        except (FileError, OSError) as exc:
            print(f"neardup: {args.file}: {exc}", file=sys.stderr)
            return 2
        if text is None:
            print(f"neardup: {args.file}: not a .pdf, .docx or .odt file", file=sys.stderr)
            return 2
    elif args.id is None:
        text = _stdin_text()
        if text is None:
            return 1
    measure = "containment" if args.containment or args.evidence else "jaccard"
    where = _filter_arg(args.filter)
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

    return _run_tool(args, work)


def _stdin_text() -> str | None:
    """The text on stdin, strictly UTF-8; None, having said where it is not."""
    raw = sys.stdin.buffer.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        print(
            f"neardup: <stdin>: not valid UTF-8 ({exc.reason} at byte {exc.start}): send "
            "UTF-8 text",
            file=sys.stderr,
        )
        return None


def _duplicates(args: argparse.Namespace) -> int:
    from app.cli import tools

    async def work(backend: Backend) -> int:
        if args.output == "-":
            sink = tools.stdout_bytes()
            n = await tools.write_duplicates(backend, args.groups, args.threshold, sink)
        else:
            with _replacing(args.output) as sink:
                n = await tools.write_duplicates(backend, args.groups, args.threshold, sink)
        kind = "groups" if args.groups else "pairs"
        print(f"neardup: {n} {kind} written to {args.output}", file=sys.stderr)
        return 0

    return _run_tool(args, work)


def _filter_arg(spec: str | None) -> dict | None:
    """--filter's JSON, checked here so a typo is a usage error, not a request."""
    if spec is None:
        return None
    from app.index.filters import Filter, FilterError

    try:
        return Filter.parse(spec).to_json()
    except FilterError as exc:
        print(f"neardup: --filter: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _ready(args: argparse.Namespace) -> int:
    from app.cli.ready import ready

    return ready(_settings_or_exit(), args.url, args.timeout)


def _get(args: argparse.Namespace) -> int:
    import orjson

    async def work(backend: Backend) -> int:
        found = await backend.get(args.id)
        if found is None:
            print(f"neardup: no document with id {args.id!r}", file=sys.stderr)
            return 1
        print(orjson.dumps(found).decode())
        return 0

    return _run_tool(args, work)


def _delete(args: argparse.Namespace) -> int:
    where = _filter_arg(args.filter)
    if bool(args.ids) == (where is not None):
        print("neardup: delete: give ids or --filter (one of them)", file=sys.stderr)
        return 2

    async def work(backend: Backend) -> int:
        n = await backend.delete(args.ids or None, where)
        print(f"neardup: deleted {n} documents", file=sys.stderr)
        return 0

    return _run_tool(args, work)


def _export(args: argparse.Namespace) -> int:
    from app.cli import tools

    where = _filter_arg(args.filter)

    async def work(backend: Backend) -> int:
        if args.output == "-":
            n = await tools.write_export(backend, where, tools.stdout_bytes())
        else:
            with _replacing(args.output) as sink:
                n = await tools.write_export(backend, where, sink)
        to = "standard output" if args.output == "-" else args.output
        print(f"neardup: {n} documents exported to {to}", file=sys.stderr)
        return 0

    return _run_tool(args, work)


def _import(args: argparse.Namespace) -> int:
    from app.cli import tools

    problem = None if args.file == "-" else _unreadable(args.file)
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

    return _run_tool(args, work, writes=True)


def _rebuild(args: argparse.Namespace) -> int:
    """rebuild OLD NEW: every document of a collection that keeps texts, sketched again
    into NEW with the latest tokenizer (app.cli.rebuild)."""
    from app.cli import rebuild
    from app.cli.backends import BackendError, connect_rebuild
    from app.client import ClientError
    from app.core.errors import NeardupError
    from app.service.embedded import EmbeddedRedisError

    settings = None if args.url else _settings_or_exit()

    def progress(done: rebuild.Rebuilt) -> None:
        print(f"neardup: rebuild: {done.copied} documents copied", file=sys.stderr)

    async def main() -> int:
        async with connect_rebuild(args.url, settings) as (collections, open_backend):
            _, after = await rebuild.prepare(collections, args.old, args.new)
            old, new = await open_backend(args.old), await open_backend(args.new)
            done = await rebuild.rebuild(old, new, args.batch, progress)
        done.tokenizer = after["parameters"].get("tokenizer", 1)
        return rebuild.report(args.old, args.new, done)

    try:
        return asyncio.run(main())
    except (BackendError, ClientError, NeardupError) as exc:
        print(f"neardup: rebuild: {exc}", file=sys.stderr)
    except EmbeddedRedisError as exc:
        print(f"neardup: {exc}; to use a running service pass --url", file=sys.stderr)
    except httpx.HTTPError as exc:
        print(f"neardup: cannot reach {args.url}: {exc}", file=sys.stderr)
    return 1


def _check(args: argparse.Namespace) -> int:
    from app.cli.backends import collection_index
    from app.cli.tools import print_check
    from app.core.errors import NeardupError
    from app.index.check import check
    from app.service.embedded import EmbeddedRedisError
    from app.service.runtime import open_index

    settings = _settings_or_exit()

    async def main() -> int:
        named = args.collection is not None
        opened = open_index(settings, share_running=True, check=not named, tool=True, existing=True)
        async with opened as default:
            index = await collection_index(default, settings, args.collection, creates=False)
            report = await check(index, repair=args.repair)
        print_check(report, args.json)
        # 3: something is wrong and was left as it is (fsck-like: scripts can tell).
        return 0 if report.clean or args.repair else 3

    try:
        return asyncio.run(main())
    except (NeardupError, EmbeddedRedisError) as exc:
        print(f"neardup: {exc}", file=sys.stderr)
    return 1


def _add_target(p: argparse.ArgumentParser, collection: bool = True) -> None:
    p.add_argument(
        "--url",
        type=_service_url,
        help="a running neardup service (API key from NEARDUP_API_KEY); "
        "without it, work straight on the store the NEARDUP_* settings name",
    )
    if collection:
        p.add_argument(
            "--collection",
            type=_collection_name,
            help="the collection to work on (None: NEARDUP_COLLECTION, the service's own); "
            "without --url one that does not exist is made from the NEARDUP_* settings",
        )


def _collection_name(value: str) -> str:
    from app.core.names import COLLECTION_RULE, valid_collection

    if not valid_collection(value):
        raise argparse.ArgumentTypeError(f"a collection name is {COLLECTION_RULE}")
    return value


def _batch_size(value: str) -> int:
    return _counted(value, MAX_BATCH, f"a batch is 1 to {MAX_BATCH} documents")


def _collections(args: argparse.Namespace) -> int:
    """collections create|list|show|delete, on a service (--url) or on the store itself."""
    import orjson

    from app.cli.backends import BackendError, connect_collections
    from app.client import ClientError
    from app.core.errors import NeardupError
    from app.service.collections import PARAMETERS
    from app.service.embedded import EmbeddedRedisError

    given = {p: getattr(args, p) for p in PARAMETERS if getattr(args, p, None) is not None}

    async def main() -> Any:
        settings = None if args.url else _settings_or_exit()
        # Listing, showing or deleting reads a store: an empty new one is not made for it.
        existing = args.action != "create"
        async with connect_collections(args.url, settings, existing) as found:
            if args.action == "create":
                return await found.create(args.name, given)
            if args.action == "list":
                return await found.listing()
            if args.action == "show":
                return await found.show(args.name)
            await found.delete(args.name)
            return None

    try:
        answer = asyncio.run(main())
    except ClientError as exc:
        print(f"neardup: {exc}", file=sys.stderr)
        return 1
    except (BackendError, NeardupError, EmbeddedRedisError) as exc:
        print(f"neardup: {exc}", file=sys.stderr)
        return 1
    except httpx.HTTPError as exc:
        print(f"neardup: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 1
    if answer is None:
        print(f"neardup: deleted collection {args.name}", file=sys.stderr)
    else:
        print(orjson.dumps(answer).decode())
    return 0


def _add_collections(command: Callable[..., argparse.ArgumentParser]) -> None:
    from app.core.settings import Settings
    from app.service.collections import PARAMETERS

    cols = command("collections", help="make, list, show or delete collections")
    actions = cols.add_subparsers(dest="action", required=True)
    create = actions.add_parser(
        "create", help="make a collection (parameters not given: the NEARDUP_* settings)"
    )
    create.add_argument("name", type=_collection_name)
    for name in PARAMETERS:  # every parameter a collection is made with
        field = Settings.model_fields[name]
        kind, flag = field.annotation, "--" + name.replace("_", "-")
        # Not given: the service's setting, whose own default is the model's.
        said = f"NEARDUP_{name.upper()}, default {field.default!r}"
        if kind is bool:
            create.add_argument(
                flag, dest=name, action="store_true", default=None, help=f"on ({said})"
            )
        else:
            create.add_argument(
                flag,
                dest=name,
                type=_finite if kind is float else kind,  # type: ignore[arg-type]
                help=f"the setting {said}",
            )
    actions.add_parser("list", help="every collection with its number of documents")
    show = actions.add_parser("show", help="a collection's parameters and size")
    show.add_argument("name", type=_collection_name)
    delete = actions.add_parser("delete", help="remove a collection and all its documents")
    delete.add_argument("name", type=_collection_name)
    for p in actions.choices.values():
        _add_target(p, collection=False)
    cols.set_defaults(func=_collections)


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default (where it has one): a default of None,
    which the help itself explains, is not printed again as "(default: None)"."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def _doc_id(value: str) -> str:
    """An id argument, held to the service's one id rule (app.index.ids)."""
    from app.index.ids import id_problem

    why = id_problem(value)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
    return value


def build_parser() -> argparse.ArgumentParser:
    from app import __version__

    parser = argparse.ArgumentParser(
        prog="neardup", description="Near-duplicate document lookup service.", formatter_class=_Help
    )
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, formatter_class=_Help, **kwargs)

    serve = command("serve", help="run the HTTP API")
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (127.0.0.1: this machine only)"
    )
    serve.add_argument(
        "--insecure",
        action="store_true",
        help="allow a --host other than loopback without API keys",
    )
    serve.add_argument("--port", type=_port, default=8000, help="TCP port to listen on")
    serve.add_argument(
        "--workers",
        type=_workers,
        default=None,
        help="worker processes, which share one embedded Redis (default: NEARDUP_WORKERS, "
        f"else one per CPU this process may use, at most {MAX_DEFAULT_WORKERS})",
    )
    serve.set_defaults(func=_serve)

    ingest = command(
        "ingest",
        help="load documents from JSON Lines or 'id text' files ('-' is stdin), or PDF, "
        "DOCX and ODT files (one document each, its file name as id); exit 3 if any line "
        "was skipped",
        description="Load documents; a bad line is reported as file:line: skipped: why and "
        "the rest goes on. Exits 0 when every line was stored, 3 when some were skipped.",
    )
    ingest.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="JSON Lines ({id, text, metadata?}), 'id text', or .pdf/.docx/.odt",
    )
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--html",
        action="store_true",
        help="texts are HTML pages: their main text is indexed (content_type text/html)",
    )
    ingest.add_argument(
        "--ttl",
        type=_positive_int,
        metavar="SECONDS",
        help="each document expires this many seconds after it is stored (the API's ttl)",
    )
    _add_target(ingest)
    ingest.set_defaults(func=_ingest)

    query = command("query", help="near-duplicates of a stored id or of text on stdin")
    query.add_argument(
        "--id", type=_doc_id, help="a stored document's id (otherwise read text from stdin)"
    )
    query.add_argument(
        "--file",
        metavar="PATH",
        help="query with the text of a .pdf, .docx or .odt file instead of stdin",
    )
    query.add_argument(
        "--threshold", type=_finite, help="least similarity (None: the collection's threshold)"
    )
    query.add_argument(
        "--limit",
        type=_limit,
        default=None,
        help="most results (default: 10 for Jaccard, every source found for containment)",
    )
    query.add_argument(
        "--filter",
        help='JSON: only documents whose metadata matches, e.g. \'{"metadata": {"lang": "en"}}\'',
    )
    query.add_argument("--json", action="store_true", help="print JSON instead of a table")
    query.add_argument(
        "--html",
        action="store_true",
        help="stdin is an HTML page: query with its main text (content_type text/html)",
    )
    query.add_argument(
        "--site",
        help="with --html: the page's site (its host), whose template is not compared, as "
        "the API's site",
    )
    query.add_argument(
        "--containment",
        action="store_true",
        help="stored documents that hold passages of the text, ranked by the share held",
    )
    query.add_argument(
        "--evidence", action="store_true", help="the passages themselves (implies --containment)"
    )
    query.add_argument(
        "--texts",
        nargs="+",
        metavar="FILE",
        help="files in the ingest format to read source texts from, to print passages side by side",
    )
    _add_target(query)
    query.set_defaults(func=_query)

    dups = command("duplicates", help="write every near-duplicate pair or group as NDJSON")
    dups.add_argument("--groups", action="store_true", help="connected groups, not pairs")
    dups.add_argument(
        "--threshold", type=_finite, help="least similarity (None: the collection's threshold)"
    )
    dups.add_argument("-o", "--output", default="-", help="file to write ('-' is stdout)")
    _add_target(dups)
    dups.set_defaults(func=_duplicates)

    get = command("get", help="print a stored document's record (id, shingles, metadata)")
    get.add_argument("id", type=_doc_id, help="the document's id")
    _add_target(get)
    get.set_defaults(func=_get)

    delete = command(
        "delete", help="delete documents by id, or every document whose metadata matches"
    )
    delete.add_argument("ids", nargs="*", type=_doc_id, metavar="ID", help="ids to delete")
    delete.add_argument(
        "--filter", help='JSON, e.g. \'{"metadata": {"host": "example.com"}}\' (exact match)'
    )
    _add_target(delete)
    delete.set_defaults(func=_delete)

    exp = command(
        "export", help="write ids, metadata and sketches as JSON Lines (no texts), for import"
    )
    exp.add_argument("-o", "--output", default="-", help="file to write ('-' is stdout)")
    exp.add_argument("--filter", help="JSON: only documents whose metadata matches")
    _add_target(exp)
    exp.set_defaults(func=_export)

    imp = command(
        "import",
        help="load an export into the collection (it must have the export's sketch settings)",
    )
    imp.add_argument("file", metavar="FILE", help="an export file ('-' is stdin)")
    imp.add_argument(
        "--batch", type=_batch_size, default=500, help=f"documents per request (1 to {MAX_BATCH})"
    )
    _add_target(imp)
    imp.set_defaults(func=_import)

    reb = command(
        "rebuild",
        help="sketch a collection that keeps its texts again, into a new collection that "
        "reads them with the latest tokenizer (run it again to finish one cut short)",
    )
    reb.add_argument("old", metavar="OLD", type=_collection_name, help="the collection to read")
    reb.add_argument(
        "new", metavar="NEW", type=_collection_name,
        help="the collection to write (made with OLD's parameters if it does not exist)",
    )  # fmt: skip
    reb.add_argument(
        "--batch",
        type=_batch_size,
        default=MAX_BATCH,
        help=f"documents per write (1 to {MAX_BATCH})",
    )
    _add_target(reb, collection=False)
    reb.set_defaults(func=_rebuild)

    chk = command(
        "check",
        help="scan the collection for what a crash left behind (exit 3 if anything is found)",
        description="Scan ids, records and band entries of the collection the NEARDUP_* "
        "settings name for orphans and dangling entries, by kind. Safe while the service "
        "runs (with the embedded Redis, it uses the running service's).",
    )
    chk.add_argument("--repair", action="store_true", help="remove (or restore) what is found")
    chk.add_argument("--json", action="store_true", help="print the report as JSON")
    chk.add_argument(
        "--collection", type=_collection_name, help="the collection (None: NEARDUP_COLLECTION)"
    )
    chk.set_defaults(func=_check)

    rdy = command(
        "ready",
        help="exit 0 when the service answers /readyz (a container's health check)",
        description="GET /readyz of a running service with a key it accepts: NEARDUP_API_KEY, "
        "else one of the NEARDUP_API_KEYS (or _FILE) the service itself was started with. "
        "Exit 0 when it is ready, 1 (and why, on stderr) when not.",
    )
    rdy.add_argument(
        "--url", type=_service_url, default="http://127.0.0.1:8000", help="the service"
    )
    rdy.add_argument(
        "--timeout", type=_positive_float, default=2.0, metavar="SECONDS", help="wait this long"
    )
    rdy.set_defaults(func=_ready)
    _add_collections(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # The reader (say, `| head`) went away: not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        # Ctrl-C: a local write in flight was let finish (app.cli.backends), nothing more
        # was sent; a one-line word, not a traceback, and the shell's code for SIGINT.
        print("neardup: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
