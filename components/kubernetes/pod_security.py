"""TenantPodSecurity: Pod Security `baseline` plus IPC_LOCK, for tenants that may use a fabric pool.

RDMA traffic (EFA through libfabric, RoCE / InfiniBand through NCCL's IB transport) registers
and pins its buffers, which needs the IPC_LOCK capability. Pod Security `baseline` admits only
the container runtime's default capabilities, and the built-in admission has no per-capability
exemption (exemptions are API server flags that EKS does not expose). So a tenant namespace
that may run on a fabric pool enforces Pod Security `privileged` and this ValidatingAdmissionPolicy
re-imposes every baseline control with IPC_LOCK added to the allowed capabilities:

- host namespaces (hostNetwork, hostPID, hostIPC), privileged containers, Windows HostProcess;
- added capabilities outside the default set + IPC_LOCK;
- hostPath volumes and host ports (other than 0);
- AppArmor (no Unconfined profile, annotation or field), SELinux (only the container types,
  no user or role), seccomp (no Unconfined), /proc mount (Default only);
- sysctls outside the safe set of the cluster's Kubernetes version;
- probes and lifecycle hooks aimed at another host (baseline since 1.34; enforced on all).

Every container list is checked: containers, initContainers and ephemeralContainers (the
`pods/ephemeralcontainers` subresource is matched too, as the built-in admission does); an
update that leaves the pod spec unchanged is not judged again.
The binding selects tenant namespaces whose enforce level is neither baseline nor restricted
(also one whose label was removed), so no tenant namespace is ever left without baseline.
admissionregistration.k8s.io/v1 is served from Kubernetes 1.30 (rule GP287).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.model import Platform
from gpuplat.model import Tenant as TenantSpec

from .._common import child_opts
from ._common import PSA_ENFORCE, TENANT_LABEL, meta, prefix

# The container runtime's default set, which baseline allows to be added, plus what RDMA needs.
BASELINE_CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
RDMA_CAPABILITIES = ("IPC_LOCK",)
# Safe sysctls by the Kubernetes minor that made them safe (namespaced and isolated per pod).
SAFE_SYSCTLS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        0,
        (
            "kernel.shm_rmid_forced",
            "net.ipv4.ip_local_port_range",
            "net.ipv4.tcp_syncookies",
            "net.ipv4.ping_group_range",
            "net.ipv4.ip_unprivileged_port_start",
        ),
    ),
    (27, ("net.ipv4.ip_local_reserved_ports",)),
    (
        29,
        (
            "net.ipv4.tcp_keepalive_time",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_intvl",
            "net.ipv4.tcp_keepalive_probes",
        ),
    ),
    (32, ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem")),
)
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t")
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
SPEC_CHANGED = "request.operation != 'UPDATE' || object.spec != oldObject.spec"


def needs_ipc_lock(model: Platform, tenant: TenantSpec) -> bool:
    """The tenant may land on a fabric pool, where its jobs pin memory for RDMA."""
    return any(model.pools_by_name[p].fabric for p in tenant.pools if p in model.pools_by_name)


def enforce_level(model: Platform, tenant: TenantSpec) -> str:
    return "privileged" if needs_ipc_lock(model, tenant) else "baseline"


def policy_name(model: Platform) -> str:
    return f"{prefix(model)}-baseline-ipc-lock"


def _cel_list(values: Sequence[str]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def _unset_or(path: str, condition: str) -> str:
    """`path` (a.b.c) is absent at any level, or `condition` holds."""
    parts = path.split(".")
    absent = [f"!has({'.'.join(parts[: i + 1])})" for i in range(1, len(parts))]
    return "(" + " || ".join([*absent, condition]) + ")"


def _every_container(condition: str) -> str:
    return " && ".join(f"(!has(object.spec.{lst}) || object.spec.{lst}.all(c, {condition}))" for lst in CONTAINER_LISTS)


def _not_true(path: str) -> str:
    return _unset_or(path, f"!{path}")


def _handler_hosts(c: str) -> str:
    checks = []
    for handler in ("livenessProbe", "readinessProbe", "startupProbe", "lifecycle.postStart", "lifecycle.preStop"):
        for kind in ("httpGet", "tcpSocket"):
            host = f"{c}.{handler}.{kind}.host"
            checks.append(_unset_or(host, f"{host} == ''"))
    return " && ".join(checks)


def safe_sysctls(kubernetes_version: str) -> tuple[str, ...]:
    minor = int(kubernetes_version.split(".")[1])
    return tuple(name for since, names in SAFE_SYSCTLS if minor >= since for name in names)


def validations(kubernetes_version: str) -> list[tuple[str, str]]:
    """(CEL expression, message) per baseline control, IPC_LOCK added to the capabilities."""
    pod, ctx = "object.spec.securityContext", "c.securityContext"
    allowed = _cel_list(BASELINE_CAPABILITIES + RDMA_CAPABILITIES)
    apparmor = "object.metadata.annotations"
    return [
        (
            " && ".join(_not_true(f"object.spec.{ns}") for ns in ("hostNetwork", "hostPID", "hostIPC")),
            "hostNetwork, hostPID and hostIPC must be unset or false",
        ),
        (_every_container(_not_true(f"{ctx}.privileged")), "containers must not be privileged"),
        (
            _every_container(_unset_or(f"{ctx}.capabilities.add", f"{ctx}.capabilities.add.all(x, x in {allowed})")),
            f"capabilities.add may only hold {', '.join(BASELINE_CAPABILITIES + RDMA_CAPABILITIES)}",
        ),
        (_unset_or("object.spec.volumes", "object.spec.volumes.all(v, !has(v.hostPath))"), "hostPath volumes"),
        (
            _every_container(_unset_or("c.ports", "c.ports.all(p, !has(p.hostPort) || p.hostPort == 0)")),
            "hostPort must be unset or 0",
        ),
        (
            _not_true(f"{pod}.windowsOptions.hostProcess")
            + " && "
            + _every_container(_not_true(f"{ctx}.windowsOptions.hostProcess")),
            "Windows HostProcess containers",
        ),
        (
            _unset_or(f"{pod}.appArmorProfile.type", f"{pod}.appArmorProfile.type != 'Unconfined'")
            + " && "
            + _every_container(_unset_or(f"{ctx}.appArmorProfile.type", f"{ctx}.appArmorProfile.type != 'Unconfined'"))
            + " && "
            + _unset_or(
                apparmor,
                f"{apparmor}.all(k, !k.startsWith('{_APPARMOR_ANNOTATION}') || {apparmor}[k] in ['', 'runtime/default']"
                f" || {apparmor}[k].startsWith('localhost/'))",
            ),
            "AppArmor profiles must be RuntimeDefault or Localhost",
        ),
        (
            _selinux(f"{pod}.seLinuxOptions") + " && " + _every_container(_selinux(f"{ctx}.seLinuxOptions")),
            "seLinuxOptions: type empty, container_t, container_init_t or container_kvm_t; no user or role",
        ),
        (
            _every_container(_unset_or(f"{ctx}.procMount", f"{ctx}.procMount == 'Default'")),
            "procMount must be Default",
        ),
        (
            _unset_or(f"{pod}.seccompProfile.type", f"{pod}.seccompProfile.type != 'Unconfined'")
            + " && "
            + _every_container(_unset_or(f"{ctx}.seccompProfile.type", f"{ctx}.seccompProfile.type != 'Unconfined'")),
            "seccomp profile must not be Unconfined",
        ),
        (
            _unset_or(
                f"{pod}.sysctls", f"{pod}.sysctls.all(s, s.name in {_cel_list(safe_sysctls(kubernetes_version))})"
            ),
            "only safe sysctls",
        ),
        (_every_container(_handler_hosts("c")), "probes and lifecycle hooks must not name a host"),
    ]


def _selinux(options: str) -> str:
    return _unset_or(
        options,
        " && ".join(
            [
                _unset_or(f"{options}.type", f"{options}.type in {_cel_list(SELINUX_TYPES)}"),
                _unset_or(f"{options}.user", f"{options}.user == ''"),
                _unset_or(f"{options}.role", f"{options}.role == ''"),
            ]
        ),
    )


def binding_selector() -> k8s.meta.v1.LabelSelectorArgsDict:
    """Tenant namespaces that the built-in admission does not already hold to baseline."""
    return {
        "match_expressions": [
            {"key": TENANT_LABEL, "operator": "Exists"},
            {"key": PSA_ENFORCE, "operator": "NotIn", "values": ["baseline", "restricted"]},
        ]
    }


@dataclass(frozen=True)
class TenantPodSecurityArgs:
    model: Platform
    provider: pulumi.ProviderResource
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


class TenantPodSecurity(pulumi.ComponentResource):
    """The policy and its binding; tenant namespaces that enforce `privileged` wait for both."""

    ready: list[pulumi.Resource]

    def __init__(self, name: str, args: TenantPodSecurityArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:TenantPodSecurity", name, None, opts)
        model, provider = args.model, args.provider
        policy = policy_name(model)
        vap = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
            f"{name}-policy",
            metadata=meta(policy),
            spec={
                "failure_policy": "Fail",
                # Like the built-in admission, an update that leaves the pod spec alone (labels,
                # finalizers) is not judged again; adding an ephemeral container changes the spec.
                "match_conditions": [{"name": "spec-changed", "expression": SPEC_CHANGED}],
                "match_constraints": {
                    "resource_rules": [
                        {
                            "api_groups": [""],
                            "api_versions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["pods", "pods/ephemeralcontainers"],
                        }
                    ]
                },
                "validations": [
                    {"expression": expression, "message": f"Pod Security baseline (+IPC_LOCK): {message}"}
                    for expression, message in validations(model.target.kubernetes_version)
                ],
            },
            opts=child_opts(self, provider, args.depends_on),
        )
        binding = k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
            f"{name}-binding",
            metadata=meta(policy),
            spec={
                "policy_name": policy,
                "validation_actions": ["Deny"],
                "match_resources": {"namespace_selector": binding_selector()},
            },
            opts=child_opts(self, provider, [vap]),
        )
        self.ready = [vap, binding]
        self.register_outputs({"policy": policy})
