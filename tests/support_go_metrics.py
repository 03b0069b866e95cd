"""The Prometheus metric names a Go program registers, read from its source.

Each `prometheus.<Kind>Opts{...}` literal names a metric by its `Namespace`, `Subsystem` and
`Name` fields, joined with `_` (client_golang's BuildFQName). A field is a string literal or a
constant: `pkg.Name` through the file's imports (a package of one of the given modules), or a
bare name declared in the file's own package. Histograms and summaries are exported as their
`_bucket` / `_sum` / `_count` (`_sum` / `_count`) series too. A literal whose field is neither
(computed at run time) is reported, so a caller can tell "not exported" from "not understood".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

_OPTS = re.compile(r"prometheus\.(Counter|Gauge|Histogram|Summary)Opts\s*\{")
_FIELD = re.compile(r"^\s*(Namespace|Subsystem|Name)\s*:\s*([^,\n]+),", re.M)
_CONST = re.compile(r"^\s*(\w+)\s+(?:\w+\s+)?=\s*\"([^\"]*)\"", re.M)
_IMPORT = re.compile(r"^\s*(?:(\w+)\s+)?\"([^\"]+)\"\s*$", re.M)
_PARTS = ("Namespace", "Subsystem", "Name")
SUFFIXES = {"Histogram": ("_bucket", "_sum", "_count"), "Summary": ("_sum", "_count")}


def _block(text: str, start: int) -> str:
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start : i + 1]
    raise ValueError("unbalanced braces")


def _imports(text: str) -> dict[str, str]:
    found = re.search(r"^import\s*\((.*?)^\)", text, re.M | re.S)
    lines = found.group(1) if found else "\n".join(re.findall(r"^import\s+(.*)$", text, re.M))
    return {alias or path.rsplit("/", 1)[-1]: path for alias, path in _IMPORT.findall(lines)}


class GoMetrics:
    def __init__(self, modules: Mapping[str, Path]) -> None:
        """`modules`: module path -> its directory (the first one's metrics are read)."""
        self.modules = dict(modules)
        self._constants: dict[Path, dict[str, str]] = {}

    def _package_dir(self, import_path: str) -> Path | None:
        for module, root in self.modules.items():
            if import_path == module or import_path.startswith(module + "/"):
                return root / import_path.removeprefix(module).lstrip("/")
        return None

    def _package_constants(self, directory: Path) -> dict[str, str]:
        if directory not in self._constants:
            found: dict[str, str] = {}
            for path in directory.glob("*.go"):
                if not path.name.endswith("_test.go"):
                    found.update(_CONST.findall(path.read_text(encoding="utf-8")))
            self._constants[directory] = found
        return self._constants[directory]

    def _value(self, expr: str, path: Path, imports: Mapping[str, str]) -> str | None:
        expr = expr.strip()
        if expr.startswith('"') and expr.endswith('"'):
            return expr[1:-1]
        package, _, name = expr.rpartition(".")
        if not re.fullmatch(r"\w+", name):
            return None
        directory = path.parent if not package else self._package_dir(imports.get(package, ""))
        return None if directory is None else self._package_constants(directory).get(name)

    def names(self, under: str = "") -> tuple[set[str], list[str]]:
        """(metric names, literals not understood) of the first module's Go files `under` a folder."""
        root = next(iter(self.modules.values()))
        names: set[str] = set()
        unresolved: list[str] = []
        for path in sorted((root / under).rglob("*.go")):
            if path.name.endswith("_test.go") or "/test/" in str(path.relative_to(root)):
                continue
            text = path.read_text(encoding="utf-8")
            imports = _imports(text) if _OPTS.search(text) else {}
            for match in _OPTS.finditer(text):
                fields = dict(_FIELD.findall(_block(text, match.end() - 1)))
                parts = [self._value(fields[f], path, imports) if f in fields else "" for f in _PARTS]
                if any(p is None for p in parts) or not parts[2]:
                    unresolved.append(f"{path.relative_to(root)}: {fields}")
                    continue
                name = "_".join(str(p) for p in parts if p)
                names |= {name, *(name + s for s in SUFFIXES.get(match.group(1), ()))}
        return names, unresolved
