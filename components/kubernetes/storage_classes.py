"""StorageClasses: how pods reach the three storage tiers, and the QoS priority classes.

aws: the tiers are AWS objects (StorageTiers on the AWS side); Kubernetes reaches them by
static provisioning, because each tier is one shared file system or bucket, not a volume per
claim:
- the FSx CSI and Mountpoint S3 CSI drivers (Helm, pinned, kube-system as upstream installs them);
- per tier a StorageClass `<platform>-<tier>` with no provisioner: a claim of that class
  binds only to the platform's volumes, never triggers dynamic provisioning (the FSx driver
  would create a new file system per claim);
- per tier and tenant a PersistentVolume bound to a claim `<tier>` in the tenant's namespace
  (a volume binds exactly one claim, so every tenant gets its own view of the tier):
  hot = the FSx for Lustre file system (volumeHandle = file system id, dnsname / mountname);
  warm = the S3 Express One Zone directory bucket, cold = the S3 bucket, both through
  Mountpoint under the tenant's own prefix (`prefix <tenant>/`). Warm allows deletes and
  overwrites (intermediate results); cold only adds objects (archive; lifecycle expires them).
provider kubernetes: the tiers name StorageClasses the cluster already has; tenants claim
them directly, so nothing is emitted for them.

QoS (`storage.qos.criticalIopsShare`): PriorityClasses `<platform>-critical` and
`<platform>-standard`. Honestly: a PriorityClass gives scheduling and preemption priority, not
IOPS. Critical training jobs get placed first and evict standard work when capacity is short,
so under contention the hot tier's clients are mostly critical ones; nothing caps the I/O of
the standard jobs that do run. FSx for Lustre has no per-client or per-job QoS (Lustre's own
NRS/TBF policies are not exposed by FSx), and on an existing cluster the share belongs to the
storage system's QoS. The share is recorded on the hot StorageClass (aws) as the annotation
`gpuplat.dev/critical-iops-share`, for such a storage-side policy to read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import S3_CSI_SERVICE_ACCOUNT
from gpuplat.catalog import fsx
from gpuplat.model import Platform, Provider
from gpuplat.plan import Plan

from ._common import chart_release, child_opts, meta, prefix

QOS_SHARE_ANNOTATION = "gpuplat.dev/critical-iops-share"
# Above every tenant class (Tenant.TENANT_PRIORITY), below Kubernetes' system classes (1e9+).
QOS_PRIORITY = {"critical": 1_000_000, "standard": 0}
FSX_DRIVER = "fsx.csi.aws.com"
S3_DRIVER = "s3.csi.aws.com"
# Kubernetes requires a capacity on every volume; S3 has none and Mountpoint ignores it.
_S3_NOMINAL_CAPACITY = "1Pi"


@dataclass(frozen=True)
class AwsStorageRefs:
    """The AWS storage tiers (StorageTiers outputs); a field is None when its tier is absent."""

    file_system_id: pulumi.Input[str] | None = None
    dns_name: pulumi.Input[str] | None = None
    mount_name: pulumi.Input[str] | None = None
    warm_bucket: pulumi.Input[str] | None = None
    cold_bucket: pulumi.Input[str] | None = None


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
    # AWS_REGION (CHARTS.md section 3); node.env is in values.yaml yet no template reads it.
    return {"controller": {"region": model.target.region}, "node": {"region": model.target.region}}


def mountpoint_values() -> dict[str, Any]:
    return {"node": {"serviceAccount": {"name": S3_CSI_SERVICE_ACCOUNT}}}


def _capacities(model: Platform, plan: Plan) -> dict[str, str]:
    result = {"warm": _S3_NOMINAL_CAPACITY, "cold": _S3_NOMINAL_CAPACITY}
    if plan.storage.hot is not None:
        result["hot"] = f"{plan.storage.hot.capacity_gib}Gi"
    if plan.storage.warm is not None:
        result["warm"] = f"{math.ceil(plan.storage.warm.capacity_tib * fsx.GIB_PER_TIB)}Gi"
    return result


def volume_spec(
    model: Platform, refs: AwsStorageRefs, tier: str, tenant: str, storage_class: str, capacity: str
) -> k8s.core.v1.PersistentVolumeSpecArgsDict | None:
    """The tenant's volume on `tier`, or None when the AWS side gave no reference to it."""
    spec: k8s.core.v1.PersistentVolumeSpecArgsDict = {
        "capacity": {"storage": capacity},
        "access_modes": ["ReadWriteMany"],
        "persistent_volume_reclaim_policy": "Retain",
        "storage_class_name": storage_class,
        "claim_ref": {"namespace": tenant, "name": tier},
    }
    if tier == "hot":
        if refs.file_system_id is None or refs.dns_name is None or refs.mount_name is None:
            return None
        spec["csi"] = {
            "driver": FSX_DRIVER,
            "volume_handle": refs.file_system_id,
            "volume_attributes": {"dnsname": refs.dns_name, "mountname": refs.mount_name},
        }
        spec["mount_options"] = ["flock"]
        return spec
    bucket = refs.warm_bucket if tier == "warm" else refs.cold_bucket
    if bucket is None:
        return None
    options = [f"region {model.target.region}", f"prefix {tenant}/"]
    if tier == "warm":
        options += ["allow-delete", "allow-overwrite"]
    spec["csi"] = {
        "driver": S3_DRIVER,
        # Mountpoint needs a volumeHandle unique across the cluster's volumes.
        "volume_handle": f"{prefix(model)}-{tier}-{tenant}",
        "volume_attributes": {"bucketName": bucket},
    }
    spec["mount_options"] = options
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
                description=f"{level} GPU work; critical training keeps "
                f"{model.storage.critical_iops_share:.0%} of the hot tier by being placed first",
                opts=child_opts(self, provider, args.depends_on),
            )
        if model.target.provider is Provider.AWS:
            self._aws(name, args)
        self.register_outputs({"classNames": self.class_names, "priorityClasses": self.priority_classes})

    def _aws(self, name: str, args: StorageClassesArgs) -> None:
        model, provider = args.model, args.provider
        drivers: dict[str, k8s.helm.v3.Release] = {}
        if model.storage.hot is not None:
            drivers["hot"] = chart_release(
                self,
                name,
                "aws-fsx-csi-driver",
                fsx_values(model),
                provider,
                pod_security=None,
                depends_on=args.depends_on,
            )
        if model.storage.warm is not None or model.storage.cold is not None:
            s3 = chart_release(
                self,
                name,
                "aws-mountpoint-s3-csi-driver",
                mountpoint_values(),
                provider,
                pod_security=None,
                depends_on=args.depends_on,
            )
            drivers["warm"] = drivers["cold"] = s3
        capacities = _capacities(model, args.plan)
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
            for tenant in model.tenants:
                volume = f"{prefix(model)}-{tier}-{tenant.name}"
                spec = volume_spec(model, refs, tier, tenant.name, storage_class, capacities[tier])
                if spec is None:
                    continue
                pv = k8s.core.v1.PersistentVolume(
                    f"{name}-pv-{tier}-{tenant.name}",
                    metadata=meta(volume),
                    spec=spec,
                    opts=child_opts(self, provider, [sc, drivers[tier]]),
                )
                namespace = args.tenants.get(tenant.name)
                k8s.core.v1.PersistentVolumeClaim(
                    f"{name}-pvc-{tier}-{tenant.name}",
                    metadata=meta(tier, tenant.name),
                    spec={
                        "access_modes": ["ReadWriteMany"],
                        "storage_class_name": storage_class,
                        "volume_name": volume,
                        "resources": {"requests": {"storage": capacities[tier]}},
                    },
                    opts=child_opts(self, provider, [pv, *([namespace] if namespace else [])]),
                )
