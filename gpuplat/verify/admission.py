# pyright: strict
"""Step 7: the tenant namespace admits the job's pod.

The pod: one container asking for one unit of the resource (limit = request, as extended
resources require) and 16 CPUs / 128Gi of memory as requests with no CPU or memory limits, as
training jobs commonly do. On a fabric pool it adds the IPC_LOCK capability (RDMA pins memory).

- LimitRange (type Container): a container without limits gets `default`; a request above the
  resulting limit, or outside min / max, is refused by the API server.
- Pod Security: `baseline` and `restricted` refuse added capabilities beyond a fixed set,
  IPC_LOCK included; only `privileged` admits it. A ValidatingAdmissionPolicy bound to the
  namespace may refuse more; verify names it but cannot evaluate its CEL.
- ResourceQuota: `requests.<resource>` (and CPU / memory entries, when set) must leave room.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from gpuplat.model import GpuNodePool

from .k8s import Obj, as_list, as_map, describe, dig, quantity, selector_matches
from .queues import namespace_labels
from .types import ADMISSION, Step
from .view import View

JOB_REQUESTS = {"cpu": "16", "memory": "128Gi"}
PSA_ENFORCE = "pod-security.kubernetes.io/enforce"
FABRIC_CAPABILITY = "IPC_LOCK"


def _limit_range_problems(view: View, namespace: str, resource: str) -> list[str]:
    problems: list[str] = []
    requests = {**JOB_REQUESTS, resource: "1"}
    for lr in view.find("LimitRange", namespace=namespace):
        for item in (as_map(i) for i in as_list(dig(lr, "spec", "limits"))):
            if item.get("type", "Container") != "Container":
                continue
            problems += _item_problems(describe(lr), item, requests, resource)
    return problems


def _item_problems(where: str, item: Obj, requests: dict[str, str], resource: str) -> list[str]:
    problems: list[str] = []
    defaults, maxima, minima = as_map(item.get("default")), as_map(item.get("max")), as_map(item.get("min"))
    for name, text in requests.items():
        request = quantity(text) or Decimal(0)
        limit = request if name == resource else quantity(defaults.get(name))
        if limit is not None and request > limit:
            problems.append(f"{where} defaults the {name} limit to {defaults.get(name)}, below the request {text}")
        if name in maxima and (quantity(maxima[name]) or 0) < max(request, limit or 0):
            problems.append(f"{where} caps {name} at {maxima[name]}, below {text}")
        if name in minima and (quantity(minima[name]) or 0) > request:
            problems.append(f"{where} wants {name} of at least {minima[name]}")
    return problems


def _pod_security_problem(level: str, fabric: bool) -> str | None:
    if fabric and level in ("baseline", "restricted"):
        return f"Pod Security {level} refuses the {FABRIC_CAPABILITY} capability a fabric job adds"
    return None


def _bound_policies(view: View, labels: dict[str, str]) -> list[str]:
    names: list[str] = []
    for binding in view.find("ValidatingAdmissionPolicyBinding"):
        selector = dig(binding, "spec", "matchResources", "namespaceSelector")
        if selector is None or selector_matches(selector, labels):
            names.append(f"{dig(binding, 'spec', 'policyName')} (binding {dig(binding, 'metadata', 'name')})")
    return names


def _quota_problems(view: View, namespace: str, resource: str) -> list[str]:
    problems: list[str] = []
    requests: dict[str, Any] = {f"requests.{k}": v for k, v in JOB_REQUESTS.items()}
    requests[f"requests.{resource}"] = "1"
    for quota in view.find("ResourceQuota", namespace=namespace):
        hard = as_map(dig(quota, "spec", "hard"))
        for key, needed in requests.items():
            if key in hard and (quantity(hard[key]) or 0) < (quantity(needed) or 0):
                problems.append(f"{describe(quota)} allows {key} {hard[key]}, the job needs {needed}")
    return problems


def admission_step(view: View, namespace: str, pool: GpuNodePool, resource: str) -> Step:
    labels = namespace_labels(view, namespace)
    if labels is None:
        return Step(ADMISSION, False, f"no Namespace {namespace} is emitted")
    problems = _limit_range_problems(view, namespace, resource)
    level = labels.get(PSA_ENFORCE, "privileged")
    psa = _pod_security_problem(level, pool.fabric)
    problems += [psa] if psa else []
    quotas = view.find("ResourceQuota", namespace=namespace)
    if not any(f"requests.{resource}" in as_map(dig(q, "spec", "hard")) for q in quotas):
        problems.append(f"no ResourceQuota in {namespace} sets requests.{resource}")
    problems += _quota_problems(view, namespace, resource)
    if problems:
        return Step(ADMISSION, False, "; ".join(problems))
    policies = _bound_policies(view, labels)
    note = f"; also bound: ValidatingAdmissionPolicy {', '.join(policies)} (not evaluated)" if policies else ""
    return Step(ADMISSION, True, f"namespace {namespace} (Pod Security {level}) admits the pod{note}")
