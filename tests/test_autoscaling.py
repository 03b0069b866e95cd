"""The autoscaling loop: window average -> signal -> KEDA -> capacity floor -> nodes, both providers.

The objects themselves are checked against the Kubernetes schema and the KEDA CRD by
test_k8s_schemas; here: what they say. The recorded PromQL signal is evaluated with the
operators' PromQL meaning for one series (see `_Series`), and the HPA arithmetic follows
the controller's replica calculator for an external metric of type Value.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from components.conventions import POOL_LABEL, SPOT_TAINT_KEY
from components.kubernetes.autoscaling import signal_record, utilization_record
from components.kubernetes.capacity_floor import (
    PROMETHEUS_URL,
    floor_bounds,
    hpa_desired,
    scaled_object_spec,
    signal_expr,
    signal_value,
)
from gpuplat import scaling
from gpuplat.catalog import CHARTS
from gpuplat.model import Market, Provider
from gpuplat.plan.types import MarketShare
from gpuplat.preview.diff import alias_urns
from tests.support_k8s import STACKS, by_kind, recorded, releases

SPECS = ("kubernetes", *STACKS)
UP, DOWN = 0.8, 0.3


def _named(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects}


def _floors(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The capacity floors among the Deployments (the system namespace also runs the GPU fencer)."""
    return [o for o in objects if o["metadata"]["name"].startswith("capacity-floor-")]


# ----------------------------------------------------------------------- signal and policy


class _Series:
    """One pool's series under PromQL's vector-scalar operators (absent = empty vector).

    A comparison without `bool` keeps the series where it holds and drops it elsewhere;
    arithmetic applies to the value; `a or b` is `a` where `a` has the series, else `b`,
    which is Python's `or` on truthiness. Python ranks `* /` over comparisons over `or`, as
    PromQL does, so the emitted expression evaluates unchanged.
    """

    def __init__(self, value: float | None) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return self.value is not None

    def _keep(self, holds: bool) -> _Series:
        return self if holds else _Series(None)

    def __gt__(self, other: float) -> _Series:
        return self._keep(self.value is not None and self.value > other)

    def __lt__(self, other: float) -> _Series:
        return self._keep(self.value is not None and self.value < other)

    def _apply(self, value: float) -> _Series:
        return _Series(None if self.value is None else value)

    def __mul__(self, other: float) -> _Series:
        return self._apply((self.value or 0.0) * other)

    def __truediv__(self, other: float) -> _Series:
        return self._apply((self.value or 0.0) / other)

    def __add__(self, other: float) -> _Series:
        return self._apply((self.value or 0.0) + other)


def _evaluate(expr: str, series: str, average: float | None) -> float | None:
    result = eval(expr.replace(series, "S"), {"S": _Series(average)})
    assert isinstance(result, _Series)
    return result.value


SERIES = 'pool:gpu_utilization:ratio_avg_5m{pool="train"}'


@pytest.mark.parametrize(
    ("average", "expected"),
    [(0.95, 0.95), (0.81, 0.81), (0.8, UP), (0.5, UP), (0.3, UP), (0.15, 0.15 * UP / DOWN), (0.0, 0.0)],
)
def test_signal_branches(average: float, expected: float) -> None:
    assert signal_value(average, UP, DOWN) == pytest.approx(expected)
    assert _evaluate(signal_expr(SERIES, UP, DOWN), SERIES, average) == pytest.approx(expected)


def test_a_pool_without_metrics_has_no_signal() -> None:
    # No series in, no series out: KEDA sees an empty result, never a made-up number.
    assert _evaluate(signal_expr(SERIES, UP, DOWN), SERIES, None) is None
    nan = _evaluate(signal_expr(SERIES, UP, DOWN), SERIES, math.nan)
    assert nan is not None and math.isnan(nan)  # KEDA errors on NaN with ignoreNullValues false


def test_signal_without_a_scale_down_threshold() -> None:
    expr = signal_expr(SERIES, UP, 0.0)
    assert "/ 0" not in expr
    assert _evaluate(expr, SERIES, 0.0) == UP  # holds: nothing is below 0
    assert _evaluate(expr, SERIES, 0.9) == 0.9


def test_hpa_arithmetic_on_the_signal() -> None:
    def desired(ready: int, average: float) -> int:
        return hpa_desired(ready, signal_value(average, UP, DOWN), UP)

    assert desired(10, 0.15) == 5  # shrink: 10 x 0.15 / 0.3
    assert desired(4, 0.95) == 5  # grow: ceil(4 x 0.95 / 0.8)
    assert desired(7, 0.5) == 7  # between the thresholds: hold
    assert desired(7, 0.85) == 7  # within the HPA's 10 % tolerance of 0.8
    assert desired(7, 0.28) == 7  # within the tolerance of 0.3 (0.28 / 0.3 > 0.9)
    assert desired(7, 0.0) == 0  # idle: the HPA clamps to minReplicaCount (KEDA takes 0 to 0)
    # After a step the same work sits between the thresholds again: no oscillation.
    for ready, average in [(4, 0.95), (10, 0.15), (3, 0.99), (12, 0.05)]:
        after = desired(ready, average)
        assert DOWN <= ready * average / after <= UP + 1e-9


# --------------------------------------------------------------------------- the objects


@pytest.mark.parametrize("which", SPECS)
def test_signal_is_recorded_per_pool_after_its_inputs(which: str) -> None:
    model, _, resources = recorded(which)
    (rule,) = [r for r in by_kind(resources, "PrometheusRule") if r["metadata"]["name"].endswith("-gpu-utilization")]
    rules = rule["spec"]["groups"][0]["rules"]
    window = model.autoscaling.window
    order = [r["record"] for r in rules]
    pools = sorted(p.name for p in model.pools)
    collected = {scaling.metric_record(m, window) for m in scaling.DCGM_METRICS}
    assert len(collected) >= 15 and collected <= set(order)
    for pool in pools:

        def at(record: str, pool: str = pool) -> int:
            return next(i for i, r in enumerate(rules) if r["record"] == record and r.get("labels") == {"pool": pool})

        # A group evaluates in order: the signal reads this round's pressure, which reads this
        # round's utilisation and memory.
        assert at(utilization_record(model)) < at(scaling.pressure_record(window)) < at(signal_record(model))
        assert at(scaling.memory_record(window)) < at(scaling.pressure_record(window))
    auto = model.autoscaling
    signals = [r for r in rules if r["record"] == signal_record(model)]
    assert [s["labels"]["pool"] for s in signals] == pools
    for signal in signals:
        series = f'{scaling.pressure_record(window)}{{pool="{signal["labels"]["pool"]}"}}'
        assert signal["expr"] == signal_expr(series, auto.scale_up_above, auto.scale_down_below)


@pytest.mark.parametrize("which", SPECS)
def test_a_floor_per_pool_between_min_and_max(which: str) -> None:
    model, plan, resources = recorded(which)
    deployments = _named(_floors(by_kind(resources, "Deployment")))
    scalers = _named(by_kind(resources, "ScaledObject"))
    for pool in model.pools:
        name = f"capacity-floor-{pool.name}"
        bounds = floor_bounds(model, pool, plan.pool(pool.name))
        if bounds is None:
            assert name not in deployments and name not in scalers
            continue
        spec = scalers[name]["spec"]
        assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == bounds
        assert deployments[name]["spec"]["replicas"] == bounds[0]
        if model.target.provider is Provider.KUBERNETES:
            assert bounds == (pool.nodes.min, pool.nodes.max)
        else:
            shares = plan.pool(pool.name)
            steady = shares.share(Market.RESERVED).nodes + shares.share(Market.ON_DEMAND).nodes
            assert bounds == (min(pool.nodes.min, steady), min(pool.nodes.max, steady))
        assert scalers[name]["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert scalers[name]["metadata"]["namespace"] == deployments[name]["metadata"]["namespace"]
    assert len(scalers) == len(deployments) >= 3


def test_bounds_are_the_nodes_where_the_plan_leaves_room() -> None:
    model, plan, _ = recorded("prod")
    infer = next(p for p in model.pools if p.name == "infer")  # 4 reserved + 4 on-demand of max 8
    assert floor_bounds(model, infer, plan.pool("infer")) == (infer.nodes.min, infer.nodes.max)
    kube, kube_plan, _ = recorded("kubernetes")
    train = next(p for p in kube.pools if p.name == "train")  # min == max: a fixed floor, still emitted
    assert floor_bounds(kube, train, kube_plan.pool("train")) == (16, 16)


def test_a_spot_only_pool_gets_no_floor_and_a_thin_one_is_capped() -> None:
    model, plan, _ = recorded("prod")
    train = next(p for p in model.pools if p.name == "train")
    spot_only = dataclasses.replace(plan.pool("train"), markets={Market.SPOT: MarketShare(32, 256)})
    assert floor_bounds(model, train, spot_only) is None
    thin = dataclasses.replace(
        plan.pool("train"), markets={Market.SPOT: MarketShare(29, 232), Market.ON_DEMAND: MarketShare(3, 24)}
    )
    assert floor_bounds(model, train, thin) == (3, 3)  # nodes.min 8: only 3 nodes are not spot


@pytest.mark.parametrize("which", SPECS)
def test_placeholders_hold_nodes_and_nothing_else(which: str) -> None:
    model, _, resources = recorded(which)
    priorities = _named(by_kind(resources, "PriorityClass"))
    namespaces = _named(by_kind(resources, "Namespace"))
    pools = {p.name: p for p in model.pools}
    for deployment in _floors(by_kind(resources, "Deployment")):
        namespace = deployment["metadata"]["namespace"]
        assert namespace == f"{model.metadata.name}-system"
        assert namespaces[namespace]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
        assert deployment["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}
        spec = deployment["spec"]
        assert spec["strategy"] == {"type": "Recreate"}  # no surge pod, which would need a node of its own
        labels = spec["template"]["metadata"]["labels"]
        assert spec["selector"]["matchLabels"] == labels
        pool = pools[labels[POOL_LABEL]]
        pod = spec["template"]["spec"]
        # One per node: required anti-affinity on the hostname among this pool's placeholders.
        (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term == {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}
        expected_selector = dict(pool.node_selector) if which == "kubernetes" else {POOL_LABEL: pool.name}
        assert pod["nodeSelector"] == expected_selector
        # Never on spot, never everywhere: only the pool's own taints, each by key.
        for toleration in pod["tolerations"]:
            assert toleration.get("key") and toleration["key"] != SPOT_TAINT_KEY
        assert {t["key"] for t in pod["tolerations"]} == {"nvidia.com/gpu", *(t.key for t in pool.taints)}
        # No GPU, or any extended resource: requests and limits are CPU and memory only.
        (container,) = pod["containers"]
        resources_ = container["resources"]
        assert set(resources_["requests"]) == {"cpu", "memory"} and set(resources_["limits"]) == {"memory"}
        assert container["image"].startswith("registry.k8s.io/pause:")
        # Pod Security restricted.
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert container["securityContext"] == {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        }
        assert pod["automountServiceAccountToken"] is False
        priority = priorities[pod["priorityClassName"]]
        assert priority["value"] < 0 and priority["preemptionPolicy"] == "Never"
        assert priority["value"] < min(p["value"] for n, p in priorities.items() if n != pod["priorityClassName"])


@pytest.mark.parametrize("which", SPECS)
def test_keda_reads_the_signal_from_the_platforms_prometheus(which: str) -> None:
    model, _, resources = recorded(which)
    stack = releases(resources)["kube-prometheus-stack"].inputs
    # kube-prometheus-stack names its Prometheus Service "<release>-prometheus" (the release name
    # contains the chart name), port 9090, in the release's namespace.
    service = f"http://{stack['name']}-prometheus.{stack['namespace']}.svc:9090"
    assert service == PROMETHEUS_URL
    auto = model.autoscaling
    for scaler in by_kind(resources, "ScaledObject"):
        spec = scaler["spec"]
        (trigger,) = spec["triggers"]
        pool = scaler["metadata"]["labels"][POOL_LABEL]
        assert trigger["type"] == "prometheus" and trigger["metricType"] == "Value"
        assert trigger["metadata"] == {
            "serverAddress": PROMETHEUS_URL,
            "query": f'{signal_record(model)}{{pool="{pool}"}}',
            "threshold": str(auto.scale_up_above),
            "ignoreNullValues": "false",
        }
        assert "fallback" not in spec  # no data, no change: the HPA keeps its count on errors
        assert spec["cooldownPeriod"] == auto.cooldown_seconds
        behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
        for direction in ("scaleUp", "scaleDown"):
            assert behavior[direction] == {"stabilizationWindowSeconds": min(auto.cooldown_seconds, 3600)}


def test_a_long_cooldown_is_capped_at_the_hpas_hour() -> None:
    model, _, _ = recorded("dev")
    slow = dataclasses.replace(
        model, autoscaling=dataclasses.replace(model.autoscaling, cooldown="2h", cooldown_seconds=7200)
    )
    pool = model.pools[0]
    spec = scaled_object_spec(slow, pool, (0, 2), signal_record(slow))
    assert spec["cooldownPeriod"] == 7200
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"] == {
        "stabilizationWindowSeconds": 3600
    }


@pytest.mark.parametrize("which", SPECS)
def test_the_floor_leaves_its_replicas_to_the_hpa(which: str) -> None:
    _, _, resources = recorded(which)
    floors = [r for r in resources if r.inputs.get("kind") == "Deployment"
              and r.inputs["metadata"]["name"].startswith("capacity-floor-")]
    assert floors
    for floor in floors:
        assert floor.options.get("ignoreChanges") == ["spec.replicas"], floor.name
    keda = releases(resources)["keda"]
    assert CHARTS["keda"].namespace == keda.inputs["namespace"]


def test_the_system_namespace_keeps_its_state_on_provider_kubernetes() -> None:
    model, _, resources = recorded("kubernetes")
    (namespace,) = [r for r in resources if r.inputs.get("kind") == "Namespace" and r.name.endswith("-system-ns")]
    assert namespace.inputs["metadata"]["name"] == f"{model.metadata.name}-system"
    old = (
        "urn:pulumi:dev::gpu-platform::gpuplat:index:PoolLabels$kubernetes:core/v1:Namespace::"
        f"{model.metadata.name}-pool-labels-ns"
    )
    assert old in alias_urns(namespace)
    labelers = [r for r in resources if r.inputs.get("kind") == "ServiceAccount"]
    assert labelers and all(namespace.urn in r.options.get("dependsOn", []) for r in labelers)
