"""Another revision's kernel, built beside this one, for same-run comparisons in bench/kernel.py.

``build(rev)`` exports ``native/`` of a git revision into a scratch directory, compiles every
``.c`` file in it (one file before the kernel was split by job, several after) with the flags
native/build_ffi.py uses, as a cffi module of its own, and returns an object that stands in
for ``app._native.lib`` inside :func:`swapped`: app.kernel's own wrappers then call the old C
code, so both sides pay the same Python overhead and only the C code differs.

The declarations are those of kernel ABI 4 (the revision before the split) and 5, and of ABI 7
(tokenizer 2 with its unspaced scripts), written out here: an old header cannot be fed to the new
cdef generator. Calls of a newer interface are adapted for ABI 4-5 (the tokenizer argument
dropped; only version 1 exists there); ABI 7 takes the calls as they are, tokenizer 2 included,
and so does ABI 8, the same declarations with tokenizer 3 (``tokenizers`` says which a baseline
has), ABI 9, whose one change (nd_fp_encode_batch's flags) is not a timed call, and ABI 10,
the same with tokenizer 4. ABI 6
(tokenizer 2 before its unspaced scripts) is not read. Constants come from the current build,
whose values those ABIs share.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cffi

ROOT = Path(__file__).resolve().parents[1]

CDEF_ABI4 = """
unsigned nd_abi_version(void);
int nd_sketch_batch_packed(const uint8_t *data, const uint64_t *offsets, size_t n,
                           int shingle_kind, uint32_t k, uint32_t num_perm,
                           uint32_t fp_size, uint64_t seed, unsigned flags,
                           uint32_t *signatures, uint32_t *fp_values, uint64_t fp_cap,
                           uint64_t *fp_offsets, uint64_t *shingles, int32_t *status);
int nd_winnow_batch(const uint8_t *data, const uint64_t *offsets, size_t n, int shingle_kind,
                    uint32_t k, uint32_t window, uint64_t seed, unsigned flags,
                    uint64_t *hashes, int64_t *starts, int64_t *ends, uint64_t cap,
                    uint64_t *sel_offsets, int32_t *status);
int nd_jaccard_many(const uint32_t *query, uint32_t nq, const uint32_t *values,
                    const uint64_t *offsets, size_t n, uint32_t fp_size,
                    double threshold, unsigned flags, double *out);
"""
CDEF_ABI7 = """
unsigned nd_abi_version(void);
int nd_sketch_batch_packed(const uint8_t *data, const uint64_t *offsets, size_t n,
                           int shingle_kind, int tokenizer, uint32_t k, uint32_t num_perm,
                           uint32_t fp_size, uint64_t seed, unsigned flags,
                           uint32_t *signatures, uint32_t *fp_values, uint64_t fp_cap,
                           uint64_t *fp_offsets, uint64_t *shingles, int32_t *status);
int nd_winnow_batch(const uint8_t *data, const uint64_t *offsets, size_t n, int shingle_kind,
                    int tokenizer, uint32_t k, uint32_t window, uint64_t seed, unsigned flags,
                    uint64_t *hashes, int64_t *starts, int64_t *ends, uint64_t cap,
                    uint64_t *sel_offsets, int32_t *status, uint8_t *folds);
int nd_jaccard_many(const uint32_t *query, uint32_t nq, const uint32_t *values,
                    const uint64_t *offsets, size_t n, uint32_t fp_size,
                    double threshold, unsigned flags, double *out);
"""
FLAGS = ["-O3", "-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden"]


class _Adapted:
    """The old library under the current names and signatures (for the calls above)."""

    tokenizers: tuple[int, ...] = (1,)

    def __init__(self, old: Any, current: Any, sketch_args: int, winnow_args: int) -> None:
        self._old, self._current = old, current
        self._sketch_args, self._winnow_args = sketch_args, winnow_args

    def nd_sketch_batch_packed(self, *args: Any) -> int:
        if len(args) == self._sketch_args + 1:  # the tokenizer, after shingle_kind
            if args[4] != 1:
                raise ValueError("the baseline kernel has only tokenizer 1")
            args = args[:4] + args[5:]
        return int(self._old.nd_sketch_batch_packed(*args))

    def nd_winnow_batch(self, *args: Any) -> int:
        if len(args) == self._winnow_args + 2:  # the tokenizer, and the fold flags at the end
            if args[4] != 1:
                raise ValueError("the baseline kernel has only tokenizer 1")
            args = args[:4] + args[5:-1]
        return int(self._old.nd_winnow_batch(*args))

    def nd_jaccard_many(self, *args: Any) -> int:
        return int(self._old.nd_jaccard_many(*args))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._current, name)  # constants, and calls the bench does not time


class _Current:
    """An ABI 7 library: the timed calls as they are, the rest from the current build."""

    tokenizers: tuple[int, ...] = (1, 2)

    def __init__(self, old: Any, current: Any, tokenizers: tuple[int, ...] = (1, 2)) -> None:
        self._old, self._current = old, current
        self.tokenizers = tokenizers
        self.nd_sketch_batch_packed = old.nd_sketch_batch_packed
        self.nd_winnow_batch = old.nd_winnow_batch
        self.nd_jaccard_many = old.nd_jaccard_many

    def __getattr__(self, name: str) -> Any:
        return getattr(self._current, name)


def _abi(src: Path) -> int:
    """ND_ABI_VERSION as rev's header defines it."""
    for line in (src / "neardup.h").read_text().splitlines():
        if line.startswith("#define ND_ABI_VERSION"):
            return int(line.split()[2])
    raise SystemExit("no ND_ABI_VERSION in the baseline's neardup.h")


def build(rev: str) -> _Adapted | _Current:
    """Compile rev's native/ into a scratch directory and load it."""
    sha = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    tmp = Path(tempfile.mkdtemp(prefix=f"nd-baseline-{sha}-"))
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "native"], cwd=ROOT, check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
    src = tmp / "native"
    name = f"_nd_baseline_{sha}"
    abi = _abi(src)
    if abi not in (4, 5, 7, 8, 9, 10):
        raise SystemExit(f"{rev} is kernel ABI {abi}; this baseline reads 4, 5, 7 to 10")
    ffi = cffi.FFI()
    ffi.cdef(CDEF_ABI4 if abi < 6 else CDEF_ABI7)
    ffi.set_source(
        name,
        '#include "neardup.h"',
        sources=[str(p) for p in sorted(src.glob("*.c"))],
        include_dirs=[str(src)],
        extra_compile_args=FLAGS,
    )
    so = ffi.compile(tmpdir=str(tmp))
    spec = importlib.util.spec_from_file_location(name, so)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    old = module.lib
    from app import kernel

    if abi >= 7:
        return _Current(
            old, kernel.lib, {7: (1, 2), 8: (1, 2, 3), 9: (1, 2, 3)}.get(abi, (1, 2, 3, 4))
        )
    return _Adapted(old, kernel.lib, sketch_args=15, winnow_args=14)  # as in CDEF_ABI4


@contextlib.contextmanager
def swapped(lib: Any) -> Iterator[None]:
    """app.kernel's wrappers calling lib instead of the current build, for the with block."""
    from app import kernel

    saved = kernel.lib
    kernel.lib = lib
    try:
        yield
    finally:
        kernel.lib = saved


if __name__ == "__main__":  # smoke test: python bench/kernel_baseline.py REV
    lib = build(sys.argv[1] if len(sys.argv) > 1 else "main")
    from app import kernel

    with swapped(lib):
        print(kernel.sketch(["a quick smoke test of the baseline"]).fp_values[:4])
