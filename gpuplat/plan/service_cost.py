"""Cost of what runs beside the GPU nodes: every other line AWS bills for the stack at nodes.max.

Each line is a dated list price of the spec's region (gpuplat/catalog/service_prices.py: a price
the catalog has not read for that region is us-east-1's, marked estimated) times a quantity the
spec, the plan and the components' footprint (catalog/footprint.py) fix, per month of
HOURS_PER_MONTH:

- EKS control plane: 1 cluster x $/cluster-hour, the extended-support rate when the calendar
  (catalog/eks.py, on its own date) has the spec's minor in extended support;
- system node group: its desired size x the on-demand price of its type (nothing scales it);
- EBS gp3 root volumes: every GPU node at nodes.max and every system node x its root GiB;
- NAT gateways: one per zone (components/aws/network.py) x $/hour, plus each one's Elastic
  IP (public IPv4 is billed per hour);
- interface endpoints: each endpoint x zones x $/hour;
- KMS: the customer managed keys the components create x $/key-month;
- hot: every FSx for Lustre file system's GiB x its PERSISTENT_2 throughput tier's $/GB-month
  (the spec's and, with standard tenants, the second one);
- warm: capacityTiB x 1024 GB x S3 Express One Zone $/GB-month;
- cold: `storage.cold.capacityTiB` x 1024 GB x S3 Standard $/GB-month.

Lines whose quantity is usage no spec states (data through NAT and endpoints, control-plane log
volume, S3 Express requests and transfer, FSx backups, cold storage without capacityTiB) are on
the bill as a rate (`monthly_usd` None), so the reader sees every line and which ones the total
cannot hold. Provider kubernetes has no cost plan (the cluster and its storage exist already).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpuplat.catalog.eks import support_phase
from gpuplat.catalog.footprint import (
    CONTROL_PLANE_LOG_TYPES,
    GPU_ROOT_GIB,
    INTERFACE_ENDPOINTS,
    SYSTEM_INSTANCE_TYPE,
    SYSTEM_NODES,
    SYSTEM_ROOT_GIB,
    kms_keys,
)
from gpuplat.catalog.prices import HOURS_PER_MONTH, on_demand_price
from gpuplat.catalog.service_prices import ListPrice, service_price
from gpuplat.model import Platform, Provider
from gpuplat.plan.types import CostLine, StoragePlan

GB_PER_TIB = 1024  # S3 bills binary GB; the spec's warm and cold TiB are binary too
_EC2_PRICING = "https://aws.amazon.com/ec2/pricing/on-demand/"


def _line(item: str, quantity: float, price: ListPrice, priced: bool = True) -> CostLine:
    return CostLine(
        item=item,
        quantity=quantity,
        unit=price.unit,
        unit_usd=price.usd,
        monthly_usd=quantity * price.usd if priced else None,
        source=price.source,
        as_of=price.as_of,
        region=price.region,
        estimated=price.estimated,
    )


class _Prices:
    """The spec's region's price of each line, by the catalog's key."""

    def __init__(self, model: Platform) -> None:
        self.region = model.target.region or "us-east-1"

    def __call__(self, key: str) -> ListPrice:
        return service_price(key, self.region)


def _control_plane(model: Platform, price: _Prices) -> CostLine:
    extended = support_phase(model.target.kubernetes_version) == "extended"
    support = "extended" if extended else "standard"
    item = f"EKS control plane ({support} support, {model.target.kubernetes_version})"
    return _line(item, HOURS_PER_MONTH, price(f"eks-{support}"))


def _system_nodes(model: Platform, price: _Prices) -> list[CostLine]:
    _, desired, _ = SYSTEM_NODES
    spec: Mapping[str, float] = model.procurement.prices.on_demand_hourly if model.procurement is not None else {}
    if SYSTEM_INSTANCE_TYPE in spec:
        usd, estimated, source, as_of = spec[SYSTEM_INSTANCE_TYPE], "", "procurement.prices.onDemandHourly", "spec"
        region = price.region
    else:
        listed = on_demand_price(SYSTEM_INSTANCE_TYPE, price.region)
        if listed is None:  # the catalog lists the system type; without it the line would be a guess
            return []
        usd, estimated, region, as_of = listed.usd, listed.estimated, listed.region, listed.as_of
        source = _EC2_PRICING if region == "us-east-1" else listed.source
    hourly = ListPrice(usd, "node-hour", source, as_of, region=region, estimated=estimated)
    item = f"system node group ({desired} x {SYSTEM_INSTANCE_TYPE} on demand)"
    return [_line(item, desired * HOURS_PER_MONTH, hourly)]


def _root_volumes(model: Platform, price: _Prices) -> CostLine:
    gpu_nodes = sum(p.nodes.max for p in model.pools)
    _, system, _ = SYSTEM_NODES
    gib = gpu_nodes * GPU_ROOT_GIB + system * SYSTEM_ROOT_GIB
    item = f"EBS gp3 root volumes ({gpu_nodes} GPU x {GPU_ROOT_GIB} GiB + {system} system x {SYSTEM_ROOT_GIB} GiB)"
    return _line(item, gib, price("ebs-gp3"))


def _network(model: Platform, price: _Prices) -> list[CostLine]:
    zones = len(model.target.zones)
    hours = zones * HOURS_PER_MONTH
    endpoints = len(INTERFACE_ENDPOINTS)
    return [
        _line(f"NAT gateways ({zones}, one per zone)", hours, price("nat-hour")),
        _line(f"NAT gateways' public IPv4 addresses ({zones})", hours, price("public-ipv4-hour")),
        _line("NAT data processed (per GB, not in the total)", 0, price("nat-gb"), priced=False),
        _line(f"interface endpoints ({endpoints} x {zones} zones)", endpoints * hours, price("endpoint-hour")),
        _line("interface endpoint data processed (per GB, not in the total)", 0, price("endpoint-gb"), priced=False),
    ]


def _account(model: Platform, price: _Prices) -> list[CostLine]:
    s = model.storage
    keys = kms_keys(any(t is not None for t in (s.hot, s.warm, s.cold)))
    logs = f"control-plane logs ingested ({len(CONTROL_PLANE_LOG_TYPES)} log types; per GB, not in the total)"
    return [
        _line(f"KMS customer managed keys ({keys})", keys, price("kms-key")),
        _line(logs, 0, price("logs-ingest"), priced=False),
        _line("control-plane logs stored (per GB-month, not in the total)", 0, price("logs-storage"), priced=False),
    ]


def _storage(model: Platform, storage: StoragePlan, price: _Prices) -> list[CostLine]:
    lines: list[CostLine] = []
    hot = storage.hot
    if hot is not None and hot.throughput_per_tib is not None:
        systems = [("hot", hot.capacity_gib, hot.throughput_per_tib)]
        if hot.standard is not None:
            systems.append(("hot (standard)", hot.standard.capacity_gib, hot.standard.throughput_per_tib))
        for label, gib, tier in systems:
            item = f"FSx for Lustre {label}, PERSISTENT_2 {tier} MB/s/TiB"
            lines.append(_line(item, gib, price(f"fsx-persistent-2-{tier}")))
        spec_hot = model.storage.hot
        if spec_hot is not None and spec_hot.backup_retention_days > 0:
            item = f"FSx backups ({spec_hot.backup_retention_days} days, per GB stored, not in the total)"
            lines.append(_line(item, 0, price("fsx-backup"), priced=False))
    if storage.warm is not None:
        gb = storage.warm.capacity_tib * GB_PER_TIB
        lines.append(_line("S3 Express One Zone warm", gb, price("s3-express-storage")))
        for key, what in (
            ("s3-express-put", "PUT requests"),
            ("s3-express-get", "GET requests"),
            ("s3-express-upload", "upload above 512 KB per request"),
            ("s3-express-retrieval", "retrieval above 512 KB per request"),
        ):
            lines.append(_line(f"S3 Express warm {what} (not in the total)", 0, price(key), priced=False))
    cold = model.storage.cold
    if cold is not None:
        if cold.capacity_tib is not None:
            lines.append(_line("S3 Standard cold", cold.capacity_tib * GB_PER_TIB, price("s3-standard-storage")))
        else:
            item = "S3 Standard cold (per GB stored; set storage.cold.capacityTiB to price it)"
            lines.append(_line(item, 0, price("s3-standard-storage"), priced=False))
    return lines


def service_costs(model: Platform, storage: StoragePlan) -> tuple[CostLine, ...]:
    if model.target.provider is not Provider.AWS:
        return ()
    price = _Prices(model)
    return (
        _control_plane(model, price),
        *_system_nodes(model, price),
        _root_volumes(model, price),
        *_network(model, price),
        *_account(model, price),
        *_storage(model, storage, price),
    )
