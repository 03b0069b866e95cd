"""The stack's Helm releases on the suite's cluster (e2e/charts.py does the work):

- `chart-values-<chart>`: every values key the release sets is one the chart declares;
- `chart-<chart>`: a chart a module serves is rendered with the release's values and its
  objects applied with server-side apply (its crds/ first, as Helm installs them); a chart no
  module serves is a skipped row saying why it was not rendered;
- `chart-operands-<chart>`: the rendered Deployments' pods are bound by the real scheduler to
  nodes that are not GPU nodes, and no GPU node or GPU NodePool would take them; a rendered
  DaemonSet runs on exactly the nodes its template selects and tolerates.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from e2e import charts, upstream
from e2e.cluster import Cluster, E2EError
from e2e.devices import HARDWARE_ANNOTATION
from e2e.objects import crd_documents, sort_for_apply
from e2e.report import Report
from e2e.stack import Stack

# Hooks `helm install` runs; the others (delete, upgrade, rollback, test) are not an install's.
INSTALL_HOOKS = frozenset({"pre-install", "post-install"})
OPERAND_KINDS = ("Deployment", "DaemonSet")
# Where a chart's templates point at its controller, the controller the suite runs answers.
MANAGED_BY_SUITE = {"kueue": "the real Kueue's webhook server"}


def installable(objects: list[dict[str, Any]], namespace: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The objects `helm install` would create, in the release's namespace, and the hooks it
    would not run."""
    kept, hooks = [], []
    for obj in objects:
        hook = obj["metadata"].get("annotations", {}).get("helm.sh/hook")
        if hook and not INSTALL_HOOKS & {h.strip() for h in hook.split(",")}:
            hooks.append(f"{obj['kind']} {obj['metadata'].get('name')} (hook {hook})")
            continue
        kept.append(obj)
    return charts.in_namespace(kept, namespace), hooks


def chart_crds(directory: Path, release: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chart's crds/ directory, which Helm installs before the templates unless skipCrds."""
    if release.get("skipCrds") or not (directory / "crds").is_dir():
        return []
    return crd_documents(sorted((directory / "crds").glob("*.y*ml")))


def install(cluster: Cluster, stack: Stack, report: Report, wiring: Mapping[str, tuple[str, bytes]]
            ) -> dict[str, list[dict[str, Any]]]:
    """Check and install every release of the stack; returns the objects applied, per chart.
    `wiring`: chart -> (URL, CA) of the process of the suite's that serves its webhooks."""
    label = stack.target.label
    installed: dict[str, list[dict[str, Any]]] = {}
    for release in charts.releases(stack.resources):
        key = charts.chart_key(release)
        try:
            directory: Path | None = charts.chart_directory(key)
            not_served = ""
        except upstream.UpstreamMissing as err:
            directory, not_served = None, str(err)
        try:
            failures, accepted = charts.check_values(key, release, directory)
            detail = (f"keys the chart does not declare: {', '.join(failures)}" if failures else
                      f"every key of the {key} release's values is declared by the chart's values.yaml")
            if accepted:
                detail += f"; undeclared but read: {', '.join(accepted)}"
            report.scenario(label, f"chart-values-{key}", not failures, detail)
        except upstream.UpstreamMissing as err:
            report.skip(label, f"chart-values-{key}", f"the chart's values.yaml is nowhere: {err}")
        except E2EError as err:
            report.scenario(label, f"chart-values-{key}", False, str(err))
        if directory is None:
            report.skip(label, f"chart-{key}", f"not rendered: {not_served}")
            continue
        try:
            installed[key] = _install_one(cluster, stack, report, key, directory, release, wiring.get(key))
        except E2EError as err:
            report.scenario(label, f"chart-{key}", False, str(err))
    return installed


def _install_one(cluster: Cluster, stack: Stack, report: Report, key: str, directory: Path,
                 release: Mapping[str, Any], wired: tuple[str, bytes] | None) -> list[dict[str, Any]]:
    namespace = str(release.get("namespace") or "default")
    rendered = charts.render(directory, release)
    if wired is not None:
        charts.point_at(rendered, *wired)
    objects, hooks = installable(rendered, namespace)
    objects, unserved = charts.served_elsewhere(objects)
    crds = chart_crds(directory, release)
    cluster.kubectl("create", "namespace", namespace, check=False)
    refused = cluster.apply(crds)
    if crds:  # established before the objects of their kinds are applied, as Helm waits for them
        cluster.wait_established(check=False)
    refused += cluster.apply(sort_for_apply(objects))
    source = f"{directory.parent.name}/{directory.name} of {directory.parents[1].name}"
    detail = (f"{len(objects)} objects rendered by Helm from {source} with the release's values"
              f"{f' and {len(crds)} CRDs of its crds/' if crds else ''}, applied")
    if wired is not None:
        detail += f"; webhooks and CRD conversion pointed at {MANAGED_BY_SUITE.get(key, wired[0])}"
    if unserved:
        detail += f"; not applied (a Service no process here serves): {', '.join(unserved)}"
    if hooks:
        detail += f"; not run (not install hooks): {', '.join(hooks)}"
    if refused:
        detail = "; ".join(f"{o['kind']} {o['metadata'].get('name')}: {why[-300:]}" for o, why in refused[:5])
    report.scenario(stack.target.label, f"chart-{key}", not refused, detail)
    return objects


# ---- where the operands land -------------------------------------------------------------


def gpu_nodepools(stack: Stack) -> list[dict[str, Any]]:
    return [p for p in stack.of_type("kubernetes:karpenter.sh/v1:NodePool")
            if "gpuplat.dev/pool" in p["spec"]["template"].get("metadata", {}).get("labels", {})]


def is_gpu_node(node: Mapping[str, Any], gpu_pools: set[str]) -> bool:
    meta = node["metadata"]
    return (HARDWARE_ANNOTATION in meta.get("annotations", {})
            or meta.get("labels", {}).get("karpenter.sh/nodepool") in gpu_pools
            or any(k.startswith("nvidia.com/") for k in node.get("status", {}).get("allocatable", {})))


def _pods_of(cluster: Cluster, workload: Mapping[str, Any]) -> list[dict[str, Any]]:
    wanted = workload["spec"]["selector"].get("matchLabels", {})
    pods = cluster.items("pods", workload["metadata"]["namespace"])
    return [p for p in pods if all(p["metadata"].get("labels", {}).get(k) == v for k, v in wanted.items())]


def wait_bound(cluster: Cluster, objects: list[dict[str, Any]], timeout: float) -> None:
    """Give the scheduler time to bind the Deployments' pods (a chart's pods would otherwise race
    the GPU nodes the suite creates next, which the pool labeler taints only once they exist)."""
    deadline = time.monotonic() + timeout
    for workload in (o for o in objects if o["kind"] == "Deployment"):
        while time.monotonic() < deadline:
            pods = _pods_of(cluster, workload)
            if len([p for p in pods if p["spec"].get("nodeName")]) >= int(workload["spec"].get("replicas", 1)):
                break
            time.sleep(1.0)


def operands(cluster: Cluster, stack: Stack, report: Report, installed: Mapping[str, list[dict[str, Any]]],
             timeout: float) -> None:
    """`chart-operands-<chart>` for each installed chart with Deployments or DaemonSets."""
    pools = gpu_nodepools(stack)
    pool_names = {p["metadata"]["name"] for p in pools}
    for key, objects in installed.items():
        workloads = [o for o in objects if o["kind"] in OPERAND_KINDS]
        if not workloads:
            continue
        deadline = time.monotonic() + timeout
        while True:
            nodes = cluster.items("nodes")
            wrong, said = [], []
            for workload in workloads:
                problems, facts = _placement(cluster, workload, nodes, pools, pool_names)
                wrong += problems
                said += facts
            if not wrong or time.monotonic() > deadline:
                break
            time.sleep(2.0)
        report.scenario(stack.target.label, f"chart-operands-{key}", not wrong, "; ".join(wrong or said))


def _placement(cluster: Cluster, workload: Mapping[str, Any], nodes: list[dict[str, Any]],
               pools: list[dict[str, Any]], pool_names: set[str]) -> tuple[list[str], list[str]]:
    kind, name = workload["kind"], workload["metadata"]["name"]
    template = workload["spec"]["template"]["spec"]
    pods = _pods_of(cluster, workload)
    bound = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in pods}

    def fits(node: Mapping[str, Any]) -> bool:
        return charts.fits(template, charts.node_labels(node["metadata"].get("labels", {})),
                           node["spec"].get("taints") or [])

    problems: list[str] = []
    if kind == "DaemonSet":
        wanted = sorted(n["metadata"]["name"] for n in nodes if fits(n))
        running = sorted(n for n in bound.values() if n)
        if running != wanted:
            problems.append(f"DaemonSet {name} runs on {running or 'no node'}; its template selects {wanted or 'none'}")
        return problems, [f"DaemonSet {name} on {len(running)} node(s), those its template selects"]
    replicas = int(workload["spec"].get("replicas", 1))
    gpu_nodes = {n["metadata"]["name"] for n in nodes if is_gpu_node(n, pool_names)}
    on_nodes = sorted(n for n in bound.values() if n)
    if len(on_nodes) < replicas:
        pending = [p for p in pods if not p["spec"].get("nodeName")]
        why = _unscheduled(cluster, workload, pending)
        problems.append(f"Deployment {name}: {len(on_nodes)} of {replicas} pod(s) bound{why}")
    if gpu_nodes & set(on_nodes):
        problems.append(f"Deployment {name} bound to GPU node(s) {sorted(gpu_nodes & set(on_nodes))}")
    would = sorted(n["metadata"]["name"] for n in nodes if n["metadata"]["name"] in gpu_nodes and fits(n))
    would += [f"NodePool {p['metadata']['name']}" for p in pools
              if charts.fits(template, charts.nodepool_labels(p), p["spec"]["template"]["spec"].get("taints") or [])]
    if would:
        problems.append(f"Deployment {name}'s pods may be placed on GPU capacity: {', '.join(would)}")
    return problems, [f"Deployment {name}: {len(on_nodes)}/{replicas} bound by the scheduler on {on_nodes}, "
                      "which serve no GPU; no GPU node or GPU NodePool takes its template"]


def _unscheduled(cluster: Cluster, workload: Mapping[str, Any], pending: list[dict[str, Any]]) -> str:
    for pod in pending:
        for condition in pod.get("status", {}).get("conditions", []):
            if condition.get("type") == "PodScheduled" and condition.get("message"):
                return f" (the scheduler: {condition['message']})"
    deployment = cluster.get("deployment", workload["metadata"]["name"], workload["metadata"]["namespace"]) or {}
    for condition in deployment.get("status", {}).get("conditions", []):
        if condition.get("type") == "ReplicaFailure":
            return f" ({condition.get('message')})"
    return ""
