"""Tenants' CPU-only pods get nodes of their own on aws: the CPU NodePool."""

from __future__ import annotations

from typing import Any

import pytest

from components.aws.cpu_node_pool import CPU_NODE_POOL, MIN_CPU_LIMIT, cpu_limit
from components.conventions import GPU_TAINT_KEY
from gpuplat.catalog import GPU_RESOURCE, instance_type
from gpuplat.catalog.labels import CPU_NODE_LABEL
from gpuplat.verify.k8s import untolerated
from tests.support_aws import NODE_CLASS, NODE_POOL, STACKS, crd_errors, custom_resources, recorded


def _cpu_objects(stack: str) -> tuple[dict[str, Any], dict[str, Any]]:
    _, _, resources = recorded(stack)
    (pool,) = [o for o in custom_resources(resources, NODE_POOL) if o["metadata"]["name"] == CPU_NODE_POOL]
    (node_class,) = [o for o in custom_resources(resources, NODE_CLASS) if o["metadata"]["name"] == CPU_NODE_POOL]
    return pool, node_class


@pytest.mark.parametrize("stack", STACKS)
def test_a_pod_asking_no_gpu_and_tolerating_nothing_gets_a_cpu_node(stack: str) -> None:
    model, _, resources = recorded(stack)
    pool, node_class = _cpu_objects(stack)
    template = pool["spec"]["template"]
    # Every GPU NodePool refuses such a pod; this one takes it.
    for other in custom_resources(resources, NODE_POOL):
        taints = other["spec"]["template"]["spec"].get("taints", [])
        if other is pool:
            assert untolerated(taints, []) == []
        else:
            assert any(t["key"] == GPU_TAINT_KEY for t in taints)
    assert template["metadata"]["labels"] == {CPU_NODE_LABEL: "true"}
    assert template["spec"]["nodeClassRef"]["name"] == node_class["metadata"]["name"]
    zones = next(r for r in template["spec"]["requirements"] if r["key"] == "topology.kubernetes.io/zone")
    assert zones["values"] == list(model.target.zones)
    assert list(crd_errors(NODE_POOL, pool)) == [] and list(crd_errors(NODE_CLASS, node_class)) == []


@pytest.mark.parametrize("stack", STACKS)
def test_the_cpu_pool_is_bounded_and_never_launches_a_gpu(stack: str) -> None:
    model, _, _ = recorded(stack)
    pool, _ = _cpu_objects(stack)
    fleet = sum(
        (itype.vcpus if (itype := instance_type(p.instance_type or "")) else 0) * p.nodes.max for p in model.pools
    )
    assert pool["spec"]["limits"] == {"cpu": str(cpu_limit(model)), GPU_RESOURCE: "0"}
    assert cpu_limit(model) == max(MIN_CPU_LIMIT, -(-fleet // 10))
    assert pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    # Below every GPU NodePool's weight.
    assert pool["spec"]["weight"] == 1


@pytest.mark.parametrize("stack", STACKS)
def test_the_cpu_node_class_keeps_the_gpu_pools_secure_defaults(stack: str) -> None:
    _, _, resources = recorded(stack)
    _, node_class = _cpu_objects(stack)
    gpu_class = next(o for o in custom_resources(resources, NODE_CLASS) if o["metadata"]["name"] != CPU_NODE_POOL)
    for key in ("amiSelectorTerms", "metadataOptions", "blockDeviceMappings", "role"):
        assert node_class["spec"][key] == gpu_class["spec"][key], key
    assert node_class["spec"]["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert "networkInterfaces" not in node_class["spec"] and "placementGroupSelector" not in node_class["spec"]
