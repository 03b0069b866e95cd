"""Cost of what runs beside the GPU nodes: EKS control plane, NAT gateways, the storage tiers.

Each line is a dated list price (gpuplat/catalog/service_prices.py) times a quantity the spec
and the plan fix, per month of HOURS_PER_MONTH:

- EKS control plane: 1 cluster x $/cluster-hour, the extended-support rate when the calendar
  (catalog/eks.py, on its own date) has the spec's minor in extended support;
- NAT gateways: one per zone (components/aws/network.py) x $/hour, plus each one's Elastic
  IP (public IPv4 is billed per hour); the per-GB processing charge is shown as a rate only;
- hot: every FSx for Lustre file system's GiB x its PERSISTENT_2 throughput tier's $/GB-month
  (the spec's and, with standard tenants, the second one); backups as a rate only (their size
  is what changed since the last one, not known before);
- warm: capacityTiB x 1024 GB x S3 Express One Zone $/GB-month;
- cold: `storage.cold.capacityTiB` x 1024 GB x S3 Standard $/GB-month, a rate only without it.

Provider kubernetes has no cost plan (the cluster and its storage exist already).
"""

from __future__ import annotations

from gpuplat.catalog.eks import support_phase
from gpuplat.catalog.prices import HOURS_PER_MONTH
from gpuplat.catalog.service_prices import (
    EKS_EXTENDED_HOURLY,
    EKS_STANDARD_HOURLY,
    FSX_BACKUP_GB_MONTH,
    FSX_PERSISTENT_2_GB_MONTH,
    NAT_GATEWAY_HOURLY,
    NAT_GATEWAY_PER_GB,
    PUBLIC_IPV4_HOURLY,
    S3_EXPRESS_GB_MONTH,
    S3_STANDARD_GB_MONTH,
    ListPrice,
)
from gpuplat.model import Platform, Provider
from gpuplat.plan.types import CostLine, StoragePlan

GB_PER_TIB = 1024  # S3 bills binary GB; the spec's warm and cold TiB are binary too


def _line(item: str, quantity: float, price: ListPrice, priced: bool = True) -> CostLine:
    return CostLine(
        item=item,
        quantity=quantity,
        unit=price.unit,
        unit_usd=price.usd,
        monthly_usd=quantity * price.usd if priced else None,
        source=price.source,
        as_of=price.as_of,
    )


def _control_plane(model: Platform) -> CostLine:
    extended = support_phase(model.target.kubernetes_version) == "extended"
    price = EKS_EXTENDED_HOURLY if extended else EKS_STANDARD_HOURLY
    support = "extended" if extended else "standard"
    return _line(f"EKS control plane ({support} support, {model.target.kubernetes_version})", HOURS_PER_MONTH, price)


def _network(model: Platform) -> list[CostLine]:
    nats = len(model.target.zones)
    hours = nats * HOURS_PER_MONTH
    return [
        _line(f"NAT gateways ({nats}, one per zone)", hours, NAT_GATEWAY_HOURLY),
        _line(f"NAT gateways' public IPv4 addresses ({nats})", hours, PUBLIC_IPV4_HOURLY),
        _line("NAT data processed (per GB, not in the total)", 0, NAT_GATEWAY_PER_GB, priced=False),
    ]


def _storage(model: Platform, storage: StoragePlan) -> list[CostLine]:
    lines: list[CostLine] = []
    hot = storage.hot
    if hot is not None and hot.throughput_per_tib is not None:
        systems = [("hot", hot.capacity_gib, hot.throughput_per_tib)]
        if hot.standard is not None:
            systems.append(("hot (standard)", hot.standard.capacity_gib, hot.standard.throughput_per_tib))
        for label, gib, tier in systems:
            item = f"FSx for Lustre {label}, PERSISTENT_2 {tier} MB/s/TiB"
            lines.append(_line(item, gib, FSX_PERSISTENT_2_GB_MONTH[tier]))
        spec_hot = model.storage.hot
        if spec_hot is not None and spec_hot.backup_retention_days > 0:
            item = f"FSx backups ({spec_hot.backup_retention_days} days, per GB stored, not in the total)"
            lines.append(_line(item, 0, FSX_BACKUP_GB_MONTH, priced=False))
    if storage.warm is not None:
        lines.append(_line("S3 Express One Zone warm", storage.warm.capacity_tib * GB_PER_TIB, S3_EXPRESS_GB_MONTH))
    cold = model.storage.cold
    if cold is not None:
        if cold.capacity_tib is not None:
            lines.append(_line("S3 Standard cold", cold.capacity_tib * GB_PER_TIB, S3_STANDARD_GB_MONTH))
        else:
            item = "S3 Standard cold (per GB stored; set storage.cold.capacityTiB to price it)"
            lines.append(_line(item, 0, S3_STANDARD_GB_MONTH, priced=False))
    return lines


def service_costs(model: Platform, storage: StoragePlan) -> tuple[CostLine, ...]:
    if model.target.provider is not Provider.AWS:
        return ()
    return (_control_plane(model), *_network(model), *_storage(model, storage))
