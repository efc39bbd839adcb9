"""The CLI with files: PDF, DOCX and ODT files are ingested as one document each, named by
file, and a query takes a file's text."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.corpus import neardup_cmd
from support.pdfgen import pdf

DATA = Path(__file__).parent / "data" / "formats"


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*neardup_cmd(), *args], env=env, capture_output=True, timeout=300)


def test_ingest_and_query_files(tmp_path: Path) -> None:
    """A PDF, an ODT and an RTF file are stored under their file names and a broken PDF is
    skipped with its reason; a query with the DOCX of the same text finds all three."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["NEARDUP_DATA_DIR"] = str(tmp_path / "data")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes((DATA / "essay.pdf").read_bytes()[:3000])
    done = run(
        "ingest",
        "--quiet",
        str(DATA / "essay.pdf"),
        str(DATA / "essay.odt"),
        str(DATA / "essay.rtf"),
        str(broken),
        env=env,
    )
    assert done.returncode == 3, done.stderr  # done, with the broken file skipped
    assert b"ingested 3 documents" in done.stdout
    assert b"broken.pdf:1: skipped: the PDF is broken" in done.stderr
    answer = run("query", "--file", str(DATA / "essay.docx"), "--containment", "--json", env=env)
    assert answer.returncode == 0, answer.stderr
    found = {r["id"]: r["containment"] for r in json.loads(answer.stdout)["results"]}
    assert set(found) == {"essay.pdf", "essay.odt", "essay.rtf"} and min(found.values()) > 0.95
    bad = run("query", "--file", str(broken), env=env)
    assert bad.returncode == 2 and b"broken" in bad.stderr


def test_a_file_misnamed_or_empty_is_said_so_for_a_command_line(tmp_path: Path) -> None:
    """A DOCX named .pdf or .rtf, an ODT or RTF named .docx and a PDF named .odt are told
    to be renamed
    (the API's advice, a content_type, means nothing here), and an empty file is empty."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env["NEARDUP_DATA_DIR"] = str(tmp_path / "data")
    for real, named, said in (
        ("essay.docx", "a.pdf", b"name it *.docx"),
        ("essay.odt", "b.docx", b"name it *.odt"),
        ("essay.pdf", "c.odt", b"name it *.pdf"),
        ("essay.rtf", "d.docx", b"name it *.rtf"),
        ("essay.docx", "e.rtf", b"name it *.docx"),
    ):
        path = tmp_path / named
        path.write_bytes((DATA / real).read_bytes())
        done = run("query", "--file", str(path), "--url", "http://127.0.0.1:9", env=env)
        assert done.returncode == 2 and said in done.stderr, (named, done.stderr)
        assert b"content_type" not in done.stderr
    empty = tmp_path / "empty.pdf"
    empty.write_bytes(b"")
    done = run("query", "--file", str(empty), "--url", "http://127.0.0.1:9", env=env)
    assert done.returncode == 2 and b"the file is empty" in done.stderr, done.stderr


def test_the_help_names_every_format_ingest_reads() -> None:
    """`neardup --help` names each file format the tools read (RTF was left out)."""
    from app.index.formats import NAMES

    shown = subprocess.run([*neardup_cmd(), "--help"], capture_output=True, text=True, timeout=60)
    ingest = " ".join(shown.stdout.split("\n    ingest ", 1)[1].split("\n    query ")[0].split())
    assert all(name in ingest for name in NAMES.values()), ingest


def test_a_file_that_would_take_the_machine_is_read_within_the_service_limits(
    tmp_path: Path,
) -> None:
    """A 1 KB PDF whose two forms draw each other (read in the CLI's own process it took
    memory without end: an outside audit) is read in a worker within
    NEARDUP_EXTRACT_TIMEOUT and skipped saying why; the next file is stored."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEARDUP_")}
    env.update(NEARDUP_DATA_DIR=str(tmp_path / "data"), NEARDUP_EXTRACT_TIMEOUT="4")
    hostile = tmp_path / "forms.pdf"
    page = b"BT /F1 12 Tf 72 700 Td (mutual forms) Tj ET /X1 Do"
    hostile.write_bytes(pdf([page], {"X1": b"/X2 Do /X2 Do", "X2": b"/X1 Do /X1 Do"}))
    done = run("ingest", "--quiet", str(hostile), str(DATA / "essay.pdf"), env=env)
    assert done.returncode == 3, done.stderr
    assert b"forms.pdf:1: skipped: the PDF took longer than 4 s" in done.stderr
    assert b"ingested 1 documents" in done.stdout
    asked = run("query", "--file", str(hostile), env=env)
    said = b"forms.pdf: the PDF took longer than 4 s"
    assert asked.returncode == 2 and said in asked.stderr, asked.stderr
