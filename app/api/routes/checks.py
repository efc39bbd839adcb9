"""POST /checks, GET and DELETE /checks/{id}: a check kept as a report with a link; GET
/checks: the stored checks, newest first.

A check is POST /similar's query (by default containment with evidence and the text
returned), answered the same way, then stored with its text for NEARDUP_CHECK_TTL or
its own ttl (app.index.reports). Its report page is /ui/checks/{id}
(/ui/collections/{name}/checks/{id} for a check made under /collections/{name}).
"""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

import orjson
from fastapi import APIRouter, Query, Request, Response

from app.api import replies, schemas
from app.api.deps import get_index
from app.api.problems import problem
from app.api.routing import Route
from app.api.text_query import answer_text
from app.index import reports
from app.index.expiry import rfc3339

router = APIRouter(tags=["checks"], route_class=Route)
_NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": replies.Problem, "description": "no such check, or it expired"}
}


def _paths(request: Request, check_id: str) -> tuple[str, str]:
    """The check's API path and its report page's path, in the request's collection."""
    name = request.path_params.get("collection")
    prefix = "" if name is None else "/collections/" + quote(name, safe="")
    return f"{prefix}/checks/{check_id}", f"/ui{prefix}/checks/{check_id}"


def _out(
    request: Request,
    saved: reports.SavedCheck,
    text: bool,
    changed: list[reports.Change],
) -> dict[str, Any]:
    answer = saved.answer | ({"text": saved.text} if text else {})
    return {
        "id": saved.id,
        "report": _paths(request, saved.id)[1],
        "created_at": rfc3339(saved.created_ms),
        "expires_at": rfc3339(saved.expires_ms),
        "answer": answer,
        "metadata": saved.metadata,
        "changed_sources": [{"id": c.id, "change": c.change} for c in changed],
    }


def _json(
    body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(orjson.dumps(body), status, headers, media_type="application/json")


def _missing(check_id: str) -> Response:
    return problem(404, "Not found", f"no check with id {check_id!r} (or it expired)")


@router.post(
    "/checks",
    status_code=201,
    response_model=replies.CheckOut,
    responses={201: {"description": "the check, stored; Location is its API path"}},
)
async def create_check(
    body: schemas.CheckIn,
    request: Request,
    consistency: Annotated[schemas.Consistency, Query(description=schemas.CONSISTENCY_DOC)] = (
        "eventual"
    ),
) -> Response:
    """Check a text as POST /similar does and keep the check, with its text, as a report
    that its link reopens until it expires."""
    # Answered by what answers POST /similar, so a check is answered exactly as a query
    # (whatever that learns later); it always returns the text, which is stored. The
    # answer is stored as the JSON a query would have been sent.
    asked = body.model_copy(update={"return_text": True})
    answered = await answer_text(asked, request, consistency)
    answer = orjson.loads(orjson.dumps(answered, option=orjson.OPT_SERIALIZE_NUMPY))
    text = answer.pop("text")
    index = await get_index(request)
    ttl = body.ttl or request.app.state.settings.check_ttl
    saved = await reports.save(index, text, answer, ttl, body.metadata)
    location = _paths(request, saved.id)[0]
    return _json(_out(request, saved, body.return_text, []), 201, {"Location": location})


@router.get(
    "/checks",
    response_model=replies.CheckList,
    responses={422: {"model": replies.Problem, "description": "a limit or cursor to fix"}},
)
async def list_checks(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=schemas.MAX_CHECKS_PAGE)] = 100,
    cursor: Annotated[str | None, Query(description=schemas.CHECKS_CURSOR_DOC)] = None,
) -> Response:
    """The collection's stored checks, newest first, a page at a time: each with its
    report link, times, metadata and a summary of its answer."""
    after = None
    if cursor is not None:
        after = reports.parse_cursor(cursor)
        if after is None:
            return problem(
                422,
                "Invalid cursor",
                f"cursor {cursor[:80]!r} is not one a page of GET /checks gave: pass the "
                "last page's `cursor` as it was, or none for the first page",
                errors=[{"field": "cursor", "message": "not a cursor of this list"}],
            )
    index = await get_index(request)
    listed, more = await reports.listing(index, after, limit)
    checks = []
    for check in listed:
        about = check.about
        checks.append(
            {
                "id": check.id,
                "report": _paths(request, check.id)[1],
                "created_at": rfc3339(about["created_ms"]),
                "expires_at": rfc3339(about["expires_ms"]),
                **{k: about[k] for k in _LISTED},
            }
        )
    # listing() fills the page past expired checks, so a page that may have more is full.
    last = reports.cursor_of(listed[-1]) if more and listed else None
    return _json({"checks": checks, "cursor": last})


_LISTED = ("metadata", "measure", "coverage", "sources", "top", "characters")


@router.get("/checks/{check_id}", response_model=replies.CheckOut, responses=_NOT_FOUND)
async def read_check(check_id: str, request: Request) -> Response:
    """A stored check: its answer and text as they were, and which sources changed since."""
    index = await get_index(request)
    saved = await reports.load(index, check_id)
    if saved is None:
        return _missing(check_id)
    return _json(_out(request, saved, True, await reports.changes(index, saved)))


@router.delete("/checks/{check_id}", status_code=204, responses=_NOT_FOUND)
async def delete_check(check_id: str, request: Request) -> Response:
    """Remove a stored check at once; its link answers 404 from then on."""
    index = await get_index(request)
    if not await reports.delete(index, check_id):
        return _missing(check_id)
    return Response(status_code=204)
