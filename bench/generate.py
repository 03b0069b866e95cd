"""Generate large, valid platform specs for the benchmarks (bench/run.py).

The specs are deterministic (no randomness: the same size always gives the same file) and
cover what the components branch on: every sharing mode on GPUs that support it (MIG
profiles and custom layouts on A100 / H100 / H200 / B200, MPS, time-slicing, fractional),
fabric pools on EFA-capable types, every market mix, labels and taints, hard and soft
tenants with and without pool allow-lists, all three storage tiers, a 3-tier fat-tree and
procurement 30 / 30 / 40.

    .venv/bin/python bench/generate.py --size medium --provider aws -o /tmp/medium.yaml

writes one spec and checks it with gpuplat's own compile_sources (exit 1 on any error).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: import this checkout's gpuplat
    sys.path.insert(0, str(ROOT))

from gpuplat.catalog import INSTANCE_TYPES, GpuModel  # noqa: E402
from gpuplat.catalog.fsx import GIB_PER_TIB, STEP_GIB  # noqa: E402
from gpuplat.compile import Compiled, Sources, compile_sources  # noqa: E402
from gpuplat.diagnostics import Level, render_text  # noqa: E402
from gpuplat.model import build_model  # noqa: E402
from gpuplat.plan import stranded_tenants  # noqa: E402

PROVIDERS = ("aws", "kubernetes")
FRACTIONAL_REPLICAS = 10


@dataclass(frozen=True)
class Size:
    name: str
    pools: int
    tenants: int


# "wide": the size the whole-process goal for check and plan is stated at (not in run.py's default).
SIZES: Mapping[str, Size] = {
    s.name: s for s in (Size("small", 10, 20), Size("medium", 50, 100), Size("wide", 120, 400), Size("large", 200, 400))
}

Spec = dict[str, Any]

# ---- pool recipes -------------------------------------------------------------------------
# (instance type, sharing mode, fabric). A pool takes recipe i % len(RECIPES); the mix is
# about a fifth fabric pools, a quarter MIG, the rest spread over the other modes.
_RECIPES: tuple[tuple[str, str, bool], ...] = (
    ("p5.48xlarge", "exclusive", True),
    ("g6e.12xlarge", "time-slicing", False),
    ("p4d.24xlarge", "mig", False),
    ("g6.12xlarge", "mps", False),
    ("g6e.24xlarge", "fractional", False),
    ("p5.48xlarge", "mig", False),
    ("g5.2xlarge", "exclusive", False),
    ("g5.12xlarge", "time-slicing", False),
    ("p6-b200.48xlarge", "mig", False),
    ("p5en.48xlarge", "exclusive", True),
    ("g6.xlarge", "mps", False),
    ("p5.4xlarge", "fractional", False),
    ("p4de.24xlarge", "mig", False),
    ("g6e.48xlarge", "exclusive", True),
    ("g6e.4xlarge", "exclusive", False),
    ("p5en.48xlarge", "mig", False),
    ("g5.xlarge", "time-slicing", False),
    ("p6-b200.48xlarge", "exclusive", True),
    ("g6.48xlarge", "fractional", False),
    ("p4d.24xlarge", "exclusive", True),
    ("p5.4xlarge", "mig", False),
    ("g6e.xlarge", "mps", False),
    ("g5.48xlarge", "exclusive", False),
)

_ALL = ["reserved", "spot", "on-demand"]
# Most pools allow two or three markets, so the 30 / 30 / 40 split always has room; a few
# single-market pools exercise the planner's lower bounds.
_MARKET_MIXES: tuple[list[str], ...] = (
    _ALL,
    ["spot", "on-demand"],
    ["reserved", "on-demand"],
    _ALL,
    ["reserved", "spot"],
    ["on-demand"],
    _ALL,
    ["spot"],
)

_SHARED = frozenset({"mps", "time-slicing"})


def _mig_sharing(gpu: GpuModel, i: int) -> dict[str, Any]:
    """Alternately a named config (all-1g.*, all-balanced) and a custom layout."""
    configs = [name for name, layout in gpu.named_mig_configs().items() if layout and "+" not in name]
    if i % 3 == 0:
        smallest = next(n for n in configs if n.startswith("all-1g."))
        return {"mode": "mig", "profile": smallest}
    if i % 3 == 1:
        return {"mode": "mig", "profile": "all-balanced"}
    by_compute = {p.compute_slices: p.name for p in gpu.mig_profiles if not p.media_extensions}
    return {"mode": "mig", "layout": {by_compute[4]: 1, by_compute[3]: 1}}


def _sharing(mode: str, gpu: GpuModel, i: int) -> dict[str, Any]:
    if mode == "mig":
        return _mig_sharing(gpu, i)
    if mode == "exclusive":
        return {"mode": mode}
    # HAMi has one split count per cluster (GP229): every fractional pool shares one value.
    replicas = FRACTIONAL_REPLICAS if mode == "fractional" else (4, 8, 10, 16, 2)[i % 5]
    sharing: dict[str, Any] = {"mode": mode, "replicas": replicas}
    if i % 7 == 3:
        sharing["overhead"] = 0.12
    return sharing


def _recipe(i: int) -> tuple[str, str, bool]:
    itype, mode, fabric = _RECIPES[i % len(_RECIPES)]
    gpu = INSTANCE_TYPES[itype].gpu
    if mode == "mig" and not gpu.mig_capable:  # the table above never does this; stay valid anyway
        mode = "exclusive"
    if mode == "mps" and not gpu.mps:
        mode = "time-slicing"
    if fabric and not INSTANCE_TYPES[itype].efa_capable:
        fabric = False
    return itype, mode, fabric


# kubernetes: eight rails, each a /12 (room for 16 VFs on each of 65,000 fabric nodes, GP274).
_RAILS = tuple({"pfName": f"ens{r + 1}np0", "subnet": f"10.{16 * r}.0.0/12"} for r in range(8))


def _pool(i: int, provider: str) -> Spec:
    itype_name, mode, fabric = _recipe(i)
    itype = INSTANCE_TYPES[itype_name]
    name = f"pool-{i:03d}"
    biggest = (2, 4, 8, 16)[i % 4] if not fabric else (8, 16, 32)[i % 3]
    pool: Spec = {"name": name}
    if provider == "aws":
        pool["instanceType"] = itype_name
    else:
        pool["gpu"] = {"model": itype.gpu_model, "count": itype.gpu_count}
        pool["nodeSelector"] = {"gpuplat.dev/pool": name, "node.kubernetes.io/instance-type": itype_name}
        if fabric:
            # Every fabric node carries all rails of the fabric (network.fabric.sriov.rails, GP271).
            pool["nicsPerNode"] = len(_RAILS)
    pool["nodes"] = {"min": min(biggest, i % 3), "max": biggest}
    pool["sharing"] = _sharing(mode, itype.gpu, i)
    if fabric:
        pool["fabric"] = True
    if provider == "aws":
        mix = _MARKET_MIXES[i % len(_MARKET_MIXES)]
        # A big pool pinned to one market would pin a big share of the fleet: only small ones are.
        pool["markets"] = list(mix if len(mix) > 1 or itype.gpu_count < 8 else _ALL)
    if i % 4 == 1:
        pool["labels"] = {"workload": ("training", "inference", "notebooks")[i % 3], "bench/index": str(i)}
    if i % 5 == 2:
        pool["taints"] = [{"key": "gpuplat.dev/dedicated", "value": name, "effect": "NoSchedule"}]
    return pool


# ---- tenants ------------------------------------------------------------------------------


def _pool_gpus(pool: Spec) -> int:
    per_node = pool["gpu"]["count"] if "gpu" in pool else INSTANCE_TYPES[pool["instanceType"]].gpu_count
    return int(per_node) * int(pool["nodes"]["max"])


_MAX_FLAVORS = 64


def _tenants(count: int, pools: list[Spec]) -> list[Spec]:
    isolated = [p for p in pools if p["sharing"]["mode"] not in _SHARED]
    fleet = sum(_pool_gpus(p) for p in pools)
    budget = max(1, fleet // max(count, 1))  # keep the sum of quotas under the fleet (no GP350)
    # Hard tenants' guarantees must fit their pools after the other hard tenants' (GP234):
    # each takes its GPUs from what its pools have left, first pool first.
    left = {p["name"]: _pool_gpus(p) for p in pools}
    out: list[Spec] = []
    for i in range(count):
        hard = i % 5 == 0
        candidates = isolated if hard else pools
        tenant: Spec = {"name": f"tenant-{i:04d}"}
        if hard or i % 2 == 1:
            width = 1 + i % 3
        elif len(candidates) * 3 > _MAX_FLAVORS:
            # Without an allow-list a tenant gets a Kueue flavor per pool and market; a
            # ClusterQueue holds 64 per resource (GP233), so wide fleets need a wide allow-list.
            width = _MAX_FLAVORS // 3
        else:
            width = 0
        if width:
            allowed = [candidates[(i * 7 + k * 3) % len(candidates)] for k in range(width)]
            allowed = list({p["name"]: p for p in allowed}.values())
            tenant["pools"] = [p["name"] for p in allowed]
        else:
            allowed = candidates
        capacity = sum(left[p["name"]] if hard else _pool_gpus(p) for p in allowed)
        hard = hard and capacity > 0  # nothing left to guarantee: a soft tenant instead
        tenant["gpus"] = max(1, min(capacity, budget * (1 + i % 3) // 3))
        tenant["priority"] = ("normal", "high", "low", "critical", "normal")[i % 5]
        tenant["isolation"] = "hard" if hard else "soft"
        take = tenant["gpus"] if hard else 0
        for p in allowed:
            used = min(take, left[p["name"]])
            left[p["name"]] -= used
            take -= used
        out.append(tenant)
    return out


# ---- the spec -----------------------------------------------------------------------------


def _storage(provider: str, pools: int) -> Spec:
    # Whole FSx PERSISTENT_2 steps are exact sizes (no GP310 rounding warning).
    hot_tib = STEP_GIB * max(2, pools // 2) / GIB_PER_TIB
    if provider == "aws":
        return {
            "hot": {"capacityTiB": hot_tib, "throughputPerTiB": 1000},
            "warm": {"capacityTiB": 10 * pools},
            "cold": {
                "transitions": [
                    {"afterDays": 30, "storageClass": "GLACIER_IR"},
                    {"afterDays": 180, "storageClass": "DEEP_ARCHIVE"},
                ],
                "expireAfterDays": 1095,
            },
            "qos": {"criticalIopsShare": 0.8},
            "workload": {"checkpointGiB": 2000, "modelGiB": 140},
        }
    return {
        "hot": {"capacityTiB": hot_tib, "storageClass": "weka-hot"},
        "warm": {"capacityTiB": 10 * pools, "storageClass": "ceph-rgw-nvme"},
        "cold": {"storageClass": "ceph-rgw-hdd", "expireAfterDays": 730},
        "qos": {"criticalIopsShare": 0.75},
        "workload": {"checkpointGiB": 1200, "modelGiB": 140},
    }


def generate(pools: int, tenants: int, provider: str = "aws", *, radix: int = 64) -> Spec:
    """A valid spec with `pools` GPU node pools and `tenants` tenants on `provider`."""
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {PROVIDERS}, not {provider!r}")
    pool_list = [_pool(i, provider) for i in range(pools)]
    if provider == "aws":
        target: Spec = {
            "provider": "aws",
            "region": "us-east-1",
            "zones": ["us-east-1a", "us-east-1b", "us-east-1c"],
            "kubernetesVersion": "1.33",
            # Public: a private endpoint stops at preflight unless the stack declares the
            # deploying runner's way in, a stack setting the generated spec has no stack for.
            "endpoint": "public",
        }
        fabric: Spec = {"transport": "efa"}
    else:
        target = {"provider": "kubernetes", "kubernetesVersion": "1.33", "context": "bench-admin@bench"}
        fabric = {"transport": "roce", "sriov": {"vfsPerNic": 16, "rails": list(_RAILS)}}
    spec: Spec = {
        "apiVersion": "gpuplat/v1",
        "kind": "Platform",
        "metadata": {"name": "bench", "tags": {"team": "ml-infra", "cost-center": "4711", "purpose": "benchmark"}},
        "target": target,
        "gpuNodePools": pool_list,
        "network": {
            "fabric": {
                "topology": "fat-tree",
                "tiers": 3,
                "switchRadix": radix,
                "linkGbps": 400,
                "oversubscription": 1,
                **fabric,
            }
        },
        "storage": _storage(provider, pools),
        "autoscaling": {"window": "5m", "scaleUpAbove": 0.8, "scaleDownBelow": 0.3, "cooldown": "10m"},
        "scheduling": {"queueing": "kueue", "topologyAware": True, "gpuScheduler": {"policy": "spread"}},
        "tenants": _tenants(tenants, pool_list),
        "observability": {"retention": "15d"},
    }
    if provider == "aws":
        spec["network"]["vpcCidr"] = "10.40.0.0/16"
        spec["procurement"] = {"spot": 30, "reserved": 30, "onDemand": 40}
    _unstrand(spec)
    return spec


def _unstrand(spec: Spec) -> None:
    """Take each pool that would strand a tenant (GP354: Kueue would never admit its jobs there)
    out of that tenant's allow-list, as the finding advises, until none is left: a quota moved
    by one removal can strand another tenant, so it repeats (twice or three times in practice)."""
    for _ in range(20):
        model = build_model(spec)
        found = stranded_tenants(model)
        if not found:
            return
        allowed = {t.name: list(t.pools) for t in model.tenants}
        for pool, names in found.items():
            for name in names:
                allowed[name] = [p for p in allowed[name] if p != pool]
        moved = {n for names in found.values() for n in names}
        by_name = {p["name"]: p for p in spec["gpuNodePools"]}
        for tenant in spec["tenants"]:
            if tenant["name"] in moved:
                tenant["pools"] = allowed[tenant["name"]]
                usable = [by_name[n] for n in tenant["pools"]]
                if tenant["isolation"] == "hard":
                    usable = [p for p in usable if p["sharing"]["mode"] not in _SHARED]
                # Within what is left (GP284), as _tenants sizes every tenant.
                tenant["gpus"] = max(1, min(tenant["gpus"], sum(_pool_gpus(p) for p in usable)))
    raise ValueError("the generated tenants still strand on some pool after 20 rounds")


def write_spec(spec: Spec, path: Path) -> Path:
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        out.write("# Generated by bench/generate.py; do not edit.\n")
        yaml.dump(spec, out)
    return path


def check_spec(path: Path) -> Compiled:
    """Compile `path` (no overlay) and raise ValueError on any error diagnostic."""
    compiled = compile_sources(Sources(path, None))
    errors = [d for d in compiled.diagnostics if d.level is Level.ERROR]
    if errors or not compiled.ok:
        raise ValueError(f"generated spec {path} does not compile:\n{render_text(errors)}")
    return compiled


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--pools", type=int, help="override the size's pool count")
    parser.add_argument("--tenants", type=int, help="override the size's tenant count")
    parser.add_argument("--provider", choices=PROVIDERS, default="aws")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    size = SIZES[args.size]
    spec = generate(args.pools or size.pools, args.tenants or size.tenants, args.provider)
    path = write_spec(spec, args.output)
    try:
        compiled = check_spec(path)
    except ValueError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    warnings = sum(d.level is Level.WARNING for d in compiled.diagnostics)
    plan = compiled.plan
    assert plan is not None
    fabric = plan.fabric
    print(
        f"{path}: valid, {len(spec['gpuNodePools'])} pools, {len(spec['tenants'])} tenants, "
        f"{plan.fleet_gpus} GPUs, {warnings} warning(s)"
        + (f", fabric {fabric.hosts}/{fabric.max_hosts} host ports, {fabric.switches} switches" if fabric else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
