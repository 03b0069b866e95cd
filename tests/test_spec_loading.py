"""The loader keeps every position; the overlay merge follows its rules (gpuplat/spec/merge.py) and keeps origins."""

from __future__ import annotations

from pathlib import Path

from gpuplat.diagnostics import Origin
from gpuplat.spec import SourceDoc, load_file, merge_overlay, parse_text

BASE = """\
apiVersion: gpuplat/v1
kind: Platform
metadata:
  name: atlas
gpuNodePools:
  - name: train
    instanceType: p5.48xlarge
    nodes: {min: 1, max: 4}
  - name: infer
    instanceType: p5.48xlarge
    nodes: {min: 0, max: 2}
tenants:
  - {name: a, gpus: 8}
procurement: {spot: 0, reserved: 0, onDemand: 100}
"""


def _parse(text: str, file: str) -> SourceDoc:
    doc, diags = parse_text(text, file)
    assert not diags and doc is not None
    return doc


def test_positions_of_keys_values_and_items() -> None:
    doc = _parse(BASE, "p.yaml")
    assert doc.pos.locate(("gpuNodePools", 1, "nodes", "max")) == Origin("p.yaml", 11, 26)
    assert doc.pos.locate(("gpuNodePools", 1), prefer_key=False) == Origin("p.yaml", 9, 5)
    assert doc.pos.locate(("metadata", "name"), prefer_key=True) == Origin("p.yaml", 4, 3)
    # a path below what exists falls back to the nearest ancestor
    assert doc.pos.locate(("gpuNodePools", 0, "sharing", "mode")) == Origin("p.yaml", 6, 5)


def test_normalises_ruamel_types() -> None:
    doc = _parse("a: 2024-01-02\n1: x\nb: &x true\nc: *x\nd: 1.5\n", "f")
    assert doc.data == {"a": "2024-01-02", "1": "x", "b": True, "c": True, "d": 1.5}
    assert all(type(v) in (str, bool, float) for v in doc.data.values())


def test_syntax_error_is_positioned() -> None:
    doc, diags = parse_text("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml")
    assert doc is None
    assert [(d.code, d.file, d.line) for d in diags] == [("GP002", "bad.yaml", 3)]


def test_duplicate_key_is_a_diagnostic() -> None:
    doc, diags = parse_text("a: 1\na: 2\n", "dup.yaml")
    assert doc is None and diags[0].code == "GP002" and diags[0].line == 2


def test_empty_scalar_and_list_documents() -> None:
    for text, words in (("", "empty"), ("# only a comment\n", "empty"), ("- a\n", "a list"), ("42\n", "int")):
        doc, diags = parse_text(text, "f.yaml")
        assert doc is None and diags[0].code == "GP003" and words in diags[0].message


def test_files_binary_missing_directory_and_latin1(tmp_path: Path) -> None:
    (tmp_path / "bin.yaml").write_bytes(b"\x7fELF\x00\x01\x02")
    (tmp_path / "latin.yaml").write_bytes("a: 1\nb: caf\xe9\n".encode("latin-1"))
    assert load_file(tmp_path / "bin.yaml")[1][0].code == "GP004"
    latin = load_file(tmp_path / "latin.yaml")[1][0]
    assert (latin.code, latin.line) == ("GP004", 2)
    assert load_file(tmp_path / "nope.yaml")[1][0].code == "GP001"
    assert load_file(tmp_path)[1][0].code == "GP001"


OVERLAY = """\
gpuNodePools:
  - name: train
    nodes: {max: 8}
  - name: infer
    remove: true
  - name: batch
    instanceType: p4d.24xlarge
    nodes: {min: 0, max: 2}
tenants:
  - {name: b, gpus: 4}
procurement: null
"""


def test_overlay_merges_named_items_removes_appends_and_deletes() -> None:
    data, pos, diags = merge_overlay(_parse(BASE, "base.yaml"), _parse(OVERLAY, "env.yaml"))
    assert [d.code for d in diags] == ["GP013"]  # procurement: null
    pools = data["gpuNodePools"]
    assert [p["name"] for p in pools] == ["train", "batch"]
    assert pools[0]["nodes"] == {"min": 1, "max": 8}  # deep merge keeps min from the base
    assert pools[0]["instanceType"] == "p5.48xlarge"
    assert [t["name"] for t in data["tenants"]] == ["a", "b"]
    assert "procurement" not in data
    # each value keeps the file it came from, renumbered items included
    assert pos.locate(("gpuNodePools", 0, "nodes", "max")).file == "env.yaml"
    assert pos.locate(("gpuNodePools", 0, "nodes", "min")) == Origin("base.yaml", 8, 18)
    assert pos.locate(("gpuNodePools", 1, "instanceType")) == Origin("env.yaml", 7, 19)
    assert pos.locate(("tenants", 1, "gpus")).file == "env.yaml"


def test_overlay_scalars_and_plain_lists_replace() -> None:
    base = _parse("target: {zones: [a, b], region: r}\n", "b")
    over = _parse("target: {zones: [c]}\n", "o")
    data, _, _ = merge_overlay(base, over)
    assert data == {"target": {"zones": ["c"], "region": "r"}}


def test_overlay_errors_point_into_the_overlay() -> None:
    over = _parse("gpuNodePools:\n  - name: ghost\n    remove: true\n  - nodes: {max: 1}\n", "env.yaml")
    _, _, diags = merge_overlay(_parse(BASE, "base.yaml"), over)
    assert sorted((d.code, d.file, d.line) for d in diags) == [("GP010", "env.yaml", 2), ("GP011", "env.yaml", 4)]


def test_base_is_untouched_by_merge() -> None:
    base = _parse(BASE, "base.yaml")
    before = repr(base.data)
    merge_overlay(base, _parse(OVERLAY, "env.yaml"))
    assert repr(base.data) == before


def test_an_overlay_of_only_comments_changes_nothing() -> None:
    doc, diags = parse_text("# nothing to change in this environment\n", "env.yaml", allow_empty=True)
    assert diags == [] and doc is not None
    data, _, merge_diags = merge_overlay(_parse(BASE, "base.yaml"), doc)
    assert merge_diags == [] and data == _parse(BASE, "base.yaml").data


def test_deleting_a_section_with_null_is_a_warning_at_the_overlay_key() -> None:
    over = _parse("metadata:\n  name: x\nprocurement:\n", "env.yaml")
    data, _, diags = merge_overlay(_parse(BASE, "base.yaml"), over)
    assert "procurement" not in data
    assert [(d.code, str(d.level), d.file, d.line, d.path) for d in diags] == [
        ("GP013", "warning", "env.yaml", 3, "$.procurement")
    ]


def test_json_paths_quote_keys_that_are_not_plain_names() -> None:
    from gpuplat.diagnostics import json_path

    assert json_path(("gpuNodePools", 0, "labels", "karpenter.sh/x")) == '$.gpuNodePools[0].labels["karpenter.sh/x"]'
    assert json_path(("procurement", "prices", "onDemandHourly", "p5.48xlarge")).endswith('["p5.48xlarge"]')
    assert json_path(("storage", "hot", "capacityTiB")) == "$.storage.hot.capacityTiB"


def test_a_name_twice_in_one_overlay_list_is_an_error_at_the_second() -> None:
    over = _parse(
        "gpuNodePools:\n  - name: train\n    nodes: {max: 1}\n  - name: train\n    remove: true\n", "env.yaml"
    )
    _, _, diags = merge_overlay(_parse(BASE, "base.yaml"), over)
    assert [(d.code, d.file, d.line) for d in diags] == [("GP014", "env.yaml", 4)]
