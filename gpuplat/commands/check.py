"""`gpuplat check`: validate the spec and print every diagnostic; the compile and print helpers
`plan` shares."""

from __future__ import annotations

import argparse
import sys

from gpuplat.acknowledge import render_text as render_acknowledged
from gpuplat.compile import Compiled, compile_sources, compile_stack, resolve_sources
from gpuplat.diagnostics import has_errors, printable, render_github, render_json, render_text

from . import EXIT_INVALID, EXIT_OK


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


def cmd_check(args: argparse.Namespace) -> int:
    compiled = compile_args(args)
    print_diagnostics(compiled, args.format)
    if args.format == "text":
        errors = sum(d.is_error for d in compiled.diagnostics)
        warnings = len(compiled.diagnostics) - errors
        files = str(compiled.sources.spec) + (f" + {compiled.sources.overlay}" if compiled.sources.overlay else "")
        verdict = "invalid" if errors else "valid"
        hidden = sorted({d.code for d in compiled.suppressed})
        shown = f", {len(compiled.acknowledged)} acknowledged" if compiled.acknowledged else ""
        shown += f", {len(compiled.suppressed)} suppressed ({', '.join(hidden)})" if hidden else ""
        sys.stdout.write(printable(f"{files}: {verdict} ({errors} error(s), {warnings} warning(s){shown})\n"))
    return EXIT_INVALID if has_errors(compiled.diagnostics) else EXIT_OK
