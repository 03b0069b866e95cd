"""StorageClasses: how pods reach the three storage tiers, and what storage QoS really is.

aws: the tiers are AWS objects (StorageTiers on the AWS side); Kubernetes reaches them by
static provisioning, because each tier is a few shared file systems or buckets, not a
volume per claim:
- the FSx CSI and Mountpoint S3 CSI drivers (Helm, pinned, kube-system as upstream installs them);
- per tier a StorageClass `<platform>-<tier>` with no provisioner: a claim of that class
  binds only to the platform's volumes, never triggers dynamic provisioning (the FSx driver
  would create a new file system per claim);
- per tier and tenant a PersistentVolume bound to a claim `<tier>` in the tenant's namespace
  (a volume binds exactly one claim), each with its own volumeHandle and each reaching only
  the tenant's own part of the tier: hot = the tenant's directory `/<tenant>` of an FSx for
  Lustre file system (a subdirectory mount, created by a Job: _hot_volumes.py); warm = the
  S3 Express One Zone directory bucket, cold = the S3 bucket, both through Mountpoint under
  the tenant's own prefix (`prefix <tenant>/`). Warm allows deletes and overwrites
  (intermediate results); cold only adds objects (archive; lifecycle expires them).
provider kubernetes: the tiers name StorageClasses the cluster already has; tenants claim
them directly, so nothing is emitted for them.

Storage QoS (`storage.qos.criticalIopsShare`):
- aws: a real bound. FSx throughput (and the IOPS its servers give) belongs to one file
  system, so the hot tier is two: tenants of priority high or critical get the spec's file
  system as their `hot` volume, the others a second, standard one sized so the critical one
  holds at least the share of the two's aggregate throughput (gpuplat/plan/storage.py). A
  standard tenant's pods have no volume on the critical file system, whatever priority
  class they pick. Within each file system nothing divides throughput between tenants
  (FSx exposes no per-client QoS). The share is also written on the hot StorageClass
  (annotation `gpuplat.dev/critical-iops-share`) for whoever audits it.
- kubernetes: nothing beyond what the named hot StorageClass's backend gives. The platform
  cannot size or split an existing storage system; the share is recorded on no object there
  and enforced by nobody, unless the storage team configures the backend's own QoS.
- PriorityClasses `<platform>-critical` and `<platform>-standard` stay, for scheduling only:
  critical training is placed first and preempts lower work when GPUs are short; they give
  no I/O. Only tenants of priority high or critical may name `critical`
  (TenantPriorityScope); only the tenant's hot volume decides which file system it uses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpuplat.catalog import fsx
from gpuplat.model import Platform, Provider
from gpuplat.plan import Plan

from .._common import child_opts
from ._common import TENANT_LABEL, helm_release, meta, prefix
from ._hot_volumes import ADMIN_NAMESPACE, FsxRef, directory_job_name, directory_job_spec, root_csi, tenant_csi
from ._mountpoint import mountpoint_options, mountpoint_values

QOS_SHARE_ANNOTATION = "gpuplat.dev/critical-iops-share"
# Above every tenant class (Tenant.TENANT_PRIORITY), below Kubernetes' system classes (1e9+).
QOS_PRIORITY = {"critical": 1_000_000, "standard": 0}
S3_DRIVER = "s3.csi.aws.com"
# Kubernetes requires a capacity on every volume; S3 has none and Mountpoint ignores it.
_S3_NOMINAL_CAPACITY = "1Pi"
# What every claim requests, whatever the tier's size. These volumes are static: neither CSI
# driver reads a capacity (FSx is as large as the file system, S3 has no size), so the volume's
# capacity only informs (it follows the tier and updates in place, and a bound claim reports it
# as its status). A claim's request must not follow it: the API server lets a claim grow only
# through its StorageClass's volume expansion (a static class has none) and never shrink, and
# pulumi-kubernetes replaces a claim on any change of its spec. A replaced claim is deleted
# only once no pod uses it, and its Retain volume is left Released, bound to the old claim's
# uid, so the new claim never binds: growing a tier would cut every tenant off its data.
CLAIM_REQUEST = "1Gi"
# Claims created before the request was fixed keep what they asked for (any request at most the
# volume's capacity binds): a change of the request is never applied to an existing claim.
_CLAIM_IGNORES = ["spec.resources"]


@dataclass(frozen=True)
class AwsStorageRefs:
    """The AWS storage tiers (StorageTiers outputs); a field is None when its tier is absent."""

    # The critical (the spec's) hot file system.
    file_system_id: pulumi.Input[str] | None = None
    dns_name: pulumi.Input[str] | None = None
    mount_name: pulumi.Input[str] | None = None
    # The standard tenants' hot file system.
    standard_file_system_id: pulumi.Input[str] | None = None
    standard_dns_name: pulumi.Input[str] | None = None
    standard_mount_name: pulumi.Input[str] | None = None
    warm_bucket: pulumi.Input[str] | None = None
    cold_bucket: pulumi.Input[str] | None = None

    def hot(self, which: str) -> FsxRef | None:
        """`critical` or `standard`: the file system, or None when the AWS side gave none."""
        fields = (
            (self.file_system_id, self.dns_name, self.mount_name)
            if which == "critical"
            else (self.standard_file_system_id, self.standard_dns_name, self.standard_mount_name)
        )
        if any(f is None for f in fields):
            return None
        fs_id, dns, mount = fields
        assert fs_id is not None and dns is not None and mount is not None
        return FsxRef(fs_id, dns, mount)


@dataclass(frozen=True)
class StorageClassesArgs:
    model: Platform
    plan: Plan
    provider: pulumi.ProviderResource
    aws: AwsStorageRefs | None = None  # None on provider kubernetes
    # Claims live in tenant namespaces: the Tenant components (or their namespaces), by tenant.
    tenants: Mapping[str, pulumi.Resource] = field(default_factory=lambda: {})
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


def class_name(model: Platform, tier: str) -> str:
    return f"{prefix(model)}-{tier}"


def tier_class_names(model: Platform) -> dict[str, str]:
    """The StorageClass tenants claim per tier: ours on aws, the named one on kubernetes."""
    storage = model.storage
    tiers = {"hot": storage.hot, "warm": storage.warm, "cold": storage.cold}
    names: dict[str, str] = {}
    for tier, spec in tiers.items():
        if spec is None:
            continue
        if model.target.provider is Provider.AWS:
            names[tier] = class_name(model, tier)
        elif spec.storage_class:
            names[tier] = spec.storage_class
    return names


def fsx_values(model: Platform) -> dict[str, Any]:
    # Karpenter nodes allow one IMDS hop, so pods cannot look the region up: tell them.
    # node.region is absent from values.yaml, but chart 1.17.0's node DaemonSet renders it as
    # AWS_REGION (templates/node-daemonset.yaml); node.env is in values.yaml yet no template reads it.
    return {"controller": {"region": model.target.region}, "node": {"region": model.target.region}}


def hot_file_system(plan: Plan, tenant: str) -> str:
    """`critical` or `standard`: the hot file system `tenant`'s volume is on (aws)."""
    hot = plan.storage.hot
    return "standard" if hot is not None and tenant in hot.standard_tenants else "critical"


def _capacities(plan: Plan) -> dict[str, str]:
    """Volume sizes: per tier, and per hot file system (`hot-critical`, `hot-standard`)."""
    result = {"warm": _S3_NOMINAL_CAPACITY, "cold": _S3_NOMINAL_CAPACITY}
    hot = plan.storage.hot
    if hot is not None:
        result["hot-critical"] = f"{hot.capacity_gib}Gi"
        if hot.standard is not None:
            result["hot-standard"] = f"{hot.standard.capacity_gib}Gi"
    if plan.storage.warm is not None:
        result["warm"] = f"{math.ceil(plan.storage.warm.capacity_tib * fsx.GIB_PER_TIB)}Gi"
    return result


def _capacity(plan: Plan, tier: str, tenant: str) -> str:
    capacities = _capacities(plan)
    return capacities[f"hot-{hot_file_system(plan, tenant)}" if tier == "hot" else tier]


def _claim_spec(
    storage_class: str, volume: k8s.core.v1.PersistentVolume
) -> k8s.core.v1.PersistentVolumeClaimSpecArgsDict:
    return {
        "access_modes": ["ReadWriteMany"],
        "storage_class_name": storage_class,
        # The volume's output, not its name as a string: when the volume is replaced (a new
        # file system or directory), Pulumi sees the claim depend on it and replaces the claim
        # first. A bound volume cannot be deleted before its claim (pv-protection).
        "volume_name": volume.metadata.apply(lambda m: m.name or ""),
        "resources": {"requests": {"storage": CLAIM_REQUEST}},
    }


def _base_spec(
    storage_class: str, capacity: str, namespace: str, claim: str
) -> k8s.core.v1.PersistentVolumeSpecArgsDict:
    return {
        "capacity": {"storage": capacity},
        "access_modes": ["ReadWriteMany"],
        "persistent_volume_reclaim_policy": "Retain",
        "storage_class_name": storage_class,
        "claim_ref": {"namespace": namespace, "name": claim},
    }


def volume_spec(
    model: Platform, refs: AwsStorageRefs, plan: Plan, tier: str, tenant: str, storage_class: str
) -> k8s.core.v1.PersistentVolumeSpecArgsDict | None:
    """The tenant's volume on `tier`, or None when the AWS side gave no reference to it."""
    capacity = _capacity(plan, tier, tenant)
    if tier == "hot":
        fs = refs.hot(hot_file_system(plan, tenant))
        if fs is None:
            return None
        spec = _base_spec(storage_class, capacity, tenant, tier)
        spec["csi"] = tenant_csi(fs, tenant)
        spec["mount_options"] = ["flock"]
        return spec
    bucket = refs.warm_bucket if tier == "warm" else refs.cold_bucket
    if bucket is None:
        return None
    spec = _base_spec(storage_class, capacity, tenant, tier)
    spec["csi"] = {
        "driver": S3_DRIVER,
        # Mountpoint, like Kubernetes, needs a volumeHandle unique across the cluster's volumes.
        "volume_handle": f"{prefix(model)}-{tier}-{tenant}",
        "volume_attributes": {"bucketName": bucket},
    }
    spec["mount_options"] = mountpoint_options(model, tier, tenant)
    return spec


class StorageClasses(pulumi.ComponentResource):
    class_names: dict[str, str]  # tier -> StorageClass tenants claim
    priority_classes: dict[str, str]  # critical / standard -> PriorityClass name

    def __init__(self, name: str, args: StorageClassesArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:StorageClasses", name, None, opts)
        model, provider = args.model, args.provider
        self.class_names = tier_class_names(model)
        self.priority_classes = {}
        for level, value in QOS_PRIORITY.items():
            self.priority_classes[level] = pc = f"{prefix(model)}-{level}"
            k8s.scheduling.v1.PriorityClass(
                f"{name}-priority-{level}",
                metadata=meta(pc),
                value=value,
                global_default=False,
                preemption_policy="PreemptLowerPriority" if level == "critical" else "Never",
                description=f"{level} GPU work: scheduling order and preemption only, no storage I/O share",
                opts=child_opts(self, provider, args.depends_on),
            )
        if model.target.provider is Provider.AWS:
            self._aws(name, args)
        self.register_outputs({"classNames": self.class_names, "priorityClasses": self.priority_classes})

    def _aws(self, name: str, args: StorageClassesArgs) -> None:
        model, provider = args.model, args.provider
        drivers: dict[str, k8s.helm.v3.Release] = {}
        if model.storage.hot is not None:
            drivers["hot"] = helm_release(
                self,
                name,
                "aws-fsx-csi-driver",
                fsx_values(model),
                provider=provider,
                depends_on=args.depends_on,
            )
        if model.storage.warm is not None or model.storage.cold is not None:
            s3 = helm_release(
                self,
                name,
                "aws-mountpoint-s3-csi-driver",
                mountpoint_values(),
                provider=provider,
                depends_on=args.depends_on,
            )
            drivers["warm"] = drivers["cold"] = s3
        refs = args.aws or AwsStorageRefs()
        for tier, storage_class in self.class_names.items():
            annotations = {QOS_SHARE_ANNOTATION: str(model.storage.critical_iops_share)} if tier == "hot" else None
            sc = k8s.storage.v1.StorageClass(
                f"{name}-class-{tier}",
                metadata=meta(storage_class, annotations=annotations),
                provisioner="kubernetes.io/no-provisioner",
                reclaim_policy="Retain",
                volume_binding_mode="Immediate",
                opts=child_opts(self, provider, args.depends_on),
            )
            roots = self._hot_roots(name, args, refs, sc, drivers["hot"]) if tier == "hot" else {}
            for tenant in model.tenants:
                spec = volume_spec(model, refs, args.plan, tier, tenant.name, storage_class)
                if spec is None:
                    continue
                after: list[pulumi.Resource] = [sc, drivers[tier]]
                if tier == "hot":
                    after.append(
                        self._directory_job(name, args, roots[hot_file_system(args.plan, tenant.name)], tenant.name)
                    )
                self._tenant_volume(name, args, tier, tenant.name, storage_class, spec, after)

    def _tenant_volume(
        self,
        name: str,
        args: StorageClassesArgs,
        tier: str,
        tenant: str,
        storage_class: str,
        spec: k8s.core.v1.PersistentVolumeSpecArgsDict,
        after: list[pulumi.Resource],
    ) -> None:
        volume = f"{prefix(args.model)}-{tier}-{tenant}"
        pv = k8s.core.v1.PersistentVolume(
            f"{name}-pv-{tier}-{tenant}", metadata=meta(volume), spec=spec, opts=child_opts(self, args.provider, after)
        )
        namespace = args.tenants.get(tenant)
        # The tenant's only way to its data: protected (Pulumi refuses to delete or replace it),
        # not retained (a retained claim would keep its replacement from being created).
        k8s.core.v1.PersistentVolumeClaim(
            f"{name}-pvc-{tier}-{tenant}",
            metadata=meta(tier, tenant, labels={TENANT_LABEL: tenant}),
            spec=_claim_spec(storage_class, pv),
            opts=pulumi.ResourceOptions.merge(
                child_opts(self, args.provider, [pv, *([namespace] if namespace else [])]),
                pulumi.ResourceOptions(ignore_changes=_CLAIM_IGNORES, protect=True),
            ),
        )

    def _hot_roots(
        self,
        name: str,
        args: StorageClassesArgs,
        refs: AwsStorageRefs,
        sc: pulumi.Resource,
        driver: pulumi.Resource,
    ) -> dict[str, tuple[str, k8s.core.v1.PersistentVolumeClaim]]:
        """Per hot file system in use, the root volume's claim in kube-system: (name, claim)."""
        capacities = _capacities(args.plan)
        wanted = {hot_file_system(args.plan, t.name) for t in args.model.tenants}
        roots: dict[str, tuple[str, k8s.core.v1.PersistentVolumeClaim]] = {}
        for which in sorted(wanted):
            fs = refs.hot(which)
            if fs is None:
                continue
            # Not `<platform>-hot-...`: that is where tenants' volumes are named (a tenant `root`).
            suffix = "fsx-root" if which == "critical" else "fsx-standard-root"
            root = f"{prefix(args.model)}-{suffix}"
            storage_class, capacity = self.class_names["hot"], capacities[f"hot-{which}"]
            spec = _base_spec(storage_class, capacity, ADMIN_NAMESPACE, root)
            spec["csi"] = root_csi(fs)
            spec["mount_options"] = ["flock"]
            pv = k8s.core.v1.PersistentVolume(
                f"{name}-{suffix}-pv",
                metadata=meta(root),
                spec=spec,
                opts=child_opts(self, args.provider, [sc, driver]),
            )
            claim = k8s.core.v1.PersistentVolumeClaim(
                f"{name}-{suffix}-pvc",
                metadata=meta(root, ADMIN_NAMESPACE),
                spec=_claim_spec(storage_class, pv),
                opts=pulumi.ResourceOptions.merge(
                    child_opts(self, args.provider, [pv]), pulumi.ResourceOptions(ignore_changes=_CLAIM_IGNORES)
                ),
            )
            roots[which] = (root, claim)
        return roots

    def _directory_job(
        self, name: str, args: StorageClassesArgs, root: tuple[str, k8s.core.v1.PersistentVolumeClaim], tenant: str
    ) -> k8s.batch.v1.Job:
        """Creates `/<tenant>` on the tenant's hot file system before its volume exists."""
        return k8s.batch.v1.Job(
            f"{name}-hot-dir-{tenant}",
            metadata=meta(directory_job_name(prefix(args.model), tenant), ADMIN_NAMESPACE),
            spec=directory_job_spec(root[0], [tenant]),
            # A Job's pod template is immutable: a change (the tenant moved file systems)
            # replaces it, and its fixed name must be free first.
            opts=pulumi.ResourceOptions.merge(
                child_opts(self, args.provider, [root[1]]), pulumi.ResourceOptions(delete_before_replace=True)
            ),
        )
