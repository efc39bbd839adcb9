"""The `neardup` command line's argument types: each checks one kind of argument and
says in argparse's error what to give instead."""

from __future__ import annotations

import argparse
import math
import sys

from app.client import MAX_BATCH


def finite(value: str) -> float:
    """A number argument: finite (nan and inf would reach a service as JSON null)."""
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"{value!r} is not a finite number")
    return x


def positive_float(value: str) -> float:
    """A number argument above 0."""
    x = finite(value)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number above 0")
    return x


def counted(value: str, most: float, wrong: str, least: int = 1) -> int:
    """An integer argument from least to most; else argparse's error saying wrong."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(wrong) from None
    if not least <= n <= most:
        raise argparse.ArgumentTypeError(wrong)
    return n


def limit(value: str) -> int:
    """--limit: an integer from 1 to the API's most results."""
    from app.api.schemas import MAX_LIMIT

    return counted(value, MAX_LIMIT, f"{value!r} is not an integer from 1 to {MAX_LIMIT}")


def service_url(value: str) -> str:
    """--url: an http(s) URL with a host, and a port, if any, that a socket can take."""
    import httpx

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


def port(value: str) -> int:
    """--port: a TCP port, 0 (any free one) to 65535."""
    return counted(value, 65535, f"{value!r} is not a TCP port (0 to 65535)", least=0)


def workers(value: str) -> int:
    """--workers: as many as NEARDUP_WORKERS may say."""
    from app.core.settings import MAX_WORKERS

    return counted(value, MAX_WORKERS, f"{value!r} is not an integer from 1 to {MAX_WORKERS}")


def positive_int(value: str) -> int:
    """An argument that must be an integer above 0."""
    return counted(value, math.inf, f"{value!r} is not an integer above 0")


def collection_name(value: str) -> str:
    from app.core.names import COLLECTION_RULE, valid_collection

    if not valid_collection(value):
        raise argparse.ArgumentTypeError(f"a collection name is {COLLECTION_RULE}")
    return value


def batch_size(value: str) -> int:
    return counted(value, MAX_BATCH, f"a batch is 1 to {MAX_BATCH} documents")


def doc_id(value: str) -> str:
    """An id argument, held to the service's one id rule (app.index.ids)."""
    from app.index.ids import id_problem

    why = id_problem(value)
    if why is not None:
        raise argparse.ArgumentTypeError(why)
    return value


def filter_arg(spec: str | None) -> dict | None:
    """--filter's JSON, checked here so a typo is a usage error, not a request."""
    if spec is None:
        return None
    from app.index.filters import Filter, FilterError

    try:
        return Filter.parse(spec).to_json()
    except FilterError as exc:
        print(f"neardup: --filter: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
