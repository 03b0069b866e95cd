"""Rules on `gpuNodePools`: names, sizes, and where each provider gets a pool's GPUs from."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from gpuplat.catalog import GPUS, INSTANCE_TYPES, instance_type, reserved_label
from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import (
    Data,
    as_list,
    as_map,
    as_str,
    did_you_mean,
    is_int,
    listing,
    pool_name,
    pools,
    provider,
    repeats,
)


@rule(
    "GP200",
    "pool-names-unique",
    Level.ERROR,
    "A pool's name keys its Karpenter NodePool, labels and overlay merge; two pools cannot share it.",
    fix=(
        "Rename one of the pools (gpuNodePools[].name); an overlay changes a pool by repeating its name, it does "
        "not add a second."
    ),
)
def pool_names_unique(data: Data) -> Iterator[Finding]:
    for i, name, first in repeats(pools(data), "name"):
        yield Finding(
            ("gpuNodePools", i, "name"),
            f"pool name {name} is already used by gpuNodePools[{first}]; pool names must be unique",
        )


@rule(
    "GP208",
    "nodes-min-le-max",
    Level.ERROR,
    "Karpenter and the planner size a pool between nodes.min and nodes.max; min above max is no range.",
    fix="Lower `nodes.min` to at most `nodes.max`, or raise `nodes.max`.",
)
def nodes_min_le_max(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        nodes = as_map(pool.get("nodes"))
        if nodes is None:
            continue
        low, high = nodes.get("min"), nodes.get("max")
        if is_int(low) and is_int(high) and low > high:
            yield Finding(
                ("gpuNodePools", i, "nodes", "min"),
                f"pool {pool_name(pool, i)} has nodes.min {low} above nodes.max {high}; "
                f"use a min of at most {high} or raise max",
            )


@rule(
    "GP209",
    "pool-labels-reserved",
    Level.ERROR,
    "The platform writes gpuplat.dev/*, nvidia.com/gpu.deploy.*, device-plugin.config and mig.config onto "
    "a pool's nodes itself; Karpenter's NodePool CRD rejects karpenter.sh, karpenter.k8s.aws and hostname.",
    source="https://karpenter.sh/docs/concepts/nodepools/",
    fix=(
        "Rename the label into a domain of your own (e.g. example.com/role); the platform sets the reserved ones "
        "itself."
    ),
)
def pool_labels_reserved(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        labels = as_map(pool.get("labels"))
        for key in labels or {}:
            why = reserved_label(str(key))
            if why is not None:
                yield Finding(
                    ("gpuNodePools", i, "labels", key),
                    f"label {key} on pool {pool_name(pool, i)} is reserved: {why}; choose a key in your own domain",
                    at_key=True,
                )


@rule(
    "GP214",
    "instance-type-required",
    Level.ERROR,
    "On provider aws the EC2 instance type is where a pool's GPUs, EFA cards and price come from.",
    fix="Add the pool's `instanceType` (`gpuplat docs catalog` lists the supported ones).",
)
def instance_type_required(data: Data) -> Iterator[Finding]:
    if provider(data) != "aws":
        return
    for i, pool in pools(data):
        if "instanceType" not in pool:
            yield Finding(
                ("gpuNodePools", i),
                f"pool {pool_name(pool, i)} needs an instanceType on provider aws, e.g. p5.48xlarge",
                at_key=True,
            )


@rule(
    "GP215",
    "instance-type-in-catalog",
    Level.ERROR,
    "Only catalog instance types have known GPUs, EFA cards and prices (EC2 DescribeInstanceTypes via Karpenter).",
    source="https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html",
    fix="Use an instance type of the catalog (`gpuplat docs catalog`; the message suggests the nearest name).",
)
def instance_type_in_catalog(data: Data) -> Iterator[Finding]:
    if provider(data) != "aws":
        return
    for i, pool in pools(data):
        name = as_str(pool.get("instanceType"))
        if name is None or not name or instance_type(name) is not None:
            continue
        close = did_you_mean(name, INSTANCE_TYPES)
        hint = f"did you mean {close}?" if close else f"the catalog has {listing(INSTANCE_TYPES)}"
        yield Finding(
            ("gpuNodePools", i, "instanceType"),
            f"{name} is not a GPU instance type in the catalog ({hint})",
        )


@rule(
    "GP216",
    "kubernetes-gpu-required",
    Level.ERROR,
    "An existing cluster has no instance type to read GPUs from: the pool must name its GPU model and count.",
    fix="Add the pool's `gpu: {model: ..., count: ...}`: the GPU model and how many each node has.",
)
def kubernetes_gpu_required(data: Data) -> Iterator[Finding]:
    if provider(data) != "kubernetes":
        return
    for i, pool in pools(data):
        if "gpu" not in pool:
            yield Finding(
                ("gpuNodePools", i),
                f"pool {pool_name(pool, i)} needs gpu: {{model, count}} on provider kubernetes, "
                f"e.g. {{model: H100-SXM-80GB, count: 8}}",
                at_key=True,
            )


@rule(
    "GP217",
    "gpu-model-in-catalog",
    Level.ERROR,
    "MIG profiles, memory and sharing support come from the catalog's GPU table (gpu-operator MIG config).",
    source="https://docs.nvidia.com/datacenter/tesla/mig-user-guide/",
    fix="Use a GPU model of the catalog (`gpuplat docs catalog`; the message suggests the nearest name).",
)
def gpu_model_in_catalog(data: Data) -> Iterator[Finding]:
    if provider(data) != "kubernetes":
        return
    for i, pool in pools(data):
        gpu = as_map(pool.get("gpu"))
        name = as_str(gpu.get("model")) if gpu is not None else None
        if name is None or not name or name in GPUS:
            continue
        close = did_you_mean(name, GPUS)
        hint = f"did you mean {close}? " if close else ""
        yield Finding(
            ("gpuNodePools", i, "gpu", "model"),
            f"{name} is not a GPU model in the catalog ({hint}valid: {listing(GPUS)})",
        )


@rule(
    "GP218",
    "kubernetes-node-selector-required",
    Level.ERROR,
    "On an existing cluster a pool is the set of nodes its nodeSelector matches; an empty selector matches all.",
    fix="Add a non-empty `nodeSelector` matching the labels your pool's GPU nodes carry.",
)
def kubernetes_node_selector_required(data: Data) -> Iterator[Finding]:
    if provider(data) != "kubernetes":
        return
    for i, pool in pools(data):
        selector = pool.get("nodeSelector")
        if selector is None:
            yield Finding(
                ("gpuNodePools", i),
                f"pool {pool_name(pool, i)} needs a nodeSelector on provider kubernetes to find its nodes, "
                f"e.g. {{gpuplat.dev/pool: {pool_name(pool, i)}}}",
                at_key=True,
            )
        elif selector == {}:
            yield Finding(
                ("gpuNodePools", i, "nodeSelector"),
                f"the empty nodeSelector of pool {pool_name(pool, i)} would select every node of the cluster; "
                f"name at least one label",
            )


@dataclass(frozen=True)
class _Selector:
    index: int
    pool: str
    labels: dict[str, str]


def _selectors(data: Data) -> list[_Selector]:
    """Provider kubernetes: each pool's non-empty nodeSelector (GP218 reports missing ones)."""
    if provider(data) != "kubernetes":
        return []
    result: list[_Selector] = []
    for i, pool in pools(data):
        raw = as_map(pool.get("nodeSelector"))
        if raw:
            result.append(_Selector(i, pool_name(pool, i), {str(k): str(v) for k, v in raw.items()}))
    return result


def _selector_pairs(data: Data) -> Iterator[tuple[_Selector, _Selector]]:
    """Every pair of selectors once, the earlier pool first, except pairs that a key every
    selector has keeps apart (different values: no node matches both, and neither contains
    the other). Checking such pairs label by label made these rules most of `check` on a
    200-pool kubernetes spec, whose pools all carry their own `gpuplat.dev/pool`-like key."""
    selectors = _selectors(data)
    shared = set(selectors[0].labels) if selectors else set[str]()
    for selector in selectors[1:]:
        shared &= set(selector.labels)

    def distinct(key: str) -> int:
        return len({s.labels[key] for s in selectors})

    key = max(sorted(shared), key=distinct, default=None)
    groups: dict[str, list[int]] = {}
    for n, selector in enumerate(selectors):
        groups.setdefault(selector.labels[key] if key is not None else "", []).append(n)
    pairs = sorted((n, m) for members in groups.values() for i, n in enumerate(members) for m in members[:i])
    for n, m in pairs:
        yield selectors[m], selectors[n]


def _show(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in sorted(labels.items())) + "}"


_SEPARATE = "give both selectors one key with different values, e.g. gpuplat.dev/pool: <pool name>"


@rule(
    "GP235",
    "pool-selectors-overlap",
    Level.ERROR,
    "A node two pools' nodeSelectors both match is in both pools: their labelers fight over its labels "
    "(mig.config set and unset) and Kueue counts its GPUs in two flavors.",
    fix=(
        "Make the pools' `nodeSelector`s exclusive: a key both name with different values (e.g. gpuplat.dev/pool: a"
        " / b)."
    ),
)
def pool_selectors_overlap(data: Data) -> Iterator[Finding]:
    for first, second in _selector_pairs(data):
        if first.labels.items() <= second.labels.items():
            wide, narrow = first, second
        elif second.labels.items() <= first.labels.items():
            wide, narrow = second, first
        else:
            continue
        if wide.labels == narrow.labels:
            what = f"pools {first.pool} and {second.pool} select the same nodes {_show(wide.labels)}"
        else:
            what = (
                f"every node pool {narrow.pool} selects {_show(narrow.labels)} is also in pool {wide.pool}, "
                f"whose selector {_show(wide.labels)} it contains"
            )
        yield Finding(
            ("gpuNodePools", second.index, "nodeSelector"),
            f"{what}: the two pool labelers would fight over those nodes' labels and Kueue would count them "
            f"in both pools; {_SEPARATE}",
        )


@rule(
    "GP304",
    "pool-selectors-may-overlap",
    Level.WARNING,
    "Two nodeSelectors with no common key of different values both match a node carrying both label sets; "
    "such a node would be in two pools (GP235).",
    fix="Add a key both `nodeSelector`s name with different values, so no node matches both.",
)
def pool_selectors_may_overlap(data: Data) -> Iterator[Finding]:
    for first, second in _selector_pairs(data):
        a, b = first.labels, second.labels
        if a.items() <= b.items() or b.items() <= a.items():
            continue  # GP235
        if any(a[key] != b[key] for key in a.keys() & b.keys()):
            continue  # one key with different values: no node matches both
        yield Finding(
            ("gpuNodePools", second.index, "nodeSelector"),
            f"pools {first.pool} {_show(a)} and {second.pool} {_show(b)} do not exclude each other: a node "
            f"labelled {_show({**a, **b})} would be in both pools; {_SEPARATE}",
        )


@rule(
    "GP219",
    "pool-fields-match-provider",
    Level.ERROR,
    "aws pools take their GPUs from the instance type; kubernetes pools from gpu/nodeSelector; mixing contradicts.",
    fix=(
        "Keep only the fields of the target's provider: `instanceType` on aws; `gpu`, `nodeSelector` and "
        "`nicsPerNode` on kubernetes."
    ),
)
def pool_fields_match_provider(data: Data) -> Iterator[Finding]:
    kind = provider(data)
    foreign = {"aws": ("gpu", "nodeSelector", "nicsPerNode"), "kubernetes": ("instanceType",)}.get(kind or "", ())
    for i, pool in pools(data):
        for key in foreign:
            if key not in pool:
                continue
            if kind == "aws":
                why = "on provider aws the instanceType determines GPUs, nodes and NICs"
            else:
                why = "on provider kubernetes give gpu: {model, count} and a nodeSelector instead"
            yield Finding(
                ("gpuNodePools", i, key),
                f"{key} on pool {pool_name(pool, i)} does not apply to provider {kind}: {why}",
                at_key=True,
            )


@rule(
    "GP226",
    "pool-taints-unique",
    Level.ERROR,
    "The Kubernetes API rejects a node whose taints repeat a key/effect pair.",
    source="https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/",
    fix="Keep one taint per key and effect in the pool's `taints`.",
)
def pool_taints_unique(data: Data) -> Iterator[Finding]:
    for i, pool in pools(data):
        seen: set[tuple[str, str]] = set()
        for j, raw in enumerate(as_list(pool.get("taints"))):
            taint = as_map(raw)
            if taint is None:
                continue
            key, effect = as_str(taint.get("key")), as_str(taint.get("effect"))
            if key is None or effect is None:
                continue
            if (key, effect) in seen:
                yield Finding(
                    ("gpuNodePools", i, "taints", j),
                    f"pool {pool_name(pool, i)} has taint {key}:{effect} twice; a key may appear once per effect",
                )
            seen.add((key, effect))
