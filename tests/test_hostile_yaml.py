"""Inputs that once crashed, hung or misplaced the loader: each ends in a positioned diagnostic."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from gpuplat.cli import main
from gpuplat.spec import load_file, parse_text

ROOT = Path(__file__).resolve().parent.parent
SPEC = (ROOT / "platform" / "platform.yaml").read_text(encoding="utf-8")


def _errors(text: str) -> list[tuple[str, int]]:
    doc, diags = parse_text(text, "p.yaml")
    assert doc is None
    return [(d.code, d.line) for d in diags if d.is_error]


@pytest.mark.parametrize("version", ["1.3", "1.0", "1.9", "2.0"])
def test_an_unknown_yaml_version_is_a_positioned_syntax_error(version: str) -> None:
    doc, diags = parse_text(f"# head\n%YAML {version}\n---\na: 1\n", "p.yaml")
    assert doc is None and [(d.code, d.line) for d in diags] == [("GP002", 2)]
    assert f"%YAML {version}" in diags[0].message or "version" in diags[0].message


def test_known_yaml_versions_still_load() -> None:
    for version in ("1.1", "1.2"):
        doc, diags = parse_text(f"%YAML {version}\n---\na: 1\n", "p.yaml")
        assert doc is not None and doc.data == {"a": 1} and not diags


def test_an_escape_past_the_last_code_point_is_positioned() -> None:
    assert _errors('a: 1\nb: "x\\U00110000"\n') == [("GP002", 2)]


@pytest.mark.parametrize("digits", ["0x" + "f" * 5000, "0o" + "7" * 5000, "0b" + "1" * 5000, "-0x" + "f" * 5000])
def test_huge_non_decimal_integers_are_refused_before_conversion(digits: str) -> None:
    assert _errors(f"a: 1\nb: {digits}\n") == [("GP004", 2)]


def test_a_huge_sexagesimal_integer_of_yaml_1_1_is_refused() -> None:
    assert _errors("%YAML 1.1\n---\nb: " + ":".join(["59"] * 3000) + "\n") == [("GP004", 3)]


def test_duplicate_key_with_an_alias_bomb_is_fast_and_short() -> None:
    levels = ["a: &a [x,x,x,x,x,x,x,x,x,x]"]
    for i, name in enumerate("bcdefgh"):
        prev = "abcdefgh"[i]
        levels.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    text = "\n".join(levels) + "\nh: *h\n"
    start = time.perf_counter()
    doc, diags = parse_text(text, "bomb.yaml")
    assert time.perf_counter() - start < 5
    assert doc is None and [(d.code, d.line) for d in diags] == [("GP002", 9)]
    assert "duplicate key" in diags[0].message and len(diags[0].message) < 200


def test_duplicate_keys_in_nested_and_flow_mappings() -> None:
    assert _errors("a:\n  b: 1\n  c: {d: 1, d: 2}\n") == [("GP002", 3)]
    assert _errors("a: {b: [1]}\nc:\n  - {x: 1}\n  - {x: 1, y: 2, x: 3}\n") == [("GP002", 4)]
    doc, diags = parse_text("a: {b: 1}\nb: {a: 1}\nc: [{a: 1}, {a: 2}]\n", "p.yaml")
    assert doc is not None and not diags  # same key in different mappings


def test_a_nel_in_a_comment_does_not_shift_line_numbers() -> None:
    doc, diags = parse_text("# note\u0085\na: 1\nb: [1, 2\nc: 3\n", "p.yaml")
    assert doc is None and [(d.code, d.line) for d in diags] == [("GP002", 4)]
    doc, diags = parse_text("# note\u2028\na: 1\nb:\n  c: 2\n", "p.yaml")
    assert doc is not None and not diags
    assert doc.pos.locate(("b", "c")).line == 4 and doc.pos.locate(("b", "c")).col == 6


@pytest.mark.parametrize(
    "text",
    [
        'target: {context: "\\uD800"}\n',
        'metadata: {tags: {team: "x\\uDFFFy"}}\n',
        '"k\\uDC00": 1\n',
        'a: ["ok", "\\uDBFF"]\n',
    ],
)
def test_lone_surrogates_anywhere_are_refused_where_written(text: str) -> None:
    doc, diags = parse_text("apiVersion: gpuplat/v1\n" + text, "p.yaml")
    assert doc is None and [(d.code, d.line) for d in diags] == [("GP004", 2)]
    assert "lone surrogate" in diags[0].message
    diags[0].message.encode("utf-8")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_symlink_loop_as_spec_or_overlay_is_a_file_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    os.symlink("loop2", "loop1")
    os.symlink("loop1", "loop2")
    Path("platform.yaml").write_text(SPEC, encoding="utf-8")
    assert load_file(Path("loop1"))[1][0].code == "GP001"
    for args in (["--spec", "loop1"], ["--spec", "platform.yaml", "--overlay", "loop1"]):
        code = main(["check", *args, "--format", "json"])
        out, err = capsys.readouterr()
        assert code == 1 and '"GP001"' in out and "internal error" not in err


def test_more_tenants_than_the_cold_bucket_has_lifecycle_rules_for_is_refused_at_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tenants = "".join(f"  - {{name: t{i}, gpus: 1, priority: normal, isolation: soft}}\n" for i in range(1000))
    head = SPEC.split("\ntenants:")[0]
    path = tmp_path / "platform.yaml"
    path.write_text(f"{head}\ntenants:\n{tenants}", encoding="utf-8")
    code = main(["check", "--spec", str(path)])
    out = capsys.readouterr().out
    line = head.count("\n") + 3  # the first item, under `tenants:`
    assert code == 1 and f"platform.yaml:{line}:3: error GP104 $.tenants: the list must have at most 999" in out
