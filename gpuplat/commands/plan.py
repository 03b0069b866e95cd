"""`gpuplat plan`: the derived numbers as text tables or the JSON document (render/plan.py).

With `--base REF` it compares with the plan of the stack at REF (commands/base.py says which
compiler plans the base): text prints what changed per pool and for the fleet and why a pool's
markets moved with no change of its own (render/plan_delta.py); JSON is the head's document with
`base` and `delta` added.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from gpuplat.compile import Compiled
from gpuplat.render.plan import plan_json, plan_text

from . import EXIT_INVALID, EXIT_OK, EXIT_USAGE
from .common import compile_args, print_diagnostics


def cmd_plan(args: argparse.Namespace) -> int:
    base = getattr(args, "base", None)
    if base is not None and (not base.strip() or base.startswith("-")):
        sys.stderr.write(f"gpuplat plan: error: --base {base!r} is not a git ref; give a commit, branch or tag\n")
        return EXIT_USAGE
    compiled = compile_args(args)
    if not compiled.ok or compiled.plan is None or compiled.model is None:
        print_diagnostics(compiled, "json" if args.format == "json" else "text")
        return EXIT_INVALID
    print_diagnostics(compiled, "text", only_if_any=True)  # warnings go to stderr
    if base is not None:
        return _against_base(args, compiled)
    if args.format == "json":
        sys.stdout.write(json.dumps(plan_json(compiled.model, compiled.plan), indent=2) + "\n")
    else:
        sys.stdout.write(plan_text(compiled.model, compiled.plan))
    return EXIT_OK


def _against_base(args: argparse.Namespace, compiled: Compiled) -> int:
    from gpuplat.preview.checkout import BaseRefError, checkout
    from gpuplat.render.plan_delta import delta_text, plan_delta

    from .base import base_plan, base_sources

    assert compiled.model is not None and compiled.plan is not None
    try:
        with checkout(args.base) as root:
            spec, overlay = base_sources(args, root)
            result = base_plan(root, args.stack, spec, overlay)
    except BaseRefError as err:
        sys.stderr.write(f"gpuplat plan: error: {err}\n")
        return err.exit_code
    if result.plan is None:
        sys.stderr.write(f"gpuplat plan: error: --base {args.base}: no plan of the base: {result.note}\n")
        return EXIT_INVALID
    head = plan_json(compiled.model, compiled.plan)
    delta = plan_delta(head, result.plan)
    if args.format == "json":
        about: dict[str, Any] = {"ref": args.base, "compiler": result.compiler, "versionNote": result.version_note}
        sys.stdout.write(json.dumps({**head, "base": about, "delta": delta}, indent=2) + "\n")
    else:
        sys.stdout.write(delta_text(delta, args.base, result, compiled.model.metadata.name))
    return EXIT_OK
