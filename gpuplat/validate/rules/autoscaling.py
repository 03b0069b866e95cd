"""Rules on `autoscaling`: thresholds and timing of the utilization-driven scaling."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, as_str, is_number, section, show_number

# Defaults of the spec language (the schema and gpuplat/model.py), applied when a field is absent.
_DEFAULT_UP, _DEFAULT_DOWN = 0.8, 0.3
_DEFAULT_WINDOW, _DEFAULT_COOLDOWN = "5m", "10m"
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
