"""The index's own errors: each a class of app.core.errors, so the API maps it by kind."""

from __future__ import annotations

from app.core import errors


class NoShinglesError(errors.Invalid):
    """A text has no words, so nothing can be compared with it."""

    title = "Text has no words"
    field = "text"  # where a 422 lists it (app.api.problems)


class ThresholdError(errors.Invalid):
    """A query threshold the index cannot answer."""

    title = "Threshold out of range"
    field = "threshold"  # where a 422 lists it (app.api.problems)


class TooLargeError(errors.TooLarge):
    """A text is over the configured size limit."""

    title = "Text too large"
    field = "text"  # where a 422 lists it (app.api.problems)


class ExpiryError(errors.Invalid):
    """An expiry that has already passed."""

    title = "Expiry in the past"
    field = "expires_at"  # where a 422 lists it (app.api.problems)


class NoPassagesError(errors.Invalid):
    """A containment query on a collection that keeps no passage index."""

    title = "No passage index"
    field = "measure"  # where a 422 lists it (app.api.problems)


class CollectionChangedError(errors.Conflict):
    """The collection a write was opened on was deleted, or deleted and made anew, while
    the write ran: nothing of it is stored."""

    title = "Collection changed"


class BusyError(errors.Busy):
    """A document stayed locked by another writer for too long; retry."""


class ConfigMismatchError(errors.Misconfigured):
    """The collection in Redis was made with other sketch parameters."""


class HandleCounterError(errors.Misconfigured):
    """The collection's handle counter is behind the handles its documents hold (its
    key was lost: an eviction, a failover to a replica that lagged, a DEL): a new
    document would overwrite another's record, so nothing is written."""

    title = "Store damaged: handle counter behind"


class DamagedLayoutError(errors.Conflict):
    """A stored document's passage layout cannot be read (written by a release before
    2026-11-26 with a character folded into two words): ingest it again."""

    title = "Passage layout to rewrite"


class DeletingError(errors.Conflict):
    """The collection is marked for deletion: no reads or writes any more."""


class FileError(errors.Invalid):
    """A file that cannot be read as the type it was sent as; the message says why."""

    title = "File cannot be read"
    field = "data"  # where a 422 lists it (app.api.problems): the file sent in data
