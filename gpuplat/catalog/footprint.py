# pyright: strict
"""What the aws components create beside the GPU pools that AWS bills, in one place.

The components build these (components/aws/cluster.py, network.py, gpu_node_pool.py, storage.py)
and the cost plan prices them (gpuplat/plan/service_cost.py); both read the numbers here, so the
bill cannot drift from what is deployed. The compiler may not import components/, hence the
catalog.
"""

from __future__ import annotations

# The managed system node group (Karpenter, CoreDNS, the operators, Prometheus). Prometheus with a
# 15-30 d retention and the operators' controllers want ~16 GiB nodes.
SYSTEM_INSTANCE_TYPE = "m7i.2xlarge"
# min, desired, max: Karpenter's HA pair needs two, the rest is headroom. Nothing scales the group
# (Karpenter manages only its own nodes), so `desired` is what runs and what the bill counts.
SYSTEM_NODES = (2, 3, 4)
SYSTEM_ROOT_GIB = 50

# gp3 root volume of every Karpenter-launched GPU node (EC2NodeClass blockDeviceMappings). Images,
# containers' writable layers and logs; datasets live on the NVMe RAID0 and the storage tiers.
GPU_ROOT_GIB = 200

# Interface endpoints with private DNS, one network interface in every zone's private subnet:
# what nodes, Karpenter and Pod Identity call. AWS bills each one per zone and hour.
INTERFACE_ENDPOINTS = ("ecr.api", "ecr.dkr", "sts", "ec2", "sqs", "eks-auth")

# Control-plane log types sent to CloudWatch Logs (every type: the audit log is the record of who
# did what to the cluster).
CONTROL_PLANE_LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")


def kms_keys(has_storage: bool) -> int:
    """Customer managed KMS keys: the EKS secrets key, and the storage tiers' key when any tier exists."""
    return 1 + (1 if has_storage else 0)
