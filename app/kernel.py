"""The Python face of the C kernel (native/, API: neardup.h); the only importer of app._native.

Every function makes one C call per batch: texts are packed into one buffer with offsets,
fingerprints and winnowing selections travel packed as (values, offsets), and the C code runs
without the GIL, so threads scale across cores. (winnow() calls again, for the rest of the
batch, when its selections outgrow the room it guessed for them.) Invalid input raises a
:class:`KernelError` (a ``ValueError``) whose message says what is wrong and, for texts, which
one.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from app._native import ffi, lib
from app.core import errors, shingles

__all__ = [
    "ABI_VERSION",
    "DISGUISED",
    "FOLD_COMPAT",
    "FOLD_CONFUSABLE",
    "FOLD_HYPHEN",
    "FOLD_INVISIBLE",
    "LATEST_TOKENIZER",
    "MAX_FINGERPRINT_SIZE",
    "MAX_K",
    "MAX_NUM_PERM",
    "TOKENIZERS",
    "Encoded",
    "InvalidParameterError",
    "InvalidTextError",
    "KernelError",
    "MalformedFingerprintError",
    "MalformedLayoutError",
    "Sketch",
    "Winnowed",
    "band_keys",
    "compact_layout",
    "confusables_version",
    "decode_fingerprints",
    "encode_fingerprint",
    "encode_fingerprints",
    "encoded_bound",
    "expand_layout",
    "is_compact_layout",
    "jaccard",
    "jaccard_many",
    "jaccard_many_encoded",
    "jaccard_many_packed",
    "normalize",
    "pack_layouts",
    "parse_shingle",
    "simd_level",
    "sketch",
    "tune_allocator",
    "unicode_version",
    "winnow",
    "winnow_window",
]

ABI_VERSION = 10
"""The kernel interface (ND_ABI_VERSION in native/neardup.h) this module is written for."""


def _check_abi(native: Any) -> None:
    """Refuse a compiled kernel built from another version of native/neardup.h.

    A stale extension (an old build left next to newer Python code) would otherwise fail
    later, on a missing function, or silently, on a changed meaning.
    """
    try:
        found = (int(native.nd_abi_version()), int(native.ND_ABI_VERSION))
    except AttributeError:
        found = None
    if found != (ABI_VERSION, ABI_VERSION):
        built = "an unversioned build" if found is None else f"ABI {found[0]}"
        raise ImportError(
            f"app._native is {built} but app.kernel needs kernel ABI {ABI_VERSION}: "
            "rebuild the extension (make install, or pip install .)"
        )


_check_abi(lib)

MAX_K: int = lib.ND_MAX_K
if shingles.MAX_K != MAX_K:  # pragma: no cover - a build from mismatched sources
    raise ImportError(f"app.core.shingles.MAX_K is {shingles.MAX_K}, the kernel's {MAX_K}")
MAX_NUM_PERM: int = lib.ND_MAX_NUM_PERM
MAX_FINGERPRINT_SIZE: int = lib.ND_MAX_FP_SIZE

TOKENIZERS: tuple[int, ...] = (
    lib.ND_TOKENIZER_1,
    lib.ND_TOKENIZER_2,
    lib.ND_TOKENIZER_3,
    lib.ND_TOKENIZER_4,
)
"""What a text is read as (native/neardup.h, enum nd_tokenizer): 1 case-folds; 2 also folds
compatibility forms, ignorable and format code points, confusable look-alikes and words
hyphenated across a line end; 3 folds as 2 but decomposes (NFKD) and drops accents and other
marks, folds look-alikes towards Latin only and never two letters of one script alike, and
flags only mixed-script words; 4 folds as 3 and also each small letter 3 leaves alone that
looks like one ASCII letter or digit itself (Cyrillic shha, komi de; Latin alpha; Greek nu;
Armenian ho), the look-alikes a disguise uses that 3 judged by their capitals. A collection
keeps the one its sketches were made with."""
LATEST_TOKENIZER: int = max(TOKENIZERS)

FOLD_COMPAT: int = lib.ND_FOLD_COMPAT
FOLD_CONFUSABLE: int = lib.ND_FOLD_CONFUSABLE
FOLD_INVISIBLE: int = lib.ND_FOLD_INVISIBLE
FOLD_HYPHEN: int = lib.ND_FOLD_HYPHEN
"""Bits of :attr:`Winnowed.folds`: what tokenizers 2 to 4 folded in a selection's words (3 and 4
set FOLD_CONFUSABLE only on a word mixing a folded look-alike with an unfolded Latin letter)."""
DISGUISED: int = FOLD_CONFUSABLE | FOLD_INVISIBLE
"""The fold bits that mark a word as disguised (look-alike letters or invisible characters,
which plain copying and PDF export do not make), as containment's ``disguised`` reports it;
ligatures, full-width forms and line-end hyphens are ordinary typography."""
U8 = npt.NDArray[np.uint8]

U32 = npt.NDArray[np.uint32]
U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]


class KernelError(errors.Invalid):
    """Input the kernel cannot work with (a ValueError)."""

    title = "Invalid text"


class InvalidTextError(KernelError):
    """A text is not valid UTF-8 (bytes) or cannot be encoded as UTF-8 (str)."""


class InvalidParameterError(KernelError):
    """A shingle spec, size, threshold or array argument is out of range."""


_KINDS = {"word": lib.ND_SHINGLE_WORD, "char": lib.ND_SHINGLE_CHAR}


def parse_shingle(spec: str) -> tuple[str, int]:
    """Parse ``"word:K"`` or ``"char:K"`` (1 <= K <= 16) into ``(kind, K)``
    (app.core.shingles' rule, raised here as the kernel's InvalidParameterError)."""
    try:
        return shingles.parse_shingle(spec)
    except shingles.ShingleSpecError as exc:
        raise InvalidParameterError(str(exc)) from None


_spec_cache: dict[str, tuple[str, int]] = {}
_INTEGER = (int, np.integer)


def _spec(spec: str) -> tuple[str, int]:
    """parse_shingle, remembered per spec string (sketch is called per request)."""
    try:
        return _spec_cache[spec]
    except (KeyError, TypeError):
        parsed = parse_shingle(spec)
        if len(_spec_cache) < 64:
            _spec_cache[spec] = parsed
        return parsed


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if type(value) is int and lo <= value <= hi:
        return value
    if isinstance(value, bool) or not isinstance(value, _INTEGER):
        raise InvalidParameterError(f"{name} must be an integer, got {value!r}")
    if not lo <= int(value) <= hi:
        raise InvalidParameterError(f"{name} must be between {lo} and {hi}, got {value}")
    return int(value)


def _tokenizer(value: Any) -> int:
    if type(value) is int and value in TOKENIZERS:
        return value
    raise InvalidParameterError(f"tokenizer must be one of {list(TOKENIZERS)}, got {value!r}")


_UNSPACED_SHIFT: int = lib.ND_FLAG_UNSPACED_SHIFT


def _flags(simd: bool, unspaced_k: int = 0) -> int:
    return (0 if simd else lib.ND_FLAG_SCALAR) | (unspaced_k << _UNSPACED_SHIFT)


def _unspaced(kind: str, tokenizer: int, unspaced_k: int) -> int:
    """Check an explicit K for unspaced scripts (0: tokenizer 2's and 3's own, 2K + 1)."""
    unspaced_k = _check_int("unspaced_k", unspaced_k, 0, MAX_K)
    if unspaced_k and (kind != "word" or tokenizer < 2):
        raise InvalidParameterError("unspaced_k applies to word shingles of tokenizers 2 to 4 only")
    return unspaced_k


def unspaced_k(k: int) -> int:
    """Tokenizers 2 to 4: the K of a word:K shingle that ends at a letter of a script written
    without spaces (Han, kana, Thai, Lao, Khmer, Myanmar): 2K + 1, at most MAX_K (ND_UNSPACED_K;
    measured by bench/languages.py, docs/languages.md)."""
    return min(2 * k + 1, MAX_K)


@dataclass(frozen=True, eq=False)
class Sketch:
    """Sketches of n texts.

    ``signatures``: uint32 [n, num_perm] one-permutation MinHash values (for LSH bands).
    ``fp_values`` / ``fp_offsets``: all fingerprints packed; text i's is
    ``fp_values[fp_offsets[i]:fp_offsets[i + 1]]``, sorted ascending, distinct.
    ``shingles``: uint64 [n], the distinct shingle count per text.
    """

    signatures: U32
    fp_values: U32
    fp_offsets: U64
    shingles: U64

    def __len__(self) -> int:
        return len(self.shingles)

    @functools.cached_property
    def fingerprints(self) -> list[U32]:
        """Per-text fingerprints (views into ``fp_values``)."""
        bounds = self.fp_offsets.tolist()
        return [self.fp_values[bounds[i] : bounds[i + 1]] for i in range(len(bounds) - 1)]


def _encode_error(i: int, text: str, e: UnicodeEncodeError) -> InvalidTextError:
    return InvalidTextError(
        f"text {i} cannot be encoded as UTF-8 (code point U+{ord(text[e.start]):04X} "
        f"at index {e.start}: {e.reason})"
    )


def _pack_texts(texts: Sequence[str | bytes]) -> tuple[bytes, list[int]]:
    """All texts as one UTF-8 buffer, and each text's length in bytes."""
    if isinstance(texts, str | bytes | bytearray | memoryview):
        raise TypeError("texts must be a sequence of texts (a list), not a single text")
    if not isinstance(texts, list | tuple):
        texts = list(texts)  # iterated twice below on the slow path
    try:  # the common case: all str, all encodable
        parts = [t.encode("utf-8") for t in texts]  # type: ignore[union-attr]
    except (AttributeError, UnicodeEncodeError):
        if all(type(t) is bytes for t in texts):  # UTF-8 already: the C decoder checks it
            return b"".join(texts), list(map(len, texts))  # type: ignore[arg-type]
        parts = []
        for i, t in enumerate(texts):
            if isinstance(t, str):
                try:
                    parts.append(t.encode("utf-8"))
                except UnicodeEncodeError as e:
                    raise _encode_error(i, t, e) from None
            elif isinstance(t, bytes | bytearray | memoryview):
                parts.append(bytes(t))
            else:
                raise TypeError(f"text {i} must be str or bytes, got {type(t).__name__}") from None
    return b"".join(parts), list(map(len, parts))


def _utf8_error(i: int, raw: bytes) -> InvalidTextError:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return InvalidTextError(f"text {i} is not valid UTF-8 at byte {e.start}: {e.reason}")
    return InvalidTextError(f"text {i} is not valid UTF-8")


def sketch(
    texts: Sequence[str | bytes],
    *,
    shingle: str = "word:3",
    num_perm: int = 128,
    fingerprint_size: int = 256,
    seed: int = 1,
    tokenizer: int = 1,
    simd: bool = True,
    unspaced_k: int = 0,
) -> Sketch:
    """Signatures, fingerprints and shingle counts of many texts in one C call.

    ``texts``: a list of str or UTF-8 bytes (bytes are checked by the C decoder).
    ``shingle``: ``"word:K"`` or ``"char:K"``. ``tokenizer``: 1 to 4 (:data:`TOKENIZERS`).
    ``simd=False`` forces the scalar paths. Tokenizers 2 to 4 make each letter of Han, kana, Thai,
    Lao, Khmer and Myanmar a token, and a word shingle ending at one :func:`unspaced_k` tokens
    long; ``unspaced_k`` sets another length (see ND_FLAG_UNSPACED in native/neardup.h).
    """
    kind, k = _spec(shingle)
    tok = _tokenizer(tokenizer)
    unspaced = _unspaced(kind, tok, unspaced_k)
    num_perm = _check_int("num_perm", num_perm, 1, MAX_NUM_PERM)
    fp_size = _check_int("fingerprint_size", fingerprint_size, 1, MAX_FINGERPRINT_SIZE)
    seed = _check_int("seed", seed, 0, 2**64 - 1)
    data, lengths = _pack_texts(texts)
    n = len(lengths)
    offsets = np.fromiter(itertools.accumulate(lengths, initial=0), dtype=np.uint64, count=n + 1)
    fp_cap = n * fp_size  # room for every fingerprint; trimmed below when mostly unused
    sigs = np.empty((n, num_perm), dtype=np.uint32)
    fp_values = np.empty(fp_cap, dtype=np.uint32)
    fp_offsets = np.empty(n + 1, dtype=np.uint64)
    shingles = np.empty(n, dtype=np.uint64)
    status = np.empty(n, dtype=np.int32)
    rc = lib.nd_sketch_batch_packed(
        ffi.from_buffer("uint8_t[]", data),
        ffi.from_buffer("uint64_t[]", offsets),
        n,
        _KINDS[kind],
        tok,
        k,
        num_perm,
        fp_size,
        seed,
        _flags(simd, unspaced),
        ffi.from_buffer("uint32_t[]", sigs, require_writable=True),
        ffi.from_buffer("uint32_t[]", fp_values, require_writable=True),
        fp_cap,
        ffi.from_buffer("uint64_t[]", fp_offsets, require_writable=True),
        ffi.from_buffer("uint64_t[]", shingles, require_writable=True),
        ffi.from_buffer("int32_t[]", status, require_writable=True),
    )
    if rc == lib.ND_E_NOMEM:
        raise MemoryError("the kernel could not allocate its scratch memory")
    if rc not in (lib.ND_OK, lib.ND_E_SPACE) or (rc == lib.ND_E_SPACE and status.all()):
        raise InvalidParameterError(f"the kernel refused the parameters (code {rc})")
    if status.any():
        i = int(np.flatnonzero(status)[0])
        if status[i] == lib.ND_E_NOMEM:
            raise MemoryError(f"the kernel ran out of memory on text {i}")
        if status[i] == lib.ND_E_SPACE:
            raise KernelError(f"internal error: fingerprint space too small at text {i}")
        raise _utf8_error(i, data[int(offsets[i]) : int(offsets[i + 1])])
    used = int(fp_offsets[-1]) if n else 0
    if used < fp_cap:
        fp_values = fp_values[:used].copy() if used < fp_cap // 2 else fp_values[:used]
    return Sketch(sigs, fp_values, fp_offsets, shingles)


def winnow_window(shingle: str, passage_words: int) -> int:
    """The winnowing window, in shingles, that guarantees a selection in every shared run of
    ``passage_words`` words (see :func:`winnow`)."""
    kind, k = _spec(shingle)
    p = _check_int("passage_words", passage_words, 1, lib.ND_MAX_WINDOW)
    # A run of P words holds P - K + 1 word shingles. In the normalized text it is at least
    # 2P - 1 code points (a letter per word, a space between), so it holds at least 2P - K char
    # shingles; longer words only make it hold more windows.
    window = p - k + 1 if kind == "word" else 2 * p - k
    if window < 1:
        least = k if kind == "word" else (k + 2) // 2
        raise InvalidParameterError(
            f"passage_words must be at least {least} for shingle {shingle!r}, got {p}"
        )
    if window > lib.ND_MAX_WINDOW:
        raise InvalidParameterError(
            f"passage_words {p} makes a window of {window} shingles, over {lib.ND_MAX_WINDOW}"
        )
    return window


@dataclass(frozen=True, eq=False)
class Winnowed:
    """Winnowing selections of n texts, packed: text i's are entries
    ``offsets[i]:offsets[i + 1]`` of ``hashes``, ``starts`` and ``ends``, in text order.

    ``hashes``: uint64, the selected shingles' hashes (the sketch's shingle hashes).
    ``starts`` / ``ends``: int64, the code points of the text (indices into the Python str)
    that the selected shingle covers, ``text[start:end]``.
    ``offsets``: uint64 [n + 1]. ``window``: the window, in shingles, that selected them.
    ``folds``: uint8, per selection the FOLD_* bits of what tokenizers 2 to 4 folded in its words
    (all 0 with tokenizer 1); None where not asked for.
    """

    hashes: U64
    starts: I64
    ends: I64
    offsets: U64
    window: int
    folds: U8 | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def selections(self, i: int) -> tuple[U64, I64, I64]:
        """Text i's (hashes, starts, ends), views into the packed arrays."""
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.hashes[lo:hi], self.starts[lo:hi], self.ends[lo:hi]


def winnow(
    texts: Sequence[str | bytes],
    *,
    shingle: str = "word:3",
    passage_words: int = 30,
    seed: int = 1,
    tokenizer: int = 1,
    folds: bool = False,
    simd: bool = True,
    unspaced_k: int = 0,
) -> Winnowed:
    """Winnowing fingerprints of many texts in one C call (Schleimer, Wilkerson, Aiken 2003).

    The shingles and their hashes are exactly those of :func:`sketch` with the same ``shingle``
    and ``seed``. Of every window of ``w`` consecutive shingles the one with the smallest hash
    is selected, the rightmost one on ties; each selected shingle appears once, with the code
    points it covers. Any run of ``passage_words`` words that two texts share then holds a
    shingle selected in both, whose spans lie inside the run in both texts, because the run
    holds at least one whole window (:func:`winnow_window`):

    - ``word:K``: ``w = passage_words - K + 1``.
    - ``char:K``: ``w = 2 * passage_words - K``. A char shingle is K code points of the
      normalized text (words joined by single spaces), and P words make at least 2P - 1 of
      those, however short the words; so the guarantee is in words for both kinds, and a char
      window is as long as the shortest possible passage allows. (Also: any 2P - 1 code points
      that two normalized texts share hold a selection.)

    A text with fewer shingles than ``w`` (but at least one) selects its minimum, one window of
    all its shingles. A text with fewer than K words (char: normalized code points) has no
    whole shingle and selects nothing, unlike :func:`sketch`, which makes one shingle of them.

    Spans are code point offsets into the str (not UTF-8 bytes; for bytes input, into its
    decoded text): a word shingle covers its first word's first code point to one past its
    last word's last one; a char shingle its first to its last letter or digit, or, for a
    ``char:1`` shingle that is the space between two words, what lies between them. A code
    point that case-folds to letters of two words (U+1FB7 folds to alpha, a combining mark,
    iota) lies in both. A run of equal hashes (a word repeated more than K times) selects
    every position in it, as the rightmost-minimum rule says.

    ``texts``: a list of str or UTF-8 bytes. ``tokenizer``: 1 to 4 (:data:`TOKENIZERS`);
    ``folds=True`` also gives :attr:`Winnowed.folds`. ``simd=False`` forces the scalar paths.

    Word shingles of tokenizers 2 to 4: letters of scripts written without spaces are tokens, and
    ``unspaced_k`` as for :func:`sketch` (a words layout, ``word:1``, wants 1). A shared run
    of them needs ``passage_words - K + unspaced_k`` letters for the guarantee. Ties are
    broken robustly (a window keeps the previous selection while it is inside), so a letter
    repeated selects once per window, not at every position.
    """
    kind, k = _spec(shingle)
    tok = _tokenizer(tokenizer)
    unspaced = _unspaced(kind, tok, unspaced_k)
    window = winnow_window(shingle, passage_words)
    seed = _check_int("seed", seed, 0, 2**64 - 1)
    data, lengths = _pack_texts(texts)
    n = len(lengths)
    offsets = np.fromiter(itertools.accumulate(lengths, initial=0), dtype=np.uint64, count=n + 1)
    # Random hashes select about 2 / (w + 1) of the shingles; texts that select more (repeated
    # words) only cost a second call for the texts from the first that did not fit.
    per_byte = 1 / 3 if kind == "word" else 1.0
    # A window of one selects every shingle (a words layout): prose holds fewer than
    # per_byte words a byte (one-letter words hold more, and take the second call), and
    # a room of three times that was filled a third, then copied.
    expected = (3 / (window + 1) if window > 1 else 1) * per_byte * len(data)
    cap = int(expected) + n + 64
    sel_offsets = np.zeros(n + 1, dtype=np.uint64)
    parts: list[tuple[npt.NDArray[Any], ...]] = []
    done = 0
    total = 0
    buf = ffi.from_buffer("uint8_t[]", data)
    while done < n:
        left = n - done
        hashes = np.empty(cap, dtype=np.uint64)
        starts = np.empty(cap, dtype=np.int64)
        ends = np.empty(cap, dtype=np.int64)
        fl = np.empty(cap if folds else 0, dtype=np.uint8)
        offs = np.empty(left + 1, dtype=np.uint64)
        status = np.empty(left, dtype=np.int32)
        rc = lib.nd_winnow_batch(
            buf,
            ffi.from_buffer("uint64_t[]", offsets[done:]),
            left,
            _KINDS[kind],
            tok,
            k,
            window,
            seed,
            _flags(simd, unspaced),
            ffi.from_buffer("uint64_t[]", hashes, require_writable=True),
            ffi.from_buffer("int64_t[]", starts, require_writable=True),
            ffi.from_buffer("int64_t[]", ends, require_writable=True),
            cap,
            ffi.from_buffer("uint64_t[]", offs, require_writable=True),
            ffi.from_buffer("int32_t[]", status, require_writable=True),
            ffi.from_buffer("uint8_t[]", fl, require_writable=True) if folds else ffi.NULL,
        )
        if rc == lib.ND_E_NOMEM:
            raise MemoryError("the kernel could not allocate its scratch memory")
        if rc not in (lib.ND_OK, lib.ND_E_SPACE):
            raise InvalidParameterError(f"the kernel refused the parameters (code {rc})")
        fitted = left if rc == lib.ND_OK else int(np.argmax(status == lib.ND_E_SPACE))
        bad = np.flatnonzero(status[:fitted])
        if bad.size:
            i = done + int(bad[0])
            raise _utf8_error(i, data[int(offsets[i]) : int(offsets[i + 1])])
        used = int(offs[fitted])
        parts.append((hashes[:used], starts[:used], ends[:used], fl[: used if folds else 0]))
        sel_offsets[done + 1 : done + fitted + 1] = offs[1 : fitted + 1] + np.uint64(total)
        total += used
        done += fitted
        if done < n:
            cap *= 2
    if len(parts) == 1:  # the usual case: trim the room to what was used
        h, s, e, f = (a.copy() if 2 * len(a) < cap else a for a in parts[0])
    else:
        h, s, e, f = (
            np.concatenate([part[j] for part in parts]) if parts else np.zeros(0, dtype)
            for j, dtype in enumerate((np.uint64, np.int64, np.int64, np.uint8))
        )
    return Winnowed(h, s, e, sel_offsets, window, f if folds else None)


def pack_layouts(anchors: Winnowed, words: Winnowed, bits: int = 0) -> list[bytes]:
    """Each text's passage layout, byte for byte what app.index.passages.Layout.pack makes
    of it, in one C call: from its anchors (:func:`winnow` of the passage shingle) and its
    words (:func:`winnow` with ``word:1`` and one word a window) of the same n texts.
    bits 0: format 1 (4-bit word hashes); 4 to 16: format 3 with that many bits a word."""
    if bits and not lib.ND_LAYOUT_BITS_MIN <= bits <= lib.ND_LAYOUT_BITS_MAX:
        raise InvalidParameterError(f"word hashes of {bits} bits; expected 0, or 4 to 16")
    n = len(anchors.offsets) - 1
    if n < 0 or len(words.offsets) != n + 1:
        raise InvalidParameterError("anchors and words must be of the same texts")
    a_offs = np.ascontiguousarray(anchors.offsets, dtype=np.uint64)
    w_offs = np.ascontiguousarray(words.offsets, dtype=np.uint64)
    a_hashes = np.ascontiguousarray(anchors.hashes, dtype=np.uint64)
    a_starts = np.ascontiguousarray(anchors.starts, dtype=np.int64)
    w_hashes = np.ascontiguousarray(words.hashes, dtype=np.uint64)
    w_starts = np.ascontiguousarray(words.starts, dtype=np.int64)
    w_ends = np.ascontiguousarray(words.ends, dtype=np.int64)
    a_count, w_count = len(a_hashes), len(w_hashes)
    if len(a_starts) != a_count or len(w_starts) != w_count or len(w_ends) != w_count:
        raise InvalidParameterError("hashes, starts and ends must be of the same length")
    inputs = (
        ffi.from_buffer("uint64_t[]", a_hashes),
        ffi.from_buffer("int64_t[]", a_starts),
        a_count,
        ffi.from_buffer("uint64_t[]", a_offs),
        ffi.from_buffer("uint64_t[]", w_hashes),
        ffi.from_buffer("int64_t[]", w_starts),
        ffi.from_buffer("int64_t[]", w_ends),
        w_count,
        ffi.from_buffer("uint64_t[]", w_offs),
        n,
    )
    out_offsets = np.zeros(n + 1, dtype=np.uint64)
    outputs = (ffi.from_buffer("uint64_t[]", out_offsets, require_writable=True),)
    if bits:
        # ND_LAYOUT3_MAX summed over the texts: 20 + 8 an anchor + 12 a word.
        cap = 20 * n + 8 * a_count + 12 * w_count
        out = np.empty(cap, dtype=np.uint8)
        buf = ffi.from_buffer("uint8_t[]", out, require_writable=True)
        rc = lib.nd_layout_pack3_batch(*inputs, bits, buf, cap, *outputs)
    else:
        # ND_LAYOUT_MAX summed over the texts, rounded up: 12 + 8 an anchor + 9.5 a word.
        cap = 13 * n + 8 * a_count + 10 * w_count
        out = np.empty(cap, dtype=np.uint8)
        buf = ffi.from_buffer("uint8_t[]", out, require_writable=True)
        rc = lib.nd_layout_pack_batch(*inputs, buf, cap, *outputs)
    if rc == lib.ND_E_ARG:
        raise InvalidParameterError(
            "offsets must be non-decreasing and within the arrays"
            + (f", and a text under {lib.ND_LAYOUT_HASHED:,} words" if bits else "")
        )
    if rc != lib.ND_OK:  # pragma: no cover - cap is the documented bound
        raise KernelError(f"packing passage layouts failed (code {rc})")
    raw = out[: int(out_offsets[n])].tobytes()
    ends = out_offsets.tolist()
    return [raw[a:b] for a, b in itertools.pairwise(ends)]


def _fingerprint(name: str, x: Any) -> U32:
    if type(x) is np.ndarray and x.dtype == np.uint32 and x.ndim == 1 and x.flags.c_contiguous:
        return x  # the common case, checked cheaply (called once per query)
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise InvalidParameterError(f"{name} must be a 1-D array of uint32, got shape {arr.shape}")
    if arr.dtype != np.uint32:
        if arr.size and (arr.dtype.kind not in "iu" or arr.min() < 0 or arr.max() > 0xFFFFFFFF):
            raise InvalidParameterError(f"{name} must hold uint32 values")
        arr = arr.astype(np.uint32)
    return np.ascontiguousarray(arr)


def _unsorted(arr: U32) -> bool:
    return len(arr) > 1 and bool(np.any(arr[1:] <= arr[:-1]))


def _sorted_fingerprint(name: str, x: Any) -> U32:
    """A fingerprint as _fingerprint gives it, refused unless sorted and distinct: the
    intersections assume it, and their SIMD and scalar paths disagree on other input. (A
    query's order the C calls check themselves, in one pass: see _refused.)"""
    arr = _fingerprint(name, x)
    if _unsorted(arr):
        raise InvalidParameterError(f"{name} must be sorted and distinct")
    return arr


def _refused(rc: int, query: U32, what: str) -> InvalidParameterError:
    """The error for a Jaccard call the kernel refused: the query out of order, which it
    checks (named here, off the hot path), or else what."""
    if _unsorted(query):
        return InvalidParameterError("query must be sorted and distinct")
    return InvalidParameterError(f"the kernel refused the arguments (code {rc}): {what}")


def _index_array(name: str, x: Any, dtype: type) -> Any:
    """x as a contiguous array of dtype (offsets, starts, counts), refusing values that
    do not fit it (numpy raises OverflowError, which is no ValueError)."""
    given = x if isinstance(x, np.ndarray) else None
    if given is not None and given.dtype.kind == "i" and given.size and int(given.min()) < 0:
        # numpy casts a negative signed array to unsigned by wrapping it, silently
        raise InvalidParameterError(f"{name} must hold {np.dtype(dtype).name} values: negative")
    try:
        return np.ascontiguousarray(x, dtype=dtype)
    except (OverflowError, TypeError, ValueError) as exc:
        raise InvalidParameterError(
            f"{name} must hold {np.dtype(dtype).name} values: {exc}"
        ) from None


def _threshold(threshold: float) -> float:
    t = float(threshold)
    if t != t:
        raise InvalidParameterError("threshold must be a number, got NaN")
    return t


def jaccard(a: Any, b: Any, *, fingerprint_size: int = 256, simd: bool = True) -> float:
    """Bottom-N Jaccard estimate of two fingerprints made with ``fingerprint_size``.

    Exact when both fingerprints are complete (shorter than ``fingerprint_size``).
    """
    b_arr = _sorted_fingerprint("b", b)
    offsets = np.array([0, len(b_arr)], dtype=np.uint64)
    out = jaccard_many_packed(a, b_arr, offsets, fingerprint_size=fingerprint_size, simd=simd)
    return float(out[0])


def jaccard_many_packed(
    query: Any,
    values: Any,
    offsets: Any,
    threshold: float = 0.0,
    *,
    fingerprint_size: int = 256,
    simd: bool = True,
) -> npt.NDArray[np.float64]:
    """One query fingerprint against packed candidates (``values``, ``offsets`` of n + 1).

    Returns float64 [n]: the estimate, or 0.0 where it is below ``threshold``. The query
    must be sorted and distinct (the kernel checks); so must each candidate, which is not
    checked here (a scan's candidates come from stored records): jaccard_many checks them.
    """
    fp_size = _check_int("fingerprint_size", fingerprint_size, 1, MAX_FINGERPRINT_SIZE)
    t = _threshold(threshold)
    q = _fingerprint("query", query)
    vals = _fingerprint("values", values)
    offs = _index_array("offsets", offsets, np.uint64)
    if offs.ndim != 1 or offs.shape[0] < 1:
        raise InvalidParameterError("offsets must be a 1-D array of n + 1 uint64 values")
    n = offs.shape[0] - 1
    if n and int(offs[n]) > vals.shape[0]:  # the C call checks that they never decrease
        raise InvalidParameterError("offsets must be non-decreasing and within values")
    out = np.empty(n, dtype=np.float64)
    rc = lib.nd_jaccard_many(
        ffi.from_buffer("uint32_t[]", q),
        len(q),
        ffi.from_buffer("uint32_t[]", vals),
        ffi.from_buffer("uint64_t[]", offs),
        n,
        fp_size,
        t,
        _flags(simd),
        ffi.from_buffer("double[]", out, require_writable=True),
    )
    if rc != lib.ND_OK:
        raise _refused(rc, q, "offsets must be non-decreasing")
    return out


def jaccard_many(
    query: Any,
    candidates: Sequence[Any],
    threshold: float = 0.0,
    *,
    fingerprint_size: int = 256,
    simd: bool = True,
) -> npt.NDArray[np.float64]:
    """One query fingerprint against a list of candidate fingerprints (see jaccard_many_packed)."""
    arrays = [_sorted_fingerprint(f"candidates[{i}]", c) for i, c in enumerate(candidates)]
    offsets = np.zeros(len(arrays) + 1, dtype=np.uint64)
    if arrays:
        np.cumsum([len(a) for a in arrays], out=offsets[1:])
    values = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.uint32)
    return jaccard_many_packed(
        query, values, offsets, threshold, fingerprint_size=fingerprint_size, simd=simd
    )


# --- compressed fingerprints (Elias-Fano; the format is in native/neardup.h) -----------------


class MalformedFingerprintError(ValueError):
    """A compressed fingerprint does not decode (stored data, not the caller's input)."""


@dataclass(frozen=True)
class Encoded:
    """n compressed fingerprints in one buffer: fingerprint i is data[starts[i]:ends[i]]
    and holds counts[i] values. data may be any bytes-like object (the records
    themselves, joined), so verification reads the fingerprints where they lie."""

    data: Any  # bytes-like
    starts: U64
    ends: U64
    counts: U32

    def __len__(self) -> int:
        return len(self.counts)


def _encoded_bound(offsets: U64) -> int:
    """Bytes that always hold the encodings of packed arrays (the kernel's ND_FP_ENCODED_MAX,
    summed in C so the bound has one source)."""
    n = offsets.shape[0] - 1
    if n <= 0:
        return 0
    bound = int(lib.nd_fp_encoded_bound(ffi.from_buffer("uint64_t[]", offsets), n))
    if bound == 2**64 - 1:
        raise InvalidParameterError("offsets must be non-decreasing and within values")
    return bound


def encoded_bound(count: int) -> int:
    """Bytes that always hold the encoding of count values (ND_FP_ENCODED_MAX)."""
    count = _check_int("count", count, 0, 2**32 - 1)
    return _encoded_bound(np.array([0, count], dtype=np.uint64))


def encode_fingerprints(
    values: Any, offsets: Any, shifted: bool = False
) -> tuple[npt.NDArray[np.uint8], U64]:
    """Compress n packed fingerprints (values, offsets of n + 1), each sorted and distinct;
    shifted: values whose low 8 bits are all 0 (24-bit fingerprints), stored without them.

    Returns (data, data_offsets): fingerprint i's encoding is data[data_offsets[i]:...[i + 1]].
    """
    vals = _fingerprint("values", values)
    offs = _index_array("offsets", offsets, np.uint64)
    if offs.ndim != 1 or offs.shape[0] < 1:
        raise InvalidParameterError("offsets must be a 1-D array of n + 1 uint64 values")
    n = offs.shape[0] - 1
    if n and (int(offs[n]) > vals.shape[0] or np.any(offs[1:] < offs[:-1])):
        raise InvalidParameterError("offsets must be non-decreasing and within values")
    cap = _encoded_bound(offs)
    out = np.empty(cap, dtype=np.uint8)
    out_offsets = np.zeros(n + 1, dtype=np.uint64)
    rc = lib.nd_fp_encode_batch(
        ffi.from_buffer("uint32_t[]", vals),
        ffi.from_buffer("uint64_t[]", offs),
        n,
        lib.ND_FP_SHIFTED if shifted else 0,
        ffi.from_buffer("uint8_t[]", out, require_writable=True),
        cap,
        ffi.from_buffer("uint64_t[]", out_offsets, require_writable=True),
    )
    if rc == lib.ND_E_ARG:
        raise InvalidParameterError(
            "a fingerprint is not sorted and distinct"
            + (", or has values whose low 8 bits are not 0" if shifted else "")
        )
    if rc != lib.ND_OK:  # pragma: no cover - cap is the documented bound
        raise KernelError(f"encoding fingerprints failed (code {rc})")
    return out[: int(out_offsets[n])], out_offsets


def encode_fingerprint(fingerprint: Any, shifted: bool = False) -> bytes:
    """One fingerprint compressed (see encode_fingerprints)."""
    fp = _fingerprint("fingerprint", fingerprint)
    data, _ = encode_fingerprints(fp, np.array([0, len(fp)], dtype=np.uint64), shifted)
    return data.tobytes()


def _encoded_args(enc: Encoded) -> tuple[Any, int, U64, U64, U32]:
    n = len(enc.counts)
    starts = _index_array("starts", enc.starts, np.uint64)
    ends = _index_array("ends", enc.ends, np.uint64)
    counts = _index_array("counts", enc.counts, np.uint32)
    if starts.shape != (n,) or ends.shape != (n,):
        raise InvalidParameterError("starts, ends and counts must be 1-D arrays of n values")
    data = ffi.from_buffer("uint8_t[]", enc.data)
    return data, len(data), starts, ends, counts


# Up to this many values, a short array is summed or scanned in plain Python: a numpy
# reduction's fixed cost (about a microsecond) is more than the work (a query's few).
_FEW = 64


def _malformed(status: npt.NDArray[np.int32]) -> None:
    if len(status) <= _FEW and not any(status.tolist()):
        return
    bad = np.flatnonzero(status)
    if bad.size:
        raise MalformedFingerprintError(
            f"compressed fingerprint {int(bad[0])} is malformed ({bad.size} of {len(status)})"
        )


def decode_fingerprints(enc: Encoded) -> tuple[U32, U64]:
    """The values of n compressed fingerprints, packed as (values, offsets of n + 1).

    Raises MalformedFingerprintError if any of them does not decode.
    """
    data, size, starts, ends, counts = _encoded_args(enc)
    n = len(counts)
    most = max(counts.tolist()) if n <= _FEW else int(counts.max(initial=0))
    if n and most > MAX_FINGERPRINT_SIZE:  # before allocating room for it
        bad = int(np.flatnonzero(counts > MAX_FINGERPRINT_SIZE)[0])
        raise MalformedFingerprintError(
            f"compressed fingerprint {bad} claims {int(counts[bad]):,} values, over the "
            f"{MAX_FINGERPRINT_SIZE:,} a fingerprint may hold"
        )
    total = sum(counts.tolist()) if n <= _FEW else int(counts.sum(dtype=np.uint64))
    out = np.empty(total, dtype=np.uint32)
    offsets = np.zeros(n + 1, dtype=np.uint64)
    status = np.zeros(n, dtype=np.int32)
    rc = lib.nd_fp_decode_batch(
        data,
        size,
        ffi.from_buffer("uint64_t[]", starts),
        ffi.from_buffer("uint64_t[]", ends),
        ffi.from_buffer("uint32_t[]", counts),
        n,
        ffi.from_buffer("uint32_t[]", out, require_writable=True),
        total,
        ffi.from_buffer("uint64_t[]", offsets, require_writable=True),
        ffi.from_buffer("int32_t[]", status, require_writable=True),
    )
    if rc != lib.ND_OK:
        raise InvalidParameterError(f"the kernel refused the arguments (code {rc})")
    _malformed(status)
    return out, offsets


def jaccard_many_encoded(
    query: Any,
    enc: Encoded,
    threshold: float = 0.0,
    *,
    fingerprint_size: int = 256,
    simd: bool = True,
) -> npt.NDArray[np.float64]:
    """jaccard_many_packed against compressed candidates, decoded inside the one C call.

    Gives exactly what jaccard_many_packed gives for the decoded values; raises
    MalformedFingerprintError if a candidate does not decode.
    """
    fp_size = _check_int("fingerprint_size", fingerprint_size, 1, MAX_FINGERPRINT_SIZE)
    t = _threshold(threshold)
    q = _fingerprint("query", query)
    data, size, starts, ends, counts = _encoded_args(enc)
    n = len(counts)
    out = np.zeros(n, dtype=np.float64)
    status = np.zeros(n, dtype=np.int32)
    rc = lib.nd_jaccard_many_encoded(
        ffi.from_buffer("uint32_t[]", q),
        len(q),
        data,
        size,
        ffi.from_buffer("uint64_t[]", starts),
        ffi.from_buffer("uint64_t[]", ends),
        ffi.from_buffer("uint32_t[]", counts),
        n,
        fp_size,
        t,
        _flags(simd),
        ffi.from_buffer("double[]", out, require_writable=True),
        ffi.from_buffer("int32_t[]", status, require_writable=True),
    )
    if rc == lib.ND_E_NOMEM:
        raise MemoryError("the kernel could not allocate its scratch memory")
    if rc != lib.ND_OK:
        raise _refused(rc, q, "every range must lie within data")
    _malformed(status)
    return out


# --- passage layouts in records (formats 1 and 2 are in native/neardup.h) -------------------

_LAYOUT_HEAD: int = lib.ND_LAYOUT_HEAD
_LAYOUT_COMPACT: int = lib.ND_LAYOUT_COMPACT


def _layout_call(fn: Any, raw: bytes, cap: int) -> tuple[int, bytes]:
    out = bytearray(cap)
    out_len = ffi.new("uint64_t *")
    rc = fn(ffi.from_buffer("uint8_t[]", raw), len(raw), ffi.from_buffer("uint8_t[]", out),
            cap, out_len)  # fmt: skip
    return rc, bytes(out[: out_len[0]]) if rc == lib.ND_OK else b""


def _layout_size(raw: bytes) -> tuple[int, int]:
    """nd_layout_expand with no room: ND_E_SPACE and the size it needs, or its error."""
    out_len = ffi.new("uint64_t *")
    rc = lib.nd_layout_expand(ffi.from_buffer("uint8_t[]", raw), len(raw), ffi.NULL, 0, out_len)
    return rc, int(out_len[0])


def compact_layout(raw: bytes) -> bytes:
    """A passage layout (format 1, passages.Layout.pack) in format 2 where that is smaller,
    else as it is. Raises InvalidParameterError if raw is not a format 1 layout."""
    if not raw:
        return raw
    rc, out = _layout_call(lib.nd_layout_compact, raw, len(raw) - 1)
    if rc == lib.ND_E_SPACE:
        return raw
    if rc != lib.ND_OK:
        raise InvalidParameterError(f"not a passage layout (code {rc})")
    return out


def is_compact_layout(raw: bytes) -> bool:
    """Whether a stored layout is in format 2 (compact_layout's)."""
    return len(raw) >= _LAYOUT_HEAD and bool(int.from_bytes(raw[4:8], "little") & _LAYOUT_COMPACT)


class MalformedLayoutError(ValueError):
    """A stored format 2 layout does not expand (stored data, not the caller's input)."""


def expand_layout(raw: bytes) -> bytes:
    """The format 1 layout a stored one stands for (a format 1 layout comes back as it is).

    Raises MalformedLayoutError for a format 2 layout that does not expand.
    """
    if not is_compact_layout(raw):
        return raw
    rc, size = _layout_size(raw)  # the format 1 size, from the kernel's reading of the head
    if rc != lib.ND_E_SPACE or size > 64 * len(raw) + 1024:  # more than any real layout
        raise MalformedLayoutError(f"the stored passage layout does not expand (code {rc})")
    rc, out = _layout_call(lib.nd_layout_expand, raw, size)
    if rc != lib.ND_OK:
        raise MalformedLayoutError(f"the stored passage layout does not expand (code {rc})")
    return out


def band_keys(signatures: Any, bands: int, rows: int) -> U64:
    """LSH band keys: uint64 [n, bands], band j hashing signature values [j*rows, (j+1)*rows)."""
    sigs = np.asarray(signatures)
    if sigs.ndim != 2 or sigs.dtype != np.uint32:
        raise InvalidParameterError("signatures must be a 2-D uint32 array [n, num_perm]")
    sigs = np.ascontiguousarray(sigs)
    n, num_perm = sigs.shape
    bands = _check_int("bands", bands, 1, MAX_NUM_PERM)
    rows = _check_int("rows", rows, 1, MAX_NUM_PERM)
    if bands * rows > num_perm:
        raise InvalidParameterError(
            f"bands * rows must be at most num_perm ({num_perm}), got {bands} * {rows}"
        )
    out = np.empty((n, bands), dtype=np.uint64)
    if n == 0:
        return out
    rc = lib.nd_band_keys(
        ffi.from_buffer("uint32_t[]", sigs),
        n,
        num_perm,
        bands,
        rows,
        ffi.from_buffer("uint64_t[]", out, require_writable=True),
    )
    if rc != lib.ND_OK:
        raise InvalidParameterError(f"the kernel refused the band parameters (code {rc})")
    return out


def normalize(text: str | bytes, *, tokenizer: int = 1) -> str:
    """The text as the tokenizer sees it: case-folded words joined by single spaces."""
    tok = _tokenizer(tokenizer)
    if isinstance(text, str):
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise InvalidTextError(f"text 0 cannot be encoded as UTF-8: {e.reason}") from None
    else:
        raw = bytes(text)
    cap = int(lib.nd_normalize_bound(len(raw), tok))
    out = ffi.new("uint8_t[]", cap)
    out_len = ffi.new("size_t *")
    rc = lib.nd_normalize(ffi.from_buffer("uint8_t[]", raw), len(raw), tok, out, cap, out_len)
    if rc == lib.ND_E_UTF8:
        raise _utf8_error(0, raw)
    if rc != lib.ND_OK:
        raise KernelError(f"normalize failed (code {rc})")
    return bytes(ffi.buffer(out, out_len[0])).decode("utf-8")


def tune_allocator(trim_threshold: int = 256 << 20, mmap_threshold: int = 32 << 20) -> bool:
    """Make glibc keep freed memory for reuse instead of handing it back to the OS.

    A batch of texts means buffers of a few hundred KB (the packed texts, signatures,
    fingerprints). With glibc's defaults these are returned to the OS when freed and every
    next batch page-faults them in again, which on a VM costs about as much as sketching.
    Process-wide, so it is the caller's choice (the service calls it at start-up, the
    benchmark too); returns False where the C library is not glibc.
    """
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(None)
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    ok = libc.mallopt(m_trim_threshold, trim_threshold) == 1
    return bool(libc.mallopt(m_mmap_threshold, mmap_threshold) == 1 and ok)


def simd_level() -> dict[str, bool]:
    """The SIMD paths in use (the CPU offers them and NEARDUP_SIMD=off did not turn them off)."""
    level = lib.nd_simd_level()
    return {"sse4.2": bool(level & lib.ND_SIMD_SSE42), "avx2": bool(level & lib.ND_SIMD_AVX2)}


def unicode_version() -> str:
    """The Unicode version of the tokenizer tables (that of the Python that generated them)."""
    return ffi.string(lib.nd_unicode_version()).decode("ascii")


def confusables_version() -> str:
    """The UTS #39 confusables.txt the tables of tokenizers 2 to 4 come from: version, date,
    source."""
    return ffi.string(lib.nd_confusables_version()).decode("ascii")
