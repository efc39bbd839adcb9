"""Stored checks (POST /checks): what keeping a check costs over the same POST /similar.

In one process (FastAPI's TestClient, the embedded Redis on a unix socket), the 1,000
shared articles ingested, and 1,000-word essays that copy three runs of 60 words from
three articles between words of their own:
- the median time of POST /similar (containment, evidence, text returned) and of
  POST /checks with the same body, alternated, and their ratio;
- GET /checks/{id} (the stored answer and the sources' versions read again);
- Redis bytes per stored check (STRLEN of its key) against the essay's UTF-8 bytes.

    .venv/bin/python bench/checks.py
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis as redis_py
from common import log, read_articles
from fastapi.testclient import TestClient

from app.api.app import create_app
from app.core.settings import load_settings
from app.service.embedded import EmbeddedRedis

ROUNDS = 200
COLLECTION = "bench"


def essays(texts: list[str], n: int, seed: int = 7) -> list[str]:
    """n essays of about 1,000 words: own words around three 60-word runs of articles."""
    rng = random.Random(seed)
    # Own words: drawn at random from the articles' words, so they compress about as prose
    # does but share (almost) no 3-word run with any article.
    own = sorted({w for t in texts for w in t.split()})
    out = []
    for _ in range(n):
        parts = []
        for article in rng.sample(texts, 3):
            words = article.split()
            start = rng.randrange(max(1, len(words) - 60))
            parts.append(" ".join(rng.choice(own) for _ in range(270)))
            parts.append(" ".join(words[start : start + 60]))
        parts.append(" ".join(rng.choice(own) for _ in range(60)))
        out.append("\n\n".join(parts))
    return out


def _ms(client: TestClient, method: str, path: str, body: dict | None = None) -> tuple[float, dict]:
    started = time.perf_counter()
    answer = client.request(method, path, json=body)
    took = (time.perf_counter() - started) * 1000
    assert answer.status_code in (200, 201), answer.text
    return took, answer.json()


def main() -> None:
    texts = read_articles()
    if not texts:
        sys.exit("bench/checks.py needs the shared articles (tests/data/articles_1000.train)")
    with tempfile.TemporaryDirectory() as work:
        redis = EmbeddedRedis(Path(work) / "checks").start()
        try:
            settings = load_settings(
                redis_url=redis.url, collection=COLLECTION, data_dir=Path(work), log_level="error"
            )
            with TestClient(create_app(settings)) as c:
                log("ingesting the articles")
                for first in range(0, len(texts), 250):
                    docs = [
                        {"id": f"a{i}", "text": texts[i]}
                        for i in range(first, min(first + 250, len(texts)))
                    ]
                    assert c.post("/documents/batch", json={"documents": docs}).status_code == 200
                asked = essays(texts, ROUNDS)
                similar, checks, reads, stored, sizes = [], [], [], [], []
                log(f"{ROUNDS} essays through POST /similar and POST /checks")
                client = redis_py.Redis(unix_socket_path=str(redis.socket))
                for text in asked:
                    body = {"text": text, "measure": "containment", "evidence": True}
                    took, _ = _ms(c, "POST", "/similar", body | {"return_text": True})
                    similar.append(took)
                    took, made = _ms(c, "POST", "/checks", body)
                    checks.append(took)
                    took, _ = _ms(c, "GET", f"/checks/{made['id']}")
                    reads.append(took)
                    stored.append(client.strlen(f"nd:{COLLECTION}:c:{made['id']}"))
                    sizes.append(len(text.encode()))
                client.close()
        finally:
            redis.stop()
    s, k, g = (statistics.median(x) for x in (similar, checks, reads))
    words = statistics.mean(len(t.split()) for t in asked)
    print(
        f"{ROUNDS} essays of {words:,.0f} words, 1,000 articles stored; medians: "
        f"POST /similar {s:.2f} ms, POST /checks {k:.2f} ms ({k / s:.2f}x), "
        f"GET /checks/{{id}} {g:.2f} ms"
    )
    kept, essay = statistics.mean(stored), statistics.mean(sizes)
    print(f"stored check: {kept:,.0f} B in Redis for a {essay:,.0f} B essay ({kept / essay:.2f}x)")


if __name__ == "__main__":
    main()
