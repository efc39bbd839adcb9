"""cffi build script (API mode, out of line) for the extension ``app._native``.

setuptools runs it from the repository root during ``pip install .`` (``cffi_modules`` in
setup.py); native/sanitize.sh imports it to build a sanitized copy. The cdef comes from the C
preprocessor run on neardup.h (with ND_CDEF defined, so the header leaves out the system
includes cffi does not need), so the header stays the one source of the C API and comments,
line breaks or macros in it cannot mislead a hand-written parser:

- declarations: ``cc -E -P`` of the header (comments and directives gone, macros expanded);
- constants: the object-like ``ND_*`` macros the preprocessor lists (``cc -E -dM``), each
  given to cffi as ``#define ND_X ...`` so that the compiler supplies its value.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path

import cffi

HERE = Path(__file__).resolve().parent
HEADER = HERE / "neardup.h"
# One file per job; the scanner (scan.h, on fold.h) is inlined into sketch.c, sketch2.c
# (tokenizer 2's scans, apart: sketch.h says why) and winnow.c.
SOURCES = [
    "cpu.c",
    "sketch.c",
    "sketch2.c",
    "winnow.c",
    "normalize.c",
    "bands.c",
    "fingerprints.c",
    "layouts.c",
]
INTERNAL_HEADERS = ["internal.h", "fold.h", "scan.h", "sketch.h", "unicode_tables.h"]
CDEF_GUARD = "ND_CDEF"


def _rel(path: Path) -> str:
    """Relative to the cwd when under it (setuptools wants that during ``pip install .``),
    else absolute (a build from another directory keeps its objects there)."""
    try:
        rel = os.path.relpath(path, Path.cwd())
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if rel.startswith("..") else rel


def _compiler() -> list[str]:
    """The C compiler: $CC, else the one Python was built with, else cc."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    argv = shlex.split(cc)
    if shutil.which(argv[0]) is None:
        argv = ["cc"]
    return argv


def _preprocess(*flags: str, header: Path = HEADER) -> str:
    argv = [*_compiler(), "-E", *flags, f"-D{CDEF_GUARD}", "-x", "c", str(header)]
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


# `#define NAME value` as `cc -dM` prints it; a function-like macro has "(" right after NAME.
_OBJECT_MACRO = re.compile(r"#define (ND_[A-Z0-9_]+) \S")


def cdef_of(header: Path = HEADER) -> str:
    """The declarations and integer constants of a header, in the form cffi's cdef accepts."""
    decls = _preprocess("-P", header=header)
    names = sorted(
        m.group(1)
        for line in _preprocess("-dM", header=header).splitlines()
        if (m := _OBJECT_MACRO.match(line))
    )
    consts = "\n".join(f"#define {name} ..." for name in names if name != CDEF_GUARD)
    return consts + "\n" + decls


def _extra_cflags() -> list[str]:
    """Extra flags from NEARDUP_CFLAGS (native/sanitize.sh passes -fsanitize=... this way).

    Plain CFLAGS/LDFLAGS from the environment are honoured too: setuptools' compiler setup
    appends them to every compile and link line itself.
    """
    return shlex.split(os.environ.get("NEARDUP_CFLAGS", ""))


ffibuilder = cffi.FFI()
ffibuilder.cdef(cdef_of())
ffibuilder.set_source(
    "app._native",
    '#include "neardup.h"',
    sources=[_rel(HERE / s) for s in SOURCES],
    include_dirs=[_rel(HERE)],
    depends=[_rel(HEADER), *(_rel(HERE / h) for h in INTERNAL_HEADERS)],
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
