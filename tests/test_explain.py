"""Documentation from the installed package: `gpuplat explain CODE`, `gpuplat docs`, and the
editor schema a project keeps (`gpuplat schema`, GP023). tests/test_wheel.py runs them from a
wheel installed outside this repository."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gpuplat import docs
from gpuplat.cli import main
from gpuplat.commands.explain import rules_page
from gpuplat.input_codes import INPUT_CODES
from gpuplat.plan.codes import PLAN_CODES
from gpuplat.scaffold.source import Origin
from gpuplat.validate.registry import RULES, STACK_RULES
from gpuplat.vocabulary import SCHEMA_PATH

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _emitted_codes() -> set[str]:
    """Every code literal in gpuplat's source, the registries' included."""
    found: set[str] = set()
    for path in (ROOT / "gpuplat").rglob("*.py"):
        found |= set(re.findall(r"[\"'](GP\d{3})[\"']", path.read_text()))
    return found


def test_every_code_gpuplat_reports_can_be_explained_with_a_fix() -> None:
    rows = {r.code: r for r in docs.rule_rows()}
    assert _emitted_codes() <= set(rows)
    assert set(rows) == set(INPUT_CODES) | set(RULES) | set(PLAN_CODES) | set(STACK_RULES)
    assert set(INPUT_CODES) <= _emitted_codes()  # no entry for a code nothing reports
    for row in rows.values():
        assert row.fix and row.rationale and row.name, row.code
        assert row.source == "" or re.fullmatch(r"https://\S+", row.source), row.code


def test_explain_prints_the_rule_why_fix_source_and_an_existing_rules_page(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "GP201"]) == 0
    out = capsys.readouterr().out
    rule = RULES["GP201"]
    assert out.splitlines() == [
        "GP201 mig-profile-valid: error, a semantic rule over the merged spec",
        f"why:    {rule.rationale}",
        f"fix:    {rule.fix}",
        f"source: {rule.source}",
        f"rules:  {ROOT / 'docs' / 'rules.md'}",  # this checkout's page: it exists
    ]
    assert main(["explain", "gp200", "--format", "json"]) == 0  # a platform convention: no source
    document = json.loads(capsys.readouterr().out)
    assert document["source"] is None and document["fix"] == RULES["GP200"].fix and document["level"] == "error"
    assert main(["explain", "101"]) == 0
    assert capsys.readouterr().out.startswith("GP101 unknown-key: error, the schema pass\n")


@pytest.mark.parametrize(("typed", "hint"), [("GP2O1", "did you mean GP201?"), ("GP999", ""), ("hello", "")])
def test_a_code_that_is_none_is_a_usage_error(typed: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["explain", typed])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: gpuplat explain ")
    assert f"error: argument CODE: {typed!r} is not a diagnostic code of gpuplat" in err and hint in err


def test_the_rules_page_is_linked_only_where_it_exists(tmp_path: Path) -> None:
    assert rules_page(Origin("tree", ROOT.as_uri(), ROOT)) == str(ROOT / "docs" / "rules.md")
    assert rules_page(Origin("tree", tmp_path.as_uri(), tmp_path)) is None  # a tree without the page
    pinned = Origin("vcs", f"git+https://github.com/acme/gpuplat.git@{COMMIT}")
    assert rules_page(pinned) == f"https://github.com/acme/gpuplat/blob/{COMMIT}/docs/rules.md"
    assert rules_page(Origin("vcs", "git+https://git.example/gpuplat.git@main")) is None  # no page we know of
    assert rules_page(Origin("archive", "file:///w/gpuplat-1-py3-none-any.whl")) is None
    assert rules_page(Origin("index")) is None


@pytest.mark.parametrize("topic", ["spec", "rules", "catalog"])
def test_docs_prints_the_reference_pages_of_the_package(topic: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", topic]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / f"{topic}.md").read_text()


def _project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    assert main(["init", str(tmp_path / "lab"), "--gpuplat-from", "index"]) == 0
    capsys.readouterr()
    return tmp_path / "lab"


def test_init_writes_the_schema_its_spec_names_and_points_at_real_docs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, capsys)
    spec = (project / "platform" / "platform.yaml").read_text().splitlines()
    assert spec[0] == "# yaml-language-server: $schema=../schemas/platform.schema.json"
    assert (project / "schemas" / "platform.schema.json").read_bytes() == SCHEMA_PATH.read_bytes()
    cited = {m for line in spec if line.startswith("#") for m in re.findall(r"`gpuplat (\w+ ?\w*)", line)}
    assert cited == {"check", "docs spec", "explain CODE"}
    for command in (["docs", "spec"], ["explain", "GP201"]):
        assert main(command) == 0
    capsys.readouterr()


def test_check_warns_while_the_editor_schema_is_another_versions_and_schema_rewrites_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, capsys)
    monkeypatch.chdir(project)
    copy = project / "schemas" / "platform.schema.json"
    older = json.loads(copy.read_text())
    older["$defs"].pop("workload", None)
    copy.write_text(json.dumps(older))  # what an older gpuplat wrote
    assert main(["check"]) == 0
    out = capsys.readouterr().out
    said = "platform/platform.yaml:1:33: warning GP023 $: the editor schema ../schemas/platform.schema.json is not "
    assert said in out
    assert out.endswith("valid (0 error(s), 1 warning(s))\n")
    assert main(["schema"]) == 0
    assert capsys.readouterr().out.startswith("wrote schemas/platform.schema.json, the schema of gpuplat ")
    assert copy.read_bytes() == SCHEMA_PATH.read_bytes()
    assert main(["check"]) == 0
    assert "GP023" not in capsys.readouterr().out
    copy.unlink()
    assert main(["check", "--suppress", "GP023"]) == 0
    assert capsys.readouterr().out.endswith("1 suppressed (GP023))\n")


def test_schema_never_writes_a_file_that_is_not_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = _project(tmp_path, capsys)
    monkeypatch.chdir(project)
    spec = project / "platform" / "platform.yaml"
    theirs = tmp_path / "theirs.json"
    theirs.write_text("{}")
    spec.write_text(spec.read_text().replace("../schemas/platform.schema.json", str(theirs), 1))
    assert main(["schema"]) == 2
    assert "outside the project" in capsys.readouterr().err and theirs.read_text() == "{}"
    other = project / "schemas" / "platform.schema.json"
    other.write_text('{"$id": "https://example.com/another.json"}')
    spec.write_text(spec.read_text().replace(str(theirs), "../schemas/platform.schema.json", 1))
    assert main(["schema"]) == 2
    assert "another schema" in capsys.readouterr().err and "example.com" in other.read_text()


def test_this_repositorys_editor_lines_all_name_the_schema() -> None:
    """Every spec here that carries the line names the one schema (check would warn otherwise)."""
    from gpuplat.editor_schema import named, stale

    for path in [*ROOT.glob("platform/*.yaml"), *ROOT.glob("stacks/*.yaml"), *ROOT.glob("tests/fixtures/*.yaml"),
                 *ROOT.glob("tests/cases/*/*/*.yaml")]:
        if named(path) is not None:
            assert stale(path) is None, path
