"""Provider settings in the diff gate: what a provider's settings replace (gpuplat/preview/providers.py).

Hand-made recordings first (pulumi-kubernetes' DiffConfig rules, pulumi-aws's region, a
provider's namespace), then tiny programs recorded twice with different stack settings (the
default providers the engine configures from them), then the command on a project `gpuplat
init` writes, moved to another region.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpuplat.catalog.labels import TENANT_LABEL
from gpuplat.preview import RecordedResource, record_program
from gpuplat.preview.diff import diff_resources, summarize
from gpuplat.preview.providers import active_cluster, is_regional, kubernetes_replaces

PREFIX = "urn:pulumi:dev::gpu-platform::"
K8S = "pulumi:providers:kubernetes"
AWS = "pulumi:providers:aws"
NS = "kubernetes:core/v1:Namespace"
CM = "kubernetes:core/v1:ConfigMap"
EKS = "aws:eks/cluster:Cluster"
ROLE = "aws:iam/role:Role"


def _res(type_: str, name: str, inputs: dict[str, Any], **options: Any) -> RecordedResource:
    return RecordedResource(f"{PREFIX}{type_}::{name}", type_, name, None, True, inputs, options)


def _kubeconfig(server: str, *, user: str = "admin", extra: dict[str, Any] | None = None) -> str:
    """Two contexts: `a` on cluster `one` (at `server`), `b` on cluster `two`."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "clusters": [
                {"name": "one", "cluster": {"server": server, **(extra or {})}},
                {"name": "two", "cluster": {"server": "https://two.example:6443"}},
            ],
            "contexts": [
                {"name": "a", "context": {"cluster": "one", "user": user}},
                {"name": "b", "context": {"cluster": "two", "user": user}},
            ],
            "current-context": "a",
            "users": [{"name": user, "user": {"token": "t"}}],
        }
    )


def _tenant(name: str, provider: RecordedResource) -> RecordedResource:
    metadata = {"name": name, "labels": {TENANT_LABEL: name}}
    return _res(NS, f"{name}-ns", {"metadata": metadata}, protect=True, provider=provider.urn)


def _platform(provider: RecordedResource) -> list[RecordedResource]:
    config = _res(CM, "cm", {"metadata": {"name": "cm", "namespace": "x"}, "data": {"a": "1"}}, provider=provider.urn)
    return [provider, _tenant("research", provider), config]


def _ops(changes: Any) -> dict[str, str]:
    return {c.name: c.op for c in changes}


# ---- pulumi-kubernetes: DiffConfig --------------------------------------------------------------


def test_another_active_cluster_replaces_the_provider_and_everything_it_manages() -> None:
    before = _res(K8S, "k8s", {"kubeconfig": _kubeconfig("https://one.example:6443")})
    after = _res(K8S, "k8s", {"kubeconfig": _kubeconfig("https://moved.example:6443")})
    changes = diff_resources(_platform(before), _platform(after))
    assert _ops(changes) == {"k8s": "replace", "research-ns": "replace", "cm": "replace"}
    (refused,) = summarize(changes, 3).refused  # the tenant's namespace: its provider is replaced
    assert refused.name == "research-ns" and refused.cause == "its provider k8s is replaced"
    provider = next(c for c in changes if c.name == "k8s")
    (field,) = provider.fields
    assert field.replaces and "server https://one.example:6443 -> https://moved.example:6443" in str(field.note)


def test_a_kubeconfig_change_that_keeps_the_cluster_is_an_update_of_the_provider_alone() -> None:
    before = _res(K8S, "k8s", {"kubeconfig": _kubeconfig("https://one.example:6443", user="admin")})
    after = _res(K8S, "k8s", {"kubeconfig": _kubeconfig("https://one.example:6443", user="deployer")})
    changes = diff_resources(_platform(before), _platform(after))
    assert _ops(changes) == {"k8s": "update"} and not summarize(changes, 3).refused


def test_switching_the_context_to_another_cluster_replaces_to_the_same_one_does_not() -> None:
    config = _kubeconfig("https://one.example:6443")
    assert kubernetes_replaces({"kubeconfig": config, "context": "a"}, {"kubeconfig": config, "context": "b"})
    same = json.loads(config)
    same["contexts"].append({"name": "a2", "context": {"cluster": "one", "user": "other"}})
    text = json.dumps(same)
    assert kubernetes_replaces({"kubeconfig": text, "context": "a"}, {"kubeconfig": text, "context": "a2"}) == []
    # A context the kubeconfig lacks finds no cluster: pulumi-kubernetes plans no replacement.
    assert kubernetes_replaces({"kubeconfig": config, "context": "a"}, {"kubeconfig": config, "context": "z"}) == []
    assert active_cluster(json.loads(config), {"cluster": "two"}) == {"server": "https://two.example:6443"}


def test_a_context_change_with_a_kubeconfig_offline_cannot_read_counts_as_another_cluster() -> None:
    for kubeconfig in ({}, {"kubeconfig": "<secret>"}, {"kubeconfig": "/home/ci/.kube/config"}):
        (found,) = kubernetes_replaces({**kubeconfig, "context": "a"}, {**kubeconfig, "context": "b"})
        assert found.key == "context" and "not readable offline" in found.why


def test_cluster_identifier_rules() -> None:
    old, new = _kubeconfig("https://one.example:6443"), _kubeconfig("https://moved.example:6443")
    # Unchanged identifier: the cluster is the same whatever the kubeconfig says.
    same = kubernetes_replaces(
        {"kubeconfig": old, "clusterIdentifier": "x"}, {"kubeconfig": new, "clusterIdentifier": "x"}
    )
    assert same == []
    changed = kubernetes_replaces({"clusterIdentifier": "x"}, {"clusterIdentifier": "y"})
    assert [r.key for r in changed] == ["clusterIdentifier"]
    assert kubernetes_replaces({}, {"clusterIdentifier": "y"}) == []  # adding one is on-boarding, not a move


def test_a_kubeconfig_built_from_a_replaced_cluster_is_unknown_so_the_provider_is_replaced() -> None:
    eks = _res(EKS, "eks", {"name": "atlas", "roleArn": "arn:aws:iam::1:role/a"})
    moved = _res(EKS, "eks", {"name": "atlas", "roleArn": "arn:aws:iam::1:role/b"})  # roleArn forces replacement
    config = _kubeconfig("https://stand-in.example")  # the recording's stand-in endpoint: unchanged
    provider = _res(K8S, "k8s", {"kubeconfig": config}, dependsOn=[eks.urn])
    changes = diff_resources([eks, *_platform(provider)], [moved, *_platform(provider)])
    assert _ops(changes) == {"eks": "replace", "k8s": "replace", "research-ns": "replace", "cm": "replace"}


def test_a_resource_moved_to_a_provider_on_another_cluster_is_replaced() -> None:
    one = _res(K8S, "one", {"kubeconfig": _kubeconfig("https://one.example:6443")})
    two = _res(K8S, "two", {"kubeconfig": _kubeconfig("https://two.example:6443")})
    also_one = _res(K8S, "also-one", {"kubeconfig": _kubeconfig("https://one.example:6443")})
    cm = {"metadata": {"name": "cm", "namespace": "x"}}
    base = [one, two, also_one, _res(CM, "a", cm, provider=one.urn), _res(CM, "b", cm, provider=one.urn)]
    head = [one, two, also_one, _res(CM, "a", cm, provider=two.urn), _res(CM, "b", cm, provider=also_one.urn)]
    changes = {c.name: c for c in diff_resources(base, head)}
    assert changes["a"].op == "replace" and changes["a"].fields[0].path == "provider"
    assert changes["b"].op == "update"  # same cluster: only the reference changes


def test_the_providers_namespace_replaces_namespaced_objects_without_one_of_their_own() -> None:
    before, after = _res(K8S, "k8s", {"namespace": "team-a"}), _res(K8S, "k8s", {"namespace": "team-b"})

    def objects(provider: RecordedResource) -> list[RecordedResource]:
        return [
            provider,
            _res(CM, "floating", {"metadata": {"name": "f"}}, provider=provider.urn),
            _res(CM, "pinned", {"metadata": {"name": "p", "namespace": "kube-system"}}, provider=provider.urn),
            _res("kubernetes:scheduling.k8s.io/v1:PriorityClass", "pc", {"value": 1}, provider=provider.urn),
            _res("kubernetes:helm.sh/v3:Release", "chart", {"name": "c"}, provider=provider.urn),
        ]

    changes = {c.name: c for c in diff_resources(objects(before), objects(after))}
    assert {n: c.op for n, c in changes.items()} == {"k8s": "update", "floating": "replace", "chart": "replace"}
    assert changes["floating"].cause == "metadata.namespace team-a -> team-b, the namespace of provider k8s"


# ---- pulumi-aws: the region a resource takes from its provider ------------------------------------


def test_a_provider_region_change_replaces_regional_resources_not_global_ones() -> None:
    assert is_regional(EKS) and is_regional("aws:kms/key:Key") and not is_regional(ROLE)

    def side(region: str) -> list[RecordedResource]:
        provider = _res(AWS, "aws", {"region": region, "skipRegionValidation": "true"})
        own = _res("aws:s3/bucket:Bucket", "pinned", {"region": "eu-central-1"}, provider=provider.urn)
        return [
            provider,
            _res(EKS, "eks", {"name": "c"}, provider=provider.urn),
            _res(ROLE, "role", {}, provider=provider.urn),
            own,
        ]

    changes = {c.name: c for c in diff_resources(side("eu-west-1"), side("us-west-2"))}
    # pulumi-aws 7 does not replace its provider for a region (only v6 did): an update of it.
    assert {n: c.op for n, c in changes.items()} == {"aws": "update", "eks": "replace"}
    assert (
        changes["eks"].refused and changes["eks"].cause == "region eu-west-1 -> us-west-2, the region of provider aws"
    )


def test_a_replaced_cluster_is_created_where_it_is_asked_so_aws_refuses_nothing() -> None:
    before = [
        _res(AWS, "aws", {"region": "eu-west-1"}),
        _res(EKS, "eks", {"version": "1.33"}, provider=f"{PREFIX}{AWS}::aws"),
    ]
    after = [
        _res(AWS, "aws", {"region": "us-west-2"}),
        _res(EKS, "eks", {"version": "1.32"}, provider=f"{PREFIX}{AWS}::aws"),
    ]
    eks = next(c for c in diff_resources(before, after) if c.name == "eks")
    assert eks.op == "replace" and eks.blocked == ()  # a new cluster on 1.32, not a downgrade


# ---- default providers: the stack's settings ------------------------------------------------------


def _program() -> None:
    aws.s3.Bucket("data", opts=pulumi.ResourceOptions(protect=True))
    aws.iam.Role("role", assume_role_policy="{}")
    k8s.core.v1.ConfigMap("settings", metadata={"name": "settings"})


def _record(**config: str) -> list[RecordedResource]:
    return record_program(
        _program, project="gpu-platform", stack="dev", config={k.replace("__", ":"): v for k, v in config.items()}
    )


def test_the_stack_settings_of_a_default_provider_count_like_a_providers_own() -> None:
    base = _record(aws__region="eu-west-1", kubernetes__namespace="a")
    head = _record(aws__region="us-west-2", kubernetes__namespace="b")
    defaults = {r.type: r for r in head if r.type.startswith("pulumi:providers:")}
    assert defaults[AWS].inputs["region"] == "us-west-2" and defaults[AWS].name.startswith("default_")
    assert defaults[K8S].inputs["namespace"] == "b" and defaults[K8S].parent is None
    changes = {c.name: c for c in diff_resources(base, head)}
    assert changes["data"].op == "replace" and changes["data"].refused  # a protected bucket moving region
    assert changes["settings"].op == "replace"  # its namespace is the default provider's
    assert "role" not in changes  # IAM is global
    same = diff_resources(_record(aws__region="eu-west-1"), _record(aws__region="eu-west-1"))
    assert same == []
