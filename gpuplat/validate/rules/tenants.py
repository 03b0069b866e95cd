"""Rules on `tenants`: names, pool allow-lists, isolation and quotas."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gpuplat.catalog import KUBERNETES_NAMESPACES, platform_namespaces
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    Data,
    as_list,
    as_map,
    as_str,
    is_int,
    listing,
    pool_max_gpus,
    pools,
    provider,
    repeats,
    section,
    sharing_mode,
    tenants,
)
from gpuplat.view import allowed_pools, isolation
from gpuplat.vocabulary import HARD_ISOLATION, REPLAY_HORIZON_DAYS, SHARED_MODES


def _pools_by_name(data: Data) -> dict[str, Data]:
    out: dict[str, Data] = {}
    for _, pool in pools(data):
        name = as_str(pool.get("name"))
        if name is not None:
            out.setdefault(name, pool)
    return out


def _explicit(tenant: Data) -> list[tuple[int, str]] | None:
    raw = tenant.get("pools")
    if not isinstance(raw, list):
        return None
    return [(j, name) for j, name in enumerate(as_list(raw)) if isinstance(name, str)]


def _hard(tenant: Data) -> bool:
    return isolation(tenant) == HARD_ISOLATION


def _modes(by_name: Mapping[str, Data]) -> dict[str, str | None]:
    """Each pool's sharing mode, computed once per rule (not once per tenant)."""
    return {n: sharing_mode(p) for n, p in by_name.items()}


def _allowed(by_name: Mapping[str, Data], modes: Mapping[str, str | None], tenant: Data) -> dict[str, Data]:
    """The pools a tenant may land on: its allow-list, or every pool its isolation permits.
    `by_name` is `_pools_by_name(data)` and `modes` its `_modes`, made once per rule."""
    return {n: by_name[n] for n in allowed_pools(tenant, modes)}


def _tenant_name(tenant: Data, index: int) -> str:
    return as_str(tenant.get("name")) or f"tenants[{index}]"


@rule(
    "GP280",
    "tenant-names-unique",
    Level.ERROR,
    "A tenant's name is its namespace, ClusterQueue and LocalQueue name; two tenants cannot share them.",
    fix="Rename one of the tenants.",
)
def tenant_names_unique(data: Data) -> Iterator[Finding]:
    for i, name, first in repeats(tenants(data), "name"):
        yield Finding(
            ("tenants", i, "name"),
            f"tenant name {name} is already used by tenants[{first}]; tenant names must be unique",
        )


@rule(
    "GP281",
    "tenant-pools-exist",
    Level.ERROR,
    "A tenant's allow-list becomes Kueue flavors of existing pools; an unknown pool name grants nothing.",
    fix="Name existing pools in the tenant's `pools` (the message suggests the nearest name).",
)
def tenant_pools_exist(data: Data) -> Iterator[Finding]:
    by_name = _pools_by_name(data)
    if not by_name:
        return
    for i, tenant in tenants(data):
        for j, name in _explicit(tenant) or []:
            if name not in by_name:
                yield Finding(
                    ("tenants", i, "pools", j),
                    f"tenant {_tenant_name(tenant, i)} names pool {name}, which does not exist "
                    f"(pools: {', '.join(by_name)})",
                )


@rule(
    "GP282",
    "hard-tenant-shared-pool",
    Level.ERROR,
    "MPS and time-slicing share one GPU without memory or fault isolation between tenants.",
    source="https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html",
    fix="Remove the MPS or time-slicing pool from the hard tenant's `pools`, or make the tenant `isolation: soft`.",
)
def hard_tenant_shared_pool(data: Data) -> Iterator[Finding]:
    by_name = _pools_by_name(data)
    for i, tenant in tenants(data):
        if not _hard(tenant):
            continue
        for j, name in _explicit(tenant) or []:
            pool = by_name.get(name)
            mode = sharing_mode(pool) if pool is not None else None
            if mode in SHARED_MODES:
                yield Finding(
                    ("tenants", i, "pools", j),
                    f"tenant {_tenant_name(tenant, i)} has isolation: hard but pool {name} is {mode}, which shares "
                    f"GPUs without memory or fault isolation; remove {name} or use isolation: soft",
                )


@rule(
    "GP283",
    "hard-tenant-without-pool",
    Level.ERROR,
    "MPS and time-slicing pools are closed to hard-isolation tenants; with only those, the tenant gets no GPU.",
    source="https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-sharing.html",
    fix="Allow the hard tenant an exclusive, MIG or fractional pool, or make it `isolation: soft`.",
)
def hard_tenant_without_pool(data: Data) -> Iterator[Finding]:
    by_name = _pools_by_name(data)
    modes = _modes(by_name)
    if not by_name:
        return
    for i, tenant in tenants(data):
        if _hard(tenant) and not _explicit(tenant) and not _allowed(by_name, modes, tenant):
            yield Finding(
                ("tenants", i, "isolation"),
                f"tenant {_tenant_name(tenant, i)} has isolation: hard but every pool is mps or time-slicing "
                f"({', '.join(by_name)}), so it has no pool to run on; add an exclusive, mig or fractional pool",
            )


@rule(
    "GP284",
    "tenant-quota-fits-pools",
    Level.ERROR,
    "A Kueue quota larger than the GPUs of the pools the tenant may use (at nodes.max) can never be admitted.",
    source="https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/",
    fix="Lower the tenant's `gpus` to what its pools hold at nodes.max, or raise the pools' `nodes.max`.",
)
def tenant_quota_fits_pools(data: Data) -> Iterator[Finding]:
    by_name = _pools_by_name(data)
    modes = _modes(by_name)
    # Each pool's GPUs once: tenants x pools look-ups in the catalog would cost more than the rest of check.
    pool_gpus = {name: pool_max_gpus(data, pool) for name, pool in by_name.items()}
    for i, tenant in tenants(data):
        gpus = tenant.get("gpus")
        allowed = _allowed(by_name, modes, tenant)
        if not is_int(gpus) or not allowed:
            continue
        capacity = {name: pool_gpus[name] for name in allowed}
        if any(c is None for c in capacity.values()):
            continue  # a pool without a known GPU count has an error of its own
        total = sum(c or 0 for c in capacity.values())
        if gpus > total:
            detail = ", ".join(f"{name} {c}" for name, c in capacity.items())
            yield Finding(
                ("tenants", i, "gpus"),
                f"tenant {_tenant_name(tenant, i)} asks for {gpus} GPUs but the pools it may use hold at most "
                f"{total} at nodes.max ({detail}); lower gpus or raise those pools' nodes.max",
            )


@rule(
    "GP285",
    "tenant-namespace-reserved",
    Level.ERROR,
    "Kubernetes reserves default and kube-*; the platform owns its charts' namespaces and <name>-system.",
    source="https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces/#initial-namespaces",
    fix="Rename the tenant: default, kube-*, the charts' namespaces and <platform>-system are taken.",
)
def tenant_namespace_reserved(data: Data) -> Iterator[Finding]:
    metadata = as_map(data.get("metadata"))
    platform = as_str(metadata.get("name")) if metadata is not None else None
    owned = platform_namespaces(platform) if platform is not None else frozenset[str]()
    for i, tenant in tenants(data):
        name = as_str(tenant.get("name"))
        if name is None:
            continue
        if name in KUBERNETES_NAMESPACES or name.startswith("kube-"):
            owner = "Kubernetes reserves (default, kube-*)"
        elif name in owned:
            owner = f"the platform already uses ({listing(sorted(owned))})"
        else:
            continue
        yield Finding(
            ("tenants", i, "name"),
            f"tenant name {name} would be the namespace {name}, which {owner}; choose another name",
        )


@rule(
    "GP350",
    "tenant-quotas-exceed-fleet",
    Level.WARNING,
    "Quotas above the fleet's GPUs at nodes.max cannot all be met at once; Kueue borrowing decides who waits.",
    source="https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/",
    fix="Lower tenants' `gpus`, or raise pools' `nodes.max`; acknowledge it if borrowing is intended.",
)
def tenant_quotas_exceed_fleet(data: Data) -> Iterator[Finding]:
    raw = [t.get("gpus") for _, t in tenants(data)]
    quotas = [q for q in raw if is_int(q)]
    if not quotas or len(quotas) != len(raw):
        return
    capacity = [pool_max_gpus(data, pool) for _, pool in pools(data)]
    if not capacity or any(c is None for c in capacity):
        return
    fleet, total = sum(c or 0 for c in capacity), sum(quotas)
    if total > fleet:
        yield Finding(
            ("tenants",),
            f"tenant quotas add up to {total} GPUs but the fleet has {fleet} at nodes.max, so not every tenant "
            f"can use its full quota at once",
            at_key=True,
        )


# admissionregistration.k8s.io/v1 (ValidatingAdmissionPolicy) is served from this minor on.
ADMISSION_POLICY_MINOR = 30


def _minor(data: Data) -> int | None:
    target = section(data, "target")
    version = as_str(target.get("kubernetesVersion")) if target is not None else None
    if version is None or not version.startswith("1.") or not version[2:].isdigit():
        return None
    return int(version[2:])


@rule(
    "GP287",
    "fabric-tenant-needs-admission-policy",
    Level.ERROR,
    "RDMA needs IPC_LOCK, admitted by a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.30+).",
    source="https://kubernetes.io/docs/reference/access-authn-authz/validating-admission-policy/",
    fix="Set `target.kubernetesVersion` to 1.30 or later, or keep the tenant off fabric pools.",
)
def fabric_tenant_needs_admission_policy(data: Data) -> Iterator[Finding]:
    minor = _minor(data)
    if minor is None or minor >= ADMISSION_POLICY_MINOR:
        return
    by_name = _pools_by_name(data)
    modes = _modes(by_name)
    for i, tenant in tenants(data):
        fabric = [name for name, pool in _allowed(by_name, modes, tenant).items() if pool.get("fabric") is True]
        if fabric:
            yield Finding(
                ("tenants", i, "name"),
                f"tenant {_tenant_name(tenant, i)} may use fabric pool(s) {', '.join(fabric)}, whose RDMA jobs need "
                f"IPC_LOCK; gpuplat admits it with a ValidatingAdmissionPolicy, served from Kubernetes 1.30, but "
                f"kubernetesVersion is 1.{minor}; upgrade the cluster or keep the tenant off fabric pools",
            )


@rule(
    "GP286",
    "tenant-principals-on-kubernetes",
    Level.ERROR,
    "principals become EKS access entries; on an existing cluster its identity provider maps the tenant group.",
    source="https://docs.aws.amazon.com/eks/latest/userguide/access-entries.html",
    fix=(
        "Remove `principals` on provider kubernetes; map people into the group gpuplat:<tenant> in the cluster's "
        "identity provider."
    ),
)
def tenant_principals_on_kubernetes(data: Data) -> Iterator[Finding]:
    if provider(data) != "kubernetes":
        return
    for i, tenant in tenants(data):
        if "principals" in tenant:
            yield Finding(
                ("tenants", i, "principals"),
                f"tenant {_tenant_name(tenant, i)} names principals, which gpuplat maps into the group "
                f"gpuplat:{_tenant_name(tenant, i)} with EKS access entries on provider aws only; on provider "
                f"kubernetes map people into that group in the cluster's identity provider and remove principals",
                at_key=True,
            )


_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


@rule(
    "GP390",
    "tenant-target-wait-beyond-replay",
    Level.ERROR,
    "gpuplat simulate replays jobs submitted and run within 366 days, so no job can wait longer: such a target "
    "is met by every job and measures nothing.",
    fix="Set `targetWait` to the wait the tenant's users expect, e.g. 15m or 4h, at most 8784h.",
)
def tenant_target_wait_beyond_replay(data: Data) -> Iterator[Finding]:
    limit = REPLAY_HORIZON_DAYS * 86400
    for i, tenant in tenants(data):
        text = as_str(tenant.get("targetWait"))
        if text is None or len(text) < 2 or not text[:-1].isdigit() or text[-1] not in _UNIT_SECONDS:
            continue  # the schema reports a malformed duration
        if int(text[:-1]) * _UNIT_SECONDS[text[-1]] <= limit:
            continue
        yield Finding(
            ("tenants", i, "targetWait"),
            f"tenant {_tenant_name(tenant, i)} has targetWait {text}, longer than the {REPLAY_HORIZON_DAYS} days "
            f"(8784h) in which gpuplat simulate replays every job, so every job meets it and the share reported "
            f"says nothing; use the wait its users expect, e.g. 4h",
        )
