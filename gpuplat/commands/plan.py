"""`gpuplat plan`: the derived numbers as text tables or the JSON document (render/plan.py)."""

from __future__ import annotations

import argparse
import json
import sys

from gpuplat.render.plan import plan_json, plan_text

from . import EXIT_INVALID, EXIT_OK
from .common import compile_args, print_diagnostics


def cmd_plan(args: argparse.Namespace) -> int:
    compiled = compile_args(args)
    if not compiled.ok or compiled.plan is None or compiled.model is None:
        print_diagnostics(compiled, "json" if args.format == "json" else "text")
        return EXIT_INVALID
    print_diagnostics(compiled, "text", only_if_any=True)  # warnings go to stderr
    if args.format == "json":
        sys.stdout.write(json.dumps(plan_json(compiled.model, compiled.plan), indent=2) + "\n")
    else:
        sys.stdout.write(plan_text(compiled.model, compiled.plan))
    return EXIT_OK
