"""The document, similar and duplicates routes again under /collections/{name}.

Each route is copied with the prefix on its path, the same handler and the same
declarations, plus a dependency that puts the prefix's parameter in the schema;
app.api.deps.get_index reads the collection's name from the path. They are real
routes of the app, not an included router (FastAPI resolves those lazily, past
what app.api.queries and the access log see), so every rule of a route holds for
its twin.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

from app.api.deps import COLLECTION_PREFIX, collection_path
from app.api.schemas import Problem

# What a twin can answer besides its route's own answers (app.index.collections).
COLLECTION_ANSWERS: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "no such collection, or no such document"},
    409: {"model": Problem, "description": "the collection is being deleted"},
}


def twins(routes: Iterable[BaseRoute]) -> list[BaseRoute]:
    """A copy of each API route, its path under COLLECTION_PREFIX."""
    router = APIRouter()
    for route in routes:
        if not isinstance(route, APIRoute):
            continue
        router.add_api_route(
            COLLECTION_PREFIX + route.path,
            route.endpoint,
            methods=sorted(route.methods or ()),
            response_model=route.response_model,
            status_code=route.status_code,
            tags=list(route.tags),
            dependencies=[*route.dependencies, Depends(collection_path)],
            summary=route.summary,
            description=route.description,
            response_description=route.response_description,
            responses={**route.responses, **COLLECTION_ANSWERS},
            deprecated=route.deprecated,
            response_model_exclude_unset=route.response_model_exclude_unset,
            include_in_schema=route.include_in_schema,
            response_class=route.response_class,
            name=route.name,
            openapi_extra=route.openapi_extra,
            route_class_override=type(route),
        )
    return router.routes
