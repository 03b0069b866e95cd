"""Organisation policy settings: the config file, required tags, the GPU budget, level overrides,
`gpuplat policy --config`, the CrossGuard pack reading the same settings, and the progress line."""

from __future__ import annotations

import io
import json
import runpy
import time
from pathlib import Path
from typing import Any

import pytest

from gpuplat.cli import main
from gpuplat.policies import REGISTRY
from gpuplat.policies.config import (
    DEFAULT_REQUIRED_TAGS,
    PolicyConfig,
    PolicyConfigError,
    load_config,
    parse_config,
)
from gpuplat.policies.runner import evaluate
from gpuplat.preview import progress as progress_mod
from gpuplat.preview.engine import RecordedResource

ROOT = Path(__file__).resolve().parent.parent
KNOWN = frozenset(p.name for p in REGISTRY)
KMS = "aws:kms/key:Key"
URN = f"urn:pulumi:dev::gpu-platform::{KMS}::k"


def key(tags: dict[str, str]) -> RecordedResource:
    inputs = {"enableKeyRotation": True, "tags": tags}
    return RecordedResource(URN, KMS, "k", None, True, inputs, {})


def found(resources: list[RecordedResource], **kw: Any) -> list[tuple[str, str, str]]:
    """The organisation's rules' findings (a KMS key also meets the stateful ones)."""
    org = ("aws-required-tags", "gpu-budget")
    return [(v.policy, v.level, v.message) for v in evaluate(resources, stack="dev", **kw) if v.policy in org]


def test_defaults_and_a_full_file() -> None:
    assert parse_config({}) == PolicyConfig() and DEFAULT_REQUIRED_TAGS == ("team", "cost-center")
    config = parse_config(
        {
            "all": "advisory",
            "aws-required-tags": {"enforcementLevel": "mandatory", "requiredTagKeys": ["owner"]},
            "gpu-budget": {"monthlyUsd": 1000},
            "kms-key-rotation": "disabled",
        },
        KNOWN,
    )
    assert config.required_tags == ("owner",) and config.gpu_budget_monthly_usd == 1000.0
    assert config.level_of("aws-required-tags", "advisory") == "mandatory"
    assert config.level_of("kms-key-rotation", "mandatory") == "disabled"
    assert config.level_of("s3-tls-only", "mandatory") == "advisory"  # "all"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "expected a JSON object"),
        ({"aws-required-tag": {}}, "aws-required-tag: no such policy"),
        ({"aws-required-tags": {"requiredTagKeys": "team"}}, "distinct non-empty strings"),
        ({"aws-required-tags": {"requiredTagKeys": ["team", "team"]}}, "distinct non-empty strings"),
        ({"aws-required-tags": {"keys": []}}, "unknown property keys"),
        ({"gpu-budget": {"monthlyUsd": -1}}, "expected a number >= 0"),
        ({"gpu-budget": {"monthlyUsd": True}}, "expected a number >= 0"),
        ({"s3-tls-only": "remediate"}, "must be one of advisory, mandatory, disabled"),
    ],
)
def test_invalid_files_say_what_is_wrong(data: Any, message: str) -> None:
    with pytest.raises(PolicyConfigError, match=message):
        parse_config(data, KNOWN)


def test_required_tags_are_mandatory_and_configurable() -> None:
    assert found([key({"team": "a", "cost-center": "1"})], tag_keys={"team"}) == []
    assert found([key({"team": "a", "cost-center": ""})], tag_keys={"team"}) == [
        ("aws-required-tags", "mandatory", "missing required tags: cost-center")
    ]
    owner = PolicyConfig(required_tags=("owner",))
    assert found([key({"owner": "x"})], tag_keys=set[str](), config=owner) == []
    downgraded = PolicyConfig(levels=(("aws-required-tags", "advisory"),))
    assert found([key({})], tag_keys=set[str](), config=downgraded) == [
        ("aws-required-tags", "advisory", "missing required tags: team, cost-center")
    ]
    off = PolicyConfig(levels=(("aws-required-tags", "disabled"),))
    assert found([key({})], tag_keys=set[str](), config=off) == []


def test_gpu_budget_is_advisory_and_fed_by_the_plan() -> None:
    tags = {"team": "a", "cost-center": "1"}
    capped = PolicyConfig(gpu_budget_monthly_usd=100_000)
    assert found([key(tags)], config=capped, gpu_monthly_usd=99_000) == []
    assert found([key(tags)], config=capped, gpu_monthly_usd=123_456.7) == [
        ("gpu-budget", "advisory", "GPU spend at max size $123,457/month exceeds the budget of $100,000/month")
    ]
    assert [m for p, _, m in found([key(tags)], config=capped) if p == "gpu-budget"] == [
        "a GPU budget of $100,000/month is set but the plan has no cost (spec has no procurement)"
    ]
    assert found([key(tags)], gpu_monthly_usd=10**9) == []  # no cap, no finding


def test_cli_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    cap = tmp_path / "org.json"
    cap.write_text(json.dumps({"gpu-budget": {"monthlyUsd": 1}, "aws-required-tags": {"requiredTagKeys": ["owner"]}}))
    registered = progress_mod.total()
    assert main(["policy", "--stack", "dev", "--config", str(cap), "--format", "json"]) == 1
    assert progress_mod.total() - registered > 100  # the monitor counts what the progress line shows
    violations = json.loads(capsys.readouterr().out)["violations"]
    assert {v["policy"] for v in violations} == {"aws-required-tags", "gpu-budget"}
    assert all(v["message"] == "missing required tags: owner" for v in violations if v["policy"] != "gpu-budget")
    assert [v["level"] for v in violations if v["policy"] == "gpu-budget"] == ["advisory"]
    cap.write_text("{")
    assert main(["policy", "--stack", "dev", "--config", str(cap)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_the_shipped_config_is_valid_and_the_default() -> None:
    assert load_config(ROOT / "policy" / "config.json", KNOWN).required_tags == DEFAULT_REQUIRED_TAGS


def test_crossguard_reads_the_same_settings() -> None:
    pack = runpy.run_path(str(ROOT / "policy" / "__main__.py"), run_name="gpuplat_policy_pack")
    built = {p.name: p for p in pack["build_policies"]()}
    assert built["aws-required-tags"].config_schema.properties["requiredTagKeys"]["type"] == "array"
    assert built["gpu-budget"].config_schema.properties["monthlyUsd"]["type"] == "number"
    ctx = pack["_context"]("gpu-budget", {"monthlyUsd": 5.0, "enforcementLevel": "advisory"}, URN)
    assert ctx.config.gpu_budget_monthly_usd == 5.0 and ctx.stack == "dev"
    assert ctx.gpu_monthly_usd is not None and ctx.gpu_monthly_usd > 5.0  # the dev plan's cost
    assert pack["_context"]("aws-required-tags", {}, URN).config.required_tags == DEFAULT_REQUIRED_TAGS


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run(stream: io.StringIO, **kw: Any) -> str:
    with progress_mod.progress("dev", stream=stream, delay=0.0, interval=0.01, **kw):
        for _ in range(3):
            progress_mod.registered()
            time.sleep(0.05)
    return stream.getvalue()


def test_progress_line_on_a_terminal_only() -> None:
    shown = _run(_Tty())
    assert "recording dev: 3 resources registered" in shown and shown.endswith("\r\033[K")
    assert _run(io.StringIO()) == ""  # not a terminal
    assert _run(_Tty(), enabled=False) == ""  # --format json
    assert _run_quick(_Tty()) == ""  # finished before the delay


def _run_quick(stream: io.StringIO) -> str:
    with progress_mod.progress("dev", stream=stream, delay=5.0):
        progress_mod.registered()
    return stream.getvalue()


def test_crossguard_applies_a_configure_request_as_the_engine_sends_it() -> None:
    """The engine sends the config file through Configure; the pack's rules then use it."""
    from google.protobuf import json_format, struct_pb2
    from pulumi.runtime import proto
    from pulumi_policy import EnforcementLevel
    from pulumi_policy.policy import _PolicyAnalyzerServicer  # pyright: ignore[reportPrivateUsage]

    pack = runpy.run_path(str(ROOT / "policy" / "__main__.py"), run_name="gpuplat_policy_pack")
    service = _PolicyAnalyzerServicer("gpuplat", "0.1.0", pack["build_policies"](), EnforcementLevel.ADVISORY)
    settings = json_format.ParseDict({"requiredTagKeys": ["owner"]}, struct_pb2.Struct())
    config = {"aws-required-tags": proto.PolicyConfig(enforcementLevel=proto.MANDATORY, properties=settings)}
    service.Configure(proto.ConfigureAnalyzerRequest(policyConfig=config), None)
    props = json_format.ParseDict({"enableKeyRotation": True, "tags": {"team": "a"}}, struct_pb2.Struct())
    request = proto.AnalyzeRequest(
        type=KMS, properties=props, urn=URN, name="k", options=proto.AnalyzerResourceOptions(protect=True)
    )
    found = {d.policyName: d.message.splitlines()[-1] for d in service.Analyze(request, None).diagnostics}
    assert found["aws-required-tags"] == "missing required tags: owner"  # not the default team, cost-center


def test_the_comment_uses_the_same_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpuplat.commands.preview import policy_result
    from gpuplat.policies import runner

    settings = tmp_path / "config.json"
    settings.write_text(json.dumps({"gpu-budget": {"monthlyUsd": 10}}))
    monkeypatch.setattr(runner, "DEFAULT_CONFIG", settings)
    result = policy_result([key({"team": "a", "cost-center": "1"})], "dev", ("team",), gpu_monthly_usd=11.0)
    assert ("gpu-budget", "advisory") in [(v.policy, v.level) for v in result.violations or []]
    settings.write_text("[")
    assert "policy configuration not readable" in (policy_result([], "dev", gpu_monthly_usd=1.0).note or "")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"policies": {"budget": {"monthlyUsd": NaN}}}', ":1:40: error GP031 $: NaN is not a number JSON allows"),
        ('{"policies": ' + "[" * 100_000, ":1:77: error GP031 $: the JSON nests more than 64 levels deep"),
        ("\x00", ":1:1: error GP030 $: the file is binary"),
    ],
)
def test_a_policy_configuration_past_the_json_limits_is_positioned(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PolicyConfigError) as err:
        load_config(path)
    assert str(err.value).startswith(f"{path}{says}")
