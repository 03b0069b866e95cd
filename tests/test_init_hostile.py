"""`gpuplat init` with hostile arguments and targets: every value it writes is escaped by ruamel's
emitter, it refuses names no file system takes and targets under a file, and it never writes
through a link out of its directory. Nothing the user had is touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuplat.cli import main
from gpuplat.scaffold import Choices, render
from gpuplat.scaffold.source import Source
from tests.support_cli import INDEX


def _choices(**changes: object) -> Choices:
    base: dict[str, object] = {
        "name": "atlas", "provider": "aws", "region": "us-east-1", "pool": "gpu", "instance_type": "g6e.12xlarge",
        "gpu_model": "L40S-48GB", "gpus_per_node": 4, "nodes_max": 4, "team": "ml-platform",
        "cost_center": "0000", "version": "0.0.0", "source": Source("index", "gpuplat", ""),
    }  # fmt: skip
    return Choices(**{**base, **changes})  # type: ignore[arg-type]


def _loaded(text: str) -> dict[str, object]:
    loaded: dict[str, object] = YAML(typ="safe").load(text)
    return loaded


# Text a flag may carry: quotes, YAML indicators, line breaks, unicode; not NUL (argv cannot).
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cost_center=_TEXT, team=_TEXT, pool=_TEXT, region=_TEXT, name=_TEXT)
def test_every_value_init_writes_reads_back_as_itself(
    cost_center: str, team: str, pool: str, region: str, name: str
) -> None:
    """What the YAML files say is what was given, whatever it holds: no value can add a key."""
    files = render(_choices(cost_center=cost_center, team=team, pool=pool, region=region, name=name))
    spec = _loaded(files["platform/platform.yaml"])
    assert spec["metadata"] == {"name": name, "tags": {"team": team, "cost-center": cost_center}}
    assert spec["target"]["region"] == region  # type: ignore[index]
    assert spec["gpuNodePools"][0]["name"] == pool  # type: ignore[index]
    assert spec["tenants"] == [{"name": team, "gpus": 16, "priority": "normal", "isolation": "soft"}]
    assert _loaded(files["stacks/Pulumi.prod.yaml"])["config"]["aws:region"] == region  # type: ignore[index]
    assert _loaded(files["stacks/dev.yaml"])["tenants"] == [{"name": team, "gpus": 4}]
    project = _loaded(files["Pulumi.yaml"])
    assert project["name"] == "gpu-platform" and name in str(project["description"])


def _init(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["init", *argv, *INDEX])
    return code, capsys.readouterr().err


def test_a_quoted_value_stays_one_tag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _init(capsys, "p", "--cost-center", 'x", owner: "evil')
    # One tag value with characters AWS refuses, not a second tag `owner`: refused, nothing written.
    assert code == 2 and "GP291 $.metadata.tags.cost-center: value 'x\", owner: \"evil'" in err
    assert err.count("GP291") == 1  # the base spec's finding once, not once per stack
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("afile/p", "afile is a file: no directory can be made under it"),
        ("afile", "afile is a file, not a directory"),
        ("a" * 300, "is 300 bytes; a file name is at most 255"),
    ],
)
def test_a_target_no_file_system_takes_is_a_usage_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], target: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("mine\n")
    code, err = _init(capsys, target)
    assert code == 2 and says in err and err.endswith("; nothing written\n") and "Traceback" not in err
    assert sorted(os.listdir(tmp_path)) == ["afile"] and (tmp_path / "afile").read_text() == "mine\n"


def test_a_long_name_is_the_validators_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, err = _init(capsys, "p", "--name", "a" * 300)
    assert code == 2 and "GP104 $.metadata.name" in err and "at most 63 characters" in err
    assert not (tmp_path / "p").exists()


def test_init_follows_no_link_out_of_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    dangling = tmp_path / "p1" / "platform"
    dangling.mkdir(parents=True)
    (dangling / "platform.yaml").symlink_to(outside / "spec.yaml")  # `exists()` is False for it
    code, err = _init(capsys, "p1")
    assert code == 2 and "already has platform/platform.yaml; init never overwrites" in err
    (tmp_path / "p2").mkdir()
    (tmp_path / "p2" / "stacks").symlink_to(outside, target_is_directory=True)
    code, err = _init(capsys, "p2")
    assert code == 2 and "stacks in p2 is a link or a file; init writes only inside the directory" in err
    assert os.listdir(outside) == []  # nothing written through either link
    assert sorted(os.listdir(tmp_path / "p2")) == ["stacks"]
