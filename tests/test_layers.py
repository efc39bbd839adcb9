"""The layers of app/ import downward only:
core < kernel < store < index < service < api < client < cli;
and no modules import each other in a circle, inside a layer or across."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
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


def _module(root: Path, path: Path) -> str:
    """The dotted name of a source file under root (a package by its __init__)."""
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("app", *parts))


def _graph(root: Path) -> dict[str, set[str]]:
    """Which app modules each module imports, at the top, under TYPE_CHECKING or inside a
    function: ``from P import N`` is an import of P.N when that is a module, else of P."""
    modules = {_module(root, p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in modules)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    if sub in modules:
                        found.add(sub)
                    elif node.module in modules:
                        found.add(node.module)
        found.discard(name)
        graph[name] = found
    return graph


def _circles(root: Path) -> list[list[str]]:
    """Every set of modules that import each other in a circle (strongly connected
    components of more than one module, Tarjan's algorithm), each sorted."""
    graph = _graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


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


def test_no_import_circles() -> None:
    """No modules of app/ import each other in a circle, lazily imported ones included."""
    assert _circles(ROOT) == []


def test_the_check_sees_circles_inside_a_layer(tmp_path: Path) -> None:
    """The circle check fails on two modules of one layer that import each other, at the
    top on one side and inside a function on the other, and on a circle of three that
    one side closes only under TYPE_CHECKING."""
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "a.py").write_text("from app.core import b\n")
    (tmp_path / "core" / "b.py").write_text("def f():\n    from app.core.a import x\n")
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "x.py").write_text("from app.index.y import Y\n")
    (tmp_path / "index" / "y.py").write_text("import app.index.z\n")
    (tmp_path / "index" / "z.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from app.index.x import X\n"
    )
    (tmp_path / "index" / "w.py").write_text("from app.index import x\n")  # no circle
    assert _circles(tmp_path) == [
        ["app.core.a", "app.core.b"],
        ["app.index.x", "app.index.y", "app.index.z"],
    ]


def test_the_check_sees_circles_between_layers(tmp_path: Path) -> None:
    """The circle check fails on a store module and an index module that import each
    other (the layer check fails on it too, for the upward half)."""
    (tmp_path / "store").mkdir()
    (tmp_path / "index").mkdir()
    (tmp_path / "store" / "s.py").write_text("def f():\n    import app.index.i\n")
    (tmp_path / "index" / "i.py").write_text("from app.store.s import f\n")
    assert _circles(tmp_path) == [["app.index.i", "app.store.s"]]


def test_the_index_package_loads_each_name_when_asked() -> None:
    """Importing app.index loads none of its modules (a tool that needs the id rule does
    not load the index with it); each name it offers is its home module's own."""
    code = "import sys, app.index; print(sorted(m for m in sys.modules if 'app.index.' in m))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
    import app.index as index

    for name in index.__all__:
        home = importlib.import_module(index._HOMES[name])
        assert getattr(index, name) is (
            home if home.__name__.endswith("." + name) else getattr(home, name)
        )
