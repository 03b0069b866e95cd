"""The fabric on the Kubernetes side: Kueue Topology levels, and on provider kubernetes what a pod
needs to attach one RDMA VF per rail (SR-IOV policies, IP pools, networks) and the order the
operators must come up in (OFED before the SR-IOV config daemon, NFD before the network operator).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from components.conventions import FABRIC_LABEL, POOL_LABEL
from gpuplat.catalog.charts import (
    GPU_DRIVER_IMAGE,
    GPU_DRIVER_KERNEL_MODULE_TYPE,
    GPU_DRIVER_REPOSITORY,
    GPU_DRIVER_VERSION,
)
from gpuplat.model import Platform
from gpuplat.preview import RecordedResource
from tests.support_k8s import (
    KUBERNETES_EXAMPLE,
    STACKS,
    by_kind,
    compile_kubernetes_example,
    crd_errors,
    record_side,
    recorded,
    releases,
)
from tests.upstream import chart_values_dir

HOST = "kubernetes.io/hostname"
MOFED_WAIT = "network.nvidia.com/operator.mofed.wait"


def _variant(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> tuple[Platform, list[RecordedResource]]:
    """The kubernetes fixture with `change` applied to its YAML, compiled and recorded."""
    spec = copy.deepcopy(yaml.safe_load(KUBERNETES_EXAMPLE.read_text(encoding="utf-8")))
    change(spec)
    path = tmp_path / "variant.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    model, plan = compile_kubernetes_example(path)
    return model, record_side(model, plan)


def _named(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


def _by_name(resources: tuple[RecordedResource, ...], kind: str) -> dict[str, RecordedResource]:
    return {str(r.inputs["metadata"]["name"]): r for r in resources if r.inputs.get("kind") == kind}


# ---------------------------------------------------------------------------------- topology


def test_topology_levels_are_labels_the_nodes_carry(tmp_path: Path) -> None:
    model, _, resources = recorded("kubernetes")
    fabric = model.network.fabric
    assert fabric is not None and fabric.topology_labels
    for which, levels in (
        ("dev", [f"topology.k8s.aws/network-node-layer-{i}" for i in (1, 2, 3)] + [HOST]),
        ("kubernetes", [*fabric.topology_labels, HOST]),  # the site's block and leaf labels, then the host
    ):
        model, _, resources = recorded(which)
        (topology,) = by_kind(resources, "Topology")
        assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == levels
        # Topology-aware only where the nodes exist before the job: fixed pools (kubernetes),
        # never an autoscaled aws pool (Kueue would wait for nodes Karpenter never adds).
        fabric_pools = {p.name for p in model.fabric_pools if which == "kubernetes" or p.nodes.min == p.nodes.max}
        for flavor in by_kind(resources, "ResourceFlavor"):
            pool = flavor["spec"]["nodeLabels"][POOL_LABEL]
            assert ("topologyName" in flavor["spec"]) == (pool in fabric_pools)
    # Without topologyLabels the platform invents no switch level: the host is the only one.
    _, plain = _variant(tmp_path, lambda spec: spec["network"]["fabric"].pop("topologyLabels"))
    (topology,) = by_kind(tuple(plain), "Topology")
    assert topology["spec"]["levels"] == [{"nodeLabel": HOST}]


# ------------------------------------------------------------------------------------ SR-IOV


def test_one_sriov_policy_and_resource_per_rail_on_the_rail_nic_only() -> None:
    model, _, resources = recorded("kubernetes")
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None
    rails = fabric.sriov.rails
    policies = by_kind(resources, "SriovNetworkNodePolicy")
    assert len(policies) == len(rails) == 8
    assert len({p["spec"]["resourceName"] for p in policies}) == len(rails)  # one resource per rail
    for policy, rail in zip(policies, rails, strict=True):
        spec = policy["spec"]
        # Only the rail's own physical function: never the host NIC, even if it is a Mellanox too.
        assert spec["nicSelector"] == {"vendor": "15b3", "pfNames": [rail.pf_name]}
        assert spec["numVfs"] == fabric.sriov.vfs_per_nic
        assert spec["nodeSelector"] == {FABRIC_LABEL: "true"}
        assert spec["isRdma"] is True and spec["deviceType"] == "netdevice" and spec["linkType"] == "eth"
        assert policy["metadata"]["namespace"] == releases(resources)["sriov-network-operator"].inputs["namespace"]


def test_each_fabric_tenant_gets_a_network_per_rail_with_an_ip_pool() -> None:
    model, _, resources = recorded("kubernetes")
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None
    sriov_ns = releases(resources)["sriov-network-operator"].inputs["namespace"]
    ipam_ns = releases(resources)["network-operator"].inputs["namespace"]
    pools = _named(by_kind(resources, "IPPool"))
    resources_of_rails = [p["spec"]["resourceName"] for p in by_kind(resources, "SriovNetworkNodePolicy")]
    networks = _named(by_kind(resources, "SriovNetwork"))
    tenants = [t for t in model.tenants if "train" in t.pools]
    assert tenants and len(networks) == len(tenants) * len(fabric.sriov.rails)
    for tenant in tenants:
        for i, rail in enumerate(fabric.sriov.rails):
            network = networks[f"{tenant.name}-rail{i}"]
            assert network["metadata"]["namespace"] == sriov_ns  # the only namespace operator 1.6.0 reconciles
            spec = network["spec"]
            assert spec["networkNamespace"] == tenant.name  # the NetworkAttachmentDefinition lands here
            assert spec["resourceName"] == resources_of_rails[i]
            ipam = json.loads(spec["ipam"])
            assert ipam["type"] == "nv-ipam"
            pool = pools[ipam["poolName"]]
            assert pool["metadata"]["namespace"] == ipam_ns
            assert pool["spec"]["subnet"] == rail.subnet
            assert pool["spec"]["perNodeBlockSize"] == fabric.sriov.vfs_per_nic
    # The IPAM the networks name is the one the NicClusterPolicy installs.
    (nic,) = by_kind(resources, "NicClusterPolicy")
    assert "nvIpam" in nic["spec"] and "multus" in nic["spec"]["secondaryNetwork"]


def test_tenants_without_a_fabric_pool_get_no_rail_network(tmp_path: Path) -> None:
    def infer_only(spec: dict[str, Any]) -> None:
        spec["tenants"][1]["pools"] = ["infer", "lab"]

    model, resources = _variant(tmp_path, infer_only)
    namespaces = {n["spec"]["networkNamespace"] for n in by_kind(tuple(resources), "SriovNetwork")}
    assert namespaces == {model.tenants[0].name}


def test_networks_wait_for_the_crds_of_what_they_create() -> None:
    _, _, resources = recorded("kubernetes")
    by_release = releases(resources)
    for network in _by_name(resources, "SriovNetwork").values():
        # The NetworkAttachmentDefinition CRD ships in the network operator's chart.
        assert by_release["network-operator"].urn in network.options["dependsOn"]
        namespace = network.inputs["spec"]["networkNamespace"]
        assert any(r.urn in network.options["dependsOn"] for r in resources if r.name.endswith(f"-{namespace}-ns"))


def test_ip_pools_wait_for_the_nv_ipam_crd() -> None:
    _, _, resources = recorded("kubernetes")
    (nic,) = _by_name(resources, "NicClusterPolicy").values()
    wait = nic.inputs["metadata"]["annotations"]["pulumi.com/waitFor"]
    # Any reported state of nv-ipam: the operator applies its CRD before reporting one.
    assert wait == "jsonpath={.status.appliedStates[?(@.name=='state-nv-ipam-cni')].state}"
    for pool in _by_name(resources, "IPPool").values():
        assert nic.urn in pool.options["dependsOn"]


def test_infiniband_rails_use_ib_networks_and_gateways(tmp_path: Path) -> None:
    def infiniband(spec: dict[str, Any]) -> None:
        fabric = spec["network"]["fabric"]
        fabric["transport"] = "infiniband"
        fabric["sriov"]["rails"][0]["gateway"] = "10.100.0.1"

    _, resources = _variant(tmp_path, infiniband)
    objects = tuple(resources)
    assert not by_kind(objects, "SriovNetwork")
    networks = by_kind(objects, "SriovIBNetwork")
    assert networks and all(crd_errors(n) == [] for n in networks)
    assert {p["spec"]["linkType"] for p in by_kind(objects, "SriovNetworkNodePolicy")} == {"ib"}
    pools = _named(by_kind(objects, "IPPool"))
    assert pools["orion-rail0"]["spec"]["gateway"] == "10.100.0.1"
    assert "gateway" not in pools["orion-rail1"]["spec"]


# ------------------------------------------------------------------------- operator ordering


def test_sriov_config_daemon_waits_for_the_ofed_driver() -> None:
    _, _, resources = recorded("kubernetes")
    selector = releases(resources)["sriov-network-operator"].inputs["values"]["sriovOperatorConfig"][
        "configDaemonNodeSelector"
    ]
    assert selector == {FABRIC_LABEL: "true", MOFED_WAIT: "false"}
    # The label is the network operator's own: its bundled SR-IOV chart selects on it the same way.
    values = yaml.safe_load((chart_values_dir("network-operator") / "values.yaml").read_text(encoding="utf-8"))
    bundled = values["sriov-network-operator"]["sriovOperatorConfig"]["configDaemonNodeSelector"]
    assert bundled[MOFED_WAIT] == "false"


def test_network_operator_waits_for_the_gpu_operator_nfd() -> None:
    _, _, resources = recorded("kubernetes")
    by_release = releases(resources)
    values = by_release["network-operator"].inputs["values"]
    assert values["nfd"] == {"enabled": False, "deployNodeFeatureRules": True}  # the GPU Operator's NFD serves
    assert by_release["gpu-operator"].urn in by_release["network-operator"].options["dependsOn"]


def test_network_operator_with_the_ofed_driver_on_an_rdma_fabric() -> None:
    _, _, resources = recorded("kubernetes")
    (nic,) = by_kind(resources, "NicClusterPolicy")
    assert nic["metadata"]["name"] == "nic-cluster-policy"
    assert "ofedDriver" in nic["spec"] and "rdmaSharedDevicePlugin" not in nic["spec"]
    driver = releases(resources)["gpu-operator"].inputs["values"]["driver"]
    # GPUDirect RDMA waits for the DOCA-OFED driver, which only fabric nodes run: the chart's
    # default NVIDIADriver (every other GPU node) has it off, the platform's fabric one on.
    assert driver["rdma"]["enabled"] is False and driver["nvidiaDriverCRD"]["enabled"] is True
    (fabric,) = by_kind(resources, "NVIDIADriver")
    assert fabric["spec"]["rdma"] == {"enabled": True, "useHostMofed": False}
    assert fabric["spec"]["nodeSelector"] == {FABRIC_LABEL: "true"} and fabric["spec"]["default"] is False
    for stack in STACKS:
        aws = recorded(stack)[2]
        assert not {"sriov-network-operator", "network-operator"} & set(releases(aws))
        assert not by_kind(aws, "SriovNetwork") and not by_kind(aws, "IPPool")


def test_the_fabric_driver_is_the_one_the_chart_installs_elsewhere() -> None:
    """The fabric nodes' NVIDIADriver names the driver the chart's default NVIDIADriver runs on
    every other GPU node: one driver version on the cluster, moved by one chart bump."""
    values = yaml.safe_load((chart_values_dir("gpu-operator") / "values.yaml").read_text(encoding="utf-8"))
    driver = values["driver"]
    assert (driver["repository"], driver["image"], str(driver["version"]), driver["kernelModuleType"]) == (
        GPU_DRIVER_REPOSITORY,
        GPU_DRIVER_IMAGE,
        GPU_DRIVER_VERSION,
        GPU_DRIVER_KERNEL_MODULE_TYPE,
    )
    # The chart renders its default NVIDIADriver only when asked; it must stay asked.
    assert driver["nvidiaDriverCRD"]["deployDefaultCR"] is True
