"""Export and import: a collection's documents as sketches, without their texts.

An export is JSON Lines: a header naming the collection's sketch parameters,
then one line per document in handle order (oldest first)::

    {"format": "neardup-export", "version": 1, "params": {"shingle": "word:3", ...}}
    {"id": "a", "metadata": {...}, "shingles": 10, "fingerprint": "<base64 u32 LE>",
     "bands": "<base64 u64 LE>", "passages": "<base64 passage layout>"}
    {"end": true, "documents": 1}

The end line tells a complete export from one cut short (a full disk, a dropped
connection).

That is everything a record holds, so importing it into a collection with the
same parameters (another NEARDUP_COLLECTION, another Redis) rebuilds an index
that gives the same answers: documents get new handles in export order, so ties
still rank oldest first. The band-bucket count is the target's own; it only
places band keys, it does not change them. Import writes through the index's
own write path (locks, bands first, record last) and replaces documents with
the same id, so importing twice gives the same collection.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from app.core import errors
from app.core.shingles import canonical_shingle
from app.index import records
from app.index.expiry import MAX_TTL_S, live_records, now_ms
from app.index.filters import Filter
from app.index.ids import check_id
from app.index.index import Index
from app.index.params import Params
from app.index.passages import Layout
from app.index.sketch import Sketched, anchor_keys, kept_bits, kept_keys
from app.index.writes import MAX_BATCH
from app.store import PLACE_BITS

FORMAT = "neardup-export"
VERSION = 1
# Parameters an import must share with its target; band_buckets only places keys.
SHARED = ("shingle", "num_perm", "fingerprint_size", "seed", "threshold", "bands", "rows",
          "passage_words", "tokenizer")  # fmt: skip
MAX_IMPORT = MAX_BATCH
# Bits of each fingerprint value the export keeps (absent in exports made before: 32). A
# collection takes an export whose fingerprints keep at least its own bits.
BITS = "fingerprint_bits"
# Bits of each band key the export keeps: 48 (store.PLACE_BITS) from a collection of
# 2-byte band fields, else 64 (absent in exports made before). A collection of 2-byte
# fields takes either; one of longer fields needs the whole keys.
KEY_BITS = "band_key_bits"
_KEY_BITS_KEPT = (PLACE_BITS.bit_count(), 64)  # short keys, whole keys
# What a header and a document line may hold: a misspelt field (expire_ms) is refused, not
# read as absent (a document that was to expire would never expire).
HEADER_FIELDS = ("format", "version", "params")
LINE_FIELDS = ("id", "metadata", "shingles", "fingerprint", "bands", "passages", "expires_ms",
               "plain")  # fmt: skip


def _unknown(given: dict[str, Any], known: tuple[str, ...], where: str) -> None:
    extra = sorted(set(given) - set(known))
    if extra:
        raise ImportRefused(f"{where}: unknown field {extra[0]!r} (it may hold {', '.join(known)})")


class ImportRefused(errors.Invalid):
    """An import line or header the target collection cannot take."""

    title = "Invalid import"


def header(params: Params) -> dict[str, Any]:
    """The first line of an export."""
    p = asdict(params)
    shared = _spelt({k: p[k] for k in SHARED})
    key_bits = _KEY_BITS_KEPT[0] if params.short_keys else _KEY_BITS_KEPT[1]
    return {
        "format": FORMAT,
        "version": VERSION,
        "params": {**shared, BITS: p[BITS], KEY_BITS: key_bits},
    }


def _spelt(params: dict[str, Any]) -> dict[str, Any]:
    """params with the shingle spec in its one spelling (a collection made before specs
    were stored so may hold " word:3"); a spec that does not parse is left to differ."""
    try:
        return {**params, "shingle": canonical_shingle(params["shingle"])}
    except (KeyError, ValueError):
        return params


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# More distinct shingles than any text the service takes has (a trillion: a text of
# terabytes); a line that claims more is damaged.
MAX_SHINGLES = 2**40


def _consistent(shingles: int, values: int, full: int, plain: bool) -> bool:
    """Whether a record's shingle count can go with its fingerprint of `values` values
    (of at most `full`), sent as text (plain) or not: 0 for a page (one of a site found
    all template once its template was fixed: its whole text's fingerprint, none of its
    own), or at least its values (a fingerprint keeps at most one value a distinct
    shingle) and at most MAX_SHINGLES; a fingerprint short of full holds every shingle's
    value, so its count is about its values (values cut to 24 bits merge by chance: the
    odds of one merge stay under one in two up to 4,096 values; twice as many and 16
    more is far more than that)."""
    if shingles == 0:
        return not plain
    most = MAX_SHINGLES if values >= full else 2 * values + 16
    return values <= shingles <= most


def exported(raw: bytes) -> dict[str, Any]:
    """One document line of an export, from its packed record."""
    rec = records.unpack(raw)
    line = {
        "id": rec.id,
        "metadata": rec.metadata,
        "shingles": rec.shingles,
        "fingerprint": _b64(np.ascontiguousarray(rec.fingerprint, "<u4").tobytes()),
        "bands": _b64(np.ascontiguousarray(rec.band_keys, "<u8").tobytes()),
        "passages": _b64(rec.passages),
    }
    if rec.expires_ms:  # only an expiring document has it
        line["expires_ms"] = rec.expires_ms
    if rec.plain:  # sent as text, not as a page: never a site's thin page
        line["plain"] = True
    return line


async def export(
    index: Index, where: Filter | None = None, batch: int = 256
) -> AsyncIterator[dict[str, Any]]:
    """The header, every document (matching where) in handle order, a batch at a time,
    and the end line with their count: a file without it was cut short."""
    yield header(index.params)
    last = await index.store.ids.last_handle()
    count = 0
    for first in range(1, last + 1, batch):
        handles = list(range(first, min(first + batch, last + 1)))
        for raw in await live_records(index.store, handles):
            if raw is not None and (where is None or where.matches_record(raw)):
                count += 1
                yield exported(raw)
    yield {"end": True, "documents": count}


def _is(value: Any, expected: Any) -> bool:
    """Whether value is expected in its JSON type too (true is not 1, nor 128.0 128)."""
    return type(value) is type(expected) and value == expected


def check_header(index: Index, head: dict[str, Any]) -> None:
    """Refuse an export made with other parameters than the target collection's."""
    if not isinstance(head, dict):
        raise ImportRefused(f"the header must be a JSON object, got {str(head)[:200]}")
    if head.get("format") != FORMAT or not _is(head.get("version"), VERSION):
        raise ImportRefused(f"not a {FORMAT} version {VERSION} header: {str(head)[:200]}")
    _unknown(head, HEADER_FIELDS, "the header")
    given = head.get("params")
    ours = header(index.params)["params"]
    if not isinstance(given, dict):
        raise ImportRefused("the header has no params object")
    _unknown(given, (*SHARED, BITS, KEY_BITS), "the header's params")
    given = _spelt({"tokenizer": 1, **given})  # exports before tokenizer 2 read texts with 1
    diff = [f"{k}: export {given.get(k)!r}, collection {ours[k]!r}" for k in SHARED
            if not _is(given.get(k), ours[k])]  # fmt: skip
    bits = given.get(BITS, 32)
    if type(bits) is not int or bits not in (24, 32) or bits < ours[BITS]:
        diff.append(f"{BITS}: export {bits!r}, collection {ours[BITS]!r}")
    key_bits = given.get(KEY_BITS, 64)
    if type(key_bits) is not int or key_bits not in _KEY_BITS_KEPT or key_bits < ours[KEY_BITS]:
        diff.append(f"{KEY_BITS}: export {key_bits!r}, collection {ours[KEY_BITS]!r}")
    if diff:
        raise ImportRefused(
            "the export was made with other sketch parameters ("
            + ", ".join(diff)
            + "); import into a collection created with the export's NEARDUP_* settings"
        )


def _bytes(doc: dict[str, Any], name: str, where: str) -> bytes:
    value = doc.get(name, "")
    if not isinstance(value, str):
        raise ImportRefused(f"{where}: {name} must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ImportRefused(f"{where}: {name} is not base64") from None


@dataclass(frozen=True)
class _Restored(Sketched):
    """Sketches read back from an export, in the form the index's writer takes."""

    raw_passages: list[bytes] = field(default_factory=list)

    def anchors(self, i: int) -> np.ndarray:
        raw = self.raw_passages[i]
        return anchor_keys(Layout.unpack(raw).anchor_hashes) if raw else np.zeros(0, np.uint64)

    def passages(self, i: int) -> bytes:
        return self.raw_passages[i]


def _restore(
    index: Index, docs: Sequence[dict[str, Any]]
) -> tuple[list[str], list, _Restored, list[int], list[bool]]:
    """Check every line against the collection's parameters and pack it for writing."""
    p = index.params
    ids, metas, shingles, fps, bands, passages, ends = [], [], [], [], [], [], []
    plains: list[bool] = []
    for n, doc in enumerate(docs):
        where = f"document {n}"
        if not isinstance(doc, dict):
            raise ImportRefused(f"{where}: not an object")
        doc_id = doc.get("id")
        if not isinstance(doc_id, str):
            raise ImportRefused(f"{where}: id must be a string")
        try:
            check_id(doc_id)
        except ValueError as exc:
            raise ImportRefused(f"{where}: {exc}") from None
        where = f"document {doc_id!r}"
        _unknown(doc, LINE_FIELDS, where)
        meta = doc.get("metadata")
        problem = records.metadata_problem(meta)
        if problem is not None:
            raise ImportRefused(f"{where}: {problem}")
        count = doc.get("shingles")
        if type(count) is not int or not 0 <= count < 2**63:
            raise ImportRefused(f"{where}: shingles must be a whole number, 0 or more")
        fp_raw = _bytes(doc, "fingerprint", where)
        fp = np.frombuffer(fp_raw, "<u4") if len(fp_raw) % 4 == 0 else None
        # (As signed numbers: a uint32 difference wraps, and a descending pair passed.)
        if (
            fp is None
            or not 1 <= len(fp) <= p.fingerprint_size
            or np.any(np.diff(fp.astype(np.int64)) <= 0)
        ):
            raise ImportRefused(
                f"{where}: fingerprint must be 1 to {p.fingerprint_size} ascending u32 values"
            )
        plain = doc.get("plain", False)
        if type(plain) is not bool:
            raise ImportRefused(f"{where}: plain must be true or false (or absent)")
        if not _consistent(count, len(fp), p.fingerprint_size, plain):
            raise ImportRefused(
                f"{where}: shingles ({count}) does not fit its fingerprint of {len(fp)} values"
                + (" (0 only for a page, not a line with plain)" if count == 0 else "")
            )
        band_raw = _bytes(doc, "bands", where)
        if len(band_raw) != 8 * p.bands:
            raise ImportRefused(f"{where}: bands must be {p.bands} u64 values")
        layout = _bytes(doc, "passages", where)
        if bool(layout) != bool(p.passage_words):
            raise ImportRefused(f"{where}: passages must be given exactly when the collection "
                               "keeps a passage index")  # fmt: skip
        if layout:
            try:
                read = Layout.unpack(layout)
                same = read.pack() == layout
            except Exception:  # any garbage: refused, never stored
                same = False
            if not same:
                raise ImportRefused(f"{where}: passages is not a passage layout")
            if fault := read.fault():
                raise ImportRefused(f"{where}: passages is not a text's layout: {fault}")
        end = doc.get("expires_ms", 0)
        if type(end) is not int or not 0 <= end <= now_ms() + 1000 * MAX_TTL_S:
            raise ImportRefused(f"{where}: expires_ms must be ms since the epoch, at most "
                                f"{MAX_TTL_S} s (100 years) from now (or absent)")  # fmt: skip
        if "expires_ms" in doc and end == 0:
            end = 1  # the epoch itself: long expired (absent is never), not written
        ends.append(end)
        plains.append(plain)
        ids.append(doc_id)
        metas.append(meta)
        shingles.append(count)
        fps.append(fp)
        bands.append(np.frombuffer(band_raw, "<u8"))
        passages.append(layout)
    offsets = np.zeros(len(fps) + 1, np.uint64)
    offsets[1:] = np.cumsum([len(f) for f in fps])
    values = np.concatenate(fps).astype(np.uint32) if fps else np.zeros(0, np.uint32)
    if p.fingerprint_bits < 32:  # whole hashes (an older export) cut as this collection keeps them
        values, offsets = kept_bits(values, offsets, p.fingerprint_bits, p.fingerprint_size)
    # Whole keys (an older export) cut as this collection keeps them.
    keys = kept_keys(np.stack(bands) if bands else np.zeros((0, p.bands), np.uint64), p)
    restored = _Restored(
        np.asarray(shingles, np.int64), values, offsets, keys, raw_passages=passages
    )
    return ids, metas, restored, ends, plains


def _is_end(line: Any) -> bool:
    """Whether an export line is its end line ({"end": true, "documents": n})."""
    return isinstance(line, dict) and line.get("end") is True and "id" not in line


async def import_documents(
    index: Index, head: dict[str, Any], docs: Sequence[dict[str, Any]]
) -> tuple[int, int]:
    """Write exported documents (replacing the same ids); (created, updated).

    The header is checked first and every line before anything is written, so a
    bad batch stores nothing. An id given twice: the last line wins. The export's end
    line, last in a batch as a client that cuts an export into batches sends it, is
    skipped: it is no document.
    """
    check_header(index, head)
    if docs and _is_end(docs[-1]):
        docs = docs[:-1]
    if len(docs) > MAX_IMPORT:
        raise ImportRefused(f"at most {MAX_IMPORT} documents per import call")
    ids, metas, restored, ends, plains = _restore(index, docs)
    last = {doc_id: i for i, doc_id in enumerate(ids)}
    # A document that expired since its export answers nothing: it is not written.
    now = now_ms()
    keep = [i for i, doc_id in enumerate(ids) if last[doc_id] == i and not 0 < ends[i] <= now]
    if not keep:
        return 0, 0
    # The index's own writer: the same locks and write order as an ingest.
    created = await index.write(
        [ids[i] for i in keep],
        [(i, metas[i]) for i in keep],
        restored,
        expires=[ends[i] for i in keep],
        plain=[plains[i] for i in keep],
    )
    # An id's earlier lines were replaced by its last one, as a batch of documents counts
    # them: each an update.
    written = set(keep)
    replaced = sum(
        1 for i, doc_id in enumerate(ids) if last[doc_id] != i and last[doc_id] in written
    )
    return sum(created), len(created) - sum(created) + replaced
