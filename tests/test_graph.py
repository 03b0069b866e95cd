"""`gpuplat graph` and platform_mermaid: every pool and tenant, the right edges, parseable mermaid."""

from __future__ import annotations

import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from gpuplat.cli import main
from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform
from gpuplat.plan.types import Plan
from gpuplat.render.graph import Edge, Graph, Node, platform_graph, platform_mermaid, render_mermaid

FIXTURES = Path(__file__).resolve().parent / "fixtures"
ROOT = FIXTURES.parents[1]
EXAMPLES = ("design_example.yaml", "kubernetes_example.yaml")

_NODE = re.compile(r'^\s+(\w+)(\[|\{\{|\[\(|\(\[)"([^"]*)"(\]|\}\}|\)\]|\]\))$')
_SUBGRAPH = re.compile(r'^  subgraph (\w+)\["([^"]*)"\]$')
_EDGE = re.compile(r'^  (\w+) (-->|---|-\.->)(?:\|"([^"]*)"\|)? (\w+)$')
_SHAPES = {"[": "]", "{{": "}}", "[(": ")]", "([": "])"}


def _compile(name: str) -> tuple[Platform, Plan]:
    compiled = compile_sources(Sources(FIXTURES / name, None))
    assert compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    return compiled.model, compiled.plan


def parse_mermaid(text: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """Node labels by id and (from, to, label) edges; fails on any line that is not well formed."""
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str]] = []
    depth = 0
    for line in lines[1:]:
        if m := _SUBGRAPH.match(line):
            depth += 1
            continue
        if line == "  end":
            depth -= 1
            assert depth >= 0
            continue
        if m := _NODE.match(line):
            ident, left, label, right = m.groups()
            assert _SHAPES[left] == right, line
            assert ident not in nodes, f"duplicate id {ident}"
            nodes[ident] = label
            continue
        m = _EDGE.match(line)
        assert m, f"not a mermaid node, subgraph or edge: {line!r}"
        source, _, label, target = m.groups()
        edges.append((source, target, label or ""))
    assert depth == 0
    for source, target, _ in edges:
        assert source in nodes and target in nodes, (source, target)
    for label in [*nodes.values(), *(e[2] for e in edges)]:
        # Inside the quotes only entities may stand for syntax characters.
        assert not re.search(r'["\[\](){}|`]', label.replace("<br/>", "")), label
    return nodes, edges


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_pool_and_tenant_with_the_tenants_pools(example: str) -> None:
    model, plan = _compile(example)
    graph = platform_graph(model, plan)
    nodes, edges = parse_mermaid(platform_mermaid(model, plan))
    pool_ids = {n.name: n.id for n in graph.nodes if n.kind == "pool"}
    tenant_ids = {n.name: n.id for n in graph.nodes if n.kind == "tenant"}
    assert set(pool_ids) == {p.name for p in model.pools}
    assert set(tenant_ids) == {t.name for t in model.tenants}
    for name, ident in {**pool_ids, **tenant_ids}.items():
        assert nodes[ident].split("<br/>")[0] == name
    for tenant in model.tenants:
        linked = {t for s, t, _ in edges if s == tenant_ids[tenant.name]}
        assert linked == {pool_ids[p] for p in tenant.pools}
    assert {s for s, t, _ in edges if t == "fabric"} == {pool_ids[p.name] for p in model.fabric_pools}


def test_labels_carry_the_plan_numbers() -> None:
    model, plan = _compile("design_example.yaml")
    nodes, _ = parse_mermaid(platform_mermaid(model, plan))
    train = nodes["pool_train"]
    assert "p5.48xlarge" in train and "nodes 4-32" in train and "exclusive" in train
    share = plan.pool("train").markets
    assert " · ".join(f"{m.value} {s.nodes}" for m, s in share.items()) in train
    fabric = plan.fabric
    assert fabric is not None
    assert f"{fabric.leaves} leaves · {fabric.spines} spines · {fabric.cores} cores" in nodes["fabric"]
    assert plan.storage.hot is not None and f"{plan.storage.hot.capacity_gib} GiB" in nodes["storage_hot"]
    assert "MIG all-1g.10gb" in nodes["pool_infer"]


def test_the_standard_hot_file_system_is_drawn_and_one_switch_is_singular() -> None:
    """dev: one leaf, one spine; the plan's second FSx for standard tenants exports to cold too."""
    compiled = compile_sources(Sources(ROOT / "platform" / "platform.yaml", ROOT / "stacks" / "dev.yaml"))
    assert compiled.model is not None and compiled.plan is not None
    nodes, edges = parse_mermaid(platform_mermaid(compiled.model, compiled.plan))
    hot = compiled.plan.storage.hot
    assert hot is not None and hot.standard is not None
    standard = nodes["storage_hot_standard"]
    assert f"{hot.standard.capacity_gib} GiB" in standard and "tenants product" in standard
    assert ("storage_hot_standard", "storage_cold", "export") in edges
    assert "1 leaf · 1 spine · 0 cores" in nodes["fabric"]


def test_syntax_characters_become_entities_and_ids_stay_safe() -> None:
    graph = Graph(
        (
            Node("cluster", "cluster", "c", ('a "q" [b] (c) {d} |e| #f <g> `h`',)),
            Node("pool_end", "pool", "end", ("end",)),
        ),
        (Edge("cluster", "pool_end", "runs", 'say "hi" | bye'),),
    )
    text = render_mermaid(graph)
    nodes, edges = parse_mermaid(text)
    assert nodes["cluster"] == "a #quot;q#quot; #91;b#93; #40;c#41; #123;d#125; #124;e#124; #35;f #lt;g#gt; #96;h#96;"
    assert edges == [("cluster", "pool_end", "say #quot;hi#quot; #124; bye")]


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_cli_mermaid_and_json() -> None:
    spec = str(FIXTURES / "design_example.yaml")
    code, out, _ = _run("graph", "--spec", spec)
    assert code == 0
    parse_mermaid(out)
    code, out, _ = _run("graph", "--spec", spec, "--format", "json")
    assert code == 0
    document = json.loads(out)
    ids = {n["id"] for n in document["nodes"]}
    assert {"cluster", "fabric", "pool_train", "tenant_research"} <= ids
    assert {"from": "tenant_research", "to": "pool_train", "kind": "may-use", "label": ""} in document["edges"]
    assert all(e["from"] in ids and e["to"] in ids for e in document["edges"])
    _, plan = _compile("design_example.yaml")
    train = next(n for n in document["nodes"] if n["id"] == "pool_train")
    assert train["data"]["markets"] == {m.procurement_key: s.nodes for m, s in plan.pool("train").markets.items()}


def test_cli_invalid_spec_exits_1_without_traceback(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: gpuplat/v1\nkind: Platform\n", encoding="utf-8")
    code, out, err = _run("graph", "--spec", str(broken))
    assert code == 1 and out == "" and "error" in err and "Traceback" not in err
    code, out, _ = _run("graph", "--spec", str(broken), "--format", "json")
    assert code == 1 and json.loads(out)["valid"] is False
