"""The kernel's build: the cdef comes from the preprocessor, and what it declares is exported."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import cffi
import pytest

from app import kernel

NATIVE = Path(__file__).resolve().parents[1] / "native"


def _build_ffi() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nd_build_ffi", NATIVE / "build_ffi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nd_build_ffi", module)
    spec.loader.exec_module(module)
    return module


def _declared_functions(cdef: str) -> set[str]:
    """The function names of a cdef, as cffi itself parses it."""
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    parser = ffi._parser  # cffi's parsed declarations (private), keyed "function <name>"
    return {key.split(" ", 1)[1] for key in parser._declarations if key.startswith("function ")}


def test_declared_functions_are_the_exported_ones() -> None:
    """Every nd_* function the cdef declares is a dynamic symbol of the built extension, and
    the extension exports no nd_* symbol the cdef does not declare."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    declared = _declared_functions(_build_ffi().cdef_of())
    spec = importlib.util.find_spec("app._native")  # its file only: app.kernel imports it
    assert spec is not None and spec.origin is not None
    out = subprocess.run(
        [nm, "-D", "--defined-only", spec.origin],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    exported = {m.group(1) for m in re.finditer(r"\sT (nd_\w+)$", out, re.M)}
    assert declared and declared == exported


def test_every_declared_function_is_reachable_through_lib() -> None:
    """cffi's lib offers each declared function (a declaration without a definition would not
    have linked, and a definition without a declaration is caught above)."""
    declared = _declared_functions(_build_ffi().cdef_of())
    assert declared <= set(dir(kernel.lib))
    assert all(callable(getattr(kernel.lib, name)) for name in declared)


def test_cdef_survives_what_broke_the_regex_reader(tmp_path: Path) -> None:
    """Line comments, block comments over several lines, a function-like macro and a
    declaration split over lines come out as the compiler reads them."""
    header = tmp_path / "h.h"
    header.write_text(
        "#ifndef H\n#define H\n#ifndef ND_CDEF\n#include <stdint.h>\n#endif\n"
        "// int nd_commented_out(void);\n"
        "/* int nd_in_a_block(void);\n   more */\n"
        "#define ND_TWICE(x) ((x) * 2)\n"
        "#define ND_ANSWER 42 // a trailing comment\n"
        "int nd_real(const uint8_t *p, /* inline */\n         uint64_t n);\n"
        '#ifdef __cplusplus\nextern "C" {\n#endif\n'
        "#endif\n"
    )
    cdef = _build_ffi().cdef_of(header)
    assert _declared_functions(cdef) == {"nd_real"}
    assert re.findall(r"#define (\w+)", cdef) == ["ND_ANSWER"]


def test_header_constants_come_from_the_header() -> None:
    """app.kernel reads the layout head and flag from the compiled header, and they describe
    what the kernel writes: a packed layout starts with a head of ND_LAYOUT_HEAD bytes, and
    compacting sets ND_LAYOUT_COMPACT in its word count."""
    text = " ".join(f"word{i}" for i in range(200))
    anchors = kernel.winnow([text], passage_words=10)
    packed = kernel.pack_layouts(anchors, kernel.winnow([text], shingle="word:1", passage_words=1))[
        0
    ]
    head = kernel.lib.ND_LAYOUT_HEAD
    assert int.from_bytes(packed[4:8], "little") == 200
    assert len(packed) == head + 6 * len(anchors.hashes) + 100 + 200  # no overflow values
    compact = kernel.compact_layout(packed)
    assert int.from_bytes(compact[4:8], "little") & kernel.lib.ND_LAYOUT_COMPACT
    assert kernel.is_compact_layout(compact) and not kernel.is_compact_layout(packed)
    assert kernel.expand_layout(compact) == packed
