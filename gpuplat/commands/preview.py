"""`gpuplat preview`: compile the stack, run the real `__main__.py` offline, print every resource.

With `--base REF` the stack is also recorded as it is at REF (preview/diff.py) and the command
prints the diff instead; replacing or deleting a stateful resource fails it unless
`--allow-replace`, a change AWS would refuse (preview/gate.py) fails it regardless, and deleted
NodePools are warned about. `--format markdown` renders the pull-request comment
(render/comment.py) from the head's plan, the base's plan, the policy results and verify's
journeys gathered here. Imported only when the command runs (the CLI keeps pulumi out of check
and plan).

The base's plan comes from commands/base.py: the running compiler's on the base commit's files
for a project that installs gpuplat, the base checkout's own planner in a repository that
carries one (this one), as its resources come from its own components.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from gpuplat.compile import Compiled
from gpuplat.policies.runner import evaluate, policy_config
from gpuplat.preflight.facts import FactsError, account_facts
from gpuplat.preview import RecordedResource
from gpuplat.preview.diff import BaseRefError, Change, checkout, diff_resources, summarize
from gpuplat.preview.progress import progress
from gpuplat.preview.stack import PreviewError, record_stack
from gpuplat.render.comment import PlanResult, PolicyResult, Report, render_markdown
from gpuplat.render.preview import blocked, drain_warning, refusal, release_warning, render_changes, render_tree
from gpuplat.verify.render import NO_CHARTS, ChartDirectory

from .base import base_plan, base_sources
from .common import ChartsError, chart_directory, compiled_or_report


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
        spec, overlay = base_sources(args, root)
        try:
            # Only compared, never deployed: a base the program's preflight would stop (a private
            # endpoint before its runner's access was declared) is still recorded.
            resources = record_stack(args.stack, spec, overlay, root=root, judge=True)
        except PreviewError as err:
            raise PreviewError(f"--base {ref}: {err}") from err
        except Exception as err:  # the base's own code: its SpecError is a class we cannot import
            if type(err).__name__ == "SpecError":
                raise PreviewError(f"--base {ref}: {err}".rstrip()) from err
            raise PreviewError(f"--base {ref}: the program failed: {type(err).__name__}: {err}") from err
        plan = base_plan(root, args.stack, spec, overlay) if with_plan else None
    return Base(ref, resources, plan)


def policy_result(
    resources: Sequence[RecordedResource],
    stack: str,
    tag_keys: Collection[str] | None = None,
    gpu_monthly_usd: float | None = None,
) -> PolicyResult:
    """Offline policy results, as `gpuplat policy` finds them, with the same settings file."""
    try:
        config = policy_config(None)
    except Exception as err:
        return PolicyResult(None, f"policy configuration not readable: {err}")
    try:
        found = evaluate(resources, stack=stack, tag_keys=tag_keys, config=config, gpu_monthly_usd=gpu_monthly_usd)
    except Exception as err:  # a policy bug must not hide the rest of the comment
        return PolicyResult(None, f"policy evaluation failed: {type(err).__name__}: {err}")
    return PolicyResult(found)


def _report(
    args: argparse.Namespace,
    compiled: Compiled,
    resources: list[RecordedResource],
    base: Base | None,
    changes: Sequence[Change] | None,
) -> Report:
    from gpuplat.verify.output import markdown_section

    model, plan = compiled.model, compiled.plan
    assert model is not None and plan is not None
    cost = plan.cost.monthly_usd if plan.cost is not None else None
    verify_section, broken = markdown_section(model, plan, [r.to_json() for r in resources], _charts(args))
    return Report(
        stack=args.stack,
        model=model,
        plan=plan,
        resources=resources,
        changes=changes,
        base_ref=base.ref if base else None,
        base_plan=base.plan if base else None,
        policy=policy_result(resources, args.stack, tuple(model.metadata.tags), cost),
        allow_replace=args.allow_replace,
        verify=verify_section,
        broken_journeys=broken,
    )


def _charts(args: argparse.Namespace) -> ChartDirectory:
    """The comment's verify section renders from the stack's local charts, else the chart cache."""
    try:
        return chart_directory(args.stack, None)
    except ChartsError as err:
        sys.stderr.write(f"gpuplat preview: warning: {err}; verify renders no chart\n")
        return NO_CHARTS


def _record(args: argparse.Namespace) -> tuple[Base | None, list[RecordedResource]] | int:
    """The base's and the head's recordings, or the exit code of a failure (already reported)."""
    try:
        # The base first: a bad ref or a broken base fails before the head's recording is paid for.
        show = args.format != "json"
        with progress(f"{args.stack} at {args.base}", enabled=show and args.base is not None):
            base = record_base(args, with_plan=args.format == "markdown") if args.base is not None else None
        with progress(args.stack, enabled=show):
            return base, record_stack(args.stack, args.spec, args.overlay, facts=account_facts(args))
    except BaseRefError as err:
        sys.stderr.write(f"gpuplat preview: error: {err}\n")
        return err.exit_code
    except FactsError as err:
        sys.stderr.write(f"gpuplat preview: error: {err}\n")
        return 2
    except PreviewError as err:
        sys.stderr.write(f"gpuplat preview: error: {err}\n")
        return 1
    except Exception as err:  # a bug in a component: say where, without burying it in a traceback
        sys.stderr.write(f"gpuplat preview: the program failed: {type(err).__name__}: {err}\n")
        return 1


def cmd_preview(args: argparse.Namespace) -> int:
    if args.base is not None and (not args.base.strip() or args.base.startswith("-")):
        # An empty CI variable (`--base "$BASE"`) must not turn the diff gate into a plain preview.
        sys.stderr.write(
            "gpuplat preview: error: " + f"--base {args.base!r} is not a git ref; give a commit, branch or tag\n"
        )
        return 2
    compiled = compiled_or_report(args)
    if compiled is None:
        return 1
    recorded = _record(args)
    if isinstance(recorded, int):
        return recorded
    base, resources = recorded
    changes = diff_resources(base.resources, resources) if base else None
    summary = summarize(changes, len(resources)) if changes is not None else None
    if args.format == "json":
        document: dict[str, Any] = {"resources": [r.to_json() for r in resources]}
        if changes is not None and summary is not None:
            document["changes"] = [c.to_json() for c in changes]
            document["warnings"] = [w for w in (drain_warning(summary), release_warning(summary)) if w]
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(_report(args, compiled, resources, base, changes)))
    elif changes is not None and summary is not None and base is not None:
        sys.stdout.write(render_changes(changes, summary, base.ref))
    else:
        sys.stdout.write(render_tree(resources, show_inputs=args.show_inputs))
    if summary is None:
        return 0
    if summary.blocked:
        sys.stderr.write(blocked(summary))
    if summary.refused and not args.allow_replace:
        sys.stderr.write(refusal(summary))
    return 1 if summary.blocked or (summary.refused and not args.allow_replace) else 0
