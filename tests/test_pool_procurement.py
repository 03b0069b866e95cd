"""A pool's own market mix (`gpuNodePools[].procurement`) and the knock-on moves it prevents.

The fleet-wide `procurement` splits the pools without a mix of their own together, so adding an
on-demand-only pool moves another pool from on-demand to spot (render/plan_delta.py explains
it); a pool with its own mix is split alone and stays where it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from gpuplat.commands.base import version_note
from gpuplat.compile import Sources, compile_sources
from gpuplat.render.plan import plan_json
from gpuplat.render.plan_delta import plan_delta

SPEC = """\
apiVersion: gpuplat/v1
kind: Platform
metadata: {name: lab, tags: {team: ml, cost-center: "1"}}
target: {provider: aws, region: eu-west-1, zones: [eu-west-1a, eu-west-1b], kubernetesVersion: "1.35"}
gpuNodePools:
  - {name: gpu, instanceType: g5.12xlarge, nodes: {min: 0, max: 1}, markets: [spot, on-demand]}
procurement: {spot: 50, reserved: 0, onDemand: 50}
tenants:
  - {name: ml, gpus: 4}
"""
INFER = {"name": "infer", "instanceType": "g5.12xlarge", "nodes": {"min": 0, "max": 1}, "markets": ["on-demand"]}


def _plan(tmp_path: Path, edit: Any = None) -> dict[str, Any]:
    yaml = YAML(typ="safe")
    spec = yaml.load(SPEC)
    if edit is not None:
        edit(spec)
    path = tmp_path / f"spec-{len(list(tmp_path.iterdir()))}.yaml"
    with path.open("w") as out:
        yaml.dump(spec, out)
    compiled = compile_sources(Sources(path, None))
    assert compiled.ok and compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return plan_json(compiled.model, compiled.plan)


def _nodes(plan: dict[str, Any], pool: str) -> dict[str, int]:
    (found,) = [p for p in plan["pools"] if p["name"] == pool]
    return {k: v["nodes"] for k, v in found["markets"].items()}


def test_adding_an_on_demand_pool_moves_a_fleet_wide_pool_and_says_why(tmp_path: Path) -> None:
    base = _plan(tmp_path)
    head = _plan(tmp_path, lambda s: s["gpuNodePools"].append(INFER))
    assert _nodes(base, "gpu") == {"reserved": 0, "spot": 0, "onDemand": 1}
    assert _nodes(head, "gpu") == {"reserved": 0, "spot": 1, "onDemand": 0}
    (moved,) = plan_delta(head, base)["knockOn"]
    assert moved["pool"] == "gpu" and "pool infer was added" in moved["message"]
    assert "give it its own procurement (gpuNodePools[gpu].procurement)" in moved["message"]


def test_a_pool_with_its_own_mix_stays_where_it_is(tmp_path: Path) -> None:
    def pinned(spec: dict[str, Any]) -> None:
        spec["gpuNodePools"][0]["procurement"] = {"onDemand": 100}

    def pinned_and_infer(spec: dict[str, Any]) -> None:
        pinned(spec)
        spec["gpuNodePools"].append(INFER)
        spec["procurement"] = {"spot": 0, "reserved": 0, "onDemand": 100}  # the fleet-wide mix: infer alone

    base, head = _plan(tmp_path, pinned), _plan(tmp_path, pinned_and_infer)
    assert _nodes(base, "gpu") == _nodes(head, "gpu") == {"reserved": 0, "spot": 0, "onDemand": 1}
    delta = plan_delta(head, base)
    assert [p["name"] for p in delta["pools"]] == ["infer"] and delta["knockOn"] == []
    assert head["pools"][0]["procurement"] == {"reserved": 0, "spot": 0, "onDemand": 100}
    assert head["fleet"]["procurement"] == {"reserved": 0, "spot": 0, "onDemand": 100}


def test_a_pool_split_by_its_own_mix_in_whole_nodes(tmp_path: Path) -> None:
    def own(spec: dict[str, Any]) -> None:
        spec["gpuNodePools"][0].update(nodes={"min": 0, "max": 4}, procurement={"spot": 75, "onDemand": 25})
        spec["gpuNodePools"].append(INFER)
        spec["procurement"] = {"spot": 0, "reserved": 0, "onDemand": 100}  # infer alone, on demand

    plan = _plan(tmp_path, own)
    assert _nodes(plan, "gpu") == {"reserved": 0, "spot": 3, "onDemand": 1}
    assert _nodes(plan, "infer") == {"reserved": 0, "spot": 0, "onDemand": 1}
    assert plan["fleet"]["markets"] == {"reserved": 0, "spot": 12, "onDemand": 8}


def test_the_fleet_wide_mix_is_judged_on_the_pools_it_splits(tmp_path: Path) -> None:
    """With gpu pinned on demand, the 50 % spot falls on infer alone, which allows no spot: GP261."""
    yaml = YAML(typ="safe")
    spec = yaml.load(SPEC)
    spec["gpuNodePools"][0]["procurement"] = {"onDemand": 100}
    spec["gpuNodePools"].append(INFER)
    path = tmp_path / "spec.yaml"
    with path.open("w") as out:
        yaml.dump(spec, out)
    compiled = compile_sources(Sources(path, None))
    found = [(d.code, d.path) for d in compiled.diagnostics if d.is_error]
    assert found == [("GP261", "$.procurement.spot")]


def test_version_note_reads_the_pin_a_project_writes(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr("gpuplat.commands.base.running_version", lambda: "0.2.0")
    cases = {
        "gpuplat[verify]==0.2.0": None,
        "gpuplat>=0.2,<0.3": None,
        "gpuplat~=0.1.0": "another gpuplat",
        "gpuplat[verify]==0.1.0": "another gpuplat",
        "./wheels/gpuplat-0.2.0-py3-none-any.whl": None,
        "gpuplat @ file:///w/gpuplat-0.1.0-py3-none-any.whl": "the wheel of gpuplat 0.1.0",
        "gpuplat[verify] @ git+https://example.com/org/gpuplat@v0.2.0": None,
        "gpuplat @ git+https://example.com/org/gpuplat@abc1234": "may not be",
        "gpuplat": None,
        "jinja2==3.1": None,
    }
    for line, expected in cases.items():
        (tmp_path / "requirements.txt").write_text(f"# the compiler\n{line}\n")
        note = version_note(tmp_path)
        assert (note is None) == (expected is None), (line, note)
        assert expected is None or (note is not None and expected in note), (line, note)


def test_a_pools_own_mix_does_not_apply_on_kubernetes(tmp_path: Path) -> None:
    yaml = YAML(typ="safe")
    spec = yaml.load((Path(__file__).parent / "cases" / "valid" / "kubernetes-provider" / "platform.yaml").read_text())
    spec["gpuNodePools"][0]["procurement"] = {"onDemand": 100}
    path = tmp_path / "spec.yaml"
    with path.open("w") as out:
        yaml.dump(spec, out)
    found = [(d.code, d.path) for d in compile_sources(Sources(path, None)).diagnostics if d.is_error]
    assert found == [("GP262", "$.gpuNodePools[0].procurement")]
