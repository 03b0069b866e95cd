"""The GPU fence on aws targets: the emitted fencer, run as its pod would, taints a failed node at once.

kwok runs no container, so the suite runs the fencer's program the way its pod would: the script
and the environment are read from the ConfigMap and the Deployment in the cluster (what the stack
applied), and it talks to the API server with a token the TokenRequest API issued to its service
account, so the emitted RBAC and ValidatingAdmissionPolicy are what let it through. A tenant's
pod takes a GPU node; the node monitoring agent's condition turns False (gpufault.mark_unhealthy);
the rows say when the fence taint appeared, that the real scheduler then refuses the node to a pod
that tolerates everything else on it, that the taint goes and the pod binds once the condition is
healed, and that the policy refuses the fencer's identity any other change of a node.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from components.kubernetes.gpu_fence import APP, SCRIPT
from components.kubernetes.node_fencer import TAINT_KEY
from e2e import gpufault, prometheus, quota, repair, sandbox
from e2e.cluster import Cluster, E2EError, service_account_identity, wait_for
from e2e.report import Report
from e2e.stack import Stack

ROW = "gpu-node-fence"
PROBE = "fence-probe"


def system_namespace(stack: Stack) -> str:
    """Where the stack put the fencer (the platform's system namespace)."""
    return next((str(d["metadata"].get("namespace")) for d in stack.of_type("kubernetes:apps/v1:Deployment")
                 if d["metadata"]["name"] == APP), "")


def fencer_environment(cluster: Cluster, stack: Stack, account_dir: Path) -> tuple[dict[str, str], str] | str:
    """(the fencer container's environment as its pod would have it, the script), or what is missing."""
    namespace = system_namespace(stack)
    deployment = cluster.get("deployment", APP, namespace)
    config_map = cluster.get("configmap", APP, namespace)
    if deployment is None or config_map is None:
        return f"the GpuFence Deployment or ConfigMap {namespace}/{APP} is not in the cluster"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}
    found = prometheus.credentials(cluster)
    server, ca = urlsplit(found["server"]), found["ca"]
    token = cluster.kubectl("create", "token", container_account(deployment), "-n", namespace,
                            "--duration=1h").stdout.strip()
    (account_dir / "token").write_text(token)
    (account_dir / "ca.crt").write_text(Path(ca).read_text())
    env |= {"KUBERNETES_SERVICE_HOST": str(server.hostname), "KUBERNETES_SERVICE_PORT": str(server.port or 443),
            "SERVICEACCOUNT_DIR": str(account_dir), "PATH": "/usr/bin:/bin"}
    return env, str(config_map["data"][SCRIPT.name])


def container_account(deployment: dict[str, Any]) -> str:
    return str(deployment["spec"]["template"]["spec"].get("serviceAccountName", "default"))


def fence_taint(node: dict[str, Any] | None) -> dict[str, Any] | None:
    return next((t for t in (node or {}).get("spec", {}).get("taints") or [] if t.get("key") == TAINT_KEY), None)


def probe_pod(node: dict[str, Any], namespace: str) -> dict[str, Any]:
    """A pod the scheduler may place only on `node`, tolerating every taint it has but the fence; in
    the platform's system namespace, which Kueue does not manage, and fit for its Pod Security."""
    tolerations = [{"key": t["key"], "operator": "Exists", "effect": t["effect"]}
                   for t in node["spec"].get("taints") or [] if t["key"] != TAINT_KEY]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node["metadata"]["name"]]}]}]}}}
    restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": PROBE, "namespace": namespace},
            "spec": {"affinity": affinity, "tolerations": tolerations, "restartPolicy": "Never",
                     "securityContext": {"runAsNonRoot": True, "runAsUser": 65532,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10.2",
                                     "securityContext": restricted}]}}


def scheduled_condition(pod: dict[str, Any] | None) -> dict[str, Any]:
    conditions = (pod or {}).get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == "PodScheduled"), {})


def node_event(cluster: Cluster, node: str, reason: str) -> str | None:
    """The fencer's Event of `reason` on `node`, as `kubectl describe node` shows it."""
    for event in cluster.items("events", "default"):
        if event.get("involvedObject", {}).get("name") == node and event.get("reason") == reason:
            return f"{reason} ({event.get('type')}): {event.get('message')}"
    return None


def refused_for_fence(pod: dict[str, Any] | None) -> str | None:
    """The scheduler's refusal for an untolerated taint. The probe tolerates every other taint of
    its only node, so that is the fence (the 1.36 scheduler no longer names the taint; the probe
    binding once the fence is lifted shows it was that one)."""
    condition = scheduled_condition(pod)
    message = str(condition.get("message", ""))
    return message if condition.get("status") == "False" and "untolerated taint" in message else None


def probe_refused(cluster: Cluster, node: str, namespace: str) -> tuple[str, str]:
    """Once `node` is tainted: the scheduler's refusal of the probe, and the fencer's GpuFenced Event."""
    refusals = cluster.apply([probe_pod(cluster.get("node", node) or {}, namespace)])
    if refusals:
        raise E2EError(f"the probe pod was refused: {refusals[0][1][-300:]}")
    refused = wait_for(lambda: refused_for_fence(cluster.get("pod", PROBE, namespace)), 10,
                       f"the scheduler refusing {PROBE} for an untolerated taint", 0.2)
    event = wait_for(lambda: node_event(cluster, node, "GpuFenced"), 10, f"the GpuFenced Event on {node}", 0.5)
    return refused, event


def probe_bound(cluster: Cluster, node: str, namespace: str, start: float, within: float) -> tuple[float, str, str]:
    """Once the fault is healed: seconds from `start` to the taint gone (waited for `within` seconds
    from now), the node the probe then binds to, and the fencer's GpuUnfenced Event."""
    wait_for(lambda: fence_taint(cluster.get("node", node)) is None or None, within, f"the fence lifted on {node}", 0.2)
    lifted = time.monotonic() - start
    bound = wait_for(lambda: (cluster.get("pod", PROBE, namespace) or {}).get("spec", {}).get("nodeName"),
                     20, f"{PROBE} bound", 0.2)
    event = wait_for(lambda: node_event(cluster, node, "GpuUnfenced"), 10, f"the GpuUnfenced Event on {node}", 0.5)
    return lifted, str(bound), event


def fence(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    label = stack.target.label
    slot = repair.whole_gpu_slot(stack)
    if stack.release("kueue") is None or slot is None:
        report.skip(label, ROW, "no tenant's whole-GPU quota to bring up a GPU node with")
        return
    made = repair.Made([f"{ROW}-0"])
    try:
        with fencer_running(cluster, stack) as log:
            _scenario(cluster, report, label, stack, slot, made, timeout, log)
    except E2EError as err:
        report.scenario(label, ROW, False, str(err))
    finally:
        remove_probe(cluster, stack)
        repair.undo(cluster, slot.tenant, made)
        if made.failed:
            cluster.kubectl("taint", "node", made.failed, f"{TAINT_KEY}:NoSchedule-", check=False)


@contextlib.contextmanager
def fencer_running(cluster: Cluster, stack: Stack, hosts: Mapping[str, str] | None = None) -> Iterator[Path]:
    """The emitted fencer, run as its pod would run it; yields its log. `hosts`: the Services it
    names (Prometheus'), resolved as the cluster's DNS would, through an /etc/hosts of its own."""
    with tempfile.TemporaryDirectory(prefix="fencer-") as tmp:
        found = fencer_environment(cluster, stack, Path(tmp))
        if isinstance(found, str):
            raise E2EError(found)
        env, script = found
        (Path(tmp) / SCRIPT.name).write_text(script)
        argv = [sys.executable, "-u", "-B", str(Path(tmp) / SCRIPT.name)]
        if hosts:
            argv = sandbox.with_mounts(argv, {"/etc/hosts": sandbox.hosts_file(Path(tmp) / "hosts", hosts)})
        log = cluster.workdir / "gpu-fencer.log"
        with open(log, "w") as out:
            fencer = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield log
        finally:
            fencer.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                fencer.wait(10)


def remove_probe(cluster: Cluster, stack: Stack) -> None:
    cluster.kubectl("delete", "pod", PROBE, "-n", system_namespace(stack), "--ignore-not-found", "--wait=false",
                    check=False)


def _scenario(cluster: Cluster, report: Report, label: str, stack: Stack, slot: quota.Slot, made: repair.Made,
              timeout: float, log: Path) -> None:
    ns, first, namespace = slot.tenant, made.pods[0], system_namespace(stack)
    repair.create_pod(cluster, repair.group_member(slot, first, ROW))
    try:
        node = wait_for(lambda: repair.running_node(cluster, ns, first), timeout, f"pod {ns}/{first} running", 2.0)
    except E2EError as err:
        report.scenario(label, ROW, False, f"no GPU node to fail: {err}")
        return
    report.mark()
    made.failed = node
    start = time.monotonic()
    gpufault.mark_unhealthy(cluster, node)
    # Karpenter's repair (30 s toleration as run) replaces the node later: everything below comes first.
    try:
        taint = wait_for(lambda: fence_taint(cluster.get("node", node)), 20, f"the fence taint on {node}", 0.2)
        fenced = time.monotonic() - start
        refused, event = probe_refused(cluster, node, namespace)
    except E2EError as err:
        report.scenario(label, ROW, False, f"{err}; the probe: {_probe_state(cluster, namespace)}; "
                        f"the fencer said: {tail(log)}")
        return
    report.scenario(label, ROW, True,
                    f"{gpufault.GPU_CONDITION} False on {node} (under {ns}'s running pod): tainted "
                    f"{TAINT_KEY}={taint.get('value')}:{taint.get('effect')} {fenced:.1f} s after the fault, "
                    f"by the emitted fencer as its service account; the scheduler on a pod tolerating the "
                    f"node's other taints: {refused[:200]}; Event {event}")
    _lifted(cluster, report, label, node, namespace, log)
    least_privilege(cluster, report, label, stack, node)


def _lifted(cluster: Cluster, report: Report, label: str, node: str, namespace: str, log: Path) -> None:
    report.mark()
    start = time.monotonic()
    gpufault.heal(cluster, node)
    try:
        lifted, bound, event = probe_bound(cluster, node, namespace, start, 20)
    except E2EError as err:
        report.scenario(label, f"{ROW}-lifted", False, f"{err}; the probe: {_probe_state(cluster, namespace)}; "
                        f"the fencer said: {tail(log)}")
        return
    report.scenario(label, f"{ROW}-lifted", bound == node,
                    f"condition healed: taint removed {lifted:.1f} s later, {PROBE} bound to {bound}; Event {event}")


def least_privilege(cluster: Cluster, report: Report, label: str, stack: Stack, node: str) -> None:
    """The fencer's identity may add its taint to a pool's node and nothing else."""
    identity = service_account_identity(system_namespace(stack), APP)
    others = [n["metadata"]["name"] for n in cluster.items("nodes")
              if "gpuplat.dev/pool" not in (n["metadata"].get("labels") or {})]
    attempts = {
        "label its node": ("label", "node", node, "gpuplat.dev/e2e-fence=yes"),
        "taint its node with another key": ("taint", "node", node, "gpuplat.dev/e2e-fence=yes:NoSchedule"),
        # A patch, not `kubectl cordon`, which exits 0 when the API server refuses it.
        "cordon its node": ("patch", "node", node, "--type=merge", "-p", '{"spec":{"unschedulable":true}}'),
    }
    if others:
        attempts["taint a node outside the pools"] = ("taint", "node", others[0], f"{TAINT_KEY}=x:NoSchedule")
    answers = {what: cluster.kubectl(*args, check=False, **identity) for what, args in attempts.items()}
    allowed = [what for what, result in answers.items() if result.returncode == 0]
    # RBAC lets it patch any node: a refusal must be the emitted ValidatingAdmissionPolicy's.
    by_policy = [what for what, result in answers.items() if result.returncode and "ValidatingAdmissionPolicy" in
                 result.stderr and APP in result.stderr]
    own = cluster.kubectl("taint", "node", node, f"{TAINT_KEY}=e2e:NoSchedule", check=False, **identity)
    cluster.kubectl("taint", "node", node, f"{TAINT_KEY}:NoSchedule-", check=False)
    if "cordon its node" in allowed:
        cluster.kubectl("uncordon", node, check=False)
    words = [f"refused by the admission policy: {', '.join(by_policy) or 'none'}"]
    if allowed:
        words.append(f"allowed: {', '.join(allowed)}")
    if set(attempts) - set(by_policy) - set(allowed):
        other = next(answers[w].stderr.strip()[-200:] for w in attempts if w not in by_policy and w not in allowed)
        words.append(f"refused otherwise: {other}")
    words.append("its own taint " + ("added" if own.returncode == 0 else f"refused: {own.stderr.strip()[-200:]}"))
    report.scenario(label, f"{ROW}-least-privilege", len(by_policy) == len(attempts) and own.returncode == 0,
                    "as the fencer's service account: " + "; ".join(words))


def _probe_state(cluster: Cluster, namespace: str) -> str:
    pod = cluster.get("pod", PROBE, namespace)
    if pod is None:
        return "absent"
    condition = scheduled_condition(pod)
    gates = [g["name"] for g in pod["spec"].get("schedulingGates") or []]
    return (f"node {pod['spec'].get('nodeName') or 'none'}, PodScheduled {condition.get('status')} "
            f"{condition.get('reason')}: {str(condition.get('message'))[:200]}" + (f", gates {gates}" if gates else ""))


def tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    return " | ".join(lines[-4:]) or "nothing"
