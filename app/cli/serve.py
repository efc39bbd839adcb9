"""`neardup serve`: the HTTP API in uvicorn's workers, with an embedded Redis when no
NEARDUP_REDIS_URL names one."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
import tempfile

from app.core.settings import Settings, SettingsError, load_settings
from app.service.workers import MAX_DEFAULT_WORKERS, default_workers


def serve_command(args: argparse.Namespace) -> int:
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
