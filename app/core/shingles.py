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
    try:
        k = int(k_text.strip())
    except ValueError:
        raise ShingleSpecError(f"shingle size K must be an integer, got {spec!r}") from None
    if not 1 <= k <= MAX_K:
        raise ShingleSpecError(f"shingle size K must be between 1 and {MAX_K}, got {k}")
    return kind, k
