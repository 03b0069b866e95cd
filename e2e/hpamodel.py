"""What KEDA 2.20.2 and the HPA controller (Kubernetes 1.35 / 1.36) do with an emitted
ScaledObject, as bounds on one floor's observed timeline. docs/e2e.md ("What the floor's steps
and timing are judged against") derives each bound from the controllers' code.

The controllers in brief:
- KEDA makes an HPA with minReplicas max(minReplicaCount, 1), maxReplicas maxReplicaCount and the
  ScaledObject's behavior, which the API server's defaulting completes (scale-up: +4 pods or
  +100 % per 15 s, the larger; scale-down: -100 % per 15 s).
- KEDA polls every pollingInterval (a timer started before each poll): an active trigger
  (value > activationThreshold) takes a floor at 0 to max(minReplicaCount, 1) and stamps
  lastActiveTime; an inactive one with minReplicaCount 0 takes the floor to 0 once lastActiveTime
  + cooldownPeriod has passed. A query error (no data) does neither.
- The HPA syncs every sync period (requeued after each pass, so passes are at least that far
  apart): outside its tolerance it recommends ceil(ready placeholders x value / threshold), keeps
  every recommendation, and moves up to the lowest of those of the scale-up window (down to the
  highest of the scale-down window), within the policies and the HPA's bounds. It takes no
  recommendation while the floor is at 0.

Observations carry their own uncertainty: an event seen at observation o happened in (p, o],
p the observation before. Each bound below is checked as "possible for some time in those
brackets", so the tolerance is the observation gaps plus the loop's own intervals (the HPA sync
period, KEDA's pollingInterval): a controller pass is taken to end within its own interval.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

HPA_SYNC = 15.0  # --horizontal-pod-autoscaler-sync-period's default (the suite sets none)
HPA_TOLERANCE = 0.1  # --horizontal-pod-autoscaler-tolerance's default
SCALE_UP_DEFAULTS = [{"type": "Pods", "value": 4, "periodSeconds": 15},
                     {"type": "Percent", "value": 100, "periodSeconds": 15}]
SCALE_DOWN_DEFAULTS = [{"type": "Percent", "value": 100, "periodSeconds": 15}]
SIGNAL_CAP = 1.0  # the pressure is a ratio of at most 1, and so is the signal above scaleUpAbove


def hpa_spec(scaled_object: dict[str, Any]) -> dict[str, Any]:
    """The HPA spec fields KEDA makes from the ScaledObject, as the API server stores them."""
    spec = scaled_object["spec"]
    low = int(spec.get("minReplicaCount", 0))
    behavior = spec.get("advanced", {}).get("horizontalPodAutoscalerConfig", {}).get("behavior") or {}
    up, down = behavior.get("scaleUp", {}), behavior.get("scaleDown", {})
    return {"minReplicas": max(low, 1), "maxReplicas": int(spec.get("maxReplicaCount", 100)),
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": up.get("stabilizationWindowSeconds", 0),
                            "selectPolicy": up.get("selectPolicy", "Max"),
                            "policies": up.get("policies", SCALE_UP_DEFAULTS)},
                # No window given: the controller manager's --horizontal-pod-autoscaler-downscale-
                # stabilization (300 s); the API server leaves it unset.
                "scaleDown": {"stabilizationWindowSeconds": down.get("stabilizationWindowSeconds", 300),
                              "selectPolicy": down.get("selectPolicy", "Max"),
                              "policies": down.get("policies", SCALE_DOWN_DEFAULTS)}}}


def hpa_differences(expected: dict[str, Any], live: dict[str, Any]) -> list[str]:
    """Where the HPA KEDA made differs from what the ScaledObject implies."""
    spec = live.get("spec", {})
    found = []
    for key in ("minReplicas", "maxReplicas"):
        if spec.get(key, 1 if key == "minReplicas" else None) != expected[key]:
            found.append(f"{key} {spec.get(key)} (expected {expected[key]})")
    for side, want in expected["behavior"].items():
        have = spec.get("behavior", {}).get(side, {})
        for key, value in want.items():
            if have.get(key, 300 if key == "stabilizationWindowSeconds" and side == "scaleDown" else None) != value:
                found.append(f"behavior.{side}.{key} {have.get(key)} (expected {value})")
    return found


@dataclass(frozen=True)
class Rules:
    low: int
    high: int
    hpa_min: int
    threshold_milli: int
    activation: float
    up_window: float
    down_window: float
    up_policies: tuple[tuple[str, int, int], ...]
    cooldown: float
    polling: float
    sync: float = HPA_SYNC
    tolerance: float = HPA_TOLERANCE

    def ratio(self, value: float | None) -> float | None:
        # KEDA serves the value in milli-units; the HPA divides by the threshold's milli-value.
        return None if value is None else math.ceil(round(value * 1000, 6)) / self.threshold_milli

    def high_signal(self, value: float | None) -> bool:
        r = self.ratio(value)
        return r is not None and r > 1 + self.tolerance

    def low_signal(self, value: float | None) -> bool:
        r = self.ratio(value)
        return r is not None and r < 1 - self.tolerance

    def active(self, value: float | None) -> bool:
        return value is not None and value > self.activation

    def up_limit(self, start: int) -> int:
        """The most one scale-up period allows from `start` (selectPolicy Max)."""
        found = [start + value if kind == "Pods" else math.ceil(start * (1 + value / 100))
                 for kind, value, _ in self.up_policies]
        return max(found) if found else start


def rules(scaled_object: dict[str, Any], sync: float = HPA_SYNC, tolerance: float = HPA_TOLERANCE) -> Rules:
    spec = scaled_object["spec"]
    hpa = hpa_spec(scaled_object)
    trigger = spec["triggers"][0]["metadata"]
    return Rules(low=int(spec.get("minReplicaCount", 0)), high=hpa["maxReplicas"], hpa_min=hpa["minReplicas"],
                 threshold_milli=math.ceil(round(float(trigger["threshold"]) * 1000, 6)),
                 activation=float(trigger.get("activationThreshold", 0)),
                 up_window=float(hpa["behavior"]["scaleUp"]["stabilizationWindowSeconds"]),
                 down_window=float(hpa["behavior"]["scaleDown"]["stabilizationWindowSeconds"]),
                 up_policies=tuple((p["type"], int(p["value"]), int(p["periodSeconds"]))
                                   for p in hpa["behavior"]["scaleUp"]["policies"]),
                 cooldown=float(spec.get("cooldownPeriod", 300)), polling=float(spec.get("pollingInterval", 30)),
                 sync=sync, tolerance=tolerance)


@dataclass(frozen=True)
class Seen:
    """One observation: when, the floor's spec replicas, its Running and Ready placeholders, the
    recorded signal (None: no series)."""

    t: float
    replicas: int
    ready: int
    signal: float | None


@dataclass(frozen=True)
class Step:
    before: int
    after: int
    earliest: float  # the observation before: it happened after this
    latest: float  # the observation that saw it
    index: int  # of that observation


def steps(seen: list[Seen]) -> list[Step]:
    return [Step(a.replicas, b.replicas, a.t, b.t, i + 1) for i, (a, b) in enumerate(itertools.pairwise(seen))
            if a.replicas != b.replicas]


def run_start(seen: list[Seen], end: int, holds: Any) -> tuple[float, float] | None:
    """(after, at): the bracket in which the run of observations satisfying `holds` that ends at
    index `end` began; None when observation `end` does not satisfy it."""
    if not holds(seen[end]):
        return None
    i = end
    while i > 0 and holds(seen[i - 1]):
        i -= 1
    return (seen[i - 1].t if i > 0 else -math.inf), seen[i].t


# The controller reads the signal, then writes the replicas; an observation reads the replicas,
# then the signal. On a loaded machine the read may precede the observation before the step, so
# the value it acted on may be the one the observation before that saw.
READ_BACK = 2


def _read_indices(step: Step) -> range:
    return range(step.index, max(-1, step.index - READ_BACK - 1), -1)


def _bracket_values(seen: list[Seen], step: Step) -> list[float | None]:
    """The signal the controller may have read at the step: the observations around it."""
    return [seen[i].signal for i in reversed(_read_indices(step))]


def _read_run(seen: list[Seen], step: Step, holds: Any) -> tuple[float, float] | None:
    """run_start of the latest observation the controller may have read that satisfies `holds`."""
    return next((r for i in _read_indices(step) if (r := run_start(seen, i, holds)) is not None), None)


def _unseen(rules: Rules, step: Step) -> bool:
    """A gap longer than a sync period may hide a value neither observation shows."""
    return step.latest - step.earliest > rules.sync


def judge(rules: Rules, seen: list[Seen]) -> list[str]:
    """Every change of the floor that KEDA and the HPA, run on `rules`, could not have made."""
    problems: list[str] = []
    # When the HPA began taking recommendations: the floor left 0 (KEDA's activation).
    history_from = (-math.inf, -math.inf) if seen and seen[0].replicas > 0 else None
    for step in steps(seen):
        at = f"{step.before} -> {step.after} in (+{step.earliest:.0f}, +{step.latest:.0f}] s"
        values = _bracket_values(seen, step)
        if step.before == 0:
            if not any(rules.active(v) for v in values) and not _unseen(rules, step):
                problems.append(f"{at}: KEDA activates only on a value above {rules.activation} (read {values})")
            began = run_start(seen, step.index - 1, lambda o: rules.active(o.signal))
            if began is not None and began[0] > -math.inf and step.earliest - began[1] >= 2 * rules.polling:
                problems.append(f"{at}: later than two polls ({rules.polling:.0f} s) after the value became active "
                                f"(by +{began[1]:.0f} s)")
            history_from = (step.earliest, step.latest)
            if step.after > max(rules.low, 1):  # activation, then the HPA's first pass
                problems += _up(rules, seen, Step(max(rules.low, 1), step.after, step.earliest, step.latest,
                                                  step.index), history_from, f"{at} (after activation)")
            continue
        if step.after == 0:
            problems += _to_zero(rules, seen, step, at)
            history_from = None
            continue
        if history_from is None:
            history_from = (-math.inf, -math.inf)
        if step.after > step.before:
            problems += _up(rules, seen, step, history_from, at)
        else:
            problems += _down(rules, seen, step, at)
    return problems


def _up(rules: Rules, seen: list[Seen], step: Step, history_from: tuple[float, float], at: str) -> list[str]:
    s, n = rules.sync, step.before
    values = _bracket_values(seen, step)
    if _unseen(rules, step):
        values.append(SIGNAL_CAP)
    ratios = [r for r in map(rules.ratio, values) if r is not None]
    most = min(rules.high, rules.up_limit(n), math.ceil(n * max(ratios, default=0.0) - 1e-9))
    found = []
    if step.after > most:
        found.append(f"{at}: more than the HPA takes from {n} (at most {most}: maxReplicaCount {rules.high}, "
                     f"the scale-up policies' {rules.up_limit(n)}, ceil({n} x value / threshold) for the value read)")
    rise = _read_run(seen, step, lambda o: rules.high_signal(o.signal))
    if rise is None:
        if _unseen(rules, step):
            return found
        found.append(f"{at}: the HPA grows only on a value above its threshold x {1 + rules.tolerance:g} "
                     f"(read {values})")
        return found
    # With recommendations in its window, the pass before this one (a sync period back, within the
    # window) recommended more too: the value was high a sync period before the step at least.
    # Without them (the first pass after activation) it acts at once.
    first_pass = step.earliest < history_from[1] + 2 * s
    if step.latest - rise[0] <= s and not first_pass:
        found.append(f"{at}: sooner than a sync period ({s:.0f} s) after the value passed "
                     f"(+{rise[0]:.0f}, +{rise[1]:.0f}] s: its scale-up window ({rules.up_window:.0f} s) holds an "
                     "earlier, lower recommendation")
    # Once every pass recommends more (value high, enough ready placeholders), the lowest
    # recommendation of the window is above n after the window and one pass (plus the pass's own
    # duration, under a period).
    ready = run_start(seen, step.index - 1, lambda o: rules.high_signal(o.signal) and math.ceil(
        o.ready * (rules.ratio(o.signal) or 0) - 1e-9) > n)
    if ready is not None:
        since = max(ready[1], history_from[1])
        bound = rules.up_window + 2 * s
        if step.earliest - since >= bound:
            found.append(f"{at}: later than the scale-up window ({rules.up_window:.0f} s) and two sync periods "
                         f"after every pass asked for more (by +{since:.0f} s)")
    return found


def _down(rules: Rules, seen: list[Seen], step: Step, at: str) -> list[str]:
    s = rules.sync
    found = []
    if step.after < rules.hpa_min:
        found.append(f"{at}: below the HPA's minReplicas {rules.hpa_min}")
    fall = _read_run(seen, step, lambda o: rules.low_signal(o.signal))
    if fall is None and _unseen(rules, step):
        pass
    elif fall is None:
        found.append(f"{at}: the HPA shrinks only on a value below its threshold x {1 - rules.tolerance:g} "
                     f"(read {_bracket_values(seen, step)})")
    elif step.latest - fall[0] <= s:
        found.append(f"{at}: sooner than a sync period ({s:.0f} s) after the value fell (+{fall[0]:.0f}, "
                     f"+{fall[1]:.0f}] s: its scale-down window ({rules.down_window:.0f} s) holds an earlier, "
                     "higher recommendation")
    if step.after == rules.hpa_min:
        settled = run_start(seen, step.index - 1, lambda o: rules.low_signal(o.signal) and math.ceil(
            o.replicas * (rules.ratio(o.signal) or 0) - 1e-9) <= rules.hpa_min)
        if settled is not None and step.earliest - settled[1] >= rules.down_window + 2 * s:
            found.append(f"{at}: later than the scale-down window ({rules.down_window:.0f} s) and two sync periods "
                         f"after every pass asked for {rules.hpa_min} (by +{settled[1]:.0f} s)")
    return found


def _to_zero(rules: Rules, seen: list[Seen], step: Step, at: str) -> list[str]:
    p = rules.polling
    found = []
    if rules.low != 0:
        return [f"{at}: KEDA takes a floor to 0 only with minReplicaCount 0 (it is {rules.low})"]
    idle = _read_run(seen, step, lambda o: o.signal is not None and not rules.active(o.signal))
    if idle is None:
        return [] if _unseen(rules, step) else [f"{at}: KEDA deactivates only on a value at most {rules.activation} "
                f"(read {_bracket_values(seen, step)})"]
    # The last active poll was under a poll before the value fell; the floor goes at the first poll
    # past it + cooldownPeriod that reads it inactive.
    earliest = max(0.0, rules.cooldown - p)
    if step.latest - idle[0] <= earliest:
        found.append(f"{at}: sooner than cooldownPeriod ({rules.cooldown:.0f} s) after KEDA's last active poll "
                     f"(the value fell to {rules.activation} in (+{idle[0]:.0f}, +{idle[1]:.0f}] s, polls every "
                     f"{p:.0f} s)")
    if step.earliest - idle[1] >= rules.cooldown + 2 * p:
        found.append(f"{at}: later than cooldownPeriod ({rules.cooldown:.0f} s) and two polls ({p:.0f} s) after "
                     f"the value fell to {rules.activation} (by +{idle[1]:.0f} s)")
    return found
