"""FabricTopology: the fabric as the scheduler sees it, and RDMA networking on existing clusters.

Kueue Topology (topology-aware scheduling), levels from the widest domain to the host, only
labels the nodes really carry:
- aws: EKS labels instances that support the EC2 instance-topology API (the EFA types fabric
  pools must use) with `topology.k8s.aws/network-node-layer-1..3`, layer 1 the farthest from
  the instance. These are AWS's real network nodes whatever `tiers` the spec draws, so all
  three are levels, then the host. Some instance types have a fourth layer; it is left out,
  because a level whose label a node lacks would keep that node out of placement.
- provider kubernetes: the host only. The spec says how big the fabric is, not which leaf
  each node is cabled to, so the platform cannot write leaf / spine labels that would be
  true (and a wrong leaf is worse than none). Sites that already label nodes by leaf would
  need a spec field naming that label to get a leaf level.
Fabric pools' ResourceFlavors name this Topology (Scheduling). Needs Kueue (its CRD): no
Topology with `queueing: none` or `topologyAware: false`.

provider kubernetes with a RoCE / InfiniBand fabric:
- `sriov`: the SR-IOV network operator (Helm, pinned; its config daemon only on fabric nodes)
  and one SriovNetworkNodePolicy per fabric pool: `vfsPerNic` VFs on every Mellanox (15b3)
  NIC of the pool's nodes, RDMA-capable for pods (resource `openshift.io/<pool>_rdma`).
  Creating VFs may drain a node once (the operator's default).
- the NVIDIA network operator (Helm, pinned) and its NicClusterPolicy on fabric nodes:
  the DOCA-OFED driver (GPUDirect RDMA: the GPU Operator's peermem builds against it), Multus
  and CNI plugins and NVIDIA IPAM for the secondary networks pods attach VFs with; without
  `sriov` the RDMA shared device plugin instead, so pods share each NIC's RDMA device. It
  reuses the GPU Operator's Node Feature Discovery (two NFD instances would fight over labels).
Custom resources depend on the release that installs their CRD.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.conventions import FABRIC_LABEL
from gpuplat.catalog import CHARTS
from gpuplat.model import GpuNodePool, Platform, Provider
from gpuplat.plan import Plan

from ._common import chart_release, child_opts, gpu_node_tolerations, meta, prefix, topology_name
from .scheduling import KUEUE_API

EKS_TOPOLOGY_LEVELS = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
)
HOST_LEVEL = "kubernetes.io/hostname"
MELLANOX_VENDOR = "15b3"
_RDMA_TRANSPORTS = frozenset({"roce", "infiniband"})
# Component images of network-operator 26.4.1 (its example/crs/mellanox.com_v1alpha1_nicclusterpolicy_cr.yaml).
_NVIDIA_MELLANOX = "nvcr.io/nvidia/mellanox"
_NETWORK_OPERATOR_TAG = "network-operator-v26.4.1"
_DOCA_DRIVER_VERSION = "doca3.4.1-26.04-1.1.0.0-1"
# The network operator only reconciles the NicClusterPolicy of this name.
NIC_CLUSTER_POLICY = "nic-cluster-policy"


@dataclass(frozen=True)
class FabricTopologyArgs:
    model: Platform
    plan: Plan
    provider: pulumi.ProviderResource
    kueue: pulumi.Resource | None = None  # Scheduling.kueue: installs the Topology CRD
    depends_on: Sequence[pulumi.Resource] = field(default_factory=lambda: ())


def topology_levels(model: Platform) -> list[str]:
    if model.target.provider is Provider.AWS:
        return [*EKS_TOPOLOGY_LEVELS, HOST_LEVEL]
    return [HOST_LEVEL]


def wants_topology(model: Platform) -> bool:
    return (
        model.scheduling.queueing == "kueue"
        and model.scheduling.topology_aware
        and model.network.fabric is not None
        and bool(model.fabric_pools)
    )


def rdma_fabric(model: Platform) -> bool:
    fabric = model.network.fabric
    return (
        model.target.provider is Provider.KUBERNETES
        and fabric is not None
        and fabric.transport in _RDMA_TRANSPORTS
        and bool(model.fabric_pools)
    )


def sriov_resource_name(pool: GpuNodePool) -> str:
    # The operator's webhook accepts only [A-Za-z0-9_] here.
    return f"{pool.name.replace('-', '_')}_rdma"


def sriov_policy_spec(model: Platform, pool: GpuNodePool) -> dict[str, Any]:
    fabric = model.network.fabric
    assert fabric is not None and fabric.sriov is not None
    return {
        "resourceName": sriov_resource_name(pool),
        "nodeSelector": dict(pool.node_selector),
        "numVfs": fabric.sriov.vfs_per_nic,
        "nicSelector": {"vendor": MELLANOX_VENDOR},
        "deviceType": "netdevice",
        "isRdma": True,
        "linkType": "ib" if fabric.transport == "infiniband" else "eth",
        "priority": 50,
    }


def sriov_values() -> dict[str, Any]:
    return {"sriovOperatorConfig": {"deploy": True, "configDaemonNodeSelector": {FABRIC_LABEL: "true"}}}


def network_operator_values() -> dict[str, Any]:
    return {"nfd": {"enabled": False, "deployNodeFeatureRules": True}, "sriovNetworkOperator": {"enabled": False}}


def _image(name: str, version: str = _NETWORK_OPERATOR_TAG) -> dict[str, Any]:
    return {"image": name, "repository": _NVIDIA_MELLANOX, "version": version}


def nic_cluster_policy_spec(model: Platform) -> dict[str, Any]:
    fabric = model.network.fabric
    assert fabric is not None
    spec: dict[str, Any] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": FABRIC_LABEL, "operator": "In", "values": ["true"]}]}
                ]
            }
        },
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
    sriov_policies: list[str]

    def __init__(self, name: str, args: FabricTopologyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:FabricTopology", name, None, opts)
        model, provider = args.model, args.provider
        self.topology, self.sriov_policies = None, []
        if wants_topology(model):
            self.topology = topology_name(model)
            k8s.apiextensions.CustomResource(
                f"{name}-topology",
                api_version=KUEUE_API,
                kind="Topology",
                metadata=meta(self.topology),
                spec={"levels": [{"nodeLabel": label} for label in topology_levels(model)]},
                # Kueue 0.19 refuses changes to the levels, and a replacement would wait forever on
                # the finalizer flavors in use hold; the levels only change with the provider.
                opts=child_opts(self, provider, [*args.depends_on, *([args.kueue] if args.kueue else [])]),
            )
        fabric = model.network.fabric
        if rdma_fabric(model) and fabric is not None:
            if fabric.sriov is not None:
                sriov = chart_release(
                    self,
                    name,
                    "sriov-network-operator",
                    sriov_values(),
                    provider,
                    pod_security="privileged",
                    depends_on=args.depends_on,
                )
                namespace = CHARTS["sriov-network-operator"].namespace
                for pool in model.fabric_pools:
                    policy = f"{prefix(model)}-{pool.name}"
                    self.sriov_policies.append(policy)
                    k8s.apiextensions.CustomResource(
                        f"{name}-sriov-{pool.name}",
                        api_version="sriovnetwork.openshift.io/v1",
                        kind="SriovNetworkNodePolicy",
                        metadata=meta(policy, namespace),
                        spec=sriov_policy_spec(model, pool),
                        opts=child_opts(self, provider, [sriov]),
                    )
            network = chart_release(
                self,
                name,
                "network-operator",
                network_operator_values(),
                provider,
                pod_security="privileged",
                depends_on=args.depends_on,
            )
            k8s.apiextensions.CustomResource(
                f"{name}-nic-policy",
                api_version="mellanox.com/v1alpha1",
                kind="NicClusterPolicy",
                metadata=meta(NIC_CLUSTER_POLICY),
                spec=nic_cluster_policy_spec(model),
                opts=child_opts(self, provider, [network]),
            )
        self.register_outputs({"topology": self.topology, "sriovPolicies": self.sriov_policies})
