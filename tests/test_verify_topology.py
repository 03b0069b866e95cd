"""verify's topology step: which flavors Kueue 0.19 lets a job into when a flavor names a Topology
(`checkPodSetAndFlavorMatchForTAS`, `isTASImplied`), over the kubernetes example's recording,
whose train pool is topology-aware and owned by a tenant whose queue is topology-only."""

from __future__ import annotations

from typing import Any

from gpuplat.verify import types as steps_
from tests.support_verify import assert_fails, assert_ok, find, journey, objects, run, steps


def test_a_topology_only_queue_implies_a_placement() -> None:
    j = journey(run("kubernetes"), "foundation-models", "train")
    assert_ok(j, steps_.TOPOLOGY)
    (step,) = steps(j, steps_.TOPOLOGY)
    assert "is topology-only" in step.detail and "kubernetes.io/hostname" in step.detail


def test_a_queue_with_a_flavor_without_topology_needs_the_annotation() -> None:
    def mixed(resources: list[dict[str, Any]]) -> None:
        # foundation-models also gets the infer pool's flavor: its queue is no longer TAS-only.
        queue = find(resources, "ClusterQueue", "orion-foundation-models")
        queue["spec"]["resourceGroups"].append(
            {
                "coveredResources": ["nvidia.com/mig-1g.10gb"],
                "flavors": [
                    {"name": "orion-infer", "resources": [{"name": "nvidia.com/mig-1g.10gb", "nominalQuota": 1}]}
                ],
            }
        )

    j = journey(run("kubernetes", mixed), "foundation-models", "train")
    assert_ok(j, steps_.TOPOLOGY)  # the job tenants are told to write asks for a placement
    (step,) = steps(j, steps_.TOPOLOGY)
    assert "supports only TopologyAwareScheduling" in step.detail


def test_a_topology_without_the_host_level_refuses_the_job() -> None:
    def shallow(resources: list[dict[str, Any]]) -> None:
        topology = objects(resources, "Topology")[0]
        topology["spec"]["levels"] = [
            lv for lv in topology["spec"]["levels"] if lv["nodeLabel"] != "kubernetes.io/hostname"
        ]

    assert_fails(
        journey(run("kubernetes", shallow), "foundation-models", "train"),
        steps_.TOPOLOGY,
        "does not contain the requested level",
    )


def test_a_flavor_naming_a_topology_that_is_not_emitted() -> None:
    def drop(resources: list[dict[str, Any]]) -> None:
        resources[:] = [r for r in resources if r["inputs"].get("kind") != "Topology"]

    assert_fails(journey(run("kubernetes", drop), "foundation-models", "train"), steps_.TOPOLOGY, "not emitted")


def test_pools_without_a_topology_have_no_topology_step() -> None:
    j = journey(run("kubernetes"), "applied-research", "lab")
    assert j.ok and steps_.TOPOLOGY not in [s.step for s in j.steps]


def _train_topology_aware(resources: list[dict[str, Any]]) -> None:
    """prod's train autoscales, so its flavors name no Topology; as an edit would, name one."""
    (topology,) = objects(resources, "Topology")
    for flavor in objects(resources, "ResourceFlavor"):
        if flavor["spec"]["nodeLabels"].get("gpuplat.dev/pool") == "train":
            flavor["spec"]["topologyName"] = topology["metadata"]["name"]


def _train_on_g5(resources: list[dict[str, Any]]) -> None:
    for node_pool in objects(resources, "NodePool"):
        for req in node_pool["spec"]["template"]["spec"]["requirements"]:
            if req["key"] == "node.kubernetes.io/instance-type" and "p5.48xlarge" in req["values"]:
                req["values"] = ["g5.48xlarge"]


def test_aws_nodes_of_a_type_eks_labels_with_its_network_nodes_take_topology_aware_jobs() -> None:
    j = journey(run("prod", _train_topology_aware), "research", "train")
    assert any("carry the network-node layers" in s.detail for s in steps(j, steps_.TOPOLOGY)), j


def test_aws_nodes_without_network_node_labels_hold_topology_aware_jobs_forever() -> None:
    """A g5 pool's nodes carry no topology.k8s.aws/network-node-layer label: Kueue saw none of them
    and the job waited (the e2e suite, on a generated spec)."""
    assert_fails(
        journey(run("prod", _train_topology_aware, _train_on_g5), "research", "train"),
        steps_.TOPOLOGY,
        "which EKS does not write on g5.48xlarge",
    )
