"""The `neardup` commands that keep collections: rebuild, check and collections."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import httpx

from app.cli import documents


def rebuild_command(args: argparse.Namespace) -> int:
    """rebuild OLD NEW: every document of a collection that keeps texts, sketched again
    into NEW with the latest tokenizer (app.cli.rebuild)."""
    from app.cli import rebuild
    from app.cli.backends import BackendError, connect_rebuild
    from app.client import ClientError
    from app.core.errors import NeardupError
    from app.service.embedded import EmbeddedRedisError

    settings = None if args.url else documents.settings_or_exit()

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


def check_command(args: argparse.Namespace) -> int:
    from app.cli.backends import collection_index
    from app.cli.tools import print_check
    from app.core.errors import NeardupError
    from app.index.check import check
    from app.service.embedded import EmbeddedRedisError
    from app.service.runtime import open_index

    settings = documents.settings_or_exit()

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


def collections_command(args: argparse.Namespace) -> int:
    """collections create|list|show|delete, on a service (--url) or on the store itself."""
    import orjson

    from app.cli.backends import BackendError, connect_collections
    from app.client import ClientError
    from app.core.errors import NeardupError
    from app.service.collections import PARAMETERS
    from app.service.embedded import EmbeddedRedisError

    given = {p: getattr(args, p) for p in PARAMETERS if getattr(args, p, None) is not None}

    async def main() -> Any:
        settings = None if args.url else documents.settings_or_exit()
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
