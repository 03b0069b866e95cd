"""Policies on what reaches the platform: security group ingress and IAM permissions."""

from __future__ import annotations

from ._base import Context, Resource, as_list, as_map, get_path, number, resource_rule, statements, type_tokens

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SG_TYPES = (
    SECURITY_GROUP,
    "aws:ec2/securityGroupRule:SecurityGroupRule",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
)


def _open_ingress(r: Resource) -> list[tuple[str, bool]]:
    """(what, reaches SSH) of every ingress rule open to 0.0.0.0/0 or ::/0."""
    if r.type == SECURITY_GROUP:
        rules = [as_map(i) for i in as_list(r.props.get("ingress"))]
    else:  # SecurityGroupRule has a type; SecurityGroupIngressRule is ingress by its type token
        rules = [r.props] if r.props.get("type", "ingress") == "ingress" else []
    out: list[tuple[str, bool]] = []
    for rule in rules:
        sources = [*as_list(rule.get("cidrBlocks")), *as_list(rule.get("ipv6CidrBlocks"))]
        if not {"0.0.0.0/0", "::/0"} & {*map(str, sources), str(rule.get("cidrIpv4")), str(rule.get("cidrIpv6"))}:
            continue
        protocol = str(rule.get("ipProtocol", rule.get("protocol")))
        low, high = number(rule.get("fromPort")), number(rule.get("toPort"))
        if protocol in ("-1", "all"):
            out.append(("all traffic", True))
        else:
            ssh = protocol in ("tcp", "6") and (low is None or low <= 22) and (high is None or high >= 22)
            out.append((f"{protocol} {rule.get('fromPort')}-{rule.get('toPort')}", ssh))
    return out


resource_rule(
    "sg-no-ssh-from-internet", "mandatory", "No security group admits SSH or all traffic from anywhere", *SG_TYPES
)(lambda r, _: [f"ingress of {what} from the internet" for what, ssh in _open_ingress(r) if ssh])
resource_rule(
    "sg-no-ingress-from-internet", "advisory", "Security groups admit nothing from 0.0.0.0/0 or ::/0", *SG_TYPES
)(lambda r, _: [f"ingress of {what} from the internet" for what, ssh in _open_ingress(r) if not ssh])


ADMIN_ARN = "arn:aws:iam::aws:policy/AdministratorAccess"
IAM_TYPES = type_tokens(
    "aws:iam/",
    "role:Role rolePolicy:RolePolicy userPolicy:UserPolicy groupPolicy:GroupPolicy "
    "policy:Policy rolePolicyAttachment:RolePolicyAttachment userPolicyAttachment:UserPolicyAttachment "
    "groupPolicyAttachment:GroupPolicyAttachment policyAttachment:PolicyAttachment",
)


@resource_rule("iam-no-admin-policy", "mandatory", "No IAM policy allows Action * on Resource *", *IAM_TYPES)
def _iam_admin(r: Resource, ctx: Context) -> list[str]:
    if ADMIN_ARN in [r.props.get("policyArn"), *as_list(r.props.get("managedPolicyArns"))]:
        return ["attaches AdministratorAccess"]
    documents = [get_path(p, "policy") for p in as_list(r.props.get("inlinePolicies"))] + [r.props.get("policy")]
    for s in (s for d in documents for s in statements(d)):
        actions, targets = {str(a) for a in as_list(s.get("Action"))}, as_list(s.get("Resource"))
        if s.get("Effect") == "Allow" and actions & {"*", "*:*"} and "*" in targets:
            return [f"statement {s.get('Sid') or '(no Sid)'} allows Action * on Resource *"]
    return []
