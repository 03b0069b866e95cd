"""The Kueue and Karpenter series the dashboards read are ones the pinned releases register, and
the stack has them scraped.

The names are read out of the Go source of the releases the catalog pins (Kueue's and the AWS
provider's modules, as e2e/upstream.py finds them) and of the Karpenter core the e2e suite runs
(e2e/tools/karpenter); a machine with neither skips, saying so. tests/test_dashboards.py then
holds every query to series.known_series, which includes these names where the stack runs them.
The monitors are checked against the real charts rendered with the emitted releases: ours
selects Karpenter's metrics Service, Kueue's own selects its manager's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kubernetes.dashboards import KARPENTER_METRICS_PORT, karpenter_service_monitor_spec
from components.kubernetes.observability import MONITORING_NAMESPACE
from e2e import upstream
from e2e.cluster import E2EError
from e2e.gomod import module_dir
from gpuplat.catalog import CHARTS
from gpuplat.dashboards import dashboards
from gpuplat.dashboards.controllers import cluster_queue
from gpuplat.dashboards.series import GRAFANA_BUILTINS, KARPENTER_METRICS, KUEUE_METRICS, referenced, substitute
from tests import support_aws as aws
from tests.support_go_metrics import GoMetrics
from tests.support_k8s import RELEASE, STACKS, by_kind, recorded, releases
from tests.test_e2e_charts import _rendered

KARPENTER_CORE = "sigs.k8s.io/karpenter"


def _karpenter_core() -> Path:
    try:
        return module_dir("karpenter", KARPENTER_CORE)
    except (E2EError, OSError) as err:
        pytest.skip(f"the Karpenter core e2e/tools/karpenter builds is not to be had here: {err}")


def test_the_kueue_series_are_ones_kueue_registers() -> None:
    names, unresolved = GoMetrics({upstream.KUEUE: upstream.module_dir(upstream.KUEUE)}).names("pkg")
    assert not unresolved
    assert "kueue_pending_workloads" in names and "kueue_waiting_workloads" not in names
    assert names >= KUEUE_METRICS, sorted(KUEUE_METRICS - names)


def test_the_karpenter_series_are_ones_karpenter_and_its_aws_provider_register() -> None:
    core = _karpenter_core()
    core_names, unresolved = GoMetrics({KARPENTER_CORE: core}).names("pkg")
    provider = GoMetrics({upstream.KARPENTER: upstream.module_dir(upstream.KARPENTER), KARPENTER_CORE: core})
    aws_names, unresolved_aws = provider.names("pkg")
    assert not unresolved and not unresolved_aws
    # The provider's, named with the core's namespace constant.
    assert "karpenter_interruption_received_messages_total" in aws_names
    assert core_names | aws_names >= KARPENTER_METRICS, sorted(KARPENTER_METRICS - core_names - aws_names)


@pytest.mark.parametrize("which", ["kubernetes", *STACKS])
def test_kueue_and_karpenter_panels_appear_where_the_stack_runs_and_scrapes_them(which: str) -> None:
    model, plan, resources = recorded(which)
    named = {
        name
        for d in dashboards(model, plan)
        for p in d.model["panels"]
        for t in p["targets"]
        for name in referenced(substitute(t["expr"], GRAFANA_BUILTINS))
    }
    installed = releases(resources)
    kueue = installed.get("kueue")
    assert bool(named & KUEUE_METRICS) == (kueue is not None)
    if kueue is not None:
        values = kueue.inputs["values"]
        assert values["enablePrometheus"] and values["metrics"]["prometheusNamespace"] == MONITORING_NAMESPACE
        # Without it Kueue exports no ClusterQueue quota, usage or pending series (cmd/kueue/main.go).
        manager = yaml.safe_load(values["managerConfig"]["controllerManagerConfigYaml"])
        assert manager["metrics"]["enableClusterQueueResources"] is True
        # The chart's ServiceMonitor installs only once the CRDs are there: after their release.
        assert installed["kube-prometheus-stack"].urn in kueue.options["dependsOn"]
    monitors = {m["metadata"]["name"]: m for m in by_kind(resources, "ServiceMonitor")}
    karpenter = monitors.get(f"{model.metadata.name}-karpenter")
    assert bool(named & KARPENTER_METRICS) == (karpenter is not None) == (which != "kubernetes")
    if karpenter is not None:
        assert karpenter["metadata"]["namespace"] == MONITORING_NAMESPACE
        assert karpenter["spec"] == karpenter_service_monitor_spec()
        assert karpenter["spec"]["namespaceSelector"]["matchNames"] == [CHARTS["karpenter"].namespace]
        assert karpenter["spec"]["endpoints"][0]["port"] == KARPENTER_METRICS_PORT


@pytest.mark.parametrize("which", ["kubernetes", *STACKS])
def test_the_queue_panels_name_each_tenants_emitted_cluster_queue(which: str) -> None:
    model, plan, resources = recorded(which)
    queues = {o["metadata"]["name"] for o in by_kind(resources, "ClusterQueue")}
    boards = {d.key: d.model for d in dashboards(model, plan)}
    for tenant in model.tenants:
        exprs = " ".join(t["expr"] for p in boards[f"tenant-{tenant.name}"]["panels"] for t in p["targets"])
        assert (f'cluster_queue="{cluster_queue(model, tenant)}"' in exprs) == bool(queues)
        assert not queues or cluster_queue(model, tenant) in queues


@pytest.mark.parametrize("stack", STACKS)
def test_the_karpenter_panels_and_monitor_name_the_emitted_node_pools_and_release(stack: str) -> None:
    model, plan, resources = aws.recorded_all(stack)
    node_pools = {o["metadata"]["name"] for o in aws.custom_resources(resources, ("karpenter.sh/v1", "NodePool"))}
    boards = {d.key: d.model for d in dashboards(model, plan)}
    for pool in model.pools:
        exprs = " ".join(t["expr"] for p in boards[f"pool-{pool.name}"]["panels"] for t in p["targets"])
        mine = sorted(n for n in node_pools if n.startswith(f"{pool.name}-"))
        assert mine and f'nodepool=~"{"|".join(mine)}"' in exprs
    (release,) = [r.inputs for r in resources if r.type == RELEASE and r.inputs["chart"].endswith("karpenter")]
    selector = karpenter_service_monitor_spec()
    assert selector["selector"]["matchLabels"]["app.kubernetes.io/instance"] == release["name"]
    assert selector["namespaceSelector"]["matchNames"] == [release["namespace"]]


def _labels_match(selector: dict[str, Any], obj: dict[str, Any]) -> bool:
    return selector["matchLabels"].items() <= obj["metadata"].get("labels", {}).items()


def test_the_karpenter_monitor_selects_the_real_charts_metrics_service() -> None:
    rendered = _rendered("dev", "karpenter")
    spec = karpenter_service_monitor_spec()
    (service,) = [o for o in rendered if o["kind"] == "Service" and _labels_match(spec["selector"], o)]
    assert service["metadata"]["namespace"] in spec["namespaceSelector"]["matchNames"]
    assert KARPENTER_METRICS_PORT in {p["name"] for p in service["spec"]["ports"]}
    # The chart's own monitor stays off (it would scrape the same target twice once the CRDs exist).
    assert not [o for o in rendered if o["kind"] == "ServiceMonitor"]


def test_the_kueue_charts_monitor_selects_its_metrics_service_for_the_monitoring_namespace() -> None:
    rendered = _rendered("dev", "kueue")
    (monitor,) = [o for o in rendered if o["kind"] == "ServiceMonitor"]
    namespace = monitor["metadata"]["namespace"]
    services = [o for o in rendered if o["kind"] == "Service" and _labels_match(monitor["spec"]["selector"], o)]
    assert [s["metadata"]["namespace"] for s in services] == [namespace]
    assert {p["name"] for p in services[0]["spec"]["ports"]} >= {e["port"] for e in monitor["spec"]["endpoints"]}
    bindings = [o for o in rendered if o["kind"] == "RoleBinding" and o["metadata"]["name"].endswith("prometheus-k8s")]
    assert bindings and {s["namespace"] for b in bindings for s in b["subjects"]} == {MONITORING_NAMESPACE}
