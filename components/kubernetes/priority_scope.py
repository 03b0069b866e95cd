"""TenantPriorityScope: a tenant's pods may name only the PriorityClasses meant for that tenant.

A PriorityClass is cluster-wide: without this, any tenant could run its pods at another
tenant's priority, or at the storage QoS class `<platform>-critical` (1,000,000, above every
tenant), and preempt the others' work. A ValidatingAdmissionPolicy bound to the tenant
namespaces admits a pod that names no class, or one of its namespace's:

- `<platform>-tenant-<tenant>`, its own;
- `<platform>-standard` (value 0, never preempts), anyone's;
- `<platform>-critical` for tenants of priority high or critical, those the storage QoS treats as
  critical (gpuplat/plan/storage.py `standard_tenants` names the others).

Any other class (another tenant's, `system-cluster-critical`, ...) is refused at creation.
Why not a ResourceQuota `scopeSelector` on PriorityClass: a quota can only cap pods of the
listed classes per namespace, so refusing every class but a few means one quota per foreign
class in every namespace (tenants x classes objects, and a class created later is not
covered); the API server's `limitedResources` setting that would make it an allow-list is an
API server flag EKS does not expose. Only pods are checked: `priorityClassName` is immutable,
and the controllers (Job, Kueue's integrations) create the pods, so every route goes through
here. Kueue reads the pod template's class for the workload's priority, so a job naming a
foreign class still waits in its queue, then its pods are refused; the policy is the bound,
not a scheduling hint.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi

from gpuplat.model import Platform
from gpuplat.plan.storage import standard_tenants

from ._common import deny_tenant_pods, prefix
from .tenant import priority_class_name


def policy_name(model: Platform) -> str:
    return f"{prefix(model)}-tenant-priority"


def allowed_classes(model: Platform) -> dict[str, list[str]]:
    """Tenant namespace -> the PriorityClasses its pods may name."""
    standard = set(standard_tenants(model))
    result: dict[str, list[str]] = {}
    for tenant in model.tenants:
        classes = [priority_class_name(model, tenant.name), f"{prefix(model)}-standard"]
        if tenant.name not in standard:
            classes.append(f"{prefix(model)}-critical")
        result[tenant.name] = classes
    return result


def _cel_string(value: str) -> str:
    # Names are DNS labels (validated): no quote or backslash to escape.
    return f"'{value}'"


def allowed_map(model: Platform) -> str:
    """`allowed_classes` as a CEL map literal (the policy's variable `allowed`)."""
    entries = ", ".join(
        f"{_cel_string(ns)}: [{', '.join(_cel_string(c) for c in classes)}]"
        for ns, classes in sorted(allowed_classes(model).items())
    )
    return f"{{{entries}}}"


ADMISSION_EXPRESSION = (
    "!has(object.spec.priorityClassName) || object.spec.priorityClassName == '' || "
    "(request.namespace in variables.allowed && object.spec.priorityClassName in variables.allowed[request.namespace])"
)


@dataclass(frozen=True)
class TenantPriorityScopeArgs:
    model: Platform
    provider: pulumi.ProviderResource
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


class TenantPriorityScope(pulumi.ComponentResource):
    def __init__(self, name: str, args: TenantPriorityScopeArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:TenantPriorityScope", name, None, opts)
        model, provider = args.model, args.provider
        policy = policy_name(model)
        deny_tenant_pods(
            self, name, policy, provider, args.depends_on,
            variables=[{"name": "allowed", "expression": allowed_map(model)}],
            validations=[
                {
                    "expression": ADMISSION_EXPRESSION,
                    "message": "a tenant's pods may name only its own PriorityClass, "
                    f"{prefix(model)}-standard, or (priority high / critical) {prefix(model)}-critical",
                }
            ],
        )
        self.register_outputs({"policy": policy})
