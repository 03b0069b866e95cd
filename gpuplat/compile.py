"""The pipeline up to the plan: load -> merge -> validate -> model -> plan.

Used by the CLI and by `__main__.py`; nothing here imports pulumi.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpuplat.acknowledge import Acknowledged
from gpuplat.acknowledge import apply as acknowledge
from gpuplat.diagnostics import Diagnostic, Level, has_errors, json_path
from gpuplat.fleet import members as fleet_members
from gpuplat.fleet.members import loading_members
from gpuplat.fleet.plan import build_fleet_plan
from gpuplat.model import Platform, build_model
from gpuplat.plan import Plan, build_plan
from gpuplat.spec import Pos, load_file, merge_overlay
from gpuplat.validate import validate

DEFAULT_SPEC = Path("platform/platform.yaml")
# `gpuplat preview --spec/--overlay` runs the real `__main__.py`; these carry its choice there.
SPEC_ENV = "GPUPLAT_SPEC"
OVERLAY_ENV = "GPUPLAT_OVERLAY"


class UnknownStackError(ValueError):
    """`--stack` names an environment this project does not have (a usage error, exit 2)."""


# Pulumi's own rule for a stack name: letters, digits, '-', '_' and '.', at most 100.
_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def check_stack_name(stack: str) -> str:
    """`stack` if it names a stack; UnknownStackError otherwise. The name picks the overlay
    `stacks/<stack>.yaml`, so a path (`../platform/platform`) would read any file as an
    overlay, and `Pulumi.dev` would read Pulumi's settings of the stack dev as one."""
    if not _STACK_NAME.fullmatch(stack):
        raise UnknownStackError(
            f"{stack!r} is not a stack name: a stack name has 1 to 100 letters, digits, '-', '_' or '.' "
            "(give a file with --spec or --overlay instead)"
        )
    if stack.startswith("."):
        raise UnknownStackError(f"{stack!r} is not a stack name: a stack name does not start with '.'")
    if stack.startswith("Pulumi."):
        raise UnknownStackError(
            f"{stack!r} is not a stack name: it names Pulumi's settings file of a stack; "
            f"did you mean --stack {stack.removeprefix('Pulumi.')}?"
        )
    return stack


@dataclass(frozen=True)
class Sources:
    spec: Path
    overlay: Path | None  # None: the stack has no overlay


def resolve_sources(stack: str, spec: str | None = None, overlay: str | None = None) -> Sources:
    """The files of a stack.

    `--overlay` wins (an empty string means none). Without it, the default spec takes the
    stack's overlay `stacks/<stack>.yaml` when that file exists; an explicit `--spec` takes
    no overlay, so checking some other spec never silently mixes in this project's stacks.
    """
    check_stack_name(stack)
    spec = spec or os.environ.get(SPEC_ENV) or None
    overlay = overlay if overlay is not None else os.environ.get(OVERLAY_ENV)
    spec_path = Path(spec) if spec else DEFAULT_SPEC
    if overlay is not None:
        return Sources(spec_path, Path(overlay) if overlay else None)
    if spec:
        return Sources(spec_path, None)
    default = Path("stacks") / f"{stack}.yaml"
    if default.exists():
        return Sources(spec_path, default)
    if (Path("stacks") / f"Pulumi.{stack}.yaml").exists() or not Path("stacks").is_dir():
        return Sources(spec_path, None)  # a stack without an overlay: the base as it is
    # A typo (`--stack prdo`) would otherwise check or deploy the bare base spec, silently.
    known = sorted(p.stem.removeprefix("Pulumi.") for p in Path("stacks").glob("*.yaml"))
    raise UnknownStackError(
        f"unknown stack {stack!r}: no stacks/{stack}.yaml or stacks/Pulumi.{stack}.yaml "
        f"(stacks here: {', '.join(sorted(set(known))) or 'none'})"
    )


@dataclass
class Compiled:
    sources: Sources
    diagnostics: list[Diagnostic] = field(default_factory=lambda: [])
    data: Any = None
    pos: Pos | None = None
    model: Platform | None = None
    plan: Plan | None = None
    suppressed: list[Diagnostic] = field(default_factory=lambda: [])  # warnings --suppress hid: counted, not lost
    acknowledged: list[Acknowledged] = field(default_factory=lambda: [])  # warnings the spec accepts, with reasons

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics) and self.model is not None


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # elsewhere, or a symlink loop the read reports
        return str(path)


def compile_sources(sources: Sources, *, suppress: Sequence[str] = (), with_plan: bool = True) -> Compiled:
    result = Compiled(sources)
    base, diags = load_file(sources.spec, _display(sources.spec))
    result.diagnostics.extend(diags)
    overlay = None
    if sources.overlay is not None:
        overlay, diags = load_file(sources.overlay, _display(sources.overlay), allow_empty=True)
        result.diagnostics.extend(diags)
    if base is None or (sources.overlay is not None and overlay is None):
        return result
    data, pos, diags = merge_overlay(base, overlay)
    result.data, result.pos = data, pos
    result.diagnostics.extend(diags)
    if has_errors(diags):
        return result
    result.diagnostics.extend(validate(data, pos))  # suppressed at the end, with the planner's: counted, not skipped
    if has_errors(result.diagnostics):
        return _finish(result, suppress, planned=False)
    result.model = build_model(data)
    if with_plan:
        outcome = build_plan(result.model)
        for finding in outcome.findings:
            origin = pos.locate(finding.path)
            result.diagnostics.append(
                Diagnostic(finding.code, finding.level, finding.message, json_path(finding.path), *origin_tuple(origin))
            )
        result.plan = with_fleet(result.model, outcome.plan)
    result = _finish(result, suppress, planned=with_plan)
    if has_errors(result.diagnostics):
        result.model = None
    return result


def with_fleet(model: Platform, plan: Plan | None) -> Plan | None:
    """The plan with the fleet's numbers, read from the members' specs (not while a member itself
    is being compiled for them)."""
    if plan is None or model.fleet is None or loading_members():
        return plan
    return replace(plan, cluster_fleet=build_fleet_plan(model))


def _finish(result: Compiled, suppress: Sequence[str], *, planned: bool) -> Compiled:
    """Set aside acknowledged and suppressed warnings of every stage (rules, merge, planner);
    errors always stay."""
    assert result.pos is not None
    result.diagnostics, result.acknowledged = acknowledge(result.diagnostics, result.data, result.pos, planned=planned)
    if suppress:
        result.suppressed = [d for d in result.diagnostics if not d.is_error and d.code in suppress]
        result.diagnostics = [d for d in result.diagnostics if d.is_error or d.code not in suppress]
    return result


def origin_tuple(origin: Any) -> tuple[str, int, int]:
    return origin.file, origin.line, origin.col


def compile_stack(stack: str, spec: str | None = None, overlay: str | None = None) -> Compiled:
    return compile_sources(resolve_sources(stack, spec, overlay))


class SpecError(Exception):
    """Raised by `__main__.py` when the spec is invalid: pulumi shows the diagnostics and stops."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        from gpuplat.diagnostics import render_text

        errors = [d for d in diagnostics if d.level is Level.ERROR]
        super().__init__("the platform spec is invalid:\n" + render_text(errors))


def load_for_stack(stack: str) -> tuple[Platform, Plan]:
    """What `__main__.py` calls: the model and plan of a stack, or SpecError."""
    compiled = compile_stack(stack)
    if not compiled.ok or compiled.model is None or compiled.plan is None:
        raise SpecError(compiled.diagnostics)
    return compiled.model, compiled.plan


# The fleet rules and plan compile the other members of a fleet with this same pipeline.
fleet_members.install(resolve_sources, compile_sources)
