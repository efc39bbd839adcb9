"""app.api.routing: twins carry every field of their originals, the FastAPI internal it
reads (Dependant) still holds what it reads there, and a fast path answered in
Route.handle leaves a body it declined, and its exceptions, to FastAPI as before."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from pydantic import BaseModel

from app.api.deps import COLLECTION_PREFIX
from app.api.routing import Route, declared, twin

# APIRoute's own parameters, read from its signature here, not from app.api.routing.
PARAMETERS = [n for n in inspect.signature(APIRoute.__init__).parameters if n != "self"]
ADDED = {"path", "dependencies", "responses"}  # what a twin changes, on purpose


def _same_fields(original: APIRoute, copy: APIRoute) -> None:
    for name in PARAMETERS:
        if name not in ADDED:
            assert getattr(copy, name) == getattr(original, name), (original.path, name)
    assert copy.path == COLLECTION_PREFIX + original.path
    assert copy.dependencies[: len(original.dependencies)] == original.dependencies
    assert len(copy.dependencies) == len(original.dependencies) + 1
    assert set(original.responses) <= set(copy.responses)
    assert type(copy) is type(original)


def test_every_twin_carries_every_field_of_its_original(client: TestClient) -> None:
    """Each route under /collections/{collection} has every APIRoute field of the route
    it copies (the signature's, not a list), save its path, one more dependency and the
    collection's answers; and every data route has its twin."""
    routes = [r for r in client.app.router.routes if isinstance(r, APIRoute)]  # type: ignore[attr-defined]
    by_key = {(r.path, frozenset(r.methods or ())): r for r in routes}
    twins = [r for r in routes if r.path.startswith(COLLECTION_PREFIX + "/")]
    assert len(twins) >= 12
    for copy in twins:
        original = by_key[(copy.path[len(COLLECTION_PREFIX) :], frozenset(copy.methods or ()))]
        _same_fields(original, copy)


def test_a_twin_keeps_the_fields_a_hand_list_dropped() -> None:
    """operation_id, callbacks, response_model_exclude_none and the rest, set on a route,
    are set on its twin too."""
    callbacks = APIRouter()

    @callbacks.post("/hook")
    def hook() -> None: ...

    router = APIRouter(route_class=Route)

    @router.get(
        "/thing/{x}",
        operation_id="get_thing",
        callbacks=callbacks.routes,
        response_model_exclude_none=True,
        response_model_exclude={"secret"},
        response_model_by_alias=False,
        summary="a thing",
        deprecated=True,
        openapi_extra={"x-extra": 1},
    )
    def thing(x: str) -> dict[str, Any]:
        return {"x": x}

    (original,) = router.routes
    assert isinstance(original, APIRoute)
    _same_fields(original, twin(original))


class _Paging(BaseModel):
    page: int = 1
    per_page: int = 10


def test_fastapi_dependant_holds_the_query_parameters_routing_reads() -> None:
    """declared() finds a route's query parameters through FastAPI's Dependant: its
    own, an alias, a dependency's, and a query model's fields (the internal guarded)."""

    def dep(token: Annotated[str | None, Query()] = None) -> None: ...

    app = FastAPI()

    @app.get("/a/{p}", dependencies=[Depends(dep)])
    def a(
        p: str,
        q: int = 0,
        spelled: Annotated[int, Query(alias="sp-elled")] = 0,
        paging: Annotated[_Paging, Query()] = _Paging(),
    ) -> None: ...

    (route,) = [r for r in app.router.routes if isinstance(r, APIRoute)]
    assert declared(route.dependant) == {"q", "sp-elled", "token", "page", "per_page"}


def test_the_default_collection_is_one_resource(client: TestClient, collection: str) -> None:
    """GET /collection moved: a 308 to /collections/{default}, whose answer is the one
    description of the collection, with the defaults a query takes."""
    r = client.get("/collection", follow_redirects=False)
    assert r.status_code == 308
    assert r.headers["location"] == f"/collections/{collection}"
    followed = client.get("/collection")
    described = client.get(f"/collections/{collection}").json()
    assert followed.json()["parameters"] == described["parameters"]
    assert described["defaults"] == {
        "threshold": {"jaccard": described["parameters"]["threshold"], "containment": 0.0},
        "limit": 10,
        "max_limit": 1000,
    }


class _Body(BaseModel):
    text: str


def _fast_app(fast: Any) -> FastAPI:
    """A small app with one POST route whose route class has fast as its fast path."""
    from fastapi import Request
    from fastapi.responses import JSONResponse

    from app.api.routing import with_fast_path

    class Mapped(Exception):
        pass

    app = FastAPI()

    @app.exception_handler(Mapped)
    async def mapped(request: Request, exc: Mapped) -> JSONResponse:
        return JSONResponse({"mapped": str(exc)}, status_code=418)

    async def echo(body: _Body) -> dict[str, str]:
        return {"slow": body.text}

    app.router.add_api_route(
        "/echo", echo, methods=["POST"], route_class_override=with_fast_path(fast)
    )
    app.state.mapped = Mapped
    return app


def test_a_fast_path_that_read_the_body_and_declined_leaves_it_to_fastapi_whole() -> None:
    """The body the fast path read is given again to FastAPI's handler, byte for byte."""
    import asyncio
    import json

    seen: list[bytes] = []

    async def fast(request: Any) -> None:
        seen.append(await request.body())
        return None

    app = _fast_app(fast)
    text = "x" * 70_000 + "é"  # not ASCII
    body = json.dumps({"text": text}).encode()
    chunks = [body[:1000], body[1000:]]  # as a server may hand it over: in parts
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if chunks:
            part = chunks.pop(0)
            return {"type": "http.request", "body": part, "more_body": bool(chunks)}
        return {"type": "http.disconnect"}  # the client's body is all taken already

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/echo",
        "raw_path": b"/echo",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }

    async def run() -> None:
        async with app.router.lifespan_context(app):
            await app(scope, receive, send)

    asyncio.run(run())
    assert sent[0]["status"] == 200
    assert json.loads(b"".join(m.get("body", b"") for m in sent[1:])) == {"slow": text}
    assert seen == [body]


def test_an_exception_of_a_fast_path_reaches_the_app_s_handlers() -> None:
    """Answered in Route.handle, a fast path's exception still gets its mapped answer."""
    holder: dict[str, Any] = {}

    async def fast(request: Any) -> None:
        raise holder["app"].state.mapped("from the fast path")

    app = _fast_app(fast)
    holder["app"] = app
    with TestClient(app) as client:
        resp = client.post("/echo", json={"text": "a"})
        unknown = client.post("/echo?nope=1", json={"text": "a"})
    assert resp.status_code == 418 and resp.json() == {"mapped": "from the fast path"}
    assert unknown.status_code == 422 and "'nope'" in unknown.json()["detail"]
