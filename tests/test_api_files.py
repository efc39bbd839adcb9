"""Files in over the API: PDF, DOCX, ODT and RTF bodies find what their text finds, offsets
slice the returned text, and bad files are 422s naming what is wrong."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support import oracle

from app.index.formats import DOCX, ODT, PDF, RTF

DATA = Path(__file__).parent / "data" / "formats"
ESSAY = (DATA / "essay.txt").read_text(encoding="utf-8").split("\n\n")


def _b64(name: str) -> str:
    return base64.b64encode((DATA / name).read_bytes()).decode()


def _run_of(words: list[str], source: list[str]) -> bool:
    """Whether words are a contiguous run of source's words."""
    n = len(words)
    return any(source[i : i + n] == words for i in range(len(source) - n + 1))


@pytest.fixture
def sources(client: TestClient) -> dict[str, str]:
    """Three of the essay's paragraphs stored as documents, and an unrelated one."""
    docs = {"a": ESSAY[1].strip(), "b": ESSAY[4].strip(), "c": ESSAY[6].strip()}
    docs["other"] = "A text about something else entirely, with words of its own here."
    body = {"documents": [{"id": k, "text": v} for k, v in docs.items()]}
    assert client.post("/documents/batch", json=body).status_code == 200
    return docs


def _copied(answer: dict) -> dict[str, list[list[str]]]:
    """Each source's passages as the words of the returned text they slice."""
    text = answer["text"]
    return {
        r["id"]: [oracle.words(text[p["query_start"] : p["query_end"]]) for p in r["passages"]]
        for r in answer["results"]
    }


def test_pdf_docx_odt_and_rtf_find_the_passages_their_text_finds(
    client: TestClient, sources: dict[str, str]
) -> None:
    """The essay as text, PDF, DOCX, ODT and RTF finds the same sources with the same copied
    words, and every passage's offsets slice the returned text to the source's words."""
    query = {"measure": "containment", "evidence": True, "return_text": True}
    as_text = client.post("/similar", json={"text": "\n\n".join(ESSAY), **query}).json()
    expected = _copied(as_text)
    assert set(expected) == {"a", "b", "c"}
    for doc_id, passages in expected.items():
        source = oracle.words(sources[doc_id])
        assert all(len(p) >= 8 and _run_of(p, source) for p in passages), doc_id
        # The whole source was copied: its words are all in its passages.
        assert sum(map(len, passages)) >= len(source)
    files = (("essay.pdf", PDF), ("essay.docx", DOCX), ("essay.odt", ODT), ("essay.rtf", RTF))
    for name, kind in files:
        r = client.post("/similar", json={"content_type": kind, "data": _b64(name), **query})
        assert r.status_code == 200, r.text
        assert _copied(r.json()) == expected, name


def test_a_pdf_document_is_found_by_its_text(client: TestClient) -> None:
    """A PDF ingested with POST /documents (and a DOCX with PUT) is stored as its text:
    a query with a paragraph of it finds it, and a batch item takes a file too."""
    r = client.post(
        "/documents", json={"id": "paper", "content_type": PDF, "data": _b64("essay.pdf")}
    )
    assert r.status_code == 201, r.text
    shingles = r.json()["shingles"]
    as_text = client.post("/documents", json={"id": "plain", "text": "\n\n".join(ESSAY)})
    assert abs(shingles - as_text.json()["shingles"]) <= 5  # a hyphen kept or joined
    assert client.delete("/documents/plain").status_code == 204
    r = client.put("/documents/word", json={"content_type": DOCX, "data": _b64("essay.docx")})
    assert r.status_code == 201, r.text
    batch = {"documents": [{"id": "cols", "content_type": PDF, "data": _b64("columns.pdf")}]}
    assert client.post("/documents/batch", json=batch).json()["created"] == 1
    query = {"text": ESSAY[3], "measure": "containment"}
    found = {x["id"] for x in client.post("/similar", json=query).json()["results"]}
    assert found == {"paper", "word"}
    columns = (DATA / "columns.txt").read_text(encoding="utf-8").split("\n\n")
    query = {"text": columns[2], "measure": "containment"}
    assert [x["id"] for x in client.post("/similar", json=query).json()["results"]] == ["cols"]


def test_bad_files_are_422_naming_the_problem(client: TestClient) -> None:
    """Bad base64, a broken PDF, an encrypted PDF, a PDF without text, a truncated DOCX
    and text sent with a file type are 422s on every route; nothing is stored."""
    essay = (DATA / "essay.pdf").read_bytes()
    docx = (DATA / "essay.docx").read_bytes()
    from support.pdfgen import SCAN, pdf

    cases = [
        ({"content_type": PDF, "data": "%%% not base64 %%%"}, "not base64"),
        ({"content_type": PDF, "data": base64.b64encode(essay[:4000]).decode()}, "broken"),
        ({"content_type": PDF, "data": _b64("encrypted.pdf")}, "encrypted"),
        ({"content_type": PDF, "data": base64.b64encode(pdf([SCAN])).decode()}, "OCR it first"),
        ({"content_type": DOCX, "data": base64.b64encode(docx[:3000]).decode()}, "zip"),
        ({"content_type": ODT, "text": "plain words"}, "data"),
        ({"text": "plain words", "data": "aGVsbG8="}, "data"),
    ]
    for body, reason in cases:
        for method, path, sent in (
            ("post", "/similar", body),
            ("post", "/documents", {"id": "bad", **body}),
            ("put", "/documents/bad", body),
        ):
            r = client.request(method, path, json=sent)
            assert r.status_code == 422, (path, reason, r.text)
            assert reason in r.text, (path, reason, r.text)
        # In a batch a body that does not validate is the request's 422, and a file that
        # cannot be read its item's error, the other items stored.
        batch = {"documents": [{"id": "bad", **body}, {"id": "fine", "text": ESSAY[0]}]}
        r = client.post("/documents/batch", json=batch)
        assert reason in r.text, (reason, r.text)
        if r.status_code == 200:
            bad, fine = r.json()["results"]
            assert bad["status"] == "error" and reason in bad["error"], r.text
            assert fine["status"] in ("created", "updated"), r.text
        else:
            assert r.status_code == 422 and reason in ("not base64", "data"), (reason, r.text)
    assert client.get("/documents/bad").status_code == 404


def test_a_file_over_the_time_limit_costs_one_request(settings) -> None:  # type: ignore[no-untyped-def]
    """With NEARDUP_EXTRACT_TIMEOUT shorter than a file takes, the file is a 422 naming the
    limit, and the service answers the next requests (a text, and the file again)."""
    from app.api.app import create_app

    slow = settings.model_copy(update={"extract_timeout": 0.0001, "extract_workers": 1})
    with TestClient(create_app(slow)) as c:
        body = {"content_type": PDF, "data": _b64("essay.pdf")}
        r = c.post("/similar", json=body)
        assert r.status_code == 422 and "took longer than" in r.json()["detail"], r.text
        assert c.post("/similar", json={"text": ESSAY[0]}).status_code == 200
        assert c.post("/similar", json=body).status_code == 422
    with TestClient(create_app(settings)) as c:  # the default limit again
        assert (
            c.post("/similar", json={"content_type": PDF, "data": _b64("essay.pdf")}).status_code
            == 200
        )


def test_content_type_is_matched_as_a_media_type(client: TestClient) -> None:
    """A content_type in capitals or with parameters (a charset) is the media type it
    names, and RTF's other names are RTF, for a file and for a page, on every route."""
    page = "<html><body><main><p>" + ESSAY[1] + "</p></main></body></html>"
    bodies = [
        {"content_type": "APPLICATION/PDF", "data": _b64("essay.pdf")},
        {"content_type": "application/pdf; charset=binary", "data": _b64("essay.pdf")},
        {"content_type": DOCX.upper() + " ; foo=bar", "data": _b64("essay.docx")},
        {"content_type": "text/rtf", "data": _b64("essay.rtf")},
        {"content_type": "Application/X-RTF", "data": _b64("essay.rtf")},
        {"content_type": "text/html; charset=utf-8", "text": page},
        {"content_type": "Text/Plain; charset=UTF-8", "text": ESSAY[1]},
    ]
    for body in bodies:
        r = client.post("/similar", json={**body, "return_text": True})
        assert r.status_code == 200, (body["content_type"], r.text)
        r = client.put("/documents/typed", json=body)
        assert r.status_code in (200, 201), (body["content_type"], r.text)


def test_a_data_url_is_refused_saying_to_strip_its_prefix(client: TestClient) -> None:
    """Base64 sent as a data: URL is a 422 that says to send only what follows the comma."""
    body = {"content_type": PDF, "data": "data:application/pdf;base64," + _b64("essay.pdf")}
    r = client.post("/similar", json=body)
    assert r.status_code == 422 and "strip the 'data:...;base64,' prefix" in r.text, r.text


def _docx(text: str) -> str:
    """A minimal DOCX of one paragraph, base64."""
    import io
    import zipfile
    from xml.sax.saxutils import escape

    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    run = f"<w:p><w:r><w:t>{escape(text)}</w:t></w:r></w:p>"
    body = f'<w:document xmlns:w="{w}"><w:body>{run}</w:body></w:document>'
    types = (
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
        'officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("[Content_Types].xml", types)
        z.writestr("word/document.xml", body)
    return base64.b64encode(out.getvalue()).decode()


def test_a_files_text_is_bounded_in_bytes_as_a_text_is(settings) -> None:  # type: ignore[no-untyped-def]
    """NEARDUP_MAX_TEXT_BYTES bounds a file's text in bytes of UTF-8 with the title a text
    gets ("Text too large"): 101 ASCII letters and 59 two-byte letters (118 bytes) alike
    (the worker counted characters, and named them so under another title); 50 two-byte
    letters (100 bytes) pass."""
    from app.api.app import create_app

    small = settings.model_copy(update={"max_text_bytes": 100})
    with TestClient(create_app(small)) as c:
        for text in ("a" * 101, "é" * 59):
            r = c.post("/similar", json={"content_type": DOCX, "data": _docx(text)})
            assert r.status_code == 422 and r.json()["title"] == "Text too large", r.text
            assert "100 bytes of UTF-8" in r.json()["detail"]
        sent = c.post("/similar", json={"text": "é" * 59})
        assert sent.status_code == 422 and sent.json()["title"] == "Text too large"
        fits = c.post("/similar", json={"content_type": DOCX, "data": _docx("é" * 50)})
        assert fits.status_code == 200, fits.text
