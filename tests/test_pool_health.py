"""`gpuNodePools[].health`: the repair a pool's failed nodes get and the spare nodes held for it.

What a platform engineer relies on: a policy the platform cannot carry out is refused at its
key, spare nodes land in the reservation and the reserved NodePool's limit (room for a
replacement) but in no tenant's quota, they are priced, and Karpenter's repair gate follows
the pools' policy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from components.aws.karpenter import controller_values
from gpuplat.compile import Compiled, Sources, compile_sources
from gpuplat.model import Repair
from gpuplat.plan.health import repairable_at_once
from gpuplat.render.comment_health import health_section
from gpuplat.render.plan import plan_json

AWS = """\
apiVersion: gpuplat/v1
kind: Platform
metadata: {name: lab, tags: {team: ml, cost-center: "1"}}
target: {provider: aws, region: eu-west-1, zones: [eu-west-1a, eu-west-1b], kubernetesVersion: "1.35"}
gpuNodePools:
  - {name: train, instanceType: g5.12xlarge, nodes: {min: 0, max: 4}, markets: [reserved, on-demand]}
  - {name: dev, instanceType: g5.12xlarge, nodes: {min: 0, max: 2}, markets: [on-demand]}
procurement: {spot: 0, reserved: 50, onDemand: 50}
tenants:
  - {name: ml, gpus: 8}
"""
KUBERNETES = """\
apiVersion: gpuplat/v1
kind: Platform
metadata: {name: lab}
target: {provider: kubernetes, kubernetesVersion: "1.35"}
gpuNodePools:
  - name: train
    gpu: {model: H100-SXM-80GB, count: 8}
    nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
    nodes: {min: 2, max: 2}
tenants:
  - {name: ml, gpus: 8}
"""


def _compile(tmp_path: Path, text: str, edit: Any = None) -> Compiled:
    yaml = YAML(typ="safe")
    spec = yaml.load(text)
    if edit is not None:
        edit(spec)
    path = tmp_path / f"spec-{len(list(tmp_path.iterdir()))}.yaml"
    with path.open("w") as out:
        yaml.dump(spec, out)
    return compile_sources(Sources(path, None))


def _health(pool: int, **health: Any) -> Any:
    def edit(spec: dict[str, Any]) -> None:
        spec["gpuNodePools"][pool]["health"] = health

    return edit


def _errors(compiled: Compiled) -> list[tuple[str, str]]:
    return [(d.code, d.path) for d in compiled.diagnostics if d.is_error]


def test_replace_on_kubernetes_is_refused_at_its_key(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, KUBERNETES, _health(0, repair="replace"))
    assert _errors(compiled) == [("GP380", "$.gpuNodePools[0].health.repair")]
    assert _compile(tmp_path, KUBERNETES).ok


def test_aws_pools_cannot_differ_because_the_gate_is_one_switch(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, AWS, _health(1, repair="none"))
    assert _errors(compiled) == [("GP381", "$.gpuNodePools[1].health.repair")]
    both = _compile(tmp_path, AWS, lambda s: [_health(i, repair="none")(s) for i in (0, 1)])
    assert both.ok and both.model is not None
    assert all(p.health.repair is Repair.NONE for p in both.model.pools)


@pytest.mark.parametrize(
    ("text", "pool", "health", "words"),
    [
        (AWS, 1, {"spareNodes": 1}, "no reserved capacity"),
        (KUBERNETES, 0, {"spareNodes": 1}, "provider kubernetes"),
    ],
)
def test_spare_nodes_need_a_reservation(tmp_path: Path, text: str, pool: int, health: Any, words: str) -> None:
    compiled = _compile(tmp_path, text, _health(pool, **health))
    (error,) = [d for d in compiled.diagnostics if d.is_error]
    assert (error.code, error.path) == ("GP382", f"$.gpuNodePools[{pool}].health.spareNodes")
    assert words in error.message and error.line > 0


def test_spare_nodes_are_reserved_and_priced_but_in_no_quota(tmp_path: Path) -> None:
    base = _compile(tmp_path, AWS)
    head = _compile(tmp_path, AWS, _health(0, spareNodes=1))
    assert base.plan is not None and head.plan is not None and head.plan.cost is not None
    assert sum(r.count for r in head.plan.reservations) == sum(r.count for r in base.plan.reservations) + 1
    limits = {n.name: n.gpus for n in head.plan.node_pools}
    assert limits["train-reserved"] == {n.name: n.gpus for n in base.plan.node_pools}["train-reserved"] + 4
    assert [f.gpus for f in head.plan.flavors] == [f.gpus for f in base.plan.flavors]
    assert [q.gpus for q in head.plan.quotas] == [q.gpus for q in base.plan.quotas]
    (train,) = [c for c in head.plan.cost.pools if c.pool == "train"]
    assert train.spare_monthly_usd == pytest.approx(train.reserved_hourly_usd * head.plan.cost.hours_per_month)
    assert base.plan.cost is not None
    assert head.plan.cost.monthly_usd == pytest.approx(base.plan.cost.monthly_usd + train.spare_monthly_usd)


def test_plan_and_comment_show_each_pools_repair(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, AWS, _health(0, spareNodes=1))
    assert compiled.model is not None and compiled.plan is not None
    health = {h["pool"]: h for h in plan_json(compiled.model, compiled.plan)["health"]}
    assert health["train"]["repair"] == "replace" and health["train"]["spareNodes"] == 1
    assert health["train"]["spareMonthlyUsd"] > 0
    assert {n["name"]: n["repairedAtOnce"] for n in health["dev"]["nodePools"]} == {"dev-on-demand": 1}
    comment = health_section(plan_json(compiled.model, compiled.plan), None)
    assert "| train | replace |" in comment and "$" in comment


def test_repaired_at_once_is_karpenters_twenty_percent_rounded_up() -> None:
    # karpenter disruption/repair.go: unhealthy <= ceil(20 % of the NodePool's nodes) is repaired.
    assert [repairable_at_once(n) for n in (1, 5, 6, 10, 11, 13)] == [1, 1, 2, 2, 3, 3]


def test_the_karpenter_gates_follow_the_pools() -> None:
    def gates(repair: Repair) -> tuple[bool, bool]:
        settings = controller_values("c", "https://e", "q", "eu-west-1", repair)["settings"]
        return settings["featureGates"]["nodeRepair"], settings["awsFeatureGates"]["rebootForRepair"]

    assert gates(Repair.NONE) == (False, False)
    assert gates(Repair.REPLACE) == (True, False)
    assert gates(Repair.REBOOT) == (True, True)


def test_reboot_is_aws_only_and_one_switch_at_its_key(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, KUBERNETES, _health(0, repair="reboot"))
    assert _errors(compiled) == [("GP380", "$.gpuNodePools[0].health.repair")]
    mixed = _compile(tmp_path, AWS, _health(0, repair="reboot"))
    assert _errors(mixed) == [("GP381", "$.gpuNodePools[1].health.repair")]
    (error,) = [d for d in mixed.diagnostics if d.is_error]
    assert "pool dev says repair replace, but pool train says reboot" in error.message and error.line > 0
    both = _compile(tmp_path, AWS, lambda s: [_health(i, repair="reboot")(s) for i in (0, 1)])
    assert both.ok and both.model is not None and both.plan is not None
    assert all(p.health.repair is Repair.REBOOT for p in both.model.pools)
    health = {h["pool"]: h for h in plan_json(both.model, both.plan)["health"]}
    assert health["train"]["repair"] == "reboot" and health["train"]["nodePools"]
    spare = _compile(tmp_path, AWS, lambda s: [_health(i, repair="reboot", spareNodes=int(i == 0))(s) for i in (0, 1)])
    assert spare.ok  # a fatal XID still launches a replacement into the spare slot


def test_requeue_limit_reaches_kueues_configuration(tmp_path: Path) -> None:
    from components.kubernetes.scheduling import kueue_config

    compiled = _compile(tmp_path, AWS, lambda s: s.setdefault("scheduling", {}).update(requeueLimit=3))
    assert compiled.ok and compiled.model is not None
    limit = compiled.model.scheduling.requeue_limit
    strategy = kueue_config(requeue_limit=limit)["waitForPodsReady"]["requeuingStrategy"]
    assert strategy["backoffLimitCount"] == 3
    assert "backoffLimitCount" not in kueue_config()["waitForPodsReady"]["requeuingStrategy"]


def test_requeue_limit_without_kueue_is_flagged_at_its_key(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, AWS, lambda s: s.setdefault("scheduling", {}).update(queueing="none", requeueLimit=3))
    assert [(d.code, d.path) for d in compiled.diagnostics if d.code == "GP383"] == [
        ("GP383", "$.scheduling.requeueLimit")
    ]
