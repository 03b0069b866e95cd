"""The Karpenter controller policy against the upstream reference policy, statement by statement.

UPSTREAM is read off aws/karpenter-provider-aws
website/content/en/v1.14/getting-started/getting-started-with-karpenter/cloudformation.yaml
(commit 1d927085dd81a9df9301e613f371dac5b4d16bfe, 2026-08-21; the chart the catalog installs is
1.14.1): every statement of its NodeLifecycle, IAMIntegration, EKSIntegration, Interruption,
ZonalShift and ResourceDiscovery managed policies, by Sid, with its actions. EXTRA lists what the
platform grants beyond it and why. INTERRUPTION_RULES are the detail-types of its EventBridge rules.
"""

from __future__ import annotations

from typing import Any

from components.aws.karpenter import INTERRUPTION_EVENTS
from components.aws.karpenter_policy import controller_policy

UPSTREAM: dict[str, frozenset[str]] = {
    "AllowScopedEC2InstanceAccessActions": frozenset({"ec2:RunInstances", "ec2:CreateFleet"}),
    "AllowScopedEC2LaunchTemplateAccessActions": frozenset({"ec2:RunInstances", "ec2:CreateFleet"}),
    "AllowScopedEC2InstanceActionsWithTags": frozenset(
        {"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"}
    ),
    "AllowScopedResourceCreationTagging": frozenset({"ec2:CreateTags"}),
    "AllowScopedResourceTagging": frozenset({"ec2:CreateTags"}),
    "AllowScopedDeletion": frozenset({"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"}),
    "AllowPassingInstanceRole": frozenset({"iam:PassRole"}),
    "AllowScopedInstanceProfileCreationActions": frozenset({"iam:CreateInstanceProfile"}),
    "AllowScopedInstanceProfileTagActions": frozenset({"iam:TagInstanceProfile"}),
    "AllowScopedInstanceProfileActions": frozenset(
        {"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"}
    ),
    "AllowAPIServerEndpointDiscovery": frozenset({"eks:DescribeCluster"}),
    "AllowInterruptionQueueActions": frozenset({"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}),
    "AllowZonalShiftStatusReadOnly": frozenset({"arc-zonal-shift:GetManagedResource"}),
    "AllowRegionalReadActions": frozenset(
        {
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
        }
    ),
    "AllowSSMReadActions": frozenset({"ssm:GetParameter"}),
    "AllowPricingReadActions": frozenset({"pricing:GetProducts"}),
    "AllowUnscopedInstanceProfileListAction": frozenset({"iam:ListInstanceProfiles"}),
    "AllowInstanceProfileReadActions": frozenset({"iam:GetInstanceProfile"}),
}
# Upstream's CapacityReservationInterruptionRule, ScheduledChangeRule, SpotInterruptionRule,
# RebalanceRule and InstanceStateChangeRule.
INTERRUPTION_RULES = {
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
}

CLUSTER_ARN = "arn:aws:eks:us-east-1:111122223333:cluster/gpu"


def _policy(reboot: bool = False) -> dict[str, Any]:
    return controller_policy(
        partition="aws",
        region="us-east-1",
        account="111122223333",
        cluster="gpu",
        cluster_arn=CLUSTER_ARN,
        node_role_arn="arn:aws:iam::111122223333:role/node",
        queue_arn="arn:aws:sqs:us-east-1:111122223333:gpu",
        reboot=reboot,
    )


def _actions(statement: dict[str, Any]) -> frozenset[str]:
    action = statement["Action"]
    return frozenset([action] if isinstance(action, str) else action)


def test_every_upstream_statement_with_exactly_its_actions() -> None:
    ours = {s["Sid"]: _actions(s) for s in _policy()["Statement"]}
    assert set(ours) == set(UPSTREAM), "statements differ from the upstream v1.14 reference policy"
    for sid, actions in UPSTREAM.items():
        assert ours[sid] == actions, sid


def test_zonal_shift_read_is_scoped_to_this_cluster() -> None:
    (statement,) = [s for s in _policy()["Statement"] if s["Sid"] == "AllowZonalShiftStatusReadOnly"]
    assert statement["Condition"] == {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": CLUSTER_ARN}}


def test_launch_statement_keeps_placement_groups_and_reservations() -> None:
    (statement,) = [s for s in _policy()["Statement"] if s["Sid"] == "AllowScopedEC2InstanceAccessActions"]
    kinds = {r.rsplit(":", 1)[1].split("/")[0] for r in statement["Resource"]}
    assert kinds == {"image", "snapshot", "security-group", "subnet", "capacity-reservation", "placement-group"}


def test_interruption_rules_match_upstream() -> None:
    assert set(INTERRUPTION_EVENTS.values()) == INTERRUPTION_RULES


def test_reboot_only_under_repair_reboot_and_only_karpenter_s_instances_of_this_cluster() -> None:
    """The 1.15 chart: RebootForRepair "requires the ec2:RebootInstances permission"; granted only
    with `health.repair: reboot`, scoped like the deletion of the instances it launched."""
    assert not any("ec2:RebootInstances" in _actions(s) for s in _policy()["Statement"])
    statements = _policy(reboot=True)["Statement"]
    (reboot,) = [s for s in statements if "ec2:RebootInstances" in _actions(s)]
    (deletion,) = [s for s in statements if s["Sid"] == "AllowScopedDeletion"]
    assert _actions(reboot) == {"ec2:RebootInstances"}
    assert reboot["Resource"] == "arn:aws:ec2:us-east-1:*:instance/*"
    assert reboot["Condition"] == deletion["Condition"] == {
        "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/gpu": "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
    }
    assert {s["Sid"] for s in statements} - {"AllowScopedReboot"} == set(UPSTREAM)
