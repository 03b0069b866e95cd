"""`gpuplat policy`: run the policy pack offline on the recorded resources.

The rules are gpuplat.policies, the same functions the CrossGuard pack in policy/ wraps; the
runner (policies/runner.py) evaluates them, render/policy.py prints the result. Imported only
when the command runs: recording drives pulumi.
"""

from __future__ import annotations

import argparse
import json
import sys

from gpuplat.diagnostics import render_text
from gpuplat.policies.config import PolicyConfigError
from gpuplat.policies.runner import evaluate, policy_config
from gpuplat.preview.progress import progress
from gpuplat.preview.stack import PreviewError, record_stack
from gpuplat.render.policy import render_violations

from .common import compile_args
from .prerequisites import deploy_prerequisites, report_prerequisites


def cmd_policy(args: argparse.Namespace) -> int:
    try:
        config = policy_config(args.config)
    except PolicyConfigError as err:
        sys.stderr.write(f"gpuplat policy: error: {err}\n")
        return 2
    compiled = compile_args(args)
    sys.stderr.write(render_text(compiled.diagnostics))  # warnings too, away from stdout
    if not compiled.ok or compiled.model is None:
        return 1
    try:
        with progress(args.stack, enabled=args.format != "json"):
            # Judged, not deployed: what preflight would refuse is reported beside the verdict.
            resources = record_stack(args.stack, args.spec, args.overlay, judge=True)
    except PreviewError as err:
        sys.stderr.write(f"gpuplat policy: error: {err}\n")
        return 1
    except Exception as err:  # a bug in a component: say where, without burying it in a traceback
        sys.stderr.write(f"gpuplat policy: the program failed: {type(err).__name__}: {err}\n")
        return 1
    cost = compiled.plan.cost if compiled.plan is not None else None
    violations = evaluate(
        resources,
        stack=args.stack,
        tag_keys=compiled.model.metadata.tags.keys(),
        config=config,
        gpu_monthly_usd=cost.monthly_usd if cost is not None else None,
    )
    prerequisites = deploy_prerequisites(args, compiled)
    if args.format == "json":
        document = {"violations": [v.to_json() for v in violations], "prerequisites": prerequisites}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(render_violations(violations, len(resources)))
        report_prerequisites("policy", prerequisites)
    return 1 if any(v.level == "mandatory" for v in violations) else 0
