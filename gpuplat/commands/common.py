"""What the commands share: compiling the stack their arguments name and printing its diagnostics.

Every command prints diagnostics the same way: under `--format json` a failure is one JSON
document on stdout (CI parses stdout); otherwise they go to stderr, so warnings never mix with
the output a command exists for.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gpuplat.acknowledge import render_text as render_acknowledged
from gpuplat.catalog.charts import LOCAL_CHARTS_SETTING
from gpuplat.compile import OVERLAY_ENV, SPEC_ENV, Compiled, compile_sources, compile_stack, resolve_sources
from gpuplat.diagnostics import Diagnostic, has_errors, printable, render_github, render_json, render_text

if TYPE_CHECKING:  # verify and preview only: its renderer is imported when they run
    from gpuplat.verify.render import ChartDirectory


def compile_args(args: argparse.Namespace, *, with_plan: bool = True) -> Compiled:
    if args.suppress or not with_plan:
        compiled = compile_sources(
            resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress, with_plan=with_plan
        )
    else:
        compiled = compile_stack(args.stack, args.spec, args.overlay)
    return _required_tags(compiled, args.stack)


def _required_tags(compiled: Compiled, stack: str) -> Compiled:
    """The organisation policy's required tags (policy/config.json), on the spec of an aws platform."""
    from gpuplat.policies.config import PolicyConfigError
    from gpuplat.policies.runner import policy_config
    from gpuplat.policies.spec_tags import missing_tags

    model, pos = compiled.model, compiled.pos
    if model is None or pos is None or model.target.provider.value != "aws":
        return compiled
    try:
        config = policy_config(None)
    except PolicyConfigError:
        return compiled  # `gpuplat policy` reports an unreadable policy configuration
    origin = pos.locate(("metadata", "tags"), prefer_key=True)
    found = missing_tags(model.metadata.tags, stack, config, (origin.file, origin.line, origin.col))
    compiled.diagnostics.extend(found)
    if has_errors(found):
        compiled.model = None
    return compiled


def stack_settings_findings(
    args: argparse.Namespace, compiled: Compiled, *, given_spec: bool = False
) -> list[Diagnostic]:
    """The stack's settings file judged against its spec (gpuplat/validate/stack.py). `check` judges
    only the stack's own files: a spec or overlay given with --spec / --overlay is some other one,
    which this stack's settings are not for; a command that records the program with the settings
    (`given_spec`) judges what it recorded."""
    given = args.spec or args.overlay is not None or os.environ.get(SPEC_ENV) or os.environ.get(OVERLAY_ENV)
    if compiled.data is None or (given and not given_spec):
        return []
    from gpuplat.validate.stack import check_stack_settings

    return check_stack_settings(compiled.data, args.stack)


def print_diagnostics(compiled: Compiled, fmt: str, *, only_if_any: bool = False) -> None:
    diags = compiled.diagnostics
    if only_if_any and not diags and not compiled.acknowledged:
        return
    if fmt == "json":
        sys.stdout.write(render_json(diags))
    elif fmt == "github":
        sys.stdout.write(render_github(diags))
    else:
        # Acknowledged warnings are shown, with their reasons, where the warnings would be.
        text = render_text(diags) + render_acknowledged(compiled.acknowledged)
        (sys.stderr if only_if_any else sys.stdout).write(printable(text))


def compiled_or_report(args: argparse.Namespace) -> Compiled | None:
    """The compiled stack, its warnings on stderr; or None after printing why it does not compile."""
    compiled = compile_args(args)
    failed = not compiled.ok or compiled.model is None or compiled.plan is None
    if failed and args.format == "json":
        sys.stdout.write(render_json(compiled.diagnostics))
        return None
    sys.stderr.write(render_text(compiled.diagnostics))
    return None if failed else compiled


class ChartsError(Exception):
    """The chart directory named does not exist (a usage error)."""


def chart_directory(stack: str, given: str | None, root: Path = Path()) -> ChartDirectory:
    """Where verify renders charts from: `--charts DIR`, else the stack setting
    `gpuplat:localCharts` (relative to the project, as the program reads it), else the chart
    cache `gpuplat charts pull` fills."""
    from gpuplat.charts.cache import cache_root
    from gpuplat.preview.stack import stack_config
    from gpuplat.verify.render import ChartDirectory

    source, where = (given, "--charts") if given else (stack_config(stack, root).get(LOCAL_CHARTS_SETTING), None)
    if not source:
        return ChartDirectory(cache_root(), cache=True)
    directory = Path(source) if where else root / source
    if not directory.is_dir():
        named = where or f"stack setting {LOCAL_CHARTS_SETTING} of stack {stack}"
        raise ChartsError(f"{named}: {source} is not a directory")
    return ChartDirectory(directory)
