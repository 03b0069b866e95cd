"""The emitted GPU rules under `promtool test rules`, with cases generated from each stack's spec.

The cases (e2e/ruletests.py) compute what every record and alert must hold from the input series
by hand; promtool evaluates the emitted rules on the same series. The e2e suite runs the same
cases on the rule files the real prometheus-operator writes (`promtool-rules`); here they run on
the rule groups as emitted (the operator writes a PrometheusRule's groups unchanged) for every
shipped stack, and against broken rules, which they must catch. promtool comes from the e2e tool
cache (`make e2e-tools`): without it these tests are skipped, saying so, and the e2e suite, which
cannot start without it, still runs them.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kubernetes.autoscaling import prometheus_rule_spec
from e2e import dcgm, ruletests
from e2e.autoscale import SHORT
from e2e.tools import build
from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.scaling import DCGM_METRICS

ROOT = Path(__file__).resolve().parent.parent
STACKS = {
    "dev": (ROOT / "platform" / "platform.yaml", ROOT / "stacks" / "dev.yaml"),
    "staging": (ROOT / "platform" / "platform.yaml", ROOT / "stacks" / "staging.yaml"),
    "prod": (ROOT / "platform" / "platform.yaml", ROOT / "stacks" / "prod.yaml"),
    "kubernetes-example": (ROOT / "tests" / "fixtures" / "kubernetes_example.yaml", None),
    "coverage": (ROOT / "e2e" / "specs" / "coverage.yaml", None),
}


def model(stack: str) -> Platform:
    spec, overlay = STACKS[stack]
    compiled = compile_sources(Sources(spec, overlay), with_plan=False)
    assert compiled.model is not None, compiled.diagnostics
    return compiled.model


def promtool() -> Path:
    (tool_set,) = [t for t in build.TOOL_SETS if t.name == "prometheus"]
    try:
        found = build.set_dir(tool_set) / "bin" / "promtool"
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("promtool's cache key needs the Go toolchain; the e2e suite runs these cases")
    if not found.is_file():
        pytest.skip(f"promtool is not built ({found}): `make e2e-tools`; the e2e suite runs these cases")
    return found


def run(tmp_path: Path, platform: Platform, groups: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    document = ruletests.test_document(platform, "rules.yaml", groups)
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(document))
    return subprocess.run([str(promtool()), "test", "rules", "tests.yaml"], cwd=tmp_path, capture_output=True,
                          text=True)


def test_the_collected_dcgm_metrics_are_ones_the_exporter_emits_by_default() -> None:
    counters = {c.name: c for c in dcgm.default_counters()}
    assert {m.series for m in DCGM_METRICS} <= set(counters)
    # The rules scale percentages to ratios: the exporter's own help text says which are percent.
    assert {m.series for m in DCGM_METRICS if m.scale == 0.01} == {m.series for m in DCGM_METRICS
                                                                     if counters[m.series].percent}


@pytest.mark.parametrize("stack", sorted(STACKS))
def test_every_shipped_stack_s_rules_pass_the_cases_from_its_spec(tmp_path: Path, stack: str) -> None:
    platform = model(stack)
    result = run(tmp_path, platform, prometheus_rule_spec(platform)["groups"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


def test_the_short_timings_of_the_autoscaling_loop_pass_too(tmp_path: Path) -> None:
    overlay = tmp_path / "short.yaml"
    overlay.write_text(yaml.safe_dump({"autoscaling": SHORT}))
    compiled = compile_sources(Sources(STACKS["coverage"][0], overlay), with_plan=False)
    assert compiled.model is not None and compiled.model.autoscaling.window == "30s"
    result = run(tmp_path, compiled.model, prometheus_rule_spec(compiled.model)["groups"])
    assert result.returncode == 0, result.stdout[-3000:]


BREAKS = {
    "a percentage not scaled to a ratio": ("/ 100", "/ 10"),
    "the pressure taking the smaller reading": ("max by (pool) ({__name__", "min by (pool) ({__name__"),
    "a shorter window": ("[5m]", "[4m]"),
    "the shrink branch scaled by another threshold": ("* 0.8 / 0.3", "* 0.8 / 0.35"),
    "the waste alert waiting less than an hour": ("for: 1h", "for: 50m"),
}


@pytest.mark.parametrize("edit", sorted(BREAKS))
def test_the_cases_catch_a_broken_rule(tmp_path: Path, edit: str) -> None:
    platform = model("prod")
    text = yaml.safe_dump(prometheus_rule_spec(platform))
    old, new = BREAKS[edit]
    assert old in text
    groups = yaml.safe_load(text.replace(old, new))["groups"]
    result = run(tmp_path, platform, groups)
    assert result.returncode == 1 and "FAILED" in result.stdout + result.stderr, result.stdout[-2000:]


def test_a_mig_pool_read_through_gpu_util_is_caught(tmp_path: Path) -> None:
    platform = model("prod")  # infer is a MIG pool: no DCGM_FI_DEV_GPU_UTIL per MIG device
    groups = prometheus_rule_spec(platform)["groups"]
    for rule in groups[0]["rules"]:
        if rule.get("record", "").startswith("pool:gpu_utilization:") and rule["labels"]["pool"] == "infer":
            rule["expr"] = 'avg by (pool) (avg_over_time(DCGM_FI_DEV_GPU_UTIL{pool="infer"}[5m])) / 100'
    result = run(tmp_path, platform, groups)
    assert result.returncode == 1 and "infer" in result.stdout + result.stderr


def test_a_rule_without_a_case_fails_the_generation() -> None:
    platform = model("dev")
    groups = prometheus_rule_spec(platform)["groups"]
    groups[0]["rules"].append({"record": "pool:gpu_new_thing:avg_5m", "expr": "vector(1)"})
    with pytest.raises(ValueError, match="pool:gpu_new_thing:avg_5m"):
        ruletests.test_document(platform, "rules.yaml", groups)


def test_expected_values_follow_prometheus_left_open_windows() -> None:
    values = (1.0, 2.0, 3.0, 4.0)  # at 0, 15, 30, 45 s
    assert ruletests.window_mean(values, 45, 30) == 3.5  # (15, 45]: 30 s and 45 s
    assert ruletests.window_mean(values, 30, 30) == 2.5
    assert ruletests.window_mean(values, 200, 30) is None
