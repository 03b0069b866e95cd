"""A GPU fails on provider kubernetes: the operator cordons and drains the node, Kueue's work
runs again on another node of the pool.

On provider kubernetes nothing gpuplat runs replaces a node (docs/health.md): detection is the
DCGM exporter's XID series and the GpuHealth alert naming the node, the repair is the
operator's: `kubectl cordon` and `kubectl drain` of that node. The scenario plays it on the real
engines:

- alert: the emitted PrometheusRule `<platform>-gpu-health`, under `promtool test rules`, fires
  GpuFatalXid for the node the work runs on when its GPU reports XID 79 (the suite's Prometheus
  runs only inside the autoscaling loop, so promtool evaluates the rule; tests/test_gpu_health.py
  has the full cases);
- cordoned: `kubectl cordon`, the node's `spec.unschedulable` read back;
- evicted: `kubectl drain` (the eviction API, `--force` since a plain pod group's pod has no
  controller) evicts the tenant's running pod and returns once it is gone. Meanwhile the kubelet
  stops the pod's container, a training process stopped by SIGTERM leaving the pod Failed (kwok's
  `pod-stop`, e2e/kwokstages.py), and the launcher makes the group's next pod once the lost one
  failed: Kueue removes a group's Failed pod's finalizer, which the drain waits for, only once its
  replacement exists;
- Kueue: its Workload's conditions and `requeueState` right after the eviction and once the
  group's next pod runs: the same admission kept, or evicted and admitted again (the row says
  which);
- running again: the group's next pod runs on another existing node of the pool, none of the
  group on the cordoned one.

The node is uncordoned and the pods removed afterwards.
"""

from __future__ import annotations

import contextlib
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e import quota
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.contention import condition, pending_reason, quiet, workload
from e2e.gpufault import Clock
from e2e.jobs import not_running
from e2e.repair import GPU, GROUP_LABEL, admission, create_pod, group_member, remove_pods, running_node
from e2e.report import Report
from e2e.stack import Stack

SCENARIO = "gpu-node-failure-drain-requeue"
GROUP = "drain"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
XID = 79  # fallen off the bus
# The operator's drain: DaemonSet pods (the exporter, the device plugin) stay; a plain pod
# group's pod has no controller, hence --force (it is still evicted, not deleted).
DRAIN = ("--ignore-daemonsets", "--delete-emptydir-data", "--force")


def slots_of(stack: Stack) -> list[quota.Slot]:
    """Tenants' GPU quotas (whole GPUs first, then MIG slices, then shares) on flavors without a
    Topology: a topology-aware flavor takes only jobs asking for a placement, and Kueue moves
    such a job off a cordoned node itself (e2e/tas_replace.py)."""
    found = quota.within_namespace_quota(quota.slots(stack.of_type(quota.CLUSTER_QUEUE), stack.of_type(quota.FLAVOR)),
                                         stack.of_type(quota.RESOURCE_QUOTA))

    def rank(s: quota.Slot) -> tuple[int, str, str, str]:
        return (0 if s.resource == GPU else 1 if s.resource.startswith("nvidia.com/mig-") else 2,
                s.tenant, s.flavor, s.resource)

    return sorted((s for s in found if s.resource.startswith("nvidia.com/") and s.nominal >= 1), key=rank)


def pool_nodes(nodes: list[dict[str, Any]], labels: dict[str, str]) -> list[str]:
    """The Ready, schedulable nodes carrying every one of the flavor's node labels."""
    found = []
    for node in nodes:
        have = node.get("metadata", {}).get("labels", {})
        if any(have.get(k) != v for k, v in labels.items()) or node.get("spec", {}).get("unschedulable"):
            continue
        if condition(node, "Ready").get("status") == "True":
            found.append(str(node["metadata"]["name"]))
    return sorted(found)


def with_spare_node(cluster: Cluster, found: list[quota.Slot]) -> tuple[quota.Slot, list[str]] | str:
    """The first slot whose pool has a second Ready, schedulable node for the work to move to, with
    the pool's nodes; else each flavor's count of such nodes, for the skipped row."""
    listed = cluster.items("nodes")
    chosen = [(s, pool_nodes(listed, s.node_labels)) for s in found]
    usable = [(s, p) for s, p in chosen if len(p) >= 2]
    return usable[0] if usable else ", ".join(f"{s.flavor} {len(p)}" for s, p in chosen)


def alert_case(rule_file: str, node: str, pool: str, description: str) -> dict[str, Any]:
    """promtool's test document: the exporter reports XID 79 on GPU 0 of `node`; GpuFatalXid must
    fire for that node and GPU."""
    labels = {"node": node, "pool": pool, "gpu": "0", "severity": "critical"}
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": f'DCGM_FI_DEV_XID_ERRORS{{node="{node}",pool="{pool}",gpu="0"}}',
                          "values": f"0 {XID}x10"}],
        "alert_rule_test": [{"eval_time": "5m", "alertname": "GpuFatalXid", "exp_alerts": [{
            "exp_labels": labels,
            "exp_annotations": {"summary": f"GPU 0 of node {node} (pool {pool}) reported fatal XID {XID}",
                                "description": description}}]}]}]}


def alerted(cluster: Cluster, stack: Stack, node: str, pool: str) -> tuple[bool, str]:
    """The emitted GpuHealth rule, under the real promtool, alerts on `node`'s XID."""
    rules = [r for r in stack.of_type(RULE) if r["metadata"]["name"].endswith("-gpu-health")]
    if not rules:
        return False, "the stack emits no PrometheusRule <platform>-gpu-health"
    spec, name = rules[0]["spec"], rules[0]["metadata"]["name"]
    fatal = [a for g in spec["groups"] for a in g["rules"] if a.get("alert") == "GpuFatalXid"]
    if not fatal:
        return False, f"PrometheusRule {name} has no GpuFatalXid alert"
    yaml = YAML(typ="safe")
    with tempfile.TemporaryDirectory(prefix="promtool-gpu-health-", dir=cluster.workdir) as tmp:
        work = Path(tmp)
        with (work / "rules.yaml").open("w") as out:
            yaml.dump(spec, out)
        with (work / "tests.yaml").open("w") as out:
            yaml.dump(alert_case("rules.yaml", node, pool, fatal[0]["annotations"]["description"]), out)
        result = subprocess.run([str(cluster.tools["promtool"]), "test", "rules", "tests.yaml"], cwd=work,
                                capture_output=True, text=True)
    if result.returncode:
        return False, f"promtool test rules on {name}: {(result.stdout + result.stderr).strip()[-1200:]}"
    return True, f"{name}'s GpuFatalXid fires for node {node} (pool {pool}, GPU 0) on XID {XID}, under promtool"


def cordoned(node: dict[str, Any] | None) -> str | None:
    """The node as `kubectl cordon` leaves it: unschedulable (and the node controller's taint, if
    it came already)."""
    if not (node or {}).get("spec", {}).get("unschedulable"):
        return None
    taints = [f"{t['key']}:{t['effect']}" for t in node.get("spec", {}).get("taints", [])  # type: ignore[union-attr]
              if t.get("key") == "node.kubernetes.io/unschedulable"]
    return "spec.unschedulable true" + (f", taint {taints[0]}" if taints else "")


def evicted(drain: subprocess.CompletedProcess[str], namespace: str, name: str,
            pod: dict[str, Any] | None) -> str:
    """What `kubectl drain` did to the tenant's pod: evicted through the eviction API and gone."""
    said = (drain.stdout + drain.stderr).strip()
    if drain.returncode:
        raise E2EError(f"kubectl drain failed ({drain.returncode}): {said[-600:]}")
    if f"evicting pod {namespace}/{name}" not in said:
        raise E2EError(f"kubectl drain did not evict pod {namespace}/{name}: {said[-600:]}")
    if pod is not None:
        raise E2EError(f"kubectl drain returned with pod {namespace}/{name} still there "
                       f"(finalizers {pod.get('metadata', {}).get('finalizers')})")
    return f"pod {namespace}/{name} evicted through the eviction API and gone"


def drain_relaunching(cluster: Cluster, node: str, namespace: str, name: str, timeout: float, clock: Clock,
                      relaunch: Callable[[], str]) -> tuple[subprocess.CompletedProcess[str], str]:
    """`kubectl drain` of `node`; meanwhile, once the eviction marked the tenant's pod for deletion
    (clock mark `evicted`) and the kubelet's part (kwok's `pod-stop`, e2e/kwokstages.py) left it
    Failed (mark `stopped`), the launcher's part: `relaunch` (mark `relaunched`). Kueue lets a pod
    group's Failed pod go (removes its finalizer, which the drain waits for) only once a
    replacement exists (kueue 0.19.2, pod_controller.go FindMatchingWorkloads), so the launcher
    cannot wait for the drain."""
    args = [str(cluster.tools["kubectl"]), "--kubeconfig", str(cluster.kubeconfig), "drain", node, *DRAIN,
            f"--timeout={timeout:.0f}s"]
    played, out, err = "", "", ""
    deadline = time.monotonic() + timeout + 60
    with subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        while True:
            try:
                out, err = proc.communicate(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() > deadline:
                proc.kill()
            pod = cluster.get("pod", name, namespace)
            if played or pod is None or not pod["metadata"].get("deletionTimestamp"):
                continue
            if "evicted" not in clock.marks:
                clock.mark("evicted")
            if pod.get("status", {}).get("phase") != "Failed":
                continue
            clock.mark("stopped")
            codes = [s.get("state", {}).get("terminated", {}).get("exitCode")
                     for s in pod.get("status", {}).get("containerStatuses", [])]
            played = f"the kubelet's part (kwok): containers exited {codes}, pod Failed; {relaunch()}"
            clock.mark("relaunched")
    return subprocess.CompletedProcess(args, proc.returncode, out, err), played


def workload_state(item: dict[str, Any] | None) -> str:
    """Kueue's Workload in its own words: the conditions that say kept or evicted, and requeueState."""
    if item is None:
        return "no Workload"
    parts = []
    for kind in ("QuotaReserved", "Admitted", "PodsReady", "WaitingForReplacementPods", "Evicted", "Requeued",
                 "Finished"):
        found = condition(item, kind)
        if found:
            why = found.get("reason") or ""
            parts.append(f"{kind}={found.get('status')}" + (f" ({why})" if why else ""))
    state = item.get("status", {}).get("requeueState") or {}
    parts.append(f"requeueState {state}" if state else "requeueState none")
    return ", ".join(parts)


def elsewhere(pod: dict[str, Any] | None, failed: str, pool: list[str]) -> str | None:
    """The group's next pod running and Ready on another node of the pool (None: not yet)."""
    status = (pod or {}).get("status", {})
    node = (pod or {}).get("spec", {}).get("nodeName")
    if node == failed:
        raise E2EError(f"pod {pod['metadata']['name']} bound to the cordoned node {failed}")  # type: ignore[index]
    if status.get("phase") != "Running" or condition(pod, "Ready").get("status") != "True":
        return None
    if node not in pool:
        raise E2EError(f"pod {pod['metadata']['name']} runs on {node}, not a node of the pool ({', '.join(pool)})")  # type: ignore[index]
    return str(node)


def on_node(pods: list[dict[str, Any]], node: str) -> list[str]:
    """The group's pods still bound to `node`."""
    return sorted(p["metadata"]["name"] for p in pods
                  if p.get("metadata", {}).get("labels", {}).get(GROUP_LABEL) == GROUP
                  and p.get("spec", {}).get("nodeName") == node)


def drain_requeue(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    if stack.release("kueue") is None:
        report.skip(label, SCENARIO, "queueing: none: no Kueue requeues the work")
        return
    found = slots_of(stack)
    if not found:
        report.skip(label, SCENARIO, "no tenant has GPU quota on a flavor without a Topology")
        return
    spare = with_spare_node(cluster, found)
    if isinstance(spare, str):
        report.skip(label, SCENARIO, f"no pool of a tenant's GPU quota has a second Ready node to run the work "
                    f"again on: {spare}")
        return
    slot, pool = spare
    pods, failed = [f"{GROUP}-0"], ""
    try:
        failed = _scenario(cluster, stack, report, slot, pool, pods, timeout)
    finally:
        if failed:
            cluster.kubectl("uncordon", failed, check=False)
        remove_pods(cluster, slot.tenant, pods)
        with contextlib.suppress(E2EError):
            quiet(cluster, timeout)


def _scenario(cluster: Cluster, stack: Stack, report: Report, slot: quota.Slot, pool: list[str],
              pods: list[str], timeout: float) -> str:
    """Returns the node cordoned ('' when it got no further than the setup)."""
    label, ns, first = stack.target.label, slot.tenant, pods[0]
    create_pod(cluster, group_member(slot, first, GROUP))
    try:
        node = wait_for(lambda: running_node(cluster, ns, first), timeout, f"pod {ns}/{first} running", 2.0)
    except E2EError as err:
        why = pending_reason(workload(cluster, ns, "Pod", first))
        report.scenario(label, f"{SCENARIO}-setup", False, f"{err}: {why}; {not_running(cluster, ns, first)}")
        return ""
    wl_name = str((workload(cluster, ns, "Pod", first) or {}).get("metadata", {}).get("name"))

    def wl() -> dict[str, Any] | None:
        """The group's Workload; should Kueue have deleted it with its last pod, the next pod's."""
        return cluster.get("workloads.kueue.x-k8s.io", wl_name, ns) or workload(cluster, ns, "Pod", pods[-1])

    before = workload_state(wl())
    report.mark()
    clock = Clock()  # the fault: XID 79 on the node's GPU, as the exporter reports it
    ok, said = alerted(cluster, stack, node, slot.pool)
    report.scenario(label, f"{SCENARIO}-alert", ok, said)
    cluster.kubectl("cordon", node)
    try:
        fenced = wait_for(lambda: cordoned(cluster.get("node", node)), timeout, f"node {node} unschedulable", 1.0)
    except E2EError as err:
        report.scenario(label, f"{SCENARIO}-cordoned", False, str(err))
        return node
    clock.mark("cordoned")
    report.scenario(label, f"{SCENARIO}-cordoned", True, f"{clock.marks['cordoned']:.0f} s after the fault: node "
                    f"{node} {fenced}")
    again = f"{GROUP}-1"
    pods.append(again)

    def relaunch() -> str:
        """The tenant's launcher: the group's next pod, once the lost one failed."""
        with contextlib.suppress(E2EError):
            wait_for(lambda: condition(wl(), "WaitingForReplacementPods").get("status") == "True" or None, 15,
                     "Kueue to ask for a replacement", 1.0)
        state = workload_state(wl())
        try:
            create_pod(cluster, group_member(slot, again, GROUP))
        except E2EError as err:
            return f"Workload then: {state}; the launcher's pod refused: {err}"
        return f"Workload then: {state}; the launcher made {ns}/{again}"

    drain, played = drain_relaunching(cluster, node, ns, first, timeout, clock, relaunch)
    clock.mark("drained")
    try:
        gone = evicted(drain, ns, first, cluster.get("pod", first, ns))
    except E2EError as err:
        report.scenario(label, f"{SCENARIO}-evicted", False, f"{err} ({clock.marks['drained']:.0f} s after the fault; "
                        f"{played or 'the pod was never marked for deletion'})")
        return node
    seen = clock.marks.get("evicted", clock.marks["drained"])
    if not played:  # gone before it was seen Failed: the launcher's part still is
        played = relaunch()
    report.scenario(label, f"{SCENARIO}-evicted", True, f"{seen:.0f} s after the fault: {gone} "
                    f"(drain returned at {clock.marks['drained']:.0f} s); Workload {ns}/{wl_name} before: {before}; "
                    f"{played}")
    try:
        ran = wait_for(lambda: elsewhere(cluster.get("pod", again, ns), node, pool), 2 * timeout,
                       f"pod {ns}/{again} running on another node of the pool", 2.0)
        clock.mark("running-again")
        verdict = wait_for(lambda: admission(wl()), timeout, f"Kueue's admission of Workload {ns}/{wl_name}", 1.0)
    except E2EError as err:
        report.scenario(label, f"{SCENARIO}-running-again", False, f"{err}: {workload_state(wl())}; "
                        f"{pending_reason(wl())}; {not_running(cluster, ns, again)}")
        return node
    left = on_node(cluster.items("pods", ns), node)
    still = cordoned(cluster.get("node", node))
    ok = not left and still is not None
    report.scenario(label, f"{SCENARIO}-running-again", ok, f"{clock.marks['running-again']:.0f} s after the fault: "
                    f"pod {ns}/{again} running on {ran} (pool {slot.pool}: {', '.join(pool)}); Kueue: {verdict}; "
                    f"Workload now: {_named(wl())} {workload_state(wl())}; on the cordoned node {node}: "
                    f"{', '.join(left) or 'none of the group'}, {still or 'no longer unschedulable'}")
    summary = ", ".join(f"{k} {v:.0f} s" for k, v in clock.marks.items())
    report.scenario(label, SCENARIO, ok, f"XID {XID} on node {node} under {ns}'s pod group (1 {slot.resource}) in "
                    f"flavor {slot.flavor}; the operator's repair (kubectl cordon, kubectl drain {' '.join(DRAIN)}) "
                    f"then the launcher's next pod; from the fault: {summary}")
    return node


def _named(item: dict[str, Any] | None) -> str:
    return str((item or {}).get("metadata", {}).get("name", "none"))
