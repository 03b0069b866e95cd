"""The dashboards' queries under the real Prometheus engine (promtool, from the e2e tool cache).

Every query of every dashboard, for every shipped stack and the example fleet, parses
(`promtool check rules`, each query a recording rule's expression). The Kueue and Karpenter
panels answer what a user reads off them from series shaped as those controllers export them
(their labels as in their Go source, tests/test_dashboard_series.py): who waits and in which
status, what a tenant borrows per flavor, evictions and disruptions by reason over the hour,
only the pool's own NodePools, and 0 rather than nothing before the first event
(`promtool test rules`).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpuplat.dashboards import dashboards
from gpuplat.dashboards.controllers import cluster_queue
from gpuplat.dashboards.series import GRAFANA_BUILTINS, substitute
from tests.support_k8s import STACKS, recorded
from tests.test_rule_tests import promtool

SPECS = ("kubernetes", *STACKS)
ROLE = 'replica_role="leader"'  # Kueue 0.19 labels every series with the manager's role


def _query(board: dict[str, Any], title: str, target: int = 0) -> str:
    (panel,) = [p for p in board["panels"] if p["title"] == title]
    return substitute(panel["targets"][target]["expr"], GRAFANA_BUILTINS)


def _promtool(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool()), *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("which", SPECS)
def test_every_query_parses_with_the_real_parser(which: str, tmp_path: Path) -> None:
    model, plan, _ = recorded(which)
    exprs = sorted({substitute(t["expr"], GRAFANA_BUILTINS) for d in dashboards(model, plan)
                    for p in d.model["panels"] for t in p["targets"]})  # fmt: skip
    rules = [{"record": f"dashboard:query_{i}:value", "expr": e} for i, e in enumerate(exprs)]
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}))
    done = _promtool(tmp_path, "check", "rules", "rules.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(rules)} rules found" in done.stdout


def test_queue_and_node_panels_answer_from_kueue_and_karpenter_series(tmp_path: Path) -> None:
    model, plan, _ = recorded("dev")
    tenant, pool = model.tenants[0], model.pools[0]
    boards = {d.key: d.model for d in dashboards(model, plan)}
    fleet, mine, pools = boards["fleet"], boards[f"tenant-{tenant.name}"], boards[f"pool-{pool.name}"]
    node_pool = plan.pool_node_pools(pool.name)[0]
    cq = f'cluster_queue="{cluster_queue(model, tenant)}", {ROLE}'
    gpu, spot = 'resource="nvidia.com/gpu"', 'capacity_type="spot"'
    cohort = f'cohort="{model.metadata.name}", {cq}'

    def waiting(namespace: str, status: str) -> str:
        return (
            f'kueue_local_queue_pending_workloads{{name="default", namespace="{namespace}", status="{status}", {ROLE}}}'
        )

    def disrupted(node_pool: str) -> str:
        return f'karpenter_nodeclaims_disrupted_total{{reason="spot_interrupted", nodepool="{node_pool}", {spot}}}'

    series = {
        waiting(tenant.name, "active"): "2x60",
        waiting(tenant.name, "inadmissible"): "1x60",
        waiting("someone-else", "active"): "7x60",
        f'kueue_cluster_queue_resource_usage{{{cohort}, flavor="a", {gpu}}}': "10x60",
        f'kueue_cluster_queue_nominal_quota{{{cohort}, flavor="a", {gpu}}}': "8x60",
        f'kueue_cluster_queue_resource_usage{{{cohort}, flavor="b", {gpu}}}': "1x60",
        f'kueue_cluster_queue_nominal_quota{{{cohort}, flavor="b", {gpu}}}': "4x60",
        f'kueue_evicted_workloads_total{{{cq}, reason="Preempted", underlying_cause="", priority_class=""}}': "0+1x60",
        disrupted(node_pool.name): "0+1x60",
        disrupted("not-this-pool-spot"): "0+5x60",
    }
    cases = [
        (_query(mine, "Workloads waiting and why"), [('{status="active"}', 2), ('{status="inadmissible"}', 1)]),
        (_query(mine, "Borrowed from the cohort"), [(f'{{flavor="a", {gpu}}}', 2), (f'{{flavor="b", {gpu}}}', 0)]),
        (_query(mine, "Evictions by reason (per 1h)"), [('{reason="Preempted"}', 60)]),
        (_query(mine, "Requested by waiting workloads"), [("{}", 0)]),  # nothing pending: 0, not "no data"
        (_query(pools, "Nodes disrupted by reason (per 1h)"), [(f'{{reason="spot_interrupted", {spot}}}', 60)]),
        (_query(pools, "Repairs by node condition (per 1h)"), [("{}", 0)]),
        (_query(fleet, "Interruption messages (per 1h)"), [("{}", 0)]),
    ]
    tests = [{"expr": f"round({expr})", "eval_time": "60m",
              "exp_samples": [{"labels": labels, "value": value} for labels, value in expected]}
             for expr, expected in cases]  # fmt: skip
    document = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": s, "values": v} for s, v in series.items()],
        "promql_expr_test": tests,
    }]}  # fmt: skip
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": []}))
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(document, sort_keys=False))
    done = _promtool(tmp_path, "test", "rules", "tests.yaml")
    assert done.returncode == 0, done.stdout + done.stderr
