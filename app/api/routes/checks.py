"""POST /checks, GET and DELETE /checks/{id}: containment checks kept as resources."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Path, Request, Response

from app.api import schemas
from app.api.deps import get_index
from app.api.problems import problem
from app.api.routes.similar import text_query
from app.index import checks

router = APIRouter(tags=["checks"])
CheckId = Annotated[str, Path(description="the check's id, as POST /checks answered it")]
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": schemas.Problem, "description": "no such check (or it expired)"}
}


def _shown(check: checks.Check, request: Request) -> dict[str, Any]:
    collection = request.path_params.get("collection")
    report = f"/ui/checks/{check.id}" + (f"?collection={collection}" if collection else "")
    return check.answer | {
        "id": check.id,
        "report": report,
        "created_at": schemas.rfc3339(check.created_ms),
        "expires_at": schemas.rfc3339(check.expires_ms),
        "changed": check.changed,
        "text": check.text,
    }


def _json(body: dict[str, Any], status: int = 200) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


@router.post(
    "/checks", status_code=201, response_model=schemas.CheckOut, response_model_exclude_unset=True
)
async def create_check(body: schemas.CheckIn, request: Request) -> Response:
    """Run a check (POST /similar's body; containment with evidence and the text by
    default) and keep its text and answer, to be read again from its report link
    until it expires."""
    text, answer = await text_query(body, request)
    answer.pop("text", None)  # the check keeps the text once, beside the answer
    ttl = body.ttl or request.app.state.settings.check_ttl
    stored = await checks.create(await get_index(request), text, answer, ttl)
    return _json(_shown(stored, request), 201)


@router.get("/checks/{check_id}", response_model=schemas.CheckOut, responses=NOT_FOUND)
async def read_check(check_id: CheckId, request: Request) -> Response:
    """A stored check: its answer and text as they were, and which sources changed since."""
    found = await checks.read(await get_index(request), check_id)
    if found is None:
        return problem(404, "Not found", f"no check with id {check_id!r} (or it expired)")
    return _json(_shown(found, request))


@router.delete("/checks/{check_id}", status_code=204, responses=NOT_FOUND)
async def delete_check(check_id: CheckId, request: Request) -> Response:
    """Remove a stored check."""
    if not await checks.delete(await get_index(request), check_id):
        return problem(404, "Not found", f"no check with id {check_id!r} (or it expired)")
    return Response(status_code=204)
