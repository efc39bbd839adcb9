"""The HTTP ceiling: a trivial FastAPI route on the uvicorn settings `neardup serve` uses.

What one worker count can serve at all under the same load, so GET /similar can be put as
a share of it. uvicorn imports this module (--app-dir bench) to build the route.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from common import free_port, log
from load import Req, Runner
from servers import HOST, Server, clean_env


def ceiling_app():  # -> FastAPI, built by uvicorn in the ceiling server's workers
    """The trivial route the HTTP ceiling is measured on."""
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/ok")
    async def ok() -> dict[str, bool]:
        return {"ok": True}

    return app


def ceiling_server(workers: int, log_level: str) -> Server:
    """uvicorn with the settings `neardup serve` passes it (see app/cli/serve.py)."""
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "ceiling:ceiling_app", "--factory"]
    cmd += ["--app-dir", str(Path(__file__).resolve().parent), "--host", HOST]
    cmd += ["--port", str(port), "--workers", str(workers), "--log-level", log_level]
    cmd += ["--timeout-graceful-shutdown", "30"]
    return Server(f"ceiling-{workers}w", cmd, clean_env(), port, "/ok")


def run_ceiling(args: argparse.Namespace, runner: Runner, workers: int) -> dict[str, Any]:
    server = ceiling_server(workers, args.log_level).start()
    try:
        load = runner.run(
            f"ceiling {workers}w", server.port, [Req("GET", "/ok")], args.duration, server.pid
        )
        log(f"ceiling {workers}w: {load.qps:.0f} q/s p99 {load.p99_ms:.1f} ms")
        return asdict(load)
    finally:
        server.stop()
