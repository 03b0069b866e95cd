"""`gpuplat preflight`: would this account accept this stack? Checked before anything exists.

The checks are gpuplat/preflight, the ones the Pulumi program runs at start. The facts come from
`--account-facts FILE` (saved earlier), else from the account itself: the program's own reader
(components/aws/preflight.py) run by the Pulumi Automation API with an inline program that
registers nothing (gpuplat/preview/live_facts.py; needs the Pulumi CLI and the deploy role's
credentials, as `pulumi up` does). `--save FILE` writes the facts for `preview --account-facts`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gpuplat.compile import compile_sources, resolve_sources
from gpuplat.diagnostics import render_json, render_text
from gpuplat.model import Platform, Provider
from gpuplat.plan import Plan
from gpuplat.preflight.checks import preflight_problems
from gpuplat.preflight.facts import AccountFacts, FactsError, account_facts, save_facts

from . import EXIT_INVALID, EXIT_OK, EXIT_USAGE


def _read(args: argparse.Namespace, model: Platform, plan: Plan) -> AccountFacts:
    saved = account_facts(args)
    if saved is not None:
        return saved
    from gpuplat.preview.live_facts import read_live_facts

    return read_live_facts(model, plan)


def cmd_preflight(args: argparse.Namespace) -> int:
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    if not compiled.ok or compiled.model is None or compiled.plan is None:
        sys.stdout.write(render_json(compiled.diagnostics) if args.format == "json" else "")
        sys.stderr.write(render_text(compiled.diagnostics))
        return EXIT_INVALID
    if compiled.model.target.provider is Provider.KUBERNETES:
        # The cluster is the user's: there is no account whose offerings or quotas decide the deploy.
        if args.save or args.account_facts:
            sys.stderr.write(
                "gpuplat preflight: error: account facts are an AWS account's; this stack's provider is kubernetes\n"
            )
            return EXIT_USAGE
        if args.format == "json":
            sys.stdout.write(json.dumps({"ok": True, "problems": [], "provider": "kubernetes"}, indent=2) + "\n")
        else:
            sys.stdout.write("preflight: provider kubernetes creates no AWS resource; nothing to check\n")
        return EXIT_OK
    try:
        facts = _read(args, compiled.model, compiled.plan)
        if args.save:
            save_facts(facts, Path(args.save))
    except (FactsError, OSError) as err:
        sys.stderr.write(f"gpuplat preflight: error: {err}\n")
        return EXIT_USAGE
    problems = preflight_problems(compiled.model, compiled.plan, facts)
    if args.format == "json":
        doc = {"ok": not problems, "problems": problems, "region": facts.region, "readAt": facts.read_at}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    elif problems:
        sys.stdout.write("this stack would stop at preflight:\n" + "".join(f"- {p}\n" for p in problems))
    else:
        sys.stdout.write(f"preflight: {facts.region} offers everything this stack needs (facts of {facts.read_at})\n")
    return EXIT_INVALID if problems else EXIT_OK
