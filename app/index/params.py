"""A collection's fixed parameters, and how a stored config from an older release reads."""

from __future__ import annotations

import secrets
from collections.abc import Collection
from dataclasses import asdict, dataclass, replace

import orjson

from app import kernel
from app.core.shingles import canonical_shingle, parse_shingle
from app.index.errors import ConfigMismatchError, DeletingError
from app.index.lsh import BandPlan, plan_bands
from app.index.templates import DEFAULT_TEMPLATE_PAGES
from app.store import buckets_for, id_buckets_for

# Documents a collection's band buckets are sized for unless told otherwise.
DEFAULT_CAPACITY = 100_000
DEFAULT_PASSAGE_WORDS = 30
# Bits of a word's hash in new collections' passage layouts (format 3, app.index.align).
DEFAULT_PASSAGE_BITS = 8
# Bits of each shingle hash a new collection's fingerprints keep (fingerprint_bits).
DEFAULT_FINGERPRINT_BITS = 24
# Bytes of a band entry's field in new collections (field_bytes, app.store.layout).
DEFAULT_FIELD_BYTES = 2
# About how many anchors a document has: buckets are sized for bands plus these.
ANCHORS_PER_DOCUMENT = 24
# The field of a stored config that marks its collection as being deleted.
DELETING = "deleting"
# A random mark each making of a collection stores in its config, so a collection deleted
# and made again with the same parameters has another config than before (writes.write's
# fence), which no parameter reads.
MADE = "made"
# How a collection stores its data, chosen by the release that made it and never asked
# for: a collection keeps its own (one made before a format existed reads as then).
STORED_FORMATS = ("tokenizer", "passage_bits", "short_anchors", "short_fields",
                  "field_bytes", "packed_spills", "id_buckets", "marks")  # fmt: skip
# Parameters a collection keeps unless what they come from is asked for by name: its
# band buckets are sized from a capacity, and NEARDUP_FINGERPRINT_BITS is as capacity.
KEPT_UNLESS_ASKED = {"band_buckets": "capacity", "fingerprint_bits": "fingerprint_bits"}


@dataclass(frozen=True)
class Params:
    """A collection's sketch and LSH parameters, fixed when it is created."""

    shingle: str
    num_perm: int
    fingerprint_size: int
    seed: int
    threshold: float
    bands: int
    rows: int
    # Fixed when the collection is made, from the capacity it was sized for.
    band_buckets: int
    # Every shared run of this many words is found by containment queries; 0 keeps
    # no passage index (collections made before passages existed).
    passage_words: int = DEFAULT_PASSAGE_WORDS
    # Whether each document's text is kept (compressed, app.index.texts), so a reviewer
    # can read a source beside the passages found in it.
    keep_text: bool = False
    # Seconds a document lives when its ingest names no expiry; 0: for ever (collections
    # made before expiry existed).
    default_ttl: int = 0
    # Pages of a site its template is learned from (app.index.templates); 0: no site
    # templates (collections made before them).
    template_pages: int = 0
    # How texts are read (app.kernel.TOKENIZERS); 1 for collections made before 2 existed.
    tokenizer: int = 1
    # Bits of each word's hash in the passage layout (format 3, app.index.align); 0: the
    # 4-bit format 1 and its alignment (collections made before format 3).
    passage_bits: int = DEFAULT_PASSAGE_BITS
    # Whether the band buckets keep a passage anchor's key as its 4-byte hash rather
    # than 8 bytes (app.store.layout); False in collections made before.
    short_anchors: bool = True
    # Whether every band entry's field is its key's low 4 bytes (app.store.layout);
    # False in collections made before.
    short_fields: bool = True
    # Id buckets (app.store.layout): the id map split into this many HASHes, a power of
    # two fixed from the capacity; 0: one ids HASH (collections made before).
    id_buckets: int = 0
    # Bits of each shingle hash the fingerprints keep: 24 (the top 24, the rest zeroed:
    # see fingerprint_of) or 32 (collections made before).
    fingerprint_bits: int = 32
    # Whether a hot band's handles spill to a packed STRING rather than a ZSET
    # (app.store.layout); False in collections made before.
    packed_spills: bool = False
    # Bytes of a band entry's field with short_fields: the key's low 4 (collections made
    # before) or 2 (app.store.layout says what the place then costs in shared entries).
    field_bytes: int = 4
    # Whether the collection keeps a bit per document that says it shares a band key
    # with another (app.store.layout, `M`), which GET /similar/{id} reads instead of its
    # buckets when it is 0; False in collections made before.
    marks: bool = False

    @classmethod
    def create(
        cls,
        shingle: str,
        num_perm: int,
        fingerprint_size: int,
        seed: int,
        threshold: float,
        capacity: int = DEFAULT_CAPACITY,
        passage_words: int = DEFAULT_PASSAGE_WORDS,
        keep_text: bool = False,
        default_ttl: int = 0,
        template_pages: int = DEFAULT_TEMPLATE_PAGES,
        tokenizer: int = kernel.LATEST_TOKENIZER,
        passage_bits: int = DEFAULT_PASSAGE_BITS,
        short_anchors: bool = True,
        short_fields: bool = True,
        fingerprint_bits: int = DEFAULT_FINGERPRINT_BITS,
        packed_spills: bool = True,
        field_bytes: int = DEFAULT_FIELD_BYTES,
        marks: bool = True,
    ) -> Params:
        plan = plan_bands(threshold, num_perm)
        per_document = plan.bands + (ANCHORS_PER_DOCUMENT if passage_words else 0)
        buckets = buckets_for(capacity * per_document)
        return cls(
            canonical_shingle(shingle),
            num_perm,
            fingerprint_size,
            seed,
            threshold,
            plan.bands,
            plan.rows,
            buckets,
            passage_words,
            keep_text,
            default_ttl,
            template_pages,
            tokenizer,
            passage_bits,
            short_anchors,
            short_fields,
            id_buckets_for(capacity),
            fingerprint_bits,
            packed_spills,
            field_bytes if short_fields else 4,
            marks,
        )

    @property
    def passage_shingle(self) -> str:
        """The word shingles passages are winnowed over: the collection's own when it
        shingles words, else three words."""
        kind, _ = parse_shingle(self.shingle)
        return self.shingle if kind == "word" else "word:3"

    @property
    def short_keys(self) -> bool:
        """Whether the band keys are only the bits of their place (store.PLACE_BITS: a
        collection of 2-byte fields), kept in 6 bytes a key by its records."""
        return self.short_fields and self.field_bytes == 2

    @property
    def plan(self) -> BandPlan:
        return plan_bands(self.threshold, self.num_perm)

    def to_json_made(self) -> bytes:
        """The config a new collection stores: to_json with a random mark of this making
        (MADE), which Params.stored drops."""
        fields = asdict(self)
        fields[MADE] = secrets.token_hex(8)
        return orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self), option=orjson.OPT_SORT_KEYS)

    @classmethod
    def stored(cls, raw: bytes) -> Params:
        """The parameters of a stored config (Store.config); a collection being deleted
        (app.index.collections) has none any more."""
        fields = orjson.loads(raw)
        fields.pop(MADE, None)
        if fields.pop(DELETING, False):
            raise DeletingError(
                "the collection is being deleted; DELETE it again to finish, then create it anew"
            )
        if "band_buckets" not in fields:
            raise ConfigMismatchError(
                "the collection was made by an older neardup that kept one Redis SET per "
                "band; ingest into a new NEARDUP_COLLECTION (or delete its nd:<name>:* keys)"
            )
        # A collection made before passages existed has no passage index.
        fields.setdefault("passage_words", 0)
        # ... and one made before texts could be kept keeps none.
        fields.setdefault("keep_text", False)
        # ... and one made before expiry existed keeps documents for ever.
        fields.setdefault("default_ttl", 0)
        # ... and one made before site templates has none.
        fields.setdefault("template_pages", 0)
        # ... and one made before tokenizer 2 existed reads texts as it always did.
        fields.setdefault("tokenizer", 1)
        # ... and one made before format 3 keeps 4-bit word hashes, aligned as then.
        fields.setdefault("passage_bits", 0)
        # ... and one made before short anchor fields keeps 8-byte ones.
        fields.setdefault("short_anchors", False)
        # ... and one made before short fields keeps band keys' 8 bytes.
        fields.setdefault("short_fields", False)
        # ... and one made before id buckets keeps one ids HASH.
        fields.setdefault("id_buckets", 0)
        # ... and one made before 24-bit fingerprints keeps whole hashes.
        fields.setdefault("fingerprint_bits", 32)
        # ... and one made before packed spills keeps its hot bands in sorted sets.
        fields.setdefault("packed_spills", False)
        # ... and one made before 2-byte fields keeps a key's low 4 bytes.
        fields.setdefault("field_bytes", 4)
        # ... and one made before marks keeps none.
        fields.setdefault("marks", False)
        return cls(**fields)

    def keeping(self, stored: Params, asked: Collection[str] = ()) -> Params:
        """These parameters with the stored collection's formats (STORED_FORMATS), and
        its KEPT_UNLESS_ASKED ones where asked does not name what they come from."""
        kept = {name: getattr(stored, name) for name in STORED_FORMATS}
        kept |= {
            k: getattr(stored, k) for k, came in KEPT_UNLESS_ASKED.items() if came not in asked
        }
        return replace(self, **kept)

    def agreed(self, stored: Params) -> Params:
        """These (configured) parameters as the stored collection has them, or a
        ConfigMismatchError naming every field that differs."""
        # The formats and bucket counts are the stored ones (a changed NEARDUP_CAPACITY
        # sizes new collections only); so is the passage length of a collection made
        # without one.
        params = self.keeping(stored)
        if stored.passage_words == 0:
            params = replace(params, passage_words=0)
        if stored.template_pages == 0:  # made before site templates: none
            params = replace(params, template_pages=0)
        if stored != params:
            ours, theirs = asdict(params), asdict(stored)
            diff = ", ".join(
                f"{k}: stored {theirs[k]!r}, configured {ours[k]!r}"
                for k in ours
                if ours[k] != theirs[k]
            )
            raise ConfigMismatchError(
                f"the collection was created with other parameters ({diff}); "
                "start with the stored settings or choose another NEARDUP_COLLECTION"
            )
        return params
