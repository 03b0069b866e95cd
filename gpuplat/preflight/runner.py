# pyright: strict
"""The deploying runner's way in to a private API endpoint: two stack settings, read and judged.

A private endpoint answers only inside the VPC, and the EKS cluster security group admits only
itself: the machine that runs `pulumi up` (which applies every Kubernetes object through that
endpoint) needs its own way in. The stack names it, because only the stack knows where it runs:
`gpu-platform:apiAccessCidrs` (CIDRs, e.g. a VPN or a CI runner subnet peered to the VPC) and
`gpu-platform:apiAccessSecurityGroupIds` (security groups of runners inside the VPC).

Pure, so the three places that ask agree: the program at start (components/aws/preflight.py,
which stops a deploy without either), `gpuplat check` (rules GP241 and GP242 on the stack's
settings file) and the offline commands that report a missing prerequisite beside their verdict.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass

CONFIG_NAMESPACE = "gpu-platform"  # the Pulumi project name: `gpu-platform:apiAccessCidrs`
CIDRS_SETTING = f"{CONFIG_NAMESPACE}:apiAccessCidrs"
GROUPS_SETTING = f"{CONFIG_NAMESPACE}:apiAccessSecurityGroupIds"
_SECURITY_GROUP = re.compile(r"^sg-[0-9a-f]{8}([0-9a-f]{9})?$")


class ApiAccessError(ValueError):
    """A stack setting that no security group rule could carry."""


@dataclass(frozen=True)
class ApiAccess:
    cidrs: tuple[str, ...] = ()
    security_group_ids: tuple[str, ...] = ()

    @property
    def declared(self) -> bool:
        return bool(self.cidrs or self.security_group_ids)


def _values(raw: str | None) -> list[str]:
    """A JSON list or a comma-separated string, as `pulumi config set` stores either."""
    if raw is None or not raw.strip():
        return []
    if raw.lstrip().startswith("["):
        try:
            parsed: object = json.loads(raw)
        except json.JSONDecodeError as err:
            raise ApiAccessError(f"expected a list of strings, got {raw} ({err.msg})") from err
        if not isinstance(parsed, list) or not all(isinstance(v, str) for v in parsed):  # pyright: ignore[reportUnknownVariableType]
            raise ApiAccessError(f"expected a list of strings, got {raw}")
        return [str(v).strip() for v in parsed]  # pyright: ignore[reportUnknownVariableType,reportUnknownArgumentType]
    return [v.strip() for v in raw.split(",") if v.strip()]


def cidrs(raw: str | None) -> tuple[str, ...]:
    """The CIDR setting, checked: ApiAccessError names the first value that is not an IPv4 block."""
    checked: list[str] = []
    for value in _values(raw):
        try:
            network = ipaddress.ip_network(value, strict=True)
        except ValueError as err:
            raise ApiAccessError(f"{CIDRS_SETTING}: {value} is not a CIDR block ({err})") from err
        if network.version != 4:
            raise ApiAccessError(f"{CIDRS_SETTING}: {value} is IPv6; the cluster's VPC is IPv4 only")
        checked.append(str(network))
    return tuple(dict.fromkeys(checked))


def security_groups(raw: str | None) -> tuple[str, ...]:
    """The security-group setting, checked: ApiAccessError names the first value that is not an id."""
    groups = _values(raw)
    for group in groups:
        if not _SECURITY_GROUP.match(group):
            raise ApiAccessError(f"{GROUPS_SETTING}: {group} is not a security group id (sg-...)")
    return tuple(dict.fromkeys(groups))


def api_access(cidr_setting: str | None, group_setting: str | None) -> ApiAccess:
    """Parse and check the two stack settings; a bad value raises ApiAccessError with a sentence."""
    return ApiAccess(cidrs(cidr_setting), security_groups(group_setting))


def runner_problem(endpoint: str, access: ApiAccess) -> str | None:
    """A private endpoint nobody outside the VPC can reach: the deploy would hang on the first
    Kubernetes object after building the whole AWS side."""
    if endpoint == "public" or access.declared:
        return None
    return (
        "the API endpoint is private and the stack declares no way in for the deploying runner: set "
        f"{GROUPS_SETTING} (the runner's security group, inside the VPC or a peered "
        f"one) or {CIDRS_SETTING}, or use target.endpoint: public with the runners' CIDRs "
        "(docs/deploying.md)"
    )
