"""Unknown query parameters are a 422 that names them, on every route.

What a route accepts is what it declares (its parameters and those of its
dependencies), read from FastAPI's own model of the route, so a route added later is
covered without a list to keep in step. A misspelt `?limt=5` is refused instead of
silently answered with the default.
"""

from __future__ import annotations

from urllib.parse import unquote_plus

from fastapi import FastAPI
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.problems import send_problem

_MARK = "_neardup_strict_query"


def unknown_names(query_string: bytes, allowed: frozenset[str]) -> list[str]:
    """The parameter names in query_string that are not in allowed, in order, once each."""
    unknown: list[str] = []
    for part in query_string.split(b"&"):
        raw = part.split(b"=", 1)[0]
        if not raw:
            continue
        name = raw.decode("utf-8", "replace")  # Edge has refused what is not UTF-8
        if b"%" in raw or b"+" in raw:
            name = unquote_plus(name)
        if name not in allowed and name not in unknown:
            unknown.append(name)
    return unknown


def _strict(inner: ASGIApp, allowed: frozenset[str]) -> ASGIApp:
    takes = ", ".join(sorted(allowed)) or "none"

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["query_string"]:
            unknown = unknown_names(scope["query_string"], allowed)
            if unknown:
                named = ", ".join(repr(n) for n in unknown)
                plural = "s" if len(unknown) > 1 else ""
                detail = f"unknown query parameter{plural} {named}; this route takes: {takes}"
                await send_problem(send, 422, "Invalid request", detail)
                return
        await inner(scope, receive, send)

    setattr(app, _MARK, True)
    return app


def declared(dependant: Dependant) -> frozenset[str]:
    """The query parameter names a route's dependant (and its dependencies) declares;
    a parameter that is a model (FastAPI's query parameter models) gives its fields."""
    names: set[str] = set()
    todo = [dependant]
    while todo:
        current = todo.pop()
        for param in current.query_params:
            model = param.field_info.annotation
            if isinstance(model, type) and issubclass(model, BaseModel):
                names.update(f.alias or n for n, f in model.model_fields.items())
            else:
                names.add(param.alias)
        todo.extend(current.dependencies)
    return frozenset(names)


def forbid_unknown_query(app: FastAPI) -> None:
    """Make every API route of app refuse query parameters it does not declare.

    Run once the routes are all in (at start-up); a route wrapped before is left as is.
    """
    for route in app.router.routes:
        if isinstance(route, APIRoute) and not getattr(route.app, _MARK, False):
            route.app = _strict(route.app, declared(route.dependant))
