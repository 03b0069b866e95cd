"""The floor's steps and timing judged against KEDA's and the HPA's own logic (e2e/hpamodel.py),
fed timelines that follow it and timelines that break it."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from e2e import hpamodel
from e2e.hpamodel import Seen

ROOT = Path(__file__).resolve().parent.parent


def emitted(pool: str = "infer") -> dict[str, Any]:
    """The dev stack's ScaledObject as the compiler emits it."""
    resources = json.loads((ROOT / "tests" / "snapshots" / "dev.json").read_text())["resources"]
    return next(r["inputs"] for r in resources
                if r["type"].endswith(":ScaledObject") and r["inputs"]["metadata"]["name"] == f"capacity-floor-{pool}")


def short(low: int = 1, high: int = 4, cooldown: int = 30) -> dict[str, Any]:
    """The same object at the suite's short timings (autoscale.SHORT: window and cooldown 30 s; the
    compiler sets both stabilisation windows and cooldownPeriod to the cooldown)."""
    found = copy.deepcopy(emitted())
    spec = found["spec"]
    spec.update(minReplicaCount=low, maxReplicaCount=high, cooldownPeriod=cooldown)
    for side in ("scaleUp", "scaleDown"):
        spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"][side]["stabilizationWindowSeconds"] = cooldown
    return found


def timeline(signal: Callable[[float], float | None], replicas: Callable[[float], int], until: float = 240,
             every: float = 2.0) -> list[Seen]:
    found, t = [], 0.0
    while t <= until:
        found.append(Seen(t, replicas(t), replicas(t), signal(t)))
        t += every
    return found


def busy(t: float) -> float:
    """Between the thresholds, then full pressure from +50 s, then idle from +150 s."""
    return 0.8 if t < 50 else 1.0 if t < 150 else 0.0


def steps_at(*changes: tuple[float, int], start: int = 1) -> Callable[[float], int]:
    def replicas(t: float) -> int:
        return next((r for at, r in reversed(changes) if t >= at), start)
    return replicas


def test_the_hpa_keda_makes_is_read_from_the_scaled_object_with_the_api_servers_defaults() -> None:
    so = emitted()
    expected = hpamodel.hpa_spec(so)
    assert expected["minReplicas"] == 1 and expected["maxReplicas"] == 2  # minReplicaCount 0: the HPA keeps 1
    up = expected["behavior"]["scaleUp"]
    assert up["stabilizationWindowSeconds"] == 600 and up["policies"] == hpamodel.SCALE_UP_DEFAULTS
    live = {"spec": {"minReplicas": 1, "maxReplicas": 2, "behavior": copy.deepcopy(expected["behavior"])}}
    assert hpamodel.hpa_differences(expected, live) == []
    live["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"] = 0  # a behavior KEDA did not pass on
    live["spec"]["maxReplicas"] = 100
    assert hpamodel.hpa_differences(expected, live) == [
        "maxReplicas 100 (expected 2)", "behavior.scaleUp.stabilizationWindowSeconds 0 (expected 600)"]


def test_a_floor_following_keda_and_the_hpa_passes() -> None:
    rules = hpamodel.rules(short())
    # Grown 24 s after the value passed (the pass a sync before it still asked for 1), back 25 s after
    # it fell: what the first runs of the real controllers showed (23 s both ways).
    assert hpamodel.judge(rules, timeline(busy, steps_at((74, 2), (175, 1)))) == []


@pytest.mark.parametrize(("replicas", "signal", "said"), [
    (steps_at((56, 2), (175, 1)), busy, "sooner than a sync period (15 s) after the value passed"),
    (steps_at((74, 3), (175, 1)), busy, "more than the HPA takes from 1 (at most 2"),
    (steps_at((74, 2), (175, 1)), lambda t: 0.85 if 50 <= t < 150 else busy(t), "grows only on a value above"),
    (steps_at((130, 2), (175, 1)), busy, "later than the scale-up window (30 s) and two sync periods"),
    (steps_at((74, 2), (155, 1)), busy, "sooner than a sync period (15 s) after the value fell"),
    (steps_at((74, 2), (175, 0)), busy, "KEDA takes a floor to 0 only with minReplicaCount 0"),
    (steps_at((74, 2), (236, 1)), busy, "later than the scale-down window (30 s)"),
])
def test_a_floor_breaking_their_logic_fails(replicas: Callable[[float], int], signal: Callable[[float], float],
                                           said: str) -> None:
    problems = hpamodel.judge(hpamodel.rules(short()), timeline(signal, replicas))
    assert any(said in p for p in problems), problems


def test_activation_and_the_hpas_first_pass_may_come_between_two_observations() -> None:
    """0 -> 2 between two polls (first runs): KEDA activates to 1 and the HPA, with no
    recommendation yet, acts on its first pass; the same jump with no value KEDA reads is not."""
    rules = hpamodel.rules(short(low=0))
    assert hpamodel.judge(rules, timeline(busy, steps_at((60, 2), (200, 0), start=0))) == []
    problems = hpamodel.judge(rules, timeline(lambda t: None if t < 100 else busy(t),
                                              steps_at((60, 2), (200, 0), start=0)))
    assert any("KEDA activates only on a value above 0" in p for p in problems), problems


def test_kedas_cooldown_counts_from_its_last_active_poll_not_from_the_signal() -> None:
    """Back to 0 5 s after the value fell (first runs) is KEDA's: the last active poll may be a
    poll before the value fell, so with cooldownPeriod 30 and a 30 s poll any time after it is
    allowed; with cooldownPeriod 90 it is 60 s at least."""
    floor = steps_at((2, 1), (74, 2), (155, 0), start=0)
    assert hpamodel.judge(hpamodel.rules(short(low=0)), timeline(busy, floor)) == []
    problems = hpamodel.judge(hpamodel.rules(short(low=0, cooldown=90)), timeline(busy, floor))
    assert any("sooner than cooldownPeriod (90 s)" in p for p in problems), problems
    late = steps_at((2, 1), (74, 2), (246, 0), start=0)
    problems = hpamodel.judge(hpamodel.rules(short(low=0)), timeline(busy, late, until=260))
    assert any("later than cooldownPeriod (30 s) and two polls" in p for p in problems), problems


def test_a_long_observation_gap_widens_the_bounds_instead_of_failing() -> None:
    """Seen every 20 s, a step 24 s after the value passed cannot be told from one 10 s after it."""
    rules = hpamodel.rules(short())
    assert hpamodel.judge(rules, timeline(busy, steps_at((62, 2), (175, 1)), every=20.0)) == []
    assert hpamodel.judge(rules, timeline(busy, steps_at((62, 2), (175, 1)), every=2.0)) != []


def test_the_hpa_may_act_on_a_value_read_before_the_observation_before_the_step() -> None:
    """High from +120 to +136 s, then between the thresholds: 2 -> 3 seen at +138 s (the HPA read
    at +135 s, wrote after the observation at +136 s read the replicas) follows the HPA; the same
    step seen at +142 s, three observations into the dead band, does not."""
    def signal(t: float) -> float:
        return 0.8 if t < 50 or 100 <= t < 120 or 136 <= t < 150 else 1.0 if t < 150 else 0.0
    rules = hpamodel.rules(short())
    assert hpamodel.judge(rules, timeline(signal, steps_at((74, 2), (137, 3), (175, 1)))) == []
    problems = hpamodel.judge(rules, timeline(signal, steps_at((74, 2), (141, 3), (175, 1))))
    said = "grows only on a value above its threshold x 1.1 (read [0.8, 0.8, 0.8])"
    assert any(said in p for p in problems), problems
