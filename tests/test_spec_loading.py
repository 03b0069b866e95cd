"""The loader keeps every position; the overlay merge follows its rules (gpuplat/spec/merge.py) and keeps origins."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpuplat.diagnostics import Origin
from gpuplat.spec import SourceDoc, load_file, merge_overlay, parse_text
from gpuplat.spec.loader import MAX_SPEC_BYTES

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
    new: true
    instanceType: p4d.24xlarge
    nodes: {min: 0, max: 2}
tenants:
  - {name: b, gpus: 4, new: true}
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
    assert pos.locate(("gpuNodePools", 1, "instanceType")) == Origin("env.yaml", 8, 19)
    assert "new" not in pools[1] and "new" not in data["tenants"][1]
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


def test_an_unknown_name_is_an_error_with_the_closest_base_name() -> None:
    """A misspelt tenant would silently add a new, protected namespace; a misspelt pool a new pool."""
    over = _parse(
        "gpuNodePools:\n  - name: trian\n    nodes: {max: 1}\ntenants:\n  - {name: zzz, gpus: 1}\n", "env.yaml"
    )
    data, _, diags = merge_overlay(_parse(BASE, "base.yaml"), over)
    assert [(d.code, d.file, d.line, d.col, d.path) for d in diags] == [
        ("GP015", "env.yaml", 2, 11, "$.gpuNodePools[0].name"),
        ("GP015", "env.yaml", 5, 12, "$.tenants[0].name"),
    ]
    assert "did you mean 'train'?" in diags[0].message and "the base has: a" in diags[1].message
    assert [p["name"] for p in data["gpuNodePools"]] == ["train", "infer"]


def test_new_must_be_a_boolean_and_only_on_new_names() -> None:
    over = _parse("tenants:\n  - {name: a, gpus: 1, new: true}\n  - {name: c, new: yes}\n", "env.yaml")
    _, _, diags = merge_overlay(_parse(BASE, "base.yaml"), over)
    assert [(d.code, d.line) for d in diags] == [("GP016", 2), ("GP012", 3)]


def test_a_name_twice_in_one_overlay_list_is_an_error_at_the_second() -> None:
    over = _parse(
        "gpuNodePools:\n  - name: train\n    nodes: {max: 1}\n  - name: train\n    remove: true\n", "env.yaml"
    )
    _, _, diags = merge_overlay(_parse(BASE, "base.yaml"), over)
    assert [(d.code, d.file, d.line) for d in diags] == [("GP014", "env.yaml", 4)]


# --- merge keys, tags, cycles, anchors ----------------------------------------------------

MERGED = """\
defaults: &d
  instanceType: p5.48xlarge
  nodes: {min: 0, max: 2}
more: &m
  <<: *d
  labels: {a: b}
pools:
  - <<: *d
    name: x
    nodes: {min: 1, max: 3}
  - <<: [*m, {markets: [spot]}]
    name: y
"""


def test_merge_keys_merge_and_point_at_the_anchor() -> None:
    doc = _parse(MERGED, "m.yaml")
    x, y = doc.data["pools"]
    assert x == {"name": "x", "nodes": {"min": 1, "max": 3}, "instanceType": "p5.48xlarge"}
    assert y == {
        "name": "y",
        "labels": {"a": "b"},
        "instanceType": "p5.48xlarge",
        "nodes": {"min": 0, "max": 2},
        "markets": ["spot"],
    }
    # a merged value is where it is written (the anchor), even through a nested merge
    assert doc.pos.locate(("pools", 0, "instanceType")) == Origin("m.yaml", 2, 17)
    assert doc.pos.locate(("pools", 0, "instanceType"), prefer_key=True) == Origin("m.yaml", 2, 3)
    assert doc.pos.locate(("pools", 1, "nodes", "max")) == Origin("m.yaml", 3, 24)
    assert doc.pos.locate(("pools", 1, "labels", "a")).line == 6
    assert doc.pos.locate(("pools", 1, "markets", 0)).line == 11
    # an overriding key is where the merging mapping writes it
    assert doc.pos.locate(("pools", 0, "nodes", "max")) == Origin("m.yaml", 10, 26)


def _codes(text: str) -> list[tuple[str, int]]:
    doc, diags = parse_text(text, "f.yaml")
    assert doc is None or not any(d.is_error for d in diags)
    return [(d.code, d.line) for d in diags]


def test_unsupported_tags_cycles_and_long_integers_are_diagnostics() -> None:
    assert _codes("a: 1\nx: !!omap [a: 1]\n") == [("GP007", 2)]
    assert _codes("x: !!set {a}\n") == [("GP007", 1)]
    assert _codes("x: !!binary aGk=\n") == [("GP007", 1)]
    assert _codes("x: !local 1\n") == [("GP007", 1)]
    assert _codes("a: &s {<<: *s}\n") == [("GP007", 1)]  # a mapping merging itself
    assert _codes("a:\n  - &s [1, *s]\n") == [("GP007", 2)]
    assert _codes("a: " + "9" * 5000 + "\n") == [("GP004", 1)]  # beyond Python's 4,300 digits
    # core tags are plain YAML
    doc, diags = parse_text("a: !!str 1\nb: !!int '2'\nc: ! x\n", "f.yaml")
    assert diags == [] and doc is not None and doc.data == {"a": "1", "b": 2, "c": "x"}


@pytest.mark.parametrize("libyaml", [True, False])
def test_a_reused_anchor_is_a_warning_not_stderr(
    libyaml: bool, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import warnings

    from gpuplat.spec import construct

    if not libyaml:  # ruamel's pure composer is the one that warns
        monkeypatch.setattr(construct, "_fast", lambda _text: (False, None))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # pytest would otherwise collect it away from stderr
        doc, diags = parse_text("a: &x 1\nb: &x 2\nc: *x\n", "f.yaml")
    assert doc is not None and doc.data == {"a": 1, "b": 2, "c": 2}
    assert [(d.code, str(d.level), d.line) for d in diags] == [("GP008", "warning", 2)]
    assert caught == [] and capfd.readouterr().err == ""


# --- bounds: depth, values, bytes, non-regular files --------------------------------------


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("[" * 10_000, "GP005"),
        ("a: " + "[" * 10_000 + "]" * 10_000 + "\n", "GP005"),
        ("a:\n" + "".join(f"{' ' * (2 * i + 2)}k{i}:\n" for i in range(40)), "GP005"),
        ("[" + "1," * 300_000 + "1]", "GP006"),
        ("".join(f"k{i}: {i}\n" for i in range(25_000)), "GP006"),
    ],
    ids=["unclosed-brackets", "closed-brackets", "block-mappings", "flat-list", "many-keys"],
)
def test_deep_and_wide_documents_stop_early(text: str, code: str) -> None:
    start = time.perf_counter()
    doc, diags = parse_text(text, "f.yaml")
    elapsed = time.perf_counter() - start
    assert doc is None and [d.code for d in diags] == [code]
    assert elapsed < 2.0, elapsed  # before the bounds: 3 to 40 s


def test_size_is_read_with_a_limit(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("# padding\n" * (MAX_SPEC_BYTES // 10 + 1), encoding="utf-8")
    assert [d.code for d in load_file(big)[1]] == ["GP004"]
    fits = tmp_path / "fits.yaml"
    fits.write_text("a: 1\n" + "#" * (MAX_SPEC_BYTES - 10) + "\n", encoding="utf-8")
    assert load_file(fits)[1] == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifos_and_devices_are_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # nobody writes: opening it for reading would block forever
    for path in (fifo, Path("/dev/zero"), Path("/dev/null")):
        if not path.exists():
            continue
        doc, diags = load_file(path)
        assert doc is None and [(d.code, d.line) for d in diags] == [("GP001", 1)]
        assert "not a regular file" in diags[0].message


def _all_yaml() -> list[Path]:
    root = Path(__file__).resolve().parent.parent
    found = [root / "platform" / "platform.yaml", *sorted((root / "stacks").glob("*.yaml"))]
    found += sorted((root / "tests" / "cases").glob("*/*/*.yaml"))
    found += sorted((root / "tests" / "fixtures").glob("*.yaml"))
    return found


def test_libyaml_and_pure_loaders_build_the_same_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path (libyaml's composer, ruamel's constructor) must be invisible: same data,
    same positions, same diagnostics as ruamel's pure round-trip loader, on every YAML here."""
    from gpuplat.spec import construct

    fast_used = 0
    for path in _all_yaml():
        text = path.read_text(encoding="utf-8", errors="replace")
        fast_used += construct._fast(text)[0]  # pyright: ignore[reportPrivateUsage]
        fast = parse_text(text, path.name)
        with monkeypatch.context() as m:
            m.setattr(construct, "_fast", lambda _text: (False, None))
            pure = parse_text(text, path.name)
        assert fast[1] == pure[1], path
        assert (fast[0] is None) == (pure[0] is None), path
        if fast[0] is not None and pure[0] is not None:
            assert fast[0].data == pure[0].data and fast[0].pos == pure[0].pos, path
    assert fast_used > 50  # libyaml is installed here; otherwise this compares the pure path with itself
