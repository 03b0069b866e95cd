"""`gpuplat preview --base REF`: check out the stack at a git ref and diff two recordings by URN.

Checkout: `git archive <commit>` of the repository the cwd is in, extracted into a temporary
directory, so the base's own `__main__.py`, `gpuplat` and `components` run (engine.record_main
imports a program directory's modules afresh) and the working tree is never touched.

Diff, the way the engine would plan it: a URN only in the head is a create, only in the base
a delete (a head resource whose alias names a base URN is the same resource, renamed). A URN
in both is an update when its inputs or its protect / retainOnDelete / provider options differ
(dependsOn and aliases are bookkeeping, not state), minus the paths its ignoreChanges names;
it is a replace when a changed path forces replacement (replacements.py).

A replaced resource gets a new id and ARN. Offline those are deterministic stand-ins, so the
change would stay invisible to the resources that consume them; a real preview sees them as
unknown. The diff therefore marks, in every resource that depends on a replaced one, the
inputs that hold its id or autonamed ARN as changed, and re-checks them, until nothing new is
replaced: a VPC CIDR change replaces the VPC, its subnets, and the file system inside them.
"""

from __future__ import annotations

import json
import re
import subprocess
import tarfile
import tempfile
from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from .changes import Change as Change
from .changes import FieldChange as FieldChange
from .engine import RecordedResource
from .gate import annotate
from .replacements import replacing_fields
from .stateful import is_stateful

OPS = ("create", "update", "replace", "delete")
# Options whose change the engine applies to the resource's state (shown as an update).
_STATE_OPTIONS = ("protect", "retainOnDelete", "provider")


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING: Any = _Missing()


class BaseRefError(Exception):
    """The base ref cannot be checked out or previewed.

    `exit_code`: 2 for a bad ref or no git repository (usage), 1 for a base without a program
    or with an invalid spec."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# ---- checkout ---------------------------------------------------------------------------------


def _git(args: Sequence[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError as err:
        raise BaseRefError("--base needs git, which is not installed", 2) from err


def resolve_ref(ref: str, cwd: Path = Path()) -> tuple[Path, str, str]:
    """(repository top level, cwd's path inside it, commit id of `ref`), or BaseRefError (exit 2)."""
    top = _git(["rev-parse", "--show-toplevel"], cwd)
    if top.returncode != 0:
        raise BaseRefError(f"--base {ref}: {cwd.resolve()} is not inside a git repository", 2)
    prefix = _git(["rev-parse", "--show-prefix"], cwd).stdout.strip()
    commit = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd)
    if commit.returncode != 0 or not commit.stdout.strip():
        raise BaseRefError(f"--base {ref}: not a commit, branch or tag of this repository", 2)
    return Path(top.stdout.strip()), prefix, commit.stdout.strip()


@contextmanager
def checkout(ref: str, cwd: Path = Path()) -> Generator[Path]:
    """The project directory of `ref` (same place in the repository as `cwd`), removed afterwards."""
    toplevel, prefix, commit = resolve_ref(ref, cwd)
    with tempfile.TemporaryDirectory(prefix="gpuplat-base-") as tmp:
        archive = subprocess.Popen(
            ["git", "archive", "--format=tar", commit],
            cwd=toplevel,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert archive.stdout is not None
        try:
            with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
                tar.extractall(tmp, filter="data")  # a hostile tree must not write outside tmp
        except tarfile.TarError as err:
            archive.kill()
            raise BaseRefError(f"--base {ref}: git archive failed ({err})", 2) from err
        finally:
            archive.stdout.close()
            _, stderr = archive.communicate()
        if archive.returncode != 0:
            raise BaseRefError(f"--base {ref}: git archive failed: {stderr.decode(errors='replace').strip()}", 2)
        yield Path(tmp) / prefix


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


def _field_changes(base: RecordedResource, head: RecordedResource) -> list[FieldChange]:
    ignore = [str(p) for p in head.options.get("ignoreChanges", [])]
    fields = [FieldChange(p, o, n) for p, o, n in changed_paths(base.inputs, head.inputs) if not _ignored(p, ignore)]
    for key in _STATE_OPTIONS:
        before, after = base.options.get(key, MISSING), head.options.get(key, MISSING)
        if (before is MISSING) != (after is MISSING) or (before is not MISSING and not _same(before, after)):
            fields.append(FieldChange(f"options.{key}", before, after))
    return fields


def _classify(
    head: RecordedResource, base: RecordedResource, fields: list[FieldChange], previous: str | None
) -> Change:
    replace_on = [str(p) for p in head.options.get("replaceOnChanges", [])]
    unknown = {f.path for f in fields if f.via}
    forcing = set(replacing_fields(head.type, [f.path for f in fields], base.inputs, head.inputs, replace_on, unknown))
    marked = tuple(replace(f, replaces=f.path in forcing) for f in fields)
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


def _propagate(changes: dict[str, Change], pairs: Mapping[str, tuple[RecordedResource, RecordedResource]]) -> None:
    """Carry replacements into dependents' inputs until no new replacement appears."""
    handled: set[str] = set()
    while True:
        replaced = [urn for urn, c in changes.items() if c.op == "replace" and urn not in handled and urn in pairs]
        if not replaced:
            return
        for urn in replaced:
            handled.add(urn)
            patterns = _identity_patterns(pairs[urn][1])
            for dep_urn, (base, head) in pairs.items():
                if urn not in head.options.get("dependsOn", []) or dep_urn == urn:
                    continue
                current = changes.get(dep_urn)
                known = {f.path for f in current.fields} if current else set[str]()
                extra = [
                    FieldChange(path, value, "<computed>", via=urn)
                    for path, value in _leaves(base.inputs)
                    if path and path not in known and _mentions(value, patterns)
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
    changes: dict[str, Change] = {}
    for urn, (old, new) in pairs.items():
        fields = _field_changes(old, new)
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
