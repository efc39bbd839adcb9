"""GET /similar/{id}'s fast path answers exactly as FastAPI's own parameter handling does.

app.api.similar reads plainly valid ids, thresholds and limits itself and leaves every
other request to FastAPI. Each request here is made twice, once as it is served and
once with the fast path switched off, and the two answers must be the same bytes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from urllib.parse import quote, urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BASE = (
    "Officials in the northern province said on Tuesday that heavy rain had flooded "
    "dozens of villages, cutting roads and forcing thousands of families to leave their "
    "homes while rescue teams searched for people reported missing near the river"
)
IDS = ["base", "near", "far", "a/b", "line\nbreak", "ünï", "x" * 512]


@pytest.fixture(scope="module")
def served(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from app.config import load_settings
    from app.main import create_app

    settings = load_settings(
        redis_url=redis_url,
        collection=f"fast{os.getpid()}",
        data_dir=tmp_path_factory.mktemp("fast"),
    )
    with TestClient(create_app(settings)) as client:
        texts = [BASE, BASE + " today", BASE.replace("rain", "snow") + " again", BASE[:120]]
        docs = [{"id": i, "text": texts[n % len(texts)]} for n, i in enumerate(IDS)]
        assert client.post("/documents/batch", json={"documents": docs}).status_code == 200
        yield client
        for i in IDS:
            client.delete("/documents/" + quote(i, safe=""))


def _both(client: TestClient, url: str) -> tuple[tuple, tuple, bool]:
    """(answer served, answer with the fast path off, whether the fast path took it)."""
    from app.api import similar

    real = similar._stored_args
    taken: list[bool] = []

    def spy(request):  # type: ignore[no-untyped-def]
        args = real(request)
        taken.append(args is not None)
        return args

    def answer(resp) -> tuple:  # type: ignore[no-untyped-def]
        return resp.status_code, resp.headers["content-type"], resp.content

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(similar, "_stored_args", spy)
        fast = answer(client.get(url))
        mp.setattr(similar, "_stored_args", lambda request: None)
        slow = answer(client.get(url))
    finally:
        mp.undo()
    return fast, slow, taken == [True]


def _url(doc_id: str, query: list[tuple[str, str]]) -> str:
    url = "/similar/" + quote(doc_id, safe="")
    return f"{url}?{urlencode(query)}" if query else url


@pytest.mark.parametrize(
    ("query", "fast"),
    [
        ([], True),
        ([("threshold", "0.7")], True),
        ([("threshold", "1")], True),
        ([("threshold", "1.0")], True),
        ([("threshold", "0.55"), ("limit", "2")], True),
        ([("limit", "1000")], True),
        ([("limit", "1")], True),
        ([("threshold", "0.2"), ("threshold", "0.9")], True),  # the last one counts
        ([("other", "x")], True),
        ([("threshold", "0.3")], True),  # valid for the schema, below the index's: 422
        ([("threshold", "0")], False),
        ([("threshold", "0.0")], False),
        ([("threshold", "1.5")], False),
        ([("threshold", ".5")], False),
        ([("threshold", "5e-1")], False),
        ([("threshold", " 0.5")], False),
        ([("threshold", "")], False),
        ([("threshold", "nan")], False),
        ([("limit", "0")], False),
        ([("limit", "1001")], False),
        ([("limit", "05")], False),
        ([("limit", "5.0")], False),
        ([("limit", "")], False),
        ([("limit", "x"), ("limit", "3")], True),
        ([("limit", "3"), ("limit", "x")], False),
    ],
)
def test_fast_and_validated_answers_are_the_same(
    served: TestClient, query: list[tuple[str, str]], fast: bool
) -> None:
    """Plain parameters take the fast path; every answer is the same as FastAPI's."""
    for doc_id in ("base", "a/b", "missing"):
        got, expected, taken = _both(served, _url(doc_id, query))
        assert got == expected, (doc_id, query)
        assert taken == fast, (doc_id, query)


@pytest.mark.parametrize("doc_id", [*IDS, "é" * 257, "x" * 513, "nope"])
def test_ids_answer_the_same(served: TestClient, doc_id: str) -> None:
    """Ids with '/', a newline, non-ASCII, of 512 bytes, unknown, and over 512 bytes of
    UTF-8 (257 two-byte characters), get the same answers on both paths."""
    got, expected, taken = _both(served, _url(doc_id, [("limit", "5")]))
    assert got == expected
    assert taken == (len(doc_id.encode()) <= 512)


_VALUES = st.one_of(
    st.sampled_from(["0.5", "0.75", "1", "1.00", "0.999", "10", "7", "1000", "1001", "0"]),
    st.from_regex(r"\A[0-9.eE+\- _]{0,8}\Z"),
    st.text(max_size=6),
)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(
    doc_id=st.sampled_from(["base", "far", "missing"]),
    query=st.lists(
        st.tuples(st.sampled_from(["threshold", "limit", "other"]), _VALUES), max_size=3
    ),
)
def test_any_query_is_answered_the_same(
    served: TestClient, doc_id: str, query: list[tuple[str, str]]
) -> None:
    """Generated queries, valid and not: the same status, content type and body."""
    got, expected, _ = _both(served, _url(doc_id, query))
    assert got == expected
