"""Files in: extraction speed and faithfulness per format and library, and extraction's
share of a file check's time.

The files: tests/data/formats (made by LibreOffice from corpus articles, see make.py
there: an essay as PDF, DOCX and ODT with a running header and page-number footer and
hyphenation; a two-column PDF), and, when LibreOffice is installed, the same made ten
times larger in bench/out/formats.

- per format and library: MB/s of file bytes (one thread, in this process), and
  faithfulness: of the source text's words, how many per thousand the extract misses
  and how many it adds (header, footer, page numbers, words split at hyphens), from
  the longest common subsequence of the two word lists (tests/support/oracle.words);
- the worker pool (app.index.formats.workers): time per file through a worker process
  against the same extraction in process;
- a file check: POST /similar (containment, evidence, return_text) over the whole app,
  on a throwaway Redis holding the 1,000 corpus articles, with the essay as a PDF and
  as its extracted text: extraction's share of the file check's time.

Figures, never assertions. Run: .venv/bin/python bench/formats.py [--quick]
"""

from __future__ import annotations

import argparse
import base64
import difflib
import importlib.util
import io
import logging
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import ROOT, log, oracle, read_articles
from stores import ThrowawayRedis

from app.index.formats import DOCX, ODT, PDF, extract
from app.index.formats.workers import Extractors

FIXTURES = ROOT / "tests" / "data" / "formats"
LARGE = ROOT / "bench" / "out" / "formats"


def _pdf_candidates() -> dict[str, Callable[[bytes], str]]:
    import pypdfium2 as pdfium

    def pdfium_raw(raw: bytes) -> str:
        doc = pdfium.PdfDocument(raw)
        return "\n".join(doc[i].get_textpage().get_text_range() for i in range(len(doc)))

    out: dict[str, Callable[[bytes], str]] = {
        "neardup (pypdfium2 + cleanup)": lambda raw: extract(PDF, raw),
        "pypdfium2 text as is": pdfium_raw,
    }
    try:
        import pypdf

        def pypdf_text(raw: bytes) -> str:
            return "\n".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(raw)).pages)

        out["pypdf"] = pypdf_text
    except ImportError:
        pass
    try:
        from pdfminer.high_level import extract_text

        out["pdfminer.six"] = lambda raw: extract_text(io.BytesIO(raw))
    except ImportError:
        pass
    return out


def _docx_candidates() -> dict[str, Callable[[bytes], str]]:
    out: dict[str, Callable[[bytes], str]] = {"neardup (zip + XML)": lambda r: extract(DOCX, r)}
    try:
        import docx

        out["python-docx"] = lambda r: "\n".join(
            p.text for p in docx.Document(io.BytesIO(r)).paragraphs
        )
    except ImportError:
        pass
    try:
        from docx2python import docx2python

        def d2p(raw: bytes) -> str:
            with docx2python(io.BytesIO(raw)) as doc:
                return str(doc.text)

        out["docx2python"] = d2p
    except ImportError:
        pass
    return out


def _odt_candidates() -> dict[str, Callable[[bytes], str]]:
    out: dict[str, Callable[[bytes], str]] = {"neardup (zip + XML)": lambda r: extract(ODT, r)}
    try:
        from odf import teletype
        from odf import text as odf_text
        from odf.opendocument import load

        def odfpy(raw: bytes) -> str:
            doc = load(io.BytesIO(raw))
            return "\n".join(teletype.extractText(p) for p in doc.getElementsByType(odf_text.P))

        out["odfpy"] = odfpy
    except ImportError:
        pass
    return out


def _faithfulness(source: str, got: str) -> tuple[float, float]:
    """(words of source missed, words added) per thousand source words."""
    a, b = oracle().words(source), oracle().words(got)
    same = sum(
        m.size for m in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
    )
    return 1000 * (len(a) - same) / len(a), 1000 * (len(b) - same) / len(a)


def _timed(fn: Callable[[bytes], str], raw: bytes, least: float) -> tuple[float, str]:
    """Seconds per call (repeated for at least `least` seconds) and the text."""
    text = fn(raw)
    n, started = 0, time.perf_counter()
    while True:
        fn(raw)
        n += 1
        elapsed = time.perf_counter() - started
        if elapsed >= least:
            return elapsed / n, text


def _make_large() -> Path | None:
    if (LARGE / "essay.pdf").exists():
        return LARGE
    if shutil.which("soffice") is None:
        return None
    spec = importlib.util.spec_from_file_location("make_formats", FIXTURES / "make.py")
    assert spec is not None and spec.loader is not None
    make = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make)
    LARGE.mkdir(parents=True, exist_ok=True)
    log("making the 10x files with LibreOffice")
    make.main(LARGE, 10)
    return LARGE


def _files(folder: Path) -> list[tuple[str, str, Path, Path]]:
    """(format, label, file, source text) of a folder's files."""
    out = []
    for kind, name in ((PDF, "essay.pdf"), (PDF, "columns.pdf"), (DOCX, "essay.docx"),
                       (ODT, "essay.odt")):  # fmt: skip
        path = folder / name
        if path.exists():
            out.append((kind, name, path, folder / (name.split(".")[0] + ".txt")))
    return out


def bench_libraries(folders: list[Path], least: float) -> None:
    candidates = {PDF: _pdf_candidates(), DOCX: _docx_candidates(), ODT: _odt_candidates()}
    print(
        f"{'file':>24} {'library':>30} {'KB':>6} {'MB/s':>7} {'ms':>8} {'missed‰':>8} {'added‰':>7}"
    )
    for folder in folders:
        for kind, name, path, source_path in _files(folder):
            raw = path.read_bytes()
            source = source_path.read_text(encoding="utf-8")
            label = f"{folder.name}/{name}"
            for library, fn in candidates[kind].items():
                try:
                    seconds, text = _timed(fn, raw, least)
                except Exception as exc:  # a library that fails on a file is a figure too
                    print(f"{label:>24} {library:>30} failed: {exc}")
                    continue
                missed, added = _faithfulness(source, text)
                print(
                    f"{label:>24} {library:>30} {len(raw) / 1024:>6.0f} "
                    f"{len(raw) / seconds / 1e6:>7.2f} {1000 * seconds:>8.2f} "
                    f"{missed:>8.1f} {added:>7.1f}",
                    flush=True,
                )


def bench_pool(folder: Path, least: float) -> None:
    pool = Extractors(workers=1)
    try:
        print("worker pool: ms per file through a worker process vs in this process")
        for kind, name, path, _ in _files(folder):
            raw = path.read_bytes()
            inside, _ = _timed(lambda r, k=kind: extract(k, r), raw, least)
            pooled, _ = _timed(lambda r, k=kind: pool.run(k, r), raw, least)
            print(
                f"{name:>24} in process {1000 * inside:7.2f} ms, pooled {1000 * pooled:7.2f} ms "
                f"(+{1000 * (pooled - inside):.2f} ms)"
            )
        started = time.perf_counter()
        Extractors(workers=1).run(DOCX, (folder / "essay.docx").read_bytes())
        print(f"a worker's start (spawn, imports) and first file: "
              f"{1000 * (time.perf_counter() - started):.0f} ms")  # fmt: skip
    finally:
        pool.close()


def bench_check(folder: Path, rounds: int) -> None:
    from fastapi.testclient import TestClient

    from app.api.app import create_app
    from app.core.settings import load_settings

    logging.disable(logging.INFO)  # the access log of every request: not figures
    raw = (folder / "essay.pdf").read_bytes()
    text = extract(PDF, raw)
    with tempfile.TemporaryDirectory(prefix="neardup-bench-") as tmp:
        redis = ThrowawayRedis(Path(tmp), "formats").start()
        try:
            settings = load_settings(
                redis_url=redis.url, collection="formats", data_dir=Path(tmp) / "data"
            )
            with TestClient(create_app(settings)) as client:
                docs = [{"id": f"a{i}", "text": t} for i, t in enumerate(read_articles())]
                for k in range(0, len(docs), 500):
                    client.post("/documents/batch", json={"documents": docs[k : k + 500]})
                query = {"measure": "containment", "evidence": True, "return_text": True}
                query["threshold"] = 0.01  # each article is a small share of the essay
                docx = base64.b64encode((folder / "essay.docx").read_bytes()).decode()
                bodies = {
                    "pdf": {"content_type": PDF, "data": base64.b64encode(raw).decode(), **query},
                    "docx": {"content_type": DOCX, "data": docx, **query},
                    "text": {"text": text, **query},
                }
                times: dict[str, list[float]] = {kind: [] for kind in bodies}
                for _ in range(rounds):
                    for kind, body in bodies.items():
                        started = time.perf_counter()
                        r = client.post("/similar", json=body)
                        times[kind].append(time.perf_counter() - started)
                        assert r.status_code == 200, r.text
                found = len(r.json()["results"])
        finally:
            redis.stop()
    pdf_ms = 1000 * statistics.median(times["pdf"])
    docx_ms = 1000 * statistics.median(times["docx"])
    text_ms = 1000 * statistics.median(times["text"])
    print(
        f"file check ({folder.name}/essay.pdf, {len(raw) / 1024:.0f} KB, {found} sources, "
        f"1,000 documents stored), median of {rounds}: as PDF {pdf_ms:.1f} ms, as its text "
        f"{text_ms:.1f} ms; extraction (base64 and the worker included) is "
        f"{(pdf_ms - text_ms) / pdf_ms:.0%} of the file check"
    )
    print(
        f"the same as DOCX: {docx_ms:.1f} ms; extraction is {(docx_ms - text_ms) / docx_ms:.0%} "
        "of the DOCX check"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fixtures only, shorter timings")
    args = parser.parse_args()
    least = 0.2 if args.quick else 1.0
    folders = [FIXTURES]
    large = None if args.quick else _make_large()
    if large is not None:
        folders.append(large)
    bench_libraries(folders, least)
    bench_pool(FIXTURES, least)
    bench_check(large or FIXTURES, 5 if args.quick else 20)


if __name__ == "__main__":
    main()
