"""`gpuplat simulate` on a fleet's manager (examples/fleet/): jobs go to the workers in the fleet's
dispatch order, on-prem first; what on-prem does not admit within Kueue's dispatch round goes to
the cloud worker, and its cost with it.

The on-prem worker's research quota is 32 GPUs (4 nodes x 8 H100), the cloud worker's 32 (p5,
8 GPUs a node); product may use on-prem only (8 L40S). Expected numbers come from those specs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest

from gpuplat.cli import main
from gpuplat.compile import Sources, compile_sources
from gpuplat.simulate import Options, load_trace
from gpuplat.simulate.dispatch import ROUND_SECONDS, FleetResult, simulate_fleet

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = Path("examples") / "fleet"


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the members' `spec` paths are relative to the project


def _trace(tmp: Path, rows: Sequence[tuple[float, float, int, str]]) -> Path:
    path = tmp / "trace.csv"
    path.write_text("submit,duration,gpus,tenant\n" + "".join(f"{s},{d},{g},{t}\n" for s, d, g, t in rows))
    return path


def _replay(trace: Path, manager: Path = EXAMPLE / "hub.yaml") -> FleetResult:
    compiled = compile_sources(Sources(manager, None))
    assert compiled.ok and compiled.model is not None and compiled.model.fleet is not None, compiled.diagnostics
    tenants = [t.name for t in compiled.model.tenants]
    return simulate_fleet(compiled.model.fleet, tenants, load_trace(str(trace)), Options())


def _by_name(result: FleetResult) -> dict[str, tuple[int, float, int, float | None]]:
    return {m.name: (m.jobs, m.gpu_h, m.spilled_in, m.cost_usd) for m in result.members}


def test_on_prem_with_room_takes_everything(tmp_path: Path) -> None:
    result = _replay(_trace(tmp_path, [(0, 7200, 8, "research")] * 4))  # 32 GPUs: on-prem's quota
    members = _by_name(result)
    assert [m.name for m in result.members] == ["onprem", "cloud"]  # the manager runs no fleet job
    assert members["onprem"][:3] == (4, 64.0, 0)
    assert members["cloud"][:3] == (0, 0.0, 0)
    assert members["cloud"][3] == 0.0  # no node launched: the burst pool scales from zero
    assert members["onprem"][3] is None  # provider kubernetes: the hardware is owned, not priced


def test_burst_beyond_on_prem_spills_to_the_cloud_and_the_cost_moves(tmp_path: Path) -> None:
    result = _replay(_trace(tmp_path, [(0, 7200, 8, "research")] * 6))
    members = _by_name(result)
    assert members["onprem"][:3] == (4, 64.0, 0)
    assert members["cloud"][:3] == (2, 32.0, 2)  # the two jobs on-prem could not admit
    cloud = next(m for m in result.members if m.name == "cloud")
    assert cloud.cost_usd is not None and cloud.cost_usd > 0
    # Offered a round after submission, then a node boots: never sooner than the round.
    assert cloud.wait_seconds[50] >= ROUND_SECONDS
    assert result.gpu_h == 96.0 and not result.unplaceable and not result.unrouted
    bigger = _replay(_trace(tmp_path, [(0, 7200, 8, "research")] * 8))
    assert _by_name(bigger)["cloud"][:2] == (4, 64.0)
    assert (_by_name(bigger)["cloud"][3] or 0) > (cloud.cost_usd or 0)  # more burst, more cloud cost


def test_a_job_admitted_within_the_round_stays_on_prem(tmp_path: Path) -> None:
    # On-prem is full until 120 s, well within the round: the fifth job waits there, not in the cloud.
    rows = [(0, 120, 8, "research")] * 4 + [(0, 3600, 8, "research")]
    members = _by_name(_replay(_trace(tmp_path, rows)))
    assert members["onprem"][0] == 5 and members["cloud"][0] == 0
    # Full for longer than the round: the fifth job goes to the cloud.
    rows = [(0, 3600, 8, "research")] * 5
    members = _by_name(_replay(_trace(tmp_path, rows)))
    assert members["onprem"][0] == 4 and members["cloud"][:3] == (1, 8.0, 1)


def test_a_tenant_only_reaches_its_own_workers(tmp_path: Path) -> None:
    # product may use on-prem only (8 GPUs there): what it cannot admit waits on-prem.
    result = _replay(_trace(tmp_path, [(0, 3600, 4, "product")] * 4))
    members = _by_name(result)
    assert members["onprem"][:2] == (4, 16.0) and members["cloud"][0] == 0
    onprem = next(m for m in result.members if m.name == "onprem")
    assert onprem.wait_seconds[95] >= 3600  # the last two waited for the first two to finish


def test_dispatch_order_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same fleet with the cloud first in the members' order: the cloud takes the work.
    onprem = "    - {name: onprem, stack: onprem, spec: examples/fleet/onprem.yaml, server: https://api.fra-dc2.example.com:6443}\n"
    cloud = "    - {name: cloud, stack: cloud, spec: examples/fleet/cloud.yaml}   # server: its EKS endpoint\n"
    _fleet_copy(tmp_path, {onprem + cloud: cloud + onprem})
    trace = _trace(tmp_path, [(0, 7200, 8, "research")] * 6)
    monkeypatch.chdir(tmp_path)
    result = _replay(trace)
    assert [m.name for m in result.members] == ["cloud", "onprem"]
    members = _by_name(result)
    assert members["cloud"][:3] == (4, 64.0, 0)
    assert members["onprem"][:3] == (2, 32.0, 2)


def test_cli_reports_each_worker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path, [(0, 7200, 8, "research")] * 6)
    argv = ["simulate", "--stack", "hub", "--spec", str(EXAMPLE / "hub.yaml"), "--trace", str(trace)]
    assert main([*argv, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(m["name"], m["dispatchPosition"], m["jobs"]) for m in doc["members"]] == [
        ("onprem", 1, 4),
        ("cloud", 2, 2),
    ]
    assert doc["members"][1]["costUsd"] > 0 and doc["members"][0]["costUsd"] is None
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "onprem" in text and "cloud" in text and "not priced" in text
    assert main([*argv, "--format", "markdown"]) == 0
    assert "| 2 | cloud | 2 |" in capsys.readouterr().out
    # The pull-request workflow's call: this change's fleet, and the comment says there is no delta.
    assert main([*argv, "--base", "HEAD", "--format", "markdown", "--if-configured"]) == 0
    assert "not replayed as it is at HEAD" in capsys.readouterr().out
    assert main([*argv, "--plot", str(tmp_path / "fleet.svg")]) == 2
    assert "--plot is not offered for a fleet's manager" in capsys.readouterr().err
    assert not (tmp_path / "fleet.svg").exists()


def test_a_worker_spec_replays_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path, [(0, 7200, 8, "research")] * 6)
    argv = ["simulate", "--stack", "onprem", "--spec", str(EXAMPLE / "onprem.yaml"), "--trace", str(trace)]
    assert main([*argv, "--format", "json", "--seeds", "1"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # The single-platform report: a worker is replayed as a platform, every job on its own pools.
    assert "members" not in doc and doc["jobs"] == 6
    assert {p["name"] for p in doc["pools"]} == {"train", "infer"}


def _fleet_copy(tmp: Path, edit: dict[str, str]) -> None:
    """examples/fleet/ under `tmp`, each member's spec with the same text replacements."""
    fleet = tmp / "examples" / "fleet"
    fleet.mkdir(parents=True)
    for member in ("hub", "onprem", "cloud"):
        text = (ROOT / EXAMPLE / f"{member}.yaml").read_text()
        for old, new in edit.items():
            assert old in text
            text = text.replace(old, new)
        (fleet / f"{member}.yaml").write_text(text)
    shutil.copytree(ROOT / "schemas", tmp / "schemas")


def test_a_worker_that_cannot_be_read_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Another project's stack without `spec`: plan shows it as unknown; a replay cannot guess it.
    _fleet_copy(
        tmp_path,
        {"{name: cloud, stack: cloud, spec: examples/fleet/cloud.yaml}": "{name: cloud, stack: acme/gpu/cloud}"},
    )
    trace = _trace(tmp_path, [(0, 600, 8, "research")])
    monkeypatch.chdir(tmp_path)
    argv = ["simulate", "--stack", "hub", "--spec", str(EXAMPLE / "hub.yaml"), "--trace", str(trace)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "worker cloud cannot be replayed" in err and "Traceback" not in err


def test_tenant_map_pins_trace_tenants(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path, [(0, 3600, 4, "team-7")] * 4)
    argv = ["simulate", "--stack", "hub", "--spec", str(EXAMPLE / "hub.yaml"), "--trace", str(trace)]
    assert main([*argv, "--tenant-map", "team-7=product", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["mapping"] == {"team-7": "product"}
    assert [m["jobs"] for m in doc["members"]] == [4, 0]  # product may use on-prem only
    assert main([*argv, "--tenant-map", "team-7=nobody"]) == 2
    assert "nobody" in capsys.readouterr().err


def test_node_by_node_each_worker_counts_its_fragmentation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Four 5-GPU jobs leave 3 GPUs free on each of on-prem's four nodes; a 6-GPU job is admitted
    there within the round (research's quota holds it) but no node holds it: node by node it waits
    on-prem for a node to free, and the report counts that wait on on-prem; packed perfectly it
    starts at once."""
    trace = _trace(tmp_path, [(0, 7200, 5, "research")] * 4 + [(60, 600, 6, "research")])
    argv = ["simulate", "--stack", "hub", "--spec", str(EXAMPLE / "hub.yaml"), "--trace", str(trace)]
    assert main([*argv, "--format", "json", "--node-packing"]) == 0
    doc = json.loads(capsys.readouterr().out)
    onprem, cloud = doc["members"]
    assert (onprem["name"], onprem["jobs"], cloud["jobs"]) == ("onprem", 5, 0)
    assert onprem["replay"]["fragmentation"] == {"gpuHours": pytest.approx(6 * (7200 - 60) / 3600), "jobs": 1}
    assert onprem["waitSeconds"]["p95"] > 7000
    assert main([*argv, "--node-packing"]) == 0
    assert "(fragmentation): onprem 1 (11.9 GPU-h), cloud 0 (0.0 GPU-h)" in capsys.readouterr().out
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["members"][0]["waitSeconds"]["p95"] < 60
