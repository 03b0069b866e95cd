"""A tenant's pods may name only its own PriorityClasses: the emitted policy's CEL, run as the
API server runs it (the variable first, then the validation) against sample pods."""

from __future__ import annotations

from typing import Any

import celpy
import celpy.celtypes
import kubernetes_validate
import pytest
from celpy.adapter import json_to_cel

from components.kubernetes.priority_scope import policy_name
from gpuplat.plan.storage import standard_tenants
from tests.support_k8s import STACKS, by_kind, recorded

SPECS = ("kubernetes", *STACKS)


def _objects(which: str) -> tuple[Any, dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
    model, _, resources = recorded(which)
    name = policy_name(model)
    (policy,) = [p for p in by_kind(resources, "ValidatingAdmissionPolicy") if p["metadata"]["name"] == name]
    (binding,) = [b for b in by_kind(resources, "ValidatingAdmissionPolicyBinding") if b["metadata"]["name"] == name]
    return model, policy, binding, by_kind(resources, "PriorityClass")


def admitted(policy: dict[str, Any], namespace: str, priority_class: str | None) -> bool:
    env = celpy.Environment()
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    activation: dict[str, Any] = {"object": json_to_cel({"spec": spec})}
    activation["request"] = json_to_cel({"namespace": namespace})
    variables: dict[str, Any] = {}
    for variable in policy["spec"]["variables"]:
        variables[variable["name"]] = env.program(env.compile(variable["expression"])).evaluate(activation)
    activation["variables"] = celpy.celtypes.MapType({celpy.celtypes.StringType(k): v for k, v in variables.items()})
    return all(
        bool(env.program(env.compile(v["expression"])).evaluate(activation)) for v in policy["spec"]["validations"]
    )


@pytest.mark.parametrize("which", SPECS)
def test_a_tenant_names_only_its_own_priority_classes(which: str) -> None:
    model, policy, _, classes = _objects(which)
    names = {c["metadata"]["name"] for c in classes}
    prefix = model.metadata.name
    standard = set(standard_tenants(model))
    for tenant in model.tenants:
        own = f"{prefix}-tenant-{tenant.name}"
        assert own in names and admitted(policy, tenant.name, own)
        assert admitted(policy, tenant.name, None) and admitted(policy, tenant.name, "")
        assert admitted(policy, tenant.name, f"{prefix}-standard")
        # The storage QoS class outranks every tenant: only its critical tenants may take it.
        assert admitted(policy, tenant.name, f"{prefix}-critical") == (tenant.name not in standard)
        assert not admitted(policy, tenant.name, "system-cluster-critical")
        for other in model.tenants:
            if other.name != tenant.name:
                assert not admitted(policy, tenant.name, f"{prefix}-tenant-{other.name}"), (tenant.name, other.name)


@pytest.mark.parametrize("which", SPECS)
def test_the_policy_binds_every_tenant_namespace_and_no_other(which: str) -> None:
    model, policy, binding, _ = _objects(which)
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    selector = binding["spec"]["matchResources"]["namespaceSelector"]
    assert selector == {"matchExpressions": [{"key": "gpuplat.dev/tenant", "operator": "Exists"}]}
    _, _, resources = recorded(which)
    tenants = {t.name for t in model.tenants}
    for namespace in by_kind(resources, "Namespace"):
        labelled = "gpuplat.dev/tenant" in namespace["metadata"].get("labels", {})
        assert labelled == (namespace["metadata"]["name"] in tenants)
    for obj in (policy, binding):
        kubernetes_validate.validate(obj, model.target.kubernetes_version, strict=True)
