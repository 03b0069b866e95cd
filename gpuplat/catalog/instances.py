# pyright: strict
"""AWS GPU instance types: GPUs, CPU, memory, local NVMe, network, EFA.

Source: aws/karpenter-provider-aws (https://github.com/aws/karpenter-provider-aws) at
1d927085 (v1.14.0+68, 2026-08-21):

- ``website/content/en/docs/reference/instance-types.md`` (generated from EC2
  DescribeInstanceTypes): GPUs, vCPUs, memory, local NVMe, EFA interfaces.
- ``pkg/providers/instancetype/zz_generated.vpclimits.go`` (generated 2026-08-06): network
  cards.
- ``pkg/providers/instancetype/zz_generated.bandwidth.go``: network bandwidth in Gbps.

These are EC2 API values, not marketing numbers: g5.xlarge is listed at its 2.5 Gbps
baseline, not "up to 10 Gbps". Units: memory GiB, NVMe GB, network Gbps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .gpus import GPUS, GpuModel


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu_model: str
    gpu_count: int
    vcpus: int
    memory_gib: int
    nvme_gb: int
    network_gbps: float
    efa_interfaces: int
    network_cards: int

    @property
    def efa_capable(self) -> bool:
        return self.efa_interfaces > 0

    @property
    def card_gbps(self) -> float:
        """Bandwidth through one network card: what a pod gets, since the VPC CNI gives pods
        interfaces on card 0 only (p5.48xlarge: 3200 Gbps over 32 cards = 100)."""
        return self.network_gbps / self.network_cards

    @property
    def gpu(self) -> GpuModel:
        return GPUS[self.gpu_model]

    @property
    def network_node_layers(self) -> int:
        """Layers of network nodes EC2's instance topology describes for this type (0: none)."""
        return NETWORK_NODE_LAYERS.get(self.name, 0)


_A100_40 = "A100-SXM-40GB"
_A100_80 = "A100-SXM-80GB"
_H100 = "H100-SXM-80GB"
_H200 = "H200-SXM-141GB"
_B200 = "B200-SXM-180GB"
_A10G = "A10G-24GB"
_L4 = "L4-24GB"
_L40S = "L40S-48GB"

# name, GPU, GPUs, vCPUs, memory GiB, NVMe GB, Gbps, EFA interfaces, network cards
_ROWS: tuple[tuple[str, str, int, int, int, int, float, int, int], ...] = (
    ("p4d.24xlarge", _A100_40, 8, 96, 1152, 8000, 400, 4, 4),
    ("p4de.24xlarge", _A100_80, 8, 96, 1152, 8000, 400, 4, 4),
    ("p5.4xlarge", _H100, 1, 16, 256, 3800, 100, 1, 1),
    ("p5.48xlarge", _H100, 8, 192, 2048, 30400, 3200, 32, 32),
    ("p5e.48xlarge", _H200, 8, 192, 2048, 30400, 3200, 32, 32),
    # p5en reaches the same 3200 Gbps with half the cards (EFAv3, 4 ENIs per card).
    ("p5en.48xlarge", _H200, 8, 192, 2048, 30400, 3200, 16, 16),
    ("p6-b200.48xlarge", _B200, 8, 192, 2048, 30400, 3200, 8, 8),
    ("g5.xlarge", _A10G, 1, 4, 16, 250, 2.5, 0, 1),
    ("g5.2xlarge", _A10G, 1, 8, 32, 450, 5, 0, 1),
    ("g5.4xlarge", _A10G, 1, 16, 64, 600, 10, 0, 1),
    ("g5.8xlarge", _A10G, 1, 32, 128, 900, 25, 1, 1),
    ("g5.16xlarge", _A10G, 1, 64, 256, 1900, 25, 1, 1),
    ("g5.12xlarge", _A10G, 4, 48, 192, 3800, 40, 1, 1),
    ("g5.24xlarge", _A10G, 4, 96, 384, 3800, 50, 1, 1),
    ("g5.48xlarge", _A10G, 8, 192, 768, 7600, 100, 1, 1),
    ("g6.xlarge", _L4, 1, 4, 16, 250, 2.5, 0, 1),
    ("g6.2xlarge", _L4, 1, 8, 32, 450, 5, 0, 1),
    ("g6.4xlarge", _L4, 1, 16, 64, 600, 10, 0, 1),
    ("g6.8xlarge", _L4, 1, 32, 128, 900, 25, 1, 1),
    ("g6.16xlarge", _L4, 1, 64, 256, 1880, 25, 1, 1),
    ("g6.12xlarge", _L4, 4, 48, 192, 3760, 40, 1, 1),
    ("g6.24xlarge", _L4, 4, 96, 384, 3760, 50, 1, 1),
    ("g6.48xlarge", _L4, 8, 192, 768, 7520, 100, 1, 1),
    ("g6e.xlarge", _L40S, 1, 4, 32, 250, 2.5, 0, 1),
    ("g6e.2xlarge", _L40S, 1, 8, 64, 450, 5, 0, 1),
    ("g6e.4xlarge", _L40S, 1, 16, 128, 600, 20, 0, 1),
    ("g6e.8xlarge", _L40S, 1, 32, 256, 900, 25, 1, 1),
    ("g6e.16xlarge", _L40S, 1, 64, 512, 1900, 35, 1, 1),
    ("g6e.12xlarge", _L40S, 4, 48, 384, 3800, 100, 1, 1),
    ("g6e.24xlarge", _L40S, 4, 96, 768, 3800, 200, 2, 2),
    ("g6e.48xlarge", _L40S, 8, 192, 1536, 7600, 400, 4, 4),
)

# Network-node layers EC2's instance topology (DescribeInstanceTopology) returns per type; EKS
# labels such nodes `topology.k8s.aws/network-node-layer-<n>`, and nodes of any other type carry
# no such label, EFA or not (g5, g6). Source: EC2 User Guide, "Prerequisites for Amazon EC2
# topology", instance types (read 2026-12-03).
NETWORK_NODE_LAYERS: Mapping[str, int] = MappingProxyType(
    {
        **{t: 3 for t in ("p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge")},
        **{
            f"g6e.{size}": 3
            for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")
        },
        "p6-b200.48xlarge": 4,
    }
)

INSTANCE_TYPES: Mapping[str, InstanceType] = MappingProxyType({row[0]: InstanceType(*row) for row in _ROWS})


def instance_type(name: str) -> InstanceType | None:
    return INSTANCE_TYPES.get(name)
