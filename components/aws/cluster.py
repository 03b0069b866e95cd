"""Cluster: the EKS control plane, its identities, the system node group and core add-ons.

GPU capacity is not here: Karpenter launches it (GpuNodePool). This component gives the
platform's controllers somewhere to run (the system node group: Karpenter, CoreDNS, the GPU
Operator, Kueue, HAMi's scheduler, KEDA, the CSI controllers and Prometheus) and what GPU
nodes need to join (the node role and its access entry). The group is not tainted: those
charts do not tolerate CriticalAddonsOnly, and GPU nodes are tainted instead, so ordinary
CPU pods land here rather than on GPUs.

Two node roles: EKS creates the access entry of a managed node group's role by itself, and
an explicit entry for the same role collides with it. Karpenter's nodes get their own role
with an explicit EC2_LINUX entry, as in the upstream Karpenter and terraform-aws-eks setups.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from gpuplat.catalog.footprint import CONTROL_PLANE_LOG_TYPES, SYSTEM_INSTANCE_TYPE, SYSTEM_NODES, SYSTEM_ROOT_GIB
from gpuplat.model import Platform

from .._common import child_opts, stateful
from ._common import assume_role_policy, partition, region_of, tags
from .api_access import ApiAccess, api_ingress

LOG_TYPES = list(CONTROL_PLANE_LOG_TYPES)
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEKS_CNI_Policy",
    "AmazonSSMManagedInstanceCore",  # shell access through SSM instead of SSH keys
)
# Installed before any node exists (nodes need the CNI to become Ready, Pod Identity is
# how Karpenter gets credentials); CoreDNS waits for the system nodes it runs on.
EARLY_ADDONS = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")
# The node monitoring agent (a DaemonSet) sets AcceleratedHardwareReady, KernelReady, ... on
# every node; Karpenter's node repair acts on them (docs/health.md).
LATE_ADDONS = ("coredns", "eks-node-monitoring-agent")
# Add-on settings (each add-on's configuration schema, `aws eks describe-addon-configuration`).
# The VPC CNI enforces NetworkPolicies only with its network policy agent on: without it the
# tenants' default-deny and allow policies are accepted and silently ignored.
ADDON_CONFIGURATION: dict[str, dict[str, str]] = {"vpc-cni": {"enableNetworkPolicy": "true"}}


def public_access_cidrs(model: Platform, api_access: ApiAccess) -> list[str] | None:
    """The spec's `publicAccessCidrs` then the stack's runner CIDRs, once each; None: open (AWS's default)."""
    cidrs = list(dict.fromkeys([*model.target.public_access_cidrs, *api_access.cidrs]))
    return cidrs or None


def kubeconfig(cluster: str, endpoint: str, ca_data: str, region: str) -> str:
    """A kubeconfig that gets short-lived tokens from `aws eks get-token` (no static secret)."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "aws",
            "args": ["eks", "get-token", "--cluster-name", cluster, "--region", region, "--output", "json"],
            "interactiveMode": "Never",
        }
    }
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": cluster, "cluster": {"server": endpoint, "certificate-authority-data": ca_data}}],
            "users": [{"name": cluster, "user": user}],
            "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster}}],
            "current-context": cluster,
        },
        sort_keys=True,
    )


@dataclass(frozen=True)
class ClusterArgs:
    model: Platform
    cluster_name: str
    subnet_ids: Sequence[pulumi.Input[str]]  # private subnets, one per zone
    api_access: ApiAccess = field(default_factory=ApiAccess)  # who runs `pulumi up`: from stack config (api_access.py)


def cluster_args(
    model: Platform, cluster_name: str, role_arn: pulumi.Input[str], key_arn: pulumi.Input[str], args: ClusterArgs
) -> aws.eks.ClusterArgs:
    """The control plane: private endpoint (public only if the spec says), API auth, secrets in KMS."""
    public = model.target.endpoint == "public"
    return aws.eks.ClusterArgs(
        name=cluster_name,
        role_arn=role_arn,
        version=model.target.kubernetes_version,
        # Said explicitly rather than left to the account default: EXTENDED keeps the control plane
        # on the spec's minor after standard support ends (billed at the extended rate, which
        # `check` warns about) instead of EKS upgrading it under the pinned charts and AMIs.
        upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type="EXTENDED"),
        vpc_config=aws.eks.ClusterVpcConfigArgs(
            subnet_ids=list(args.subnet_ids),
            endpoint_private_access=True,
            endpoint_public_access=public,
            # A public endpoint open only to the spec's CIDRs and the stack's runners when they are named.
            public_access_cidrs=public_access_cidrs(model, args.api_access) if public else None,
        ),
        access_config=aws.eks.ClusterAccessConfigArgs(
            authentication_mode="API",
            # Who deploys becomes cluster-admin (an access entry EKS makes at creation). Said
            # explicitly from the spec; fixed at creation, so existing stacks keep true.
            bootstrap_cluster_creator_admin_permissions=model.target.bootstrap_cluster_creator_admin,
        ),
        enabled_cluster_log_types=LOG_TYPES,
        encryption_config=aws.eks.ClusterEncryptionConfigArgs(
            provider=aws.eks.ClusterEncryptionConfigProviderArgs(key_arn=key_arn),
            resources=["secrets"],
        ),
        # The add-ons below are EKS-managed; the self-managed copies would only be replaced.
        bootstrap_self_managed_addons=False,
        deletion_protection=True,
        tags=tags(model, cluster_name),
    )


def addon_args(model: Platform, cluster_name: str, eks_name: pulumi.Input[str], addon_name: str) -> aws.eks.AddonArgs:
    configuration = ADDON_CONFIGURATION.get(addon_name)
    return aws.eks.AddonArgs(
        cluster_name=eks_name,
        addon_name=addon_name,
        # The spec's pin; unset, EKS installs its default once and never moves it.
        addon_version=model.target.addon_versions.get(addon_name),
        configuration_values=json.dumps(configuration, sort_keys=True) if configuration else None,
        # Take over whatever is there at creation; keep hand-made config edits on update.
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="PRESERVE",
        tags=tags(model, f"{cluster_name}-{addon_name}"),
    )


def system_launch_template_args(model: Platform, cluster_name: str) -> aws.ec2.LaunchTemplateArgs:
    """The system nodes' launch template: IMDSv2 only, one hop, an encrypted gp3 root volume."""
    return aws.ec2.LaunchTemplateArgs(
        description=f"System node group of {cluster_name}: IMDSv2 only, encrypted root volume",
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled",
            http_tokens="required",
            # 1 keeps pods off the node's instance credentials; they use Pod Identity.
            http_put_response_hop_limit=1,
        ),
        block_device_mappings=[
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name="/dev/xvda",
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=SYSTEM_ROOT_GIB,
                    volume_type="gp3",
                    encrypted="true",
                    delete_on_termination="true",
                ),
            )
        ],
        tag_specifications=[
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags(model, f"{cluster_name}-system"))
            for kind in ("instance", "volume", "network-interface")
        ],
        update_default_version=True,
        tags=tags(model, f"{cluster_name}-system"),
    )


def system_node_group_args(
    model: Platform,
    cluster_name: str,
    eks_name: pulumi.Input[str],
    role_arn: pulumi.Input[str],
    template: aws.ec2.LaunchTemplate,
    subnet_ids: Sequence[pulumi.Input[str]],
) -> aws.eks.NodeGroupArgs:
    low, desired, high = SYSTEM_NODES
    return aws.eks.NodeGroupArgs(
        cluster_name=eks_name,
        node_role_arn=role_arn,
        subnet_ids=list(subnet_ids),
        scaling_config=aws.eks.NodeGroupScalingConfigArgs(min_size=low, desired_size=desired, max_size=high),
        instance_types=[SYSTEM_INSTANCE_TYPE],
        ami_type="AL2023_x86_64_STANDARD",
        capacity_type="ON_DEMAND",
        launch_template=aws.eks.NodeGroupLaunchTemplateArgs(id=template.id, version=template.latest_version.apply(str)),
        update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
        tags=tags(model, f"{cluster_name}-system"),
    )


class Cluster(pulumi.ComponentResource):
    cluster_name: pulumi.Output[str]
    arn: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    security_group_id: pulumi.Output[str]  # the EKS-managed cluster security group
    kubeconfig: pulumi.Output[str]
    node_role_name: pulumi.Output[str]  # Karpenter-launched nodes
    node_role_arn: pulumi.Output[str]
    secrets_key_arn: pulumi.Output[str]
    pod_identity_agent: aws.eks.Addon
    ready: list[pulumi.Resource]  # wait for these before installing workloads

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpuplat:index:Cluster", name, None, opts)
        self._name, self._model, self._cluster = name, args.model, args.cluster_name
        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"EKS secrets encryption of {self._cluster}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=tags(self._model, f"{self._cluster}-secrets"),
            opts=stateful(self),
        )
        cluster_role, cluster_policy = self._control_plane_role()
        system_role, system_attachments = self._node_role("system-node-role", "System node group nodes")
        karpenter_node_role, _ = self._node_role("node-role", "Karpenter-launched GPU nodes")
        eks = aws.eks.Cluster(
            f"{name}-eks",
            cluster_args(self._model, self._cluster, cluster_role.arn, key.arn, args),
            opts=stateful(self, [cluster_policy]),
        )
        early = {addon_name: self._addon(eks, addon_name) for addon_name in EARLY_ADDONS}
        template = aws.ec2.LaunchTemplate(
            f"{name}-system", system_launch_template_args(self._model, self._cluster), opts=child_opts(self)
        )
        system = aws.eks.NodeGroup(
            f"{name}-system",
            system_node_group_args(self._model, self._cluster, eks.name, system_role.arn, template, args.subnet_ids),
            opts=child_opts(self, depends_on=[*system_attachments, early["vpc-cni"], early["kube-proxy"]]),
        )
        late = [self._addon(eks, addon_name, [system]) for addon_name in LATE_ADDONS]
        pod_identity = early["eks-pod-identity-agent"]
        late.append(ebs_csi_addon(self, name, self._model, self._cluster, eks.name, [system, pod_identity]))
        node_access = aws.eks.AccessEntry(
            f"{name}-node-access",
            cluster_name=eks.name,
            principal_arn=karpenter_node_role.arn,
            type="EC2_LINUX",
            tags=tags(self._model, f"{self._cluster}-node-access"),
            opts=child_opts(self),
        )
        api_rules = self._publish(eks, key, karpenter_node_role, pod_identity, args)
        # Every Kubernetes object goes through the API endpoint: wait until the runner can reach it.
        self.ready = [system, node_access, *early.values(), *late, *api_rules]

    def _control_plane_role(self) -> tuple[aws.iam.Role, aws.iam.RolePolicyAttachment]:
        role = aws.iam.Role(
            f"{self._name}-role",
            assume_role_policy=assume_role_policy("eks.amazonaws.com", tag_session=True),
            description=f"EKS control plane of {self._cluster}",
            tags=tags(self._model, f"{self._cluster}-cluster"),
            opts=child_opts(self),
        )
        policy = aws.iam.RolePolicyAttachment(
            f"{self._name}-role-AmazonEKSClusterPolicy",
            role=role.name,
            policy_arn=f"{_managed_policies(self._model)}/AmazonEKSClusterPolicy",
            opts=child_opts(self),
        )
        return role, policy

    def _node_role(self, suffix: str, purpose: str) -> tuple[aws.iam.Role, list[pulumi.Resource]]:
        role = aws.iam.Role(
            f"{self._name}-{suffix}",
            assume_role_policy=assume_role_policy("ec2.amazonaws.com"),
            description=f"{purpose} of {self._cluster}",
            tags=tags(self._model, f"{self._cluster}-{suffix}"),
            opts=child_opts(self),
        )
        attachments: list[pulumi.Resource] = [
            aws.iam.RolePolicyAttachment(
                f"{self._name}-{suffix}-{policy}",
                role=role.name,
                policy_arn=f"{_managed_policies(self._model)}/{policy}",
                opts=child_opts(self),
            )
            for policy in NODE_POLICIES
        ]
        return role, attachments

    def _addon(
        self, eks: aws.eks.Cluster, addon_name: str, depends_on: Sequence[pulumi.Resource] = ()
    ) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{self._name}-addon-{addon_name}",
            addon_args(self._model, self._cluster, eks.name, addon_name),
            opts=child_opts(self, depends_on=list(depends_on)),
        )

    def _publish(
        self, eks: aws.eks.Cluster, key: aws.kms.Key, node_role: aws.iam.Role, agent: aws.eks.Addon, args: ClusterArgs
    ) -> list[aws.vpc.SecurityGroupIngressRule]:
        """The outputs; returns the API access rules, which hang on the cluster security group."""
        region = region_of(self._model)
        self.cluster_name = eks.name
        self.arn = eks.arn
        self.endpoint = eks.endpoint
        self.security_group_id = eks.vpc_config.apply(lambda vpc: vpc.cluster_security_group_id or "")
        api_rules = api_ingress(self, self._name, self._model, self._cluster, self.security_group_id, args.api_access)
        self.kubeconfig = pulumi.Output.all(eks.name, eks.endpoint, eks.certificate_authority.data).apply(
            lambda parts: kubeconfig(parts[0], parts[1], parts[2], region)
        )
        self.node_role_name = node_role.name
        self.node_role_arn = node_role.arn
        self.secrets_key_arn = key.arn
        self.pod_identity_agent = agent
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "arn": self.arn,
                "endpoint": self.endpoint,
                "securityGroupId": self.security_group_id,
                "kubeconfig": self.kubeconfig,
                "nodeRoleName": self.node_role_name,
                "nodeRoleArn": self.node_role_arn,
                "secretsKeyArn": self.secrets_key_arn,
            }
        )
        return api_rules


def _managed_policies(model: Platform) -> str:
    """The ARN prefix of AWS-managed policies in the spec region's partition."""
    return f"arn:{partition(region_of(model))}:iam::aws:policy"


# The EBS CSI add-on's controller service account (the add-on creates it in kube-system).
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"


def ebs_csi_addon(
    parent: pulumi.Resource,
    name: str,
    model: Platform,
    cluster_name: str,
    eks_name: pulumi.Input[str],
    depends_on: Sequence[pulumi.Resource],
) -> aws.eks.Addon:
    """The EBS CSI driver add-on: EKS has no EBS provisioner without it (Prometheus's volume).

    Its controller creates and attaches volumes with the AWS-managed AmazonEBSCSIDriverPolicy
    (scoped to volumes and snapshots it tags), through a role the add-on binds by Pod Identity.
    """
    role = aws.iam.Role(
        f"{name}-ebs-csi",
        assume_role_policy=assume_role_policy("pods.eks.amazonaws.com", tag_session=True),
        description=f"EBS CSI driver of {cluster_name} (EKS Pod Identity)",
        tags=tags(model, f"{cluster_name}-ebs-csi"),
        opts=child_opts(parent),
    )
    policy = aws.iam.RolePolicyAttachment(
        f"{name}-ebs-csi-AmazonEBSCSIDriverPolicy",
        role=role.name,
        policy_arn=f"arn:{partition(region_of(model))}:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy",
        opts=child_opts(parent),
    )
    return aws.eks.Addon(
        f"{name}-addon-aws-ebs-csi-driver",
        cluster_name=eks_name,
        addon_name="aws-ebs-csi-driver",
        addon_version=model.target.addon_versions.get("aws-ebs-csi-driver"),
        pod_identity_associations=[
            aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=EBS_CSI_SERVICE_ACCOUNT)
        ],
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="PRESERVE",
        tags=tags(model, f"{cluster_name}-aws-ebs-csi-driver"),
        opts=child_opts(parent, depends_on=[*depends_on, policy]),
    )
