"""Rules on `autoscaling`: thresholds and timing of the utilization-driven scaling."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_str, is_number, section, show_number
from gpuplat.vocabulary import DEFAULT_COOLDOWN as _DEFAULT_COOLDOWN
from gpuplat.vocabulary import DEFAULT_SCALE_DOWN_BELOW as _DEFAULT_DOWN
from gpuplat.vocabulary import DEFAULT_SCALE_UP_ABOVE as _DEFAULT_UP
from gpuplat.vocabulary import DEFAULT_WINDOW as _DEFAULT_WINDOW

_DURATION = re.compile(r"^([1-9][0-9]*)(s|m|h)$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}


def _seconds(text: str | None) -> int | None:
    match = _DURATION.match(text or "")
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)] if match else None


@rule(
    "GP270",
    "autoscaling-thresholds-ordered",
    Level.ERROR,
    "With scaleDownBelow >= scaleUpAbove one utilization reading asks for both scaling up and down (flapping).",
    fix="Set `autoscaling.scaleDownBelow` below `scaleUpAbove`.",
)
def autoscaling_thresholds_ordered(data: Data) -> Iterator[Finding]:
    auto = section(data, "autoscaling")
    if auto is None:
        return
    up, down = auto.get("scaleUpAbove", _DEFAULT_UP), auto.get("scaleDownBelow", _DEFAULT_DOWN)
    if not (is_number(up) and is_number(down)) or down < up:
        return
    field = "scaleDownBelow" if "scaleDownBelow" in auto else "scaleUpAbove"
    yield Finding(
        ("autoscaling", field),
        f"scaleDownBelow {show_number(down)} must be below scaleUpAbove {show_number(up)}, "
        f"e.g. scaleDownBelow {show_number(_DEFAULT_DOWN)} with scaleUpAbove {show_number(_DEFAULT_UP)}",
    )


@rule(
    "GP320",
    "cooldown-shorter-than-window",
    Level.WARNING,
    "A cooldown shorter than the averaging window acts again on readings that still include the last action.",
    fix="Set `autoscaling.cooldown` to at least `window`.",
)
def cooldown_shorter_than_window(data: Data) -> Iterator[Finding]:
    auto = section(data, "autoscaling")
    if auto is None:
        return
    window = as_str(auto.get("window", _DEFAULT_WINDOW))
    cooldown = as_str(auto.get("cooldown", _DEFAULT_COOLDOWN))
    window_s, cooldown_s = _seconds(window), _seconds(cooldown)
    if window_s is None or cooldown_s is None or cooldown_s >= window_s:
        return
    field = "cooldown" if "cooldown" in auto else "window"
    yield Finding(
        ("autoscaling", field),
        f"cooldown {cooldown} is shorter than the {window} utilization window, so a scaling action is judged "
        f"on readings taken before it took effect; use a cooldown of at least {window}",
    )


# The HPA (which KEDA drives) changes a replica count only when the metric / target ratio is
# off by more than its tolerance, 10 % unless the cluster's controller manager says otherwise.
_HPA_TOLERANCE = 0.1
# The longest stabilization window the HPA accepts (and KEDA's chart CRD allows).
_HPA_MAX_WINDOW_SECONDS = 3600


@rule(
    "GP321",
    "scale-up-unreachable",
    Level.WARNING,
    "The HPA acts only when utilization / scaleUpAbove exceeds 1.1 (its 10 % tolerance); utilization never exceeds 1.",
    source="https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#algorithm-details",
    fix="Set `autoscaling.scaleUpAbove` to at most 0.9.",
)
def scale_up_unreachable(data: Data) -> Iterator[Finding]:
    auto = section(data, "autoscaling")
    if auto is None or "scaleUpAbove" not in auto:
        return
    up = auto["scaleUpAbove"]
    if not is_number(up) or up * (1 + _HPA_TOLERANCE) < 1:
        return
    yield Finding(
        ("autoscaling", "scaleUpAbove"),
        f"scaleUpAbove {show_number(up)} never adds nodes: the pool's utilization would have to exceed "
        f"{show_number(round(up * (1 + _HPA_TOLERANCE), 3))} (the HPA's 10 % tolerance) and it is at most 1; "
        f"use at most {show_number(0.9)}",
    )


@rule(
    "GP322",
    "cooldown-beyond-hpa-window",
    Level.WARNING,
    "The HPA's stabilization windows, which carry the cooldown, are at most one hour.",
    source="https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#configurable-scaling-behavior",
    fix="Set `autoscaling.cooldown` to at most 1h.",
)
def cooldown_beyond_hpa_window(data: Data) -> Iterator[Finding]:
    auto = section(data, "autoscaling")
    if auto is None:
        return
    cooldown = as_str(auto.get("cooldown", _DEFAULT_COOLDOWN))
    seconds = _seconds(cooldown)
    if seconds is None or seconds <= _HPA_MAX_WINDOW_SECONDS:
        return
    yield Finding(
        ("autoscaling", "cooldown"),
        f"cooldown {cooldown} is longer than the HPA's longest stabilization window (1h): the capacity floor "
        f"moves again after an hour, and only taking a pool with nodes.min 0 to zero waits the full {cooldown}",
    )
