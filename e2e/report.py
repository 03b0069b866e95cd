"""e2e/report.json: what the suite ran, what the engines said, and how long each part took."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


def _cpu() -> float:
    """User and system seconds of this process and of the children it has waited for."""
    used = os.times()
    return used.user + used.system + used.children_user + used.children_system


# A scenario row's state: it passed, it failed, or the suite could not run it (the detail says why).
OK, FAILED, SKIPPED = "ok", "failed", "skipped"


@dataclass
class Scenario:
    stack: str
    scenario: str
    ok: bool  # passed; False for a failed and for a skipped row (the status tells them apart)
    detail: str
    seconds: float = 0.0  # since the target's previous row: the time this row's work took
    status: str = ""  # ok | failed | skipped; from `ok` when not given
    # CPU of the worker and the processes it waited for over the same span (the control plane and
    # controllers it starts detached are not in it): what the row costs a machine shared with others.
    cpuSeconds: float = 0.0

    def __post_init__(self) -> None:
        if not self.status:
            self.status = OK if self.ok else FAILED


@dataclass
class Journey:
    stack: str
    tenant: str
    pool: str
    resource: str
    predicted: str
    actual: str
    reason: str
    seconds: float = 0.0  # as for a scenario: journeys are judged together, the first carries the wait
    job: str = "1 pod x 1"  # its shape: pods x units each, and how it is placed (e2e/expect.py)
    cpuSeconds: float = 0.0  # as for a scenario


def agrees(journey: Journey) -> bool:
    """The outcome is the predicted one, or one of "runs or blocked" (a job the spec leaves open)."""
    return journey.actual in journey.predicted.split(" or ")


# Every component of a real platform and what the suite makes of it (the GPU node agents'
# parts are e2e/devices.py's): run (the real program, built
# from its module), stand-in (what plays its part, and what it fakes) or not run (and why).
COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("etcd, kube-apiserver, kube-controller-manager, kube-scheduler", "run",
     "built from k8s.io/kubernetes and go.etcd.io/etcd; the controller manager's HPA controller scales the floors"),
    ("kubelet", "stand-in", "kwok's controller keeps nodes and pods running (a Job's pods succeed as soon as they "
     "run, a gang's run until the round deletes them; a deleted pod ends Failed, exit 143, before it goes: "
     "e2e/kwokstages.py); no container runs"),
    ("Kueue", "run", "the manager and its webhooks, configured from the emitted release"),
    ("Karpenter", "run", "the kwok provider of sigs.k8s.io/karpenter: it creates Nodes instead of EC2 instances"),
    ("Kueue chart, Karpenter chart, karpenter-crd chart, SR-IOV network operator chart", "run",
     "rendered by Helm's own code from their modules (charts/kueue of sigs.k8s.io/kueue, charts/karpenter and "
     "charts/karpenter-crd of github.com/aws/karpenter-provider-aws, deployment/sriov-network-operator-chart of "
     "github.com/k8snetworkplumbingwg/sriov-network-operator) with the emitted values and applied (e2e/releases.py); "
     "their Deployments' pods are bound by the scheduler, no container runs"),
    ("charts no module serves (GPU Operator, HAMi, KEDA, kube-prometheus-stack, dcgm-exporter, network-operator, "
     "EFA device plugin, CSI drivers)", "not run",
     "not rendered: no module serves their source at the pinned version (a skipped chart-<name> row per release "
     "says why); their values keys are checked against the upstream values.yaml; the stand-ins of this list say "
     "what plays their parts"),
    ("DCGM exporter", "stand-in",
     "one endpoint per exporter pod at the pod's address, serving dcgm-exporter's default counters with "
     "its labels, valued from a Philly trace slice (e2e/exporter.py)"),
    ("prometheus-operator", "run", "at kube-prometheus-stack's version: generates Prometheus' configuration and "
     "rule files from the emitted ServiceMonitor and PrometheusRule"),
    ("Prometheus", "run", "with the operator's configuration and arguments; scrapes the DCGM stand-in through "
     "Kubernetes service discovery and evaluates the emitted rules"),
    ("promtool", "run", "`test rules` on the operator's rule files with cases generated from the spec"),
    ("kube-prometheus-stack chart", "stand-in",
     "the Prometheus object and Service its templates make from the emitted values (e2e/prometheus.py), and "
     "the kube-state-metrics subchart's Deployment, Service and ServiceMonitor (e2e/statemetrics.py)"),
    ("KEDA operator, KEDA metrics API server", "run", "the ScaledObjects' HPAs, the external metrics API"),
    ("KEDA chart", "stand-in", "KEDA's CRDs, the metrics server's Service and APIService, one certificate"),
    ("KEDA admission webhooks", "not run", "they validate ScaledObjects, which the CRD schema does too"),
    ("kube-state-metrics", "run", "in the autoscaling loop, scraped through the chart stand-in's ServiceMonitor"),
    ("Alertmanager, Grafana, node exporter", "not run",
     "nothing the suite checks reads them; the alert rules are checked by promtool (and the fatal-XID alert "
     "fires in the suite's Prometheus)"),
    ("CSI drivers (FSx, Mountpoint S3)", "not run", "no module serves them; volumes are not mounted"),
    ("GPU fencer", "run",
     "its program, read from the applied ConfigMap, runs on the host with the Deployment's environment and a "
     "token the TokenRequest API issued to its service account (e2e/fence.py); on the node condition on aws, "
     "on the suite's Prometheus' alerts on provider kubernetes (e2e/fence_alert.py); its pod is only bound"),
    ("Pulumi engine, pulumi-kubernetes provider", "run", "the deploy targets"),
    ("AWS (pulumi-aws, EC2, EKS)", "not run", "pulumi-aws cannot be built from modules; the AWS side stays offline"),
)


@dataclass
class Report:
    tools: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    scenarios: list[Scenario] = field(default_factory=list)
    journeys: list[Journey] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)  # the real engine's commands, in seconds
    # One entry per target: its Kubernetes version, wall seconds and phases (compile, control plane, ...)
    targets: list[dict[str, Any]] = field(default_factory=list)
    jobs: int = 1  # targets run at once
    # Each component the suite plays a part of: {"status": run | stand-in | not run, "detail"}.
    components: dict[str, dict[str, str]] = field(default_factory=dict)
    _mark: float = field(default_factory=time.monotonic, repr=False)
    _cpu_mark: float = field(default_factory=lambda: _cpu(), repr=False)

    def _split(self) -> float:
        now = time.monotonic()
        seconds, self._mark = now - self._mark, now
        return round(seconds, 1)

    def _cpu_split(self) -> float:
        now = _cpu()
        seconds, self._cpu_mark = now - self._cpu_mark, now
        return round(seconds, 1)

    def mark(self) -> None:
        """The next row's seconds count from here."""
        self._mark, self._cpu_mark = time.monotonic(), _cpu()

    def component(self, name: str, status: str, detail: str) -> None:
        self.components[name] = {"status": status, "detail": detail}

    def scenario(self, stack: str, name: str, ok: bool, detail: str) -> None:
        self._row(Scenario(stack, name, ok, detail, self._split(), cpuSeconds=self._cpu_split()))

    def skip(self, stack: str, name: str, reason: str) -> None:
        """A scenario the suite cannot run here, with why: a row, never silence."""
        self._row(Scenario(stack, name, False, reason, self._split(), status=SKIPPED, cpuSeconds=self._cpu_split()))

    def _row(self, row: Scenario) -> None:
        self.scenarios.append(row)
        shown = {OK: "ok  ", FAILED: "FAIL", SKIPPED: "skip"}[row.status]
        print(f"  {shown} {row.stack}: {row.scenario} ({row.seconds:.0f} s): {row.detail[:400]}", flush=True)

    def timing(self, stack: str, command: str, seconds: float) -> None:
        self.timings.append({"stack": stack, "command": command, "seconds": round(seconds, 1)})

    def journey(self, journey: Journey) -> None:
        journey.seconds, journey.cpuSeconds = self._split(), self._cpu_split()
        self.journeys.append(journey)
        agree = "ok  " if agrees(journey) else "FAIL"
        print(f"  {agree} {journey.stack}: {journey.tenant} -> {journey.pool} ({journey.resource}, {journey.job}): "
              f"verify {journey.predicted}, real {journey.actual}: {journey.reason[:300]}", flush=True)

    def target(self, stack: str, **facts: Any) -> dict[str, Any]:
        """The target's entry (made on first use): its version, seconds and phases."""
        for entry in self.targets:
            if entry["stack"] == stack:
                entry.update(facts)
                return entry
        entry = {"stack": stack, **facts}
        self.targets.append(entry)
        return entry

    def phase(self, stack: str, name: str, seconds: float) -> None:
        self.target(stack).setdefault("phases", {})[name] = round(seconds, 1)

    @property
    def failures(self) -> int:
        # A journey fails when verify's prediction is not what the engines did; one both call
        # blocked is reported, with the controller's reason, as their agreement.
        return self.count(FAILED) + sum(not agrees(j) for j in self.journeys)

    def count(self, status: str) -> int:
        """Scenario rows in this state (ok, failed, skipped)."""
        return sum(s.status == status for s in self.scenarios)

    def summary(self) -> str:
        """The run's one line: every row counted by its state, journeys by agreement."""
        agreed = sum(agrees(j) for j in self.journeys)
        return (f"{len(self.scenarios)} scenarios ({self.count(OK)} ok, {self.count(FAILED)} failed, "
                f"{self.count(SKIPPED)} skipped), {len(self.journeys)} journeys ({agreed} as expected, "
                f"{len(self.journeys) - agreed} not), {self.failures} failed")

    def document(self) -> dict[str, Any]:
        return {"tools": self.tools, "seconds": round(self.seconds, 1), "jobs": self.jobs,
                "targets": self.targets,
                "counts": {state: self.count(state) for state in (OK, FAILED, SKIPPED)},
                "scenarios": [asdict(s) for s in self.scenarios],
                "journeys": [asdict(j) for j in self.journeys], "timings": self.timings,
                "components": self.components}

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.document(), indent=2) + "\n")

    def merge(self, part: dict[str, Any]) -> None:
        """Add a worker's part (its `document()`) to this report."""
        self.scenarios += [Scenario(**s) for s in part.get("scenarios", [])]
        self.journeys += [Journey(**j) for j in part.get("journeys", [])]
        self.timings += part.get("timings", [])
        for entry in part.get("targets", []):
            self.target(entry["stack"], **{k: v for k, v in entry.items() if k != "stack"})
        self.components.update(part.get("components", {}))
