"""Generated platform specs that the schema and the semantic rules are meant to accept.

One generator drives two callers: the property test over every command
(tests/test_generated_specs.py, through hypothesis, which shrinks a failure to a small spec) and
the 10^5-input fuzz run of bench/fuzz.py (through `random.Random`, which is a hundred times
cheaper per draw). Both hand it a `Draw`, so they explore the same space.

The specs cover what the components branch on: both providers; three AWS regions priced from
their own lists and Kubernetes 1.33 to 1.36; every sharing mode on a GPU that
has it (MIG named configs and custom layouts, MPS, time-slicing, fractional with HAMi's one split
count); fabric pools on EFA types (aws) or SR-IOV rails (kubernetes); every market mix with
procurement shares only in markets some pool allows; capacity blocks; hard and soft tenants with
and without allow-lists; any subset of the storage tiers with lifecycle rules; workloads;
acknowledgements; labels, taints and tags; and hostile text in every free-form string field
(target.context, acknowledgement reasons, capacity-block tags). "Meant to": the generator does
not re-implement every rule, so the callers keep only what `check` accepts and count the rest.
"""

from __future__ import annotations

import random
from typing import Any, Protocol, TypeVar

from gpuplat.catalog import INSTANCE_TYPES
from gpuplat.catalog.capacity_blocks import BLOCKS_ONLY
from gpuplat.catalog.gpus import GPUS, GpuModel

T = TypeVar("T")
Spec = dict[str, Any]


class Draw(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...
    def choice(self, options: list[T] | tuple[T, ...]) -> T: ...
    def text(self) -> str: ...


# Strings that broke or could break a serializer, a template or a terminal: YAML indicators,
# template delimiters, line and paragraph separators, NEL, BOM, bidi overrides, escapes, control
# characters, astral characters, very long text. (No lone surrogates: those are refused by check,
# the fuzz run's byte-level inputs carry them.)
HOSTILE = (
    "a\nb",
    "trailing\n",
    "  padded  ",
    "${pulumi.stack}",
    "{{ .Values.x }}",
    '{{- fail "x" }}',
    "'\"`",
    "back\\slash\\",
    "nel\u0085line",
    "line\u2028sep\u2029",
    "\ufeffbom",
    "rtl\u202eevil",
    "\x07bell\x1b[31mred",
    "tab\tand\rcr",
    "# not a comment",
    ": colon",
    "- dash",
    "&anchor *alias",
    "!!binary x",
    "%YAML 1.2",
    "null",
    "~",
    "yes",
    "0x1F",
    "1e309",
    "<script>alert(1)</script>",
    "\U0001f680" * 40,
    "x" * 1000,
    "z\u0000nul",
)


def hostile_text(draw: Draw) -> str:
    return draw.choice(HOSTILE) if draw.integer(0, 3) else draw.text()


class RandomDraw:
    """A Draw from a seeded `random.Random` (the fuzz run)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def choice(self, options: list[T] | tuple[T, ...]) -> T:
        return options[self.rng.randrange(len(options))]

    def text(self) -> str:
        # Any code point but surrogates, biased towards the low planes where the syntax lives.
        size = self.rng.randint(1, 24)
        points = (self.rng.choice((self.rng.randint(1, 0x7F), self.rng.randint(0x80, 0xD7FF))) for _ in range(size))
        return "".join(chr(p) for p in points)


# ---- pools ------------------------------------------------------------------------------------

_AWS_TYPES = tuple(sorted(INSTANCE_TYPES))
_K8S_GPUS = tuple(sorted(GPUS))
_MARKETS = ("reserved", "spot", "on-demand")
_MODES = ("exclusive", "mig", "mps", "time-slicing", "fractional")
_RAIL_COUNT = 2


def _sharing(draw: Draw, gpu: GpuModel, fractional_replicas: int) -> dict[str, Any]:
    mode = draw.choice(_MODES)
    if mode == "mig" and not gpu.mig_capable:
        mode = "exclusive"
    if mode == "mps" and not gpu.mps:
        mode = "time-slicing"
    sharing: dict[str, Any] = {"mode": mode}
    if mode == "mig":
        configs = [name for name, layout in gpu.named_mig_configs().items() if layout]
        if draw.integer(0, 2):
            sharing["profile"] = draw.choice(sorted(configs))
        else:
            # A custom layout: one instance of each of two profiles that together fit 7 slices.
            by_compute = {p.compute_slices: p.name for p in gpu.mig_profiles if not p.media_extensions}
            pair = draw.choice([(4, 3), (3, 2), (2, 1), (3, 3), (1, 1)])
            layout: dict[str, int] = {}
            for slices in pair:
                if slices in by_compute:
                    layout[by_compute[slices]] = layout.get(by_compute[slices], 0) + 1
            sharing["layout"] = layout or {by_compute[min(by_compute)]: 1}
    elif mode in ("mps", "time-slicing"):
        sharing["replicas"] = draw.integer(2, 48)
    elif mode == "fractional":
        sharing["replicas"] = fractional_replicas  # HAMi has one split count per cluster
    if mode != "exclusive" and draw.integer(0, 4) == 0:
        sharing["overhead"] = draw.choice([0, 0.01, 0.12, 0.5])
    return sharing


def _pool(draw: Draw, i: int, provider: str, fractional_replicas: int) -> Spec:
    name = f"p{i}-" + draw.choice(["train", "infer", "dev", "nb", "x"])
    pool: Spec = {"name": name}
    if provider == "aws":
        itype = INSTANCE_TYPES[draw.choice(_AWS_TYPES)]
        if itype.name in BLOCKS_ONLY:
            itype = INSTANCE_TYPES["p5.48xlarge"]
        pool["instanceType"] = itype.name
        gpu, efa = itype.gpu, itype.efa_capable
    else:
        gpu = GPUS[draw.choice(_K8S_GPUS)]
        pool["gpu"] = {"model": gpu.name, "count": draw.choice([1, 2, 4, 8, 16])}
        pool["nodeSelector"] = {"gpuplat.dev/pool": name}
        efa = True  # on kubernetes the fabric is RoCE over the rails, any GPU may join
    top = draw.choice([1, 2, 3, 4, 8, 16, 32])
    pool["nodes"] = {"min": draw.integer(0, min(top, 2)), "max": top}
    pool["sharing"] = _sharing(draw, gpu, fractional_replicas)
    if efa and draw.integer(0, 2) == 0:
        pool["fabric"] = True
        if provider == "kubernetes":
            pool["nicsPerNode"] = _RAIL_COUNT
    if provider == "aws":
        count = draw.integer(1, 3)
        start = draw.integer(0, 2)
        pool["markets"] = [_MARKETS[(start + k) % 3] for k in range(count)]
    if draw.integer(0, 3) == 0:
        pool["labels"] = {"workload": draw.choice(["training", "inference", "a.b_c-d", ""]), "team/x": "y"}
    if draw.integer(0, 3) == 0:
        effect = draw.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"])
        pool["taints"] = [{"key": "gpuplat.dev/dedicated", "value": name, "effect": effect}]
    return pool


def _capacity_block(draw: Draw, pool: Spec) -> None:
    """A pool that launches into Capacity Blocks an operator bought, selected by tags."""
    if pool.get("instanceType") != "p5.48xlarge" or "reserved" not in pool.get("markets", ()):
        return
    tags = {draw.choice(["gpuplat-pool", "owner", "k"]): hostile_text(draw).replace("\x00", "") or "v"}
    pool["reservation"] = {"kind": "capacity-block", "tags": tags}


# ---- tenants ----------------------------------------------------------------------------------


def _pool_gpus(pool: Spec) -> int:
    per_node = pool["gpu"]["count"] if "gpu" in pool else INSTANCE_TYPES[pool["instanceType"]].gpu_count
    return int(per_node) * int(pool["nodes"]["max"])


def _tenants(draw: Draw, pools: list[Spec]) -> list[Spec]:
    isolated = [p for p in pools if p["sharing"]["mode"] not in ("mps", "time-slicing")]
    left = {p["name"]: _pool_gpus(p) for p in pools}
    out: list[Spec] = []
    for i in range(draw.integer(0, 5)):
        hard = bool(isolated) and draw.integer(0, 2) == 0
        candidates = isolated if hard else pools
        tenant: Spec = {"name": f"t{i}-" + draw.choice(["research", "product", "a", "z9"])}
        if draw.integer(0, 1):
            width = draw.integer(1, len(candidates))
            allowed = [candidates[(i + k) % len(candidates)] for k in range(width)]
            tenant["pools"] = sorted({p["name"] for p in allowed})
            allowed = [p for p in candidates if p["name"] in tenant["pools"]]
        else:
            allowed = candidates
        room = sum(left[p["name"]] for p in allowed) if hard else sum(_pool_gpus(p) for p in allowed)
        tenant["gpus"] = draw.integer(0, max(0, room // 2))
        tenant["priority"] = draw.choice(["low", "normal", "high", "critical"])
        tenant["isolation"] = "hard" if hard else "soft"
        take = tenant["gpus"] if hard else 0
        for p in allowed:  # a hard tenant's guarantee comes out of its pools (GP234)
            used = min(take, left[p["name"]])
            left[p["name"]] -= used
            take -= used
        out.append(tenant)
    return out


# ---- the rest of the spec ---------------------------------------------------------------------


def _storage(draw: Draw, provider: str) -> Spec:
    storage: Spec = {}
    if draw.integer(0, 2):
        hot: Spec = {"capacityTiB": draw.choice([1.2, 2.4, 4.8, 48, 100])}
        if provider == "aws":
            hot["throughputPerTiB"] = draw.choice([125, 250, 500, 1000])
        else:
            hot["storageClass"] = "fast-nvme"
        storage["hot"] = hot
    if draw.integer(0, 2):
        warm: Spec = {"capacityTiB": draw.choice([1, 10, 200])}
        if provider == "kubernetes":
            warm["storageClass"] = "ceph-rgw"
        storage["warm"] = warm
    if draw.integer(0, 2):
        cold: Spec = {}
        transitions = draw.choice(
            [[], [{"afterDays": 30, "storageClass": "GLACIER_IR"}],
             [{"afterDays": 30, "storageClass": "STANDARD_IA"}, {"afterDays": 120, "storageClass": "DEEP_ARCHIVE"}]]
        )  # fmt: skip
        if transitions and provider == "aws":
            cold["transitions"] = transitions
        if draw.integer(0, 1):
            cold["expireAfterDays"] = draw.choice([400, 1095, 2147483647])
        if provider == "kubernetes":
            cold["storageClass"] = "ceph-cold"
        storage["cold"] = cold
    if storage.get("hot", {}).get("capacityTiB", 0) >= 48 and draw.integer(0, 1):
        # A standard file system of 1200 GiB at 125 MB/s/TiB must fit under the share (GP257).
        storage["qos"] = {"criticalIopsShare": draw.choice([0.5, 0.75, 0.8])}
    return storage


def _fabric(draw: Draw, provider: str) -> Spec:
    fabric: Spec = {
        "tiers": draw.choice([2, 3]),
        "switchRadix": draw.choice([16, 64, 64]),
        "linkGbps": draw.choice([100, 200, 400, 800]),
        "oversubscription": draw.choice([1, 2, 3]),
        "transport": "efa" if provider == "aws" else draw.choice(["roce", "infiniband"]),
    }
    if provider == "kubernetes" and fabric["transport"] == "roce":
        rails = [{"pfName": f"ens{r + 1}np0", "subnet": f"10.{16 * (r + 1)}.0.0/12"} for r in range(_RAIL_COUNT)]
        fabric["sriov"] = {"vfsPerNic": draw.choice([2, 8, 16]), "rails": rails}
    return fabric


def _procurement(draw: Draw, pools: list[Spec]) -> Spec:
    """Shares the pools can meet in whole nodes: each pool's GPUs at max go to one market it
    allows, and the mix is what that assignment buys (largest remainder to 100)."""
    keys = {"spot": "spot", "reserved": "reserved", "on-demand": "onDemand"}
    gpus = dict.fromkeys(_MARKETS, 0)
    for pool in pools:
        gpus[draw.choice(pool["markets"])] += _pool_gpus(pool)
    total = sum(gpus.values()) or 1
    exact = {m: 100 * g / total for m, g in gpus.items()}
    shares = {m: int(v) for m, v in exact.items()}
    for m in sorted(_MARKETS, key=lambda m: shares[m] - exact[m])[: 100 - sum(shares.values())]:
        shares[m] += 1
    return {keys[m]: shares[m] for m in _MARKETS}


def _workloads(draw: Draw, pools: list[Spec]) -> list[Spec]:
    pool = draw.choice(pools)
    kind = draw.choice(["training", "inference"])
    workload: Spec = {
        "name": "w-" + kind,
        "kind": kind,
        "pool": pool["name"],
        "gpus": 1,
        "parameters": draw.choice([1e7, 3e7]),
        "precision": draw.choice(["bf16", "fp32", "amp"]) if kind == "training" else "bf16",
        "layers": 12,
        "hidden": 768,
        "heads": 12,
    }
    if kind == "training":
        workload["sequenceLength"] = 512
        workload["gradientCheckpointing"] = True
    else:
        workload["contextLength"] = 512
    return [workload]


def generate_spec(draw: Draw) -> Spec:
    """A spec meant to be valid (see the module's docstring)."""
    provider = draw.choice(["aws", "kubernetes"])
    fractional_replicas = draw.integer(2, 16)
    pools = [_pool(draw, i, provider, fractional_replicas) for i in range(draw.integer(1, 4))]
    target: Spec = {"provider": provider, "kubernetesVersion": draw.choice(["1.33", "1.34", "1.35", "1.36"])}
    if provider == "aws":
        # Regions priced from their own list (and one whose offerings differ: no g6 or p5 in Ireland).
        region = draw.choice(["us-east-1", "us-west-2", "eu-west-1"])
        target["region"] = region
        target["zones"] = [f"{region}{z}" for z in "abc"][: draw.integer(2, 3)]
        target["endpoint"] = "public"
        if draw.integer(0, 3) == 0:
            _capacity_block(draw, pools[0])
    else:
        target["context"] = hostile_text(draw).replace("\x00", "") or "ctx"
    spec: Spec = {
        "apiVersion": "gpuplat/v1",
        "kind": "Platform",
        "metadata": {
            "name": draw.choice(["atlas", "a", "gpu-platform-20char"]),
            "tags": {"team": draw.choice(["ml-infra", "a b", "x=y+z@q"]), "cost-center": "4711"},
        },
        "target": target,
        "gpuNodePools": pools,
    }
    if any(p.get("fabric") for p in pools) or draw.integer(0, 3) == 0:
        spec["network"] = {"fabric": _fabric(draw, provider)}
    if provider == "aws" and draw.integer(0, 1):
        spec.setdefault("network", {})["vpcCidr"] = draw.choice(["10.40.0.0/16", "172.16.0.0/16"])
    storage = _storage(draw, provider)
    if storage:
        spec["storage"] = storage
    if provider == "aws" and (draw.integer(0, 2) or any("on-demand" not in p["markets"] for p in pools)):
        spec["procurement"] = _procurement(draw, pools)
    if draw.integer(0, 1):
        up = draw.choice([0.6, 0.8, 0.9])
        spec["autoscaling"] = {
            "window": draw.choice(["1m", "5m", "300s"]),
            "scaleUpAbove": up,
            "scaleDownBelow": draw.choice([0.1, 0.3, 0.5]),
            "cooldown": draw.choice(["10m", "15m", "1h"]),
        }
    if draw.integer(0, 1):
        spec["scheduling"] = {
            "queueing": "kueue",
            "topologyAware": draw.choice([True, False]),
            "gpuScheduler": {"policy": draw.choice(["spread", "binpack"])},
        }
    tenants = _tenants(draw, pools)
    if tenants:
        spec["tenants"] = tenants
    if draw.integer(0, 1):
        spec["observability"] = {"retention": draw.choice(["15d", "1w", "48h", "1y"])}
    if draw.integer(0, 4) == 0:
        spec["workloads"] = _workloads(draw, pools)
    if draw.integer(0, 2) == 0:
        spec["acknowledge"] = {
            "GP302": {"reason": "why: " + hostile_text(draw), "paths": ["$.gpuNodePools[0].sharing"]}
        }
    return spec
