"""The parts of the pull-request comment that keep it readable on a large stack.

A reviewer reads the first lines: they say what changes and what it costs (`lead`). The
resources are counted per component (the ComponentResources the platform is made of, e.g.
`atlas-pool-train`), and anything long sits in a folded `<details>` block, so a 170-resource
stack opens with a dozen lines instead of a table of every resource type (templates/_fold.md.j2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from gpuplat.preview import RecordedResource
from gpuplat.preview.diff import Change

from ._templates import block, md_table, render

Json = Mapping[str, Any]
FOLD_OVER = 12  # rows; longer tables are folded
COMPONENTS_OVER = 30  # the per-component table is the overview: folded only past this
PLATFORM = "(platform)"  # the stack, the top-level component and the providers


def _usd(value: float) -> str:
    return f"${value:,.0f}"


def _cost_phrase(head: Json | None, base: Json | None) -> str:
    if head is None:
        return "no GPU cost (the nodes are already owned)"
    now = float(head["monthlyUsd"])
    if base is None:
        return f"GPU cost at max size **{_usd(now)}/month**"
    delta = now - float(base["monthlyUsd"])
    if round(delta) == 0:
        return f"GPU cost at max size **{_usd(now)}/month** (unchanged)"
    sign = "+" if delta > 0 else "-"
    pct = f", {100 * delta / float(base['monthlyUsd']):+.1f} %" if float(base["monthlyUsd"]) else ""
    return f"GPU cost at max size **{_usd(now)}/month** ({sign}{_usd(abs(delta))}{pct})"


def lead(
    resources: Sequence[RecordedResource],
    changes: Sequence[Change] | None,
    cost: tuple[Json | None, Json | None],
    violations: Sequence[Any] | None,
) -> str:
    """One line: the changes (or the size), the cost and its delta, the policy verdict."""
    if changes is None:
        named = [k for k in components(resources) if k != PLATFORM]
        what = f"**{len(resources)} resources** in {len(named)} components"
    elif not changes:
        what = "**no resource changes**"
    else:
        counts = Counter(c.op for c in changes)
        what = "**" + ", ".join(f"{n} to {op}" for op, n in counts.items()) + "**"
        refused = sum(c.refused for c in changes)
        what += f" ({refused} stateful ⚠️)" if refused else ""
        blocked = sum(bool(c.blocked) for c in changes)
        what += f" ({blocked} refused by AWS ⛔)" if blocked else ""
        drains = sum(bool(c.drains) for c in changes)
        what += f" ({drains} NodePool(s) drained)" if drains else ""
    if violations is None:
        policy = "policy not evaluated"
    else:
        mandatory = sum(getattr(v, "level", "") == "mandatory" for v in violations)
        found = f"{len(violations)} policy finding(s), {mandatory} mandatory"
        policy = found if violations else "no policy violations"
    return f"{what} · {_cost_phrase(*cost)} · {policy}"


def _policy_blockers(violations: Sequence[Any]) -> list[str]:
    """Mandatory violations, one line per policy with its count and first message."""
    by_policy: dict[str, list[Any]] = {}
    for v in violations:
        if getattr(v, "level", "") == "mandatory":
            by_policy.setdefault(str(v.policy), []).append(v)
    lines: list[str] = []
    for policy, found in sorted(by_policy.items()):
        example = str(found[0].urn).rpartition("::")[2]
        lines.append(f"policy `{policy}` (mandatory) on {len(found)} resource(s), e.g. `{example}`: {found[0].message}")
    return lines


def blockers(
    changes: Sequence[Change] | None,
    allow_replace: bool,
    broken_journeys: Sequence[str] | None,
    violations: Sequence[Any] | None,
) -> str:
    """The comment's first paragraph: everything that fails the check, or a line saying nothing does.

    A reviewer must not scroll for the reason a merge is refused: refused changes, broken
    journeys and mandatory policy violations come before any number. What was not evaluated is
    said, never counted as passing.
    """
    found: list[str] = []
    for c in changes or ():
        for reason in c.blocked:
            found.append(f"AWS would refuse: {c.op} `{c.name}` ({c.type}): {reason}")
        if c.refused and not allow_replace:
            cause = f" (replaced: {c.cause})" if c.op == "replace" and c.cause else ""
            why = "; ".join(c.destroys) or f"stateful, its data would be lost{cause}"
            found.append(f"refused unless `--allow-replace`: {c.op} `{c.name}` ({c.type}): {why}")
    found += [f"verify: {line}" for line in broken_journeys or ()]
    found += _policy_blockers(violations or ())
    unknown = [
        what
        for what, missing in (("verify", broken_journeys is None), ("the policy pack", violations is None))
        if missing
    ]
    not_run = f" ({' and '.join(unknown)} not evaluated)" if unknown else ""
    if not found:
        checked = [*(["no refused change"] if changes is not None else []), "no broken journey"]
        checked.append("no mandatory policy violation")
        return f"**Nothing blocks this change**: {', '.join(checked)}{not_run}."
    items = "".join(f"\n> - {line}" for line in found)
    return f"> [!CAUTION]\n> **{len(found)} blocker(s)**{not_run}:{items}"


def components(resources: Sequence[RecordedResource]) -> dict[str, list[RecordedResource]]:
    """Resources grouped by the component they belong to, below the single top-level one.

    The program nests everything under one platform component; its children (cluster, network,
    each pool, each tenant ...) are what a reviewer recognises. Resources outside them (stack,
    platform, providers) are grouped as "(platform)".
    """
    by_urn = {r.urn: r for r in resources}
    children: dict[str | None, list[str]] = {}
    for r in resources:
        children.setdefault(r.parent, []).append(r.urn)
    # Descend from the roots while there is exactly one component below.
    level: list[str] = children.get(None, [])
    while len([u for u in level if not by_urn[u].custom]) == 1:
        only = next(u for u in level if not by_urn[u].custom)
        level = children.get(only, [])
    tops = {u for u in level if not by_urn[u].custom}
    groups: dict[str, list[RecordedResource]] = {}
    for r in resources:
        urn: str | None = r.urn
        while urn is not None and urn not in tops:
            urn = by_urn[urn].parent if urn in by_urn else None
        key = by_urn[urn].name if urn is not None else PLATFORM
        groups.setdefault(key, []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: (kv[0] == PLATFORM, kv[0])))


def resources_section(resources: Sequence[RecordedResource]) -> str:
    groups = components(resources)
    rows = [
        [f"`{name}`", _kind(members) if name != PLATFORM else "stack, providers", sum(m.custom for m in members)]
        for name, members in groups.items()
    ]
    types = Counter(r.type for r in resources if r.custom)
    type_rows = [[f"`{t}`", n] for t, n in sorted(types.items())]
    return render(
        "comment_resources.md.j2",
        count=len(resources),
        custom=sum(r.custom for r in resources),
        groups=len(groups),
        components=len(rows),
        by_component=block(md_table(["component", "type", "resources"], rows, right=1)),
        components_folded=len(rows) > COMPONENTS_OVER,
        types=len(type_rows),
        by_type=block(md_table(["type", "count"], type_rows, right=1)),
        types_folded=len(type_rows) > FOLD_OVER,
    )


def _kind(members: Sequence[RecordedResource]) -> str:
    top = next((m for m in members if not m.custom), None)
    return f"`{top.type.rpartition(':')[2]}`" if top is not None else "providers"
