"""The spec's `acknowledge` section: warnings the team has weighed, each with a reason.

An acknowledged warning leaves the warnings and is reported as acknowledged, with its reason,
wherever the warning would have been (check, plan, the pull-request comment): accepted, never
hidden. An acknowledgement must keep earning its place: one that covers no warning any more
is a warning (GP020), and one that names no warning code, or an error's, is an error (GP021).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from gpuplat.diagnostics import Diagnostic, Level, json_path, sort_key
from gpuplat.spec import Pos
from gpuplat.suppression import codes_and_levels

STALE, NOT_A_WARNING = "GP020", "GP021"


@dataclass(frozen=True)
class Acknowledged:
    diagnostic: Diagnostic
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {**self.diagnostic.to_json(), "reason": self.reason}


def covers(prefix: str, path: str) -> bool:
    """`$.gpuNodePools[2]` covers `$.gpuNodePools[2].sharing.mode`, not `$.gpuNodePools[20]`."""
    return path == prefix or (path.startswith(prefix) and path[len(prefix)] in ".[")


_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[([^\]]+)\]")


def resolve(path: str, data: Any) -> str | None:
    """`path` as diagnostics print it: list items named by `name` (`$.gpuNodePools[train]`, which
    survives reordering and overlays) become indices. None when a named item is not in this
    stack (an overlay removed it); a path it cannot read is kept as written."""
    if not path.startswith("$"):
        return path
    out, node, at = "$", data, 1
    while at < len(path):
        found = _PART.match(path, at)
        if found is None:
            return path
        key, index, name = found.groups()
        if key is not None:
            out += f".{key}"
            node = cast("Mapping[str, Any]", node).get(key) if isinstance(node, Mapping) else None
        elif index is not None:
            out += f"[{index}]"
            items = cast("list[Any]", node) if isinstance(node, list) else []
            node = items[int(index)] if int(index) < len(items) else None
        else:
            items = cast("list[Any]", node) if isinstance(node, list) else []
            named = [i for i, item in enumerate(items) if _name(item) == name]
            if not named:
                return None
            out += f"[{named[0]}]"
            node = items[named[0]]
        at = found.end()
    return out


def _name(item: Any) -> Any:
    return cast("Mapping[str, Any]", item).get("name") if isinstance(item, Mapping) else None


def _entries(data: Any) -> dict[str, tuple[str, list[str]]]:
    """code -> (reason, paths), only from a section of the schema's shape (else it already failed)."""
    section: Any = cast("Mapping[str, Any]", data).get("acknowledge") if isinstance(data, Mapping) else None
    out: dict[str, tuple[str, list[str]]] = {}
    if not isinstance(section, Mapping):  # `acknowledge: 1`, a list ...: the schema pass reports it
        return out
    for code, entry in cast("Mapping[str, Any]", section).items():
        if isinstance(entry, Mapping):
            fields = cast("Mapping[str, Any]", entry)
            reason, paths = fields.get("reason"), fields.get("paths")
            if isinstance(reason, str) and isinstance(paths, list):
                out[code] = (reason, [p for p in cast("list[Any]", paths) if isinstance(p, str)])
    return out


def apply(
    diagnostics: Sequence[Diagnostic], data: Any, pos: Pos, *, planned: bool
) -> tuple[list[Diagnostic], list[Acknowledged]]:
    """The diagnostics left to report, and the warnings acknowledged. `planned`: the planner ran,
    so an acknowledgement of a planner finding that matches nothing is stale too."""
    entries = _entries(data)
    kept: list[Diagnostic] = []
    acknowledged: list[Acknowledged] = []
    used: set[tuple[str, str]] = set()
    resolved = {(code, p): resolve(p, data) for code, (_, paths) in entries.items() for p in paths}
    for d in diagnostics:
        reason, paths = entries.get(d.code, ("", []))
        match = next((p for p in paths if (r := resolved[(d.code, p)]) is not None and covers(r, d.path)), None)
        if d.is_error or match is None:
            kept.append(d)
            continue
        used.add((d.code, match))
        acknowledged.append(Acknowledged(d, reason))
    # An item this stack removed is not a stale acknowledgement: the base still needs it elsewhere.
    used |= {key for key, r in resolved.items() if r is None}
    kept.extend(_unused(entries, used, pos, planned=planned))
    return kept, acknowledged


def _unused(
    entries: Mapping[str, tuple[str, list[str]]], used: set[tuple[str, str]], pos: Pos, *, planned: bool
) -> list[Diagnostic]:
    from gpuplat.plan.codes import PLAN_CODES

    levels = codes_and_levels()
    found: list[Diagnostic] = []
    for code, (_, paths) in entries.items():
        at = ("acknowledge", code)
        if levels.get(code) is not Level.WARNING:
            what = "an error, and only warnings can be acknowledged" if code in levels else "not a warning code"
            found.append(_diagnostic(NOT_A_WARNING, Level.ERROR, f"{code} is {what}", at, pos, key=True))
            continue
        if code in PLAN_CODES and not planned:
            continue
        for index, path in enumerate(paths):
            if (code, path) not in used:
                message = f"{code} is acknowledged at {path}, but no {code} warning is there (any more): remove it"
                found.append(_diagnostic(STALE, Level.WARNING, message, (*at, "paths", index), pos))
    return found


def _diagnostic(
    code: str, level: Level, message: str, path: tuple[Any, ...], pos: Pos, *, key: bool = False
) -> Diagnostic:
    origin = pos.locate(path, prefer_key=key)
    return Diagnostic(code, level, message, json_path(path), origin.file, origin.line, origin.col)


def render_text(acknowledged: Sequence[Acknowledged]) -> str:
    """One line per acknowledged warning, where the warning would have been printed."""
    return "".join(
        f"{a.diagnostic.file}:{a.diagnostic.line}:{a.diagnostic.col}: acknowledged {a.diagnostic.code} "
        f"{a.diagnostic.path}: {a.reason}\n"
        for a in sorted(acknowledged, key=lambda a: sort_key(a.diagnostic))
    )
