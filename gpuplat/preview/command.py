"""`gpuplat preview`: compile the stack, run the real `__main__.py` offline, print every resource.

With `--base REF` the stack is also recorded as it is at REF (diff.py) and the command prints
the diff instead; replacing or deleting a stateful resource fails it unless `--allow-replace`,
a change AWS would refuse (gate.py) fails it regardless, and deleted NodePools are warned about.
`--format markdown` renders the pull-request comment (report.py). Imported only when the
command runs (the CLI keeps pulumi out of check and plan).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from ruamel.yaml import YAML

from gpuplat.compile import OVERLAY_ENV, SPEC_ENV, compile_sources, resolve_sources
from gpuplat.diagnostics import render_json, render_text
from gpuplat.model import Platform
from gpuplat.plan import Plan

from .diff import MISSING, BaseRefError, Change, Summary, checkout, diff_resources, summarize
from .engine import DuplicateUrnError, RecordedResource, RecordingError, record_main
from .progress import progress
from .report import PlanResult, Report, base_plan, evaluate_policy, render_markdown

PROJECT = "gpu-platform"  # Pulumi.yaml `name`; part of every URN


class PreviewError(Exception):
    """A problem the user can act on; the CLI prints it without a traceback and exits 1."""


def stack_config(stack: str, root: Path = Path()) -> dict[str, str]:
    """Pulumi config of `stacks/Pulumi.<stack>.yaml`, flattened as the Pulumi CLI passes it.

    Structured values (e.g. `aws:defaultTags`) reach the program as JSON strings, exactly as
    the real engine hands them over; secrets are not readable offline and are left out.
    """
    path = root / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        return {}
    yaml: Any = YAML(typ="safe")
    loaded = cast("dict[str, Any] | None", yaml.load(path.read_text(encoding="utf-8")))
    raw = cast("dict[str, Any]", (loaded or {}).get("config") or {})
    config: dict[str, str] = {}
    for key, value in raw.items():
        if isinstance(value, dict) and "secure" in value:
            continue
        config[key] = value if isinstance(value, str) else json.dumps(value)
    return config


@contextmanager
def _program_sources(spec: str | None, overlay: str | None, root: Path = Path()) -> Generator[None]:
    """Hand --spec/--overlay to `__main__.py`, which runs from its project directory.

    Relative paths are taken from `root`, so a base checkout previews its own copy of the files.
    """
    saved = {k: os.environ.get(k) for k in (SPEC_ENV, OVERLAY_ENV)}
    try:
        if spec:
            os.environ[SPEC_ENV] = str((root / spec).resolve())
        if overlay is not None:
            os.environ[OVERLAY_ENV] = str((root / overlay).resolve()) if overlay else ""
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def record_stack(
    stack: str, spec: str | None = None, overlay: str | None = None, root: Path = Path()
) -> list[RecordedResource]:
    main = root / "__main__.py"
    if not main.exists():
        raise PreviewError(f"{main}: no Pulumi program here; run gpuplat preview from the project directory")
    with _program_sources(spec, overlay, root):
        try:
            return record_main(main.resolve(), project=PROJECT, stack=stack, config=stack_config(stack, root))
        except DuplicateUrnError as err:
            raise PreviewError(f"duplicate URN {err.urn}: two resources of one type share a name") from err
        except RecordingError as err:
            raise PreviewError(str(err)) from err


@dataclass
class Base:
    ref: str
    resources: list[RecordedResource]
    plan: PlanResult | None = None  # markdown only


def record_base(args: argparse.Namespace, *, with_plan: bool) -> Base:
    """Record the stack as it is at `args.base`; BaseRefError (exit 2) or PreviewError (exit 1)."""
    ref: str = args.base
    with checkout(ref) as root:
        if not (root / "__main__.py").exists():
            raise PreviewError(f"--base {ref}: no Pulumi program (__main__.py) at that ref; nothing to diff against")
        try:
            resources = record_stack(args.stack, args.spec, args.overlay, root=root)
        except PreviewError as err:
            raise PreviewError(f"--base {ref}: {err}") from err
        except Exception as err:  # the base's own code: its SpecError is a class we cannot import
            if type(err).__name__ == "SpecError":
                raise PreviewError(f"--base {ref}: {err}".rstrip()) from err
            raise PreviewError(f"--base {ref}: the program failed: {type(err).__name__}: {err}") from err
        plan = base_plan(root, args.stack, args.spec, args.overlay) if with_plan else None
    return Base(ref, resources, plan)


# ---- rendering ----------------------------------------------------------------------------

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


def render_changes(changes: Sequence[Change], summary: Summary, ref: str) -> str:
    out: list[str] = []
    for c in changes:
        flags = "  STATEFUL" if c.stateful and c.op in ("replace", "delete") else ""
        flags += "  BLOCKED" if c.blocked else ""
        order = " (delete before replace)" if c.delete_before_replace else ""
        out.append(f"{_SIGN[c.op]} {c.op:<8} {c.type}  {c.name}{flags}{order}\n")
        out.append(f"      {c.urn}\n")
        if c.previous_urn:
            out.append(f"      renamed from {c.previous_urn}\n")
        for f in c.fields:
            note = "  (forces replacement)" if f.replaces else ""
            source = f"  (new id of replaced {f.via.rpartition('::')[2]})" if f.via else ""
            out.append(f"      ~ {f.path}: {_values(f.old, f.new)}{note}{source}\n")
        out.extend(f"      ! {reason}\n" for reason in c.blocked)
    if warning := drain_warning(summary):
        out.append(f"warning: {warning}\n")
    counts = summary.counts
    out.append(
        f"{counts['create']} to create, {counts['update']} to update, {counts['replace']} to replace, "
        f"{counts['delete']} to delete; {summary.unchanged} unchanged (base {ref})\n"
    )
    return "".join(out)


def _refusal(summary: Summary) -> str:
    lines = [f"  {c.op} {c.type} {c.name}\n" for c in summary.refused]
    return (
        f"gpuplat preview: refusing the diff: it would replace or delete {len(summary.refused)} stateful "
        "resource(s), losing their data:\n"
        + "".join(lines)
        + "review the change and pass --allow-replace if intended\n"
    )


def _blocked(summary: Summary) -> str:
    lines = [f"  {c.type} {c.name}: {reason}\n" for c in summary.blocked for reason in c.blocked]
    return (
        f"gpuplat preview: refusing the diff: AWS would refuse {len(lines)} change(s), and --allow-replace "
        "cannot change that:\n" + "".join(lines)
    )


def _verify_section(model: Platform, plan: Plan, resources: Sequence[RecordedResource]) -> str:
    from gpuplat.verify.output import markdown_section

    return markdown_section(model, plan, [r.to_json() for r in resources])


def cmd_preview(args: argparse.Namespace) -> int:
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    if not compiled.ok and args.format == "json":
        # Every command's --format json prints one JSON document, failures too (CI parses stdout).
        sys.stdout.write(render_json(compiled.diagnostics))
        return 1
    sys.stderr.write(render_text(compiled.diagnostics))  # warnings too: a preview is read by humans
    if not compiled.ok:
        return 1
    try:
        # The base first: a bad ref or a broken base fails before the head's recording is paid for.
        show = args.format != "json"
        with progress(f"{args.stack} at {args.base}", enabled=show and bool(args.base)):
            base = record_base(args, with_plan=args.format == "markdown") if args.base else None
        with progress(args.stack, enabled=show):
            resources = record_stack(args.stack, args.spec, args.overlay)
    except BaseRefError as err:
        sys.stderr.write(f"gpuplat preview: error: {err}\n")
        return err.exit_code
    except PreviewError as err:
        sys.stderr.write(f"gpuplat preview: error: {err}\n")
        return 1
    except Exception as err:  # a bug in a component: say where, without burying it in a traceback
        sys.stderr.write(f"gpuplat preview: the program failed: {type(err).__name__}: {err}\n")
        return 1
    changes = diff_resources(base.resources, resources) if base else None
    summary = summarize(changes, len(resources)) if changes is not None else None
    if args.format == "json":
        document: dict[str, Any] = {"resources": [r.to_json() for r in resources]}
        if changes is not None and summary is not None:
            document["changes"] = [c.to_json() for c in changes]
            document["warnings"] = [w for w in (drain_warning(summary),) if w]
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif args.format == "markdown":
        assert compiled.model is not None and compiled.plan is not None
        report = Report(
            stack=args.stack,
            model=compiled.model,
            plan=compiled.plan,
            resources=resources,
            changes=changes,
            base_ref=base.ref if base else None,
            base_plan=base.plan if base else None,
            policy=evaluate_policy(
                resources,
                args.stack,
                tuple(compiled.model.metadata.tags),
                compiled.plan.cost.monthly_usd if compiled.plan.cost is not None else None,
            ),
            allow_replace=args.allow_replace,
            verify=_verify_section(compiled.model, compiled.plan, resources),
        )
        sys.stdout.write(render_markdown(report))
    elif changes is not None and summary is not None and base is not None:
        sys.stdout.write(render_changes(changes, summary, base.ref))
    else:
        sys.stdout.write(render_tree(resources, show_inputs=args.show_inputs))
    if summary is None:
        return 0
    if summary.blocked:
        sys.stderr.write(_blocked(summary))
    if summary.refused and not args.allow_replace:
        sys.stderr.write(_refusal(summary))
    return 1 if summary.blocked or (summary.refused and not args.allow_replace) else 0
