"""The HTTP layer: routes that translate between HTTP and app.index."""

# Routes name ids with the "docid" path convertor, registered on import.
from app.api import paths as _paths  # noqa: F401
