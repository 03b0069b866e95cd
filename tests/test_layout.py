"""The package's shape: no import cycle, pulumi only in gpuplat/preview/, no file past 400 lines,
no function of gpuplat/ past 60.

The import graph is read from the source (ast), module-level and function-level imports alike:
a cycle through a function-level import still ties the two modules together, and only works
until someone moves the import up. Imports under `if TYPE_CHECKING:` count too: they never run,
but a types module that names the types of the steps filling it still has its arrows backwards
(the records go below the steps that compute them). `from pkg import name` counts as
an import of `pkg.name` when that is a module, else of `pkg`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpuplat"
MAX_LINES = 400
MAX_FUNCTION_LINES = 60
# Files allowed past the limit (none now); an entry needs a reason next to it.
KNOWN_LONG: frozenset[str] = frozenset()
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()


def _name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(package: Path) -> dict[str, Path]:
    return {_name(p, package): p for p in sorted(package.rglob("*.py"))}


def _imported(module: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                base = parts[: len(parts) - node.level + (1 if is_package else 0)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                yield sub if sub in known else target


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports."""
    known = _modules(package)
    return {m: {t for t in _imported(m, p, known) if t in known and t != m} for m, p in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = {stack.pop()}
            while v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    found = set(cycles(import_graph()))
    assert sorted(map(sorted, found - KNOWN_CYCLES)) == []
    assert sorted(map(sorted, KNOWN_CYCLES - found)) == [], "a known cycle is gone: remove it from KNOWN_CYCLES"


def test_the_cycle_check_finds_one(tmp_path: Path) -> None:
    package = tmp_path / "gpuplat"
    (package / "a").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a" / "__init__.py").write_text("from . import x\n")
    (package / "a" / "x.py").write_text("def f():\n    from gpuplat.b import y\n")
    (package / "b.py").write_text("from .a.x import f\ny = 1\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import y\n")
    (package / "d.py").write_text("from .c import *\n")
    graph = import_graph(package)
    assert graph["gpuplat.a"] == {"gpuplat.a.x"}
    assert (graph["gpuplat.c"], graph["gpuplat.d"]) == ({"gpuplat.b"}, {"gpuplat.c"})
    assert [sorted(c) for c in cycles(graph)] == [["gpuplat.a.x", "gpuplat.b"]]


def test_only_the_preview_engine_imports_pulumi() -> None:
    """check, plan, graph, the renderers and the policies run where pulumi is not installed."""
    offenders: list[str] = []
    for module, path in _modules(PACKAGE).items():
        if module.startswith("gpuplat.preview."):
            continue
        for target in _imported(module, path, {}):
            if target == "pulumi" or target.startswith(("pulumi.", "pulumi_")):
                offenders.append(f"{module} imports {target}")
    assert offenders == []


def _dynamic_imports(path: Path) -> Iterator[str]:
    return _dynamic_imports_at(path, ROOT)


def _dynamic_imports_at(path: Path, root: Path) -> Iterator[str]:
    """Calls of import_module / __import__ naming a gpuplat module, or a name only known at run time."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name not in ("import_module", "__import__"):
            continue
        arg = node.args[0]
        literal = arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
        if literal is None or literal.split(".")[0] == "gpuplat":
            yield f"{path.relative_to(root).as_posix()}:{node.lineno}"


def test_no_importlib_between_siblings() -> None:
    """A module named in a string hides an edge from the graph above and from pyright."""
    assert [hit for p in sorted(PACKAGE.rglob("*.py")) for hit in _dynamic_imports(p)] == []


def test_the_importlib_check_finds_one(tmp_path: Path) -> None:
    sample = tmp_path / "x.py"
    sample.write_text(
        "import importlib\nm = 'gpuplat.a'\nimportlib.import_module(m)\nimportlib.import_module('yaml')\n"
    )
    assert [h.rpartition(":")[2] for h in _dynamic_imports_at(sample, tmp_path)] == ["3"]


def test_no_file_past_400_lines() -> None:
    long = {
        p.relative_to(ROOT).as_posix(): n
        for folder in ("gpuplat", "components", "policy")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert {p: n for p, n in long.items() if p not in KNOWN_LONG} == {}
    assert sorted(KNOWN_LONG - set(long)) == [], "a known long file fits now: remove it from KNOWN_LONG"


def test_no_function_past_60_lines_in_gpuplat() -> None:
    """The compiler's functions stay readable in one screen (components/ are being split elsewhere)."""
    long = [
        f"{p.relative_to(ROOT).as_posix()}:{node.lineno} {node.name} ({length} lines)"
        for p in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > MAX_FUNCTION_LINES
    ]
    assert long == []
