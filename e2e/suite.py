"""`make e2e`: every target stack on a fresh local control plane, real controllers, one report."""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import shutil
import signal
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e import (
    charts,
    contention,
    deploy,
    devicemutations,
    failures,
    fleet,
    floor,
    gomod,
    hami,
    karpenter,
    kueue,
    mutations,
    netns,
    nodes,
    rails,
    releases,
    scenarios,
    topology,
)
from e2e.cluster import Cluster, E2EError
from e2e.devicecheck import spec_pools
from e2e.devices import COMPONENTS, HARDWARE_ANNOTATION, DeviceModel
from e2e.objects import emitted_objects, upstream_crds
from e2e.parallel import Pool, Stopped, Worker, end_stragglers, stop_on_signals, stragglers, worker_argv
from e2e.report import COMPONENTS as RUN_COMPONENTS
from e2e.report import Report
from e2e.shapes import site_labels
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
# Targets run at once by default: they mostly wait on their engines' timings and use little CPU
# while they do (e2e/apiread.py): on 2 cores seven at once leave no second wave behind the longest
# (bench/results.md).
JOBS = 7
# The longest first (bench/results.md), so the short ones fill the lanes at the end.
LONGEST_FIRST = ("fleet", "coverage", "prod", "staging", "dev", "kubernetes-example", "onprem")


def eks_topology_labels(pool: dict[str, Any]) -> dict[str, str]:
    """What EKS puts on a node of a type EC2's instance topology describes: its network nodes,
    one label per layer (here a pool's nodes share them, as a cluster placement group's would)."""
    from gpuplat.catalog.instances import instance_type

    known = instance_type(pool.get("instanceType") or "")
    layers = known.network_node_layers if known is not None else 0
    return {f"topology.k8s.aws/network-node-layer-{i}": f"nn-{i}-{pool['name']}" for i in range(1, layers + 1)}


def device_model(stack: Stack, tools: Mapping[str, Path], resources: list[dict[str, Any]] | None = None) -> DeviceModel:
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
    topology = tuple(spec.get("network", {}).get("fabric", {}).get("topologyLabels", []))
    made = []
    for pool in pools:
        for i in range(pool.nodes.max):
            # Several blocks and leaves per pool, so a job larger than a leaf has somewhere to go.
            site = site_labels(topology, i, pool.nodes.max) if pool.fabric else {}
            made.append(nodes.node(f"{pool.name}-{i}", {**pool.node_selector, **site},
                                   {"cpu": "96", "memory": "1024Gi", "pods": "250"},
                                   annotations={HARDWARE_ANNOTATION: f"{pool.gpu_model} x{pool.gpus_per_node}"}))
    return made


def bring_up(cluster: Cluster, stack: Stack, report: Report, timeout: float = 120) -> dict[str, list[dict[str, Any]]]:
    """Everything a job's journey needs; returns the objects of the charts installed, per chart."""
    label = stack.target.label
    crds = upstream_crds() + (karpenter.kwok_crds() if stack.provider == "aws" else [])
    refused = cluster.apply(crds)
    cluster.wait_established()
    report.scenario(label, "crds", not refused, refused[0][1] if refused else f"{len(crds)} upstream CRDs established")
    config = kueue.start(cluster, stack)
    # The nodes that serve no GPU exist before the charts: their pods are bound there first.
    nodes.create(cluster, nodes.system_nodes(stack))
    installed = releases.install(cluster, stack, report, {"kueue": kueue.wiring(config)})
    releases.wait_bound(cluster, [o for objects in installed.values() for o in objects], timeout)
    objects = emitted_objects(stack.resources)
    refused = cluster.apply(objects)
    detail = "; ".join(f"{o['kind']} {o['metadata'].get('name')}: {why[-300:]}" for o, why in refused[:5])
    report.scenario(label, "server-side-apply", not refused,
                    detail or f"{len(objects)} emitted objects applied, none refused")
    if stack.provider == "aws":
        env = charts.rendered_env(installed.get("karpenter", []), "Deployment")
        karpenter.start(cluster, stack, env.get("FEATURE_GATES"), env.get("AWS_FEATURE_GATES", ""))
        karpenter.point_at_kwok(cluster, stack)
    else:
        nodes.create(cluster, existing_gpu_nodes(stack))
    return installed


Toolbox = dict[str, dict[str, Path]]  # Kubernetes minor -> binary name -> path


def on_fresh_cluster(target: Target, toolbox: Toolbox, report: Report, workroot: Path,
                     steps: Callable[[Cluster, Stack], None]) -> None:
    """Compile the target, start a control plane of its own at the Kubernetes minor the stack
    targets, run `steps` on it, tear it down. A step the suite cannot carry out is reported as the
    target's `setup` failure."""
    print(f"e2e: {target.label}", flush=True)
    started = time.monotonic()
    try:
        stack = compile_target(target)
    except E2EError as err:
        report.scenario(target.label, "compile", False, str(err))
        return
    report.phase(target.label, "compile", time.monotonic() - started)
    minor = stack.kubernetes_minor
    report.target(target.label, minor=minor)
    if minor not in toolbox:
        report.scenario(target.label, "control-plane", False,
                        f"the stack targets Kubernetes {minor}; the suite builds control planes of "
                        f"{', '.join(sorted(toolbox))} only (e2e/tools/modgen.py adds a minor)")
        return
    cluster = Cluster(f"gpuplat-{target.label}", workroot / target.label, toolbox[minor])
    phase, started = "control-plane", time.monotonic()
    try:
        cluster.create()
        report.target(target.label, kubernetes=cluster.server_version())
        report.phase(target.label, phase, time.monotonic() - started)
        phase, started = "scenarios", time.monotonic()
        report.mark()
        steps(cluster, stack)
        cluster.processes.check()
    except E2EError as err:
        report.scenario(target.label, "setup", False, str(err))
    finally:
        report.phase(target.label, phase, time.monotonic() - started)
        started = time.monotonic()
        cluster.delete()
        report.phase(target.label, "teardown", time.monotonic() - started)


def run_target(target: Target, tools: Toolbox, report: Report, workroot: Path, timeout: float) -> None:
    def steps(cluster: Cluster, stack: Stack) -> None:
        installed = bring_up(cluster, stack, report)
        operator = floor.start_early(cluster, stack)
        prefix = charts.rendered_env(installed.get("sriov-network-operator", []), "Deployment").get("RESOURCE_PREFIX")
        vfs = (lambda labels: rails.vf_resources(stack, labels, prefix)) if prefix else None
        with nodes.NodeAgents(cluster, device_model(stack, cluster.tools), vfs) as agents:
            devicemutations.registrations(cluster, stack, report, device_model(stack, cluster.tools), timeout)
            if stack.provider == "kubernetes":
                pool_labeler(stack, report, agents)
            else:
                report.skip(target.label, "pool-labeler", "provider aws: the NodePools' templates label the nodes "
                            "Karpenter launches; no labeler DaemonSet is emitted")
            # Once the GPU nodes exist (aws: one per NodePool) and carry the labeler's taints.
            releases.operands(cluster, stack, report, installed, timeout)
            scenarios.floor(cluster, stack, report, timeout)
            scenarios.journeys(cluster, stack, report, timeout)
            contention.borrowing(cluster, stack, report, timeout)
            contention.reclaim(cluster, stack, report, timeout)
            contention.priority(cluster, stack, report, timeout)
            topology.without_annotation(cluster, stack, report, timeout)
            if stack.provider == "aws":
                scenarios.nodeclaims_initialized(cluster, stack, report, timeout)
                hami.old_output_never_initializes(cluster, stack, report, timeout)
            else:
                for name in ("nodeclaims-initialized", "hami-old-overlay-never-initializes",
                             "hami-current-overlay-initializes"):
                    report.skip(target.label, name, "provider kubernetes: the nodes exist, Karpenter launches none")
            floor.scaling(cluster, stack, report, timeout, operator)
            mutations.caught(cluster, stack, report, timeout)
            devicemutations.caught(cluster, stack, report, lambda r: device_model(stack, cluster.tools, r), agents,
                                   timeout)
            if prefix:
                rails.vf_scheduling(cluster, stack, report, prefix, timeout)
            else:
                report.skip(target.label, "rail-vf-resources", "no SR-IOV operator release: no VF resources")
            failures.scenarios(cluster, stack, report, timeout)
            report.scenario(target.label, "node-agents", not agents.errors,
                            agents.errors[-1] if agents.errors else f"{len(agents.details)} GPU node(s) registered "
                            f"their devices with no agent error; {len(agents.woken)} pod(s) kwok missed woken")
        scenarios.isolation(cluster, stack, report)
        scenarios.pod_security(cluster, stack, report)
        mutations.admits_fabric_pods(cluster, stack, report)
        rails.fence(cluster, stack, report, prefix)
    on_fresh_cluster(target, tools, report, workroot, steps)


def run_deploy_target(target: Target, tools: Toolbox, report: Report, workroot: Path,
                      timeout: float) -> None:
    def steps(cluster: Cluster, stack: Stack) -> None:
        # The nodes exist before `up`: the provider waits for the stack's Deployments to be ready,
        # and a Deployment that does not tolerate the pools' taints (the GPU fencer) runs on the
        # cluster's own node, as it would on a real cluster.
        nodes.create(cluster, nodes.system_nodes(stack) + existing_gpu_nodes(stack))
        deploy.run_deploy(target, stack, cluster, cluster.tools, report, workroot / target.label, timeout,
                          lambda: nodes.NodeAgents(cluster, device_model(stack, cluster.tools)))
    on_fresh_cluster(target, tools, report, workroot, steps)


Job = Callable[[Report, Path], None]  # one target's work: its part of the report, the run's directory


def jobs(args: argparse.Namespace, toolbox: Toolbox, own: list[Target]) -> dict[str, Job]:
    """Every target the arguments choose, by label, in the order they start (`LONGEST_FIRST`, then
    one's own specs, the Pulumi-deployed targets and the preflight)."""
    def chosen(label: str) -> bool:
        return (not args.only and not args.spec) or label in (args.only or [])

    own_labels = {t.label for t in own}

    def target_job(target: Target) -> Job:
        return lambda report, root: run_target(target, toolbox, report, root, args.timeout)

    def deploy_job(target: Target) -> Job:
        return lambda report, root: run_deploy_target(target, toolbox, report, root, args.timeout)

    def newcomer(report: Report, root: Path) -> None:
        try:
            target = deploy.newcomer_project(root / NEWCOMER, NEWCOMER)
        except E2EError as err:
            report.scenario(NEWCOMER, "gpuplat-init", False, str(err))
        else:
            run_deploy_target(target, toolbox, report, root, args.timeout)

    def preflight(report: Report, root: Path) -> None:
        try:
            deploy.preflight_stops(toolbox[max(toolbox)], report, root / PREFLIGHT)
        except E2EError as err:
            report.scenario(PREFLIGHT, "setup", False, str(err))

    found: dict[str, Job] = {t.label: deploy_job(t) for t in DEPLOY_TARGETS if chosen(t.label)}
    if chosen(fleet.LABEL):  # three control planes: a MultiKueue manager and two workers
        found[fleet.LABEL] = lambda report, root: fleet.run(toolbox, report, root, args.timeout)
    if chosen(NEWCOMER):
        found[NEWCOMER] = newcomer
    found.update({t.label: target_job(t) for t in [*(t for t in TARGETS if chosen(t.label)), *own]})
    if chosen(PREFLIGHT):
        found[PREFLIGHT] = preflight
    rank = {label: i for i, label in enumerate(LONGEST_FIRST)}
    return dict(sorted(found.items(), key=lambda item: rank.get(item[0], len(rank) + (item[0] not in own_labels))))


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


def own_targets(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[Target]:
    """The targets of `--spec` files, or the one `--recording` runs (then the only one chosen)."""
    own = [Target(f"spec-{path.stem}", "dev", path.resolve()) for path in args.spec]
    if args.recording is not None:
        own = recording_targets(parser, args.recording.resolve(), [t for t in TARGETS if t.label in (args.only or [])],
                                own)
        args.only, args.spec = [t.label for t in own], []
    return own


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
    parser.add_argument("--jobs", type=int, default=JOBS, help=f"targets run at once (default {JOBS})")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # run this one target (the suite's own workers)
    parser.add_argument("--part", type=Path, help=argparse.SUPPRESS)  # where a worker writes its report
    args = parser.parse_args(argv)
    own = own_targets(parser, args)
    toolbox = build.binaries()
    if args.worker:
        return worker(args, toolbox, own)
    started = time.monotonic()
    gomod.resolve_before_netns()  # the module proxy is out of reach inside the namespace
    netns.enter(argv)
    report = Report(tools=build.summary(), jobs=args.jobs)
    workroot = Path(tempfile.mkdtemp(prefix="gpuplat-e2e-"))
    for name, status, detail in [*RUN_COMPONENTS, *((n, st, d) for n, (st, d) in COMPONENTS.items())]:
        report.component(name, status, detail)
    chosen = jobs(args, toolbox, own)
    workers = [Worker(label, worker_argv(argv, label, workroot / f"{label}.json"),
                               workroot / f"{label}.json") for label in chosen]
    pool = Pool(workers, max(1, args.jobs))
    pool.run()
    for done in workers:
        if done.part.is_file():
            report.merge(json.loads(done.part.read_text()))
        else:
            code = done.process.returncode if done.process else None
            report.scenario(done.label, "worker", False, f"the target's worker exited {code} with no report")
        report.target(done.label, seconds=round(done.seconds, 1))
    report.mark()
    teardown(report, pool.stopped)
    report.seconds = time.monotonic() - started
    report.write(REPORT)
    if not args.keep:
        shutil.rmtree(workroot, ignore_errors=True)
    else:
        print(f"e2e: work directories kept in {workroot}")
    print(f"e2e: {report.summary()}, {report.seconds:.0f} s; report in {REPORT.relative_to(ROOT)}")
    if pool.stopped:
        return 128 + pool.stopped
    return 1 if report.failures else 0


def teardown(report: Report, stopped: int) -> None:
    """Every target tore down what it started: nothing of the run is left in its namespace."""
    left = stragglers()
    end_stragglers(left)
    names = sorted({Path(command.split()[0]).name for _, command in left})
    detail = (f"{len(left)} process(es) of the run were still running and were ended: {', '.join(names)}"
              if left else "every control plane and controller of the run stopped")
    if stopped:
        detail = f"stopped by {signal.Signals(stopped).name}; {detail}"
    report.scenario("suite", "teardown", not left and not stopped, detail)


def worker(args: argparse.Namespace, toolbox: Toolbox, own: list[Target]) -> int:
    """One target, in the suite's namespace and a mount namespace of its own; its report part is
    written whatever happens, also when the run is stopped."""
    assert args.part is not None
    root = args.part.parent
    netns.private_etc(root / f"{args.worker}-etc")
    report = Report()
    try:
        with stop_on_signals():
            jobs(args, toolbox, own)[args.worker](report, root)
    except Stopped as stop:
        report.scenario(args.worker, "stopped", False, f"{stop}: the target was stopped and its control plane "
                        "torn down")
    except Exception as err:  # a defect of the suite: reported, the other targets go on
        report.scenario(args.worker, "suite-error", False, "".join(traceback.format_exception(err))[-2000:])
    finally:
        # CPU of the worker and what it waited for (kubectl, gpuplat, Kueue, Karpenter, pulumi):
        # not the control plane, which kwokctl starts detached.
        used = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        report.target(args.worker, cpuSeconds=round(sum(u.ru_utime + u.ru_stime for u in used), 1))
        args.part.write_text(json.dumps(report.document()))
    return 0
