"""The Karpenter v1 controller policy, scoped to one cluster, one node role and one queue.

Statement for statement the reference policy of the Karpenter release the catalog installs
(aws/karpenter-provider-aws website/content/en/v1.14/getting-started/getting-started-with-karpenter/
cloudformation.yaml: its NodeLifecycle, IAMIntegration, EKSIntegration, Interruption, ZonalShift and
ResourceDiscovery policies merged into one document): EC2 writes only on resources tagged for
this cluster and a NodePool, PassRole only for the node role, reads limited to the region.
`ec2:DescribeInstanceStatus` feeds Karpenter's instance-health repair (without it the
controller logs that the check is off); `arc-zonal-shift:GetManagedResource`, scoped to this
cluster, lets it stop launching into a zone ARC has shifted traffic away from. The installed
release is 1.15.2, whose module carries no website; its chart says the RebootForRepair gate
needs `ec2:RebootInstances`, granted only under `health.repair: reboot`, on the instances the
deletion statement scopes (docs/health.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._common import POLICY_VERSION


@dataclass(frozen=True)
class _Scope:
    """What every statement is scoped to: one cluster, its node role and queue, one region."""

    partition: str
    region: str
    account: str
    cluster: str
    cluster_arn: str
    node_role_arn: str
    queue_arn: str

    @property
    def ec2(self) -> str:
        return f"arn:{self.partition}:ec2:{self.region}"

    @property
    def owned(self) -> dict[str, str]:
        """The resource carries this cluster's ownership tag."""
        return {f"aws:ResourceTag/kubernetes.io/cluster/{self.cluster}": "owned"}

    @property
    def request_owned(self) -> dict[str, str]:
        """The request tags what it creates as this cluster's."""
        return {
            f"aws:RequestTag/kubernetes.io/cluster/{self.cluster}": "owned",
            "aws:RequestTag/eks:eks-cluster-name": self.cluster,
        }

    @property
    def launched(self) -> list[str]:
        """Everything a launch creates."""
        kinds = ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
        return [f"{self.ec2}:*:{kind}/*" for kind in kinds]

    @property
    def profile(self) -> str:
        return f"arn:{self.partition}:iam::{self.account}:instance-profile/*"


_ANY_NODEPOOL = {"aws:ResourceTag/karpenter.sh/nodepool": "*"}
_REGION_TAG = "topology.kubernetes.io/region"


def _allow(sid: str, action: str | list[str], resource: str | list[str], **condition: Any) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": action, "Resource": resource}
    if condition:
        statement["Condition"] = condition
    return statement


def _node_lifecycle(s: _Scope) -> list[dict[str, Any]]:
    """Launch, tag and terminate instances: writes only on what this cluster and a NodePool own."""
    ec2, launch = s.ec2, ["ec2:RunInstances", "ec2:CreateFleet"]
    shared = ["image", "snapshot"]
    regional = ["security-group", "subnet", "capacity-reservation", "placement-group"]
    nodepool_request = {"aws:RequestTag/karpenter.sh/nodepool": "*"}
    creates = ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]
    node_tags = ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]  # what it may tag a node with later
    return [
        _allow(
            "AllowScopedEC2InstanceAccessActions",
            launch,
            [*(f"{ec2}::{kind}/*" for kind in shared), *(f"{ec2}:*:{kind}/*" for kind in regional)],
        ),
        _allow(
            "AllowScopedEC2LaunchTemplateAccessActions",
            launch,
            f"{ec2}:*:launch-template/*",
            StringEquals=s.owned,
            StringLike=_ANY_NODEPOOL,
        ),
        _allow(
            "AllowScopedEC2InstanceActionsWithTags",
            [*launch, "ec2:CreateLaunchTemplate"],
            s.launched,
            StringEquals=s.request_owned,
            StringLike=nodepool_request,
        ),
        _allow(
            "AllowScopedResourceCreationTagging",
            "ec2:CreateTags",
            s.launched,
            StringEquals={**s.request_owned, "ec2:CreateAction": creates},
            StringLike=nodepool_request,
        ),
        _allow(
            "AllowScopedResourceTagging",
            "ec2:CreateTags",
            f"{ec2}:*:instance/*",
            StringEquals=s.owned,
            StringLike=_ANY_NODEPOOL,
            StringEqualsIfExists={"aws:RequestTag/eks:eks-cluster-name": s.cluster},
            **{"ForAllValues:StringEquals": {"aws:TagKeys": node_tags}},
        ),
        _allow(
            "AllowScopedDeletion",
            ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
            StringEquals=s.owned,
            StringLike=_ANY_NODEPOOL,
        ),
    ]


def _reboot(s: _Scope) -> list[dict[str, Any]]:
    """`health.repair: reboot` (the RebootForRepair gate): reboot only the instances Karpenter
    launched for this cluster, scoped as the deletion of them is."""
    return [
        _allow(
            "AllowScopedReboot",
            "ec2:RebootInstances",
            f"{s.ec2}:*:instance/*",
            StringEquals=s.owned,
            StringLike=_ANY_NODEPOOL,
        )
    ]


_REGIONAL_READS = [
    "ec2:DescribeCapacityReservations",
    "ec2:DescribeImages",
    "ec2:DescribeInstances",
    "ec2:DescribeInstanceStatus",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplates",
    "ec2:DescribePlacementGroups",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSpotPriceHistory",
    "ec2:DescribeSubnets",
]


def _discovery(s: _Scope) -> list[dict[str, Any]]:
    """Reads: EC2 in the region, the zonal shift of this cluster, AMI parameters, prices."""
    return [
        _allow(
            "AllowRegionalReadActions",
            list(_REGIONAL_READS),
            "*",
            StringEquals={"aws:RequestedRegion": s.region},
        ),
        _allow(
            "AllowZonalShiftStatusReadOnly",
            "arc-zonal-shift:GetManagedResource",
            "*",
            StringEquals={"arc-zonal-shift:ResourceIdentifier": s.cluster_arn},
        ),
        _allow("AllowSSMReadActions", "ssm:GetParameter", f"arn:{s.partition}:ssm:{s.region}::parameter/aws/service/*"),
        _allow("AllowPricingReadActions", "pricing:GetProducts", "*"),
    ]


def _interruption(s: _Scope) -> list[dict[str, Any]]:
    """Drain the one interruption queue."""
    return [
        _allow(
            "AllowInterruptionQueueActions",
            ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            s.queue_arn,
        )
    ]


def _instance_profiles(s: _Scope) -> list[dict[str, Any]]:
    """Pass only the node role; manage only the instance profiles of this cluster's node classes."""
    region_owned = {f"aws:ResourceTag/{_REGION_TAG}": s.region}
    region_request = {f"aws:RequestTag/{_REGION_TAG}": s.region}
    any_class = {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    class_request = {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}
    profile_actions = ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"]
    return [
        _allow(
            "AllowPassingInstanceRole",
            "iam:PassRole",
            s.node_role_arn,
            StringEquals={"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]},
        ),
        _allow(
            "AllowScopedInstanceProfileCreationActions",
            "iam:CreateInstanceProfile",
            s.profile,
            StringEquals={**s.request_owned, **region_request},
            StringLike=class_request,
        ),
        _allow(
            "AllowScopedInstanceProfileTagActions",
            "iam:TagInstanceProfile",
            s.profile,
            StringEquals={**s.owned, **region_owned, **s.request_owned, **region_request},
            StringLike={**any_class, **class_request},
        ),
        _allow(
            "AllowScopedInstanceProfileActions",
            profile_actions,
            s.profile,
            StringEquals={**s.owned, **region_owned},
            StringLike=any_class,
        ),
        _allow("AllowInstanceProfileReadActions", "iam:GetInstanceProfile", s.profile),
        _allow("AllowUnscopedInstanceProfileListAction", "iam:ListInstanceProfiles", "*"),
    ]


def _eks(s: _Scope) -> list[dict[str, Any]]:
    """Find the API server endpoint of this cluster."""
    return [_allow("AllowAPIServerEndpointDiscovery", "eks:DescribeCluster", s.cluster_arn)]


def controller_policy(
    *,
    partition: str,
    region: str,
    account: str,
    cluster: str,
    cluster_arn: str,
    node_role_arn: str,
    queue_arn: str,
    reboot: bool = False,
) -> dict[str, Any]:
    """The controller's policy document: the statement groups in the reference policy's order;
    `reboot`: the pools' repair is reboot, which needs ec2:RebootInstances."""
    scope = _Scope(partition, region, account, cluster, cluster_arn, node_role_arn, queue_arn)
    groups = (_node_lifecycle, *((_reboot,) if reboot else ()), _discovery, _interruption, _instance_profiles, _eks)
    return {"Version": POLICY_VERSION, "Statement": [statement for group in groups for statement in group(scope)]}


def queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge (and SQS itself) may deliver; nobody may talk to the queue without TLS."""
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "EventBridgeDelivery",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }
