"""`make e2e`: every target stack on a fresh local control plane, real controllers, one report."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e import (
    contention,
    deploy,
    devicemutations,
    floor,
    gomod,
    hami,
    karpenter,
    kueue,
    mutations,
    netns,
    nodes,
    scenarios,
    topology,
)
from e2e.cluster import Cluster, E2EError
from e2e.devicecheck import spec_pools
from e2e.devices import COMPONENTS, HARDWARE_ANNOTATION, DeviceModel
from e2e.objects import emitted_objects, upstream_crds
from e2e.report import Report
from e2e.stack import ROOT, Stack, Target, compile_target, load_recording
from e2e.tools import build

TARGETS = (
    Target("dev", "dev"),
    Target("staging", "staging"),
    Target("prod", "prod"),
    Target("kubernetes-example", "dev", ROOT / "tests" / "fixtures" / "kubernetes_example.yaml"),
    # Every sharing mode on aws, spot-only, a custom MIG layout, a reserved floor.
    Target("coverage", "dev", ROOT / "e2e" / "specs" / "coverage.yaml"),
    # An existing cluster whose pools select nodes by the labels it has, not gpuplat.dev/pool.
    Target("onprem", "dev", ROOT / "e2e" / "specs" / "onprem.yaml"),
)
# Deployed by the real Pulumi engine (e2e/deploy.py) rather than applied from a recording.
DEPLOY_TARGETS = (Target("kubernetes-example-pulumi", "dev", ROOT / "tests" / "fixtures" / "kubernetes_example.yaml"),)
# A project `gpuplat init --provider kubernetes` writes, deployed as its README says.
NEWCOMER = "init-kubernetes-pulumi"
PREFLIGHT = "preflight-pulumi"
REPORT = Path(__file__).resolve().parent / "report.json"


def eks_topology_labels(pool: dict[str, Any]) -> dict[str, str]:
    """What EKS puts on a node of a type EC2's instance topology describes: its network nodes,
    one label per layer (here a pool's nodes share them, as a cluster placement group's would)."""
    from gpuplat.catalog.instances import instance_type

    known = instance_type(pool.get("instanceType") or "")
    layers = known.network_node_layers if known is not None else 0
    return {f"topology.k8s.aws/network-node-layer-{i}": f"nn-{i}-{pool['name']}" for i in range(1, layers + 1)}


def device_model(stack: Stack, tools: dict[str, Path], resources: list[dict[str, Any]] | None = None) -> DeviceModel:
    """The node agents of the stack's output (or of `resources`, an edited copy of it)."""
    def eks_labels(labels: Mapping[str, str]) -> dict[str, str]:
        return eks_topology_labels({"name": labels.get("gpuplat.dev/pool", ""),
                                    "instanceType": labels.get("node.kubernetes.io/instance-type")})
    return DeviceModel(stack.resources if resources is None else resources, tools["devices"], eks_labels)


def pool_labeler(stack: Stack, report: Report, agents: nodes.NodeAgents) -> None:
    """`pool-labeler`: the pods of the emitted labeler DaemonSets ran their kubectl commands."""
    errors = agents.commands.errors
    report.scenario(stack.target.label, "pool-labeler", not errors and bool(agents.commands.done),
                    "; ".join(f"{pod}: {why}" for pod, why in errors.items()) or
                    f"{len(agents.commands.done)} labeler pod(s) labelled and tainted their nodes")


def existing_gpu_nodes(stack: Stack) -> list[dict[str, Any]]:
    """provider kubernetes: the pools' nodes exist already, as the spec's selectors find them:
    those labels, the site's topology labels and the GPUs they have, nothing of the platform's
    own (the pool labeler's pods write it, e2e/podcommands.py)."""
    pools = spec_pools(stack.target)
    assert stack.target.spec is not None
    spec = YAML(typ="safe").load(stack.target.spec.read_text())
    topology = spec.get("network", {}).get("fabric", {}).get("topologyLabels", [])
    made = []
    for pool in pools:
        for i in range(pool.nodes.max):
            site = {label: f"{label.rsplit('/', 1)[-1]}-{i // 4}" for label in topology} if pool.fabric else {}
            made.append(nodes.node(f"{pool.name}-{i}", {**pool.node_selector, **site},
                                   {"cpu": "96", "memory": "1024Gi", "pods": "250"},
                                   annotations={HARDWARE_ANNOTATION: f"{pool.gpu_model} x{pool.gpus_per_node}"}))
    return made


def bring_up(cluster: Cluster, stack: Stack, report: Report) -> None:
    label = stack.target.label
    crds = upstream_crds() + (karpenter.kwok_crds() if stack.provider == "aws" else [])
    refused = cluster.apply(crds)
    cluster.kubectl("wait", "--for=condition=established", "crd", "--all", "--timeout=120s")
    report.scenario(label, "crds", not refused, refused[0][1] if refused else f"{len(crds)} upstream CRDs established")
    kueue.start(cluster, stack)
    objects = emitted_objects(stack.resources)
    refused = cluster.apply(objects)
    detail = "; ".join(f"{o['kind']} {o['metadata'].get('name')}: {why[-300:]}" for o, why in refused[:5])
    report.scenario(label, "server-side-apply", not refused,
                    detail or f"{len(objects)} emitted objects applied, none refused")
    if stack.provider == "aws":
        nodes.create(cluster, nodes.system_nodes(stack))
        karpenter.start(cluster, stack)
        karpenter.point_at_kwok(cluster, stack)
    else:
        nodes.create(cluster, existing_gpu_nodes(stack))


def on_fresh_cluster(target: Target, tools: dict[str, Path], report: Report, workroot: Path,
                     steps: Callable[[Cluster, Stack], None]) -> None:
    """Compile the target, start a control plane of its own, run `steps` on it, tear it down. A
    step the suite cannot carry out is reported as the target's `setup` failure."""
    print(f"e2e: {target.label}", flush=True)
    try:
        stack = compile_target(target)
    except E2EError as err:
        report.scenario(target.label, "compile", False, str(err))
        return
    cluster = Cluster(f"gpuplat-{target.label}", workroot / target.label, tools)
    try:
        cluster.create()
        steps(cluster, stack)
        cluster.processes.check()
    except E2EError as err:
        report.scenario(target.label, "setup", False, str(err))
    finally:
        cluster.delete()


def run_target(target: Target, tools: dict[str, Path], report: Report, workroot: Path, timeout: float) -> None:
    def steps(cluster: Cluster, stack: Stack) -> None:
        bring_up(cluster, stack, report)
        with nodes.NodeAgents(cluster, device_model(stack, tools)) as agents:
            devicemutations.registrations(cluster, stack, report, device_model(stack, tools), timeout)
            if stack.provider == "kubernetes":
                pool_labeler(stack, report, agents)
            scenarios.floor(cluster, stack, report, timeout)
            scenarios.journeys(cluster, stack, report, timeout)
            scenarios.quota_waits(cluster, stack, report, timeout)
            contention.borrowing(cluster, stack, report, timeout)
            contention.reclaim(cluster, stack, report, timeout)
            contention.priority(cluster, stack, report, timeout)
            topology.without_annotation(cluster, stack, report, timeout)
            if stack.provider == "aws":
                scenarios.nodeclaims_initialized(cluster, stack, report, timeout)
                hami.old_output_never_initializes(cluster, stack, report, timeout)
            floor.scaling(cluster, stack, report, timeout)
            mutations.caught(cluster, stack, report, timeout)
            devicemutations.caught(cluster, stack, report, lambda r: device_model(stack, tools, r), agents, timeout)
            if agents.errors:
                report.scenario(target.label, "node-agents", False, agents.errors[-1])
        scenarios.isolation(cluster, stack, report)
        scenarios.pod_security(cluster, stack, report)
        mutations.admits_fabric_pods(cluster, stack, report)
    on_fresh_cluster(target, tools, report, workroot, steps)


def run_deploy_target(target: Target, tools: dict[str, Path], report: Report, workroot: Path,
                      timeout: float) -> None:
    def steps(cluster: Cluster, stack: Stack) -> None:
        # The nodes exist before `up`: the provider waits for the stack's Deployments to be ready.
        nodes.create(cluster, existing_gpu_nodes(stack))
        deploy.run_deploy(target, stack, cluster, tools, report, workroot / target.label, timeout,
                          lambda: nodes.NodeAgents(cluster, device_model(stack, tools)))
    on_fresh_cluster(target, tools, report, workroot, steps)


def recording_targets(parser: argparse.ArgumentParser, recording: Path, targets: list[Target],
                      own: list[Target]) -> list[Target]:
    """The one target `--recording` runs on, labelled after the file; a usage error otherwise."""
    if len(targets) + len(own) != 1:
        parser.error("--recording runs one target: give the one it was compiled from, --only TARGET "
                     f"({', '.join(t.label for t in TARGETS)}) or --spec FILE")
    try:
        load_recording(recording)
    except E2EError as err:
        parser.error(f"--recording {err}")
    target = (targets or own)[0]
    return [dataclasses.replace(target, label=f"{target.label}-{recording.stem}", recording=recording)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m e2e", description=__doc__)
    parser.add_argument("--only", action="append", help="run only these target labels")
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for each journey")
    parser.add_argument("--keep", action="store_true", help="keep the clusters' work directories")
    parser.add_argument("--spec", action="append", type=Path, default=[],
                        help="a spec of one's own, run as stack dev with no overlay (repeatable); with --spec, "
                             "only the given specs and the --only targets run")
    parser.add_argument("--recording", type=Path,
                        help="run one target (--only TARGET or --spec FILE) on this recording, the JSON `gpuplat "
                             "preview --format json` writes (edited, perhaps), instead of compiling it; its plan and "
                             "verify's journeys still come from the target's spec")
    args = parser.parse_args(argv)
    own = [Target(f"spec-{path.stem}", "dev", path.resolve()) for path in args.spec]
    if args.recording is not None:
        own = recording_targets(parser, args.recording.resolve(), [t for t in TARGETS if t.label in (args.only or [])],
                                own)
        args.only, args.spec = [t.label for t in own], []

    def chosen(label: str) -> bool:
        return (not args.only and not args.spec) or label in (args.only or [])
    started = time.monotonic()
    tools = build.binaries()
    gomod.resolve_before_netns()  # the module proxy is out of reach inside the namespace
    netns.enter(argv)
    report = Report(tools=build.summary())
    for name, (status, detail) in COMPONENTS.items():
        report.component(name, status, detail)
    workroot = Path(tempfile.mkdtemp(prefix="gpuplat-e2e-"))
    netns.private_etc(workroot)
    for target in [*(t for t in TARGETS if chosen(t.label) and args.recording is None), *own]:
        run_target(target, tools, report, workroot, args.timeout)
    for target in DEPLOY_TARGETS:
        if chosen(target.label):
            run_deploy_target(target, tools, report, workroot, args.timeout)
    if chosen(NEWCOMER):
        try:
            newcomer = deploy.newcomer_project(workroot / NEWCOMER, NEWCOMER)
        except E2EError as err:
            report.scenario(NEWCOMER, "gpuplat-init", False, str(err))
        else:
            run_deploy_target(newcomer, tools, report, workroot, args.timeout)
    if chosen(PREFLIGHT):
        try:
            deploy.preflight_stops(tools, report, workroot / PREFLIGHT)
        except E2EError as err:
            report.scenario(PREFLIGHT, "setup", False, str(err))
    report.seconds = time.monotonic() - started
    report.write(REPORT)
    if not args.keep:
        shutil.rmtree(workroot, ignore_errors=True)
    else:
        print(f"e2e: work directories kept in {workroot}")
    print(f"e2e: {len(report.scenarios)} scenarios, {len(report.journeys)} journeys, "
          f"{report.failures} failed; report in {REPORT.relative_to(ROOT)}")
    return 1 if report.failures else 0
