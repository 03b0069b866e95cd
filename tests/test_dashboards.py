"""Dashboards and the usage / cost rules they read, for every shipped stack and the example fleet.

What a user relies on: Grafana's sidecar finds the ConfigMaps (the label the chart's values
name), each dashboard is well formed (unique ids, a 24-column grid without overlaps, a uid
Grafana accepts, every variable defined), and no panel queries a series nobody records. The
queries' series are checked against what the emitted rules record and what the exporter,
kube-state-metrics, Kueue and Karpenter emit (tests/test_dashboard_series.py); the real PromQL
parser runs on them in tests/test_dashboard_queries.py and against data in the e2e suite.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from components.conventions import CAPACITY_TYPE_LABEL
from components.kubernetes.autoscaling import service_monitor_spec
from components.kubernetes.observability import MONITORING_NAMESPACE
from gpuplat import scaling, usage
from gpuplat.dashboards import dashboards
from gpuplat.dashboards.series import GRAFANA_BUILTINS, known_series, referenced, substitute, variables
from gpuplat.model import Market
from tests.support_k8s import STACKS, by_kind, recorded
from tests.upstream import chart_values_dir

SPECS = ("kubernetes", *STACKS)


def _targets(model: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in model["panels"] for t in p["targets"]]


def _sidecar_label() -> dict[str, str]:
    values = yaml.safe_load((chart_values_dir("kube-prometheus-stack") / "values.yaml").read_text())
    sidecar = values["grafana"]["sidecar"]["dashboards"]
    assert sidecar["enabled"] and sidecar["searchNamespace"] == "ALL"
    return {sidecar["label"]: sidecar["labelValue"]}


@pytest.mark.parametrize("which", SPECS)
def test_every_dashboard_ships_as_a_configmap_grafana_picks_up(which: str) -> None:
    model, plan, resources = recorded(which)
    label = _sidecar_label()
    maps = [m for m in by_kind(resources, "ConfigMap") if label.items() <= m["metadata"].get("labels", {}).items()]
    shipped = {}
    for config_map in maps:
        assert config_map["metadata"]["namespace"] == MONITORING_NAMESPACE
        (text,) = config_map["data"].values()
        board = json.loads(text)
        shipped[board["uid"]] = board["title"]
    expected = {d.model["uid"]: d.title for d in dashboards(model, plan)}
    assert shipped == expected
    titles = set(expected.values())
    assert f"{model.metadata.name}: GPU fleet" in titles
    assert {f"{model.metadata.name}: pool {p.name}" for p in model.pools} <= titles
    assert {f"{model.metadata.name}: tenant {t.name}" for t in model.tenants} <= titles


@pytest.mark.parametrize("which", SPECS)
def test_dashboards_are_well_formed(which: str) -> None:
    model, plan, _ = recorded(which)
    uids = [d.model["uid"] for d in dashboards(model, plan)]
    assert len(set(uids)) == len(uids) and all(len(u) <= 40 for u in uids)
    for d in dashboards(model, plan):
        panels = d.model["panels"]
        assert [p["id"] for p in panels] == list(range(1, len(panels) + 1))
        cells: set[tuple[int, int]] = set()
        for p in panels:
            g = p["gridPos"]
            assert g["x"] >= 0 and g["x"] + g["w"] <= 24, (d.key, p["title"])
            area = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
            assert not cells & area, f"{d.key}: {p['title']} overlaps another panel"
            cells |= area
            assert p["targets"] and len({t["refId"] for t in p["targets"]}) == len(p["targets"])
        defined = {v["name"] for v in d.model["templating"]["list"]}
        for title, expr in _targets(d.model):
            assert variables(expr) <= defined | set(GRAFANA_BUILTINS), (d.key, title, expr)
        for p in panels:
            for ref in [p["datasource"], *(t["datasource"] for t in p["targets"])]:
                assert variables(ref["uid"]) <= defined


@pytest.mark.parametrize("which", SPECS)
def test_every_query_names_only_series_that_exist(which: str) -> None:
    model, plan, _ = recorded(which)
    known = known_series(model, plan)
    for d in dashboards(model, plan):
        for title, expr in _targets(d.model):
            names = referenced(substitute(expr, GRAFANA_BUILTINS))
            assert names, (d.key, title, expr)
            assert names <= known, f"{d.key} / {title}: {sorted(names - known)} are recorded by nothing"


@pytest.mark.parametrize("which", SPECS)
def test_usage_rules_read_only_what_the_exporter_and_the_rules_give(which: str) -> None:
    model, plan, resources = recorded(which)
    rules = {o["metadata"]["name"]: o for o in by_kind(resources, "PrometheusRule")}
    (group,) = rules[f"{model.metadata.name}-gpu-usage"]["spec"]["groups"]
    recorded_so_far: set[str] = set()
    exporter = {m.series for m in scaling.DCGM_METRICS}
    for rule in group["rules"]:
        # A group evaluates in order: each rule reads the exporter or a rule before it.
        assert referenced(rule["expr"]) <= exporter | recorded_so_far, rule
        recorded_so_far.add(rule["record"])
    costs = set(usage.COST_RECORDS) & recorded_so_far
    assert costs == (set(usage.COST_RECORDS) if usage.gpu_hour_prices(model, plan) else set())
    # The labels the rules group and join by are on the exporter's series.
    relabels = service_monitor_spec()["endpoints"][0]["relabelings"]
    targets = {r["targetLabel"]: r["sourceLabels"][0] for r in relabels}
    assert targets[usage.CAPACITY_TYPE].endswith(
        CAPACITY_TYPE_LABEL.replace(".", "_").replace("/", "_").replace("-", "_")
    )
    assert "pool" in targets and "node" in targets


@pytest.mark.parametrize("which", STACKS)
def test_prices_add_up_to_the_plans_monthly_cost(which: str) -> None:
    """GPU-hour price x the market's GPUs x hours in a month = the plan's monthly cost of that market."""
    model, plan, _ = recorded(which)
    prices = usage.gpu_hour_prices(model, plan)
    assert plan.cost is not None and prices
    for cost in plan.cost.pools:
        for market, share in plan.pool(cost.pool).bought.items():
            monthly = prices[cost.pool, market] * share.gpus * plan.cost.hours_per_month
            assert monthly == pytest.approx(cost.monthly_usd[market], rel=1e-9), (cost.pool, market)
    spot = [(p, m) for p, m in prices if m is Market.SPOT]
    for pool, _ in spot:
        assert prices[pool, Market.SPOT] < prices[pool, Market.ON_DEMAND]


def test_the_kubernetes_example_prices_nothing_it_has_no_price_for() -> None:
    model, plan, _ = recorded("kubernetes")
    rules = usage.usage_rules(model, plan)
    if plan.cost is None:
        assert not [r for r in rules if r.record == usage.PRICE]
    else:
        assert all(usage.CAPACITY_TYPE not in r.labels for r in rules if r.record == usage.PRICE)


@pytest.mark.parametrize("which", SPECS)
def test_the_floor_panel_reads_the_emitted_floor(which: str) -> None:
    model, plan, resources = recorded(which)
    floors = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in by_kind(resources, "ScaledObject")}
    boards = {d.key: d.model for d in dashboards(model, plan)}
    for pool in model.pools:
        exprs = [e for t, e in _targets(boards[f"pool-{pool.name}"]) if "kube_deployment_spec_replicas" in e]
        if not exprs:
            assert not any(name.endswith(f"-{pool.name}") for _, name in floors)
            continue
        (expr,) = exprs
        assert any(f'namespace="{ns}", deployment="{name}"' in expr for ns, name in floors), expr


def test_referenced_finds_metric_names_not_functions_or_labels() -> None:
    assert referenced('sum by (pool) (rate(a_total{pool="x"}[5m])) / on (pool) group_left (node) b:c:d') == {
        "a_total",
        "b:c:d",
    }
    assert referenced('max by (pool) ({__name__=~"x:y|z", pool="p"})') == {"x:y", "z"}
    assert referenced("(a or vector(0)) - clamp_min(b, 0)") == {"a", "b"}
    assert referenced("sum(sum_over_time(c[1h:1m])) / 60") == {"c"}
    with pytest.raises(ValueError):
        referenced("sum(a")
    with pytest.raises(ValueError):
        referenced("a{pool='x')")
    with pytest.raises(ValueError):
        referenced("a ; b")
