"""What every policy is made of: the resource view, the context, the registry and value helpers.

Pure Python, no pulumi, so CrossGuard (policy/) and `gpuplat policy` share the rules. A resource
is seen as the engine hands it to an analyzer: its type token, its inputs with the wire's
camelCase keys (unknown values as "<computed>", as in the recording) and the options that are
visible (None: none). Offline all recorded options are; CrossGuard sees `protect` only
(pulumi_policy has no retainOnDelete or remote), so rules needing more are crossguard=False.

Unknown values never produce a violation: during a real preview many inputs are computed,
and a rule that fails on "can't tell" would block every first deployment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .config import PolicyConfig

Level = Literal["mandatory", "advisory"]
COMPUTED = "<computed>"


@dataclass(frozen=True)
class Context:
    stack: str
    tag_keys: frozenset[str] | None = None  # the spec's metadata.tags keys; None: not known here
    config: PolicyConfig = field(default_factory=PolicyConfig)  # the organisation's settings (config.py)
    gpu_monthly_usd: float | None = None  # the plan's GPU spend at max size; None: the plan has no cost


@dataclass(frozen=True)
class Resource:
    urn: str
    type: str
    props: Mapping[str, Any]
    options: Mapping[str, Any] | None = None
    depends_on: frozenset[str] = frozenset()  # URNs it waits on (explicit or through its inputs)


Check = Callable[[Resource, Context], list[str]]
StackCheck = Callable[[Sequence[Resource], Context], list[tuple[str, str]]]  # (urn, message)


@dataclass(frozen=True)
class Policy:
    name: str
    level: Level
    description: str
    check: Check | None = None
    stack_check: StackCheck | None = None
    types: frozenset[str] | None = None  # None: every type
    crossguard: bool = True  # False: CrossGuard cannot see what the rule needs

    def check_resource(
        self, type_: str, props: Mapping[str, Any], options: Mapping[str, Any] | None, urn: str, ctx: Context
    ) -> list[str]:
        """Messages about one resource; [] when it passes or the policy is not about its type."""
        if self.check is None or (self.types is not None and type_ not in self.types):
            return []
        return self.check(Resource(urn, type_, props, options), ctx)


REGISTRY: list[Policy] = []


def resource_rule(
    name: str, level: Level, description: str, *types: str, crossguard: bool = True
) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        REGISTRY.append(Policy(name, level, description, fn, None, frozenset(types) or None, crossguard))
        return fn

    return register


def stack_rule(name: str, description: str, level: Level = "mandatory") -> Callable[[StackCheck], StackCheck]:
    def register(fn: StackCheck) -> StackCheck:
        REGISTRY.append(Policy(name, level, description, stack_check=fn))
        return fn

    return register


def as_map(value: Any) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def as_list(value: Any) -> list[Any]:
    return list(cast("Sequence[Any]", value)) if isinstance(value, (list, tuple)) else [] if value is None else [value]


def get_path(value: Any, *path: str) -> Any:
    for key in path:
        value = as_map(value).get(key)
    return value


def is_true(value: Any) -> bool:
    # pulumi-aws types some booleans as strings (launch template ebs.encrypted is "true").
    return value is True or (isinstance(value, str) and value.lower() == "true")


def number(value: Any) -> float | None:
    # CrossGuard hands every number over as a float; the recording turns whole ones into ints.
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    return [as_map(s) for s in as_list(as_map(document).get("Statement"))]


def expect(r: Resource, path: str, accepted: Sequence[Any], unset: str = "unset") -> list[str]:
    """[] when the input at `path` (keys joined by '/') is unknown or one of `accepted`."""
    value = get_path(r.props, *path.split("/"))
    if value == COMPUTED or (value is not None and value in accepted):
        return []
    shown, wanted = unset if value is None else json.dumps(value), " or ".join(map(json.dumps, accepted))
    return [f"{path.replace('/', '.')} is {shown}, not {wanted}"]


def type_tokens(prefix: str, names: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{name}" for name in names.split())
