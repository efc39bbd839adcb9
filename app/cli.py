"""The `neardup` command: serve the API (and, later, bulk tools)."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from app.config import SettingsError, load_settings


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    from app.embedded import EmbeddedRedis, EmbeddedRedisError

    try:
        settings = load_settings()
    except SettingsError as exc:
        print(f"neardup: {exc}", file=sys.stderr)
        return 2
    embedded = None
    if settings.redis_url is None:
        # One Redis for all workers: started here, handed to them by URL.
        try:
            embedded = EmbeddedRedis(settings.data_dir, settings.durability).start()
        except EmbeddedRedisError as exc:
            print(f"neardup: {exc}", file=sys.stderr)
            return 1
        os.environ["NEARDUP_REDIS_URL"] = embedded.url
        print(f"neardup: embedded Redis, data in {embedded.data_dir}", file=sys.stderr)
    # uvicorn re-raises the signal that stopped it once it has shut down; with
    # a handler of our own in place that re-raise returns here instead of
    # killing the process, so the embedded Redis is flushed and stopped below.
    stop_signals: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: stop_signals.append(signum))
    try:
        uvicorn.run(
            "app.main:create_app",
            factory=True,
            host=args.host,
            port=args.port,
            workers=args.workers,
            log_level=settings.log_level,
            timeout_graceful_shutdown=30,
        )
    finally:
        if embedded is not None:
            embedded.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neardup", description="Near-duplicate document lookup service."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP API")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1)
    serve.set_defaults(func=_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
