"""`gpuplat preview --base REF`: diff two recordings (the base's, from checkout.py, and the head's) by URN.

Diff, the way the engine would plan it: a URN only in the head is a create, only in the base
a delete (a head resource whose alias names a base URN is the same resource, renamed). A URN
in both is an update when its inputs or its protect / retainOnDelete / provider options differ
(dependsOn and aliases are bookkeeping, not state), minus the paths its ignoreChanges names;
it is a replace when a changed path forces replacement (replacements.py).

Providers (providers.py): a resource also changes with the settings it takes from its provider
(pulumi-aws's region, pulumi-kubernetes' namespace), and a provider replaced by its own settings
(pulumi-kubernetes: another cluster) replaces every resource it manages, as the engine does when
a resource's provider reference gets a new id.

A replaced resource gets a new id and ARN. Offline those are deterministic stand-ins, so the
change would stay invisible to the resources that consume them; a real preview sees them as
unknown. The diff therefore marks, in every resource that depends on a replaced one, the
inputs that hold its id or autonamed ARN as changed, and re-checks them, until nothing new is
replaced: a VPC CIDR change replaces the VPC, its subnets, and the file system inside them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from .changes import Change as Change
from .changes import FieldChange as FieldChange
from .checkout import BaseRefError as BaseRefError
from .checkout import checkout as checkout
from .checkout import resolve_ref as resolve_ref
from .engine import RecordedResource
from .gate import annotate
from .providers import (
    COMPUTED,
    PROVIDER_FIELD,
    config_replaces,
    effective_namespace,
    effective_region,
    is_provider,
    is_regional,
    namespace_path,
    package_of,
)
from .replacements import replacing_fields
from .stateful import is_stateful

OPS = ("create", "update", "replace", "delete")
# Options whose change the engine applies to the resource's state (shown as an update).
_STATE_OPTIONS = ("protect", "retainOnDelete", "provider")


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


# ---- diff -------------------------------------------------------------------------------------


def _same(a: Any, b: Any) -> bool:
    # JSON text, not ==: True == 1 and 1 == 1.0 in Python, but they are different inputs.
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """(path, old, new) of every differing leaf; mappings recurse, lists are leaves."""
    if isinstance(old, dict) and isinstance(new, dict):
        olds: dict[str, Any] = old  # pyright: ignore[reportUnknownVariableType]
        news: dict[str, Any] = new  # pyright: ignore[reportUnknownVariableType]
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(olds) | set(news)):
            path = f"{prefix}.{key}" if prefix else key
            if key not in olds:
                out.append((path, MISSING, news[key]))
            elif key not in news:
                out.append((path, olds[key], MISSING))
            else:
                out.extend(changed_paths(olds[key], news[key], path))
        return out
    return [] if _same(old, new) else [(prefix, old, new)]


def _ignored(path: str, ignore: Iterable[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in ignore)


@dataclass(frozen=True)
class _Providers:
    """The provider resources of each side, by URN (a resource's `provider` option names one)."""

    base: Mapping[str, RecordedResource]
    head: Mapping[str, RecordedResource]

    def name(self, urn: Any) -> str:
        return str(urn).rpartition("::")[2]


def _field_changes(base: RecordedResource, head: RecordedResource, providers: _Providers) -> list[FieldChange]:
    ignore = [str(p) for p in head.options.get("ignoreChanges", [])]
    fields = [FieldChange(p, o, n) for p, o, n in changed_paths(base.inputs, head.inputs) if not _ignored(p, ignore)]
    for key in _STATE_OPTIONS:
        before, after = base.options.get(key, MISSING), head.options.get(key, MISSING)
        if (before is MISSING) != (after is MISSING) or (before is not MISSING and not _same(before, after)):
            fields.append(FieldChange(f"options.{key}", before, after))
    if head.custom and not is_provider(head.type):
        fields.extend(f for f in _inherited(base, head, providers) if not _ignored(f.path, ignore))
        moved = _provider_moved(base, head, providers)
        if moved is not None:
            fields = [*(f for f in fields if f.path != "options.provider"), moved]
    return fields


def _inherited(base: RecordedResource, head: RecordedResource, providers: _Providers) -> list[FieldChange]:
    """Settings the resource takes from its provider that change with it (providers.py 2. and 3.)."""
    own = {p for p, _, _ in changed_paths(base.inputs, head.inputs)}
    found: list[FieldChange] = []
    origin = f"the {{}} of provider {providers.name(head.options.get('provider'))}"
    if package_of(head.type) == "aws" and "region" not in own:
        before, after = effective_region(base, providers.base), effective_region(head, providers.head)
        if before and after and before != after and is_regional(head.type):
            found.append(FieldChange("region", before, after, replaces=True, note=origin.format("region")))
    path = namespace_path(head)
    if path is not None and path not in own:
        before, after = effective_namespace(base, providers.base), effective_namespace(head, providers.head)
        if before != after:
            note = origin.format("namespace")
            found.append(FieldChange(path, before or MISSING, after or MISSING, replaces=True, note=note))
    return found


def _provider_moved(base: RecordedResource, head: RecordedResource, providers: _Providers) -> FieldChange | None:
    """The resource's provider is another one whose settings replace it (the engine's DiffConfig of
    the old provider's inputs against the new one's), or None."""
    old, new = base.options.get("provider"), head.options.get("provider")
    if not isinstance(old, str) or not isinstance(new, str) or old == new:
        return None
    before, after = providers.base.get(old), providers.head.get(new)
    if before is None or after is None:
        return None
    found = config_replaces(after.type, before.inputs, after.inputs)
    if not found:
        return None
    why = f"provider {providers.name(old)} -> {providers.name(new)}: {found[0].why}"
    return FieldChange(PROVIDER_FIELD, providers.name(old), providers.name(new), note=why)


def _forcing(head: RecordedResource, base: RecordedResource, fields: list[FieldChange]) -> dict[str, str | None]:
    """The changed paths that force a replacement, with why when a provider decides it."""
    unknown = {f.path for f in fields if f.via}
    if is_provider(head.type):
        found = config_replaces(head.type, base.inputs, head.inputs, unknown)
        return {f.path: r.why for f in fields for r in found if f.path == r.key or f.path.startswith(r.key + ".")}
    replace_on = [str(p) for p in head.options.get("replaceOnChanges", [])]
    paths = replacing_fields(head.type, [f.path for f in fields], base.inputs, head.inputs, replace_on, unknown)
    forcing: dict[str, str | None] = dict.fromkeys(paths)
    # What the provider decides (a moved provider, a setting taken from it) was decided with it.
    forcing.update({f.path: f.note for f in fields if f.path == PROVIDER_FIELD or f.replaces})
    return forcing


def _classify(
    head: RecordedResource, base: RecordedResource, fields: list[FieldChange], previous: str | None
) -> Change:
    forcing = _forcing(head, base, fields)
    marked = tuple(replace(f, replaces=f.path in forcing, note=forcing.get(f.path) or f.note) for f in fields)
    op = "replace" if forcing else "update"
    return Change(
        head.urn,
        head.type,
        head.name,
        op,
        is_stateful(head.type, head.inputs) or is_stateful(base.type, base.inputs),
        marked,
        delete_before_replace=bool(head.options.get("deleteBeforeReplace")) and op == "replace",
        previous_urn=previous,
    )


def alias_urns(resource: RecordedResource) -> list[str]:
    """The URNs a resource's aliases stand for (type/name/parent specs resolved like the engine)."""
    head, _, name = resource.urn.rpartition("::")
    stack_project, _, qualified = head.rpartition("::")
    urns: list[str] = []
    for alias in resource.options.get("aliases", []):
        if isinstance(alias, str):
            urns.append(alias)
            continue
        if not isinstance(alias, dict):
            continue
        spec: dict[str, Any] = alias  # pyright: ignore[reportUnknownVariableType]
        chain = qualified.split("$")
        type_ = str(spec.get("type") or chain[-1])
        if spec.get("noParent"):
            chain = [type_]
        elif spec.get("parentUrn"):
            chain = [*str(spec["parentUrn"]).rpartition("::")[0].rpartition("::")[2].split("$"), type_]
        else:
            chain = [*chain[:-1], type_]
        urns.append(f"{stack_project}::{'$'.join(chain)}::{spec.get('name') or name}")
    return urns


def _identity_patterns(resource: RecordedResource) -> list[re.Pattern[str]]:
    # What dependents hold of a resource: its id ("<name>-id"), its autonamed physical name
    # ("<name>-<7 hex>") and ARNs ending in an explicit name. All three change on replacement.
    end = r"(?![0-9A-Za-z-])"
    patterns = [re.compile(re.escape(resource.name) + r"-(?:id|[0-9a-f]{7})" + end)]
    explicit = resource.inputs.get("name")
    if isinstance(explicit, str) and explicit:
        patterns.append(re.compile(r"arn:[^\s\"]*[:/]" + re.escape(explicit) + end))
    metadata = resource.inputs.get("metadata")
    k8s_name = cast("dict[str, Any]", metadata).get("name") if isinstance(metadata, dict) else None
    if resource.type.startswith("kubernetes:") and isinstance(k8s_name, str) and k8s_name:
        # A Kubernetes object's name, read from its outputs (a claim's volumeName): unknown
        # while a replacement is planned. Whole values only, so a longer name never matches.
        patterns.append(re.compile(r'(?:^|")' + re.escape(k8s_name) + r'(?:"|$)'))
    return patterns


def _mentions(value: Any, patterns: Sequence[re.Pattern[str]]) -> bool:
    if isinstance(value, str):
        return any(p.search(value) for p in patterns)
    return any(p.search(json.dumps(value)) for p in patterns) if isinstance(value, list | dict) else False


def _leaves(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        items: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        return [leaf for k, v in sorted(items.items()) for leaf in _leaves(v, f"{prefix}.{k}" if prefix else k)]
    return [(prefix, value)]


def _carried(urn: str, base: RecordedResource, head: RecordedResource, known: Collection[str]) -> list[FieldChange]:
    """What of a dependent the replaced resource `urn` makes unknown, beyond the inputs that hold
    its id: the provider reference of what it manages, a kubeconfig built from its outputs."""
    if urn == head.options.get("provider") and PROVIDER_FIELD not in known:
        # Its provider gets a new id: the engine replaces what it manages (providers.py 1.).
        return [FieldChange(PROVIDER_FIELD, urn.rpartition("::")[2], COMPUTED, via=urn)]
    kubernetes_provider = is_provider(head.type) and package_of(head.type) == "kubernetes"
    if kubernetes_provider and urn in head.options.get("dependsOn", []) and "kubeconfig" not in known:
        # A kubeconfig built from a replaced cluster's endpoint and CA, which the engine shows as
        # unknown (the recording holds stand-ins); pulumi-kubernetes' DiffConfig replaces on it.
        value = base.inputs.get("kubeconfig")
        return [] if value is None else [FieldChange("kubeconfig", value, COMPUTED, via=urn)]
    return []


def _propagate(changes: dict[str, Change], pairs: Mapping[str, tuple[RecordedResource, RecordedResource]]) -> None:
    """Carry replacements into dependents' inputs (and a replaced provider into what it manages)
    until no new replacement appears."""
    handled: set[str] = set()
    while True:
        replaced = [urn for urn, c in changes.items() if c.op == "replace" and urn not in handled and urn in pairs]
        if not replaced:
            return
        for urn in replaced:
            handled.add(urn)
            patterns = _identity_patterns(pairs[urn][1])
            for dep_urn, (base, head) in pairs.items():
                if dep_urn == urn:
                    continue
                current = changes.get(dep_urn)
                known = {f.path for f in current.fields} if current else set[str]()
                extra = _carried(urn, base, head, known)
                if urn in head.options.get("dependsOn", []):
                    taken = known | {f.path for f in extra}
                    extra += [
                        FieldChange(path, value, COMPUTED, via=urn)
                        for path, value in _leaves(base.inputs)
                        if path and path not in taken and _mentions(value, patterns)
                    ]
                if extra:
                    fields = [*(current.fields if current else ()), *extra]
                    prior = current.previous_urn if current else None
                    changes[dep_urn] = _classify(head, base, fields, prior)


def diff_resources(base: Sequence[RecordedResource], head: Sequence[RecordedResource]) -> list[Change]:
    """Every create / update / replace / delete from base to head; unchanged resources are left out."""
    base_by_urn = {r.urn: r for r in base}
    head_urns = {r.urn for r in head}
    pairs: dict[str, tuple[RecordedResource, RecordedResource]] = {}
    previous: dict[str, str] = {}
    for r in head:
        if r.urn in base_by_urn:
            pairs[r.urn] = (base_by_urn[r.urn], r)
            continue
        for alias in alias_urns(r):
            if alias in base_by_urn and alias not in head_urns and alias not in previous.values():
                pairs[r.urn] = (base_by_urn[alias], r)
                previous[r.urn] = alias
                break
    providers = _Providers(
        {r.urn: r for r in base if is_provider(r.type)}, {r.urn: r for r in head if is_provider(r.type)}
    )
    changes: dict[str, Change] = {}
    for urn, (old, new) in pairs.items():
        fields = _field_changes(old, new, providers)
        if fields or urn in previous:
            changes[urn] = _classify(new, old, fields, previous.get(urn))
    _propagate(changes, pairs)
    matched_base = {old.urn for old, _ in pairs.values()}
    ordered: list[Change] = []
    for r in head:
        if r.urn in changes:
            ordered.append(changes[r.urn])
        elif r.urn not in pairs:
            ordered.append(Change(r.urn, r.type, r.name, "create", is_stateful(r.type, r.inputs)))
    deleted = [r for r in base if r.urn not in matched_base]
    ordered.extend(Change(r.urn, r.type, r.name, "delete", is_stateful(r.type, r.inputs)) for r in deleted)
    return annotate(ordered, base_by_urn, {r.urn: r for r in head})


@dataclass(frozen=True)
class Summary:
    counts: Mapping[str, int]
    unchanged: int
    refused: tuple[Change, ...] = field(default=())  # lose data: only with --allow-replace
    blocked: tuple[Change, ...] = field(default=())  # AWS refuses them: never accepted
    drains: tuple[Change, ...] = field(default=())  # NodePools whose nodes Karpenter drains
    releases: tuple[Change, ...] = field(default=())  # capacity reservations given back


def summarize(changes: Sequence[Change], head_count: int) -> Summary:
    counts = {op: sum(c.op == op for c in changes) for op in OPS}
    touched = sum(c.op != "delete" for c in changes)
    return Summary(
        counts,
        head_count - touched,
        tuple(c for c in changes if c.refused),
        tuple(c for c in changes if c.blocked),
        tuple(c for c in changes if c.drains),
        tuple(c for c in changes if c.releases),
    )
