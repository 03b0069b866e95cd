"""The recording engine's modules import one another in one direction only (no cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

PREVIEW = Path(__file__).resolve().parent.parent / "gpuplat" / "preview"
# The offline recording: the engine and everything it loads to run a program.
RECORDING = ("engine", "records", "_runtime", "_monitor", "_mockdata", "_render", "_invokes", "progress")


def _imports(module: str) -> set[str]:
    """Sibling modules `module` imports, at the top or inside a function (both are edges)."""
    tree = ast.parse((PREVIEW / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpuplat.preview."):
            found.add((node.module or "").split(".")[2])
    return {name for name in found if (PREVIEW / f"{name}.py").is_file()}


def _cycle_through(start: str) -> list[str] | None:
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        module, path = stack.pop()
        for nxt in sorted(_imports(module)):
            if nxt == start:
                return [*path, nxt]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return None


def test_recording_modules_have_no_import_cycle() -> None:
    for module in RECORDING:
        assert _cycle_through(module) is None, f"import cycle: {' -> '.join(_cycle_through(module) or [])}"


def test_the_check_sees_function_level_imports() -> None:
    # engine loads _runtime inside a function (so `import gpuplat.preview` stays free of pulumi);
    # that is still an edge, and the one that made the old cycle.
    assert "_runtime" in _imports("engine")
    assert "records" in _imports("_runtime") and "engine" not in _imports("_runtime")
