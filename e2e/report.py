"""e2e/report.json: what the suite ran and what the engines said."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Scenario:
    stack: str
    scenario: str
    ok: bool
    detail: str


@dataclass
class Journey:
    stack: str
    tenant: str
    pool: str
    resource: str
    predicted: str
    actual: str
    reason: str


# Every component of a real platform and what the suite makes of it: run (the real program, built
# from its module), stand-in (what plays its part, and what it fakes) or not run (and why).
COMPONENTS: tuple[tuple[str, str, str], ...] = (
    ("etcd, kube-apiserver, kube-controller-manager, kube-scheduler", "run",
     "built from k8s.io/kubernetes and go.etcd.io/etcd; the controller manager's HPA controller scales the floors"),
    ("kubelet", "stand-in", "kwok's controller keeps nodes and pods running; no container runs"),
    ("Kueue", "run", "the manager and its webhooks, configured from the emitted release"),
    ("Karpenter", "run", "the kwok provider of sigs.k8s.io/karpenter: it creates Nodes instead of EC2 instances"),
    ("GPU Operator, NFD, GPU feature discovery, NVIDIA and HAMi device plugins", "stand-in",
     "the suite's node agents label the GPU nodes and register their resources (e2e/nodes.py)"),
    ("DCGM exporter", "stand-in",
     "one endpoint per exporter pod at the pod's address, serving dcgm-exporter's default counters with "
     "its labels, valued from a Philly trace slice (e2e/exporter.py)"),
    ("prometheus-operator", "run", "at kube-prometheus-stack's version: generates Prometheus' configuration and "
     "rule files from the emitted ServiceMonitor and PrometheusRule"),
    ("Prometheus", "run", "with the operator's configuration and arguments; scrapes the DCGM stand-in through "
     "Kubernetes service discovery and evaluates the emitted rules"),
    ("promtool", "run", "`test rules` on the operator's rule files with cases generated from the spec"),
    ("kube-prometheus-stack chart", "stand-in",
     "the Prometheus object and Service its templates make from the emitted values (e2e/prometheus.py)"),
    ("KEDA operator, KEDA metrics API server", "run", "the ScaledObjects' HPAs, the external metrics API"),
    ("KEDA chart", "stand-in", "KEDA's CRDs, the metrics server's Service and APIService, one certificate"),
    ("KEDA admission webhooks", "not run", "they validate ScaledObjects, which the CRD schema does too"),
    ("Alertmanager, Grafana, node exporter, kube-state-metrics", "not run",
     "nothing the suite checks reads them; the alert rules are checked by promtool"),
    ("CSI drivers (FSx, Mountpoint S3)", "not run", "no module serves them; volumes are not mounted"),
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

    def scenario(self, stack: str, name: str, ok: bool, detail: str) -> None:
        self.scenarios.append(Scenario(stack, name, ok, detail))
        print(f"  {'ok  ' if ok else 'FAIL'} {stack}: {name}: {detail[:400]}", flush=True)

    def timing(self, stack: str, command: str, seconds: float) -> None:
        self.timings.append({"stack": stack, "command": command, "seconds": round(seconds, 1)})

    def journey(self, journey: Journey) -> None:
        self.journeys.append(journey)
        agree = "ok  " if journey.predicted == journey.actual else "FAIL"
        print(f"  {agree} {journey.stack}: {journey.tenant} -> {journey.pool} ({journey.resource}): "
              f"verify {journey.predicted}, real {journey.actual}: {journey.reason[:300]}", flush=True)

    @property
    def failures(self) -> int:
        # A journey fails when verify's prediction is not what the engines did; one both call
        # blocked is reported, with the controller's reason, as their agreement.
        return sum(not s.ok for s in self.scenarios) + sum(j.predicted != j.actual for j in self.journeys)

    def write(self, path: Path) -> None:
        document = {"tools": self.tools, "seconds": round(self.seconds, 1),
                    "components": [{"name": n, "state": st, "detail": d} for n, st, d in COMPONENTS],
                    "scenarios": [asdict(s) for s in self.scenarios],
                    "journeys": [asdict(j) for j in self.journeys], "timings": self.timings}
        path.write_text(json.dumps(document, indent=2) + "\n")
