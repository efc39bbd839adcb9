"""cffi build script (API mode, out of line) for the extension ``app._native``.

setuptools runs it from the repository root during ``pip install .`` (``cffi_modules`` in
setup.py); native/sanitize.sh imports it to build a sanitized copy. The cdef is derived from
neardup.h, so the header stays the one source of the C API.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import cffi

HERE = Path(__file__).resolve().parent
HEADER = HERE / "neardup.h"
SOURCES = ["neardup.c"]


def _rel(path: Path) -> str:
    """Relative to the cwd when under it (setuptools wants that during ``pip install .``),
    else absolute (a build from another directory keeps its objects there)."""
    try:
        rel = os.path.relpath(path, Path.cwd())
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _cdef_from_header(text: str) -> str:
    """Declarations of neardup.h in the form cffi's cdef accepts.

    Preprocessor lines go, but for the ND_ constants; so do the ``extern "C"`` lines inside
    ``#ifdef __cplusplus`` blocks, which are for C++ compilers only.
    """
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    in_cplusplus = False
    for line in text.splitlines():
        stripped = line.strip()
        if re.match(r"#\s*ifdef\s+__cplusplus\b", stripped):
            in_cplusplus = True
            continue
        if in_cplusplus:
            in_cplusplus = not re.match(r"#\s*endif\b", stripped)
            continue
        m = re.match(r"#define\s+(ND_\w+)\s+\S", stripped)
        if m:
            out.append(f"#define {m.group(1)} ...")  # value taken from the real header
        elif stripped.startswith("#"):
            continue
        else:
            out.append(line)
    return "\n".join(out)


def _extra_cflags() -> list[str]:
    """Extra flags from NEARDUP_CFLAGS (native/sanitize.sh passes -fsanitize=... this way).

    Plain CFLAGS/LDFLAGS from the environment are honoured too: setuptools' compiler setup
    appends them to every compile and link line itself.
    """
    return shlex.split(os.environ.get("NEARDUP_CFLAGS", ""))


ffibuilder = cffi.FFI()
ffibuilder.cdef(_cdef_from_header(HEADER.read_text()))
ffibuilder.set_source(
    "app._native",
    '#include "neardup.h"',
    sources=[_rel(HERE / s) for s in SOURCES],
    include_dirs=[_rel(HERE)],
    depends=[_rel(HEADER), _rel(HERE / "unicode_tables.h")],
    extra_compile_args=[
        "-O3",
        "-std=c11",
        "-Wall",
        "-Wextra",
        "-fvisibility=hidden",
        *_extra_cflags(),
    ],
    extra_link_args=[f for f in _extra_cflags() if f.startswith("-fsanitize")],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
