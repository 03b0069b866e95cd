"""FabricTopology: the fabric as the scheduler sees it, and RDMA networking on existing clusters.

Kueue Topology (topology-aware scheduling), levels from the widest domain to the host, only
labels the nodes really carry:
- aws: EKS labels instances of the types EC2's instance topology describes (p4d, p5, p6, g6e;
  not g5 or g6, though they have EFA) with `topology.k8s.aws/network-node-layer-1..3`, layer 1
  the farthest from the instance. Fabric pools of other types get no topology-aware flavors
  (the plan decides, GP355): Kueue would place nothing on nodes without the labels. These are
  AWS's real network nodes whatever `tiers` the spec draws, so all three are levels, then the
  host. Some instance types have a fourth layer; it is left out,
  because a level whose label a node lacks would keep that node out of placement.
- provider kubernetes: `network.fabric.topologyLabels` (the site's own node labels naming each
  node's block / leaf switch, widest first), then the host. The platform does not write those
  labels: it knows how big the fabric is, not which leaf each node is cabled to, and a wrong
  leaf is worse than none. Without them the host is the only level.
Fabric pools' ResourceFlavors name this Topology (Scheduling). Needs Kueue (its CRD): no
Topology with `queueing: none` or `topologyAware: false`. Kueue 0.19 refuses any change to
the levels, and a replacement would wait forever on the finalizer flavors in use hold: the
levels change only with the provider or `topologyLabels`, and such a change needs the fabric
flavors drained and the Topology deleted by hand first.

provider kubernetes with a RoCE / InfiniBand fabric:
- `sriov`: the SR-IOV network operator (Helm, pinned; its config daemon only on fabric nodes
  whose DOCA-OFED driver is up, see sriov_values) and per rail a node policy, an IP pool and
  per fabric tenant a network (_rails). Creating VFs may drain a node once (the operator's
  default).
- the NVIDIA network operator (Helm, pinned) and its NicClusterPolicy on fabric nodes:
  the DOCA-OFED driver (GPUDirect RDMA: the GPU Operator's peermem builds against it), Multus
  and CNI plugins and NVIDIA IPAM for the secondary networks pods attach VFs with; without
  `sriov` the RDMA shared device plugin instead, so pods share each NIC's RDMA device. It
  reuses the GPU Operator's Node Feature Discovery (two NFD instances would fight over labels),
  so its release waits for the GPU Operator's, which installs the NodeFeatureRule CRD its
  chart's rules need.
Custom resources depend on the release that installs their CRD; the IP pools on the
NicClusterPolicy, whose nv-ipam state installs theirs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import FABRIC_LABEL
from gpuplat.catalog import CHARTS
from gpuplat.model import Platform, Rail
from gpuplat.plan.fabric import topology_levels

from .._common import child_opts
from ._common import gpu_node_tolerations, helm_release, meta, topology_name
from ._rails import (
    MELLANOX_VENDOR,
    NV_IPAM_API,
    SRIOV_API,
    dpdk_network_name,
    dpdk_network_spec,
    dpdk_policy_name,
    dpdk_policy_spec,
    fabric_node_selector,
    fabric_tenants,
    ip_pool_spec,
    rail_network_kind,
    rail_network_name,
    rail_network_spec,
    rail_policy_name,
    rail_pool_name,
    segmented_tenants,
    sriov_policy_spec,
    tenant_pool_name,
)
from .rail_fence import rail_fence
from .rail_requests import rail_requests, wants_rail_requests
from .scheduling import KUEUE_API

# The network operator sets this node label to "true" while the node's DOCA-OFED driver
# container is not ready and to "false" once it is (its bundled SR-IOV chart selects on it).
MOFED_WAIT_LABEL = "network.nvidia.com/operator.mofed.wait"
# Component images of network-operator 26.4.1 (its example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml).
_NVIDIA_MELLANOX = "nvcr.io/nvidia/mellanox"
_NETWORK_OPERATOR_TAG = "network-operator-v26.4.1"
_DOCA_DRIVER_VERSION = "doca3.4.1-26.04-1.1.0.0-1"
# The network operator only reconciles the NicClusterPolicy of this name.
NIC_CLUSTER_POLICY = "nic-cluster-policy"
# Pulumi waits until the operator reports any state of nv-ipam: it applies the state's objects,
# the IPPool CRD among them, before it reports one, so the pools can be created (Pulumi's own
# retries on a missing kind give up after about 30 s). Not `=ready`: that needs the nv-ipam
# DaemonSet ready on every fabric node, and one node down would then fail every update.
NV_IPAM_SYNCED = "jsonpath={.status.appliedStates[?(@.name=='state-nv-ipam-cni')].state}"


@dataclass(frozen=True)
class FabricTopologyArgs:
    model: Platform
    provider: pulumi.ProviderResource
    kueue: pulumi.Resource | None = None  # Scheduling.kueue: installs the Topology CRD
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())
    gpu_operator: pulumi.Resource | None = None  # GpuSharing.gpu_operator: installs the NFD CRDs
    namespaces: Mapping[str, pulumi.Resource] = field(default_factory=lambda: {})  # tenant -> Namespace


def wants_topology(model: Platform) -> bool:
    return (
        model.scheduling.queueing == "kueue"
        and model.scheduling.topology_aware
        and model.network.fabric is not None
        and bool(model.fabric_pools)
    )


def sriov_values() -> dict[str, Any]:
    # The config daemon resets and creates VFs through the mlx5 driver; the DOCA-OFED container
    # reloads that driver when it starts, which would drop VFs made before. So the daemon runs
    # only where the network operator reports the driver ready, and leaves a node while it is
    # not (a DaemonSet leaves nodes that stop matching its selector).
    selector = {FABRIC_LABEL: "true", MOFED_WAIT_LABEL: "false"}
    # The chart's one switch for the operator's webhook and the network-resources injector
    # (SriovOperatorConfig enableInjector / enableOperatorWebhook): the injector adds the rail
    # requests a pod's network annotation implies. Their TLS secrets (operator-webhook-cert,
    # network-resources-injector-cert) come from the site (docs/tenants.md).
    return {
        "operator": {"admissionControllers": {"enabled": True}},
        "sriovOperatorConfig": {"deploy": True, "configDaemonNodeSelector": selector},
    }


def network_operator_values() -> dict[str, Any]:
    return {"nfd": {"enabled": False, "deployNodeFeatureRules": True}, "sriovNetworkOperator": {"enabled": False}}


def _image(name: str, version: str = _NETWORK_OPERATOR_TAG) -> dict[str, Any]:
    return {"image": name, "repository": _NVIDIA_MELLANOX, "version": version}


def nic_cluster_policy_spec(model: Platform) -> dict[str, Any]:
    fabric = model.network.fabric
    assert fabric is not None
    spec: dict[str, Any] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": fabric_node_selector()},
        "tolerations": gpu_node_tolerations(model, model.fabric_pools),
        "ofedDriver": {
            **_image("doca-driver", _DOCA_DRIVER_VERSION),
            "upgradePolicy": {
                "autoUpgrade": True,
                "maxParallelUpgrades": 1,
                "drain": {"enable": True, "force": True, "deleteEmptyDir": True, "timeoutSeconds": 300},
            },
        },
        "secondaryNetwork": {"cniPlugins": _image("plugins"), "multus": _image("multus-cni")},
        "nvIpam": {**_image("nvidia-k8s-ipam"), "enableWebhook": False},
    }
    if fabric.sriov is None:
        config = {
            "configList": [
                {
                    "resourceName": "rdma_shared_device",
                    "rdmaHcaMax": 63,
                    "selectors": {"vendors": [MELLANOX_VENDOR]},
                }
            ]
        }
        spec["rdmaSharedDevicePlugin"] = {**_image("k8s-rdma-shared-dev-plugin"), "config": json.dumps(config)}
    return spec


class FabricTopology(pulumi.ComponentResource):
    topology: str | None
    fence_policy: str | None
    sriov_policies: list[str]
    rail_networks: list[str]

    def __init__(self, name: str, args: FabricTopologyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:FabricTopology", name, None, opts)
        model, provider = args.model, args.provider
        self.topology, self.fence_policy, self.sriov_policies, self.rail_networks = None, None, [], []
        if wants_topology(model):
            self.topology = topology_name(model)
            k8s.apiextensions.CustomResource(
                f"{name}-topology",
                api_version=KUEUE_API,
                kind="Topology",
                metadata=meta(self.topology),
                spec={"levels": [{"nodeLabel": label} for label in topology_levels(model)]},
                opts=child_opts(self, provider, [*args.depends_on, *([args.kueue] if args.kueue else [])]),
            )
        if model.rdma_fabric:
            network, nic_policy = self._network_operator(name, args)
            if model.network.fabric is not None and model.network.fabric.sriov is not None:
                self._rails(name, args, network, nic_policy)
        self.register_outputs(
            {"topology": self.topology, "sriovPolicies": self.sriov_policies, "railNetworks": self.rail_networks}
        )

    def _network_operator(self, name: str, args: FabricTopologyArgs) -> tuple[pulumi.Resource, pulumi.Resource]:
        # NFD comes from the GPU Operator: the chart's NodeFeatureRules need its CRD.
        deps = [*args.depends_on, *([args.gpu_operator] if args.gpu_operator else [])]
        network = helm_release(
            self,
            name,
            "network-operator",
            network_operator_values(),
            provider=args.provider,
            pod_security="privileged",
            depends_on=deps,
        )
        nic_policy = k8s.apiextensions.CustomResource(
            f"{name}-nic-policy",
            api_version="mellanox.com/v1alpha1",
            kind="NicClusterPolicy",
            metadata=meta(NIC_CLUSTER_POLICY, annotations={"pulumi.com/waitFor": NV_IPAM_SYNCED}),
            spec=nic_cluster_policy_spec(args.model),
            opts=child_opts(self, args.provider, [network]),
        )
        return network, nic_policy

    def _rails(
        self, name: str, args: FabricTopologyArgs, network: pulumi.Resource, nic_policy: pulumi.Resource
    ) -> None:
        model, provider = args.model, args.provider
        fabric = model.network.fabric
        assert fabric is not None and fabric.sriov is not None
        sriov = helm_release(
            self,
            name,
            "sriov-network-operator",
            sriov_values(),
            provider=provider,
            pod_security="privileged",
            depends_on=args.depends_on,
        )
        sriov_ns = CHARTS["sriov-network-operator"].namespace
        policies = [(rail_policy_name, sriov_policy_spec, f"{name}-sriov-rail")]
        networks = [(rail_network_name, rail_network_spec, f"{name}-net-")]
        if fabric.sriov.dpdk is not None:
            policies.append((dpdk_policy_name, dpdk_policy_spec, f"{name}-sriov-dpdk-rail"))
            networks.append((dpdk_network_name, dpdk_network_spec, f"{name}-dpdk-"))
        for i, rail in enumerate(fabric.sriov.rails):
            for policy_name, policy_spec, urn in policies:
                policy = policy_name(model, i)
                self.sriov_policies.append(policy)
                k8s.apiextensions.CustomResource(
                    f"{urn}{i}",
                    api_version=SRIOV_API,
                    kind="SriovNetworkNodePolicy",
                    metadata=meta(policy, sriov_ns),
                    spec=policy_spec(fabric, i, rail),
                    opts=child_opts(self, provider, [sriov]),
                )
            self._ip_pools(name, args, i, rail, [network, nic_policy])
            for tenant in fabric_tenants(model):
                namespace = args.namespaces.get(tenant.name)
                for network_name, network_spec, urn in networks:
                    net = network_name(tenant, i)
                    self.rail_networks.append(f"{tenant.name}/{net}")
                    k8s.apiextensions.CustomResource(
                        f"{urn}{tenant.name}-rail{i}",
                        api_version=SRIOV_API,
                        kind=rail_network_kind(fabric),
                        metadata=meta(net, sriov_ns),
                        spec=network_spec(model, tenant, i),
                        # The operator renders it into a NetworkAttachmentDefinition, whose CRD the network
                        # operator's chart installs.
                        opts=child_opts(self, provider, [sriov, network, *([namespace] if namespace else [])]),
                    )
        self.fence_policy = rail_fence(self, name, model, provider, args.depends_on)
        if wants_rail_requests(model):
            rail_requests(self, name, model, provider, args.depends_on)

    def _ip_pools(
        self, name: str, args: FabricTopologyArgs, i: int, rail: Rail, depends_on: list[pulumi.Resource]
    ) -> None:
        """The rail's pool, and one per tenant VLAN (without the rail's gateway, which is untagged)."""
        model, fabric = args.model, args.model.network.fabric
        assert fabric is not None
        pools = [(f"{name}-ippool-rail{i}", rail_pool_name(model, i), True)]
        pools += [
            (f"{name}-ippool-{t.name}-rail{i}", tenant_pool_name(model, t, i), False) for t in segmented_tenants(model)
        ]
        for urn, pool, routed in pools:
            k8s.apiextensions.CustomResource(
                urn,
                api_version=NV_IPAM_API,
                kind="IPPool",
                metadata=meta(pool, CHARTS["network-operator"].namespace),
                spec=ip_pool_spec(fabric, rail, routed),
                opts=child_opts(self, args.provider, depends_on),
            )
