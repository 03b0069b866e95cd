"""Preflight: a stack the account would refuse stops before anything exists, with the sentence.

The facts are files these tests write, as `gpuplat preflight --save` would; the same checks run in
the program at start (so a preview fed the facts registers nothing) and in `gpuplat preflight`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpuplat.cli import main
from gpuplat.compile import compile_stack
from gpuplat.model import Market
from gpuplat.preflight.checks import preflight_problems
from gpuplat.preflight.facts import FactsError, facts_from_json, load_facts
from gpuplat.preflight.quotas import ELASTIC_IPS, LUSTRE_STORAGE, ON_DEMAND, SPOT, needed, spot_group
from tests.support_aws import ROOT, compile_model, overlay_with, record

ZONES = {"us-east-1a": "use1-az4", "us-east-1b": "use1-az6", "us-east-1c": "use1-az1"}
ALL_TYPES = ("p5.48xlarge", "g6e.12xlarge", "g6.12xlarge", "p4d.24xlarge")


def _facts(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "region": "us-east-1",
        "readAt": "2026-12-03T12:00:00Z",
        "zones": ZONES,
        "offerings": {t: sorted(ZONES) for t in ALL_TYPES},
        "eksVersions": ["1.33", "1.34", "1.35", "1.36"],
        "capacityBlocks": [],
        "quotas": {},
    }
    doc.update(changes)
    return doc


def _write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_prod_at_nodes_max_needs_these_quotas() -> None:
    model, plan = compile_model("prod")
    need = needed(model, plan)
    # train 12 reserved (ODCRs) + 10 on-demand, infer 4 + 4: 30 p5.48xlarge (192 vCPUs), and
    # batch's 4 on-demand p4d.24xlarge (96): every P node that is not spot, all at nodes.max.
    assert need[ON_DEMAND["p"]] == 30 * 192 + 4 * 96
    assert need[ON_DEMAND["standard"]] == 32  # the system node group at its max (4 x m7i.2xlarge)
    assert need[ELASTIC_IPS] == 3  # one NAT gateway per zone
    assert need[LUSTRE_STORAGE] == plan.storage.hot.capacity_gib + (  # type: ignore[union-attr]
        plan.storage.hot.standard.capacity_gib if plan.storage.hot and plan.storage.hot.standard else 0
    )
    # train's and dev's spot nodes: p5.48xlarge counts against the P5 spot quota, not P4/P3/P2's;
    # batch's p4d.24xlarge against P4/P3/P2's.
    spot = plan.pool("train").markets[Market.SPOT].nodes
    assert need[SPOT["p5"]] == spot * 192
    assert need[SPOT["p"]] == plan.pool("batch").markets[Market.SPOT].nodes * 96
    assert SPOT["g"] in need


@pytest.mark.parametrize(
    ("itype", "group"),
    [
        ("p5.48xlarge", "p5"),
        ("p5e.48xlarge", "p5"),
        ("p5en.48xlarge", "p5"),
        ("p4d.24xlarge", "p"),
        ("p4de.24xlarge", "p"),
        ("p6-b200.48xlarge", None),
        ("g6e.12xlarge", "g"),
        ("m7i.2xlarge", "standard"),
    ],
)
def test_spot_quota_groups_follow_ec2s_split_of_the_p_families(itype: str, group: str | None) -> None:
    assert spot_group(itype) == group


@pytest.mark.parametrize("capacity_tib", [48, 84, 96])
def test_check_warns_where_preflight_would_stop_an_account_at_the_default_lustre_quota(
    tmp_path: Path, capacity_tib: int
) -> None:
    """GP356 at check and preflight with the default quota agree: one rests on the plan's sizes,
    the other on what the stack takes from the account."""
    hot = {"capacityTiB": capacity_tib, "throughputPerTiB": 1000}
    overlay = overlay_with(tmp_path, "prod", storage={"hot": hot})
    compiled = compile_stack("prod", spec=str(ROOT / "platform" / "platform.yaml"), overlay=str(overlay))
    assert compiled.model is not None and compiled.plan is not None, compiled.diagnostics
    warned = any(d.code == "GP356" for d in compiled.diagnostics)
    facts = facts_from_json(_facts(quotas={LUSTRE_STORAGE.key: 100_800}))
    problems = preflight_problems(compiled.model, compiled.plan, facts)
    stopped = any(LUSTRE_STORAGE.name in p for p in problems)
    assert warned == stopped
    assert warned == (capacity_tib >= 84)  # 84,000 + the standard file system's > 100,800 GiB


def test_facts_that_offer_everything_pass() -> None:
    model, plan = compile_model("prod")
    assert preflight_problems(model, plan, facts_from_json(_facts())) == []


def test_every_refusal_is_one_sentence() -> None:
    model, plan = compile_model("prod")
    doc = _facts(
        offerings={**{t: sorted(ZONES) for t in ALL_TYPES}, "p5.48xlarge": ["us-east-1b"]},
        eksVersions=["1.34", "1.35"],
        quotas={ON_DEMAND["p"].key: 2304, ELASTIC_IPS.key: 2, LUSTRE_STORAGE.key: 1200},
    )
    problems = preflight_problems(model, plan, facts_from_json(doc))
    text = "\n".join(problems)
    assert f"pool train: p5.48xlarge is not offered in {plan.fabric_zone}" in text
    assert f"pool infer: p5.48xlarge is not offered in {plan.fabric_zone}" in text
    assert "does not create clusters on Kubernetes 1.36" in text
    assert "'Running On-Demand P instances' in us-east-1 is 2304, and this stack needs 6144" in text
    assert "--quota-code L-417A185B --desired-value 6144" in text
    assert "'EC2-VPC Elastic IPs' in us-east-1 is 2, and this stack needs 3" in text
    assert "Lustre Persistent_2 storage capacity" in text
    assert len(problems) == 6  # infer has reserved nodes in the fabric zone too


def test_the_advice_fits_the_zone_the_type_is_missing_from() -> None:
    """The fabric zone is chosen by target.fabricZone; a reservation zone is any target zone."""
    model, plan = compile_model("prod")
    fabric = plan.fabric_zone or ""
    others = sorted(z for z in ZONES if z != fabric)
    doc = _facts(offerings={**{t: sorted(ZONES) for t in ALL_TYPES}, "p5.48xlarge": [fabric]})
    problems = preflight_problems(model, plan, facts_from_json(doc))
    (infer,) = [p for p in problems if p.startswith("pool infer:")]
    assert f"is not offered in {others[0]} (a zone with reserved capacity)" in infer
    assert "List only zones that offer it in target.zones" in infer and "fabricZone" not in infer
    doc = _facts(offerings={**{t: sorted(ZONES) for t in ALL_TYPES}, "p5.48xlarge": others})
    (train,) = [p for p in preflight_problems(model, plan, facts_from_json(doc)) if p.startswith("pool train:")]
    assert f"not offered in {fabric} (the fabric zone)" in train
    assert "Choose a target.fabricZone that offers it" in train


def test_the_warm_tier_zone_must_be_one_s3_express_runs_in() -> None:
    model, plan = compile_model("prod")
    zone = plan.fabric_zone or ""
    problems = preflight_problems(model, plan, facts_from_json(_facts(zones={**ZONES, zone: "use1-az2"})))
    assert any(f"the warm tier's zone {zone} is use1-az2 in this AWS account" in p for p in problems)


def test_facts_of_another_region_are_refused() -> None:
    model, plan = compile_model("prod")
    (problem,) = preflight_problems(model, plan, facts_from_json(_facts(region="us-west-2")))
    assert "read in us-west-2" in problem


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", ":1:1: error GP031 $: not JSON: Expecting value"),
        ("[]", ":1:1: error GP034 $: the document must be an object"),
        ('{"readAt": "x"}', ":1:1: error GP034 $: region must be a string"),
        ('{"region": "us-east-1", "offerings": {"p5.48xlarge": "us-east-1a"}}',
         ':1:54: error GP034 $.offerings["p5.48xlarge"]: must be a list of strings'),
        ('{"region": "us-east-1", "quotas": {"ec2/L-417A185B": "many"}}',
         ':1:54: error GP034 $.quotas["ec2/L-417A185B"]: must be a number'),
        ('{"region": "us-east-1",\n "quotas": {"q": 1' + "0" * 40 + "}}", ":2:18: error GP031 $: the integer of 41"),
        ('{"region": "us-east-1", "quotas": {"q": 1e19}}', ':1:41: error GP034 $.quotas.q: 1e+19 is not within 0'),
        ('{"region": "r", "capacityBlocks": [{"id": "c", "instanceType": "p5.48xlarge", "zone": "z",\n'
         ' "instances": NaN}]}', ":2:15: error GP031 $: NaN is not a number JSON allows"),
        ('{"region": "r", "capacityBlocks": [{"id": "c", "instanceType": "p5.48xlarge", "zone": "z",\n'
         ' "instances": 1e999}]}', ":2:15: error GP031 $: the number 1e999 is beyond the range of a double"),
        ('{"region": "r", "capacityBlocks": [{"id": "c", "instanceType": "p5.48xlarge", "zone": "z",\n'
         ' "instances": 2.5}]}', ':2:15: error GP034 $.capacityBlocks[0].instances: 2.5 is not a whole number'),
        ("[" * 200_000 + "]" * 200_000, ":1:65: error GP031 $: the JSON nests more than 64 levels deep"),
        ("\x00" * 100, ":1:1: error GP030 $: the file is binary"),
    ],
)
def test_bad_facts_files_are_positioned_sentences(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "facts.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FactsError) as err:
        load_facts(path)
    assert str(err.value).startswith(f"{path}{says}")


def test_preflight_command_stops_with_the_sentence_and_saves_the_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    facts = _write(tmp_path, _facts(offerings={"p5.48xlarge": ["us-east-1b"], "g6e.12xlarge": ["us-east-1a"]}))
    saved = tmp_path / "saved.json"
    code = main(["preflight", "--stack", "dev", "--account-facts", str(facts), "--save", str(saved)])
    assert code == 1
    out = capsys.readouterr().out
    assert out.startswith("this stack would stop at preflight:\n")
    assert "pool train: p5.48xlarge is not offered in us-east-1a (the fabric zone)" in out
    assert load_facts(saved) == load_facts(facts)
    assert main(["preflight", "--stack", "dev", "--account-facts", str(_write(tmp_path, _facts()))]) == 0
    assert main(["preflight", "--stack", "dev", "--account-facts", str(tmp_path / "missing.json")]) == 2


def test_an_unwritable_save_path_is_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    facts = _write(tmp_path, _facts())
    unwritable = str(tmp_path / "no" / "f.json")
    assert main(["preflight", "--stack", "dev", "--account-facts", str(facts), "--save", unwritable]) == 2
    assert capsys.readouterr().err.startswith("gpuplat preflight: error: ")


def test_a_kubernetes_stack_has_no_account_to_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = ROOT / "tests" / "cases" / "valid" / "kubernetes-provider" / "platform.yaml"
    monkeypatch.chdir(tmp_path)
    # No Pulumi CLI and no credentials are needed: nothing is read.
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["preflight", "--spec", str(spec)]) == 0
    assert "nothing to check" in capsys.readouterr().out
    assert main(["preflight", "--spec", str(spec), "--save", str(tmp_path / "f.json")]) == 2
    assert "provider is kubernetes" in capsys.readouterr().err
    assert not (tmp_path / "f.json").exists()


def test_a_preview_fed_failing_facts_registers_nothing_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    facts = _write(tmp_path, _facts(offerings={**{t: sorted(ZONES) for t in ALL_TYPES}, "p5.48xlarge": ["us-east-1b"]}))
    assert main(["preview", "--stack", "dev", "--format", "json", "--account-facts", str(facts)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # no resource document: nothing was registered
    assert "this stack would stop at preflight:" in captured.err
    assert "p5.48xlarge is not offered in us-east-1a" in captured.err


def test_a_preview_fed_passing_facts_records_the_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    facts = str(_write(tmp_path, _facts()))
    assert main(["preview", "--stack", "dev", "--format", "json", "--account-facts", facts]) == 0
    assert json.loads(capsys.readouterr().out)["resources"]


def test_capacity_blocks_must_hold_the_reserved_nodes(tmp_path: Path) -> None:
    from tests.test_aws_reserved_and_hygiene import _blocks, _overlay

    model, plan = compile_model("prod", _overlay(tmp_path, "prod", _blocks))
    (use,) = plan.capacity_blocks
    block = {"id": "cr-0123456789abcdef0", "instanceType": use.instance_type, "zone": "us-east-1a", "tags": {}}
    short = facts_from_json(_facts(capacityBlocks=[{**block, "instances": use.nodes - 1}]))
    (problem,) = preflight_problems(model, plan, short)
    assert f"hold {use.nodes - 1} {use.instance_type} instance(s)" in problem
    enough = facts_from_json(_facts(capacityBlocks=[{**block, "instances": use.nodes}]))
    assert preflight_problems(model, plan, enough) == []
    expired = facts_from_json(_facts(capacityBlocks=[{**block, "instances": use.nodes, "state": "expired"}]))
    assert len(preflight_problems(model, plan, expired)) == 1


def test_the_program_reads_the_facts_before_its_first_resource() -> None:
    # The mock account answers offerings and zones; with every type offered, the stack records.
    model, plan = compile_model("dev")
    assert record(model, plan, "dev")


def _block(block_id: str, instances: int, state: str, **tags: str) -> dict[str, Any]:
    return {
        "id": block_id,
        "instanceType": "p5.48xlarge",
        "zone": "us-east-1a",
        "instances": instances,
        "state": state,
        "tags": tags,
    }


@pytest.mark.parametrize(
    ("selector", "blocks", "stops"),
    [
        # Found by tag through the tagging API, then read by id: 4 active instances for 10 nodes.
        (
            {"tags": {"gpuplat-pool": "train"}},
            [
                _block("cr-0aaaaaaaaaaaaaaa1", 4, "active", **{"gpuplat-pool": "train"}),
                _block("cr-0aaaaaaaaaaaaaaa2", 8, "expired", **{"gpuplat-pool": "train"}),
                _block("cr-0aaaaaaaaaaaaaaa3", 8, "scheduled", **{"gpuplat-pool": "infer"}),
            ],
            "selected by gpuplat-pool=train hold 4 p5.48xlarge instance(s)",
        ),
        # A block carrying more tags than the selector is selected too (Karpenter's term matches so).
        (
            {"tags": {"gpuplat-pool": "train"}},
            [
                _block("cr-0aaaaaaaaaaaaaaa1", 4, "active", **{"gpuplat-pool": "train"}),
                _block("cr-0aaaaaaaaaaaaaaa3", 8, "scheduled", **{"gpuplat-pool": "train", "window": "q1"}),
            ],
            None,
        ),
        # An id the account does not hold: the data source fails, the program reads it as no block.
        ({"ids": ["cr-0123456789abcdef0"]}, [], "selected by cr-0123456789abcdef0 hold 0 p5.48xlarge"),
    ],
)
def test_the_program_reads_the_capacity_blocks_its_selectors_find(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    selector: dict[str, Any],
    blocks: list[dict[str, Any]],
    stops: str | None,
) -> None:
    monkeypatch.chdir(ROOT)
    train = {"name": "train", "nodes": {"min": 8, "max": 32}, "reservation": {"kind": "capacity-block", **selector}}
    overlay = overlay_with(tmp_path, "prod", gpuNodePools=[train])
    _, plan = compile_model("prod", overlay)
    assert [use.nodes for use in plan.capacity_blocks] == [10]
    facts = _write(tmp_path, _facts(capacityBlocks=blocks))
    argv = ["preview", "--stack", "prod", "--overlay", str(overlay), "--format", "json", "--account-facts", str(facts)]
    assert main(argv) == (0 if stops is None else 1)
    captured = capsys.readouterr()
    if stops is None:
        assert json.loads(captured.out)["resources"]
    else:
        assert "this stack would stop at preflight:" in captured.err and stops in captured.err


@pytest.mark.parametrize(
    "token",
    ["aws:servicequotas/getServiceQuota:getServiceQuota", "aws:resourcegroupstaggingapi/getResources:getResources"],
)
def test_a_fact_the_role_cannot_read_is_skipped_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, token: str
) -> None:
    """Reading a quota or the tagged blocks can fail (no servicequotas or tag:GetResources
    permission, a code the region lacks): the program goes on without that check, with a warning,
    rather than stop every deploy."""
    import gpuplat.preview._monitor as monitor
    from gpuplat.preview._facts_invokes import FactNotFoundError

    answer = monitor.invoke
    asked: list[dict[str, Any]] = []

    def refusing(called: str, args: dict[str, Any], ctx: Any) -> dict[str, Any]:
        if called == token:
            asked.append(args)
            raise FactNotFoundError(f"AccessDeniedException: not authorized to call {token}")
        return answer(called, args, ctx)

    monkeypatch.setattr(monitor, "invoke", refusing)
    blocks = {"kind": "capacity-block", "tags": {"gpuplat-pool": "train"}}
    overlay = overlay_with(tmp_path, "prod", gpuNodePools=[{"name": "train", "reservation": blocks}])
    model, plan = compile_model("prod", overlay)
    assert record(model, plan, "prod")
    assert asked
    if token.startswith("aws:servicequotas"):
        assert {f"{a['serviceCode']}/{a['quotaCode']}" for a in asked} >= {LUSTRE_STORAGE.key, SPOT["p5"].key}
