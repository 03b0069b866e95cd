"""The platform's Helm releases against the real charts: every values key the platform sets must
be one the chart declares, and a chart whose source a Go module serves is rendered with Helm's own
code (helm-python-sdk) and installed on the suite's cluster.

Chart templates are read in place from the module (e2e/upstream.py's table says which module
holds which chart); nothing is copied into the clone. docs/e2e.md ("Charts") says what is
rendered, what is installed, and what is not.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from e2e import upstream
from e2e.cluster import E2EError
from gpuplat.verify.render import SAFE_LOADER

RELEASE = "kubernetes:helm.sh/v3:Release"

# Maps whose keys are the user's, not the chart's: Kubernetes label selectors, labels,
# annotations and resource lists, which templates pass through whole (`toYaml`). A key below
# one is not looked up in values.yaml (HAMi's `devicePlugin.nvidiaNodeSelector` defaults to
# `{gpu: "on"}`; any label a platform adds there is meant to be there).
_FREE_FORM_SUFFIXES = ("nodeselector", "labels", "annotations")
_FREE_FORM = frozenset({"resources", "affinity", "securitycontext", "podsecuritycontext"})

# Keys values.yaml does not declare but the chart's templates read, for charts no module serves
# (a served chart is asked instead: the key is accepted when removing it changes what renders).
READ_UNDECLARED: Mapping[tuple[str, str], str] = {
    ("aws-fsx-csi-driver", "node.region"):
        "chart 1.17.0's templates/node-daemonset.yaml renders it as AWS_REGION; values.yaml does not declare it",
    ("gpu-operator", "dcgmExporter.config"):
        "chart v26.7.0's templates/clusterpolicy.yaml copies it into the ClusterPolicy, whose CRD keeps "
        "spec.dcgmExporter.config.name; values.yaml only shows it in a comment",
}


def releases(resources: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The inputs of every Helm release a recording holds."""
    return [dict(r["inputs"]) for r in resources if r["type"] == RELEASE]


def chart_key(release: Mapping[str, Any]) -> str:
    from gpuplat.catalog.charts import chart_of_release

    chart = chart_of_release(release.get("chart"))
    return chart.key if chart is not None else str(release.get("name"))


# ---- the values-key check ----------------------------------------------------------------


def _free_form(key: str) -> bool:
    lowered = key.lower()
    return lowered in _FREE_FORM or lowered.endswith(_FREE_FORM_SUFFIXES)


def _schema_has(schema: Mapping[str, Any] | None, path: tuple[str, ...]) -> bool:
    """Whether a values.schema.json declares `path` (through `properties`, or a map of any key)."""
    node: Any = schema
    for key in path:
        if not isinstance(node, Mapping):
            return False
        properties = node.get("properties") or {}
        if key in properties:
            node = properties[key]
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            return False
    return True


def undeclared_keys(values: Mapping[str, Any], defaults: Mapping[str, Any],
                    schema: Mapping[str, Any] | None = None) -> list[tuple[str, ...]]:
    """The key paths `values` sets that the chart declares neither in its values.yaml
    (`defaults`) nor in its values.schema.json. Below a key whose default is empty, null or not a
    map (a list, a string to fill in) or that is free-form by its name, nothing is looked up: the
    chart takes whatever is there."""
    missing: list[tuple[str, ...]] = []

    def walk(given: Mapping[str, Any], default: Any, path: tuple[str, ...]) -> None:
        for key, value in given.items():
            here = (*path, str(key))
            if isinstance(default, Mapping) and key in default:
                below = default[key]
            elif not _schema_has(schema, here):
                missing.append(here)
                continue
            else:
                continue
            if isinstance(value, Mapping) and isinstance(below, Mapping) and below and not _free_form(str(key)):
                walk(value, below, here)

    walk(values, defaults, ())
    return missing


def _load_mapping(path: Path) -> dict[str, Any]:
    text = path.read_text(encoding="utf-8")
    loaded = json.loads(text) if path.suffix == ".json" else yaml.load(text, Loader=SAFE_LOADER)
    return dict(loaded) if isinstance(loaded, Mapping) else {}


def declared(key: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(values.yaml, values.schema.json or None) of catalog chart `key` at its pin, wherever
    upstream data is found (the data directory, else the module); UpstreamMissing when nowhere."""
    defaults = _load_mapping(upstream.resolve(f"charts/{key}/values.yaml"))
    try:
        schema_path: Path | None = upstream.resolve(f"charts/{key}/values.schema.json")
    except upstream.UpstreamMissing:
        schema_path = None
    schema = _load_mapping(schema_path) if schema_path is not None and schema_path.is_file() else None
    return defaults, schema


def check_values(key: str, release: Mapping[str, Any], directory: Path | None) -> tuple[list[str], list[str]]:
    """(failures, accepted) key paths of the release's values that the chart does not declare: a
    failure unless the chart reads it anyway, asked of the templates when `directory` holds the
    chart (rendering without the key changes the output), else READ_UNDECLARED."""
    defaults, schema = declared(key)
    values = dict(release.get("values") or {})
    failures, accepted = [], []
    for path in undeclared_keys(values, defaults, schema):
        dotted = ".".join(path)
        if directory is not None:
            given = _rendered_or_none(directory, release)
            without = _rendered_or_none(directory, {**release, "values": _without(values, path)})
            read = given is not None and given != without
            why = "the templates read it" if read else ""
        else:
            why = READ_UNDECLARED.get((key, dotted), "")
        (accepted if why else failures).append(f"{dotted} ({why})" if why else dotted)
    return failures, accepted


def _rendered_or_none(directory: Path, release: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    try:
        return render(directory, release)
    except E2EError:  # the chart refuses these values: nothing says it reads the key
        return None


def _without(values: Mapping[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    copy = dict(values)
    if len(path) == 1:
        copy.pop(path[0], None)
    elif isinstance(copy.get(path[0]), Mapping):
        copy[path[0]] = _without(copy[path[0]], path[1:])
    return copy


# ---- rendering ---------------------------------------------------------------------------


def chart_directory(key: str) -> Path:
    """The chart's directory, templates included, in the module that serves it at the catalog's
    pin (never the upstream data directory, which holds values only); UpstreamMissing saying why
    not when no module serves it."""
    directory = f"charts/{key}"
    if directory in upstream.NOT_IN_MODULES:
        raise upstream.UpstreamMissing(f"chart {key}: {upstream.NOT_IN_MODULES[directory]}")
    if directory not in upstream.IN_MODULES:
        raise upstream.UpstreamMissing(f"chart {key}: no module in e2e/upstream.py's table serves it")
    module, inside = upstream.IN_MODULES[directory]
    found = upstream.module_dir(module) / inside
    if not (found / "templates").is_dir():
        raise upstream.UpstreamMissing(f"chart {key}: {module} has no templates at {inside}")
    return found


def render(directory: Path, release: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The objects Helm renders from the chart at `directory` with the release's values, name
    and namespace (as `helm template`; the chart's crds/ directory is Helm's to install, not a
    template). E2EError with Helm's words when it refuses."""
    import helm_python as helm

    from gpuplat.verify.render import parse_manifests

    try:
        manifests = helm.Chart.load(str(directory)).render(
            dict(release.get("values") or {}), name=str(release.get("name")),
            namespace=str(release.get("namespace") or "default"))
    except helm.HelmError as err:
        raise E2EError(f"helm could not render {directory.name}: {err}") from None
    return parse_manifests(manifests)


def rendered_env(objects: Iterable[Mapping[str, Any]], kind: str) -> dict[str, str]:
    """The literal environment of the first container of the first rendered workload of `kind`."""
    for obj in objects:
        if obj.get("kind") == kind:
            containers = obj["spec"]["template"]["spec"]["containers"]
            return {e["name"]: str(e["value"]) for e in containers[0].get("env", []) if "value" in e}
    return {}


# Kinds without a namespace: `helm template` leaves a template's namespace out where the chart
# does, and `helm install` puts the namespaced ones in the release's.
CLUSTER_SCOPED = frozenset({
    "APIService", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "FlowSchema", "IngressClass",
    "MutatingWebhookConfiguration", "Namespace", "PersistentVolume", "PriorityClass", "PriorityLevelConfiguration",
    "RuntimeClass", "StorageClass", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration", "CSIDriver"})


def in_namespace(objects: Iterable[Mapping[str, Any]], namespace: str) -> list[dict[str, Any]]:
    """The objects as `helm install` creates them: each namespaced one in the release's namespace
    unless its template names one, a cluster-scoped one in none."""
    placed = []
    for obj in objects:
        obj = copy.deepcopy(dict(obj))
        if obj["kind"] in CLUSTER_SCOPED:
            obj["metadata"].pop("namespace", None)
        else:
            obj["metadata"].setdefault("namespace", namespace)
        placed.append(obj)
    return placed


def point_at(objects: list[dict[str, Any]], base_url: str, ca_pem: bytes) -> list[dict[str, Any]]:
    """The chart's webhook configurations and CRD conversion webhooks pointed at `base_url` (the
    manager the suite runs) instead of the chart's Service, as Kueue's integration tests do."""
    ca = base64.b64encode(ca_pem).decode()

    def wired(config: dict[str, Any]) -> dict[str, Any]:
        path = config.get("service", {}).get("path", "")
        return {"url": f"{base_url}{path}", "caBundle": ca}

    for obj in objects:
        if obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            for hook in obj.get("webhooks", []):
                hook["clientConfig"] = wired(hook["clientConfig"])
        conversion = obj.get("spec", {}).get("conversion", {}) if obj["kind"] == "CustomResourceDefinition" else {}
        if conversion.get("strategy") == "Webhook":
            conversion["webhook"]["clientConfig"] = wired(conversion["webhook"]["clientConfig"])
    return objects


def served_elsewhere(objects: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """(what to apply, what is left out and why): objects that route the API server to a Service
    no process of the suite serves (an admission webhook, an aggregated API, a CRD's conversion)
    would make the API server fail every request they cover."""
    kept, left = [], []
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"].get("name")
        hooks = [h for h in obj.get("webhooks", []) if "service" in h.get("clientConfig", {})]
        conversion = obj.get("spec", {}).get("conversion", {}) if kind == "CustomResourceDefinition" else {}
        unserved = (kind == "APIService" and obj["spec"].get("service")) or hooks or \
            "service" in conversion.get("webhook", {}).get("clientConfig", {})
        if unserved:
            left.append(f"{kind} {name}")
        else:
            kept.append(obj)
    return kept, left


# ---- where the operands land -------------------------------------------------------------


Labels = Mapping[str, frozenset[str]]  # a node's labels, or the values a NodePool's nodes may carry


def node_labels(labels: Mapping[str, str]) -> dict[str, frozenset[str]]:
    return {k: frozenset({v}) for k, v in labels.items()}


def nodepool_labels(nodepool: Mapping[str, Any]) -> dict[str, frozenset[str]]:
    """The labels a node Karpenter launches for `nodepool` may carry: its template's labels, each
    `In` requirement's values, and karpenter.sh/nodepool."""
    template = nodepool["spec"]["template"]
    found = node_labels(template.get("metadata", {}).get("labels", {}))
    for req in template["spec"].get("requirements", []):
        if req["operator"] == "In":
            found[req["key"]] = frozenset(req["values"])
    found["karpenter.sh/nodepool"] = frozenset({nodepool["metadata"]["name"]})
    return found


def _expression(expr: Mapping[str, Any], labels: Labels) -> bool:
    key, op, values = expr["key"], expr["operator"], set(expr.get("values") or [])
    have = labels.get(key)
    if op == "Exists":
        return have is not None
    if op == "DoesNotExist":
        return have is None
    if op == "In":
        return have is not None and bool(have & values)
    if op == "NotIn":
        return have is None or not have <= values
    if op in ("Gt", "Lt") and have:
        number = int(next(iter(values)))
        return any((int(v) > number) if op == "Gt" else (int(v) < number) for v in have if v.lstrip("-").isdigit())
    return False


def _tolerated(taint: Mapping[str, Any], tolerations: Iterable[Mapping[str, Any]]) -> bool:
    for tol in tolerations:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists":
            if not tol.get("key") or tol["key"] == taint["key"]:
                return True
        elif tol.get("key") == taint["key"] and str(tol.get("value", "")) == str(taint.get("value", "")):
            return True
    return False


def fits(pod: Mapping[str, Any], labels: Labels, taints: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the scheduler may place a pod of spec `pod` on a node with `labels` and `taints`
    by its nodeSelector, required node affinity and tolerations (what a DaemonSet's or a
    Deployment's template says about where it runs; not resources or pod affinity)."""
    for key, value in (pod.get("nodeSelector") or {}).items():
        if value not in labels.get(key, frozenset()):
            return False
    required = (pod.get("affinity") or {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = (required or {}).get("nodeSelectorTerms", [])
    if terms and not any(all(_expression(e, labels) for e in t.get("matchExpressions", [])) for t in terms):
        return False
    tolerations = pod.get("tolerations") or []
    return all(_tolerated(t, tolerations) for t in taints if t.get("effect") in ("NoSchedule", "NoExecute"))
