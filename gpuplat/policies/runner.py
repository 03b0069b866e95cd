"""Every policy over a recorded stack, with the organisation's settings: what `gpuplat policy`
prints and the pull-request comment summarises.

Offline the rules see more than CrossGuard does: every resource option of the recording
(retainOnDelete, remote ...) and the spec's metadata.tags. The recording is read through a
protocol (the preview engine's RecordedResource fits it), so this module imports no recorder.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from . import REGISTRY, Context, Resource
from .config import PolicyConfig, load_config

# Read by default when it exists: the file the CrossGuard pack is given in CI, so both agree.
DEFAULT_CONFIG = Path("policy") / "config.json"

_LEVELS = {"mandatory": 0, "advisory": 1}


class Recorded(Protocol):
    """One recorded resource, as the preview engine hands it over."""

    @property
    def urn(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def inputs(self) -> Mapping[str, Any]: ...
    @property
    def options(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str  # mandatory | advisory
    urn: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"policy": self.policy, "level": self.level, "urn": self.urn, "message": self.message}


def evaluate(
    resources: Sequence[Recorded],
    *,
    stack: str,
    tag_keys: Collection[str] | None = None,
    config: PolicyConfig | None = None,
    gpu_monthly_usd: float | None = None,
) -> list[Violation]:
    """Every policy over a recorded stack: mandatory first, then by policy, then in resource order.

    `tag_keys` are the spec's metadata.tags keys; without them aws-platform-tags only asks for
    some tags. `config` is the organisation's (required tags, GPU budget, level overrides;
    default: config.py's defaults); `gpu_monthly_usd` the plan's GPU spend at max size.
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


def policy_config(path: str | None) -> PolicyConfig:
    """--config FILE, else policy/config.json when present, else the defaults."""
    known = frozenset(p.name for p in REGISTRY)
    if path is not None:
        return load_config(Path(path), known)
    return load_config(DEFAULT_CONFIG, known) if DEFAULT_CONFIG.is_file() else PolicyConfig()
