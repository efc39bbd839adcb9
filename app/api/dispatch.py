"""Routes refuse a path that cannot be theirs with one string check, before their regex.

The router asks every route in order whether a request is its own, and FastAPI's own
answer to that (the route's path regex, its convertors, its bookkeeping) costs a few
microseconds a route: a GET /similar/{id} asked a dozen routes before its own, more than
the rest of its routing. A route's path regex starts with the route's literal prefix
(its path up to the first parameter, escaped verbatim by Starlette's compile_path), so a
path that does not start with it matches neither fully nor partly; those are answered
"no" at once, and every other path is asked of the route's own matches, unchanged. The
routes keep their order (the schema's, and the router's precedence).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import Match, Route
from starlette.types import Scope

_MARK = "_neardup_quick_refusal"
Matcher = Callable[[Scope], tuple[Match, Scope]]


def literal_prefix(path: str) -> str:
    """The part of a route's path before its first parameter: every path it matches
    starts with it."""
    return path.split("{", 1)[0]


def quick_refusal(prefix: str, matches: Matcher) -> Matcher:
    """matches, answering NONE at once for an HTTP path that does not start with prefix."""

    def quick(scope: Scope) -> tuple[Match, Scope]:
        # With a root_path the route sees the path without it: left to the route itself.
        path = scope["path"]
        if not path.startswith(prefix) and scope["type"] == "http" and not scope.get("root_path"):
            return Match.NONE, {}
        return matches(scope)

    setattr(quick, _MARK, True)
    return quick


def install(app: FastAPI) -> None:
    """Give every plain route of app the quick refusal (once the routes are all in).

    Only routes whose matching is their path regex: FastAPI's APIRoute (and subclasses
    that keep its matches) and Starlette's Route; never a Mount, an included router or a
    route class that matches in its own way."""
    for route in app.router.routes:
        if not isinstance(route, Route):  # APIRoute is a Route
            continue
        if isinstance(route, APIRoute):
            plain = type(route).matches is APIRoute.matches
        else:
            plain = type(route) is Route
        if not plain or getattr(route.matches, _MARK, False):
            continue
        prefix = literal_prefix(route.path)
        # What the rule rests on, checked rather than assumed: the regex the route matches
        # with begins with exactly this prefix.
        if prefix and route.path_regex.pattern.startswith("^" + re.escape(prefix)):
            route.matches = quick_refusal(prefix, route.matches)  # type: ignore[method-assign,assignment]
