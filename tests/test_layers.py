"""The layers of app/ import downward only:
core < kernel < store < index < service < api < client < cli."""

from __future__ import annotations

import ast
from pathlib import Path

import app

LAYERS = ["core", "kernel", "store", "index", "service", "api", "client", "cli"]
ROOT = Path(app.__file__).parent


def _layer(module: str) -> int | None:
    """The layer of a dotted module name under app (None for app itself and app._native)."""
    parts = module.split(".")
    if parts[0] != "app" or len(parts) < 2 or parts[1] not in LAYERS:
        return None
    return LAYERS.index(parts[1])


def _imports(path: Path) -> set[str]:
    """Every app module a source file imports, at the top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith("app.")}


def _violations(root: Path) -> list[str]:
    wrong = []
    for path in sorted(root.rglob("*.py")):
        module = ".".join(("app", *path.relative_to(root).with_suffix("").parts))
        own = _layer(module)
        if own is None:
            continue
        for target in _imports(path):
            theirs = _layer(target)
            if theirs is not None and theirs > own:
                wrong.append(f"{module} imports {target}")
    return sorted(wrong)


def test_every_module_is_in_a_layer() -> None:
    """No module of app/ lives outside the layers (besides the package's own __init__)."""
    stray = [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*.py")
        if _layer(".".join(("app", *p.relative_to(ROOT).with_suffix("").parts))) is None
        and p.name != "__init__.py"
        and not p.name.startswith("_native")
    ]
    assert stray == []


def test_no_layer_imports_a_higher_one() -> None:
    """Layers import downward only, lazily imported modules included."""
    assert _violations(ROOT) == []


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The layer check itself fails on a store module that imports the API."""
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "bad.py").write_text("def f():\n    from app.api import answers\n")
    assert _violations(tmp_path) == [
        "app.store.bad imports app.api",
        "app.store.bad imports app.api.answers",
    ]
