"""The fleet target: a MultiKueue manager and two workers, each its own control plane running the
real Kueue with the configuration its stack emits (docs/fleet.md, docs/e2e.md).

The members are e2e/specs/fleet/ (examples/fleet/ at a Kubernetes minor the suite builds, with
fewer nodes). Each is compiled as its stack (`--stack hub|onprem|cloud`), so each finds its own
role. The manager's kubeconfig Secrets, which the StackReference fills on a real deploy (the
offline recording has them unknown), hold real kubeconfigs of the workers: the server and CA of
the worker's control plane and a token of the ServiceAccount the worker's FleetWorker emits,
bound to the ClusterRole it emits; built by the function FleetWorker builds its output with.

Not played: the workers' GPU nodes are pre-registered kwok nodes carrying their pool's flavor
labels and GPUs (no Karpenter on the cloud worker, no node agents); no chart is installed but
Kueue's own webhooks. kwok completes a Job's pods as soon as they run, so work that must hold a
worker's quota is a Job whose pod waits for a node nothing offers (Kueue admits on quota, not on
nodes, as e2e/contention.py does): it stays admitted where it was dispatched.

Shortened for the suite, and said so in its row: MultiKueue's `workerLostTimeout` (15 minutes by
default) is WORKER_LOST on the manager, its emitted configuration changed in that one field.
Kueue 0.19's incremental dispatcher moves on to the next worker after a fixed 5-minute round
(incrementalDispatcherRoundTimeout, no setting), so a spill-over takes up to ROUND.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from components.kubernetes.fleet_worker import worker_kubeconfig
from e2e import karpenter, kueue, nodes
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.contention import condition, workload
from e2e.devicecheck import spec_pools
from e2e.objects import emitted_objects, upstream_crds
from e2e.report import Report
from e2e.stack import ROOT, Stack, Target, compile_target

LABEL = "fleet"
SPECS = ROOT / "e2e" / "specs" / "fleet"
MANAGER, ONPREM, CLOUD = "hub", "onprem", "cloud"
MEMBERS = (ONPREM, CLOUD, MANAGER)  # workers first: the manager's Secrets need their credentials
FLEET, QUEUE, TENANT = "atlas", "fleet", "research"
GPU = "nvidia.com/gpu"
FLAVOR = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"
WORKER_LOST = "30s"  # MultiKueue's workerLostTimeout for the suite (15m as emitted)
ROUND = 300.0  # Kueue 0.19's incrementalDispatcherRoundTimeout
UNOFFERED = {"gpuplat.dev/e2e-unoffered": "true"}  # a node label no node has


def cluster_name(member: str) -> str:
    return f"{FLEET}-{member}"  # fleet_manager.cluster_name


def member_targets() -> dict[str, Target]:
    return {m: Target(f"{LABEL}-{m}", m, SPECS / f"{m}.yaml") for m in MEMBERS}


def gpu_nodes(stack: Stack) -> list[dict[str, Any]]:
    """Per pool, its maximum of nodes as they look once booted: the labels of the pool's
    ResourceFlavors (what a worker's Kueue pins a dispatched pod to) and the pool's GPUs."""
    made = []
    for pool in spec_pools(stack.target):
        flavors = [(f.get("spec") or {}).get("nodeLabels", {}) for f in stack.of_type(FLAVOR)]
        labels = {k: v for flavor in flavors if flavor.get("gpuplat.dev/pool") == pool.name for k, v in flavor.items()}
        for i in range(pool.nodes.max):
            made.append(nodes.node(f"{pool.name}-{i}", labels,
                                   {"cpu": "96", "memory": "1024Gi", "pods": "250", GPU: str(pool.gpus_per_node)},
                                   taints=[{"key": GPU, "value": "true", "effect": "NoSchedule"}]))
    return made


def manager_configuration(stack: Stack) -> dict[str, Any]:
    emitted = kueue.emitted_configuration(stack)
    return {**emitted, "multiKueue": {**emitted.get("multiKueue", {}), "workerLostTimeout": WORKER_LOST}}


def credentials(cluster: Cluster, stack: Stack, member: str) -> tuple[str, str]:
    """A kubeconfig of the worker with the emitted ServiceAccount's token, and where the token
    came from: the emitted token Secret once the token controller filled it, else TokenRequest."""
    secret = next(s["metadata"]["name"] for s in stack.of_type("kubernetes:core/v1:Secret")
                  if s.get("type") == "kubernetes.io/service-account-token")
    account = next(a["metadata"]["name"] for a in stack.of_type("kubernetes:core/v1:ServiceAccount")
                   if a["metadata"].get("namespace") == kueue.NAMESPACE)

    def filled() -> str | None:
        found = cluster.get("secret", secret, kueue.NAMESPACE) or {}
        token = (found.get("data") or {}).get("token")
        return base64.b64decode(token).decode() if token else None
    try:
        token, source = wait_for(filled, 20, f"the token controller to fill {secret}"), f"Secret {secret}"
    except E2EError:
        token = cluster.kubectl("create", "token", account, "-n", kueue.NAMESPACE, "--duration=2h").stdout.strip()
        source = f"TokenRequest for {account} (the token controller left {secret} empty)"
    view = json.loads(cluster.kubectl("config", "view", "--raw", "--minify", "--flatten", "-o", "json").stdout)
    server = view["clusters"][0]["cluster"]
    return worker_kubeconfig(FLEET, member, server["server"], server["certificate-authority-data"], token), source


def bring_up(cluster: Cluster, stack: Stack, config: dict[str, Any] | None,
             kubeconfigs: dict[str, str]) -> tuple[int, list[str]]:
    """The member's CRDs, its Kueue, nodes and emitted objects (the manager's kubeconfig Secrets
    filled); returns how many objects were applied and the refusals."""
    crds = upstream_crds() + (karpenter.kwok_crds() if stack.provider == "aws" else [])
    refused = cluster.apply(crds)
    if refused:
        raise E2EError(f"{stack.target.stack}: CRD refused: {refused[0][1]}")
    cluster.wait_established()
    kueue.start(cluster, stack, config)
    nodes.create(cluster, nodes.system_nodes(stack) + gpu_nodes(stack))
    objects = emitted_objects(stack.resources)
    for obj in objects:
        for member, kubeconfig in kubeconfigs.items():
            if obj["kind"] == "Secret" and obj["metadata"]["name"] == f"{FLEET}-{member}-kubeconfig":
                obj["stringData"] = {"kubeconfig": kubeconfig}
    return len(objects), [f"{o['kind']} {o['metadata'].get('name')}: {why[-200:]}" for o, why in cluster.apply(objects)]


def fleet_job(name: str, gpus: int, hold: bool = False) -> dict[str, Any]:
    """A tenant's job for the fleet queue: no pool named (each worker's flavor pins it); `hold`:
    its pod waits for a node nothing offers, so it keeps the quota it was admitted with."""
    spec: dict[str, Any] = {"restartPolicy": "Never", "containers": [{
        "name": "main", "image": "registry.k8s.io/pause:3.10.2",
        "resources": {"requests": {"cpu": "1", "memory": "1Gi", GPU: str(gpus)}, "limits": {GPU: str(gpus)}},
        "securityContext": {"allowPrivilegeEscalation": False}}]}
    if hold:
        spec["nodeSelector"] = dict(UNOFFERED)
    labels = {"kueue.x-k8s.io/queue-name": QUEUE}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": TENANT, "labels": labels},
            "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": labels}, "spec": spec}}}


class Fleet:
    def __init__(self, clusters: dict[str, Cluster], report: Report, timeout: float) -> None:
        self.clusters, self.report, self.timeout = clusters, report, timeout
        self.manager = clusters[MANAGER]
        self.nodes: dict[str, set[str]] = {}  # job -> the worker nodes its pods were scheduled to
        self.offered: dict[str, str] = {}  # job -> the worker the dispatcher nominated first

    def submit(self, manifest: dict[str, Any]) -> None:
        self.manager.kubectl("create", "-f", "-", stdin=json.dumps(manifest))

    def placed(self, job: str) -> str | None:
        """The worker MultiKueue runs the job on, once its remote copy is admitted there."""
        found = workload(self.manager, TENANT, "Job", job) or {}
        nominated = found.get("status", {}).get("nominatedClusterNames") or []
        if nominated:
            self.offered.setdefault(job, nominated[0])
        checks = found.get("status", {}).get("admissionChecks", [])
        ready = any(c.get("name") == FLEET and c.get("state") == "Ready" for c in checks)
        done = condition(found, "Finished").get("status") == "True"
        return found.get("status", {}).get("clusterName") if ready or done else None

    def finished_on(self, member: str, job: str) -> str | None:
        """`completed on <node>` once the manager's job completed, its status copied from the
        worker's copy (MultiKueue deletes that copy soon after; the scheduler's events stay)."""
        # The scheduler's Scheduled events outlive the pods: "Successfully assigned ns/pod to node".
        said = [e.get("message", "") for e in self.clusters[member].items("events", TENANT)
                if e.get("reason") == "Scheduled" and e["involvedObject"].get("name", "").startswith(f"{job}-")]
        self.nodes.setdefault(job, set()).update(m.rsplit(" to ", 1)[-1] for m in said if " to " in m)
        if condition(self.manager.get("job", job, TENANT), "Complete").get("status") != "True":
            return None
        return f"completed (pods on {member}'s node(s) {', '.join(sorted(self.nodes[job])) or 'not seen'})"

    def active(self, member: str) -> bool:
        found = self.manager.get("multikueueclusters.kueue.x-k8s.io", cluster_name(member))
        return condition(found, "Active").get("status") == "True"

    def watch(self, job: str, until: Callable[[str | None], str | None], budget: float) -> tuple[str, float]:
        started = time.monotonic()
        found = wait_for(lambda: until(self.placed(job)), budget, f"job {job} to be placed as expected", interval=2)
        return found, time.monotonic() - started

    def dispatch_order(self) -> None:
        name = "fleet-first"
        self.submit(fleet_job(name, 8))
        try:
            said, took = self.watch(name, lambda at: self.finished_on(ONPREM, name) if at == cluster_name(ONPREM)
                                    else None, self.timeout)
            self.report.scenario(LABEL, "fleet-dispatch-order", True,
                                 f"job {name} (8 GPUs) submitted to the manager's {QUEUE} queue: workload dispatched "
                                 f"to {cluster_name(ONPREM)}, the first worker of the MultiKueueConfig, {said} "
                                 f"after {took:.0f} s")
        except E2EError as err:
            self.report.scenario(LABEL, "fleet-dispatch-order", False, f"{err}; {self.where(name)}")

    def spill_over(self) -> bool:
        holder, burst = "fleet-holder", "fleet-burst"
        self.submit(fleet_job(holder, 8, hold=True))
        try:
            self.watch(holder, lambda at: at if at == cluster_name(ONPREM) else None, self.timeout)
            self.submit(fleet_job(burst, 8))
            said, took = self.watch(burst, lambda at: self.finished_on(CLOUD, burst) if at == cluster_name(CLOUD)
                                    else None, ROUND + self.timeout)
            first = self.offered.get(burst)
            self.report.scenario(LABEL, "fleet-spill-over", first == cluster_name(ONPREM),
                                 f"{holder} (8 GPUs, its pod waiting for a node) holds on-prem's whole quota of the "
                                 f"tenant (8 GPUs); {burst} (8 GPUs) was offered to "
                                 f"{first or 'no worker seen'} first, not admitted there, "
                                 f"then dispatched to {cluster_name(CLOUD)} and {said}, {took:.0f} s after submission "
                                 f"(Kueue's incremental dispatcher waits {ROUND:.0f} s before trying the next worker); "
                                 "the cloud's GPU nodes are pre-registered kwok nodes, not Karpenter's")
            return True
        except E2EError as err:
            self.report.scenario(LABEL, "fleet-spill-over", False, f"{err}; {self.where(holder)}; {self.where(burst)}")
            return False

    def lost_worker(self) -> None:
        holder, after = "fleet-holder", "fleet-after-loss"
        onprem = self.clusters[ONPREM]
        onprem.processes.stop("kueue")
        stopped = subprocess.run([str(onprem.tools["kwokctl"]), "stop", "cluster", "--name", onprem.name],
                                 env={**os.environ, **onprem.env}, capture_output=True, text=True)
        if stopped.returncode != 0:
            self.report.scenario(LABEL, "fleet-lost-worker", False, f"kwokctl stop cluster: {stopped.stderr[-500:]}")
            return
        lost_at = time.monotonic()
        try:
            def inactive() -> str | None:
                found = self.manager.get("multikueueclusters.kueue.x-k8s.io", cluster_name(ONPREM)) or {}
                active = condition(found, "Active")
                return active.get("message") or active.get("reason") if active.get("status") == "False" else None
            why = wait_for(inactive, self.timeout, f"MultiKueueCluster {cluster_name(ONPREM)} to turn inactive", 2)
            noticed = time.monotonic() - lost_at
            self.submit(fleet_job(after, 8))
            said, took = self.watch(after, lambda at: self.finished_on(CLOUD, after) if at == cluster_name(CLOUD)
                                    else None, ROUND + self.timeout)
            self.watch(holder, lambda at: at if at == cluster_name(CLOUD) else None, ROUND + self.timeout)
            self.report.scenario(LABEL, "fleet-lost-worker", True,
                                 f"the on-prem worker's control plane and Kueue stopped: the manager marked "
                                 f"{cluster_name(ONPREM)} inactive after {noticed:.0f} s ({why[:160]}); "
                                 f"new job {after} (offered first to {self.offered.get(after, 'no worker seen')}) "
                                 f"went to {cluster_name(CLOUD)} and {said} "
                                 f"{took:.0f} s after submission; {holder}, admitted "
                                 f"on-prem when it went away, was redispatched and admitted on {cluster_name(CLOUD)} "
                                 f"{time.monotonic() - lost_at:.0f} s after the loss. Shortened for the suite: Kueue's "
                                 f"multiKueue.workerLostTimeout {WORKER_LOST} (15m by default), the manager's emitted "
                                 "configuration changed in that one field")
        except E2EError as err:
            self.report.scenario(LABEL, "fleet-lost-worker", False, f"{err}; {self.where(holder)}; {self.where(after)}")

    def where(self, job: str) -> str:
        """The manager's workload of the job as Kueue left it, for a failed row."""
        found = workload(self.manager, TENANT, "Job", job)
        if found is None:
            return f"{job}: no workload on the manager"
        status = found.get("status", {})
        checks = [f"{c.get('name')}={c.get('state')} ({c.get('message', '')[:120]})"
                  for c in status.get("admissionChecks", [])]
        return (f"{job}: clusterName {status.get('clusterName')}, nominated {status.get('nominatedClusterNames')}, "
                f"checks {checks}, quota {condition(found, 'QuotaReserved').get('message', '')[:120]}")


def run(toolbox: Mapping[str, Mapping[str, Path]], report: Report, workroot: Path, timeout: float) -> None:
    """Compile the three members, start their control planes and Kueues, run the scenarios."""
    print(f"e2e: {LABEL}", flush=True)
    started = time.monotonic()
    stacks: dict[str, Stack] = {}
    for member, target in member_targets().items():
        try:
            stacks[member] = compile_target(target)
        except E2EError as err:
            report.scenario(LABEL, "compile", False, f"{member}: {err}")
            return
    report.phase(LABEL, "compile", time.monotonic() - started)
    minors = {m: s.kubernetes_minor for m, s in stacks.items()}
    report.target(LABEL, minor=",".join(sorted(set(minors.values()))))
    missing = sorted(f"{m} ({minor})" for m, minor in minors.items() if minor not in toolbox)
    if missing:
        report.scenario(LABEL, "control-plane", False, f"the suite builds no control plane for {', '.join(missing)}")
        return
    clusters = {m: Cluster(f"gpuplat-{LABEL}-{m}", workroot / LABEL / m, toolbox[minors[m]]) for m in MEMBERS}
    started = time.monotonic()
    try:
        for cluster in clusters.values():
            cluster.create()
        report.phase(LABEL, "control-plane", time.monotonic() - started)
        started = time.monotonic()
        kubeconfigs, sources, applied, refused = {}, [], 0, []
        for member in MEMBERS:
            config = manager_configuration(stacks[member]) if member == MANAGER else None
            count, refusals = bring_up(clusters[member], stacks[member], config, kubeconfigs)
            applied, refused = applied + count, refused + [f"{member}: {r}" for r in refusals]
            if member != MANAGER:
                kubeconfigs[member], source = credentials(clusters[member], stacks[member], member)
                sources.append(f"{member}: {source}")
        report.scenario(LABEL, "fleet-members-up", not refused, "; ".join(refused[:4]) or
                        f"3 control planes, each with its real Kueue; {applied} emitted objects applied, none "
                        f"refused; the manager's MultiKueueCluster Secrets hold kubeconfigs with the token of the "
                        f"emitted ServiceAccount ({'; '.join(sources)})")
        fleet = Fleet(clusters, report, timeout)
        wait_for(lambda: all(fleet.active(m) for m in (ONPREM, CLOUD)) or None, timeout,
                 "the manager's MultiKueueClusters to be active", 2)
        fleet.dispatch_order()
        if fleet.spill_over():
            fleet.lost_worker()
        else:
            report.skip(LABEL, "fleet-lost-worker", "fleet-spill-over failed: no work is held on-prem to redispatch")
        for member in (MANAGER, CLOUD):
            clusters[member].processes.check()
    except E2EError as err:
        report.scenario(LABEL, "setup", False, str(err))
    finally:
        report.phase(LABEL, "scenarios", time.monotonic() - started)
        started = time.monotonic()
        for cluster in clusters.values():
            cluster.delete()
        report.phase(LABEL, "teardown", time.monotonic() - started)
