"""`gpuplat preview`: compile the stack, run the real `__main__.py` offline, print every resource.

With `--base REF` the stack is also recorded as it is at REF (preview/diff.py) and the command
prints the diff instead; replacing or deleting a stateful resource fails it unless
`--allow-replace`, a change AWS would refuse (preview/gate.py) fails it regardless, and deleted
NodePools are warned about. `--format markdown` renders the pull-request comment
(render/comment.py) from the head's plan, the base's plan, the policy results and verify's
journeys gathered here. Imported only when the command runs (the CLI keeps pulumi out of check
and plan).

The base's plan comes from the base checkout's own `python -m gpuplat.cli plan` (PYTHONPATH
and cwd = the checkout), never from importing base code here, so a pull request that changes
the planner compares the old planner's numbers with the new one's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from gpuplat.compile import OVERLAY_ENV, SPEC_ENV, Compiled
from gpuplat.policies.runner import evaluate, policy_config
from gpuplat.preflight.facts import FactsError, account_facts
from gpuplat.preview import RecordedResource
from gpuplat.preview.diff import BaseRefError, Change, checkout, diff_resources, resolve_ref, summarize
from gpuplat.preview.progress import progress
from gpuplat.preview.stack import PreviewError, record_stack
from gpuplat.render.comment import PlanResult, PolicyResult, Report, render_markdown
from gpuplat.render.preview import blocked, drain_warning, refusal, release_warning, render_changes, render_tree
from gpuplat.verify.render import NO_CHARTS, ChartDirectory

from .common import ChartsError, chart_directory, compiled_or_report


@dataclass
class Base:
    ref: str
    resources: list[RecordedResource]
    plan: PlanResult | None = None  # markdown only


def base_plan(root: Path, stack: str, spec: str | None, overlay: str | None) -> PlanResult:
    """The base checkout's own `gpuplat plan --format json`, run in a subprocess."""
    if not (root / "gpuplat" / "cli.py").is_file():
        return PlanResult(None, "the base has no gpuplat planner")
    command = [sys.executable, "-m", "gpuplat.cli", "plan", "--stack", stack, "--format", "json"]
    if spec:
        command += ["--spec", spec]
    if overlay is not None:
        command += ["--overlay", overlay]
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    try:
        done = subprocess.run(
            command,
            cwd=root,
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return PlanResult(None, f"gpuplat plan could not run at the base ({err})")
    return _plan_result(done)


def _plan_result(done: subprocess.CompletedProcess[str]) -> PlanResult:
    if done.returncode == 2 and "invalid choice" in done.stderr:
        return PlanResult(None, "the base's gpuplat has no plan command")
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return PlanResult(None, f"gpuplat plan failed at the base (exit {done.returncode}): {last}")
    try:
        loaded = json.loads(done.stdout)
    except json.JSONDecodeError:
        return PlanResult(None, "the base's gpuplat plan printed no JSON document")
    if not isinstance(loaded, dict) or "pools" not in loaded:
        return PlanResult(None, "the base's plan JSON has no pools")
    return PlanResult(cast("dict[str, Any]", loaded))


def in_base(option: str, given: str | None, root: Path, ref: str) -> str | None:
    """The file `given` (as typed: relative, absolute, through `..` or a symlink) as the same
    file of the base checkout `root`, which stands where the cwd stands in the repository.
    Handing the base the path as typed would, for an absolute one, compile the working tree's
    file at the base and diff the head with itself. BaseRefError (exit 2) for a file outside
    the repository: the base commit has no copy of it."""
    if not given:
        return given
    top = resolve_ref(ref)[0].resolve()
    try:
        target = Path(given).resolve()
        inside = target.relative_to(top)
    except (ValueError, OSError, RuntimeError) as err:
        raise BaseRefError(
            f"--base {ref}: {option} {given} is not a file of this repository, so the base commit has no copy of it",
            2,
        ) from err
    return str(root / os.path.relpath(top / inside, Path.cwd().resolve()))


def _base_sources(args: argparse.Namespace, root: Path) -> tuple[str | None, str | None]:
    spec = args.spec or os.environ.get(SPEC_ENV) or None
    overlay = args.overlay if args.overlay is not None else os.environ.get(OVERLAY_ENV)
    return in_base("--spec", spec, root, args.base), in_base("--overlay", overlay, root, args.base)


def record_base(args: argparse.Namespace, *, with_plan: bool) -> Base:
    """Record the stack as it is at `args.base`; BaseRefError (exit 2) or PreviewError (exit 1)."""
    ref: str = args.base
    with checkout(ref) as root:
        if not (root / "__main__.py").exists():
            raise PreviewError(f"--base {ref}: no Pulumi program (__main__.py) at that ref; nothing to diff against")
        spec, overlay = _base_sources(args, root)
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
