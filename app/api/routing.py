"""Every adaptation of FastAPI's and Starlette's routing, in one place.

The service's routes are plain APIRoutes; what it needs beyond them is here:
- allowed_methods: the `Allow` of a 405 names every method of every route the path
  matches (the router answers with the first route that matches the path only);
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> list[str]:
    """Every method some route in routes takes for the path of scope, sorted (RFC 9110:
    a 405's Allow lists what the resource supports, whichever route serves it)."""
    methods: set[str] = set()
    for route in routes:
        # Route.matches: FULL or PARTIAL once the path matches, whatever the method.
        if isinstance(route, Route) and route.methods and route.matches(scope)[0] != Match.NONE:
            methods |= route.methods
    if "GET" in methods:
        methods.add("HEAD")  # app.api.edge answers HEAD for every GET route
    return sorted(methods)
