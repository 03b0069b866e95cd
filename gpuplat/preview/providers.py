"""What a provider's settings decide for the resources it manages, as the offline diff sees it.

A resource is managed by the provider its `provider` option names, or, without one, by the
package's default provider, which the engine configures from the stack's settings (`aws:region`,
`kubernetes:context` ...) and the recording records as `pulumi:providers:<pkg>::default_<version>`
(_defaults.py). Three things follow from a change of a provider's settings, each read from the
provider's own code:

1. The provider is replaced, and with it everything it manages. The engine asks the provider's
   DiffConfig; when it answers "replace", the provider gets a new id, every resource's provider
   reference changes, and the engine replaces each of them (pulumi/pulumi
   pkg/resource/deploy/step_generator.go, `providerChanged`: DiffConfig of the old and new
   provider inputs, `ReplaceKeys: ["provider"]`). pulumi-kubernetes' DiffConfig
   (pulumi/pulumi-kubernetes provider/pkg/provider/provider.go `DiffConfig` and util.go
   `getActiveClusterFromConfig`, the same at v4.25.0's commit f47bc2d6f199 the e2e suite builds
   and at v4.32.0) replaces when: `clusterIdentifier` changes from one value to another (and
   nothing is replaced while it stays the same); `kubeconfig`, `context` or `cluster` is unknown
   (computed, e.g. built from a cluster being replaced); `renderYamlToDirectory` changes; or the
   kubeconfig's active cluster (the cluster entry the context, or the `cluster` override,
   selects: server, CA, TLS settings) differs. The offline recording cannot read a kubeconfig
   kept as a secret stack setting, or the ambient one: then any change of `kubeconfig`,
   `context` or `cluster` counts as a change of cluster (said so in the diff).
   pulumi-aws 7 replaces its provider for no setting: the bridge's DiffConfig
   (pulumi/pulumi-terraform-bridge pkg/tfbridge/provider.go, `configDiffer.DiffConfig`, v3.136.0)
   replaces only for settings marked `ForcesProviderReplace`, and pulumi-aws removed that mark
   from `region`, its only one, for v7 (pulumi/pulumi-aws#5656; v6's provider/resources.go had it).
2. pulumi-aws 7: a regional resource without its own `region` takes the provider's
   (pulumi/pulumi-aws provider/region.go, `applyRegion`, run before Check), and a changed
   `region` replaces the resource (hashicorp/terraform-provider-aws v6
   `forceNewIfRegionChanges`; website/docs/guides/enhanced-region-support: "Changing the value
   of region will force resource replacement"). Global resources (IAM ...) have no `region`: the
   installed SDK says which (a resource class taking `region`).
3. pulumi-kubernetes: a namespaced object without its own namespace (and a Helm release without
   one) takes the provider's `namespace` in Check (provider.go `Check`, helm_release.go
   `setDefaults`), and a changed `metadata.namespace` replaces it (diff.go forceNewProperties).

Pure data; imports pulumi_aws only to ask it whether a type is regional.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, cast

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from .records import RecordedResource

PROVIDER_PREFIX = "pulumi:providers:"
PROVIDER_FIELD = "provider"  # the engine's replace key when a provider change replaces a resource
COMPUTED = "<computed>"  # as the recording renders an unknown (_render.py)
SECRET = "<secret>"
_CLUSTER_KEYS = ("kubeconfig", "context", "cluster")

# Kinds the Kubernetes API serves cluster-scoped (api/discovery of the core groups) and the
# cluster-scoped custom resources of the charts the platform installs (their CRDs' `scope`).
CLUSTER_SCOPED_KINDS: frozenset[str] = frozenset(
    {
        "Namespace", "Node", "PersistentVolume", "StorageClass", "PriorityClass", "ClusterRole",
        "ClusterRoleBinding", "CustomResourceDefinition", "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "CSIDriver", "CSINode",
        "VolumeAttachment", "IngressClass", "RuntimeClass", "APIService", "CertificateSigningRequest",
        "NodePool", "NodeClaim", "EC2NodeClass", "NodeOverlay", "ClusterQueue", "ResourceFlavor",
        "Topology", "Cohort", "AdmissionCheck", "WorkloadPriorityClass", "ClusterPolicy", "NVIDIADriver",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Replacing:
    """A provider setting whose change replaces the provider (and so what it manages)."""

    key: str
    why: str


def is_provider(type_: str) -> bool:
    return type_.startswith(PROVIDER_PREFIX)


def package_of(type_: str) -> str:
    """`aws` for `pulumi:providers:aws` and for `aws:ec2/vpc:Vpc`."""
    return type_.removeprefix(PROVIDER_PREFIX).partition(":")[0]


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def config_replaces(
    type_: str, old: Mapping[str, Any], new: Mapping[str, Any], unknown: Collection[str] = ()
) -> list[Replacing]:
    """The settings of provider type `type_` whose change from `old` to `new` replaces it (1.)."""
    if package_of(type_) == "kubernetes":
        return kubernetes_replaces(old, new, unknown)
    return []  # pulumi-aws 7, and packages whose DiffConfig gpuplat has not read: no replacement


def kubernetes_replaces(
    old: Mapping[str, Any], new: Mapping[str, Any], unknown: Collection[str] = ()
) -> list[Replacing]:
    """pulumi-kubernetes' DiffConfig, on recorded provider inputs (see the module docstring)."""
    changed = [k for k in sorted(set(old) | set(new)) if not _same(old.get(k), new.get(k)) or k in unknown]
    if not changed:
        return []
    before, after = old.get("clusterIdentifier"), new.get("clusterIdentifier")
    if after is not None and _same(before, after):
        return []  # an unchanged identifier: the provider says the cluster is the same
    found: list[Replacing] = []
    if before is not None and after is not None:
        found.append(Replacing("clusterIdentifier", f"clusterIdentifier {before} -> {after}"))
    for key in _CLUSTER_KEYS:
        if key in unknown or new.get(key) == COMPUTED:
            return [*found, Replacing(key, f"its {key} is only known after the update, so the cluster may change")]
    if "renderYamlToDirectory" in changed:
        found.append(Replacing("renderYamlToDirectory", "every manifest is rendered to another directory"))
    moved = [k for k in _CLUSTER_KEYS if k in changed]
    if moved:
        why = _cluster_change(old, new)
        found.extend(Replacing(k, why) for k in moved if why)
    return found


def _cluster_change(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why the active cluster differs, or None when it is the same (or not found, as upstream)."""
    before, after = kubeconfig_of(old.get("kubeconfig")), kubeconfig_of(new.get("kubeconfig"))
    if before is None or after is None:
        return (
            "the kubeconfig is not readable offline (a secret setting, or the ambient one), so gpuplat cannot "
            "tell whether the new settings name the same cluster and counts it as another cluster"
        )
    a, b = active_cluster(before, old), active_cluster(after, new)
    if a is None or b is None or _same(a, b):
        return None
    server = f" (server {a.get('server')} -> {b.get('server')})" if a.get("server") != b.get("server") else ""
    return f"the kubeconfig's active cluster changes{server}"


def kubeconfig_of(value: Any) -> dict[str, Any] | None:
    """A kubeconfig given as content (a mapping, JSON or YAML text), or None (a path, a secret,
    absent: nothing the offline diff can read)."""
    if isinstance(value, Mapping):
        return dict(cast("Mapping[str, Any]", value))
    if not isinstance(value, str) or value in (COMPUTED, SECRET) or "clusters" not in value:
        return None
    yaml: Any = YAML(typ="safe")
    try:
        loaded: Any = yaml.load(value)  # JSON is YAML
    except YAMLError:
        return None
    return cast("dict[str, Any]", loaded) if isinstance(loaded, dict) else None


def _named(entries: Any, field: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for entry in cast("list[Any]", entries) if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            item = cast("dict[str, Any]", entry)
            out[str(item.get("name"))] = item.get(field)
    return out


def active_cluster(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any] | None:
    """The cluster entry the kubeconfig's context (or the `context` / `cluster` overrides) selects."""
    current = overrides.get("context") if overrides.get("context") is not None else config.get("current-context")
    found = _named(config.get("contexts"), "context").get(str(current))
    if not isinstance(found, dict):
        return None
    context = cast("dict[str, Any]", found)
    name = overrides.get("cluster") if overrides.get("cluster") is not None else context.get("cluster")
    cluster = _named(config.get("clusters"), "cluster").get(str(name))
    return cast("dict[str, Any]", cluster) if isinstance(cluster, dict) else None


# ---- settings a resource takes from its provider (2. and 3.) --------------------------------------


@functools.cache
def is_regional(type_: str) -> bool:
    """Whether pulumi-aws gives resources of `type_` a `region` (the installed SDK's class takes one).
    Unknown types count as regional: most AWS resources are."""
    import pulumi_aws

    module, _, name = type_.partition(":")[2].partition(":")
    try:
        cls = getattr(getattr(pulumi_aws, module.partition("/")[0]), name)
        return "region" in inspect.signature(cls._internal_init).parameters
    except (AttributeError, ImportError, TypeError, ValueError):
        return True


def _provider_setting(resource: RecordedResource, providers: Mapping[str, RecordedResource], key: str) -> Any:
    urn = resource.options.get("provider")
    provider = providers.get(urn) if isinstance(urn, str) else None
    return provider.inputs.get(key) if provider is not None else None


def effective_region(resource: RecordedResource, providers: Mapping[str, RecordedResource]) -> str | None:
    """The region a pulumi-aws resource lives in: its own, else its provider's; None if unknown."""
    own = resource.inputs.get("region")
    value = own if own is not None else _provider_setting(resource, providers, "region")
    return value if isinstance(value, str) and value and value != COMPUTED else None


def namespace_path(resource: RecordedResource) -> str | None:
    """Where a Kubernetes object's namespace lives in its inputs; None for cluster-scoped kinds."""
    if resource.type == "kubernetes:helm.sh/v3:Release":
        return "namespace"
    kind = resource.type.rpartition(":")[2]
    if not resource.type.startswith("kubernetes:") or kind in CLUSTER_SCOPED_KINDS or kind.endswith("List"):
        return None
    return "metadata.namespace"


def effective_namespace(resource: RecordedResource, providers: Mapping[str, RecordedResource]) -> str | None:
    path = namespace_path(resource)
    if path is None:
        return None
    own: Any = resource.inputs
    for part in path.split("."):
        own = cast("Mapping[str, Any]", own).get(part) if isinstance(own, Mapping) else None
    value = own if own else _provider_setting(resource, providers, "namespace")
    return value if isinstance(value, str) and value else None
