"""The capacity floor moved by the real autoscaling loop: DCGM-shaped series from a load curve,
scraped by the real Prometheus the real prometheus-operator configured from the emitted
ServiceMonitor, the emitted recording rules evaluated there, the real KEDA serving the pool's
signal to the HPA it makes from the emitted ScaledObject, and the real scheduler and Karpenter
placing the placeholders (e2e/autoscale.py starts them; docs/e2e.md has the whole picture).

Per floor the KEDA may move (maxReplicaCount > minReplicaCount), all at once, on the short
timings (autoscale.SHORT):
- a pool with no GPU node (aws, nodes.min 0) has no series, and no data means no change: one
  tenant's reference pod is run there first (Kueue admits it, Karpenter launches its node; e2e/floor_work.py);
- the replay (e2e/loadcurve.py) serves 2 samples at half load (between the thresholds: the
  floor holds; a pool at zero is activated by KEDA, any load is activity), then the busy
  stretch: the floor must grow, each placeholder on a node of its own and none on spot (on aws
  Karpenter launches the nodes);
- then the idle stretch (the work pods end): the floor must return to minReplicaCount, and on
  aws Karpenter must remove the nodes left empty after the NodePools' consolidateAfter.
Every change of the floor, seen at each observation, is judged against what KEDA and the HPA do
with the emitted ScaledObject (e2e/hpamodel.py: activation, the stabilisation windows, the
policies, cooldownPeriod, each bound widened by the observation gaps), and the HPA KEDA made
must be what the ScaledObject implies.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

from e2e import autoscale, dashboards, fence_alert, floor_work, hpamodel, keda, prometheus
from e2e.cluster import Cluster, E2EError
from e2e.report import Report
from e2e.stack import Stack
from gpuplat.scaling import DCGM_METRICS

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
POOL_LABEL = "gpuplat.dev/pool"
SERIES_GRACE = 90.0
POLL = 2.0
PER_REMOVAL = 30.0  # seconds allowed per node to remove (fabric budgets remove one at a time)


def floors(stack: Stack) -> list[tuple[dict[str, Any], int, int]]:
    """(floor Deployment, KEDA's min, KEDA's max) for every floor KEDA may move."""
    scaled = {o["spec"]["scaleTargetRef"]["name"]: o for o in stack.of_type(SCALED_OBJECT)}
    found = []
    for deployment in stack.of_type("kubernetes:apps/v1:Deployment"):
        name = deployment["metadata"]["name"]
        target = scaled.get(name)
        if not name.startswith("capacity-floor-") or target is None:
            continue
        low, high = int(target["spec"].get("minReplicaCount", 0)), int(target["spec"]["maxReplicaCount"])
        if high > low:
            found.append((deployment, low, high))
    return found


@dataclass
class Watch:
    """One floor through the loop; times in seconds from the start of the replay."""

    pool: str
    deployment: dict[str, Any]
    low: int
    high: int
    nodes_before: set[str] = field(default_factory=lambda: set())
    work: tuple[str, str] | None = None  # (namespace, pod) run to give a pool at zero its first node
    work_pod: dict[str, Any] = field(default_factory=lambda: {})
    work_recreated: int = 0  # times the work pod was evicted and created again
    work_running: bool = False  # the work pod ran at the last look
    work_resource: str = ""
    start: int = 0  # replicas when the busy stretch began
    replicas: list[tuple[float, int]] = field(default_factory=lambda: [])
    signal: list[tuple[float, float | None]] = field(default_factory=lambda: [])
    seen: list[hpamodel.Seen] = field(default_factory=lambda: [])  # every observation
    grown: tuple[float, int] | None = None
    placed: float | None = None
    shrunk: float | None = None
    cleared: float | None = None
    launched: set[str] = field(default_factory=lambda: set())
    failure: str = ""

    @property
    def name(self) -> str:
        return str(self.deployment["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.deployment["metadata"]["namespace"])

    def first_signal(self, since: float, passes: Any) -> float | None:
        return next((t for t, v in self.signal if t >= since and v is not None and passes(v)), None)


def _placeholders(watch: Watch, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    labels = watch.deployment["spec"]["selector"]["matchLabels"]
    return [p for p in pods if p["metadata"]["namespace"] == watch.namespace and not p["metadata"].get(
        "deletionTimestamp") and all(p["metadata"].get("labels", {}).get(k) == v for k, v in labels.items())]


def _pool_nodes(nodes: list[dict[str, Any]], pool: str) -> list[dict[str, Any]]:
    return [n for n in nodes if n["metadata"].get("labels", {}).get(POOL_LABEL) == pool]


def _observe(cluster: Cluster, loop: autoscale.Loop, watches: list[Watch], t0: float) -> tuple[list[Any], list[Any]]:
    now = time.monotonic() - t0
    deployments = {d["metadata"]["name"]: d for w in {x.namespace for x in watches}
                   for d in cluster.items("deployments", w)}
    signal = autoscale_signal(loop)
    pods = cluster.items("pods")
    for watch in watches:
        replicas = int(deployments.get(watch.name, {}).get("spec", {}).get("replicas", 0))
        if not watch.replicas or watch.replicas[-1][1] != replicas:
            watch.replicas.append((now, replicas))
        watch.signal.append((now, signal.get(watch.pool)))
        ready = sum(1 for p in _placeholders(watch, pods) if p.get("status", {}).get("phase") == "Running" and any(
            c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", [])))
        watch.seen.append(hpamodel.Seen(now, replicas, ready, signal.get(watch.pool)))
    return pods, cluster.items("nodes")


def autoscale_signal(loop: autoscale.Loop) -> dict[str, float]:
    record = f"pool:gpu_floor_signal:ratio_avg_{loop.short.model.autoscaling.window}"
    try:
        found = loop.prometheus.query(record)
    except E2EError:
        return {}
    return {s["metric"].get("pool", ""): float(s["value"][1]) for s in found}


def placed(watch: Watch, pods: list[dict[str, Any]], nodes: list[dict[str, Any]], count: int) -> str | None:
    """None while `count` placeholders are not all running; else "" or what is wrong."""
    running = [p for p in _placeholders(watch, pods) if p.get("status", {}).get("phase") == "Running"]
    if len(running) < count:
        return None
    hosts = [p["spec"].get("nodeName", "") for p in running]
    spot = [n["metadata"]["name"] for n in nodes if n["metadata"]["name"] in hosts
            and n["metadata"].get("labels", {}).get("karpenter.sh/capacity-type") == "spot"]
    if len(set(hosts)) < len(hosts):
        return f"two placeholders share a node: {sorted(hosts)}"
    return f"placeholders on spot nodes: {spot}" if spot else ""


def _empty(node: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
    """No pod on it but DaemonSets' (Karpenter's notion of an empty node)."""
    name = node["metadata"]["name"]
    return not any(p["spec"].get("nodeName") == name and not p["metadata"].get("deletionTimestamp") and not any(
        o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences", [])) for p in pods)


def series_check(loop: autoscale.Loop, watches: list[Watch]) -> tuple[bool, str]:
    """The scraped series carry the labels the rules select on; every record the pool's devices
    feed has a series, and one they do not feed (GPU_UTIL on MIG instances) has none."""
    names = autoscale.ruletests.record_names(loop.short.model)
    sources = {f"metric:{m.key}": m.series for m in DCGM_METRICS}
    problems, seen = [], []
    for watch in watches:
        if watch.failure:
            continue
        mig = any(p.name == watch.pool and p.sharing.mode.value == "mig" for p in loop.short.model.pools)
        metric = "DCGM_FI_PROF_GR_ENGINE_ACTIVE" if mig else "DCGM_FI_DEV_GPU_UTIL"
        series = loop.prometheus.query(f'{metric}{{pool="{watch.pool}"}}')
        if not series:
            problems.append(f"{watch.pool}: no {metric} series with pool={watch.pool}")
            continue
        labels = series[0]["metric"]
        if labels.get("node") != labels.get("Hostname"):
            problems.append(f"{watch.pool}: node label {labels.get('node')!r} is not the exporter's Hostname")
        held = [s["metric"] for s in series if s["metric"].get("namespace") not in (None, "gpu-operator")]
        # The exporter names the pod holding a whole GPU or a MIG instance; a shared GPU is nobody's.
        attributable = watch.work_resource == "nvidia.com/gpu" or watch.work_resource.startswith("nvidia.com/mig-")
        if watch.work and attributable and not held:
            problems.append(f"{watch.pool}: no series attributed to the work pod (honorLabels lost the exporter's "
                            f"namespace: {sorted({s['metric'].get('namespace', '') for s in series})})")
        for what, name in names.items():
            fed = what not in sources or bool(loop.prometheus.query(f'{sources[what]}{{pool="{watch.pool}"}}'))
            if fed != bool(loop.prometheus.query(f'{name}{{pool="{watch.pool}"}}')):
                problems.append(f"{watch.pool}: {name} " + ("has no series" if fed else "has a series of no input"))
        seen.append(f"{watch.pool} {len(series)} device series" + (f" ({len(held)} of the work pod's)" if held else ""))
    return not problems, "; ".join(problems) or f"every record each pool's devices feed has a series; {', '.join(seen)}"


def scaled_object(loop: autoscale.Loop, watch: Watch) -> dict[str, Any]:
    """The short timings' ScaledObject of the floor (the one KEDA runs)."""
    return next(o for o in loop.short.of_type(SCALED_OBJECT) if o["spec"]["scaleTargetRef"]["name"] == watch.name)


def judge(watch: Watch, loop: autoscale.Loop, busy: float, idle: float, end: float,
          hpa_problem: str = "") -> tuple[bool, str]:
    auto = loop.short.model.autoscaling
    rules = hpamodel.rules(scaled_object(loop, watch))
    if watch.failure:
        return False, watch.failure
    high_at = watch.first_signal(busy, rules.high_signal)
    low_at = watch.first_signal(idle, rules.low_signal)
    said = [f"window {auto.window}, cooldown {auto.cooldown} (HPA windows {rules.up_window:.0f}/"
            f"{rules.down_window:.0f} s, KEDA poll {rules.polling:.0f} s, cooldownPeriod {rules.cooldown:.0f} s, "
            f"HPA sync {rules.sync:.0f} s); busy from +{busy:.0f} s"]
    if watch.work_recreated:
        said.append(f"work pod evicted and created again {watch.work_recreated} time(s)")
    problems: list[str] = [hpa_problem] if hpa_problem else []
    up = rules.threshold_milli / 1000
    if high_at is None:
        last = watch.signal[-1][1] if watch.signal else None
        problems.append(f"the recorded signal never passed {up} x {1 + rules.tolerance:g} (last: {last})")
    else:
        said.append(f"signal above {up} x {1 + rules.tolerance:g} at +{high_at:.0f} s")
    if watch.grown is None:
        problems.append(f"the floor did not grow from {watch.start} (replicas: {watch.replicas})")
    else:
        timed = [(t, r) for t, r in watch.replicas if busy <= t <= idle]
        chain = " -> ".join([str(watch.start), *(f"{r} (+{t:.0f} s)" for t, r in timed)])
        said.append(f"KEDA and its HPA grew it {chain}")
        if watch.placed is None:
            problems.append("its placeholders were not all placed")
        else:
            said.append(f"placed at +{watch.placed:.0f} s ({len(watch.launched)} node(s) launched)")
    if watch.shrunk is None:
        problems.append(f"the floor did not return to {watch.low} (replicas: {watch.replicas[-3:]})")
    else:
        zero_at = watch.first_signal(idle, lambda v: not rules.active(v)) if watch.low == 0 else None
        said.append(f"idle from +{idle:.0f} s" + (f", signal below {up} x {1 - rules.tolerance:g} at "
                                                   f"+{low_at:.0f} s" if low_at else "")
                    + (f", inactive for KEDA at +{zero_at:.0f} s" if zero_at is not None else "")
                    + f", back to {watch.low} at +{watch.shrunk:.0f} s")
    # Every change of the floor against what KEDA and the HPA do with the emitted ScaledObject.
    outside = hpamodel.judge(rules, watch.seen)
    gaps = [b.t - a.t for a, b in itertools.pairwise(watch.seen)]
    problems += outside
    if not outside:
        said.append(f"every step within KEDA's and the HPA's bounds ({len(watch.seen)} observations, gaps up to "
                    f"{max(gaps, default=0):.0f} s)")
    if watch.cleared is None:
        problems.append("empty nodes of the pool remained")
    elif watch.cleared > 0:
        said.append(f"empty nodes gone at +{watch.cleared:.0f} s")
    return not problems, "; ".join(problems + said) if problems else "; ".join(said)


def start_early(cluster: Cluster, stack: Stack) -> prometheus.Prometheus | None:
    """The prometheus-operator, started before the scenarios that come ahead of the loop: its CRDs,
    its start and its first reconcile took a minute of each target's critical path beside six
    others. None where no floor can move or it cannot start (the loop starts it again and reports why)."""
    if not floors(stack):
        return None
    try:
        return prometheus.start_operator(cluster, stack)
    except E2EError:
        return None


def scaling(cluster: Cluster, stack: Stack, report: Report, timeout: float,
            operator: prometheus.Prometheus | None = None) -> None:
    label = stack.target.label
    found = floors(stack)
    if not found:
        report.skip(label, "floor-scaling", "no pool has a floor KEDA may move (no ScaledObject with "
                    "maxReplicaCount above its minReplicaCount)")
        report.skip(label, fence_alert.ROW, "the suite's Prometheus runs only in the autoscaling loop, which needs a "
                    "floor KEDA may move")
        return
    try:
        with autoscale.running(cluster, stack, report, timeout, operator) as loop:
            watches = [Watch(d["metadata"]["labels"][POOL_LABEL], d, low, high) for d, low, high in found]
            nodes = cluster.items("nodes")
            for watch in watches:
                watch.nodes_before = {n["metadata"]["name"] for n in _pool_nodes(nodes, watch.pool)}
            floor_work.start_work(cluster, stack, watches, timeout)
            run_loop(cluster, stack, report, loop, watches, timeout)
            if stack.provider == "kubernetes":
                fence_alert.alert_fence(cluster, stack, report, loop)
            else:
                report.skip(label, fence_alert.ROW, "aws: the fencer's condition rows (gpu-node-fence) run here; "
                            "its alert path, the same program, runs on the provider kubernetes targets")
    except E2EError as err:
        report.scenario(label, "floor-scaling", False, str(err))


def run_loop(cluster: Cluster, stack: Stack, report: Report, loop: autoscale.Loop, watches: list[Watch],
             timeout: float) -> None:
    label, replay = stack.target.label, loop.replay
    load = replay.curve
    replay.start()
    t0 = replay.started or time.monotonic()
    busy = load.busy.start * 15.0  # the busy stretch's first sample, in seconds of replay
    checked = False
    live = [w for w in watches if not w.failure]
    high = {w.pool: hpamodel.rules(scaled_object(loop, w)).high_signal for w in live}
    launches = sum(max(1, math.ceil(w.low / loop.short.model.autoscaling.scale_up_above) - w.low) for w in live)
    deadline = t0 + busy + timeout + floor_work.PER_LAUNCH * launches
    while time.monotonic() < deadline:
        pods, nodes = _observe(cluster, loop, watches, t0)
        now = time.monotonic() - t0
        for watch in live:
            current = watch.replicas[-1][1]
            if now < busy:
                watch.start = current
                continue
            # From zero, KEDA's activation gives 1 and its HPA takes over from there; a floor whose
            # maxReplicaCount is 1 has grown all it can once activated.
            need = min(watch.high, watch.start + 1 if watch.start >= 1 else 2)
            if watch.grown is None and current >= need:
                watch.grown = (now, current)
            if watch.grown is not None and watch.placed is None:
                wrong = placed(watch, pods, nodes, current)
                if wrong:
                    watch.failure = f"grown to {current}: {wrong}"
                elif wrong == "":
                    watch.placed = now
                    pool_now = {n["metadata"]["name"] for n in _pool_nodes(nodes, watch.pool)}
                    watch.launched = pool_now - watch.nodes_before
        # A pool taken from zero has its first series once its node is up: checked again at each
        # poll until it holds, for at most SERIES_GRACE seconds past the first window.
        window = loop.short.model.autoscaling.window_seconds
        if not checked and now >= busy + window:
            ok, detail = series_check(loop, live)
            if ok or now >= busy + window + SERIES_GRACE:
                report.scenario(label, "dcgm-series-recorded", ok, detail)
                queries = dashboards.check(loop)
                checked = True
        # The judge needs the recorded signal above the threshold too: a floor grown from zero by
        # KEDA's activation is placed before the window's average has climbed that far.
        if checked and all(w.failure or (w.placed is not None and w.first_signal(busy, high[w.pool]) is not None)
                           for w in live):
            break
        time.sleep(POLL)
    if not checked:
        ok, detail = series_check(loop, live)
        report.scenario(label, "dcgm-series-recorded", ok, detail)
        queries = dashboards.check(loop)
    idle = time.monotonic() - t0
    # Straight to the idle stretch: the slice's two minutes at half load after its peak sit between
    # the thresholds, where the floor holds (the climb has shown that), and would only delay the shrink.
    replay.skip_to(load.idle, "the floors grew: the rest of the busy stretch and the half-load minutes skipped")
    floor_work.stop_work(cluster, watches)
    removals = sum(len(w.launched) + (1 if w.work else 0) for w in live)
    deadline = time.monotonic() + timeout + PER_REMOVAL * removals
    aws = stack.provider == "aws"
    while time.monotonic() < deadline:
        pods, nodes = _observe(cluster, loop, watches, t0)
        now = time.monotonic() - t0
        for watch in live:
            current = watch.replicas[-1][1]
            running = [p for p in _placeholders(watch, pods) if p.get("status", {}).get("phase") == "Running"]
            if watch.shrunk is None and current == watch.low and len(running) <= watch.low:
                watch.shrunk = now
            if watch.shrunk is not None and watch.cleared is None:
                empty = [n for n in _pool_nodes(nodes, watch.pool) if _empty(n, pods)]
                if not aws:
                    watch.cleared = 0.0  # the existing nodes stay
                elif not empty:
                    watch.cleared = now
        if all(w.cleared is not None for w in live):
            break
        time.sleep(POLL)
    end = time.monotonic() - t0
    gone = {n for w in live for n in w.launched} - {n["metadata"]["name"] for n in cluster.items("nodes")}
    report.scenario(label, "dashboard-queries", *dashboards.after_idle(loop, queries, len(gone)))
    for watch in watches:
        made = keda.hpa_check(cluster, watch.namespace, scaled_object(loop, watch))
        ok, detail = judge(watch, loop, busy, idle, end, made)
        report.scenario(label, f"floor-scaling-{watch.pool}", ok, detail)
