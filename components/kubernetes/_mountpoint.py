"""The Mountpoint S3 CSI driver: its chart values and the mount options of a tenant's S3 volume."""

from __future__ import annotations

import math
from typing import Any

from components.conventions import S3_CSI_SERVICE_ACCOUNT
from gpuplat.catalog import instance_type
from gpuplat.model import Platform


def mountpoint_options(model: Platform, tier: str, tenant: str) -> list[str]:
    """The mount options of `tenant`'s volume on `tier` (warm or cold).

    Mountpoint CSI v2 runs Mountpoint in a pod, which reaches IMDS only with a hop limit of 2;
    GPU nodes keep 1 (no pod may read the node role's credentials), so Mountpoint could detect
    neither the region nor the instance's bandwidth and would target 10 Gbps. Both are given.
    """
    options = [f"region {model.target.region}", f"prefix {tenant}/"]
    gbps = mountpoint_throughput_gbps(model, tenant)
    if gbps is not None:
        options.append(f"maximum-throughput-gbps {gbps}")
    return options + mountpoint_access_options(tier)


def mountpoint_values() -> dict[str, Any]:
    return {"node": {"serviceAccount": {"name": S3_CSI_SERVICE_ACCOUNT}}}


def mountpoint_throughput_gbps(model: Platform, tenant: str) -> int | None:
    """Mountpoint's target throughput on the tenant's S3 volumes: one network card's bandwidth
    (pods use card 0) of the slowest instance type among the pools the tenant may use. A volume
    has one value for every node that mounts it; the slowest never asks a node for more than its
    card carries (the faster ones then use less than they could, still far above the 10 Gbps
    Mountpoint assumes when it cannot ask IMDS). None: no pool with a known instance type."""
    allowed = next((t.pools for t in model.tenants if t.name == tenant), ())
    cards = [
        itype.card_gbps
        for name in allowed
        if (pool := model.pools_by_name.get(name)) is not None
        and pool.instance_type is not None
        and (itype := instance_type(pool.instance_type)) is not None
    ]
    return max(1, math.floor(min(cards))) if cards else None


def mountpoint_access_options(tier: str) -> list[str]:
    """Who in the tenant's pod may use its S3 volume, and how.

    Mountpoint CSI v2 runs Mountpoint as a non-root user in a pod of its own and, unless the
    workload pod has an fsGroup or the volume says `allow-other`, mounts with `allow-root` only
    (mountpoint-s3-csi-driver `pkg/driver/node/node.go`, NodePublishVolume): a tenant container
    running as any other user than root is refused the volume. Tenant images run as arbitrary
    users, as the hot tier assumes (_hot_volumes.py opens each tenant's directory to all), so
    the volume allows other users, and directories are open to all (a new object is a new file
    in a directory). Files are writable by all on warm, which allows overwrites; cold keeps
    Mountpoint's read-only 0644, objects there are written once. This opens nothing to another
    tenant: the FUSE mount exists only in the mount namespace of the pods that mount this
    tenant's claim (and the node's root). A pod that sets `fsGroup` still gets it as the files'
    group: the driver adds `gid` only where the volume sets none.
    """
    options = ["allow-other", "dir-mode 0777"]
    if tier == "warm":
        options += ["allow-delete", "allow-overwrite", "file-mode 0666"]
    return options
