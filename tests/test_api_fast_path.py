"""The fast paths of GET /similar/{id} and POST /similar answer exactly as FastAPI's own
parameter and body handling does.

app.api.similar reads plainly valid ids, thresholds, limits and bodies itself and leaves
every other request to FastAPI. Each request here is made twice, once as it is served
and once with the fast path switched off, and the two answers must be the same bytes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from urllib.parse import quote, urlencode

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.settings import loaded_settings

BASE = (
    "Officials in the northern province said on Tuesday that heavy rain had flooded "
    "dozens of villages, cutting roads and forcing thousands of families to leave their "
    "homes while rescue teams searched for people reported missing near the river"
)
IDS = ["base", "near", "far", "a/b", "line break", "ünï", "x" * 512]


@pytest.fixture(scope="module")
def served(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    from app.api.app import create_app

    settings = loaded_settings(
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


def _twice(name: str, ask: Callable[[], object]) -> tuple[tuple, tuple, bool]:
    """(answer served, answer with the fast path `name` off, whether the fast path took it)."""
    import inspect

    from app.api.routes import similar

    real = getattr(similar, name)
    taken: list[bool] = []
    if inspect.iscoroutinefunction(real):

        async def spy(request):  # type: ignore[no-untyped-def]
            args = await real(request)
            taken.append(args is not None)
            return args

        async def off(request):  # type: ignore[no-untyped-def]
            return None
    else:

        def spy(request):  # type: ignore[no-untyped-def]
            args = real(request)
            taken.append(args is not None)
            return args

        def off(request):  # type: ignore[no-untyped-def]
            return None

    def answer() -> tuple:
        resp = ask()
        return resp.status_code, resp.headers["content-type"], resp.content  # type: ignore[attr-defined]

    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(similar, name, spy)
        fast = answer()
        mp.setattr(similar, name, off)
        slow = answer()
    finally:
        mp.undo()
    return fast, slow, taken == [True]


def _both(client: TestClient, url: str) -> tuple[tuple, tuple, bool]:
    return _twice("_stored_args", lambda: client.get(url))


def _both_post(
    client: TestClient, body: bytes, content_type: str | None = "application/json"
) -> tuple[tuple, tuple, bool]:
    headers = {} if content_type is None else {"content-type": content_type}
    return _twice("_text_args", lambda: client.post("/similar", content=body, headers=headers))


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
        ([("threshold", "0.2"), ("threshold", "0.9")], False),  # a repeat: 422 before either
        ([("other", "x")], False),  # an unknown parameter: 422 before either path
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
        ([("limit", "x"), ("limit", "3")], False),
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
    """Ids with '/', a space, non-ASCII, of 512 bytes, unknown, and over 512 bytes of
    UTF-8 (257 two-byte characters), get the same answers on both paths."""
    got, expected, taken = _both(served, _url(doc_id, [("limit", "5")]))
    assert got == expected
    assert taken == (len(doc_id.encode()) <= 512)


_VALUES = st.one_of(
    st.sampled_from(["0.5", "0.75", "1", "1.00", "0.999", "10", "7", "1000", "1001", "0"]),
    st.from_regex(r"\A[0-9.eE+\- _]{0,8}\Z"),
    st.text(max_size=6),
)


# Generated requests: the same 150 every run, each one a pair of real requests.
_GENERATED = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)


@_GENERATED
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


def _json(**fields: object) -> bytes:
    return json.dumps(fields).encode()


@pytest.mark.parametrize(
    ("body", "content_type", "fast"),
    [
        (_json(text=BASE), "application/json", True),
        (_json(text=BASE, threshold=0.7, limit=3), "application/json", True),
        (_json(text=BASE, threshold=None, limit=1000), "application/json", True),
        (_json(text=BASE, threshold=1.0), "application/json", True),
        (_json(text=BASE, threshold=0.3), "application/json", True),  # below the index's: 422
        (_json(text="?!"), "application/json", True),  # no words: 422
        (b'{"text": "a b c d", "text": "' + BASE.encode() + b'"}', "application/json", True),
        (_json(text=BASE, threshold=1), "application/json", False),  # an int
        (_json(text=BASE, threshold=0.0), "application/json", False),
        (_json(text=BASE, threshold=1.5), "application/json", False),
        (_json(text=BASE, threshold=10**22), "application/json", False),
        (_json(text=BASE, limit=5.0), "application/json", False),
        (_json(text=BASE, limit=True), "application/json", False),
        (_json(text=BASE, limit=0), "application/json", False),
        (_json(text=BASE, limit=None), "application/json", False),
        (_json(text=BASE, other=1), "application/json", False),
        (_json(text=5), "application/json", False),
        (_json(), "application/json", False),
        (b"[]", "application/json", False),
        (b"", "application/json", False),
        (b"not json", "application/json", False),
        (b'{"text": "\\ud800 x y z"}', "application/json", False),  # a lone surrogate
        (b'{"text": "NaN", "threshold": NaN}', "application/json", False),
        (b"\xef\xbb\xbf" + _json(text=BASE), "application/json", False),  # a BOM
        (_json(text=BASE), "application/json; charset=utf-8", False),
        (_json(text=BASE), "application/merge-patch+json", False),
        (_json(text=BASE), "text/plain", False),
        (_json(text=BASE), None, False),
    ],
)
def test_post_fast_and_validated_answers_are_the_same(
    served: TestClient, body: bytes, content_type: str | None, fast: bool
) -> None:
    """Plain bodies take the fast path; every answer is the same as FastAPI's."""
    got, expected, taken = _both_post(served, body, content_type)
    assert got == expected, body
    assert taken == fast, body


_FIELD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=2000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 0.9, 1.0, 0.05]),
    st.text(max_size=4),
    st.just(BASE),
)


@_GENERATED
@given(
    body=st.dictionaries(st.sampled_from(["text", "threshold", "limit", "other"]), _FIELD),
    text=st.sampled_from([BASE, BASE[:60], "?!"]),
)
def test_any_body_is_answered_the_same(served: TestClient, body: dict, text: str) -> None:
    """Generated bodies, valid and not: the same status, content type and body."""
    body.setdefault("text", text)
    got, expected, _ = _both_post(served, json.dumps(body).encode())
    assert got == expected
