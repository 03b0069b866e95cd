"""The autoscaling loop's own logic, checked without the binaries it drives (`make e2e` runs them)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest
from ruamel.yaml import YAML

from e2e import autoscale, dcgm, exporter, floor_work, loadcurve, prometheus, sandbox, statemetrics
from e2e import floor as floor_
from e2e.errors import E2EError
from e2e.stack import Stack, Target
from gpuplat.catalog.gpus import gpu_model
from tests import support_verify

ROOT = Path(__file__).resolve().parent.parent


def node(labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "labels": labels}, "status": {"allocatable": allocatable}}


def test_a_mig_node_reports_one_device_per_instance_and_no_gpu_util() -> None:
    devices = exporter.node_devices(node({"nvidia.com/gpu.count": "2", "nvidia.com/gpu.product": "H100-SXM-80GB"},
                                         {"nvidia.com/mig-1g.10gb": "14", "cpu": "96"}))
    assert len(devices) == 14 and {d.mig_profile for d in devices} == {"1g.10gb"}
    assert {d.gpu for d in devices} == {0, 1} and {d.fb_mib for d in devices} == {10240}
    text = exporter.exposition(devices, {}, 0.5, 10, dcgm.default_counters())
    assert "DCGM_FI_DEV_GPU_UTIL" not in text and 'GPU_I_PROFILE="1g.10gb"' in text
    assert "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" in text


def test_whole_gpus_and_mig_instances_are_attributed_to_their_pod_shared_ones_not() -> None:
    gpus = exporter.node_devices(node({"nvidia.com/gpu.count": "4", "nvidia.com/gpu.product": "L40S-48GB"},
                                      {"nvidia.com/gpu": "4"}))
    known = gpu_model("L40S-48GB")
    assert known is not None and [d.fb_mib for d in gpus] == [int(known.memory_gib * 1024)] * 4  # the catalog's

    def pod(name: str, resource: str, count: int) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "research"}, "status": {"phase": "Running"},
                "spec": {"containers": [{"name": "main", "resources": {"limits": {resource: str(count)}}}]}}

    held = exporter.holders([pod("a", "nvidia.com/gpu", 2), pod("b", "nvidia.com/gpu.shared", 1)], gpus)
    assert sorted(d.gpu for d in held) == [0, 1] and {h["pod"] for h in held.values()} == {"a"}
    text = exporter.exposition(gpus, held, 1.0, 10, dcgm.default_counters())
    assert 'DCGM_FI_DEV_GPU_UTIL{gpu="0"' in text and 'namespace="research",pod="a",container="main"} 100.0' in text


def test_a_failed_gpu_reports_its_xid_on_every_instance_of_gpu_0_only() -> None:
    devices = exporter.node_devices(node({"nvidia.com/gpu.count": "2", "nvidia.com/gpu.product": "A100-SXM4-80GB"},
                                         {"nvidia.com/mig-3g.40gb": "4"}))
    text = exporter.exposition(devices, {}, 0.5, 10, dcgm.default_counters(), xid=79)
    xids = [line for line in text.splitlines() if line.startswith(exporter.XID_COUNTER + "{")]
    assert len(xids) == 4 and sorted(line.rsplit(" ", 1)[1] for line in xids) == ["0.0", "0.0", "79.0", "79.0"]
    assert all(line.endswith(" 79.0") == ('gpu="0"' in line) for line in xids)
    healthy = exporter.exposition(devices, {}, 0.5, 10, dcgm.default_counters())
    assert all(line.endswith(" 0.0") for line in healthy.splitlines() if line.startswith(exporter.XID_COUNTER + "{"))


def test_the_device_values_follow_the_load_and_stay_within_the_exporter_s_units() -> None:
    device = dcgm.Device(0, "H100-SXM-80GB", 81920, "n1")
    counters = {c.name: c for c in dcgm.default_counters()}
    assert dcgm.value(counters["DCGM_FI_DEV_GPU_UTIL"], device, 0.9, 0.45, 0) == 90.0
    assert dcgm.value(counters["DCGM_FI_PROF_GR_ENGINE_ACTIVE"], device, 0.9, 0.45, 0) == 0.9
    used = dcgm.value(counters["DCGM_FI_DEV_FB_USED"], device, 0.9, 0.45, 0)
    free = dcgm.value(counters["DCGM_FI_DEV_FB_FREE"], device, 0.9, 0.45, 0)
    assert used is not None and free is not None and used + free == 81920 and used == round(81920 * 0.45)


def test_the_load_curve_is_the_trace_slice_busy_then_idle() -> None:
    curve = loadcurve.curve()
    assert curve.samples[:2] == (0.5,) * 2
    assert len(curve.busy) == 273 and curve.busy.start == 2
    assert all(v == 0.0 for v in curve.samples[curve.idle:])
    replay = loadcurve.Replay(curve)
    assert replay.load() is None  # nothing before it starts
    replay.start()
    assert replay.load() == 0.5
    replay.skip_to(curve.busy.stop, "test")
    assert replay.load() == 0.5 and replay.index() == curve.busy.stop  # the two half-load minutes, then idle


def _stack(values: dict[str, Any]) -> Stack:
    release = {"type": "kubernetes:helm.sh/v3:Release",
               "inputs": {"name": "kube-prometheus-stack", "namespace": "monitoring", "values": values}}
    return Stack(Target("t"), [release], {"pools": []}, [])


def test_the_prometheus_object_selects_what_the_chart_s_values_say() -> None:
    emitted = _stack({"prometheus": {"prometheusSpec": {"serviceMonitorSelectorNilUsesHelmValues": False,
                                                        "ruleSelectorNilUsesHelmValues": False, "retention": "3d"}}})
    spec = prometheus.prometheus_object(emitted)["spec"]
    assert spec["serviceMonitorSelector"] == {} and spec["ruleSelector"] == {}
    assert spec["podMonitorSelector"] == {"matchLabels": {"release": "kube-prometheus-stack"}}  # the chart's default
    assert spec["retention"] == "3d" and spec["replicas"] == 0
    default = prometheus.prometheus_object(_stack({}))["spec"]
    assert default["serviceMonitorSelector"] == {"matchLabels": {"release": "kube-prometheus-stack"}}
    assert prometheus.service_names(emitted)[0] == "kube-prometheus-stack-prometheus.monitoring.svc"


def test_the_emitted_scaled_objects_reach_the_prometheus_service_the_chart_makes() -> None:
    from components.kubernetes.capacity_floor import PROMETHEUS_URL

    host = PROMETHEUS_URL.removeprefix("http://").split(":")[0]
    assert host in prometheus.service_names(_stack({}))
    assert PROMETHEUS_URL.endswith(f":{prometheus.PORT}")


def test_the_short_timings_are_added_to_the_stack_s_own_overlay(tmp_path: Path) -> None:
    stack = Stack(Target("staging", "staging"), [], {"pools": []}, [])
    written = YAML(typ="safe").load(autoscale.short_overlay(stack, tmp_path / "o.yaml").read_text())
    own = YAML(typ="safe").load((ROOT / "stacks" / "staging.yaml").read_text())
    assert written["autoscaling"] == autoscale.SHORT
    assert {k: v for k, v in written.items() if k != "autoscaling"} == own
    example = Stack(Target("k", "dev", ROOT / "tests" / "fixtures" / "kubernetes_example.yaml"), [], {}, [])
    assert autoscale.overlay_of(example) is None  # an explicit spec takes no overlay


def test_a_process_gets_its_own_files_at_fixed_paths(tmp_path: Path) -> None:
    hosts = sandbox.hosts_file(tmp_path / "hosts", {"prometheus.monitoring.svc": "127.80.0.2"})
    assert "127.80.0.2 prometheus.monitoring.svc" in hosts.read_text().splitlines()
    argv = sandbox.with_mounts(["/bin/true", "--flag"], {"/etc/hosts": hosts})
    assert argv[:2] == ["unshare", "--mount"] and argv[-2:] == ["/bin/true", "--flag"]
    assert f"mount --bind {hosts} /etc/hosts" in argv[argv.index("-c") + 1]


class _Prometheus:
    """Answers every query with one series, except those naming a `missing` series."""

    def __init__(self, missing: set[str]) -> None:
        self.missing = missing

    def query(self, promql: str) -> list[dict[str, Any]]:
        from gpuplat.dashboards.series import referenced

        return [] if referenced(promql) & self.missing else [{"metric": {"reason": "empty"}, "value": [0, "2"]}]

    def value(self, promql: str) -> float | None:
        found = self.query(promql)
        return float(found[0]["value"][1]) if found else None


def _dev_loop(missing: set[str], state: statemetrics.StateMetrics | None = None) -> Any:
    from types import SimpleNamespace

    resources = json.loads((ROOT / "tests" / "snapshots" / "dev.json").read_text())["resources"]
    short = autoscale.Short(ROOT, None, resources)  # type: ignore[arg-type]
    state = state or statemetrics.StateMetrics(served="kube-state-metrics served", held_gpus=1)
    return SimpleNamespace(short=short, prometheus=_Prometheus(missing), pod_metrics=["Karpenter's metrics served"],
                           state_metrics=state)


def test_dashboard_queries_are_read_from_the_emitted_configmaps_and_judged_by_their_series() -> None:
    from e2e import dashboards as dashboards_
    from gpuplat.dashboards.series import referenced, substitute

    found = dashboards_.queries(_dev_loop(set()))
    assert {board for board, _, _ in found} >= {"atlas: GPU fleet", "atlas: pool train", "atlas: tenant research"}
    names = set().union(*(referenced(substitute(e, dashboards_.RANGE)) for _, _, e in found))

    checked = dashboards_.check(_dev_loop(set()))
    assert checked.ok, checked.detail
    assert "; all 5 kube-state-metrics series have data; kube-state-metrics served; " \
        "cluster:gpu_requests_pending:sum: 2 GPUs requested by Pending pods, the held pod's 1 among them " \
        "(no ScaledObject reads it)" in checked.detail
    assert checked.detail.endswith("; Karpenter's metrics served")  # what the loop forwarded is said
    lost = sorted(names - dashboards_.STATE_SERIES)[0]
    checked = dashboards_.check(_dev_loop({lost}))
    assert checked.ok and f"none yet, not judged: {lost}" in checked.detail  # reported: which series had no data
    silent = [f"{board} / {panel}" for board, panel, expr in found
              if lost in referenced(substitute(expr, dashboards_.RANGE))]
    assert f"returned data (none from: {', '.join(silent)})" in checked.detail  # and which panels show nothing
    # Asked again once the idle stretch is over: a panel that answers then is named as answering.
    _, later = dashboards_.after_idle(_dev_loop(set()), checked, 0)
    assert later.endswith(f"silent answered ({', '.join(silent)})")
    _, still = dashboards_.after_idle(_dev_loop({lost}), checked, 0)
    assert f"0 of the {len(silent)} silent answered" in still


def test_kube_state_metrics_series_and_the_pending_record_are_judged_while_it_runs() -> None:
    """Each kube-state-metrics series a dashboard reads must have data, and the pending record must
    count the held pod; where the release turns kube-state-metrics off they are named, not judged."""
    from e2e import dashboards as dashboards_
    from gpuplat.scaling import PENDING_RECORD

    failed = dashboards_.check(_dev_loop({"kube_deployment_spec_replicas"}))
    assert not failed.ok and "kube_deployment_spec_replicas has no data though kube-state-metrics is scraped" \
        in failed.detail and failed.detail.endswith("kube-state-metrics served")
    failed = dashboards_.check(_dev_loop({PENDING_RECORD}))
    assert not failed.ok and f"{PENDING_RECORD} has no data, though a pod asking for 1 GPU(s) is held Pending" \
        in failed.detail
    failed = dashboards_.check(_dev_loop(set(), statemetrics.StateMetrics(served="served", held_gpus=3)))
    assert not failed.ok and f"{PENDING_RECORD} has 2 GPUs, though a pod asking for 3 GPU(s)" in failed.detail
    failed = dashboards_.check(_dev_loop(set(), statemetrics.StateMetrics(failed="no pod")))
    assert not failed.ok and "kube-state-metrics not run: no pod" in failed.detail

    off = statemetrics.StateMetrics(off="the release turns kube-state-metrics off (kubeStateMetrics.enabled)")
    checked = dashboards_.check(_dev_loop(set(dashboards_.STATE_SERIES), off))
    assert checked.ok, checked.detail
    named = checked.detail.split("not collected (the release turns kube-state-metrics off "
                                 "(kubeStateMetrics.enabled)): ")[1]
    assert named.startswith(f"{PENDING_RECORD}, kube_deployment_spec_replicas")


def test_karpenter_series_are_judged_or_say_why_they_cannot_have_data() -> None:
    """dev (aws): nodes Karpenter launched must show in created_total; interruptions and repairs
    cannot happen before the check, and say why; disruptions wait for the idle stretch."""
    from e2e import dashboards as dashboards_

    absent = {*dashboards_.KARPENTER_WITHOUT_DATA, dashboards_.DISRUPTED}
    checked = dashboards_.check(_dev_loop(absent))
    assert checked.ok and checked.awaited, checked.detail
    assert "karpenter_nodeclaims_created_total: 2 NodeClaims" in checked.detail
    assert ("karpenter_interruption_received_messages_total cannot have data here: counted by the AWS provider's "
            "interruption controller") in checked.detail
    assert "karpenter_nodeclaims_unhealthy_disrupted_total cannot have data here" in checked.detail
    assert "none yet" not in checked.detail  # Karpenter's are judged, not merely reported

    failed = dashboards_.check(_dev_loop({*absent, "karpenter_nodeclaims_created_total"}))
    assert not failed.ok and "karpenter_nodeclaims_created_total has no data" in failed.detail
    assert failed.detail.endswith("; Karpenter's metrics served; kube-state-metrics served")

    # Disruptions: once Karpenter removed nodes, the series must have data; none removed, not judged.
    ok, detail = dashboards_.after_idle(_dev_loop(set()), checked, 3)
    assert ok and detail.endswith("(3 node(s) removed): karpenter_nodeclaims_disrupted_total: empty 2")
    ok, detail = dashboards_.after_idle(_dev_loop(absent), checked, 0)
    assert ok and detail.endswith("not judged: Karpenter removed no node in the idle stretch")
    present = dashboards_.check(_dev_loop(set()))
    assert not present.awaited and "karpenter_nodeclaims_disrupted_total: empty 2" in present.detail


def test_disruptions_missing_after_karpenter_removed_nodes_fail_the_row(monkeypatch: Any) -> None:
    from e2e import dashboards as dashboards_

    monkeypatch.setattr(dashboards_, "DISRUPTION_WAIT", 0.1)
    absent = {dashboards_.DISRUPTED}
    ok, detail = dashboards_.after_idle(_dev_loop(absent), dashboards_.check(_dev_loop(absent)), 2)
    assert not ok and "Karpenter removed 2 node(s): timed out" in detail


def test_a_floor_row_fails_on_a_step_keda_and_the_hpa_would_not_take() -> None:
    """The row of a floor judges every observed change against the emitted ScaledObject's
    numbers (e2e/hpamodel.py): dev's floor of 0..1 activated on load and deactivated after the
    cooldown passes; deactivated sooner, or with an HPA unlike the ScaledObject, it fails."""
    from types import SimpleNamespace

    from e2e.hpamodel import Seen

    resources = json.loads((ROOT / "tests" / "snapshots" / "dev.json").read_text())["resources"]
    short = autoscale.Short(ROOT, None, resources)  # type: ignore[arg-type]
    auto = SimpleNamespace(window="5m", cooldown="10m")
    loop = cast("Any", SimpleNamespace(short=SimpleNamespace(model=SimpleNamespace(autoscaling=auto),
                                                             of_type=short.of_type)))
    watch = floor_.Watch("dev", {"metadata": {"name": "capacity-floor-dev", "namespace": "s"}}, 0, 1)

    def seen(changes: list[tuple[float, int]]) -> list[Seen]:
        found = []
        for t in range(0, 1400, 5):
            replicas = next((r for at, r in reversed(changes) if t >= at), 0)
            value = 0.5 if t < 30 else 1.0 if t < 300 else 0.0
            found.append(Seen(float(t), replicas, replicas, value))
        return found
    watch.seen = seen([(12, 1), (920, 0)])  # cooldownPeriod 600 after the last active poll (< 300)
    watch.signal = [(o.t, o.signal) for o in watch.seen]
    watch.replicas = [(0.0, 0), (12.0, 1), (920.0, 0)]
    watch.grown, watch.placed, watch.shrunk, watch.cleared = (12.0, 1), 15.0, 920.0, 930.0
    ok, detail = floor_.judge(watch, loop, 30.0, 300.0, 1400.0)
    assert ok and "every step within KEDA's and the HPA's bounds" in detail, detail
    watch.seen = seen([(12, 1), (320, 0)])  # 20 s after the value fell, under cooldownPeriod 600
    ok, detail = floor_.judge(watch, loop, 30.0, 300.0, 1400.0)
    assert not ok and "sooner than cooldownPeriod (600 s)" in detail, detail
    ok, detail = floor_.judge(watch, loop, 30.0, 300.0, 1400.0, "the HPA keda-hpa-capacity-floor-dev KEDA made "
                              "has maxReplicas 100 (expected 1)")
    assert not ok and "maxReplicas 100" in detail


def test_the_stand_in_exporter_serves_the_counters_the_stack_lists() -> None:
    _, _, resources = support_verify.recorded("dev")
    counters = exporter.emitted_counters(Stack(Target("dev"), resources, {}, []))
    names = {c.name for c in counters}
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in names and "DCGM_FI_PROF_SM_ACTIVE" not in names  # listed / not
    text = exporter.exposition([dcgm.Device(0, "H100-SXM-80GB", 81920, "n1")], {}, 0.5, 10, counters)
    assert "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL{" in text and "DCGM_FI_PROF_SM_ACTIVE" not in text
    # A stack whose list is gone: the suite says so rather than serving the whole catalogue.
    kept = [r for r in resources if r["type"] != "kubernetes:core/v1:ConfigMap"]
    with pytest.raises(E2EError, match="no counter list"):
        exporter.emitted_counters(Stack(Target("dev"), kept, {}, []))


class _WorkPods:
    """The API server as the work pods' wait sees it: `pods` answers each get in turn."""

    def __init__(self, pods: list[dict[str, Any] | None]) -> None:
        self.pods = pods
        self.created: list[dict[str, Any]] = []

    def get(self, resource: str, name: str = "", namespace: str = "") -> dict[str, Any] | None:
        return self.pods.pop(0) if len(self.pods) > 1 else self.pods[0]

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                **identity: Any) -> subprocess.CompletedProcess[str]:
        assert args[:2] == ("create", "-f") and identity["as_user"].endswith("-train")
        self.created.append(json.loads(stdin or "{}"))
        return subprocess.CompletedProcess(args, 0, "", "")


def test_a_work_pod_evicted_before_it_runs_is_created_again_a_bounded_number_of_times() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "loop-work-gang", "namespace": "train"}}
    watch = floor_.Watch("gang", {"metadata": {"name": "capacity-floor-gang", "namespace": "x"}}, 0, 2,
                         work=("train", "loop-work-gang"), work_pod=pod)
    terminating = {**pod, "metadata": {**pod["metadata"], "deletionTimestamp": "2026-12-06T19:00:00Z"},
                   "status": {"phase": "Running"}}
    cluster = _WorkPods([terminating, None, {**pod, "status": {"phase": "Running"}}])
    running = [floor_work.work_running(cluster, [watch]) for _ in range(3)]  # type: ignore[arg-type]
    assert running == [None, None, True]  # a terminating pod is not running; the one made again is
    assert watch.work_running
    assert cluster.created == [pod] and watch.work_recreated == 1
    gone = _WorkPods([None])
    for _ in range(floor_work.WORK_RECREATIONS + 2):
        assert floor_work.work_running(gone, [watch]) is None  # type: ignore[arg-type]
    assert len(gone.created) == floor_work.WORK_RECREATIONS - 1 and watch.work_recreated == floor_work.WORK_RECREATIONS
