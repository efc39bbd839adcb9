"""The similarity report page (GET /ui/...), and GET /collection, which moved.

The page is static: HTML, CSS and JavaScript packaged with the service
(app/api/ui/), no CDN and no build step. Every view is the same HTML file, which
reads its view from the URL (/ui/, /ui/documents/{id}, /ui/collection), so a
reviewer can send a link. Every /ui/ answer carries a Content-Security-Policy that
allows nothing but this origin and no inline script, so even a bug that wrote a
hostile text as HTML could not run it. The page's files need no API key
(app.api.auth); the data it shows is read through the API, with the key it asks for.
"""

from __future__ import annotations

from importlib import resources
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.api.auth import COLLECTIONS
from app.api.problems import problem
from app.api.routing import PageRoute, Route

router = APIRouter(tags=["ui"], route_class=PageRoute)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The files change with the package; revalidating costs a 304-sized answer.
    "Cache-Control": "no-cache",
}
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
# The views: paths that answer with the page itself.
VIEWS = ("", "collection", "checks")
# ... and the views of one thing: a document, a stored check (also under a collection).
VIEW_PREFIXES = ("documents/", "checks/", "collections/")


def _files() -> dict[str, bytes]:
    """The page's files by name, read once from the installed package."""
    folder = resources.files("app.api") / "ui"
    return {f.name: f.read_bytes() for f in folder.iterdir() if _suffix(f.name) in TYPES}


def _suffix(name: str) -> str:
    return name[name.rfind(".") :]


FILES = _files()


@router.get("/ui", include_in_schema=False)
async def ui_root() -> Response:
    """/ui without its slash: the page's relative addresses need the slash."""
    return RedirectResponse("/ui/", status_code=308, headers=HEADERS)


@router.get("/ui/{path:path}", include_in_schema=False)
async def ui(path: str) -> Response:
    """The page's files, and the page itself for every view."""
    name = "index.html" if path in VIEWS or path.startswith(VIEW_PREFIXES) else path
    body = FILES.get(name)
    if body is None:
        return problem(404, "Not found", f"the page has no file {path!r}", headers=HEADERS)
    media = TYPES[_suffix(name)]
    return Response(body, media_type=media, headers=HEADERS)


async def collection(request: Request) -> Response:
    """Moved: the default collection is a collection like any other, described by GET
    /collections/{name} (one route per resource); this answers a permanent redirect
    there, which browsers, fetch and most clients follow with the same method and key."""
    name = request.app.state.settings.collection
    where = request.scope.get("root_path", "") + COLLECTIONS + quote(name, safe="")
    return RedirectResponse(where, status_code=308)


# An API route, not the page's: it refuses undeclared query parameters as every one does.
router.add_api_route(
    "/collection",
    collection,
    methods=["GET"],
    status_code=308,
    response_class=RedirectResponse,
    deprecated=True,
    responses={
        308: {
            "description": "the default collection is described at /collections/{name}",
            "headers": {
                "Location": {
                    "description": "/collections/{name} of the default collection",
                    "schema": {"type": "string"},
                }
            },
        }
    },
    route_class_override=Route,
)
