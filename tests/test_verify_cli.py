"""`gpuplat verify`: text, JSON and markdown output, the CLI's exit codes, and the shipped stacks."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from gpuplat.charts.cache import cache_root
from gpuplat.cli import main
from gpuplat.commands.common import ChartsError, chart_directory
from gpuplat.verify import ChartDirectory, Journey, Step, render_json, render_text, verify
from gpuplat.verify import types as steps_
from tests.support_verify import FIXTURE_CHARTS, SPECS, recorded, run, shared_hot_handle, small_default_limits

# ---- output and the CLI ---------------------------------------------------------------------------


def test_output_formats() -> None:
    journeys = run("dev", small_default_limits)
    document = json.loads(render_json(journeys))
    assert set(document) == {"journeys", "notModelled", "prerequisites"}
    assert any("waitForPodsReady" in item for item in document["notModelled"])
    first = document["journeys"][0]
    assert set(first) == {"tenant", "pool", "resource", "ok", "steps"}
    assert set(first["steps"][0]) == {"step", "ok", "checked", "detail"}
    text = render_text(journeys)
    assert "FAILED research -> train (nvidia.com/gpu)" in text
    assert "    FAIL admission: LimitRange research/container-defaults defaults the cpu limit" in text
    assert f"{len(journeys)} journey(s): 0 ok, {len(journeys)} failed\n" in text
    # The reader learns what verify cannot see, so a pass is not read as a cluster that works.
    assert text.split("failed\n")[-1].startswith("not modelled by verify")
    assert "Karpenter's launch decisions" in text


def test_cli_text_and_json_exit_one_when_a_journey_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuplat.commands.verify as command

    def with_defect(model: Any, plan: Any, resources: list[dict[str, Any]], charts: ChartDirectory) -> list[Journey]:
        small_default_limits(resources)
        return verify(model, plan, resources, charts)

    monkeypatch.setattr(command, "verify", with_defect)  # the real recording, one defect put in
    assert main(["verify", "--stack", "dev"]) == 1
    assert "FAIL admission" in capsys.readouterr().out
    assert main(["verify", "--stack", "dev", "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["journeys"] and not all(j["ok"] for j in document["journeys"])


def test_cli_exit_zero_when_every_journey_reaches_a_gpu(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpuplat.commands.verify as command

    ok = [Journey("t", "p", "nvidia.com/gpu", (Step(steps_.QUEUE, True, "fine"),))]
    monkeypatch.setattr(command, "verify", lambda *_args, **_kw: ok)
    assert main(["verify", "--stack", "dev"]) == 0
    assert "1 journey(s): 1 ok, 0 failed" in capsys.readouterr().out


def test_cli_invalid_spec_prints_diagnostics(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--spec", "tests/cases/invalid/enum-typo/platform.yaml"]) == 1
    assert "GP104" in capsys.readouterr().err
    assert main(["verify", "--spec", "tests/cases/invalid/enum-typo/platform.yaml", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert main(["verify", "--stack", "nope"]) == 2
    capsys.readouterr()
    spec = str(Path("platform/platform.yaml").resolve())
    with monkeypatch.context() as elsewhere:  # a valid spec, but no Pulumi program to record
        elsewhere.chdir(tmp_path)
        assert main(["verify", "--spec", spec, "--overlay", ""]) == 2
    assert "no Pulumi.yaml in" in capsys.readouterr().err


def test_cli_without_helm_python(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuplat.verify import render

    render._render_cached.cache_clear()
    monkeypatch.setitem(sys.modules, "helm_python", None)  # `import helm_python` raises ImportError
    assert main(["verify", "--stack", "dev", "--charts", str(FIXTURE_CHARTS.root)]) == 2
    assert "needs helm-python-sdk; install it with `pip install 'gpuplat[verify]'`" in capsys.readouterr().err
    render._render_cached.cache_clear()


# ---- --recording FILE ------------------------------------------------------------------------------


def _preview_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    assert main(["preview", "--stack", "dev", "--format", "json"]) == 0
    path = tmp_path / "dev.json"
    path.write_text(capsys.readouterr().out, encoding="utf-8")
    return path


def test_cli_checks_a_recorded_preview_and_its_edits(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _preview_json(capsys, tmp_path)
    assert main(["verify", "--stack", "dev", "--recording", str(path)]) == 0
    assert ", 0 failed" in capsys.readouterr().out
    # A reviewer edits a value Kueue reads: the spot flavor no longer carries the spot toleration.
    document = json.loads(path.read_text(encoding="utf-8"))
    for resource in document["resources"]:
        inputs = resource["inputs"]
        if inputs.get("kind") == "ResourceFlavor" and inputs["metadata"]["name"] == "atlas-train-spot":
            inputs["spec"]["tolerations"] = [t for t in inputs["spec"]["tolerations"] if "spot" not in t["key"]]
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["verify", "--stack", "dev", "--recording", str(path), "--format", "json"]) == 1
    failed = [s for j in json.loads(capsys.readouterr().out)["journeys"] for s in j["steps"] if not s["ok"]]
    assert failed and all("atlas-train-spot" in s["detail"] and "not covered" in s["detail"] for s in failed)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"resources": [', ":1:16: error GP031 $: not JSON: Expecting value"),
        ('{"changes": []}', ':1:1: error GP035 $: expected an object with a "resources" list'),
        ('{"resources": [{"type": "kubernetes:core/v1:Namespace", "inputs": []}]}',
         ":1:67: error GP035 $.resources[0].inputs: expected an object"),
        ('{"resources": [{"inputs": {}}]}', ":1:16: error GP035 $.resources[0].type: expected a string"),
        ("[" * 100_000, ":1:65: error GP031 $: the JSON nests more than 64 levels deep"),
        ("\udcff garbage", ":1:1: error GP030 $: the recording is not UTF-8 text (byte 0)"),
        ('{"resources": [{"type": "t", "inputs": {}, "urn": 1e999}]}', ":1:51: error GP031 $: the number 1e999"),
    ],
)
def test_cli_bad_recording_is_a_positioned_diagnostic(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "rec.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    assert main(["verify", "--stack", "dev", "--recording", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"gpuplat verify: {path}{expected}") and "Traceback" not in err


def test_cli_a_recording_of_another_stack_or_with_a_urn_twice_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _preview_json(capsys, tmp_path)  # dev's
    assert main(["verify", "--stack", "prod", "--recording", str(path)]) == 1
    err = capsys.readouterr().err
    assert "error GP036 $.resources[0].urn: this is a recording of stack 'dev', not of 'prod'" in err
    document = json.loads(path.read_text(encoding="utf-8"))
    document["resources"].append(document["resources"][3])
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    assert main(["verify", "--stack", "dev", "--recording", str(path)]) == 1
    err = capsys.readouterr().err
    last = len(document["resources"]) - 1
    assert f"error GP035 $.resources[{last}].urn: URN {document['resources'][3]['urn']} is also the URN of " \
        "resources[3]; each resource has its own" in err


def test_cli_unreadable_recording_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["verify", "--stack", "dev", "--recording", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["verify", "--stack", "dev", "--recording", str(tmp_path)]) == 2


@pytest.mark.parametrize("which", SPECS)
def test_verify_passes_on_the_shipped_stacks_and_the_kubernetes_example(which: str) -> None:
    journeys = run(which)
    assert all(j.ok for j in journeys), render_text([j for j in journeys if not j.ok])


def test_markdown_section_lists_failed_journeys_and_what_is_missing() -> None:
    from gpuplat.verify.output import render_markdown

    journeys = run("dev", small_default_limits, shared_hot_handle)
    text = render_markdown(journeys)
    assert text.startswith(f"### Verify\n\n0 of {len(journeys)} journey(s) reach a GPU.\n")
    assert "| research | train | `nvidia.com/gpu` |" in text
    assert "admission, volumes |" in text
    assert "**volumes**: hot: PersistentVolume atlas-hot-product shares CSI volumeHandle" in text
    ok = [Journey("t", "p", "r", (Step(steps_.QUEUE, True, "fine"),))]
    assert render_markdown(ok) == "### Verify\n\n1 of 1 journey(s) reach a GPU.\n"


def test_preview_markdown_carries_the_verify_section(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["preview", "--stack", "dev", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "journey(s) reach a GPU." in out.split("### Verify\n\n", 1)[1]
    assert out.index("### Policy") < out.index("### Verify") < out.index("### Platform")


# ---- where the charts come from ------------------------------------------------------------------


def test_without_charts_the_steps_reading_them_are_not_checked_and_not_failures() -> None:
    model, plan, resources = recorded("dev")
    journeys = verify(model, plan, resources)
    assert all(j.ok for j in journeys), render_text([j for j in journeys if not j.ok])
    skipped = {s.step for j in journeys for s in j.unchecked}
    assert skipped == {steps_.DEVICE_PLUGIN, steps_.CAPACITY, steps_.REPAIR}
    text = render_text(journeys)
    assert "    skip device-plugin: flavor " in text
    assert "step(s) not checked (not failures):\n" in text
    assert "    device-plugin: no chart directory to render gpu-operator from (`gpuplat charts pull` fetches it" in text
    document = json.loads(render_json(journeys))
    assert any(s["checked"] is False and s["ok"] for j in document["journeys"] for s in j["steps"])
    with_charts = verify(model, plan, resources, FIXTURE_CHARTS)
    assert all(j.ok and not j.unchecked for j in with_charts)


def test_a_chart_directory_without_one_chart_names_it(tmp_path: Path) -> None:
    model, plan, resources = recorded("kubernetes")
    journeys = verify(model, plan, resources, ChartDirectory(tmp_path))
    details = {s.detail for j in journeys for s in j.unchecked}
    hami = f"no chart hami under {tmp_path} ({tmp_path}/hami/Chart.yaml; `gpuplat charts pull --into {tmp_path}` puts"
    assert any(hami in d for d in details), details
    assert any(f"no chart gpu-operator under {tmp_path}" in d for d in details), details


def test_cli_charts_flag(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["verify", "--stack", "dev", "--charts", str(FIXTURE_CHARTS.root)]) == 0
    out = capsys.readouterr().out
    assert "not checked" not in out and "skip" not in out
    assert main(["verify", "--stack", "dev"]) == 0
    assert "step(s) not checked (not failures)" in capsys.readouterr().out
    assert main(["verify", "--stack", "dev", "--charts", str(tmp_path / "nowhere")]) == 2
    assert f"--charts: {tmp_path / 'nowhere'} is not a directory" in capsys.readouterr().err


def test_the_stack_setting_names_the_chart_directory(tmp_path: Path) -> None:
    (tmp_path / "stacks").mkdir()
    (tmp_path / "charts").mkdir()
    settings = tmp_path / "stacks" / "Pulumi.lab.yaml"
    settings.write_text("config:\n  gpuplat:localCharts: charts\n", encoding="utf-8")
    assert chart_directory("lab", None, tmp_path) == ChartDirectory(tmp_path / "charts")
    assert chart_directory("lab", str(FIXTURE_CHARTS.root), tmp_path) == FIXTURE_CHARTS  # the flag wins
    # Neither: the chart cache `gpuplat charts pull` fills.
    assert chart_directory("other", None, tmp_path) == ChartDirectory(cache_root(), cache=True)
    settings.write_text("config:\n  gpuplat:localCharts: gone\n", encoding="utf-8")
    with pytest.raises(ChartsError, match="stack setting gpuplat:localCharts of stack lab: gone is not a directory"):
        chart_directory("lab", None, tmp_path)
