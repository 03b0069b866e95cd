"""Rules on `gpuNodePools[].reservation`: how a pool's reserved nodes are held on aws."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.catalog.capacity_blocks import (
    BLOCKS_ONLY,
    CAPACITY_BLOCK_REGIONS,
    CAPACITY_BLOCKS_AS_OF,
    CAPACITY_BLOCKS_SOURCE,
    SCARCE_FOR_ODCR,
)
from gpuplat.catalog.regional_prices import gpu_families, listed_elsewhere_only, regions_listing
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_map, as_str, is_number, markets, pool_name, pools, provider, section

CAPACITY_BLOCK = "capacity-block"
ODCR = "on-demand-reservation"


def _reserving(data: Data) -> Iterator[tuple[int, Data, Data | None]]:
    """aws pools with their reservation section (None when absent)."""
    if provider(data) != "aws":
        return
    for i, pool in pools(data):
        yield i, pool, as_map(pool.get("reservation"))


def _kind(reservation: Data | None) -> str:
    kind = as_str(reservation.get("kind")) if reservation is not None else None
    return kind or ODCR


@rule(
    "GP263",
    "capacity-block-selector",
    Level.ERROR,
    "A Capacity Block is bought (PurchaseCapacityBlock), never created: the pool must name the blocks "
    "Karpenter launches into, and only blocks are named that way.",
    source="https://karpenter.sh/docs/tasks/odcrs/",
    fix=(
        "With `reservation.kind: capacity-block`, select the blocks you bought by `reservation.ids` (cr-...) or "
        "`reservation.tags`; with kind on-demand-reservation, remove them."
    ),
)
def capacity_block_selector(data: Data) -> Iterator[Finding]:
    for i, pool, reservation in _reserving(data):
        if reservation is None:
            continue
        named = "ids" in reservation or "tags" in reservation
        name = pool_name(pool, i)
        if _kind(reservation) == CAPACITY_BLOCK and not named:
            yield Finding(
                ("gpuNodePools", i, "reservation"),
                f"pool {name} holds its reserved nodes in Capacity Blocks but names none; gpuplat cannot buy "
                f"one, so add the blocks' ids (cr-...) or tags they carry, e.g. tags: {{gpuplat-pool: {name}}}",
                at_key=True,
            )
        elif _kind(reservation) == ODCR and named:
            yield Finding(
                ("gpuNodePools", i, "reservation"),
                f"pool {name}: ids and tags select Capacity Blocks, but kind on-demand-reservation has gpuplat "
                f"create its own reservations; set kind: capacity-block or remove them",
                at_key=True,
            )


@rule(
    "GP264",
    "capacity-block-instance-type",
    Level.ERROR,
    "EC2 sells Capacity Blocks only for a few accelerated instance types.",
    source=CAPACITY_BLOCKS_SOURCE,
    fix=(
        "Use an instance type EC2 sells as Capacity Blocks (the message lists them), or `reservation.kind: "
        "on-demand-reservation`."
    ),
)
def capacity_block_instance_type(data: Data) -> Iterator[Finding]:
    for i, pool, reservation in _reserving(data):
        itype = as_str(pool.get("instanceType"))
        if _kind(reservation) != CAPACITY_BLOCK or itype is None or itype in CAPACITY_BLOCK_REGIONS:
            continue
        yield Finding(
            ("gpuNodePools", i, "reservation", "kind"),
            f"EC2 sells no Capacity Blocks of {itype} (as of {CAPACITY_BLOCKS_AS_OF}: "
            f"{', '.join(CAPACITY_BLOCK_REGIONS)}); use kind on-demand-reservation or another instance type",
        )


@rule(
    "GP363",
    "capacity-block-region",
    Level.WARNING,
    "Capacity Blocks of each instance type are sold only in some regions.",
    source=CAPACITY_BLOCKS_SOURCE,
    fix="Use a region where EC2 sells Capacity Blocks of the type (the message lists them).",
)
def capacity_block_region(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    region = as_str(target.get("region")) if target is not None else None
    for i, pool, reservation in _reserving(data):
        regions = CAPACITY_BLOCK_REGIONS.get(as_str(pool.get("instanceType")) or "", ())
        if _kind(reservation) != CAPACITY_BLOCK or region is None or not regions or region in regions:
            continue
        yield Finding(
            ("gpuNodePools", i, "reservation", "kind"),
            f"the catalog (as of {CAPACITY_BLOCKS_AS_OF}) lists Capacity Blocks of {pool.get('instanceType')} "
            f"only in {', '.join(regions)}, not {region}; check DescribeCapacityBlockOfferings there",
        )


def _reserved_share(data: Data) -> float:
    procurement = section(data, "procurement")
    value = procurement.get("reserved") if procurement is not None else None
    return float(value) if is_number(value) else 0.0


@rule(
    "GP361",
    "reservation-unused",
    Level.WARNING,
    "A reservation kind only shapes the reserved market's nodes.",
    fix="Remove `reservation` from a pool without the reserved market, or add `reserved` to its `markets`.",
)
def reservation_unused(data: Data) -> Iterator[Finding]:
    for i, pool, reservation in _reserving(data):
        if reservation is not None and "reserved" not in markets(pool):
            yield Finding(
                ("gpuNodePools", i, "reservation"),
                f"pool {pool_name(pool, i)} does not allow the reserved market, so its reservation is not used; "
                f"add reserved to its markets or remove it",
                at_key=True,
            )


@rule(
    "GP265",
    "no-on-demand-offering",
    Level.ERROR,
    "EC2 launches an on-demand node, grants an on-demand capacity reservation or a spot node only of a "
    "type it offers on demand; types sold only as Capacity Blocks have none (gpuplat/catalog/capacity_blocks.py).",
    source=CAPACITY_BLOCKS_SOURCE,
    fix=(
        "Buy the type as Capacity Blocks (`reservation.kind: capacity-block`, `markets: [reserved]`), or use a type"
        " EC2 sells on demand."
    ),
)
def no_on_demand_offering(data: Data) -> Iterator[Finding]:
    for i, pool, reservation in _reserving(data):
        itype = as_str(pool.get("instanceType")) or ""
        if itype not in BLOCKS_ONLY:
            continue
        allowed = markets(pool)
        refused = [m for m in ("on-demand", "spot") if m in allowed]
        if "reserved" in allowed and _kind(reservation) == ODCR:
            refused.insert(0, "reserved (on-demand capacity reservations)")
        if refused:
            yield Finding(
                ("gpuNodePools", i, "markets"),
                f"pool {pool_name(pool, i)}: {BLOCKS_ONLY[itype]}, so EC2 refuses its {' and '.join(refused)} "
                f"capacity; use markets: [reserved] with reservation: {{kind: capacity-block, ...}} or an instance "
                f"type offered on demand (e.g. p5en.48xlarge, the same 8x H200)",
            )


@rule(
    "GP364",
    "instance-type-not-offered-in-region",
    Level.WARNING,
    "EC2 launches a type only in the regions that offer it. The catalog's regional price list says which "
    "regions did when it was read; AWS adds regions over time, so preflight asks the account before "
    "anything is created (gpuplat/catalog/regional_prices.py).",
    fix=(
        "Use an instance type the region offers (the message names families it does) or another region; `gpuplat "
        "preflight` asks the account itself."
    ),
)
def instance_type_not_offered_in_region(data: Data) -> Iterator[Finding]:
    target = section(data, "target")
    region = as_str(target.get("region")) if target is not None else None
    for i, pool, reservation in _reserving(data):
        itype = as_str(pool.get("instanceType")) or ""
        blocks_only = set(markets(pool)) == {"reserved"} and _kind(reservation) == CAPACITY_BLOCK
        if region is None or blocks_only or itype in BLOCKS_ONLY or not listed_elsewhere_only(itype, region):
            continue
        here = gpu_families(region)
        choose = f"a family {region} lists ({', '.join(here)}) or another region" if here else "another region"
        elsewhere = regions_listing(itype)
        near = [r for r in elsewhere if r.split("-")[0] == region.split("-")[0]] or list(elsewhere[:3])
        yield Finding(
            ("gpuNodePools", i, "instanceType"),
            f"pool {pool_name(pool, i)}: {itype} was not offered in {region} when the catalog's regional prices "
            f"were read (it was in {len(elsewhere)} others, e.g. {', '.join(near)}), and EC2 launches no type a "
            f"region does not offer; choose {choose}, or "
            f"confirm with DescribeInstanceTypeOfferings: `gpuplat preflight` asks the account before anything "
            f"is created",
        )


@rule(
    "GP362",
    "odcr-scarce-instance-type",
    Level.WARNING,
    "On-demand capacity reservations of p5-class instances are rarely granted and bill the on-demand rate "
    "around the clock; EC2 sells that capacity as Capacity Blocks.",
    source=CAPACITY_BLOCKS_SOURCE,
    fix=(
        "Buy p5-class reserved capacity as Capacity Blocks (`reservation.kind: capacity-block`), or acknowledge the"
        " warning."
    ),
)
def odcr_scarce_instance_type(data: Data) -> Iterator[Finding]:
    if _reserved_share(data) <= 0:
        return
    for i, pool, reservation in _reserving(data):
        itype = as_str(pool.get("instanceType"))
        scarce = itype in SCARCE_FOR_ODCR and itype not in BLOCKS_ONLY  # GP265 refuses those outright
        if not scarce or "reserved" not in markets(pool) or _kind(reservation) != ODCR:
            continue
        yield Finding(
            ("gpuNodePools", i, "instanceType"),
            f"pool {pool_name(pool, i)} reserves {itype} as On-Demand Capacity Reservations, which EC2 rarely grants "
            f"for this type (CreateCapacityReservation fails with InsufficientInstanceCapacity) and which bill the "
            f"on-demand rate 24/7; consider reservation: {{kind: capacity-block, tags: {{...}}}} with blocks bought "
            f"for the training windows",
        )
