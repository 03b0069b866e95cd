"""CrossGuard pack: `pulumi preview --policy-pack policy` runs gpuplat's rules inside the engine.

The rules are gpuplat.policies, the same functions `gpuplat policy` runs offline on the
recording. This file only adapts what the engine hands an analyzer to what they expect:

* props are the inputs with camelCase keys, as in the recording (a kubernetes CustomResource's
  are apiVersion/kind/metadata/spec). pulumi_policy wraps them in proxies that raise on an
  unknown value; they are unwrapped here and unknowns become "<computed>", which every rule
  lets pass, so a first preview is not blocked by values only `up` can know. Numbers arrive
  as floats; the rules compare numerically.
* options: PolicyResourceOptions carries `protect` (resource and stack policies alike) but no
  retainOnDelete and no remote. stateful-retain-on-delete (crossguard=False) is therefore not
  registered here and runs offline only; no-remote-components goes by type token and package.
* stack policies (s3-*) see every resource's outputs (the engine's state, same camelCase keys;
  inputs plus unknowns during a preview) and find a bucket's public access block, encryption
  and policy through `dependencies` and `property_dependencies`, as the offline runner does
  through the recorded dependsOn.
* the stack name is the one in the URN, which is what pulumi.get_stack() returns in the analyzer.
* aws-platform-tags expects the metadata.tags keys of this project's spec for the stack; when
  that cannot be compiled, any tags.
* the organisation's settings come from the policy config (`--policy-pack-config
  policy/config.json`, or the policy group's config in Pulumi Cloud): aws-required-tags'
  `requiredTagKeys` (default team, cost-center) and gpu-budget's `monthlyUsd`, parsed by the
  same code as `gpuplat policy --config`. gpu-budget compares with the plan's expected cost,
  compiled from this project's spec for the stack.

The pack runs in the project's .venv (PulumiPolicy.yaml), where gpuplat is installed editable.
No __init__.py here: this directory must never become an importable `policy` package.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import pulumi
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyConfigSchema,
    PolicyPack,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy import proxy as _proxy

from gpuplat import policies
from gpuplat.compile import Sources, compile_sources
from gpuplat.policies import COMPUTED, Context, Resource
from gpuplat.policies.config import SCHEMAS, parse_config

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LEVELS = {"mandatory": EnforcementLevel.MANDATORY, "advisory": EnforcementLevel.ADVISORY}
UNKNOWNS = frozenset(
    {
        _proxy.UNKNOWN_BOOLEAN_VALUE,
        _proxy.UNKNOWN_NUMBER_VALUE,
        _proxy.UNKNOWN_STRING_VALUE,
        _proxy.UNKNOWN_ARRAY_VALUE,
        _proxy.UNKNOWN_ASSET_VALUE,
        _proxy.UNKNOWN_ARCHIVE_VALUE,
        _proxy.UNKNOWN_OBJECT_VALUE,
    }
)


def plain(value: Any) -> Any:
    """pulumi_policy's props as the recording shows them: plain dicts and lists, "<computed>"."""
    # By name: the proxy classes are private to pulumi_policy; "__target" is their own escape
    # hatch to the wrapped value, read without the unknown check.
    if type(value).__name__ in ("_DictProxy", "_ListProxy"):
        value = value["__target"]
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in cast("Mapping[Any, Any]", value).items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in cast("list[Any]", value)]
    return COMPUTED if isinstance(value, str) and value in UNKNOWNS else value


def _options(opts: Any) -> dict[str, Any]:
    # Only options that are set, as in the recording; protect is the only one a rule reads.
    return {"protect": True} if getattr(opts, "protect", False) else {}


def _stack(urn: str) -> str:
    # urn:pulumi:<stack>::<project>::...: the engine's own name for the stack, the same value
    # pulumi.get_stack() returns inside the analyzer, and deterministic in tests.
    stack = urn.split("::", 1)[0].rpartition(":")[2] if urn.startswith("urn:pulumi:") else ""
    return stack or pulumi.get_stack()


@functools.cache
def _spec(stack: str) -> tuple[frozenset[str] | None, float | None]:
    """The spec's metadata.tags keys and the plan's monthly GPU cost at max size, for the stack."""
    overlay = PROJECT_ROOT / "stacks" / f"{stack}.yaml"
    sources = Sources(PROJECT_ROOT / "platform" / "platform.yaml", overlay if overlay.exists() else None)
    try:
        compiled = compile_sources(sources)
    except Exception:  # a pack must judge resources, not fail on a spec it could not read
        return None, None
    model, plan = compiled.model, compiled.plan
    cost = plan.cost.monthly_usd if plan is not None and plan.cost is not None else None
    return (frozenset(model.metadata.tags) if model is not None else None), cost


def _spec_tag_keys(stack: str) -> frozenset[str] | None:
    return _spec(stack)[0]


def _context(name: str, config: Mapping[str, Any], urn: str) -> Context:
    stack = _stack(urn)
    tag_keys, cost = _spec(stack)
    # The engine hands each policy its own section of the config file; parsed as that section.
    settings = {k: plain(v) for k, v in config.items() if k != "enforcementLevel"}
    return Context(stack, tag_keys, parse_config({name: settings}), cost)


def _schema(name: str) -> PolicyConfigSchema | None:
    return PolicyConfigSchema(properties=SCHEMAS[name]) if name in SCHEMAS else None


def resource_policy(rule: policies.Policy) -> ResourceValidationPolicy:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        ctx = _context(rule.name, args.get_config(), args.urn)
        props = cast("Mapping[str, Any]", plain(args.props))
        for message in rule.check_resource(args.resource_type, props, _options(args.opts), args.urn, ctx):
            report(message, None)

    return ResourceValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=LEVELS[rule.level],
        config_schema=_schema(rule.name),
    )


def _view(r: PolicyResource) -> Resource:
    waits_on = {d.urn for d in r.dependencies}
    waits_on |= {d.urn for deps in r.property_dependencies.values() for d in deps}
    props = cast("Mapping[str, Any]", plain(r.props))
    return Resource(r.urn, r.resource_type, props, _options(r.opts), frozenset(waits_on))


def stack_policy(rule: policies.Policy) -> StackValidationPolicy:
    check = rule.stack_check
    assert check is not None

    def validate(args: StackValidationArgs, report: ReportViolation) -> None:
        if not args.resources:
            return
        resources = [_view(r) for r in args.resources]
        for urn, message in check(resources, _context(rule.name, args.get_config(), resources[0].urn)):
            report(message, urn or None)  # "": about the stack as a whole (gpu-budget)

    return StackValidationPolicy(
        name=rule.name,
        description=rule.description,
        validate=validate,
        enforcement_level=LEVELS[rule.level],
        config_schema=_schema(rule.name),
    )


def build_policies() -> list[Policy]:
    """Every rule CrossGuard can see, in the registry's order."""
    built: list[Policy] = []
    for rule in policies.REGISTRY:
        if not rule.crossguard:
            continue
        built.append(stack_policy(rule) if rule.stack_check is not None else resource_policy(rule))
    return built


if __name__ == "__main__":
    # Serves the analyzer over gRPC until the engine stops it; tests load this file under
    # another name and use build_policies() without a server.
    PolicyPack(name="gpuplat", policies=build_policies(), enforcement_level=EnforcementLevel.ADVISORY)
