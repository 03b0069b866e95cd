"""The tenants' part of the RoCE rails on the on-prem hold-out (e2e/specs/onprem.yaml): each hard
tenant's VLAN, VF rates from its shares of the link, its own IP pools, DPDK VFs carved out of each
rail, the injector on, the fence policy, and the plan's rails section. Every emitted SR-IOV object
validates against the operator's own CRD schema."""

from __future__ import annotations

import functools
import json
from typing import Any

import yaml

from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.preview import RecordedResource
from gpuplat.render.plan import plan_text
from tests.support_k8s import ROOT, by_kind, compile_kubernetes_example, crd_errors, record_side, releases
from tests.upstream import chart_values_dir

ONPREM = ROOT / "e2e" / "specs" / "onprem.yaml"


@functools.cache
def _onprem() -> tuple[Platform, Plan, tuple[RecordedResource, ...]]:
    model, plan = compile_kubernetes_example(ONPREM)
    return model, plan, tuple(record_side(model, plan))


def _named(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


def _vf_range(pf_name: str) -> range:
    first, last = pf_name.split("#")[1].split("-")
    return range(int(first), int(last) + 1)


def test_hard_tenants_get_their_vlan_and_rates_in_mbps_of_the_link() -> None:
    model, _, resources = _onprem()
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None
    networks = _named(by_kind(resources, "SriovNetwork"))
    assert networks and all(crd_errors(n) == [] for n in networks.values())
    link_mbps = fabric.link_gbps * 1000
    for tenant, vlan, guaranteed, peak in (("pretrain", 101, 60, None), ("sim", 102, 25, 50)):
        for i in range(len(fabric.sriov.rails)):
            for name in (f"{tenant}-rail{i}", f"{tenant}-dpdk-rail{i}"):
                spec = networks[name]["spec"]
                assert spec["vlan"] == vlan
                assert spec["minTxRate"] == link_mbps * guaranteed // 100
                # No cap at 100%: maxTxRate 0 (absent) is the operator's "no limit".
                assert spec.get("maxTxRate") == (link_mbps * peak // 100 if peak else None)


def test_a_tenant_vlan_has_its_own_ip_pools_without_the_rails_gateway() -> None:
    model, _, resources = _onprem()
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None
    pools = _named(by_kind(resources, "IPPool"))
    networks = _named(by_kind(resources, "SriovNetwork"))
    for i, rail in enumerate(fabric.sriov.rails):
        names = {json.loads(networks[f"{t}-rail{i}"]["spec"]["ipam"])["poolName"] for t in ("pretrain", "sim")}
        assert len(names) == 2  # one pool per tenant VLAN, none shared
        for name in names:
            spec = pools[name]["spec"]
            assert spec["subnet"] == rail.subnet and "gateway" not in spec
            assert spec["perNodeBlockSize"] == fabric.sriov.rdma_vfs
        # DPDK networks carry no IPAM: the DPDK application owns its addressing.
        assert "ipam" not in networks[f"pretrain-dpdk-rail{i}"]["spec"]


def test_dpdk_vfs_are_the_last_of_each_rail_in_a_resource_of_their_own() -> None:
    model, _, resources = _onprem()
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None and fabric.sriov.dpdk is not None
    policies = by_kind(resources, "SriovNetworkNodePolicy")
    assert len(policies) == 2 * len(fabric.sriov.rails)
    assert all(crd_errors(p) == [] for p in policies)
    for i, rail in enumerate(fabric.sriov.rails):
        mine = {p["spec"]["resourceName"]: p["spec"] for p in policies if p["spec"]["nicSelector"]["pfNames"][0]
                .startswith(f"{rail.pf_name}#")}
        rdma, dpdk = mine[f"rdma_rail{i}"], mine[f"dpdk_rail{i}"]
        # One PF, one numVfs (the operator applies the PF's VF count once); the ranges split it exactly.
        assert rdma["numVfs"] == dpdk["numVfs"] == fabric.sriov.vfs_per_nic
        vfs = [*_vf_range(rdma["nicSelector"]["pfNames"][0]), *_vf_range(dpdk["nicSelector"]["pfNames"][0])]
        assert vfs == list(range(fabric.sriov.vfs_per_nic))
        assert len(_vf_range(dpdk["nicSelector"]["pfNames"][0])) == fabric.sriov.dpdk.vfs_per_nic
        # mlx5's DPDK driver is bifurcated: the VF keeps its kernel netdevice and RDMA device.
        assert dpdk["deviceType"] == "netdevice" and dpdk["isRdma"] is True


def test_the_resources_injector_is_on() -> None:
    _, _, resources = _onprem()
    values = releases(resources)["sriov-network-operator"].inputs["values"]
    assert values["operator"]["admissionControllers"]["enabled"] is True
    chart = yaml.safe_load((chart_values_dir("sriov-network-operator") / "values.yaml").read_text(encoding="utf-8"))
    assert "enabled" in chart["operator"]["admissionControllers"]  # the chart's own switch for both webhooks


def test_the_fence_policy_binds_every_tenant_namespace() -> None:
    _, _, resources = _onprem()
    policies = _named(by_kind(resources, "ValidatingAdmissionPolicy"))
    fence = policies["vega-tenant-networks"]
    assert "k8s.v1.cni.cncf.io/networks" in fence["spec"]["variables"][0]["expression"]
    (binding,) = [b for b in by_kind(resources, "ValidatingAdmissionPolicyBinding")
                  if b["spec"]["policyName"] == "vega-tenant-networks"]
    assert binding["spec"]["validationActions"] == ["Deny"]


def test_the_plan_shows_each_tenants_segment_and_shares() -> None:
    model, plan, _ = _onprem()
    rails = plan.rails
    assert rails is not None
    assert (rails.rails, rails.rdma_vfs, rails.dpdk_vfs, rails.fabric_nodes, rails.hugepages_gib) == (8, 24, 8, 4, 64)
    by_tenant = {t.tenant: t for t in rails.tenants}
    assert set(by_tenant) == {"pretrain", "sim"}  # the tenants of the fabric pool only
    assert (by_tenant["sim"].vlan, by_tenant["sim"].guaranteed_gbps, by_tenant["sim"].peak_gbps) == (102, 100, 200)
    assert rails.guaranteed_percent == 85
    text = plan_text(model, plan)
    assert "VFs per rail NIC: RDMA 24 (96 on 4 nodes); DPDK 8 (32 on 4 nodes)" in text
    assert "85% of a link" in text


def test_e2e_derives_each_nodes_vfs_from_the_emitted_policies() -> None:
    from components.conventions import FABRIC_LABEL
    from e2e.rails import vf_resources
    from e2e.stack import Stack, Target

    _, _, resources = _onprem()
    stack = Stack(Target("onprem"), [{"type": r.type, "inputs": r.inputs} for r in resources], {}, [])
    fabric_node = vf_resources(stack, {FABRIC_LABEL: "true"}, "openshift.io")
    assert fabric_node == {
        **{f"openshift.io/rdma_rail{i}": 24 for i in range(8)},
        **{f"openshift.io/dpdk_rail{i}": 8 for i in range(8)},
    }
    assert vf_resources(stack, {}, "openshift.io") == {}  # a node the labeler has not marked fabric
