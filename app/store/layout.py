"""Where a collection's data lives in Redis: key names, band buckets, band fields.

Every key is under ``nd:{collection}:``:

    config        STRING  JSON of the collection's fixed sketch parameters
    next          STRING  INCR counter handing out integer document handles
    ids           HASH    external id -> handle (collections made before id buckets)
    I{bucket}     HASH    the same, split: an id lives in bucket crc32(id) mod 2**bits
                          (Params.id_buckets), so no one key, and no one cluster
                          master, holds every id of a collection
    count         HASH    n: the number of ids in the id buckets; gen: how many times
                          an id was mapped or dropped. Moved with the ids in one script
                          on a single server; on a cluster after them (a crash between
                          drifts n, which the check repairs while gen shows the id map
                          unchanged during its scan)
    d:{handle}    STRING  packed document record (app.index.records)
    t:{handle}    STRING  the document's text, compressed (collections that keep texts;
                          app.index.texts)
    l:{id}        STRING  short-lived write lock token for one external id
    exp           ZSET    handles of expiring documents, scored by expiry (ms since the
                          epoch): the sweeper's queue (app.index.expiry)
    c:{id}        STRING  a stored check, zlib(JSON), expired by Redis (app.store.checks)
    checks:made   ZSET    stored check ids by when each was made (ms), for GET /checks;
    checks:ends   ZSET    the same ids by when each expires, to take expired ones out;
    checks:about  HASH    check id -> its summary for the list (JSON)
    B{bucket}     HASH    band key (8 raw bytes) -> its handles, 4 bytes each (uint32 LE);
                          once the band outgrew MAX_INLINE handles, SPILLED and its size.
                          In a collection with short anchor fields (use_short_anchors),
                          a passage anchor's key is its 32-bit anchor hash (4 bytes);
                          with short fields (use_short_fields), every key's field is
                          its low 32 bits (4 bytes)
    S{bucket}key  ZSET    the handles of a spilled (hot) band key, scored by handle
                          (collections made before packed spills)
    H{bucket}key  STRING  the same, packed: its handles ascending, 4 bytes each (uint32
                          LE), in collections with packed spills (use_packed_spills)
    M             STRING  a bitmap: bit h is set once document h shares a band key's
                          field with another document (collections with marks,
                          use_marks; set by band_ops.lua's band_add, never cleared),
                          so GET /similar/{id} of a document whose bit is 0 reads none
                          of its buckets: it has no candidate

A band key lives in bucket ``key >> (64 - bits)`` of ``2**bits`` buckets,
fixed when the collection is made (Params.band_buckets, sized from
NEARDUP_CAPACITY): a few dozen small fields per HASH keep Redis's compact
listpack encoding, so a band membership costs a field instead of a whole key
per band per document. A bucket and its spilled sets share a hash tag, so they
share a cluster slot and a band script touches one slot. A spilled set is
sorted by handle because a query reads a bounded window of it, in one
O(log n) ZRANGE, or, packed, one GETRANGE of its bytes.

Why packed: a sorted set past Redis' zset-max-listpack-entries (128) becomes a skiplist
and a dict, about 113 bytes a handle against 12 in a listpack, and the sets of a large
collection's hot bands pass it (at 200,000 documents 85% of the spilled sets' bytes were
in skiplists: 91 bytes a document). A packed spill costs 4 bytes a handle (up to twice
that while Redis' greedy growth of an appended string holds room), at any size. Its
writes stay cheap because handles mostly arrive in ascending order: one that belongs at
the end is written there (SETRANGE, amortised O(1)); one behind another writer's batch
is placed by a binary search of the last 1,024 handles, read in one GETRANGE (of the
rest, 4 bytes a probe, when it is older still), and only the handles after it move.
A remove rewrites the string without it, O(n) in the band's size, as deletes are rarer
than adds. On the boilerplate bench (10,000 documents sharing most bands, two writers)
ingest is as fast as with sorted sets and queries read their windows 3x faster.

A passage anchor's key (app.index.sketch) is its 32-bit hash h spread and salted,
(h * ANCHOR_SPREAD) ^ ANCHOR_SALT mod 2**64: its bucket comes from those 64 bits, but
only 32 of them are information. Collections made since short anchors store its field
as h in 4 bytes, any other key in 8: a bijection of the key space (a field's length says
which it was), so the band entries, lookups and buckets are the same as in 8-byte
fields, minus 4 of an anchor entry's 16 bytes in a listpack (80 bytes a document of ~20
anchors).

Collections made since short fields keep every key's field as its low 32 bits: a key is
then known by its place, the bucket's top bits and those 32 (Layout.entry_keys), which
for an anchor's key is still a bijection (the multiplier is odd, so the low 32 bits of
h * SPREAD are a permutation of h). Two keys that share a place share an entry, with
odds of 2**-(32 + bits) a pair: with buckets sized to ~48 entries, about 24 * entries /
2**32 pairs, 0.4 in a million documents of ~66 entries. Each then brings the other's
handles as candidates, which the fingerprint Jaccard or the alignment verifies like
any other, so answers are the same unless a query's candidates were cut at its cap.
This saves 4 of a band entry's 16 bytes as well (~160 bytes a document of ~42 bands).

Collections made since 2-byte fields keep only a key's low 16 bits (field_bytes): a
listpack entry of 10 bytes instead of 12, ~2 bytes of each of a document's ~66 entries.
Places are then shared by about entries / 2**16 of a bucket's pairs: with ~48 entries a
bucket, one entry in 1,400 shares its place with another key, and one document in ~20
brings a stranger's handles as a candidate to some query, to be verified and dropped
like any other. The key bits that tell two bands apart are the bucket's and the field's
together, so a larger collection (more buckets) keeps the same odds. Such a collection's
band keys are only the bits a place can use (PLACE_BITS), so its records keep them short.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence

import numpy as np

from app.store.resp import Interleaved, Rows, Template

# Handles a band keeps inline before it spills to a ZSET: 48 bytes, under
# Redis's default hash-max-listpack-value (64).
MAX_INLINE = 12
# The most band buckets: a bucket is a key's top bits, at most 32, so that a key's place
# (bucket and low 32 bits, short fields) never overlaps. 2**24, the bound until
# 2026-11-26, left a billion documents' ~66 billion entries ~3,900 a bucket, far past
# hash-max-listpack-entries (128): every bucket a hashtable, a dict entry per field.
MOST_BUCKETS = 1 << 32
# The most id buckets: 2**32 handles at 64 ids a bucket.
MOST_ID_BUCKETS = 1 << 26
# Ids per id bucket HASH at the collection's capacity: under hash-max-listpack-entries
# (128) with room to grow 2x past it, as band buckets. An id over hash-max-listpack-value
# (64 bytes) turns its bucket into a hashtable, which costs what one ids HASH did.
IDS_PER_BUCKET = 48
# Band entries per bucket HASH at the collection's capacity: under Redis's
# default hash-max-listpack-entries (128) with room to grow 2x past it. Twice as many
# (half the HASHes, each ~130 bytes besides its entries) saved 80 bytes a document at
# 20,000 documents but cost 12% of the ingest rate: Redis scans a listpack to write
# or read a field, so a write costs it time in proportion to the bucket's entries.
ENTRIES_PER_BUCKET = 48
# What a spilled band's handles are kept under: a ZSET (collections made before packed
# spills), or a packed STRING of them ascending.
SPILL_HEAD = b"S{"
PACKED_HEAD = b"H{"
# A spilled band's field: this, which no handle is, then the set's size (uint32 LE).
SPILLED = b"\xff\xff\xff\xff"
# Handles are stored in 4 bytes, and SPILLED is not one.
MAX_HANDLE = 2**32 - 2
BAND_KEY = struct.Struct("<Q")  # a band key as its HASH field
ANCHOR_FIELD = struct.Struct("<I")  # an anchor's key as its HASH field (short anchors)
# A passage anchor's key is (hash * ANCHOR_SPREAD) ^ ANCHOR_SALT mod 2**64 (the odd
# multiplier moves a 32-bit hash's bits into the top bits that pick its bucket; the salt
# keeps anchors from meeting band keys). ANCHOR_UNSPREAD undoes the multiplication.
ANCHOR_SALT = 0x9E3779B97F4A7C15
ANCHOR_SPREAD = 0xD6E8FEB86659FD93
ANCHOR_UNSPREAD = pow(ANCHOR_SPREAD, -1, 1 << 64)
_U64 = (1 << 64) - 1
# A short field's widths: a key's low 4 bytes, or 2 (collections made since 2-byte fields).
FIELD_WIDTHS = (4, 2)
# Every bit a place can hold in a collection of 2-byte fields: a bucket's (the top 32 at
# most) and a field's (the low 16). Such a collection's band keys are only these bits
# (app.index.sketch), so its records keep them in 6 bytes instead of 8.
PLACE_BITS = 0xFFFFFFFF0000FFFF
HANDLE = struct.Struct("<I")  # a handle as stored inline in a band's field
# The same packing in the struct library of Redis's Lua (app/store/scripts).
HANDLE_FORMAT_LUA = "<I4"
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def _power_of_two_for(items: int, per_bucket: int, most: int) -> int:
    """Buckets (a power of two, 16 to most) that hold items at most per_bucket each."""
    need = max(1, -(-items // per_bucket))
    return min(most, max(16, 1 << (need - 1).bit_length()))


def buckets_for(entries: int) -> int:
    """The number of band buckets (a power of two) for this many band entries."""
    return _power_of_two_for(entries, ENTRIES_PER_BUCKET, MOST_BUCKETS)


def id_buckets_for(ids: int) -> int:
    """The number of id buckets (a power of two) for this many ids."""
    return _power_of_two_for(ids, IDS_PER_BUCKET, MOST_ID_BUCKETS)


class Layout:
    """The key names of one collection, and band commands addressed by them."""

    def __init__(self, collection: str) -> None:
        self.prefix = f"nd:{collection}:".encode()
        self.config = self.prefix + b"config"
        self.next = self.prefix + b"next"
        self.ids = self.prefix + b"ids"
        self.id_count = self.prefix + b"count"
        self._id_head = self.prefix + b"I{"
        self.id_buckets = 0
        self.expiries = self.prefix + b"exp"
        self._doc = self.prefix + b"d:"
        self._text = self.prefix + b"t:"
        self.texts_pattern = self._text + b"*"
        self._lock = self.prefix + b"l:"
        # A bucket's keys are these heads, then the bucket's hex digits in braces.
        self._hash_head = self.prefix + b"B{"
        self._spill_head = self.prefix + SPILL_HEAD
        self.buckets_pattern = self._hash_head + b"*}"
        self._bucket_shift = 64
        self._bucket_shift_u64 = np.uint64(64)
        self._bucket_format = b"%x"
        self._nibble_shifts = np.zeros(1, dtype=np.intp)
        self._templates: dict[tuple[bytes, bool, int], tuple[Template, int, int, int]] = {}
        self.short_anchors = False
        self.short_fields = False
        self.field_bytes = BAND_KEY.size
        self._low_mask = _U64
        self.packed_spills = False
        # The marks bitmap (use_marks), or None in collections made before marks.
        self.marks: bytes | None = None

    def use_band_buckets(self, buckets: int) -> None:
        """Set the collection's number of band buckets (a power of two)."""
        if buckets < 1 or buckets & (buckets - 1) or buckets > MOST_BUCKETS:
            raise ValueError(f"band buckets must be a power of two to 2**32, got {buckets}")
        bits = buckets.bit_length() - 1
        self._bucket_shift = 64 - bits
        self._bucket_shift_u64 = np.uint64(64 - bits)
        digits = max(1, -(-bits // 4))
        self._bucket_format = b"%%0%dx" % digits
        self._nibble_shifts = np.arange(4 * (digits - 1), -1, -4, dtype=np.intp)
        self._templates.clear()

    def use_id_buckets(self, buckets: int) -> None:
        """Set the collection's number of id buckets (a power of two; 0: one ids HASH)."""
        if buckets < 0 or buckets & (buckets - 1):
            raise ValueError(f"id buckets must be 0 or a power of two, got {buckets}")
        self.id_buckets = buckets

    def id_key(self, doc_id: bytes) -> bytes:
        """The HASH that maps this id to its handle."""
        if not self.id_buckets:
            return self.ids
        # CRC-32: fixed for ever by its standard, so an id's bucket never moves.
        return self._id_bucket(zlib.crc32(doc_id) & (self.id_buckets - 1))

    def id_keys(self, first: int, stop: int) -> list[bytes]:
        """The id buckets numbered first to stop - 1 (a part at a time: a collection may
        have millions)."""
        return [self._id_bucket(b) for b in range(first, min(stop, self.id_buckets))]

    def _id_bucket(self, number: int) -> bytes:
        return self._id_head + b"%x}" % number

    def id_pattern(self) -> bytes:
        """A SCAN pattern that matches every id bucket (a name holds no glob character)."""
        return self._id_head + b"*}"

    def id_bucket_number(self, key: bytes) -> int | None:
        """The number of the id bucket named key; None for another key."""
        head = self._id_head
        if not key.startswith(head) or not key.endswith(b"}"):
            return None
        digits = key[len(head) : -1]
        try:
            number = int(digits, 16)
        except ValueError:
            return None
        ours = 0 <= number < self.id_buckets and self._id_bucket(number) == key
        return number if ours else None

    def use_short_anchors(self, on: bool) -> None:
        """Whether anchors' keys are stored as 4-byte fields (collections made since)."""
        self.short_anchors = on

    def use_short_fields(self, on: bool, width: int = 4) -> None:
        """Whether every key's field is its low bytes (collections made since), and how
        many: 4, or 2 (collections made since 2-byte fields)."""
        if on and width not in FIELD_WIDTHS:
            raise ValueError(f"a short field is 2 or 4 bytes, got {width}")
        self.short_fields = on
        self.field_bytes = width if on else BAND_KEY.size
        self._low_mask = (1 << 8 * width) - 1 if on else _U64

    def use_marks(self, on: bool) -> None:
        """Whether the collection keeps the marks bitmap (collections made since)."""
        self.marks = self.prefix + b"M" if on else None

    def use_packed_spills(self, on: bool) -> None:
        """Whether a hot band's handles spill to a packed STRING (collections made since)
        rather than a ZSET; the key head says which (H{ or S{), so scripts can tell."""
        self.packed_spills = on
        self._spill_head = self.prefix + (PACKED_HEAD if on else SPILL_HEAD)

    def entry_keys(self, keys: np.ndarray) -> np.ndarray:
        """Each key as its band entry knows it: itself, or with short fields only its
        place (bucket bits and low field_bytes; band_key reads the same back)."""
        keys = np.asarray(keys, dtype=np.uint64)
        if not self.short_fields:
            return keys
        top = 0 if self._bucket_shift >= 64 else (_U64 >> self._bucket_shift) << self._bucket_shift
        return keys & np.uint64(top | self._low_mask)

    def anchor_hashes(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which keys are anchors' keys stored as 4-byte fields (bool each; none unless
        short_anchors) and every key's would-be anchor hash (uint64)."""
        keys = np.asarray(keys, dtype=np.uint64)
        if not self.short_anchors:
            return np.zeros(len(keys), dtype=bool), keys
        hashes = (keys ^ np.uint64(ANCHOR_SALT)) * np.uint64(ANCHOR_UNSPREAD)  # wraps mod 2**64
        return (hashes >> np.uint64(32)) == 0, hashes

    def field(self, key: int) -> bytes:
        """A 64-bit band key's HASH field: 8 bytes, an anchor's 4 (short_anchors), or any
        key's low field_bytes (short_fields)."""
        if self.short_fields:
            return (key & self._low_mask).to_bytes(self.field_bytes, "little")
        if self.short_anchors:
            h = ((key ^ ANCHOR_SALT) * ANCHOR_UNSPREAD) & _U64
            if h >> 32 == 0:
                return ANCHOR_FIELD.pack(h)
        return BAND_KEY.pack(key)

    @property
    def heads(self) -> tuple[bytes, bytes, bytes]:
        """What a record key, a bucket HASH and a spill ZSET start with, for a script
        that builds them itself (single server only: scripts.CANDIDATES, STORED)."""
        return self._doc, self._hash_head, self._spill_head

    def doc(self, handle: int) -> bytes:
        return self._doc + b"%d" % handle

    def docs(self, handles: Iterable[int]) -> list[bytes]:
        head = self._doc
        return [head + b"%d" % h for h in handles]

    def text(self, handle: int) -> bytes:
        return self._text + b"%d" % handle

    def texts(self, handles: Iterable[int]) -> list[bytes]:
        head = self._text
        return [head + b"%d" % h for h in handles]

    def text_handle(self, key: bytes) -> int:
        """The handle a text key (from texts_pattern) belongs to."""
        return int(key[len(self._text) :])

    def lock(self, doc_id: str) -> bytes:
        return self._lock + doc_id.encode()

    def band_place(self, key: int) -> tuple[bytes, bytes, bytes]:
        """(bucket HASH, field, spill key: ZSET or packed STRING) of a 64-bit band key."""
        # A shift by 64 (one bucket) leaves 0 for every key.
        digits = self._bucket_format % (key >> self._bucket_shift)
        field = self.field(key)
        return self._hash_head + digits + b"}", field, self._spill_head + digits + b"}" + field

    def fits(self, bucket: bytes, field: bytes) -> bool:
        """Whether this layout could have written the entry: a field of its width and, with
        short fields, a bucket number within its bits. Another layout's entries (a
        write that ran on while its collection was deleted and made anew with other
        parameters) do not, and band_key would read them as nonsense."""
        digits = bucket[len(self._hash_head) : -1]
        if len(digits) != len(self._nibble_shifts):  # another count of buckets
            return False
        if not self.short_fields:
            return len(field) in (ANCHOR_FIELD.size, BAND_KEY.size)
        if len(field) != self.field_bytes:
            return False
        try:
            number = int(digits, 16)
        except ValueError:
            return False
        return number >> (64 - self._bucket_shift) == 0 if self._bucket_shift < 64 else number == 0

    def spills_of(self, bucket: bytes, field: bytes) -> list[bytes]:
        """The keys a bucket's spilled field may keep its members in, as band_place names
        them: a sorted set's or a packed string's (an entry of another layout may be
        either)."""
        tail = bucket[len(self._hash_head) :] + field
        return [self.prefix + head + tail for head in (SPILL_HEAD, PACKED_HEAD)]

    def band_key(self, bucket: bytes, field: bytes) -> int:
        """The band key a bucket HASH's field stands for (with short fields: its
        entry_keys form, from the bucket's name)."""
        if self.short_fields:
            low = int.from_bytes(field, "little")
            if self._bucket_shift >= 64:
                return low
            number = int(bucket[len(self._hash_head) : -1], 16)
            return (number << self._bucket_shift) | low
        if len(field) == ANCHOR_FIELD.size:
            return ((ANCHOR_FIELD.unpack(field)[0] * ANCHOR_SPREAD) & _U64) ^ ANCHOR_SALT
        return int(BAND_KEY.unpack(field)[0])

    def band_calls(
        self, handle: int, keys: Iterable[int], band: bool | None = None
    ) -> list[tuple[bytes, ...]]:
        """The KEYS and ARGV of a band script (scripts.BAND_ADD, BAND_REMOVE) for a
        handle and each band key; band (an add in a collection with marks) says whether
        the keys are band keys (True) or anchors (False)."""
        packed, decimal, inline = HANDLE.pack(handle), b"%d" % handle, b"%d" % MAX_INLINE
        form: tuple[bytes, ...] = (b"1" if self.packed_spills else b"0",)
        if band is not None and self.marks is not None:
            form += (b"1" if band else b"0",)
        places = map(self.band_place, keys)
        return [
            (bucket, spill, field, packed, decimal, inline, *form)
            for bucket, field, spill in places
        ]

    def band_commands(
        self, command: bytes, keys: np.ndarray, handles: np.ndarray | None = None
    ) -> Rows | Interleaved:
        """`command HASH field [handle]` for each band key (and its handle, uint32 LE).

        Built at once by numpy from a template row, since building each command
        in Python costs more than Redis takes to run it (a template per field width:
        anchors' 4-byte fields and other keys' 8 come as two, interleaved in order).
        """
        keys = np.ascontiguousarray(keys, dtype="<u8").ravel()
        if self.short_fields:
            return self._rows(command, keys, self._low_fields(keys), handles)
        short, hashes = self.anchor_hashes(keys)
        n_short = int(short.sum())
        if n_short == 0:
            return self._rows(command, keys, keys.view(np.uint8).reshape(-1, 8), handles)
        fields = hashes.astype("<u4").view(np.uint8).reshape(-1, 4)
        if n_short == len(keys):
            return self._rows(command, keys, fields, handles)
        parts = []
        n = len(keys)
        cuts: list[tuple[slice | np.ndarray, int]]
        if short[n - n_short :].all():  # band keys, then anchors (an ingest's): two slices
            cuts = [(slice(0, n - n_short), 8), (slice(n - n_short, n), 4)]
            places = [np.arange(0, n - n_short), np.arange(n - n_short, n)]
        else:
            places = [np.flatnonzero(~short), np.flatnonzero(short)]
            cuts = [(places[0], 8), (places[1], 4)]
        for (at, width), where in zip(cuts, places, strict=True):
            cut = fields[at] if width == 4 else keys[at].view(np.uint8).reshape(-1, 8)
            part = self._rows(command, keys[at], cut, None if handles is None else handles[at])
            parts.append((part, where))
        return Interleaved(parts, n)

    def _low_fields(self, keys: np.ndarray) -> np.ndarray:
        """Each key's low field_bytes (little-endian), a row each."""
        return np.ascontiguousarray(keys.view(np.uint8).reshape(-1, 8)[:, : self.field_bytes])

    def _rows(
        self, command: bytes, keys: np.ndarray, fields: np.ndarray, handles: np.ndarray | None
    ) -> Rows:
        """band_commands of keys whose fields (one row each) have one width."""
        width = fields.shape[1]
        template, at_digits, at_field, at_handle = self._template(
            command, handles is not None, width
        )
        columns = [(at_digits, self._bucket_digits(keys)), (at_field, fields)]
        if handles is not None:
            packed = np.ascontiguousarray(handles, dtype="<u4").view(np.uint8).reshape(-1, 4)
            columns.append((at_handle, packed))
        return Rows(template, columns, len(keys))

    @property
    def bucket_bits(self) -> int:
        """How many top bits of a band key number its bucket (0 to 32)."""
        return 64 - self._bucket_shift

    @property
    def band_heads(self) -> tuple[bytes, bytes, bytes]:
        """What a band_*_many script needs to name keys itself: the buckets' key head,
        the spill sets' head and how many hex digits name a bucket (decimal)."""
        return self._hash_head, self._spill_head, b"%d" % len(self._nibble_shifts)

    def band_entries(self, keys: np.ndarray, handles: np.ndarray) -> list[tuple[int, np.ndarray]]:
        """Rows for a band_*_many script, one per band key and handle: the bucket's hex
        digits and "}" (the end of its key's name), the field and the handle (uint32
        LE); built by numpy at once, a block of rows per field width (8, then anchors' 4
        with short_anchors; only field_bytes with short_fields), in order inside each:
        (width, rows) for each width some key has."""
        keys = np.ascontiguousarray(keys, dtype="<u8").ravel()
        packed = np.ascontiguousarray(handles, dtype="<u4").view(np.uint8).reshape(-1, 4)
        if self.short_fields:
            rows = [self._bucket_tails(keys), self._low_fields(keys), packed]
            return [(self.field_bytes, np.hstack(rows))]
        short, hashes = self.anchor_hashes(keys)
        out: list[tuple[int, np.ndarray]] = []
        for chosen, width in ((~short, 8), (short, 4)):
            at = np.flatnonzero(chosen)
            if not len(at) and out:
                continue
            if width == 8:
                fields = keys[at].view(np.uint8).reshape(-1, 8)
            else:
                fields = hashes[at].astype("<u4").view(np.uint8).reshape(-1, 4)
            out.append((width, np.hstack([self._bucket_tails(keys[at]), fields, packed[at]])))
        return out

    def _bucket_tails(self, keys: np.ndarray) -> np.ndarray:
        """The hex digits of each band key's bucket and "}", one row (uint8) a key."""
        close = np.full((len(keys), 1), ord("}"), dtype=np.uint8)
        return np.hstack([self._bucket_digits(keys).astype(np.uint8), close])

    def _bucket_digits(self, keys: np.ndarray) -> np.ndarray:
        """The hex digits (ASCII) of each band key's bucket, one row a key."""
        if self._bucket_shift < 64:
            buckets = (keys >> self._bucket_shift_u64).astype(np.intp)
        else:  # one bucket; numpy, unlike Python, does not shift a uint64 by 64 to 0
            buckets = np.zeros(len(keys), dtype=np.intp)
        return _HEX[(buckets[:, None] >> self._nibble_shifts) & 15]

    def _template(
        self, command: bytes, with_handle: bool, width: int = 8
    ) -> tuple[Template, int, int, int]:
        """A band_commands template (fields of width bytes) and where its bucket digits,
        field and handle go."""
        made = self._templates.get((command, with_handle, width))
        if made is None:
            bucket, _, _ = self.band_place(0)
            field = bytes(width)
            args: Sequence[bytes] = [command, bucket, field] + ([bytes(4)] if with_handle else [])
            template = Template(*args)
            at_digits = template.at(1) + len(self._hash_head)
            made = (template, at_digits, template.at(2), template.at(3) if with_handle else 0)
            self._templates[command, with_handle, width] = made
        return made
