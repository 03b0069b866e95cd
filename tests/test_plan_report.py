"""`gpuplat plan`: the JSON document (docs/cli.md, `gpuplat plan`) and the text tables, via the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplat.cli import main
from gpuplat.compile import compile_stack
from gpuplat.render.plan import plan_json, plan_text, table

ROOT = Path(__file__).resolve().parent.parent
MARKETS = {"reserved", "spot", "onDemand"}


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["plan", *argv])
    return code, capsys.readouterr().out


def _check_contract(doc: dict[str, Any]) -> None:
    """Every key docs/cli.md promises, with the types CI tools rely on."""
    assert {"pools", "fleet", "fabric", "storage", "cost"} <= set(doc)
    for pool in doc["pools"]:
        assert {"name", "instanceType", "gpuModel", "gpusPerNode", "nodes", "markets", "units"} <= set(pool)
        assert set(pool["nodes"]) == {"min", "max"}
        assert set(pool["markets"]) == MARKETS
        assert all(set(v) == {"nodes", "gpus"} for v in pool["markets"].values())
        assert {"resource", "perNode"} <= set(pool["units"])
        assert sum(v["nodes"] for v in pool["markets"].values()) in (0, pool["nodes"]["max"])
    assert {"gpus", "markets"} <= set(doc["fleet"]) and set(doc["fleet"]["markets"]) == MARKETS
    if doc["fabric"] is not None:
        assert {"hosts", "leaves", "spines", "cores", "switches", "links", "bisectionGbps"} <= set(doc["fabric"])
    assert isinstance(doc["storage"], dict)
    if doc["cost"] is not None:
        assert {"monthlyUsd", "allOnDemandMonthlyUsd", "savingsPercent"} <= set(doc["cost"])


def test_plan_json_of_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--format", "json", "--overlay", "")
    assert code == 0
    doc = json.loads(out)
    _check_contract(doc)
    assert [p["name"] for p in doc["pools"]] == ["train", "infer", "dev", "notebooks"]
    assert doc["fleet"]["gpus"] == 360
    assert sum(doc["fleet"]["markets"].values()) == 360
    assert doc["fleet"]["markets"]["spot"] == 108  # 30 % of 360, reachable exactly
    infer = doc["pools"][1]
    assert infer["markets"]["spot"] == {"nodes": 0, "gpus": 0}  # not allowed: zeros, key present
    assert (infer["units"]["resource"], infer["units"]["perNode"]) == ("nvidia.com/mig-1g.10gb", 56)
    assert doc["fabric"]["hosts"] == 256 and doc["fabric"]["bisectionGbps"] == 51200
    assert doc["storage"]["hot"]["capacityGiB"] == 48000  # 48 TiB as FSx counts them, a size it accepts
    assert doc["storage"]["hot"]["throughputMBps"] == 48000  # 48 TiB x 1000 MB/s per TiB
    # product (normal) is on a standard file system of 12 TiB: critical keeps 48000 / 60000 = 80 %.
    assert doc["storage"]["hot"]["standard"] == {
        "capacityGiB": 12000,
        "throughputPerTiB": 1000,
        "throughputMBps": 12000,
        "tenants": ["product"],
    }
    assert doc["storage"]["hot"]["criticalThroughputShare"] == 0.8
    assert 25 <= doc["cost"]["savingsPercent"] <= 34
    assert doc["cost"]["monthlyUsd"] < doc["cost"]["allOnDemandMonthlyUsd"]


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_plan_of_every_stack(capsys: pytest.CaptureFixture[str], stack: str) -> None:
    code, out = _run(capsys, "--stack", stack, "--format", "json")
    assert code == 0
    _check_contract(json.loads(out))
    code, text = _run(capsys, "--stack", stack)
    assert code == 0
    for heading in ("Pools and markets", "Sharing capacity", "Fabric", "Storage", "Cost", "Reservations"):
        assert heading in text
    assert "savings against all on-demand" in text


def test_plan_of_the_kubernetes_fixture(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--spec", "tests/fixtures/kubernetes_example.yaml", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    _check_contract(doc)
    assert doc["cost"] is None and doc["fleet"]["gpus"] == 172
    assert doc["fleet"]["markets"] == {"reserved": 0, "spot": 0, "onDemand": 0}


def test_text_of_an_owned_cluster_speaks_its_units(capsys: pytest.CaptureFixture[str]) -> None:
    """On kubernetes both tiers are StorageClasses asked for in TiB, the cold tier has no day-0
    step to show, and there are no capacity reservations to report."""
    code, out = _run(capsys, "--spec", "tests/fixtures/kubernetes_example.yaml")
    assert code == 0
    rows = {line.split()[0]: line for line in out.splitlines() if line.split()[:1] in (["hot"], ["warm"], ["cold"])}
    assert "100 TiB" in rows["hot"] and "GiB" not in rows["hot"] and "400 TiB" in rows["warm"]
    assert "ceph-rgw-hdd -> EXPIRE@730d" in rows["cold"] and "@0d" not in out
    assert "ODCR" not in out and "Reservations" not in out


def test_one_switch_is_not_plural(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _run(capsys, "--stack", "dev")
    assert code == 0
    assert "switches                 2 = 1 leaf + 1 spine + 0 cores" in out
    assert "STANDARD -> GLACIER_IR@30d" in out


def test_infeasible_split_fails_the_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text("gpuNodePools:\n  - name: train\n    markets: [reserved, on-demand]\n")
    code, out = _run(capsys, "--overlay", str(overlay), "--format", "json")
    assert code == 1
    doc = json.loads(out)
    [finding] = [d for d in doc["diagnostics"] if d["code"] == "GP230"]
    # Only dev (6 x 4 = 24 GPUs) may use spot now; 30 % of 360 = 108 +- 4.
    assert finding["path"] == "$.procurement.spot" and finding["file"] == "platform/platform.yaml"
    assert "achievable spot: 0-24 GPUs (0.0-6.7 %)" in finding["message"]


def test_text_tables_are_aligned() -> None:
    compiled = compile_stack("dev", overlay="")
    assert compiled.model is not None and compiled.plan is not None
    text = plan_text(compiled.model, compiled.plan)
    json.dumps(plan_json(compiled.model, compiled.plan))  # serialisable
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("pool ") and "reserved" in line)
    rule = lines[header + 1]
    # every column of the rule line starts where the header's column starts
    starts = [i for i, ch in enumerate(rule) if ch == "-" and (i == 0 or rule[i - 1] == " ")]
    assert all(lines[header][i - 1] == " " for i in starts[1:])
    assert table(["a", "bb"], [["ccc", "1"]], frozenset({1})) == "a    bb\n---  --\nccc   1\n"


def test_text_shows_the_standard_hot_file_system() -> None:
    compiled = compile_stack("dev", overlay="")
    assert compiled.model is not None and compiled.plan is not None
    text = plan_text(compiled.model, compiled.plan)
    row = next(line for line in text.splitlines() if line.startswith("hot (standard)"))
    assert "12000 GiB" in row and "12,000 MB/s (1000/TiB)" in row
    assert "tenants product" in row and "keep 80.0%" in row


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_capacity_document_is_what_gets_provisioned(stack: str) -> None:
    compiled = compile_stack(stack)
    assert compiled.model is not None and compiled.plan is not None
    doc = plan_json(compiled.model, compiled.plan)["capacity"]
    pools = {p["name"]: p for p in plan_json(compiled.model, compiled.plan)["pools"]}
    # One NodePool per pool and market with nodes, its GPU limit the market's share (and, on the
    # reserved market, the spare nodes held for repairs).
    health = {h["pool"]: h for h in plan_json(compiled.model, compiled.plan)["health"]}
    for node_pool in doc["nodePools"]:
        pool = pools[node_pool["pool"]]
        spare = health[pool["name"]]["spareNodes"] if node_pool["market"] == "reserved" else 0
        assert node_pool["gpuLimit"] == pool["markets"][node_pool["market"]]["gpus"] + spare * pool["gpusPerNode"] > 0
    # Per flavor, the tenants' nominal GPUs never exceed what it has.
    capacity = {f["name"]: f["gpus"] for f in doc["flavors"]}
    promised = dict.fromkeys(capacity, 0)
    for quota in doc["quotas"]:
        promised[quota["flavor"]] += quota["gpus"]
    assert all(promised[name] <= capacity[name] for name in capacity)
    by_tenant = {t.name: sum(q["gpus"] for q in doc["quotas"] if q["tenant"] == t.name) for t in compiled.model.tenants}
    assert by_tenant == {t.name: t.gpus for t in compiled.model.tenants}
    text = plan_text(compiled.model, compiled.plan)
    assert "Kueue quotas: nominal GPUs per tenant and flavor" in text
    assert all(f["name"] in text for f in doc["flavors"])
