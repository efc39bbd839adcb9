"""Every adaptation of FastAPI's and Starlette's routing, in one module.

Each route of the service is a `Route`, FastAPI's APIRoute subclassed through its
public hooks (a router's route_class; `get_route_handler`, `matches` and `handle`,
the methods a route class overrides):

- `matches` refuses a path outside the route's literal prefix with one string check
  before its regex: the router asks the routes in order, and their own matching cost a
  GET /similar/{id} a dozen full checks before its own;
- `get_route_handler` refuses query parameters the route does not declare, that are
  given twice, or whole numbers not written in digits (422 naming them), read from
  FastAPI's model of the route, so a route added later is covered;
- `handle` answers a method the route lacks with a 405 whose Allow lists every method
  of every route of the path (the router asks only the first route that matches it);
  then a route class made by `with_fast_path` may answer a plain request itself,
  before FastAPI's request handling (whose per-request cost it is there to save);
- `twins` copies routes under /collections/{name}, every APIRoute field carried over.

The one FastAPI internal read is `Dependant` (its query_params and dependencies);
ARCHITECTURE.md lists it and tests/test_dependencies.py guards it.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from types import UnionType
from typing import Annotated, Any, ClassVar, Union, get_args, get_origin
from urllib.parse import unquote_plus

from fastapi import Depends, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.telemetry import get_telemetry_data
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.routing import BaseRoute, Match
from starlette.routing import Route as StarletteRoute
from starlette.types import Message, Receive, Scope, Send

from app.api.deps import COLLECTION_PREFIX, collection_path
from app.api.problems import problem
from app.api.replies import Problem

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
FastPath = Callable[[Request], Awaitable[Response | None]]


def literal_prefix(path: str) -> str:
    """The part of a route's path before its first parameter: every path it matches
    starts with it."""
    return path.split("{", 1)[0]


def _decoded(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")  # Edge has refused what is not UTF-8
    return unquote_plus(text) if b"%" in raw or b"+" in raw else text


def query_pairs(query_string: bytes) -> list[tuple[str, str]]:
    """The (name, value) of each parameter in query_string, in order, as often as given
    (a name without "=" has the value ""; "=x" has the name "", which no route takes)."""
    pairs = []
    for part in query_string.split(b"&"):
        raw, _, value = part.partition(b"=")
        if part:  # an empty part ("a=1&&b=2", a trailing "&") is no parameter
            pairs.append((_decoded(raw), _decoded(value)))
    return pairs


def unknown_names(pairs: list[tuple[str, str]], allowed: frozenset[str]) -> list[str]:
    """The parameter names (of query_pairs) not in allowed, in order, once each."""
    return list(dict.fromkeys(n for n, _ in pairs if n not in allowed))


def repeated_names(pairs: list[tuple[str, str]]) -> list[str]:
    """The parameter names (of query_pairs) given more than once, in order, once each (no
    route takes a list: a repeat is a client's mistake, and the last one won unseen)."""
    names = [n for n, _ in pairs]
    return list(dict.fromkeys(n for i, n in enumerate(names) if n in names[:i]))


# How a whole-number query parameter is written: digits, a minus at most (pydantic would
# also read 1_0, +5, " 5" and 10.0, which a client means as something else or not at all).
_WHOLE = re.compile(r"-?[0-9]+")


def _whole(annotation: Any) -> bool:
    """Whether a parameter's annotation is int, or int | None (Annotated or not)."""
    if annotation is int:
        return True
    if get_origin(annotation) is Annotated:
        return _whole(get_args(annotation)[0])
    if get_origin(annotation) not in (Union, UnionType):
        return False
    kinds = [a for a in get_args(annotation) if a is not type(None)]
    return bool(kinds) and all(_whole(a) for a in kinds)


def whole_numbers(dependant: Dependant) -> frozenset[str]:
    """The query parameter names (of those declared) whose values are whole numbers."""
    return frozenset(name for name, kind in _query_fields(dependant) if _whole(kind))


def loose_numbers(pairs: list[tuple[str, str]], names: frozenset[str]) -> list[tuple[str, str]]:
    """(name, value) of each whole-number parameter (of query_pairs) not written in digits."""
    return [(n, v) for n, v in pairs if n in names and not _WHOLE.fullmatch(v)]


def _query_fields(dependant: Dependant) -> Iterable[tuple[str, Any]]:
    """(name, annotation) of each query parameter a route's dependant (and its
    dependencies) declares; a parameter that is a model (FastAPI's query parameter
    models) gives its fields."""
    todo = [dependant]
    while todo:
        current = todo.pop()
        for param in current.query_params:
            model = param.field_info.annotation
            if isinstance(model, type) and issubclass(model, BaseModel):
                for n, f in model.model_fields.items():
                    yield f.alias or n, f.annotation
            else:
                yield param.alias, model
        todo.extend(current.dependencies)


def declared(dependant: Dependant) -> frozenset[str]:
    """The query parameter names a route declares (_query_fields)."""
    return frozenset(name for name, _ in _query_fields(dependant))


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """Every method the resource at the path of scope supports, sorted (RFC 9110: a 405's
    Allow lists them all, whichever route the router tried first).

    The resource is named by the most specific of the paths that match: the one with the
    fewest parameters, as OpenAPI matches a concrete path before a templated one. So
    /documents/batch is the batch resource (POST), not a document named "batch"."""
    by_params: dict[int, set[str]] = {}
    for route in routes:
        # matches: FULL or PARTIAL once the path matches, whatever the method.
        if (
            isinstance(route, StarletteRoute)
            and route.methods
            and route.matches(scope)[0] != Match.NONE
        ):
            by_params.setdefault(len(route.param_convertors), set()).update(route.methods)
    methods = by_params[min(by_params)] if by_params else set()
    if "GET" in methods:
        methods.add("HEAD")  # app.api.edge answers HEAD for every GET route
    return sorted(methods)


class Route(APIRoute):
    """An APIRoute with the service's rules (see the module docstring)."""

    fast: ClassVar[FastPath | None] = None
    # Whether the route takes any query string (PageRoute), not only what it declares.
    open_query: ClassVar[bool] = False
    refused: Callable[[bytes], Response | None]

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        prefix = literal_prefix(self.path)
        # What the quick refusal rests on, checked rather than assumed: the regex the
        # route matches with begins with exactly this prefix (Starlette's compile_path
        # escapes the literal part verbatim).
        fits = self.path_regex.pattern.startswith("^" + re.escape(prefix))
        self.prefix = prefix if fits else ""

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        # With a root_path the route sees the path without it: left to APIRoute.
        if (
            self.prefix
            and not scope["path"].startswith(self.prefix)
            and scope["type"] == "http"
            and not scope.get("root_path")
        ):
            return Match.NONE, {}
        return super().matches(scope)

    def get_route_handler(self) -> Handler:
        full = super().get_route_handler()
        allowed = declared(self.dependant)
        numbers = whole_numbers(self.dependant)
        takes = ", ".join(sorted(allowed)) or "none"

        def refused(query: bytes) -> Response | None:
            """The 422 for query parameters the route does not declare, that are given
            twice, or whole numbers not in digits; or None."""
            if not query or self.open_query:
                return None
            pairs = query_pairs(query)  # read once for the three rules
            unknown = unknown_names(pairs, allowed)
            if unknown:
                named = ", ".join(repr(n) for n in unknown)
                plural = "s" if len(unknown) > 1 else ""
                detail = f"unknown query parameter{plural} {named}; this route takes: {takes}"
                return problem(422, "Invalid request", detail, field=unknown[0])
            repeated = repeated_names(pairs)
            if repeated:
                named = ", ".join(repr(n) for n in repeated)
                detail = f"query parameter {named} given more than once: give each once"
                return problem(422, "Invalid request", detail, field=repeated[0])
            loose = loose_numbers(pairs, numbers) if numbers else []
            if loose:
                name, value = loose[0]
                detail = f"query parameter {name!r} must be a whole number in digits, got {value!r}"
                return problem(422, "Invalid request", detail, field=name)
            return None

        self.refused = refused

        async def handler(request: Request) -> Response:
            answer = refused(request.scope["query_string"])
            return answer if answer is not None else await full(request)

        return handler

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.methods and scope["method"] not in self.methods:
            router = scope.get("router") or scope["app"].router
            allow = ", ".join(allowed_methods(router.routes, scope))
            raise HTTPException(405, headers={"Allow": allow})
        fast = type(self).fast
        # FastAPI's OpenTelemetry instrumentation, when on, sees every request whole.
        if fast is not None and get_telemetry_data() is None:
            # Answered here, not inside FastAPI's request_response: its two exit stacks
            # and exception wrapper cost a plain request more than the fast path saves
            # elsewhere. An exception goes on to the app's ExceptionMiddleware, which
            # maps it with the same handlers.
            taken: list[Message] = []

            async def recorded() -> Message:
                message = await receive()
                taken.append(message)
                return message

            answer = self.refused(scope["query_string"])
            if answer is None:
                answer = await fast(Request(scope, recorded, send))
            if answer is not None:
                await answer(scope, receive, send)
                return
            if taken:  # the body the fast path read, given again to FastAPI's handler
                receive = _replay(taken, receive)
        await super().handle(scope, receive, send)


def _replay(taken: list[Message], receive: Receive) -> Receive:
    """receive, after the messages already taken from it are given again."""
    pending = iter(taken)

    async def replay() -> Message:
        for message in pending:
            return message
        return await receive()

    return replay


def with_fast_path(fast: FastPath) -> type[Route]:
    """A Route class whose handler first lets fast answer a request (fast returns None
    to leave it to FastAPI's own handler, which validates and answers as always)."""
    return type("FastPathRoute", (Route,), {"fast": staticmethod(fast)})


# What a twin can answer besides its route's own answers (app.index.collections).
COLLECTION_ANSWERS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such collection, or no such document"},
    409: {"model": Problem, "description": "the collection is being deleted"},
}
# APIRoute's own parameters, each also an attribute of the same name: every one is
# carried to a twin (tests/test_api_routing.py holds each twin to its original).
ROUTE_FIELDS = tuple(
    n for n in inspect.signature(APIRoute.__init__).parameters if n not in ("self", "path")
)


def twin(route: APIRoute) -> APIRoute:
    """route again under COLLECTION_PREFIX: the same handler and declarations, plus a
    dependency that puts the prefix's parameter in the schema (app.api.deps.get_index
    reads the name from the path) and the answers a collection adds."""
    fields = {name: getattr(route, name) for name in ROUTE_FIELDS}
    fields["dependencies"] = [*route.dependencies, Depends(collection_path)]
    fields["responses"] = {**route.responses, **COLLECTION_ANSWERS}
    return type(route)(COLLECTION_PREFIX + route.path, **fields)


def twins(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """A twin of each API route. They are real routes of the app, not an included
    router (FastAPI resolves those lazily), so every rule of a route holds for its twin."""
    return [twin(r) for r in routes if isinstance(r, APIRoute)]


class PageRoute(Route):
    """A route of the report page: its query string is the page's own (?source=ID, and
    whatever a mail or chat tool appends to a link), read by its script, not the API."""

    open_query = True
