"""The shingling spec, ``word:K`` or ``char:K``: parsed once, for settings and the kernel alike."""

from __future__ import annotations

from app.core.errors import Invalid

# The longest shingle the kernel hashes; app.kernel checks the C kernel agrees.
MAX_K = 16
KINDS = ("word", "char")


class ShingleSpecError(Invalid):
    """A shingle spec that is not ``word:K`` or ``char:K`` with 1 <= K <= MAX_K."""

    title = "Invalid shingle"


def parse_shingle(spec: str) -> tuple[str, int]:
    """Parse ``"word:K"`` or ``"char:K"`` (1 <= K <= 16) into ``(kind, K)``."""
    if not isinstance(spec, str):
        raise ShingleSpecError(f"shingle must be a string like 'word:3', got {spec!r}")
    kind, sep, k_text = spec.strip().partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in KINDS:
        raise ShingleSpecError(f"shingle must be 'word:K' or 'char:K', got {spec!r}")
    k_text = k_text.strip()
    # ASCII digits only: int() also takes '1_0' and other scripts' digits, which would
    # be stored as given and then differ from the same parameters written plainly.
    if not (k_text.isascii() and k_text.isdigit()):
        raise ShingleSpecError(f"shingle size K must be an integer in ASCII digits, got {spec!r}")
    k = int(k_text)
    if not 1 <= k <= MAX_K:
        raise ShingleSpecError(f"shingle size K must be between 1 and {MAX_K}, got {k}")
    return kind, k


def canonical_shingle(spec: str) -> str:
    """The spec as stored and compared: ``kind:K``, lower case, no spaces or leading
    zeros (``" WORD:03"`` is ``"word:3"``); ShingleSpecError as parse_shingle."""
    kind, k = parse_shingle(spec)
    return f"{kind}:{k}"
