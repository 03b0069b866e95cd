"""What changed between two plans (`gpuplat plan --base`, the pull-request comment): per pool and
for the fleet, and why a pool's markets moved when nothing of its own did.

Both sides are plan JSON documents (render/plan.py), so the base may come from another planner
(this repository's own, at the base commit). A pool's markets move with no change of its own
when procurement is fleet-wide: the ratio splits the GPUs of every pool without a procurement of
its own together (gpuplat/plan/procurement.py), so adding, removing or resizing another pool, or
changing the ratio, re-balances them. Such a move is a knock-on: the plan names the pool, what
moved, and the changes of the split that caused it; a pool's own `procurement` pins it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from gpuplat.vocabulary import MARKET_ORDER

from .plan import table

Json = dict[str, Any]
MARKETS = tuple((m.procurement_key, m.value) for m in MARKET_ORDER)  # (plan JSON key, market)
_WORD = dict(MARKETS)


@dataclass(frozen=True)
class PlanResult:
    """The base's plan as one side of a comparison, or why there is none."""

    plan: Json | None
    note: str | None = None  # why there is no plan
    compiler: str | None = None  # what planned the base
    version_note: str | None = None  # the base pins another gpuplat than the one that planned it


def _pools(plan: Mapping[str, Any]) -> dict[str, Json]:
    return {str(p["name"]): p for p in cast("list[Json]", plan.get("pools") or [])}


def _nodes(pool: Json | None) -> dict[str, int]:
    markets = cast("Json", (pool or {}).get("markets") or {})
    return {key: int(cast("Json", markets.get(key) or {}).get("nodes", 0)) for key, _ in MARKETS}


def _gpus(pool: Json | None) -> dict[str, int]:
    markets = cast("Json", (pool or {}).get("markets") or {})
    return {key: int(cast("Json", markets.get(key) or {}).get("gpus", 0)) for key, _ in MARKETS}


def _pool_cost(plan: Mapping[str, Any]) -> dict[str, float]:
    cost = cast("Json | None", plan.get("cost"))
    pools = cast("list[Json]", (cost or {}).get("pools") or [])
    return {
        str(p["name"]): round(sum(float(v) for v in cast("Json", p.get("monthlyUsd") or {}).values()), 2) for p in pools
    }


def _pair(before: Any, after: Any) -> Json:
    out: Json = {"base": before, "head": after}
    if isinstance(before, int | float) and isinstance(after, int | float):
        out["delta"] = round(after - before, 2)
    return out


def _own(pool: Json) -> Json:
    """What of a pool decides its own split: size, GPUs per node, markets, its own procurement."""
    return {
        "max": cast("Json", pool.get("nodes") or {}).get("max"),
        "gpusPerNode": pool.get("gpusPerNode"),
        "markets": pool.get("allowedMarkets"),  # None from a planner that did not say
        "procurement": pool.get("procurement"),
    }


def _own_changes(before: Json, after: Json) -> list[str]:
    a, b = _own(before), _own(after)
    found: list[str] = []
    if a["max"] != b["max"]:
        found.append(f"max {a['max']} -> {b['max']} nodes")
    if a["gpusPerNode"] != b["gpusPerNode"]:
        found.append(f"{a['gpusPerNode']} -> {b['gpusPerNode']} GPUs per node")
    if a["markets"] is not None and b["markets"] is not None and a["markets"] != b["markets"]:
        found.append(f"markets {_market_list(a['markets'])} -> {_market_list(b['markets'])}")
    if "procurement" in before and "procurement" in after and a["procurement"] != b["procurement"]:
        found.append(f"its own procurement {_mix(a['procurement'])} -> {_mix(b['procurement'])}")
    return found


def _market_list(keys: Any) -> str:
    return ", ".join(_WORD.get(str(k), str(k)) for k in cast("list[Any]", keys or [])) or "none"


def _mix(shares: Any, *, zeros: bool = True) -> str:
    if not isinstance(shares, Mapping):
        return "none (fleet-wide)"
    given = cast("Mapping[str, Any]", shares)
    return ", ".join(f"{_WORD[k]} {given.get(k, 0):g} %" for k, _ in MARKETS if zeros or given.get(k, 0))


def _pool_entry(name: str, before: Json | None, after: Json | None, costs: tuple[dict[str, float], ...]) -> Json | None:
    change = "added" if before is None else "removed" if after is None else "changed"
    nodes_a, nodes_b, gpus_a, gpus_b = _nodes(before), _nodes(after), _gpus(before), _gpus(after)
    markets = {
        key: {"nodes": _pair(nodes_a[key], nodes_b[key]), "gpus": _pair(gpus_a[key], gpus_b[key])}
        for key, _ in MARKETS
        if nodes_a[key] != nodes_b[key] or gpus_a[key] != gpus_b[key]
    }
    own = _own_changes(before, after) if before is not None and after is not None else []
    cost_a, cost_b = costs[0].get(name), costs[1].get(name)
    if change == "changed" and not markets and not own and cost_a == cost_b:
        return None
    entry: Json = {"name": name, "change": change, "markets": markets, "own": own}
    if cost_a is not None or cost_b is not None:
        entry["monthlyUsd"] = _pair(cost_a or 0.0, cost_b or 0.0)
    return entry


def _fleet(base: Mapping[str, Any], head: Mapping[str, Any]) -> Json:
    a, b = cast("Json", base.get("fleet") or {}), cast("Json", head.get("fleet") or {})
    ma, mb = cast("Json", a.get("markets") or {}), cast("Json", b.get("markets") or {})
    return {
        "gpus": _pair(a.get("gpus", 0), b.get("gpus", 0)),
        "markets": {key: _pair(ma.get(key, 0), mb.get(key, 0)) for key, _ in MARKETS},
        "procurement": _pair(a.get("procurement"), b.get("procurement")),
    }


def _cost(base: Mapping[str, Any], head: Mapping[str, Any]) -> Json | None:
    a, b = cast("Json | None", base.get("cost")), cast("Json | None", head.get("cost"))
    if a is None or b is None:
        return None
    out: Json = {}
    for key in ("monthlyUsd", "servicesMonthlyUsd", "totalMonthlyUsd"):
        if isinstance(a.get(key), int | float) and isinstance(b.get(key), int | float):
            out[key] = _pair(float(a[key]), float(b[key]))
    return out


def plan_delta(head: Mapping[str, Any], base: Mapping[str, Any]) -> Json:
    """The changes from `base` to `head`, both plan JSON documents: pools that changed (added,
    removed, their markets, nodes and cost), the fleet, the cost, and the knock-on moves."""
    now, before = _pools(head), _pools(base)
    costs = (_pool_cost(base), _pool_cost(head))
    names = [*now, *(n for n in before if n not in now)]
    pools = [e for n in names if (e := _pool_entry(n, before.get(n), now.get(n), costs)) is not None]
    delta: Json = {"pools": pools, "fleet": _fleet(base, head), "cost": _cost(base, head)}
    delta["knockOn"] = knock_on(pools, before, now, delta["fleet"])
    return delta


# ---- knock-on moves -----------------------------------------------------------------------------


def _fleet_wide(pool: Json | None) -> bool:
    return pool is not None and pool.get("procurement") is None


def _causes(pools: Sequence[Json], before: Mapping[str, Json], now: Mapping[str, Json], fleet: Json) -> list[str]:
    """What changed the fleet-wide split: pools joining or leaving it, their own changes, the ratio."""
    found: list[str] = []
    for entry in pools:
        name = str(entry["name"])
        a, b = before.get(name), now.get(name)
        if entry["change"] == "added" and _fleet_wide(b):
            assert b is not None
            allowed = b.get("allowedMarkets")
            markets = f"markets {_market_list(allowed)}; " if allowed is not None else ""
            found.append(f"pool {name} was added ({markets}{b.get('gpusPerNode', 0) * _own(b)['max']} GPUs)")
        elif entry["change"] == "removed" and _fleet_wide(a):
            found.append(f"pool {name} was removed")
        elif entry["change"] == "changed" and entry["own"] and (_fleet_wide(a) or _fleet_wide(b)):
            found.append(f"pool {name} changed ({'; '.join(entry['own'])})")
    ratio = cast("Json", fleet["procurement"])
    if ratio["base"] is not None and ratio["head"] is not None and ratio["base"] != ratio["head"]:
        found.append(f"the procurement mix changed ({_mix(ratio['base'])} -> {_mix(ratio['head'])})")
    return found


def _moves(entry: Json) -> str:
    markets = cast("Json", entry["markets"])
    return ", ".join(
        f"{_WORD[k]} {markets[k]['nodes']['base']} -> {markets[k]['nodes']['head']}" for k, _ in MARKETS if k in markets
    )


def knock_on(pools: Sequence[Json], before: Mapping[str, Json], now: Mapping[str, Json], fleet: Json) -> list[Json]:
    """Pools of the fleet-wide split whose markets moved with no change of their own, and why."""
    moved = [
        e
        for e in pools
        if e["change"] == "changed" and e["markets"] and not e["own"]
        and _fleet_wide(before.get(str(e["name"]))) and _fleet_wide(now.get(str(e["name"])))
    ]  # fmt: skip
    if not moved:
        return []
    causes = _causes(pools, before, now, fleet)
    ratio = cast("Json", fleet["procurement"])["head"]
    share = f" ({_mix(ratio, zeros=False)})" if ratio is not None else ""
    why = (
        "the split re-balanced because " + "; ".join(causes)
        if causes
        else "the split changed although no pool and no ratio did (the base was planned by another planner)"
    )
    out: list[Json] = []
    for entry in moved:
        name = str(entry["name"])
        message = (
            f"pool {name}: {_moves(entry)} nodes, with no change of its own. The fleet-wide procurement{share} "
            f"splits every pool without a procurement of its own together, and {why}. To keep {name}'s "
            f"markets, give it its own procurement (gpuNodePools[{name}].procurement)."
        )
        out.append({"pool": name, "moved": entry["markets"], "because": causes, "message": message})
    return out


# ---- text (`gpuplat plan --base`) ----------------------------------------------------------------


def _arrow(before: Any, after: Any) -> str:
    return str(after) if before == after else f"{before} -> {after}"


def _usd(value: float) -> str:
    return f"-${-value:,.0f}" if value < 0 else f"${value:,.0f}"


def _usd_pair(pair: Json) -> str:
    before, after = float(pair["base"]), float(pair["head"])
    delta = after - before
    sign = "+" if delta > 0 else "-" if delta < 0 else "±"
    return f"{_usd(before)} -> {_usd(after)} ({sign}{_usd(abs(delta))})"


def _market_cell(entry: Json, key: str, allowed: bool) -> str:
    moved = cast("Json", entry["markets"]).get(key)
    if moved is None:
        return "" if allowed else "-"
    nodes, gpus = moved["nodes"], moved["gpus"]
    return f"{_arrow(nodes['base'], nodes['head'])} ({_arrow(gpus['base'], gpus['head'])})"


def delta_text(delta: Mapping[str, Any], ref: str, result: PlanResult, name: str) -> str:
    """`gpuplat plan --base REF`: what changed, per pool and for the fleet, and why markets moved."""
    lines = [f"Plan of {name} against {ref}: the base planned by {result.compiler or 'its own planner'}"]
    if result.version_note:
        lines.append(f"note: {result.version_note}")
    pools = cast("list[Json]", delta["pools"])
    if not pools:
        lines.append("\nNo pool changes: the same nodes per market in every pool.")
    else:
        rows = [
            [
                str(e["name"]),
                str(e["change"]),
                *(_market_cell(e, key, True) for key, _ in MARKETS),
                _usd_pair(e["monthlyUsd"]) if "monthlyUsd" in e else "-",
                "; ".join(cast("list[str]", e["own"])),
            ]
            for e in pools
        ]
        fleet = cast("Json", delta["fleet"])
        markets = cast("Json", fleet["markets"])
        rows.append(["fleet", _arrow(fleet["gpus"]["base"], fleet["gpus"]["head"]) + " GPUs",
                     *(_arrow(markets[k]["base"], markets[k]["head"]) for k, _ in MARKETS), "", ""])  # fmt: skip
        header = ["pool", "change", *(word for _, word in MARKETS), "GPU $/month", "its own change"]
        lines += ["", "Pools and markets that changed: nodes (GPUs), base -> head", table(header, rows).rstrip()]
    knock = cast("list[Json]", delta["knockOn"])
    if knock:
        lines += ["", "Markets that moved with no change of their own pool:"]
        lines += [f"  {k['message']}" for k in knock]
    cost = cast("Json | None", delta["cost"])
    if cost:
        labels = {"monthlyUsd": "GPU", "servicesMonthlyUsd": "services", "totalMonthlyUsd": "total"}
        parts = [f"{labels[key]} {_usd_pair(cost[key])}" for key in labels if key in cost]
        lines += ["", "Cost, USD per month, every pool at max size: " + "; ".join(parts)]
    return "\n".join(lines) + "\n"
