"""The error vocabulary every layer raises and the API and CLI translate.

Lower layers subclass these; the HTTP layer maps the classes here to
problem+json answers without knowing which layer raised them.
"""

from __future__ import annotations


class NeardupError(Exception):
    """Base of every error neardup raises on purpose."""


class Invalid(NeardupError, ValueError):
    """The request cannot be served as asked; the message says what to fix (422).

    A 422 lists its refusals (app.api.problems): `refusals`, each {field, message}, when
    the error names several; else one, at `field` (a subclass names its own)."""

    field = "request"

    def __init__(self, message: str, refusals: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.refusals = refusals


class TooLarge(Invalid):
    """Input over a configured size limit (422, it names the limit)."""


class NotFound(NeardupError):
    """What the request names does not exist (404)."""


class Conflict(NeardupError):
    """What the request names exists in a state that forbids it (409)."""


class Unavailable(NeardupError):
    """A dependency cannot answer now; retrying later may succeed (503).

    applied_ids: the ids of documents the failed request stored anyway (a write applied
    but short of its replicas), one a document in the request's order (None where it was
    refused), which its answer names so that a document sent without an id is not stored
    twice by the retry."""

    applied_ids: list[str | None] | None = None


class Busy(Unavailable):
    """Another writer holds what this request needs; retry shortly (503)."""


class Full(Unavailable):
    """The store refuses writes for lack of memory; reads still work (507)."""


class Misconfigured(Unavailable):
    """Settings disagree with what is stored; an operator must act (503)."""
