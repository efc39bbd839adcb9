"""Errors as application/problem+json (RFC 9457), one place for all routes."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Send

from app.api.replies import Problem
from app.core import errors
from app.index.ids import MAX_ID_BYTES

PROBLEM = "application/problem+json"
RETRY_AFTER_S = 1
RETRY_AFTER = {"Retry-After": str(RETRY_AFTER_S)}


class ProblemResponse(JSONResponse):
    """application/problem+json, rendered with orjson."""

    media_type = PROBLEM

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def _body(
    status: int, title: str, detail: str, field: str = "request", **extra: Any
) -> dict[str, Any]:
    """A problem's JSON; a 422 always lists its refusals (errors: [{field, message}]),
    one naming `field` (where in the request: a parameter, "body", "path"...) when the
    refusal is not a schema's field by field."""
    if status == 422 and "errors" not in extra:
        extra["errors"] = [{"field": field, "message": detail}]
    return {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}


def problem(
    status: int,
    title: str,
    detail: str,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> ProblemResponse:
    """A problem+json response."""
    return ProblemResponse(
        _body(status, title, detail, **extra), status_code=status, headers=headers
    )


async def send_problem(
    send: Send,
    status: int,
    title: str,
    detail: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    field: str = "request",
) -> None:
    """A problem+json answer sent straight from ASGI middleware, before any route runs."""
    body = orjson.dumps(_body(status, title, detail, field))
    start = [(b"content-type", PROBLEM.encode()), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": body})


def _where(error: dict[str, Any], placed: bool = False) -> str:
    """Where a refusal is: the field or parameter as the client wrote it, or with where
    it was looked for first (query.threshold) when placed."""
    loc = tuple(error.get("loc", ()))
    # A model's validator that refused one of its fields names it (schemas.FieldError).
    field = getattr((error.get("ctx") or {}).get("error"), "field", None)
    if isinstance(field, str) and field not in ("request", "body") and loc[-1:] != (field,):
        loc = (*loc, field)
    # A parameter is named as the client wrote it (limit, doc_id), not where FastAPI
    # looked for it (query.limit): the same name a refusal of its value by the index
    # gives; "body", "query" or "path" alone when the refusal is of the whole.
    if not placed and len(loc) > 1 and loc[0] in ("body", "query", "path", "header", "cookie"):
        loc = loc[1:]
    return ".".join(str(p) for p in loc) or "body"


def _message(error: dict[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown field"
    return str(error.get("msg", "invalid")).removeprefix("Value error, ")


async def _validation(_: Request, exc: RequestValidationError) -> ProblemResponse:
    found = exc.errors()
    named = [_where(e) for e in found]
    # A query parameter and a body field of one name both refused: each keeps where it
    # was (query.threshold, body.threshold), or the two would read as one.
    places: dict[str, set[object]] = {}
    for name, e in zip(named, found, strict=True):
        places.setdefault(name, set()).add(tuple(e.get("loc", ()))[:1])
    errors = [
        {"field": _where(e, placed=True) if len(places[name]) > 1 else name, "message": _message(e)}
        for name, e in zip(named, found, strict=True)
    ]
    detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return problem(422, "Invalid request", detail, errors=errors)


# Routes whose path ends in a document's id: the same path without one names no route.
_ID_ROUTES = re.compile(r"(?:/collections/[^/]+)?/(?:documents|similar)/")


async def _http(request: Request, exc: StarletteHTTPException) -> ProblemResponse:
    path = request.url.path
    if exc.status_code == 404 and exc.detail == "Not Found" and _ID_ROUTES.fullmatch(path):
        if request.method == "POST":  # POST /documents and POST /similar take no id
            detail = f"{path} has a trailing slash: POST to {path.rstrip('/')}"
        else:
            detail = (
                f"{path} names no document: put the document's id after the slash "
                f"(1 to {MAX_ID_BYTES} bytes of UTF-8, percent-encoded)"
            )
        return problem(404, "Not found", detail)
    if exc.status_code == 400:
        # FastAPI's answer to a body it cannot decode (say, not UTF-8): the
        # same 422 as any other malformed JSON body.
        return problem(422, "Invalid request", f"body: {exc.detail}; send UTF-8 JSON", field="body")
    title = {404: "Not found", 405: "Method not allowed", 413: "Request too large"}.get(
        exc.status_code, "Error"
    )
    return problem(exc.status_code, title, str(exc.detail), headers=exc.headers)


async def _invalid(_: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, errors.Invalid)  # the class this handler is registered for
    # Each class of invalid input has its own title ("Text has no words", ...).
    title = getattr(exc, "title", "Invalid request")
    if exc.refusals:
        return problem(422, title, str(exc), errors=exc.refusals)
    return problem(422, title, str(exc), field=exc.field)


async def _conflict(_: Request, exc: Exception) -> ProblemResponse:
    return problem(409, "Conflict", str(exc))


async def _unavailable(_: Request, exc: Exception) -> ProblemResponse:
    ids = getattr(exc, "applied_ids", None)
    extra = {} if ids is None else {"ids": ids}
    return problem(503, "Service unavailable", str(exc), headers=RETRY_AFTER, **extra)


async def _misconfigured(_: Request, exc: Exception) -> ProblemResponse:
    # No Retry-After: retrying does not help until an operator acts.
    return problem(503, "Service misconfigured", str(exc))


async def _full(_: Request, exc: Exception) -> ProblemResponse:
    return problem(507, "Insufficient storage", str(exc))


async def _not_found(_: Request, exc: Exception) -> ProblemResponse:
    return problem(404, "Not found", str(exc))


def problem_doc(description: str) -> dict[str, Any]:
    """An OpenAPI response object for a problem+json answer."""
    ref = {"$ref": "#/components/schemas/Problem"}
    return {"description": description, "content": {PROBLEM: {"schema": ref}}}


def extend_openapi(app: FastAPI, edit: Callable[[dict[str, Any]], None]) -> None:
    """Run edit on the OpenAPI schema once, when it is first built."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            edit(build())
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]


def _document_problems(schema: dict[str, Any]) -> None:
    """Declare the answers that middleware and handlers give on every route.

    422 bodies are problem+json (not FastAPI's default shape); any route can
    answer 422 and 503 (Redis unavailable, a busy document, the request deadline),
    any route with a body 413 and 415, and a write 507 (Redis out of memory).
    """
    schemas = schema.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("Problem", Problem.model_json_schema())
    for path, ops in schema.get("paths", {}).items():
        for method, op in ops.items():
            if not isinstance(op, dict):
                continue
            responses = op.setdefault("responses", {})
            # Any route: an unknown query parameter, a URL that is not UTF-8 (app.api.edge).
            responses["422"] = problem_doc("the request is invalid; detail says what to fix")
            if method in ("put", "post") and "/similar" not in path:  # writes (a collection's too)
                responses.setdefault("507", problem_doc("Redis is out of memory: writes refused"))
            if "requestBody" in op:
                responses.setdefault("413", problem_doc("the body is over NEARDUP_MAX_BODY_BYTES"))
                responses.setdefault(
                    "415", problem_doc("the body is not JSON, or not plain or gzip (app.api.body)")
                )
            responses.setdefault("503", problem_doc("unavailable for now; retry after Retry-After"))
            ref = {"$ref": "#/components/schemas/Problem"}
            for r in responses.values():  # error bodies are problem+json, declared as such
                content = r.get("content", {})
                if content.get("application/json", {}).get("schema") == ref:
                    content[PROBLEM] = content.pop("application/json")


def install(app: FastAPI) -> None:
    """Register the handlers that turn exceptions into problem responses.

    Lower layers raise the classes of app.core.errors; a subclass's title says
    which rule the request broke.
    """
    extend_openapi(app, _document_problems)
    app.add_exception_handler(RequestValidationError, _validation)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http)  # type: ignore[arg-type]
    app.add_exception_handler(errors.Invalid, _invalid)
    app.add_exception_handler(errors.NotFound, _not_found)
    app.add_exception_handler(errors.Conflict, _conflict)
    app.add_exception_handler(errors.Unavailable, _unavailable)
    app.add_exception_handler(errors.Full, _full)  # a subclass: its own answer
    app.add_exception_handler(errors.Misconfigured, _misconfigured)  # likewise
