"""The store's Lua scripts (the .lua files here), each read once with its SHA1 and key count."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Script:
    """A Lua script as Redis runs it: EVAL source numkeys ..., or EVALSHA sha numkeys ..."""

    name: str
    source: bytes
    sha: bytes  # hex SHA1 of source, the name EVALSHA knows it by
    numkeys: bytes  # how many leading arguments of a call are keys (decimal)


def _load(name: str, *tail: str, head: tuple[str, ...] = ()) -> Script:
    """A script from its file, with the files of head before it and of tail after it
    (halves that two scripts share)."""
    here = resources.files(__name__)
    parts = (*head, name, *tail)
    source = b"".join(here.joinpath(f"{part}.lua").read_bytes() for part in parts)
    # Every key a cluster-safe script touches is a KEYS[n]; Redis Cluster routes the
    # call by them. A single-server script may name none (candidates.lua).
    numkeys = max((int(n) for n in re.findall(rb"KEYS\[(\d+)\]", source)), default=0)
    return Script(name, source, hashlib.sha1(source).hexdigest().encode(), b"%d" % numkeys)


UNLOCK = _load("unlock")
FORGET_ID = _load("forget_id")
BAND_ADD = _load("band_add")
BAND_REMOVE = _load("band_remove")
# Single server only: these read keys they build themselves (Store.candidates, stored,
# add_bands, remove_bands).
CANDIDATES = _load("candidates", "rank")
SIMILAR_BY_ID = _load("similar_by_id", "rank")
STORED = _load("stored")
BAND_ADD_MANY = _load("band_add_many", head=("band_entries",))
BAND_REMOVE_MANY = _load("band_remove_many", head=("band_entries",))
