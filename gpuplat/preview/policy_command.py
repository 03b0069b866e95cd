"""`gpuplat policy`: run the policy pack offline on the recorded resources.

The rules are gpuplat.preview.policies, the same functions the CrossGuard pack in policy/
wraps. Offline they see more than CrossGuard does: every resource option of the recording
(retainOnDelete, remote ...) and the spec's metadata.tags. Imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpuplat.compile import compile_sources, resolve_sources
from gpuplat.diagnostics import render_text

from .command import PreviewError, record_stack
from .engine import RecordedResource
from .policies import REGISTRY, Context, Resource
from .policy_config import PolicyConfig, PolicyConfigError, load_config
from .progress import progress

# Read by default when it exists: the file the CrossGuard pack is given in CI, so both agree.
DEFAULT_CONFIG = Path("policy") / "config.json"

_LEVELS = {"mandatory": 0, "advisory": 1}


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str  # mandatory | advisory
    urn: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"policy": self.policy, "level": self.level, "urn": self.urn, "message": self.message}


def evaluate(
    resources: Sequence[RecordedResource],
    *,
    stack: str,
    tag_keys: Collection[str] | None = None,
    config: PolicyConfig | None = None,
    gpu_monthly_usd: float | None = None,
) -> list[Violation]:
    """Every policy over a recorded stack: mandatory first, then by policy, then in resource order.

    `tag_keys` are the spec's metadata.tags keys; without them aws-platform-tags only asks for
    some tags. `config` is the organisation's (required tags, GPU budget, level overrides;
    default: policy_config's defaults); `gpu_monthly_usd` the plan's expected GPU spend.
    """
    views = [
        Resource(r.urn, r.type, r.inputs, r.options, frozenset(r.options.get("dependsOn") or ())) for r in resources
    ]
    config = config or PolicyConfig()
    ctx = Context(stack, frozenset(tag_keys) if tag_keys is not None else None, config, gpu_monthly_usd)
    order = {r.urn: i for i, r in enumerate(views)}
    found: list[Violation] = []
    for policy in REGISTRY:
        level = config.level_of(policy.name, policy.level)
        if level == "disabled":
            continue
        if policy.stack_check is not None:
            found += [Violation(policy.name, level, u, m) for u, m in policy.stack_check(views, ctx)]
        for r in views:
            messages = policy.check_resource(r.type, r.props, r.options, r.urn, ctx)
            found += [Violation(policy.name, level, r.urn, m) for m in messages]
    return sorted(found, key=lambda v: (_LEVELS.get(v.level, 2), v.policy, order.get(v.urn, -1)))


def render_violations(violations: Sequence[Violation], resources: int) -> str:
    lines = [f"{v.level} {v.policy} {v.urn or '(stack)'}: {v.message}\n" for v in violations]
    mandatory = sum(v.level == "mandatory" for v in violations)
    lines.append(
        f"{len(violations)} violation(s), {mandatory} mandatory, {len(violations) - mandatory} advisory; "
        f"{len(REGISTRY)} policies over {resources} resources\n"
    )
    return "".join(lines)


def policy_config(path: str | None) -> PolicyConfig:
    """--config FILE, else policy/config.json when present, else the defaults."""
    known = frozenset(p.name for p in REGISTRY)
    if path is not None:
        return load_config(Path(path), known)
    return load_config(DEFAULT_CONFIG, known) if DEFAULT_CONFIG.is_file() else PolicyConfig()


def cmd_policy(args: argparse.Namespace) -> int:
    try:
        config = policy_config(args.config)
    except PolicyConfigError as err:
        sys.stderr.write(f"gpuplat policy: error: {err}\n")
        return 2
    compiled = compile_sources(resolve_sources(args.stack, args.spec, args.overlay), suppress=args.suppress)
    sys.stderr.write(render_text(compiled.diagnostics))  # warnings too, away from stdout
    if not compiled.ok or compiled.model is None:
        return 1
    try:
        with progress(args.stack, enabled=args.format != "json"):
            resources = record_stack(args.stack, args.spec, args.overlay)
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
    if args.format == "json":
        sys.stdout.write(json.dumps({"violations": [v.to_json() for v in violations]}, indent=2) + "\n")
    else:
        sys.stdout.write(render_violations(violations, len(resources)))
    return 1 if any(v.level == "mandatory" for v in violations) else 0
