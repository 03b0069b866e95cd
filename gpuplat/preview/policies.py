"""The policy pack's rules, pure Python so CrossGuard (policy/) and `gpuplat policy` share them.

A resource is seen as the engine hands it to an analyzer: its type token, its inputs with the
wire's camelCase keys (unknown values as "<computed>", as in the recording) and the options that
are visible (None: none). Offline all recorded options are; CrossGuard sees `protect` only
(pulumi_policy has no retainOnDelete or remote), so rules needing more are crossguard=False.

Unknown values never produce a violation: during a real preview many inputs are computed,
and a rule that fails on "can't tell" would block every first deployment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from .policy_config import PolicyConfig
from .stateful import STATEFUL_TYPES, TENANT_TYPES, is_stateful, must_retain

Level = Literal["mandatory", "advisory"]
COMPUTED = "<computed>"


@dataclass(frozen=True)
class Context:
    stack: str
    tag_keys: frozenset[str] | None = None  # the spec's metadata.tags keys; None: not known here
    config: PolicyConfig = field(default_factory=PolicyConfig)  # the organisation's settings (policy_config)
    gpu_monthly_usd: float | None = None  # the plan's expected GPU spend; None: the plan has no cost


@dataclass(frozen=True)
class Resource:
    urn: str
    type: str
    props: Mapping[str, Any]
    options: Mapping[str, Any] | None = None
    depends_on: frozenset[str] = frozenset()  # URNs it waits on (explicit or through its inputs)


Check = Callable[[Resource, Context], list[str]]
StackCheck = Callable[[Sequence[Resource], Context], list[tuple[str, str]]]  # (urn, message)


@dataclass(frozen=True)
class Policy:
    name: str
    level: Level
    description: str
    check: Check | None = None
    stack_check: StackCheck | None = None
    types: frozenset[str] | None = None  # None: every type
    crossguard: bool = True  # False: CrossGuard cannot see what the rule needs

    def check_resource(
        self, type_: str, props: Mapping[str, Any], options: Mapping[str, Any] | None, urn: str, ctx: Context
    ) -> list[str]:
        """Messages about one resource; [] when it passes or the policy is not about its type."""
        if self.check is None or (self.types is not None and type_ not in self.types):
            return []
        return self.check(Resource(urn, type_, props, options), ctx)


REGISTRY: list[Policy] = []


def _rule(name: str, level: Level, description: str, *types: str, crossguard: bool = True) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        REGISTRY.append(Policy(name, level, description, fn, None, frozenset(types) or None, crossguard))
        return fn

    return register


def _stack_rule(name: str, description: str, level: Level = "mandatory") -> Callable[[StackCheck], StackCheck]:
    def register(fn: StackCheck) -> StackCheck:
        REGISTRY.append(Policy(name, level, description, stack_check=fn))
        return fn

    return register


def _map(value: Any) -> Mapping[str, Any]:
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return list(cast("Sequence[Any]", value)) if isinstance(value, (list, tuple)) else [] if value is None else [value]


def _get(value: Any, *path: str) -> Any:
    for key in path:
        value = _map(value).get(key)
    return value


def _true(value: Any) -> bool:
    # pulumi-aws types some booleans as strings (launch template ebs.encrypted is "true").
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _number(value: Any) -> float | None:
    # CrossGuard hands every number over as a float; the recording turns whole ones into ints.
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    return [_map(s) for s in _list(_map(document).get("Statement"))]


def _expect(r: Resource, path: str, accepted: Sequence[Any], unset: str = "unset") -> list[str]:
    """[] when the input at `path` (keys joined by '/') is unknown or one of `accepted`."""
    value = _get(r.props, *path.split("/"))
    if value == COMPUTED or (value is not None and value in accepted):
        return []
    shown, wanted = unset if value is None else json.dumps(value), " or ".join(map(json.dumps, accepted))
    return [f"{path.replace('/', '.')} is {shown}, not {wanted}"]


def _types(prefix: str, names: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{name}" for name in names.split())


BUCKETS = _types("aws:s3/", "bucket:Bucket bucketV2:BucketV2")
DIRECTORY_BUCKET = "aws:s3/directoryBucket:DirectoryBucket"
PUBLIC_ACCESS_BLOCK = _types("aws:s3/", "bucketPublicAccessBlock:BucketPublicAccessBlock")
SSE_CONFIGS = _types("aws:s3/", "bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration "
                     "bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2")
BUCKET_POLICY = _types("aws:s3/", "bucketPolicy:BucketPolicy")
BUCKET_ACLS = _types("aws:s3/", "bucketAcl:BucketAcl bucketAclV2:BucketAclV2")
PAB_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def _attached(bucket: Resource, resources: Sequence[Resource], types: Sequence[str]) -> list[Resource]:
    """Resources of `types` configuring `bucket`: they depend on it, or name it literally."""
    name = bucket.props.get("bucket")
    named = name is not None and name != COMPUTED
    return [
        r for r in resources
        if r.type in types and (bucket.urn in r.depends_on or (named and r.props.get("bucket") == name))
    ]


@_stack_rule("s3-public-access-block", "S3 buckets have a public access block with all four settings on")
def _s3_public_access_block(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for bucket in (r for r in resources if r.type in BUCKETS):
        blocks = _attached(bucket, resources, PUBLIC_ACCESS_BLOCK)
        if not blocks:
            out.append((bucket.urn, "no BucketPublicAccessBlock references this bucket"))
        for block in blocks:
            off = [f for f in PAB_FLAGS if block.props.get(f) != COMPUTED and not _true(block.props.get(f))]
            if off:
                out.append((bucket.urn, f"{block.urn.rpartition('::')[2]} leaves off {', '.join(off)}"))
    return out


def _kms_rule(rule: Any) -> bool:
    """SSE-KMS with a key, or not known yet (the benefit of the doubt, as everywhere here)."""
    default = _get(rule, "applyServerSideEncryptionByDefault")
    algorithm, key = _get(default, "sseAlgorithm"), _get(default, "kmsMasterKeyId")
    return COMPUTED in (algorithm, key) or (algorithm in ("aws:kms", "aws:kms:dsse") and bool(key))


@_stack_rule("s3-kms-encryption", "S3 buckets and directory buckets encrypt with a KMS key (SSE-KMS)")
def _s3_kms_encryption(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for bucket in (r for r in resources if r.type in BUCKETS or r.type == DIRECTORY_BUCKET):
        configs = [bucket.props.get("serverSideEncryptionConfiguration")]  # inline, deprecated
        configs += [c.props for c in _attached(bucket, resources, SSE_CONFIGS)]
        rule_sets = [_list(_get(c, "rules")) + _list(_get(c, "rule")) for c in configs if c]
        if not rule_sets:
            out.append((bucket.urn, "no server-side encryption configuration references this bucket"))
        elif not any(rules and all(_kms_rule(rule) for rule in rules) for rules in rule_sets):
            out.append((bucket.urn, "server-side encryption is not aws:kms with a kmsMasterKeyId"))
    return out


@_stack_rule("s3-tls-only", "S3 buckets have a bucket policy denying requests without TLS")
def _s3_tls_only(resources: Sequence[Resource], ctx: Context) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for bucket in (r for r in resources if r.type in BUCKETS):
        # The bucket's own (deprecated) inline policy or separate BucketPolicy resources.
        documents = [p.props.get("policy") for p in (bucket, *_attached(bucket, resources, BUCKET_POLICY))]
        if COMPUTED in documents:
            continue  # judged once the document is known
        secure = [str(_get(s, "Condition", "Bool", "aws:SecureTransport")) for d in documents for s in _statements(d)
                  if s.get("Effect") == "Deny"]
        if "false" not in map(str.lower, secure):
            out.append((bucket.urn, "no bucket policy denies requests with aws:SecureTransport false"))
    return out


@_rule("s3-no-public-acl", "mandatory", "S3 ACLs grant nothing to all users", *BUCKETS, *BUCKET_ACLS)
def _s3_no_public_acl(r: Resource, ctx: Context) -> list[str]:
    acl = r.props.get("acl")
    out = [f"canned ACL {acl} makes the bucket public"] if acl in ("public-read", "public-read-write") else []
    out += [f"canned ACL {acl} opens the bucket to every AWS account"] if acl == "authenticated-read" else []
    for grant in _list(r.props.get("grants")) + _list(_get(r.props, "accessControlPolicy", "grants")):
        uri = _get(grant, "uri") or _get(grant, "grantee", "uri")
        if isinstance(uri, str) and uri.endswith(("/global/AllUsers", "/global/AuthenticatedUsers")):
            out.append(f"ACL grant to {uri}")
    return out


EKS = "aws:eks/cluster:Cluster"
LOG_TYPES = ("api", "audit", "authenticator", "controllerManager", "scheduler")


@_rule("eks-secrets-encryption", "mandatory", "EKS encrypts Kubernetes secrets with a KMS key", EKS)
def _eks_secrets(r: Resource, ctx: Context) -> list[str]:
    for config in _list(r.props.get("encryptionConfig")):  # an object in pulumi-aws 7, a list before
        if _get(config, "provider", "keyArn") and "secrets" in _list(_get(config, "resources")):
            return []
    return ["no encryptionConfig with a KMS keyArn for resources [secrets]"]


@_rule("eks-control-plane-logs", "mandatory", "EKS sends all five control-plane log types to CloudWatch", EKS)
def _eks_logs(r: Resource, ctx: Context) -> list[str]:
    enabled = r.props.get("enabledClusterLogTypes")
    missing = [t for t in LOG_TYPES if t not in _list(enabled)]
    return [f"log types not enabled: {', '.join(missing)}"] if missing and enabled != COMPUTED else []


# AWS makes the endpoint public when the field is omitted: only an explicit false passes.
_rule("eks-private-endpoint-prod", "mandatory", "The EKS API endpoint of stack prod is not public", EKS)(
    lambda r, c: _expect(r, "vpcConfig/endpointPublicAccess", [False], "unset (public)") if c.stack == "prod" else []
)
_rule("eks-api-authentication", "mandatory", "EKS authenticates with access entries (API or API_AND_CONFIG_MAP)", EKS)(
    lambda r, _: _expect(r, "accessConfig/authenticationMode", ["API", "API_AND_CONFIG_MAP"], "unset (CONFIG_MAP)")
)


LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"

_rule("fsx-lustre-kms", "mandatory", "FSx for Lustre encrypts with a customer KMS key", LUSTRE)(
    lambda r, _: [] if r.props.get("kmsKeyId") else ["kmsKeyId is not set (the AWS-managed key would be used)"]
)


@_rule("fsx-lustre-persistent-2", "mandatory", "FSx for Lustre is PERSISTENT_2, in sizes AWS accepts", LUSTRE)
def _lustre_shape(r: Resource, ctx: Context) -> list[str]:
    out: list[str] = []
    deployment = r.props.get("deploymentType")
    throughput, capacity = r.props.get("perUnitStorageThroughput"), r.props.get("storageCapacity")
    if deployment not in (COMPUTED, "PERSISTENT_2"):
        out.append(f"deploymentType is {deployment or 'unset'}, not PERSISTENT_2")
    if throughput != COMPUTED and _number(throughput) not in (125, 250, 500, 1000):
        out.append(f"perUnitStorageThroughput {throughput} is not 125, 250, 500 or 1000 MB/s/TiB")
    size = _number(capacity) or 0
    if capacity != COMPUTED and not (size in (1200, 2400) or (size > 0 and size % 2400 == 0)):
        out.append(f"storageCapacity {capacity} GiB is not 1200, 2400 or a multiple of 2400")
    return out


NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"

_rule("imdsv2-required", "mandatory", "Nodes require IMDSv2 (httpTokens: required)", NODE_CLASS, LAUNCH_TEMPLATE)(
    lambda r, _: _expect(r, f"{'spec/' if r.type == NODE_CLASS else ''}metadataOptions/httpTokens", ["required"])
)


@_rule("root-volume-encrypted", "mandatory", "Node EBS volumes are encrypted", NODE_CLASS, LAUNCH_TEMPLATE)
def _root_encrypted(r: Resource, ctx: Context) -> list[str]:
    if r.type == LAUNCH_TEMPLATE:
        volumes = [m for m in _list(r.props.get("blockDeviceMappings")) if _get(m, "ebs")]
        plain = [m for m in volumes if not _true(_get(m, "ebs", "encrypted"))]
        return [f"EBS volume {_get(m, 'deviceName')} is not encrypted" for m in plain]
    mappings = _list(_get(r.props, "spec", "blockDeviceMappings"))
    roots = [m for m in mappings if _true(_get(m, "rootVolume"))]
    roots = roots or [m for m in mappings if _get(m, "deviceName") == "/dev/xvda"]
    if not roots:
        return ["spec.blockDeviceMappings has no root volume (rootVolume: true or /dev/xvda)"]
    return [] if all(_true(_get(m, "ebs", "encrypted")) for m in roots) else ["root volume ebs.encrypted is not true"]


KMS_KEY = "aws:kms/key:Key"
STATEFUL = tuple(sorted(STATEFUL_TYPES | TENANT_TYPES))


@_rule(
    "stateful-protect",
    "mandatory",
    "Stateful resources (EKS, FSx, buckets, KMS keys, tenant namespaces and claims) are protect=True",
    *STATEFUL,
)
def _protected(r: Resource, ctx: Context) -> list[str]:
    if r.options is None or not is_stateful(r.type, r.props) or r.options.get("protect"):
        return []
    return ["resource option protect is not set"]


@_rule(
    "stateful-retain-on-delete",
    "mandatory",
    "Stateful resources holding data (all but tenant claims) are retainOnDelete",
    *STATEFUL,
    crossguard=False,
)
def _retained(r: Resource, ctx: Context) -> list[str]:
    if r.options is None or not must_retain(r.type, r.props) or r.options.get("retainOnDelete"):
        return []
    return ["option retainOnDelete is not set"]


@_rule("kms-key-rotation", "mandatory", "Symmetric KMS keys rotate automatically", KMS_KEY)
def _kms_rotation(r: Resource, ctx: Context) -> list[str]:
    spec = r.props.get("customerMasterKeySpec") or r.props.get("keySpec") or "SYMMETRIC_DEFAULT"
    # AWS rotates only symmetric encryption keys; asymmetric and HMAC keys cannot be set to.
    return _expect(r, "enableKeyRotation", [True]) if spec == "SYMMETRIC_DEFAULT" else []


SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SG_TYPES = (SECURITY_GROUP, "aws:ec2/securityGroupRule:SecurityGroupRule",
            "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")


def _open_ingress(r: Resource) -> list[tuple[str, bool]]:
    """(what, reaches SSH) of every ingress rule open to 0.0.0.0/0 or ::/0."""
    if r.type == SECURITY_GROUP:
        rules = [_map(i) for i in _list(r.props.get("ingress"))]
    else:  # SecurityGroupRule has a type; SecurityGroupIngressRule is ingress by its type token
        rules = [r.props] if r.props.get("type", "ingress") == "ingress" else []
    out: list[tuple[str, bool]] = []
    for rule in rules:
        sources = [*_list(rule.get("cidrBlocks")), *_list(rule.get("ipv6CidrBlocks"))]
        if not {"0.0.0.0/0", "::/0"} & {*map(str, sources), str(rule.get("cidrIpv4")), str(rule.get("cidrIpv6"))}:
            continue
        protocol = str(rule.get("ipProtocol", rule.get("protocol")))
        low, high = _number(rule.get("fromPort")), _number(rule.get("toPort"))
        if protocol in ("-1", "all"):
            out.append(("all traffic", True))
        else:
            ssh = protocol in ("tcp", "6") and (low is None or low <= 22) and (high is None or high >= 22)
            out.append((f"{protocol} {rule.get('fromPort')}-{rule.get('toPort')}", ssh))
    return out


_rule("sg-no-ssh-from-internet", "mandatory", "No security group admits SSH or all traffic from anywhere", *SG_TYPES)(
    lambda r, _: [f"ingress of {what} from the internet" for what, ssh in _open_ingress(r) if ssh]
)
_rule("sg-no-ingress-from-internet", "advisory", "Security groups admit nothing from 0.0.0.0/0 or ::/0", *SG_TYPES)(
    lambda r, _: [f"ingress of {what} from the internet" for what, ssh in _open_ingress(r) if not ssh]
)


ADMIN_ARN = "arn:aws:iam::aws:policy/AdministratorAccess"
IAM_TYPES = _types("aws:iam/", "role:Role rolePolicy:RolePolicy userPolicy:UserPolicy groupPolicy:GroupPolicy "
                   "policy:Policy rolePolicyAttachment:RolePolicyAttachment userPolicyAttachment:UserPolicyAttachment "
                   "groupPolicyAttachment:GroupPolicyAttachment policyAttachment:PolicyAttachment")


@_rule("iam-no-admin-policy", "mandatory", "No IAM policy allows Action * on Resource *", *IAM_TYPES)
def _iam_admin(r: Resource, ctx: Context) -> list[str]:
    if ADMIN_ARN in [r.props.get("policyArn"), *_list(r.props.get("managedPolicyArns"))]:
        return ["attaches AdministratorAccess"]
    documents = [_get(p, "policy") for p in _list(r.props.get("inlinePolicies"))] + [r.props.get("policy")]
    for s in (s for d in documents for s in _statements(d)):
        actions, targets = {str(a) for a in _list(s.get("Action"))}, _list(s.get("Resource"))
        if s.get("Effect") == "Allow" and actions & {"*", "*:*"} and "*" in targets:
            return [f"statement {s.get('Sid') or '(no Sid)'} allows Action * on Resource *"]
    return []


# pulumi-aws types without a `tags` input. Listing the exceptions fails closed: a type new to
# the components is checked until it is listed, and a test keeps the list true to pulumi_aws.
UNTAGGABLE = _types("aws:", """
    cloudwatch/eventTarget:EventTarget ec2/routeTableAssociation:RouteTableAssociation iam/rolePolicy:RolePolicy
    iam/rolePolicyAttachment:RolePolicyAttachment s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration
    s3/bucketOwnershipControls:BucketOwnershipControls s3/bucketPolicy:BucketPolicy
    s3/bucketPublicAccessBlock:BucketPublicAccessBlock sqs/queuePolicy:QueuePolicy s3/bucketVersioning:BucketVersioning
""") + SSE_CONFIGS


@_rule("aws-platform-tags", "advisory", "Taggable AWS resources carry the platform's metadata.tags")
def _tags(r: Resource, ctx: Context) -> list[str]:
    tags = r.props.get("tags")
    if not r.type.startswith("aws:") or r.type in UNTAGGABLE or tags == COMPUTED:
        return []
    if ctx.tag_keys is None:
        return [] if _map(tags) else ["no tags"]
    missing = sorted(ctx.tag_keys - set(_map(tags)))
    return [f"missing tags: {', '.join(missing)}"] if missing else []


@_rule("karpenter-gpu-limit", "mandatory", "NodePools cap nvidia.com/gpu", "kubernetes:karpenter.sh/v1:NodePool")
def _gpu_limit(r: Resource, ctx: Context) -> list[str]:
    limits = _get(r.props, "spec", "limits")
    if limits == COMPUTED or _map(limits).get("nvidia.com/gpu") is not None:
        return []
    return ['spec.limits has no "nvidia.com/gpu": the pool could grow without bound']


HELM_V4_CHART = "kubernetes:helm.sh/v4:Chart"
# Components a provider expands at run time. CrossGuard does not see options.remote, so the
# known ones are also named by type token, and pulumi-eks / pulumi-awsx by package.
REMOTE_TYPES = _types("kubernetes:", "yaml/v2:ConfigFile yaml/v2:ConfigGroup kustomize/v2:Directory")
REMOTE_PACKAGES = ("eks", "awsx")


@_rule("no-remote-components", "mandatory", "No multi-language components (pulumi-eks, pulumi-awsx, yaml/v2 ...)")
def _no_remote(r: Resource, ctx: Context) -> list[str]:
    remote = bool(r.options and r.options.get("remote"))
    if r.type != HELM_V4_CHART and (remote or r.type in REMOTE_TYPES or r.type.split(":")[0] in REMOTE_PACKAGES):
        return [f"{r.type} is expanded by a plugin at run time: preview and policies cannot see inside"]
    return []  # helm.v4.Chart is remote too, and reported once, by no-helm-v4-chart


_rule("no-helm-v4-chart", "mandatory", "Charts install with helm.v3.Release, never helm.v4.Chart", HELM_V4_CHART)(
    lambda r, _: ["helm.v4.Chart renders its objects inside the provider; use kubernetes.helm.v3.Release"]
)

# The organisation's rules (required tags, GPU budget) live next door; importing registers them.
from . import policies_org  # noqa: E402, F401  # pyright: ignore[reportUnusedImport]
