"""DELETE /sites/{site}/template: a site's learned template dropped, so that its next
pages learn it anew (a site redesigned after its template was fixed)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from app.api import replies
from app.api.deps import get_index
from app.api.problems import problem
from app.api.routing import Route
from app.index.templates import site_problem

router = APIRouter(tags=["sites"], route_class=Route)
_REFUSED: dict[int | str, dict[str, Any]] = {
    422: {"model": replies.Problem, "description": "the site is blank or names no host"}
}


@router.delete("/sites/{site:path}/template", status_code=204, responses=_REFUSED)
async def forget_template(site: str, request: Request) -> Response:
    """Drop the site's template and the pages held to learn it: its next template_pages
    pages learn it anew. Pages stored already keep the judgement they were stored with;
    a site without a template answers 204 too."""
    said = site_problem(site)
    if said is not None:
        return problem(422, "Invalid request", said, errors=[{"field": "site", "message": said}])
    index = await get_index(request)
    await index.sites.forget(site)
    return Response(status_code=204)
