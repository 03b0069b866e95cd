"""Policies on the cluster and its nodes: EKS, node metadata and disks, NodePools, what expands at run time."""

from __future__ import annotations

from ._base import COMPUTED, Context, Resource, as_list, as_map, expect, get_path, is_true, resource_rule, type_tokens

EKS = "aws:eks/cluster:Cluster"
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")


@resource_rule("eks-secrets-encryption", "mandatory", "EKS encrypts Kubernetes secrets with a KMS key", EKS)
def _eks_secrets(r: Resource, ctx: Context) -> list[str]:
    for config in as_list(r.props.get("encryptionConfig")):  # an object in pulumi-aws 7, a list before
        if get_path(config, "provider", "keyArn") and "secrets" in as_list(get_path(config, "resources")):
            return []
    return ["no encryptionConfig with a KMS keyArn for resources [secrets]"]


@resource_rule("eks-control-plane-logs", "mandatory", "EKS sends all five control-plane log types to CloudWatch", EKS)
def _eks_logs(r: Resource, ctx: Context) -> list[str]:
    enabled = r.props.get("enabledClusterLogTypes")
    missing = [t for t in LOG_TYPES if t not in as_list(enabled)]
    return [f"log types not enabled: {', '.join(missing)}"] if missing and enabled != COMPUTED else []


# AWS makes the endpoint public when the field is omitted: only an explicit false passes.
resource_rule("eks-private-endpoint-prod", "mandatory", "The EKS API endpoint of stack prod is not public", EKS)(
    lambda r, c: expect(r, "vpcConfig/endpointPublicAccess", [False], "unset (public)") if c.stack == "prod" else []
)
resource_rule(
    "eks-api-authentication", "mandatory", "EKS authenticates with access entries (API or API_AND_CONFIG_MAP)", EKS
)(lambda r, _: expect(r, "accessConfig/authenticationMode", ["API", "API_AND_CONFIG_MAP"], "unset (CONFIG_MAP)"))


NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"

resource_rule(
    "imdsv2-required", "mandatory", "Nodes require IMDSv2 (httpTokens: required)", NODE_CLASS, LAUNCH_TEMPLATE
)(lambda r, _: expect(r, f"{'spec/' if r.type == NODE_CLASS else ''}metadataOptions/httpTokens", ["required"]))


@resource_rule("root-volume-encrypted", "mandatory", "Node EBS volumes are encrypted", NODE_CLASS, LAUNCH_TEMPLATE)
def _root_encrypted(r: Resource, ctx: Context) -> list[str]:
    if r.type == LAUNCH_TEMPLATE:
        volumes = [m for m in as_list(r.props.get("blockDeviceMappings")) if get_path(m, "ebs")]
        plain = [m for m in volumes if not is_true(get_path(m, "ebs", "encrypted"))]
        return [f"EBS volume {get_path(m, 'deviceName')} is not encrypted" for m in plain]
    mappings = as_list(get_path(r.props, "spec", "blockDeviceMappings"))
    roots = [m for m in mappings if is_true(get_path(m, "rootVolume"))]
    roots = roots or [m for m in mappings if get_path(m, "deviceName") == "/dev/xvda"]
    if not roots:
        return ["spec.blockDeviceMappings has no root volume (rootVolume: true or /dev/xvda)"]
    return (
        []
        if all(is_true(get_path(m, "ebs", "encrypted")) for m in roots)
        else ["root volume ebs.encrypted is not true"]
    )


@resource_rule(
    "karpenter-gpu-limit", "mandatory", "NodePools cap nvidia.com/gpu", "kubernetes:karpenter.sh/v1:NodePool"
)
def _gpu_limit(r: Resource, ctx: Context) -> list[str]:
    limits = get_path(r.props, "spec", "limits")
    if limits == COMPUTED or as_map(limits).get("nvidia.com/gpu") is not None:
        return []
    return ['spec.limits has no "nvidia.com/gpu": the pool could grow without bound']


HELM_V4_CHART = "kubernetes:helm.sh/v4:Chart"
# Components a provider expands at run time. CrossGuard does not see options.remote, so the
# known ones are also named by type token, and pulumi-eks / pulumi-awsx by package.
REMOTE_TYPES = type_tokens("kubernetes:", "yaml/v2:ConfigFile yaml/v2:ConfigGroup kustomize/v2:Directory")
REMOTE_PACKAGES = ("eks", "awsx")


@resource_rule(
    "no-remote-components", "mandatory", "No multi-language components (pulumi-eks, pulumi-awsx, yaml/v2 ...)"
)
def _no_remote(r: Resource, ctx: Context) -> list[str]:
    remote = bool(r.options and r.options.get("remote"))
    if r.type != HELM_V4_CHART and (remote or r.type in REMOTE_TYPES or r.type.split(":")[0] in REMOTE_PACKAGES):
        return [f"{r.type} is expanded by a plugin at run time: preview and policies cannot see inside"]
    return []  # helm.v4.Chart is remote too, and reported once, by no-helm-v4-chart


resource_rule(
    "no-helm-v4-chart", "mandatory", "Charts install with helm.v3.Release, never helm.v4.Chart", HELM_V4_CHART
)(lambda r, _: ["helm.v4.Chart renders its objects inside the provider; use kubernetes.helm.v3.Release"])
