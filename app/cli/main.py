"""The `neardup` command line: its parser, and main, which runs the command it names
(serve.py, documents.py, maintenance.py; argument types in arguments.py)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from typing import Any

from app.cli import arguments
from app.client import MAX_BATCH
from app.service.workers import MAX_DEFAULT_WORKERS


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    """The function name of app.cli.module, imported when its command runs: the parser
    imports none of the store, index or HTTP code, so --help, --version and a refused
    argument answer at once."""

    def run(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(f"app.cli.{module}"), name)(args))

    return run


def _add_target(p: argparse.ArgumentParser, collection: bool = True) -> None:
    p.add_argument(
        "--url",
        type=arguments.service_url,
        help="a running neardup service (API key from NEARDUP_API_KEY); "
        "without it, work straight on the store the NEARDUP_* settings name",
    )
    if collection:
        p.add_argument(
            "--collection",
            type=arguments.collection_name,
            help="the collection to work on (None: NEARDUP_COLLECTION, the service's own); "
            "without --url one that does not exist is made from the NEARDUP_* settings",
        )


_COLLECTIONS = "make, list, show or delete collections"


def _add_collections(command: Callable[..., argparse.ArgumentParser]) -> None:
    from app.core.settings import Settings
    from app.service.collections import PARAMETERS

    cols = command("collections", help=_COLLECTIONS)
    actions = cols.add_subparsers(dest="action", required=True)
    create = actions.add_parser(
        "create", help="make a collection (parameters not given: the NEARDUP_* settings)"
    )
    create.add_argument("name", type=arguments.collection_name)
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
                type=arguments.finite if kind is float else kind,  # type: ignore[arg-type]
                help=f"the setting {said}",
            )
    actions.add_parser("list", help="every collection with its number of documents")
    show = actions.add_parser("show", help="a collection's parameters and size")
    show.add_argument("name", type=arguments.collection_name)
    delete = actions.add_parser("delete", help="remove a collection and all its documents")
    delete.add_argument("name", type=arguments.collection_name)
    for p in actions.choices.values():
        _add_target(p, collection=False)
    cols.set_defaults(func=_command("maintenance", "collections_command"))


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's help ends with its default (where it has one): a default of None,
    which the help itself explains, is not printed again as "(default: None)"."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The whole parser; given the arguments it will parse, one whose `collections`
    command, when they do not name it, is only listed (its options come from the
    settings model and the collections' parameters, the costliest imports of all)."""
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
    serve.add_argument("--port", type=arguments.port, default=8000, help="TCP port to listen on")
    serve.add_argument(
        "--workers",
        type=arguments.workers,
        default=None,
        help="worker processes, which share one embedded Redis (default: NEARDUP_WORKERS, "
        f"else one per CPU this process may use, at most {MAX_DEFAULT_WORKERS})",
    )
    serve.set_defaults(func=_command("serve", "serve_command"))

    ingest = command(
        "ingest",
        help="load documents from JSON Lines or 'id text' files ('-' is stdin), or PDF, "
        "DOCX, ODT and RTF files (one document each, its file name as id); exit 3 if any line "
        "was skipped",
        description="Load documents; a bad line is reported as file:line: skipped: why and "
        "the rest goes on. Exits 0 when every line was stored, 3 when some were skipped.",
    )
    ingest.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="JSON Lines ({id, text, metadata?}), 'id text', or .pdf/.docx/.odt/.rtf",
    )
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.add_argument(
        "--html",
        action="store_true",
        help="texts are HTML pages: their main text is indexed (content_type text/html)",
    )
    ingest.add_argument(
        "--ttl",
        type=arguments.positive_int,
        metavar="SECONDS",
        help="each document expires this many seconds after it is stored (the API's ttl)",
    )
    ingest.add_argument(
        "--batch",
        type=arguments.batch_size,
        default=500,
        help=f"lines a request (1 to {MAX_BATCH}); up to four batches travel at once",
    )
    _add_target(ingest)
    ingest.set_defaults(func=_command("documents", "ingest_command"))

    query = command("query", help="near-duplicates of a stored id or of text on stdin")
    query.add_argument(
        "--id",
        type=arguments.doc_id,
        help="a stored document's id (otherwise read text from stdin)",
    )
    query.add_argument(
        "--file",
        metavar="PATH",
        help="query with the text of a .pdf, .docx, .odt or .rtf file instead of stdin",
    )
    query.add_argument(
        "--threshold",
        type=arguments.finite,
        help="least similarity (None: the collection's threshold)",
    )
    query.add_argument(
        "--limit",
        type=arguments.limit,
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
    query.set_defaults(func=_command("documents", "query_command"))

    dups = command("duplicates", help="write every near-duplicate pair or group as NDJSON")
    dups.add_argument("--groups", action="store_true", help="connected groups, not pairs")
    dups.add_argument(
        "--threshold",
        type=arguments.finite,
        help="least similarity (None: the collection's threshold)",
    )
    dups.add_argument("-o", "--output", default="-", help="file to write ('-' is stdout)")
    _add_target(dups)
    dups.set_defaults(func=_command("documents", "duplicates_command"))

    get = command("get", help="print a stored document's record (id, shingles, metadata)")
    get.add_argument("id", type=arguments.doc_id, help="the document's id")
    _add_target(get)
    get.set_defaults(func=_command("documents", "get_command"))

    delete = command(
        "delete", help="delete documents by id, or every document whose metadata matches"
    )
    delete.add_argument("ids", nargs="*", type=arguments.doc_id, metavar="ID", help="ids to delete")
    delete.add_argument(
        "--filter", help='JSON, e.g. \'{"metadata": {"host": "example.com"}}\' (exact match)'
    )
    _add_target(delete)
    delete.set_defaults(func=_command("documents", "delete_command"))

    exp = command(
        "export", help="write ids, metadata and sketches as JSON Lines (no texts), for import"
    )
    exp.add_argument("-o", "--output", default="-", help="file to write ('-' is stdout)")
    exp.add_argument("--filter", help="JSON: only documents whose metadata matches")
    _add_target(exp)
    exp.set_defaults(func=_command("documents", "export_command"))

    imp = command(
        "import",
        help="load an export into the collection (it must have the export's sketch settings)",
    )
    imp.add_argument("file", metavar="FILE", help="an export file ('-' is stdin)")
    imp.add_argument(
        "--batch",
        type=arguments.batch_size,
        default=500,
        help=f"documents per request (1 to {MAX_BATCH})",
    )
    _add_target(imp)
    imp.set_defaults(func=_command("documents", "import_command"))

    reb = command(
        "rebuild",
        help="sketch a collection that keeps its texts again, into a new collection that "
        "reads them with the latest tokenizer (run it again to finish one cut short)",
    )
    reb.add_argument(
        "old", metavar="OLD", type=arguments.collection_name, help="the collection to read"
    )
    reb.add_argument(
        "new", metavar="NEW", type=arguments.collection_name,
        help="the collection to write (made with OLD's parameters if it does not exist)",
    )  # fmt: skip
    reb.add_argument(
        "--batch",
        type=arguments.batch_size,
        default=MAX_BATCH,
        help=f"documents per write (1 to {MAX_BATCH})",
    )
    _add_target(reb, collection=False)
    reb.set_defaults(func=_command("maintenance", "rebuild_command"))

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
        "--collection",
        type=arguments.collection_name,
        help="the collection (None: NEARDUP_COLLECTION)",
    )
    chk.set_defaults(func=_command("maintenance", "check_command"))

    rdy = command(
        "ready",
        help="exit 0 when the service answers /readyz (a container's health check)",
        description="GET /readyz of a running service with a key it accepts: NEARDUP_API_KEY, "
        "else one of the NEARDUP_API_KEYS (or _FILE) the service itself was started with. "
        "Exit 0 when it is ready, 1 (and why, on stderr) when not.",
    )
    rdy.add_argument(
        "--url", type=arguments.service_url, default="http://127.0.0.1:8000", help="the service"
    )
    rdy.add_argument(
        "--timeout",
        type=arguments.positive_float,
        default=2.0,
        metavar="SECONDS",
        help="wait this long",
    )
    rdy.set_defaults(func=_command("documents", "ready_command"))
    if argv is None or "collections" in argv:
        _add_collections(command)
    else:
        command("collections", help=_COLLECTIONS)
    return parser


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = build_parser(given).parse_args(given)
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
