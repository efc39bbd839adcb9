"""The report page and kept texts: what they cost.

Prints
- the page's size (its three files, as served: the service does not compress them);
- its load time in Debian's chromium (Playwright) from a local `neardup serve`: the
  browser's load event and the moment the check view is ready (the collection read),
  median of 20 loads, and the time from "Check" to the marked report for a 1,000-word text;
- the Redis memory per document that NEARDUP_KEEP_TEXT adds, the 1,000 shared articles
  ingested with texts kept and not, in the same Redis, and the mean text before and
  after compression.

    .venv/bin/python bench/ui.py
"""

from __future__ import annotations

import asyncio
import gzip
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis as redis_py
from common import log, read_articles

from app.api.routes.ui import FILES
from app.index import Document, Index, Params
from app.service.embedded import EmbeddedRedis
from app.store import Store


def used_memory(redis: EmbeddedRedis) -> int:
    client = redis_py.Redis(unix_socket_path=str(redis.socket))
    try:
        return int(client.info("memory")["used_memory"])
    finally:
        client.close()


async def _kept_bytes(redis: EmbeddedRedis, texts: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    ids = [f"a{i}" for i in range(len(texts))]
    for keep in (False, True):
        params = Params.create("word:3", 128, 256, 1, 0.5, len(texts), keep_text=keep)
        store = Store.connect(redis.url, f"k{int(keep)}", 30.0)
        index = await Index.open(store, params, 200)
        before = used_memory(redis)
        for first in range(0, len(texts), 250):
            part = range(first, min(first + 250, len(texts)))
            await index.ingest([Document(texts[i], ids[i]) for i in part])
        out[f"bytes_keep_{keep}"] = (used_memory(redis) - before) / len(texts)
        if keep:
            handles = await store.ids.handles(ids)
            stored = await store.texts([h for h in handles if h is not None])
            out["text_utf8"] = statistics.mean(len(t.encode()) for t in texts)
            out["text_stored"] = statistics.mean(len(s or b"") for s in stored)
        await store.close()
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _page_times(redis: EmbeddedRedis, texts: list[str]) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env.update(NEARDUP_REDIS_URL=redis.url, NEARDUP_COLLECTION="k1", NEARDUP_KEEP_TEXT="1")
    env["NEARDUP_LOG_LEVEL"] = "warning"
    serve = Path(sys.executable).with_name("neardup")
    proc = subprocess.Popen([str(serve), "serve", "--port", str(port)], env=env)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("neardup serve did not start")
            time.sleep(0.1)
        words = " ".join(texts[7].split()[:300] + texts[90].split()[:700])
        with sync_playwright() as p:
            chromium = shutil.which("chromium")
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            loads, ready, checks = [], [], []
            for _ in range(20):
                page.goto(url + "/ui/")
                # (wait_for_function would evaluate a string: the page's CSP forbids that)
                page.locator("#title", has_text="against").wait_for()
                nav = page.evaluate("performance.getEntriesByType('navigation')[0].toJSON()")
                loads.append(nav["loadEventEnd"])
                ready.append(page.evaluate("performance.now()"))
            for _ in range(10):
                page.fill("#text", words)
                started = time.perf_counter()
                page.click("#check")
                page.locator("#checked mark").first.wait_for()
                checks.append((time.perf_counter() - started) * 1000)
                page.evaluate("document.getElementById('checked').replaceChildren()")
            browser.close()
        return {
            "load_ms": statistics.median(loads),
            "ready_ms": statistics.median(ready),
            "check_ms": statistics.median(checks),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    texts = read_articles()
    if not texts:
        sys.exit("bench/ui.py needs the shared articles (tests/data/articles_1000.train)")
    raw = sum(len(b) for b in FILES.values())
    packed = sum(len(gzip.compress(b)) for b in FILES.values())
    print(f"page: {len(FILES)} files, {raw:,} bytes ({packed:,} gzipped)")
    with tempfile.TemporaryDirectory() as work:
        redis = EmbeddedRedis(Path(work) / "ui").start()
        try:
            log("ingesting the articles with texts kept and not")
            kept = asyncio.run(_kept_bytes(redis, texts))
            added = kept["bytes_keep_True"] - kept["bytes_keep_False"]
            print(
                f"keep_text: {len(texts)} articles, {kept['bytes_keep_False']:,.0f} -> "
                f"{kept['bytes_keep_True']:,.0f} Redis bytes per document (+{added:,.0f}); "
                f"text {kept['text_utf8']:,.0f} B UTF-8, stored {kept['text_stored']:,.0f} B "
                f"(zlib + 8-byte digest, {kept['text_stored'] / kept['text_utf8']:.2f}x)"
            )
            if shutil.which("chromium"):
                log("loading the page in chromium")
                t = _page_times(redis, texts)
                print(
                    f"page load (median of 20): load event {t['load_ms']:.0f} ms, check view "
                    f"ready {t['ready_ms']:.0f} ms; Check -> marked report for 1,000 words: "
                    f"{t['check_ms']:.0f} ms (median of 10)"
                )
            else:
                print("page load: not measured (apt-get install -y chromium)")
        finally:
            redis.stop()


if __name__ == "__main__":
    main()
