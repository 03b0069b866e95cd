"""The Kubernetes API reachable from where `pulumi up` runs: stack config opens HTTPS on the
cluster security group to the runner's CIDRs / security groups, restricts a public endpoint to
those CIDRs, and the Kubernetes side waits for those rules."""

from __future__ import annotations

import json

import pytest

from components.aws.api_access import ApiAccess, ApiAccessError, api_access
from tests.support_aws import compile_model, of_type, record

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


def _api_rules(stack: str, config: dict[str, str]) -> tuple[list[dict[str, object]], dict[str, object]]:
    model, plan = compile_model(stack)
    resources = record(model, plan, stack, config={"aws:region": "us-east-1", **config})
    rules = [r.inputs for r in of_type(resources, INGRESS) if r.name.split("-api-")[0].endswith("cluster")]
    (eks,) = of_type(resources, "aws:eks/cluster:Cluster")
    return rules, eks.inputs["vpcConfig"]


def test_settings_parse_as_json_or_comma_lists() -> None:
    assert api_access('["10.0.0.0/16", "192.168.1.0/24"]', None).cidrs == ("10.0.0.0/16", "192.168.1.0/24")
    assert api_access("10.0.0.0/16, 10.0.0.0/16", "sg-0123456789abcdef0") == ApiAccess(
        ("10.0.0.0/16",), ("sg-0123456789abcdef0",)
    )
    assert api_access(None, "") == ApiAccess()


@pytest.mark.parametrize(
    ("cidrs", "groups", "says"),
    [("10.0.0.1/16", None, "not a CIDR"), ("2001:db8::/32", None, "IPv6"), (None, "default", "not a security group")],
)
def test_bad_settings_stop_with_a_sentence(cidrs: str | None, groups: str | None, says: str) -> None:
    with pytest.raises(ApiAccessError, match=says):
        api_access(cidrs, groups)


def test_a_private_stack_opens_https_to_its_runner() -> None:
    config = {
        "gpu-platform:apiAccessCidrs": json.dumps(["10.99.0.0/24"]),
        "gpu-platform:apiAccessSecurityGroupIds": "sg-0123456789abcdef0",
    }
    rules, vpc = _api_rules("prod", config)
    assert {(r.get("cidrIpv4"), r.get("referencedSecurityGroupId")) for r in rules} == {
        ("10.99.0.0/24", None),
        (None, "sg-0123456789abcdef0"),
    }
    assert all((r["fromPort"], r["toPort"], r["ipProtocol"]) == (443, 443, "tcp") for r in rules)
    assert vpc["endpointPublicAccess"] is False and "publicAccessCidrs" not in vpc


def test_the_kubernetes_side_waits_for_the_runners_access() -> None:
    model, plan = compile_model("prod")
    config = {"aws:region": "us-east-1", "gpu-platform:apiAccessCidrs": "10.99.0.0/24"}
    resources = record(model, plan, "prod", config=config)
    (rule,) = [r for r in of_type(resources, INGRESS) if r.name.endswith("-api-10.99.0.0-24")]
    releases = of_type(resources, "kubernetes:helm.sh/v3:Release")
    karpenter_crds = [r for r in releases if r.inputs["chart"].endswith("karpenter-crd")]
    assert karpenter_crds and all(rule.urn in r.options.get("dependsOn", []) for r in karpenter_crds)


def test_without_settings_a_public_stack_gets_no_rule() -> None:
    rules, _ = _api_rules("dev", {})
    assert rules == []


def test_a_private_stack_without_runner_access_stops_before_anything_is_registered() -> None:
    model, plan = compile_model("prod")
    with pytest.raises(Exception, match=r"the API endpoint is private and the stack declares no way in"):
        record(model, plan, "prod", config={"aws:region": "us-east-1"})


def test_the_shipped_private_stacks_declare_their_runner() -> None:
    for stack in ("staging", "prod"):
        model, plan = compile_model(stack)
        assert model.target.endpoint == "private"
        rules = [r for r in of_type(record(model, plan, stack), INGRESS) if "-cluster-api-" in r.name]
        assert [r.inputs["cidrIpv4"] for r in rules] == ["10.40.0.0/16"]


def test_a_public_endpoint_is_restricted_to_the_configured_cidrs() -> None:
    rules, vpc = _api_rules("dev", {"gpu-platform:apiAccessCidrs": "203.0.113.0/24"})
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.0/24"]
    assert [r["cidrIpv4"] for r in rules] == ["203.0.113.0/24"]


def test_a_refusal_that_needs_no_account_is_made_before_the_account_is_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Asking needs the AWS provider plugin and credentials; the engine ends the program when one
    # is missing, so the runner's missing way in must be told without asking.
    from components.aws import preflight as program_preflight

    asked: list[bool] = []

    def unreadable(*_: object) -> None:
        asked.append(True)
        raise RuntimeError("no resource plugin 'aws' found")

    monkeypatch.setattr(program_preflight, "read_facts", unreadable)
    model, plan = compile_model("prod")
    with pytest.raises(program_preflight.PreflightError, match=r"(?s)declares no way in.*facts were not read"):
        program_preflight.preflight(model, plan, ApiAccess())
    assert asked == []
    with pytest.raises(RuntimeError, match="no resource plugin"):
        program_preflight.preflight(model, plan, ApiAccess(("10.40.0.0/16",)))
