"""The platform as a diagram: cluster, pools, fabric, storage tiers and tenants.

Pure (no pulumi): built from the model and the plan, so the picture shows the same numbers as
`gpuplat plan` (nodes per market, switch counts, the FSx size AWS will actually create). One
graph feeds both renderings: mermaid (`--format mermaid`, also embedded in the preview's
pull-request comment) and JSON `{"nodes": [...], "edges": [...]}`.

Mermaid ids are derived from names but restricted to [A-Za-z0-9_] and prefixed by kind, so a
pool called `end` or `x-ray` cannot collide with mermaid keywords or edge syntax. Labels are
always quoted, and characters mermaid would read as syntax inside them are written as its
`#code;` entities.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpuplat.model import MARKET_ORDER, GpuNodePool, Platform, Provider, SharingMode
from gpuplat.plan.types import Plan

_GROUPS = (
    ("pool", "grp_pools", "GPU node pools"),
    ("storage", "grp_storage", "storage tiers"),
    ("tenant", "grp_tenants", "tenants"),
)


@dataclass(frozen=True)
class Node:
    id: str
    kind: str  # cluster | pool | fabric | storage | tenant
    name: str
    lines: tuple[str, ...]  # label, one entry per line
    data: Mapping[str, Any] = field(default_factory=lambda: {})  # the label's numbers, for JSON readers

    def to_json(self) -> dict[str, Any]:
        label = "\n".join(self.lines)
        return {"id": self.id, "kind": self.kind, "name": self.name, "label": label, "data": dict(self.data)}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    kind: str  # runs | fabric | storage | export | may-use
    label: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"from": self.source, "to": self.target, "kind": self.kind, "label": self.label}


@dataclass(frozen=True)
class Graph:
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]

    def to_json(self) -> dict[str, Any]:
        return {"nodes": [n.to_json() for n in self.nodes], "edges": [e.to_json() for e in self.edges]}


class _Ids:
    """Mermaid-safe, unique ids: `pool_dev`, and `pool_a_b_2` when `a-b` and `a_b` both exist."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def make(self, kind: str, name: str) -> str:
        base = f"{kind}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
        candidate, n = base, 2
        while candidate in self._used:
            candidate, n = f"{base}_{n}", n + 1
        self._used.add(candidate)
        return candidate


def _sharing(pool: GpuNodePool) -> str:
    sharing = pool.sharing
    if sharing.mode is SharingMode.MIG:
        if sharing.layout:
            return "MIG " + ", ".join(f"{p} x{n}" for p, n in sharing.layout.items())
        return f"MIG {sharing.profile}"
    if sharing.mode is SharingMode.EXCLUSIVE:
        return "exclusive"
    return f"{sharing.mode.value} x{sharing.replicas}"


def _pool_lines(model: Platform, plan: Plan, pool: GpuNodePool) -> tuple[str, ...]:
    hardware = f"{pool.gpus_per_node}x {pool.gpu_model}"
    if pool.instance_type:
        hardware = f"{pool.instance_type} · {hardware}"
    lines = [pool.name, hardware, f"nodes {pool.nodes.min}-{pool.nodes.max} · {_sharing(pool)}"]
    if model.target.provider is Provider.AWS:
        planned = plan.pool(pool.name)
        lines.append(" · ".join(f"{m.value} {planned.share(m).nodes}" for m in MARKET_ORDER if m in pool.markets))
    elif pool.node_selector:
        lines.append(", ".join(f"{k}={v}" for k, v in sorted(pool.node_selector.items())))
    return tuple(lines)


def _cluster_node(model: Platform) -> Node:
    target = model.target
    if target.provider is Provider.AWS:
        lines = (f"EKS {model.metadata.name}", f"aws {target.region} · {', '.join(target.zones)}")
    else:
        lines = (f"cluster {model.metadata.name}", f"kubernetes · context {target.context or 'default'}")
    return Node("cluster", "cluster", model.metadata.name, (*lines, f"Kubernetes {target.kubernetes_version}"))


def _storage_nodes(model: Platform, plan: Plan, ids: _Ids) -> list[Node]:
    storage, aws = model.storage, model.target.provider is Provider.AWS
    nodes: list[Node] = []
    hot, warm = plan.storage.hot, plan.storage.warm
    if storage.hot is not None and hot is not None:
        kind = "FSx for Lustre" if aws else f"StorageClass {storage.hot.storage_class}"
        lines = ["hot", kind, f"{hot.capacity_gib} GiB" if aws else f"{hot.requested_tib:g} TiB"]
        if hot.throughput_per_tib:
            lines.append(f"{hot.throughput_per_tib} MB/s per TiB")
        data = {"capacityGiB": hot.capacity_gib, "throughputPerTiB": hot.throughput_per_tib}
        nodes.append(Node(ids.make("storage", "hot"), "storage", "hot", tuple(lines), data))
        std = hot.standard
        if std is not None:
            # The second file system the plan adds so critical work keeps its throughput share.
            share = hot.critical_throughput_share
            lines = ["hot (standard)", kind, f"{std.capacity_gib} GiB", f"{std.throughput_per_tib} MB/s per TiB"]
            lines.append(f"tenants {', '.join(hot.standard_tenants)}")
            data = {
                "capacityGiB": std.capacity_gib,
                "throughputPerTiB": std.throughput_per_tib,
                "tenants": list(hot.standard_tenants),
                "criticalThroughputShare": share,
            }
            nodes.append(Node(ids.make("storage", "hot-standard"), "storage", "hot-standard", tuple(lines), data))
    if storage.warm is not None and warm is not None:
        kind = "S3 Express One Zone" if aws else f"StorageClass {storage.warm.storage_class}"
        zone = plan.fabric_zone
        where = f" · {zone}" if zone else ""
        nodes.append(
            Node(
                ids.make("storage", "warm"),
                "storage",
                "warm",
                ("warm", kind, f"{warm.capacity_tib:g} TiB{where}"),
                {"capacityTiB": warm.capacity_tib, "zone": zone},
            )
        )
    if storage.cold is not None:
        kind = "S3 with lifecycle" if aws else f"StorageClass {storage.cold.storage_class}"
        steps = " → ".join(
            s.storage_class if s.after_days == 0 else f"{s.storage_class} {s.after_days}d"
            for s in plan.storage.cold_lifecycle
        )
        nodes.append(Node(ids.make("storage", "cold"), "storage", "cold", tuple(x for x in ("cold", kind, steps) if x)))
    return nodes


_TRANSPORTS = {"efa": "EFA", "roce": "RoCE", "infiniband": "InfiniBand"}


def platform_graph(model: Platform, plan: Plan) -> Graph:
    ids = _Ids()
    cluster = _cluster_node(model)
    nodes: list[Node] = [cluster]
    edges: list[Edge] = []
    pool_ids: dict[str, str] = {}
    for pool in model.pools:
        data: dict[str, Any] = {
            "instanceType": pool.instance_type,
            "gpuModel": pool.gpu_model,
            "gpusPerNode": pool.gpus_per_node,
            "nodes": {"min": pool.nodes.min, "max": pool.nodes.max},
            "sharing": pool.sharing.mode.value,
            "markets": {m.procurement_key: plan.pool(pool.name).share(m).nodes for m in pool.markets},
        }
        node = Node(ids.make("pool", pool.name), "pool", pool.name, _pool_lines(model, plan, pool), data)
        pool_ids[pool.name] = node.id
        nodes.append(node)
        edges.append(Edge(cluster.id, node.id, "runs"))
    fabric = plan.fabric
    if fabric is not None and model.network.fabric is not None:
        spec = model.network.fabric
        head = (
            f"{spec.topology} · {fabric.tiers} tiers · radix {fabric.radix} · {fabric.link_gbps} Gbps {spec.transport}"
        )
        parts = ((fabric.leaves, "leaf", "leaves"), (fabric.spines, "spine", "spines"), (fabric.cores, "core", "cores"))
        switches = " · ".join(f"{n} {one if n == 1 else many}" for n, one, many in parts)
        counts = {"leaves": fabric.leaves, "spines": fabric.spines, "cores": fabric.cores, "hosts": fabric.hosts}
        nodes.append(Node("fabric", "fabric", "fabric", (head, switches, f"{fabric.hosts} host ports"), counts))
        for name in fabric.pools or tuple(p.name for p in model.fabric_pools):
            if name in pool_ids:
                edges.append(Edge(pool_ids[name], "fabric", "fabric", _TRANSPORTS.get(spec.transport, spec.transport)))
    storage = _storage_nodes(model, plan, ids)
    nodes.extend(storage)
    tier = {n.name: n.id for n in storage}
    edges.extend(Edge(cluster.id, n.id, "storage") for n in storage)
    if model.target.provider is Provider.AWS and "cold" in tier:
        edges.extend(Edge(tier[t], tier["cold"], "export", "export") for t in ("hot", "hot-standard") if t in tier)
    for tenant in model.tenants:
        node = Node(
            ids.make("tenant", tenant.name),
            "tenant",
            tenant.name,
            (tenant.name, f"{tenant.gpus} GPUs · {tenant.priority} · {tenant.isolation}"),
            {
                "gpus": tenant.gpus,
                "priority": tenant.priority,
                "isolation": tenant.isolation,
                "pools": list(tenant.pools),
            },
        )
        nodes.append(node)
        edges.extend(Edge(node.id, pool_ids[p], "may-use") for p in tenant.pools if p in pool_ids)
    return Graph(tuple(nodes), tuple(edges))


_ENTITIES = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;", "[": "#91;", "]": "#93;", "(": "#40;",
             ")": "#41;", "{": "#123;", "}": "#125;", "|": "#124;"}  # fmt: skip


def mermaid_text(text: str) -> str:
    """A label line with every character mermaid could parse written as an entity."""
    escaped = text.replace("#", "#35;")
    for char, entity in _ENTITIES.items():
        escaped = escaped.replace(char, entity)
    return escaped


def _label(lines: Sequence[str]) -> str:
    return '"' + "<br/>".join(mermaid_text(line) for line in lines) + '"'


_ARROWS = {"runs": "-->", "fabric": "---", "storage": "-->", "export": "-.->", "may-use": "-.->"}


def render_mermaid(graph: Graph) -> str:
    out = ["flowchart LR\n"]
    shapes = {"cluster": ("[", "]"), "fabric": ("{{", "}}"), "storage": ("[(", ")]"), "tenant": ("([", "])")}
    by_kind = {
        kind: [n for n in graph.nodes if n.kind == kind] for kind in ("cluster", "pool", "fabric", "storage", "tenant")
    }

    def node(n: Node, pad: str) -> str:
        left, right = shapes.get(n.kind, ("[", "]"))
        return f"{pad}{n.id}{left}{_label(n.lines)}{right}\n"

    out.extend(node(n, "  ") for n in by_kind["cluster"] + by_kind["fabric"])
    for kind, group, title in _GROUPS:
        if by_kind[kind]:
            out.append(f"  subgraph {group}[{_label([title])}]\n")
            out.extend(node(n, "    ") for n in by_kind[kind])
            out.append("  end\n")
    for e in graph.edges:
        arrow = _ARROWS.get(e.kind, "-->")
        label = f'|"{mermaid_text(e.label)}"|' if e.label else ""
        out.append(f"  {e.source} {arrow}{label} {e.target}\n")
    return "".join(out)


def platform_mermaid(model: Platform, plan: Plan) -> str:
    """A mermaid `flowchart` of the platform (ends with a newline)."""
    return render_mermaid(platform_graph(model, plan))
