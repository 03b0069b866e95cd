"""NodePool limits hold a pool to its share before and after its nodes initialize.

Karpenter counts a NodePool's usage from each node's capacity: the NodeClaim's (instance type
plus NodeOverlay) until the node is initialized, the node's own after (karpenter
`pkg/controllers/state/statenode.go` `Capacity`), and refuses a launch once any limit, by
resource name, is exceeded (`pkg/apis/v1/nodepool.go` `Limits.ExceededBy`). Both counts are
played here against the emitted limits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest

from components.aws.cpu_node_pool import CPU_NODE_POOL
from gpuplat.catalog import GPU_RESOURCE
from gpuplat.verify.k8s import quantity
from tests.support_aws import NODE_OVERLAY, NODE_POOL, STACKS, custom_resources, recorded


def exceeded_by(limits: Mapping[str, str], usage: Mapping[str, int]) -> list[str]:
    """Karpenter's Limits.ExceededBy: every used resource that has a limit and is over it."""
    over = []
    for name, used in usage.items():
        if name in limits:
            limit = quantity(limits[name])
            assert limit is not None, limits[name]
            if used > limit:
                over.append(name)
    return over


def initialized_capacity(overlay_capacity: Mapping[str, str]) -> dict[str, int]:
    """What an initialized node of a shared pool reports: its units under their own names and no
    nvidia.com/gpu (mixed MIG strategy, renamed shared replicas, HAMi instead of NVIDIA's plugin)."""
    return {name: int(value) for name, value in overlay_capacity.items() if name != GPU_RESOURCE}


@pytest.mark.parametrize("stack", STACKS)
def test_every_node_pool_stops_at_its_share_once_its_nodes_are_initialized(stack: str) -> None:
    model, plan, resources = recorded(stack)
    overlays = custom_resources(resources, NODE_OVERLAY)
    checked = 0
    for obj in custom_resources(resources, NODE_POOL):
        name = obj["metadata"]["name"]
        if name == CPU_NODE_POOL:
            continue  # no GPUs: tests/test_cpu_node_pool.py
        planned = next(n for n in plan.node_pools if n.name == name)
        pool = model.pools_by_name[planned.pool]
        limits = obj["spec"]["limits"]
        gpus_per_node = plan.pool(pool.name).gpus_per_node
        covering = [
            o
            for o in overlays
            if name in next(r["values"] for r in o["spec"]["requirements"] if r["key"] == "karpenter.sh/nodepool")
        ]
        if covering:
            (overlay,) = covering
            node: dict[str, int] = initialized_capacity(overlay["spec"]["capacity"])
            checked += 1
        else:
            node = {GPU_RESOURCE: gpus_per_node}

        def usage(nodes: int, node: dict[str, int] = node) -> Counter[str]:
            total: Counter[str] = Counter()
            for _ in range(nodes):
                total.update(node)
            return total

        assert exceeded_by(limits, usage(planned.nodes)) == [], name
        assert exceeded_by(limits, usage(planned.nodes + 1)), f"{name}: one node over its share goes unnoticed"
        # While launching, the NodeClaim still carries the instance type's GPUs: that limit binds too.
        assert int(limits[GPU_RESOURCE]) == planned.gpus == planned.nodes * gpus_per_node
    if any(p.sharing.mode.value != "exclusive" for p in model.pools):
        assert checked, "no shared pool's NodePool was checked"
