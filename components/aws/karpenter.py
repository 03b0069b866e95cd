"""Karpenter: the controller that launches every GPU node, with its identity and event feed.

Credentials come from EKS Pod Identity (no OIDC provider, no IRSA annotation to keep in
sync). The interruption queue gets EC2 spot warnings, rebalance recommendations, state
changes, capacity-reservation interruption warnings and AWS Health scheduled changes, so
Karpenter drains a node before AWS takes it.

The CRDs are their own Helm release: Helm never upgrades a chart's `crds/` directory, so
CRD upgrades only happen through karpenter-crd, and the controller release skips its copy.
NodePools and EC2NodeClasses depend on both releases (`releases`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpuplat.catalog import CHARTS
from gpuplat.model import Platform, Repair

from .._common import child_opts
from ..kubernetes._common import helm_release
from ._common import assume_role_policy, partition, region_of, tags
from .karpenter_policy import controller_policy, queue_policy

SERVICE_ACCOUNT = "karpenter"
# detail-type of the EventBridge events Karpenter's interruption controller handles.
INTERRUPTION_EVENTS = {
    "spot-interruption": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state-change": ("aws.ec2", "EC2 Instance State-change Notification"),
    "scheduled-change": ("aws.health", "AWS Health Event"),
    # Capacity reservations (and Capacity Blocks) that end or are reclaimed warn their instances first.
    "capacity-reservation": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


@dataclass(frozen=True)
class KarpenterArgs:
    model: Platform
    cluster_name: str
    cluster_arn: pulumi.Input[str]
    cluster_endpoint: pulumi.Input[str]
    node_role_arn: pulumi.Input[str]
    account_id: pulumi.Input[str]
    pod_identity_agent: pulumi.Resource  # the association is useless without the agent
    depends_on: Sequence[pulumi.Resource]  # the cluster's system nodes and add-ons the controller needs


def controller_repair(model: Platform) -> Repair:
    """The controller's repair: the aws pools' one `health.repair` (rule GP381), none without pools."""
    chosen = {p.health.repair for p in model.pools}
    for repair in (Repair.REBOOT, Repair.REPLACE):
        if repair in chosen:
            return repair
    return Repair.NONE


def controller_values(
    cluster: str, endpoint: pulumi.Input[str], queue_name: pulumi.Input[str], region: str,
    repair: Repair = Repair.REPLACE,
) -> dict[str, Any]:
    """The controller chart's values: its service account, cluster, queue and feature gates.
    `repair`: the pools' `health.repair` (one gate for every NodePool, rule GP381)."""
    return {
        "serviceAccount": {"name": SERVICE_ACCOUNT},
        "settings": {
            "clusterName": cluster,
            "clusterEndpoint": endpoint,
            "interruptionQueue": queue_name,
            # reserved NodePools use ODCRs; NodeOverlays tell Karpenter what shared GPU
            # pools advertise (GpuNodePool); nodeRepair replaces a node whose condition the
            # EKS node monitoring agent (Cluster) turned unhealthy, e.g. AcceleratedHardwareReady.
            "featureGates": {"reservedCapacity": True, "nodeOverlay": True, "nodeRepair": repair is not Repair.NONE},
            # The AWS provider's: reboot in place for a reboot-clearable GPU XID (docs/health.md).
            "awsFeatureGates": {"rebootForRepair": repair is Repair.REBOOT},
        },
        "controller": {
            # IMDS is out of reach of pods (hop limit 1), so the region is given.
            "env": [{"name": "AWS_REGION", "value": region}],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}},
        },
    }


class Karpenter(pulumi.ComponentResource):
    crds_release: k8s.helm.v3.Release
    release: k8s.helm.v3.Release
    releases: list[pulumi.Resource]  # depend on these before creating NodePools / EC2NodeClasses
    role_arn: pulumi.Output[str]
    queue_name: pulumi.Output[str]

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Karpenter", name, None, opts)
        queue, queue_access = self._interruption_queue(name, args)
        role, association = self._identity(name, args, queue)
        self.crds_release = helm_release(
            self, name, "karpenter-crd", {}, depends_on=args.depends_on, namespace="helm", suffix="crd"
        )
        repair = controller_repair(args.model)
        values = controller_values(args.cluster_name, args.cluster_endpoint, queue.name, region_of(args.model), repair)
        self.release = helm_release(
            self,
            name,
            "karpenter",
            values,
            depends_on=[self.crds_release, association, queue_access, *args.depends_on],
            namespace="existing",  # the CRD release's
            suffix="controller",
            skip_crds=True,
        )
        self.releases = [self.crds_release, self.release]
        self.role_arn = role.arn
        self.queue_name = queue.name
        self.register_outputs({"roleArn": self.role_arn, "queueName": self.queue_name})

    def _interruption_queue(self, name: str, args: KarpenterArgs) -> tuple[aws.sqs.Queue, aws.sqs.QueuePolicy]:
        """The queue, its policy, and one EventBridge rule and target per interruption event."""
        model, cluster = args.model, args.cluster_name
        queue = aws.sqs.Queue(
            f"{name}-interruptions",
            message_retention_seconds=300,  # an interruption warning is worthless after minutes
            sqs_managed_sse_enabled=True,
            tags=tags(model, f"{cluster}-karpenter-interruptions"),
            opts=child_opts(self),
        )
        queue_access = aws.sqs.QueuePolicy(
            f"{name}-interruptions",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(queue_policy(arn))),
            opts=child_opts(self),
        )
        for suffix, (source, detail_type) in INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{suffix}",
                description=f"{detail_type} -> Karpenter of {cluster}",
                event_pattern=json.dumps({"source": [source], "detail-type": [detail_type]}),
                tags=tags(model, f"{cluster}-karpenter-{suffix}"),
                opts=child_opts(self),
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{suffix}",
                rule=rule.name,
                arn=queue.arn,
                opts=child_opts(self, depends_on=[queue_access]),
            )
        return queue, queue_access

    def _identity(
        self, name: str, args: KarpenterArgs, queue: aws.sqs.Queue
    ) -> tuple[aws.iam.Role, aws.eks.PodIdentityAssociation]:
        """The controller's role, its scoped policy, and the Pod Identity association that hands it over."""
        model, cluster = args.model, args.cluster_name
        region = region_of(model)
        role = aws.iam.Role(
            f"{name}-controller",
            assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
            description=f"Karpenter controller of {cluster} (EKS Pod Identity)",
            tags=tags(model, f"{cluster}-karpenter"),
            opts=child_opts(self),
        )

        def policy(v: list[Any]) -> str:
            document = controller_policy(
                partition=partition(region),
                region=region,
                account=v[0],
                cluster=cluster,
                cluster_arn=v[1],
                node_role_arn=v[2],
                queue_arn=v[3],
                reboot=controller_repair(args.model) is Repair.REBOOT,
            )
            return json.dumps(document)

        aws.iam.RolePolicy(
            f"{name}-controller",
            role=role.name,
            policy=pulumi.Output.all(args.account_id, args.cluster_arn, args.node_role_arn, queue.arn).apply(policy),
            opts=child_opts(self),
        )
        association = aws.eks.PodIdentityAssociation(
            f"{name}-controller",
            cluster_name=cluster,
            namespace=CHARTS["karpenter"].namespace,
            service_account=SERVICE_ACCOUNT,
            role_arn=role.arn,
            tags=tags(model, f"{cluster}-karpenter"),
            opts=child_opts(self, depends_on=[args.pod_identity_agent]),
        )
        return role, association
