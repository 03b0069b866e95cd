"""`gpuplat preview`'s text: the resource tree, the diff against a base, and why a diff is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from gpuplat.preview import RecordedResource
from gpuplat.preview.diff import MISSING, Change, Summary

_FLAGS = ("protect", "retainOnDelete", "deleteBeforeReplace")


def _flags(options: Mapping[str, Any]) -> str:
    shown = [f for f in _FLAGS if options.get(f)]
    if options.get("dependsOn"):
        shown.append(f"dependsOn={len(options['dependsOn'])}")
    return f"  [{', '.join(shown)}]" if shown else ""


def _inputs_lines(value: Any, indent: str) -> Iterator[str]:
    text = json.dumps(value, indent=2, sort_keys=True)
    for line in text.splitlines():
        yield f"{indent}{line}\n"


def render_tree(resources: Sequence[RecordedResource], *, show_inputs: bool) -> str:
    depth: dict[str | None, int] = {None: -1}
    out: list[str] = []
    for r in resources:  # already in pre-order, so a parent's depth is always known
        level = depth.get(r.parent, 0) + 1
        depth[r.urn] = level
        pad = "  " * level
        out.append(f"{pad}+ {r.type}  {r.name}{_flags(r.options)}\n")
        if show_inputs and r.custom and r.inputs:
            out.extend(_inputs_lines(r.inputs, pad + "    "))
    custom = sum(r.custom for r in resources)
    out.append(f"{len(resources)} resources ({custom} custom, {len(resources) - custom} components)\n")
    return "".join(out)


_SIGN = {"create": "+ ", "update": "~ ", "replace": "+-", "delete": "- "}


def _short(value: Any, width: int = 70) -> str:
    text = repr(value) if value is MISSING else json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def _values(old: Any, new: Any) -> str:
    if isinstance(old, list) and isinstance(new, list):
        # Two long lists differ somewhere past any truncation: show what left and what came.
        before, after = cast("list[Any]", old), cast("list[Any]", new)
        removed = [x for x in before if x not in after]
        added = [x for x in after if x not in before]
        if removed or added:
            return f"-{_short(removed)} +{_short(added)}"
        return f"{_short(before)} -> {_short(after)} (reordered)"
    return f"{_short(old)} -> {_short(new)}"


def drain_warning(summary: Summary) -> str | None:
    """One line naming the NodePools whose nodes Karpenter drains, or None."""
    if not summary.drains:
        return None
    names = ", ".join(str(c.drains) for c in summary.drains)
    return (
        f"{len(summary.drains)} NodePool(s) deleted or replaced ({names}): Karpenter will drain their nodes "
        "(the NodeClaims go with their NodePool) and evict the GPU jobs running there"
    )


def release_warning(summary: Summary) -> str | None:
    """One line naming the capacity reservations given back, or None."""
    if not summary.releases:
        return None
    held = "; ".join(f"{c.name} ({c.releases})" for c in summary.releases)
    return (
        f"{len(summary.releases)} capacity reservation(s) replaced or deleted ({held}): the capacity they hold "
        "is released, and EC2 may not grant it again"
    )


def render_changes(changes: Sequence[Change], summary: Summary, ref: str) -> str:
    out: list[str] = []
    for c in changes:
        flags = "  STATEFUL" if c.stateful and c.op in ("replace", "delete") else ""
        flags += "  BLOCKED" if c.blocked else ""
        flags += "  DESTROYS DATA" if c.destroys else ""
        order = " (delete before replace)" if c.delete_before_replace else ""
        out.append(f"{_SIGN[c.op]} {c.op:<8} {c.type}  {c.name}{flags}{order}\n")
        out.append(f"      {c.urn}\n")
        if c.previous_urn:
            out.append(f"      renamed from {c.previous_urn}\n")
        for f in c.fields:
            note = ("  (forces replacement" + (f": {f.note})" if f.note else ")")) if f.replaces else ""
            source = f"  (new id of replaced {f.via.rpartition('::')[2]})" if f.via else ""
            out.append(f"      ~ {f.path}: {_values(f.old, f.new)}{note}{source}\n")
        out.extend(f"      ! {reason}\n" for reason in (*c.blocked, *c.destroys))
    for warning in (drain_warning(summary), release_warning(summary)):
        if warning:
            out.append(f"warning: {warning}\n")
    counts = summary.counts
    out.append(
        f"{counts['create']} to create, {counts['update']} to update, {counts['replace']} to replace, "
        f"{counts['delete']} to delete; {summary.unchanged} unchanged (base {ref})\n"
    )
    return "".join(out)


def refusal(summary: Summary) -> str:
    lines = [
        f"  {c.op} {c.type} {c.name}"
        + "".join(f": {reason}" for reason in c.destroys)
        + (f" ({c.cause})" if c.op == "replace" and not c.destroys and c.cause else "")
        + "\n"
        for c in summary.refused
    ]
    return (
        f"gpuplat preview: refusing the diff: it would replace, delete or destroy the data of {len(summary.refused)} "
        "stateful resource(s):\n" + "".join(lines) + "review the change and pass --allow-replace if intended\n"
    )


def blocked(summary: Summary) -> str:
    lines = [f"  {c.type} {c.name}: {reason}\n" for c in summary.blocked for reason in c.blocked]
    return (
        f"gpuplat preview: refusing the diff: AWS would refuse {len(lines)} change(s), and --allow-replace "
        "cannot change that:\n" + "".join(lines)
    )
