"""Rules on a stack's Pulumi settings (stacks/Pulumi.<stack>.yaml) against its merged spec.

What the program would refuse for lack of a stack setting, or would deploy differently from what
the settings say, is told by `check` where the setting belongs, before any preview or deploy:
the runner's way in to a private endpoint (the program's preflight stops `pulumi up` without
it) and the region (the spec's `target.region` decides where the platform lives; the stack's
`aws:region` is what the deploy workflow's credentials and any other AWS tool use).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gpuplat.diagnostics import Level
from gpuplat.preflight.runner import CIDRS_SETTING, GROUPS_SETTING, ApiAccessError, cidrs, security_groups
from gpuplat.validate.registry import Finding, StackSettings, stack_rule
from gpuplat.validate.rules._common import Data, as_str, provider, section
from gpuplat.vocabulary import DEFAULT_ENDPOINT, DEFAULT_VPC_CIDR

EKS_ENDPOINT_DOCS = "https://docs.aws.amazon.com/eks/latest/userguide/cluster-endpoint.html"
PULUMI_CONFIG_DOCS = "https://www.pulumi.com/docs/iac/concepts/config/"
REGION_SETTING = "aws:region"


def _setting_text(value: Any) -> str | None:
    """A setting as the program receives it: strings as written, structured values as JSON."""
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value)


def _unreadable(value: Any) -> bool:
    """A secret (`secure:`) holds a value only the Pulumi CLI can decrypt."""
    return isinstance(value, dict) and "secure" in value


@stack_rule(
    "GP241",
    "runner-access-declared",
    Level.ERROR,
    "A private EKS endpoint answers only inside the VPC and the cluster security group admits only itself: "
    "`pulumi up` applies every Kubernetes object through it, so the program's preflight stops a stack that "
    "declares no way in for its runner.",
    source=EKS_ENDPOINT_DOCS,
    fix="In stacks/Pulumi.<stack>.yaml, set gpu-platform:apiAccessCidrs to the runner's network (the VPC's CIDR "
    "for a self-hosted runner inside it) or gpu-platform:apiAccessSecurityGroupIds to its security group; "
    "`gpuplat init --runner-cidr` writes it for new projects.",
)
def runner_access_declared(data: Data, settings: StackSettings) -> Iterator[Finding]:
    target = section(data, "target")
    if provider(data) != "aws" or target is None or target.get("endpoint", DEFAULT_ENDPOINT) != "private":
        return
    if "environment" in settings.document:  # Pulumi ESC environments may supply the settings
        return
    given = [settings.config.get(k) for k in (CIDRS_SETTING, GROUPS_SETTING)]
    if any(_unreadable(v) or (_setting_text(v) or "").strip() not in ("", "[]") for v in given):
        return  # declared (GP242 judges the values)
    vpc = as_str((section(data, "network") or {}).get("vpcCidr")) or DEFAULT_VPC_CIDR
    where = "under config:" if settings.exists else f"in a new {settings.file} (config:)"
    yield Finding(
        ("config",),
        f"stack {settings.stack}: the API endpoint is private (target.endpoint) and its settings declare no "
        f"way in for the deploying runner, so `pulumi up` would stop at preflight: add {CIDRS_SETTING} "
        f"(the runner's network: {vpc}, the VPC's own CIDR, for a self-hosted runner inside it, or a VPN or "
        f"peered subnet) or {GROUPS_SETTING} (the runner's security group) {where}; or set "
        f"target.endpoint: public for this stack with {CIDRS_SETTING} restricting it (docs/deploying.md)",
        at_key=True,
    )


@stack_rule(
    "GP242",
    "runner-access-values",
    Level.ERROR,
    "Each runner setting becomes an HTTPS rule of the cluster security group, which takes IPv4 CIDR blocks "
    "(the VPC is IPv4 only) and security group ids; the program stops on any other value.",
    source="https://docs.aws.amazon.com/vpc/latest/userguide/security-group-rules.html",
    fix="Give IPv4 CIDR blocks (10.0.0.0/16) and security group ids (sg-...), comma-separated or as a list.",
)
def runner_access_values(data: Data, settings: StackSettings) -> Iterator[Finding]:
    if provider(data) != "aws":
        return
    for key, parse in ((CIDRS_SETTING, cidrs), (GROUPS_SETTING, security_groups)):
        value = settings.config.get(key)
        if _unreadable(value):
            continue
        try:
            parse(_setting_text(value))
        except ApiAccessError as err:
            yield Finding(("config", key), f"stack {settings.stack}: {err}")


@stack_rule(
    "GP243",
    "stack-region-matches-spec",
    Level.ERROR,
    "The spec's target.region decides where every resource is created; a stack's aws:region that differs "
    "sends the deploy's credentials, the default provider and every other AWS tool reading the stack elsewhere.",
    source=PULUMI_CONFIG_DOCS,
    fix="Set the stack's aws:region to the spec's target.region (or change target.region for this stack in "
    "its overlay, knowing that moving a deployed stack replaces everything in it).",
)
def stack_region_matches_spec(data: Data, settings: StackSettings) -> Iterator[Finding]:
    target = section(data, "target")
    if provider(data) != "aws" or target is None:
        return
    spec_region, stack_region = as_str(target.get("region")), settings.config.get(REGION_SETTING)
    if spec_region is None or not isinstance(stack_region, str) or stack_region == spec_region:
        return
    yield Finding(
        ("config", REGION_SETTING),
        f"stack {settings.stack}: {REGION_SETTING} is {stack_region} but the spec's target.region is "
        f"{spec_region}: the platform is created in {spec_region}, while the deploy's credentials and any AWS "
        f"tool reading this stack use {stack_region}; set {REGION_SETTING}: {spec_region} (or change "
        f"target.region, which moves, and so replaces, every resource)",
    )
