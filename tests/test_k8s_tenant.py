"""What a tenant's namespace admits and reaches: the LimitRange, Pod Security with the RDMA
exception, the network policies and who the RoleBinding's group is.

The admission checks are small models of the API server's own: LimitRanger defaulting plus
pod validation, and the emitted ValidatingAdmissionPolicy's CEL run against sample pods.
"""

from __future__ import annotations

import copy
import dataclasses
import ipaddress
from decimal import Decimal
from typing import Any

import celpy
import kubernetes_validate
import pytest
from celpy.adapter import json_to_cel

from components.kubernetes.pod_security import policy_name, safe_sysctls
from tests.support_k8s import STACKS, by_kind, record_side, recorded

SPECS = ("kubernetes", *STACKS)

_SUFFIX = {"m": Decimal("0.001"), **{s: Decimal(2 ** (10 * (i + 1))) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti"))}}


def quantity(text: str) -> Decimal:
    for suffix, factor in _SUFFIX.items():
        if text.endswith(suffix):
            return Decimal(text.removesuffix(suffix)) * factor
    return Decimal(text)


def admit_container(items: list[dict[str, Any]], resources: dict[str, dict[str, str]]) -> list[str]:
    """Why the API server would refuse a container under these LimitRange items ([] = admitted).

    In order: pod defaulting (a limit without a request makes the request equal to the limit),
    LimitRanger defaulting (defaultRequest / default fill what is unset), LimitRanger validation
    (min, max, maxLimitRequestRatio) and pod validation (a request above its limit).
    """
    requests = dict(resources.get("requests", {}))
    limits = dict(resources.get("limits", {}))
    for name, value in limits.items():
        requests.setdefault(name, value)
    problems: list[str] = []
    for item in (i for i in items if i["type"] == "Container"):
        for name, value in item.get("defaultRequest", {}).items():
            requests.setdefault(name, value)
        for name, value in item.get("default", {}).items():
            limits.setdefault(name, value)
        for name, low in item.get("min", {}).items():
            if name not in requests or quantity(requests[name]) < quantity(low):
                problems.append(f"{name} request below min {low}")
        for name, high in item.get("max", {}).items():
            if name not in limits or quantity(limits[name]) > quantity(high):
                problems.append(f"{name} limit above max {high}")
        for name, ratio in item.get("maxLimitRequestRatio", {}).items():
            limit, request = limits.get(name), requests.get(name)
            if limit and request and quantity(limit) > quantity(request) * quantity(ratio):
                problems.append(f"{name} limit/request above {ratio}")
    problems += [
        f"{name} request {value} above limit {limits[name]}"
        for name, value in requests.items()
        if name in limits and quantity(value) > quantity(limits[name])
    ]
    return problems


def _limit_items(which: str, tenant: str) -> list[dict[str, Any]]:
    _, _, resources = recorded(which)
    ranges = [r for r in by_kind(resources, "LimitRange") if r["metadata"]["namespace"] == tenant]
    assert len(ranges) == 1
    return ranges[0]["spec"]["limits"]


def test_the_limit_range_model_rejects_what_the_api_server_rejects() -> None:
    old = [{"type": "Container", "default": {"cpu": "2", "memory": "8Gi"}, "defaultRequest": {"cpu": "500m"}}]
    assert admit_container(old, {"requests": {"cpu": "32", "memory": "512Gi"}}) == [
        "cpu request 32 above limit 2",
        "memory request 512Gi above limit 8Gi",
    ]
    assert admit_container([{"type": "Container", "max": {"cpu": "4"}}], {"limits": {"cpu": "8"}})
    assert admit_container(old, {"requests": {"cpu": "1"}}) == []


@pytest.mark.parametrize("which", SPECS)
def test_a_big_container_passes_the_limit_range(which: str) -> None:
    model, _, _ = recorded(which)
    for tenant in model.tenants:
        items = _limit_items(which, tenant.name)
        big = {"requests": {"cpu": "32", "memory": "512Gi"}}
        assert admit_container(items, big) == [], tenant.name
        assert admit_container(items, {"limits": {"cpu": "64", "memory": "1Ti"}}) == [], tenant.name
        # A container that sets nothing still gets requests the scheduler reserves.
        (item,) = items
        assert set(item["defaultRequest"]) == {"cpu", "memory"}
        assert not {"default", "max", "maxLimitRequestRatio"} & set(item)


# ------------------------------------------------------------------------------ pod security

IPC_LOCK_POD: dict[str, Any] = {
    "metadata": {
        "name": "nccl",
        "annotations": {"container.apparmor.security.beta.kubernetes.io/w": "runtime/default"},
    },
    "spec": {
        "securityContext": {
            "seccompProfile": {"type": "RuntimeDefault"},
            "sysctls": [{"name": "net.ipv4.tcp_keepalive_time"}],
        },
        "initContainers": [{"name": "init", "securityContext": {"capabilities": {"add": ["CHOWN"]}}}],
        "containers": [
            {
                "name": "worker",
                "ports": [{"containerPort": 29500, "hostPort": 0}],
                "resources": {"limits": {"vpc.amazonaws.com/efa": "32", "nvidia.com/gpu": "8"}},
                "securityContext": {"capabilities": {"add": ["IPC_LOCK"], "drop": ["NET_RAW"]}, "privileged": False},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
            }
        ],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
    },
}


def _set(pod: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of `pod` with `path` (dots; a number indexes a list) set to `value`."""
    out = copy.deepcopy(pod)
    node: Any = out
    *parents, last = path.split(".")
    for key in parents:
        node = node[int(key)] if key.isdigit() else node.setdefault(key, {})
    node[int(last) if last.isdigit() else last] = value
    return out


BREACHES = {
    "hostNetwork": ("spec.hostNetwork", True),
    "hostPID": ("spec.hostPID", True),
    "hostIPC": ("spec.hostIPC", True),
    "privileged": ("spec.containers.0.securityContext.privileged", True),
    "privileged init": ("spec.initContainers.0.securityContext.privileged", True),
    "SYS_ADMIN": ("spec.containers.0.securityContext.capabilities.add", ["IPC_LOCK", "SYS_ADMIN"]),
    "NET_RAW on init": ("spec.initContainers.0.securityContext.capabilities.add", ["NET_RAW"]),
    "NET_ADMIN ephemeral": (
        "spec.ephemeralContainers",
        [{"name": "d", "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}],
    ),
    "hostPath": ("spec.volumes", [{"name": "root", "hostPath": {"path": "/"}}]),
    "hostPort": ("spec.containers.0.ports.0.hostPort", 8080),
    "hostProcess": ("spec.securityContext.windowsOptions", {"hostProcess": True}),
    "apparmor field": ("spec.containers.0.securityContext.appArmorProfile", {"type": "Unconfined"}),
    "apparmor annotation": ("metadata.annotations", {"container.apparmor.security.beta.kubernetes.io/w": "unconfined"}),
    "selinux type": ("spec.securityContext.seLinuxOptions", {"type": "spc_t"}),
    "selinux user": ("spec.containers.0.securityContext.seLinuxOptions", {"user": "system_u"}),
    "procMount": ("spec.containers.0.securityContext.procMount", "Unmasked"),
    "seccomp pod": ("spec.securityContext.seccompProfile.type", "Unconfined"),
    "seccomp container": ("spec.containers.0.securityContext.seccompProfile", {"type": "Unconfined"}),
    "sysctl": ("spec.securityContext.sysctls", [{"name": "kernel.msgmax"}]),
    "probe host": ("spec.containers.0.livenessProbe.httpGet.host", "169.254.169.254"),
    "hook host": ("spec.containers.0.lifecycle", {"preStop": {"tcpSocket": {"port": 22, "host": "10.0.0.1"}}}),
}


def _policy(which: str) -> tuple[dict[str, Any], dict[str, Any]]:
    model, _, resources = recorded(which)
    return _pod_security(model, resources)


def _pod_security(model: Any, resources: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    name = policy_name(model)
    (policy,) = [p for p in by_kind(resources, "ValidatingAdmissionPolicy") if p["metadata"]["name"] == name]
    (binding,) = [b for b in by_kind(resources, "ValidatingAdmissionPolicyBinding") if b["metadata"]["name"] == name]
    return policy, binding


def denials(policy: dict[str, Any], pod: dict[str, Any]) -> list[str]:
    """The messages of the policy's validations that `pod` fails, as the API server runs them."""
    env = celpy.Environment()
    activation = {"object": json_to_cel(pod)}
    failed = []
    for validation in policy["spec"]["validations"]:
        if not env.program(env.compile(validation["expression"])).evaluate(activation):
            failed.append(validation["message"])
    return failed


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        if operator == "Exists" and key not in labels:
            return False
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and key in labels and labels[key] in values:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


@pytest.mark.parametrize("which", SPECS)
def test_fabric_tenants_may_lock_memory_and_nothing_else_beyond_baseline(which: str) -> None:
    policy, binding = _policy(which)
    assert denials(policy, IPC_LOCK_POD) == []
    for breach, (path, value) in BREACHES.items():
        assert denials(policy, _set(IPC_LOCK_POD, path, value)), breach
    minimal = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    assert denials(policy, minimal) == []
    spec = binding["spec"]
    assert spec["policyName"] == policy["metadata"]["name"] and spec["validationActions"] == ["Deny"]
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rules == [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["pods", "pods/ephemeralcontainers"],
        }
    ]


@pytest.mark.parametrize("which", SPECS)
def test_every_tenant_namespace_is_held_to_baseline_by_one_of_the_two(which: str) -> None:
    """The built-in admission enforces baseline, or the policy's binding selects the namespace."""
    model, _, resources = recorded(which)
    _, binding = _policy(which)
    selector = binding["spec"]["matchResources"]["namespaceSelector"]
    namespaces = {n["metadata"]["name"]: n["metadata"]["labels"] for n in by_kind(resources, "Namespace")}
    for tenant in model.tenants:
        labels = namespaces[tenant.name]
        fabric = any(model.pools_by_name[p].fabric for p in tenant.pools)
        enforce = labels["pod-security.kubernetes.io/enforce"]
        assert enforce == ("privileged" if fabric else "baseline"), tenant.name
        assert _selects(selector, labels) == fabric, tenant.name
        # A label removed by hand leaves the namespace to the policy, not unguarded.
        unlabelled = {k: v for k, v in labels.items() if k != "pod-security.kubernetes.io/enforce"}
        assert _selects(selector, unlabelled)
    # Platform namespaces (privileged node agents) carry no tenant label and are not selected.
    assert not any(
        _selects(selector, labels) for name, labels in namespaces.items() if name not in {t.name for t in model.tenants}
    )


@pytest.mark.parametrize("which", SPECS)
def test_policy_objects_are_valid_for_the_target_version(which: str) -> None:
    model, _, _ = recorded(which)
    for obj in _policy(which):
        assert obj["apiVersion"] == "admissionregistration.k8s.io/v1"
        kubernetes_validate.validate(obj, model.target.kubernetes_version, strict=True)


def test_an_unchanged_pod_spec_is_not_judged_again() -> None:
    policy, _ = _policy("dev")
    (condition,) = policy["spec"]["matchConditions"]
    env = celpy.Environment()
    program = env.program(env.compile(condition["expression"]))
    spec = IPC_LOCK_POD["spec"]

    def judged(operation: str, old: dict[str, Any] | None) -> bool:
        return bool(
            program.evaluate(
                {
                    "request": json_to_cel({"operation": operation}),
                    "object": json_to_cel({"spec": spec}),
                    "oldObject": json_to_cel({"spec": old} if old else {}),
                }
            )
        )

    assert judged("CREATE", None)
    assert not judged("UPDATE", spec)
    assert judged("UPDATE", {**spec, "ephemeralContainers": []})


def test_safe_sysctls_follow_the_clusters_version() -> None:
    # The kubelet of an older minor refuses a sysctl a newer one calls safe, so the policy does too.
    assert "net.ipv4.tcp_rmem" not in safe_sysctls("1.31")
    assert {"net.ipv4.tcp_rmem", "net.ipv4.tcp_keepalive_time", "kernel.shm_rmid_forced"} <= set(safe_sysctls("1.32"))


def test_without_fabric_tenants_there_is_no_policy() -> None:
    model, plan, _ = recorded("prod")
    partners = next(t for t in model.tenants if t.name == "partners")
    only = dataclasses.replace(model, tenants=(partners,))
    resources = tuple(record_side(only, plan, "prod"))
    name = policy_name(only)
    assert [p for p in by_kind(resources, "ValidatingAdmissionPolicy") if p["metadata"]["name"] == name] == []
    (namespace,) = [n for n in by_kind(resources, "Namespace") if n["metadata"]["name"] == "partners"]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"


# --------------------------------------------------------------------------- network policies

KUBE_DNS = {"namespace": "kube-system", "pod": {"k8s-app": "kube-dns"}}
PROMETHEUS = {"namespace": "monitoring", "pod": {"app.kubernetes.io/name": "prometheus"}}


def _peer_matches(peer: dict[str, Any], other: dict[str, Any], namespace: str) -> bool:
    """Does a NetworkPolicyPeer select `other` ({namespace, pod labels} or {ip})?"""
    if "ipBlock" in peer:
        if "ip" not in other:
            return False
        block = peer["ipBlock"]
        address = ipaddress.ip_address(other["ip"])
        network = ipaddress.ip_network(block["cidr"])
        if address.version != network.version or address not in network:
            return False
        return not any(address in ipaddress.ip_network(e) for e in block.get("except", []))
    if "ip" in other:
        return False
    in_namespace = (
        _selects(peer["namespaceSelector"], {"kubernetes.io/metadata.name": other["namespace"]})
        if "namespaceSelector" in peer
        else other["namespace"] == namespace
    )
    return in_namespace and _selects(peer.get("podSelector", {}), other.get("pod", {}))


def allowed(policies: list[dict[str, Any]], direction: str, other: dict[str, Any], port: int, proto: str) -> bool:
    """Whether a pod of the namespace may talk to / hear from `other` on port/proto (all policies
    select every pod): allowed when some policy of that direction has a matching rule."""
    key, peers = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    for policy in policies:
        spec, namespace = policy["spec"], policy["metadata"]["namespace"]
        assert spec["podSelector"] == {}
        if direction not in spec["policyTypes"]:
            continue
        for rule in spec.get(key, []):
            ports = rule.get("ports")
            if ports and not any(p["port"] == port and p.get("protocol", "TCP") == proto for p in ports):
                continue
            if not rule.get(peers) or any(_peer_matches(p, other, namespace) for p in rule[peers]):
                return True
    return False


@pytest.mark.parametrize("which", SPECS)
def test_tenant_traffic_is_what_jobs_need_and_no_more(which: str) -> None:
    model, _, resources = recorded(which)
    aws = which != "kubernetes"
    for tenant in model.tenants:
        policies = [p for p in by_kind(resources, "NetworkPolicy") if p["metadata"]["namespace"] == tenant.name]
        neighbour = {"namespace": tenant.name, "pod": {"job": "x"}}
        other_tenant = {"namespace": next(t.name for t in model.tenants if t.name != tenant.name), "pod": {}}
        egress = {
            "DNS": (KUBE_DNS, 53, "UDP"),
            "a peer in the namespace": (neighbour, 29500, "TCP"),
            "S3 over HTTPS": ({"ip": "52.216.8.1"}, 443, "TCP"),
            "an STS interface endpoint in the VPC": ({"ip": "10.40.3.7"}, 443, "TCP"),
            "an IPv6 object store": ({"ip": "2600:1f18::1"}, 443, "TCP"),
        }
        for what, (peer, port, proto) in egress.items():
            assert allowed(policies, "Egress", peer, port, proto), (tenant.name, what)
        for address in ("169.254.170.23", "fd00:ec2::23"):
            assert allowed(policies, "Egress", {"ip": address}, 80, "TCP") == aws, (tenant.name, address)
        denied_egress = {
            "plain HTTP out": ({"ip": "52.216.8.1"}, 80, "TCP"),
            "the instance metadata service": ({"ip": "169.254.169.254"}, 80, "TCP"),
            "another DNS server": ({"ip": "8.8.8.8"}, 53, "UDP"),
            "another tenant's pods": (other_tenant, 29500, "TCP"),
            "the agent on another port": ({"ip": "169.254.170.23"}, 8080, "TCP"),
        }
        for what, (peer, port, proto) in denied_egress.items():
            assert not allowed(policies, "Egress", peer, port, proto), (tenant.name, what)
        assert allowed(policies, "Ingress", PROMETHEUS, 9400, "TCP"), tenant.name
        assert allowed(policies, "Ingress", neighbour, 29500, "TCP"), tenant.name
        for stranger in (other_tenant, KUBE_DNS, {"ip": "10.40.3.7"}, {"ip": "52.216.8.1"}):
            assert not allowed(policies, "Ingress", stranger, 8080, "TCP"), (tenant.name, stranger)
