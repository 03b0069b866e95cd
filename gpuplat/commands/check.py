"""`gpuplat check`: validate the spec and print every diagnostic."""

from __future__ import annotations

import argparse
import sys

from gpuplat.diagnostics import has_errors, printable
from gpuplat.editor_schema import CODE as STALE_SCHEMA
from gpuplat.editor_schema import stale

from . import EXIT_INVALID, EXIT_OK
from .common import compile_args, print_diagnostics, stack_settings_findings


def cmd_check(args: argparse.Namespace) -> int:
    compiled = compile_args(args)
    compiled.diagnostics.extend(stack_settings_findings(args, compiled))
    for path in (compiled.sources.spec, compiled.sources.overlay):  # the editors' copy of the schema
        found = stale(path) if path is not None else None
        if found is not None:
            (compiled.suppressed if STALE_SCHEMA in args.suppress else compiled.diagnostics).append(found)
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
