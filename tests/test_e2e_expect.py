"""The e2e suite's expectations from the spec (e2e/expect.py), the order it runs the journeys'
jobs in (e2e/journeys.py), how it judges a placement and an admission refusal, and the report's
states. Pure Python: no cluster."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from e2e import expect, journeys, quota, report, shapes
from e2e.expect import HOSTNAME, REQUIRED_TOPOLOGY, RUNS, WAITS, Slot
from e2e.kwokstages import HOLD
from e2e.report import Journey, Report
from e2e.scenarios import refused_by_admission
from e2e.stack import ROOT, Target
from gpuplat.model import SharingMode
from tests.support_canned import Canned
from tests.support_verify import objects, recorded

KUBERNETES = Target("kubernetes-example", "dev", ROOT / "tests" / "fixtures" / "kubernetes_example.yaml")
ONPREM = Target("onprem", "dev", ROOT / "e2e" / "specs" / "onprem.yaml")
BLOCK, LEAF = "topology.example.com/block", "topology.example.com/leaf"


def slot(**changes: Any) -> Slot:
    base = Slot("t", "p", "nvidia.com/gpu", 1, 8, 4, 16, SharingMode.EXCLUSIVE, 32, "")
    return dataclasses.replace(base, **changes)


def by_name(found: list[shapes.Shape]) -> dict[str, shapes.Shape]:
    return {s.name: s for s in found}


# ---- the spec's journeys and numbers ------------------------------------------------------------


def test_every_tenant_pool_and_unit_the_spec_allows_is_a_slot() -> None:
    found = {(s.tenant, s.pool, s.resource) for s in expect.slots(expect.spec_model(KUBERNETES))}
    assert found == {("foundation-models", "train", "nvidia.com/gpu"),
                     ("applied-research", "infer", "nvidia.com/mig-3g.40gb"),
                     ("applied-research", "infer", "nvidia.com/mig-2g.20gb"),
                     ("applied-research", "infer", "nvidia.com/mig-1g.10gb"),
                     ("applied-research", "lab", "nvidia.com/gpu.fractional")}


def test_reach_is_the_proportional_share_plus_what_soft_tenants_lend() -> None:
    found = {(s.tenant, s.pool, s.resource): s for s in expect.slots(expect.spec_model(ONPREM))}
    # pretrain and sim (hard, 24 + 8 GPUs) split their only pool (4 x 8) and lend nothing.
    # research (soft, 16 over a100 16 / shared 8 / notebooks 8): 8 of a100, and product
    # (soft, 12 over a100 16 / shared 8 / vgpu 8) lends its 6 there: 14. product on a100: its 6
    # + research's 8, at most its own 12.
    assert found[("pretrain", "dgx", "nvidia.com/gpu")].reach == 24
    assert found[("sim", "dgx", "nvidia.com/gpu")].reach == 8
    assert found[("research", "a100", "nvidia.com/mig-1g.10gb")].reach == 14
    assert found[("product", "a100", "nvidia.com/mig-1g.10gb")].reach == 12
    assert found[("research", "a100", "nvidia.com/mig-1g.10gb")].per_gpu == 2
    assert found[("pretrain", "dgx", "nvidia.com/gpu")].topology == (BLOCK, LEAF, HOSTNAME)
    assert found[("research", "a100", "nvidia.com/mig-1g.10gb")].topology == ()


def test_a_pool_promised_more_than_it_holds_leaves_every_reach_open(tmp_path: Path) -> None:
    spec = (ROOT / "e2e" / "specs" / "onprem.yaml").read_text()
    # product's 24 GPUs over a100 (16), shared (8) and vgpu (8): 12 of a100, beside research's 8.
    crowded = tmp_path / "crowded.yaml"
    crowded.write_text(spec.replace("{name: product, gpus: 12,", "{name: product, gpus: 24,"))
    model = expect.spec_model(Target("crowded", "dev", crowded))
    found = expect.slots(model)
    assert found and all(s.reach is None and "a100 (20 GPUs rounded up of 16)" in s.why for s in found)


def test_an_aws_pool_of_several_markets_leaves_its_reach_open_and_one_of_one_market_fixes_it() -> None:
    """dev's train and dev pools have two and three markets, each a flavor the procurement split
    sizes; infer has only on-demand, which holds all its nodes.max, as a pool does on kubernetes."""
    found = expect.slots(expect.spec_model(Target("dev", "dev")))
    several = [s for s in found if s.pool != "infer"]
    assert several and all(s.reach is None and "markets" in s.why for s in several)
    # infer: 2 x 8 GPUs; research (hard, 16 over train 32 + infer 16) 5.33 -> 5 plus the 2 soft product
    # lends (8 over train, infer and dev: 64 GPUs); product 2, as hard research lends nothing.
    assert {(s.tenant, s.reach) for s in found if s.pool == "infer"} == {("research", 7), ("product", 2)}


@pytest.mark.parametrize("which, target", [("kubernetes", KUBERNETES), ("dev", Target("dev", "dev"))])
def test_namespace_ceilings_from_the_spec_are_what_the_emitted_quota_holds(which: str, target: Target) -> None:
    """A second opinion, not the expectation: the suite asks the API server; this catches the
    spec's rule and the component drifting apart before a cluster runs."""
    emitted = {q["metadata"]["namespace"]: {k.removeprefix("requests."): int(v) for k, v in q["spec"]["hard"].items()
                                            if k.startswith("requests.nvidia.com/")}
               for q in objects(recorded(which)[2], "ResourceQuota")}
    spec = expect.namespace_ceilings(expect.spec_model(target))
    assert spec == {t: {r: n for r, n in emitted[t].items() if n} for t in spec}


@pytest.mark.parametrize("which, target", [("kubernetes", KUBERNETES), ("prod", Target("prod", "prod"))])
def test_floor_sizes_from_the_spec_are_the_emitted_floors(which: str, target: Target) -> None:
    """As above, a second opinion: the spec's nodes.min (none on a spot-only pool) is what the
    stack emits as each pool's floor."""
    deployments = objects(recorded(which)[2], "Deployment")
    floors = [d for d in deployments if d["metadata"]["name"].startswith("capacity-floor-")]
    emitted = {d["metadata"]["labels"]["gpuplat.dev/pool"]: int(d["spec"]["replicas"]) for d in floors}
    sizes = {pool: n for pool, (n, _) in expect.floor_sizes(expect.spec_model(target)).items()}
    assert sizes == {pool: emitted.get(pool, 0) for pool in sizes}


def test_a_spot_only_aws_pool_keeps_no_floor() -> None:
    sizes = expect.floor_sizes(expect.spec_model(Target("coverage", "dev", ROOT / "e2e" / "specs" / "coverage.yaml")))
    assert sizes["bursty"][0] == 0 and "spot only" in sizes["bursty"][1]
    assert sizes["base"] == (1, "nodes.min of pool base")


@pytest.mark.parametrize("which, target", [("kubernetes", KUBERNETES), ("prod", Target("prod", "prod")),
                                           ("dev", Target("dev", "dev")), ("staging", Target("staging", "staging"))])
def test_kueues_ceilings_over_the_emitted_queues_lie_within_the_specs_bounds(which: str, target: Target) -> None:
    resources = recorded(which)[2]
    queues = [r["inputs"] for r in resources if r["type"] == quota.CLUSTER_QUEUE]
    flavors = [r["inputs"] for r in resources if r["type"] == quota.FLAVOR]
    found = expect.slots(expect.spec_model(target))
    emitted = quota.slots(queues, flavors)
    assert emitted
    assert [s for s in emitted if expect.ceiling_problem(found, s.tenant, s.pool, s.resource, s.ceiling)] == []


def test_preemption_outcomes_come_from_the_spec_not_from_the_emitted_queues() -> None:
    """dev: research is hard (lends nothing), product soft (reclaims what it lent by preemption);
    an emitted queue letting research lend is a defect the reclaim row names, whatever its policy."""
    model = expect.spec_model(Target("dev", "dev"))
    assert expect.reclaim_by_spec(model, "research", "product", "infer")[0] is True
    expected, why = expect.reclaim_by_spec(model, "product", "research", "infer")
    assert expected is None and "hard tenant" in why
    assert expect.reclaim_by_spec(model, "research", "product", "dev")[1] == "the spec does not allow research on dev"
    assert expect.own_class_preempts(model, "product")[0] is True


def test_a_ceiling_off_the_spec_is_named() -> None:
    found = [slot(tenant_gpus=16, reach=12)]
    assert expect.ceiling_problem(found, "t", "p", "nvidia.com/gpu", 14) == ""
    assert "16" in expect.ceiling_problem(found, "t", "p", "nvidia.com/gpu", 17)
    assert "guarantees" in expect.ceiling_problem(found, "t", "p", "nvidia.com/gpu", 11)
    assert "does not allow" in expect.ceiling_problem(found, "u", "p", "nvidia.com/gpu", 1)


# ---- the jobs each journey is tried with --------------------------------------------------------


def test_a_slot_is_tried_with_one_unit_a_node_a_gang_and_one_unit_past_its_quota() -> None:
    found = by_name(shapes.shapes(slot()))
    assert (found["single"].total, found["single"].expect) == (1, RUNS)
    assert (found["node"].pods, found["node"].units, found["node"].expect) == (1, 8, RUNS)
    assert (found["gang"].pods, found["gang"].units, found["gang"].expect) == (2, 8, RUNS)
    over = found["over"]
    assert (over.pods, over.units, over.expect, over.kueue_says) == (17, 1, WAITS, "> maximum capacity")


def test_a_job_past_the_tenants_gpus_waits_and_one_between_the_bounds_is_skipped() -> None:
    small = by_name(shapes.shapes(slot(tenant_gpus=8, reach=8)))
    assert small["gang"].expect == WAITS and small["gang"].kueue_says == "> maximum capacity"
    between = by_name(shapes.shapes(slot(tenant_gpus=16, reach=12)))
    assert between["gang"].skip and "between" in between["gang"].skip
    open_ = by_name(shapes.shapes(slot(reach=None, why="aws markets")))
    assert open_["node"].skip == "aws markets" and not open_["single"].skip


def test_on_aws_a_job_the_spec_leaves_open_runs_or_waits_for_quota_in_kueues_words(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journeys, "SETTLE", 0.0)
    found = by_name(shapes.shapes(slot(reach=None, why="aws markets", aws=True)))
    gang, between = found["gang"], by_name(shapes.shapes(slot(reach=12, aws=True)))["gang"]
    assert (gang.expect, between.expect) == (expect.EITHER, expect.EITHER) and not gang.skip
    assert "aws markets" in gang.why and "between" in between.why
    assert judged(gang, workload_of(gang, True), pods_on(gang, "n0", "n1")) == RUNS
    said = "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor f, 4 more"
    assert judged(gang, workload_of(gang, False, said), [], timeout=5) == WAITS
    assert judged(gang, workload_of(gang, False, "untolerated taint {x}"), []) == "blocked, not for the spec's reason"
    assert judged(gang, workload_of(gang, True), pods_on(gang, "n0")) == "admitted, not placed"
    agrees = [report.agrees(Journey("s", "t", "p", "r", gang.expect, actual, "")) for actual in
              (RUNS, WAITS, "blocked, not for the spec's reason", "admitted, not placed")]
    assert agrees == [True, True, False, False]
    assert found["over"].expect == WAITS  # past the tenant's gpus the spec still decides


def test_an_aws_fabric_pool_gets_a_row_saying_why_no_job_is_placed_by_the_fabric() -> None:
    found = expect.slots(expect.spec_model(Target("prod", "prod")))
    train = next(s for s in found if s.pool == "train")
    (tas,) = [s for s in shapes.shapes(train) if s.name.startswith("tas")]
    assert "not topology-aware" in tas.skip and "autoscales (8-32 nodes, GP352)" in tas.skip


def test_mps_asks_one_unit_per_container_and_hami_one_vgpu_per_gpu() -> None:
    mps = by_name(shapes.shapes(slot(resource="nvidia.com/gpu.shared", per_gpu=4, sharing=SharingMode.MPS)))
    assert "failRequestsGreaterThanOne" in mps["node"].skip
    assert (mps["gang"].pods, mps["gang"].units, mps["gang"].expect) == (2, 1, RUNS)
    # Within one GPU's worth, which `check` guarantees, even where the spec leaves the reach open.
    open_ = by_name(shapes.shapes(slot(resource="nvidia.com/gpu.shared", per_gpu=4, sharing=SharingMode.MPS,
                                       reach=None, why="aws markets")))
    assert open_["gang"].expect == RUNS and not open_["gang"].skip
    hami = by_name(shapes.shapes(slot(resource="nvidia.com/gpu.fractional", per_gpu=10,
                                      sharing=SharingMode.FRACTIONAL, reach=32)))
    assert hami["node"].units == 8


def test_a_job_larger_than_a_leaf_runs_within_a_block_and_waits_within_a_leaf() -> None:
    found = by_name(shapes.shapes(slot(nodes=16, topology=(BLOCK, LEAF, HOSTNAME), tenant_gpus=128, reach=128)))
    leaf, block = found["tas-leaf"], found["tas-block"]
    assert (leaf.pods, leaf.expect, leaf.annotations, leaf.kueue_says) == \
        (5, WAITS, {REQUIRED_TOPOLOGY: LEAF}, "allows to fit only")
    assert (block.pods, block.expect, block.annotations, block.within, block.spans) == \
        (5, RUNS, {REQUIRED_TOPOLOGY: BLOCK}, BLOCK, LEAF)
    assert found["single"].annotations == {expect.PREFERRED_TOPOLOGY: HOSTNAME}


def test_the_sites_nodes_form_several_blocks_of_several_leaves() -> None:
    labels = [shapes.site_labels((BLOCK, LEAF), i, 16) for i in range(16)]
    blocks = {n[BLOCK] for n in labels}
    leaves = {n[LEAF] for n in labels}
    assert len(blocks) == 2 and len(leaves) == 4
    for leaf in leaves:  # each leaf lies in one block
        assert len({n[BLOCK] for n in labels if n[LEAF] == leaf}) == 1
    assert len({n[LEAF] for n in (shapes.site_labels((BLOCK, LEAF), i, 4) for i in range(4))}) == 4


# ---- the order jobs run in and how they are judged ----------------------------------------------


def test_rounds_put_single_jobs_first_then_waiting_ones_and_never_two_larger_ones_on_a_resource() -> None:
    a, b = slot(tenant="a"), slot(tenant="b")
    other = slot(tenant="a", resource="nvidia.com/mig-1g.10gb")
    every = [s for x in (a, b, other) for s in shapes.shapes(x)]
    found = journeys.rounds(every)
    assert {s.name for s in found[0]} == {"single"} and len(found[0]) == 3
    assert all(s.expect == WAITS for s in found[1])
    for batch in found[2:]:
        keys = [(s.slot.pool, s.slot.resource) for s in batch]
        assert len(keys) == len(set(keys))
    ran = sum(len(b) for b in found)
    assert ran == sum(1 for s in every if not s.skip)


def test_a_placement_must_share_the_wider_domain_and_span_the_narrower() -> None:
    nodes = {f"n{i}": shapes.site_labels((BLOCK, LEAF), i, 16) for i in range(16)}

    def pods(*names: str) -> list[dict[str, Any]]:
        return [{"spec": {"nodeName": n}} for n in names]
    assert journeys.placement(pods("n0", "n4"), nodes, BLOCK, LEAF) == ""
    assert journeys.placement(pods("n0", "n1"), nodes, BLOCK, LEAF)  # one leaf: it did not need a block
    assert journeys.placement(pods("n0", "n8"), nodes, BLOCK, LEAF)  # two blocks


def test_a_privileged_pod_counts_as_refused_only_in_pod_securitys_or_the_policys_words() -> None:
    assert refused_by_admission('Error from server (Forbidden): pods "x" is forbidden: violates PodSecurity '
                                '"baseline:latest": host namespaces (hostNetwork=true)') == "Pod Security"
    assert refused_by_admission("Error from server (Forbidden): ValidatingAdmissionPolicy 'p' with binding 'b' "
                                "denied request: containers must not be privileged") == "the tenant admission policy"
    assert refused_by_admission('Error from server (Forbidden): pods is forbidden: User "u" cannot create') == ""
    assert refused_by_admission("exceeded quota: compute") == ""


# ---- the report's states ------------------------------------------------------------------------


def test_the_report_counts_ok_failed_and_skipped_rows_and_a_skip_is_no_failure() -> None:
    report = Report()
    report.scenario("s", "a", True, "fine")
    report.scenario("s", "b", False, "broken")
    report.skip("s", "c", "no spot flavor")
    report.journey(Journey("s", "t", "p", "r", RUNS, WAITS, "Kueue: ...", job="2 pods x 8 (gang)"))
    assert [r.status for r in report.scenarios] == ["ok", "failed", "skipped"]
    assert report.failures == 2
    assert "3 scenarios (1 ok, 1 failed, 1 skipped)" in report.summary()
    merged = Report()
    merged.merge(report.document())
    assert [r.status for r in merged.scenarios] == ["ok", "failed", "skipped"]
    assert merged.journeys[0].job == "2 pods x 8 (gang)" and merged.document()["counts"] == \
        {"ok": 1, "failed": 1, "skipped": 1}


# ---- judging a round's jobs on what the engines show (a cluster of canned objects) --------------


def workload_of(shape: shapes.Shape, admitted: bool, message: str = "") -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True" if admitted else "False", "message": message},
                  {"type": "Admitted", "status": "True" if admitted else "False"}]
    return {"metadata": {"name": f"job-{shape.job_name}", "ownerReferences": [{"kind": "Job", "name": shape.job_name}]},
            "status": {"conditions": conditions,
                       "admission": {"podSetAssignments": [{"flavors": {shape.slot.resource: "f"},
                                                             "count": shape.pods}]}}}


def pods_on(shape: shapes.Shape, *nodes: str) -> list[dict[str, Any]]:
    return [{"metadata": {"name": f"{shape.job_name}-{i}", "labels": {"job-name": shape.job_name}},
             "spec": {"nodeName": node}, "status": {"phase": "Running"}} for i, node in enumerate(nodes)]


def judged(shape: shapes.Shape, workload: dict[str, Any], pods: list[dict[str, Any]], timeout: float = 0) -> str:
    nodes = [{"metadata": {"name": f"n{i}", "labels": shapes.site_labels((BLOCK, LEAF), i, 16)}} for i in range(16)]
    cluster = Canned({("workloads.kueue.x-k8s.io", "t"): [workload], ("pods", "t"): pods, ("nodes", ""): nodes})
    verdict = journeys.judge(cluster, [(shape, "")], timeout)[journeys.key(shape)]  # type: ignore[arg-type]
    return verdict.actual


def test_a_gang_runs_once_kueue_admitted_it_and_every_pod_is_bound() -> None:
    gang = by_name(shapes.shapes(slot()))["gang"]
    assert judged(gang, workload_of(gang, True), pods_on(gang, "n0", "n1")) == RUNS
    assert judged(gang, workload_of(gang, True), pods_on(gang, "n0")) == WAITS  # one pod short at the deadline


def test_a_job_the_spec_holds_waits_only_for_the_specs_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(journeys, "SETTLE", 0.0)
    over = by_name(shapes.shapes(slot()))["over"]
    said = "couldn't assign flavors: insufficient quota for nvidia.com/gpu in flavor f, ... > maximum capacity (16)"
    assert judged(over, workload_of(over, False, said), [], timeout=5) == WAITS
    assert judged(over, workload_of(over, False, "untolerated taint {x}"), []) == "blocked, not for the spec's reason"
    assert judged(over, workload_of(over, True), pods_on(over, *["n0"] * 17)) == RUNS  # the spec is broken: it ran


def test_a_job_within_a_block_must_span_leaves_of_one_block() -> None:
    block = by_name(shapes.shapes(slot(nodes=16, topology=(BLOCK, LEAF, HOSTNAME), tenant_gpus=128,
                                       reach=128)))["tas-block"]
    across = ["n0", "n1", "n2", "n3", "n4"]  # leaves 0 and 1 of block 0
    assert judged(block, workload_of(block, True), pods_on(block, *across)) == RUNS
    assert judged(block, workload_of(block, True), pods_on(block, "n0", "n4", "n8", "n9", "n10")) == \
        "runs, placed otherwise"


def test_a_device_edit_is_caught_only_in_the_schedulers_or_kueues_words() -> None:
    from e2e.devicemutations import refused_for_devices

    assert refused_for_devices("FailedScheduling: 0/20 nodes are available: 4 Insufficient nvidia.com/gpu.shared")
    assert refused_for_devices('Kueue: couldn\'t assign flavors: topology "t" doesn\'t allow to fit any of 1 pod(s)')
    assert not refused_for_devices("the API server refused the job: forbidden")
    assert not refused_for_devices("BOUND to dev-0")
    assert not refused_for_devices("FailedScheduling: 0/20 nodes are available: node(s) had untolerated taint")


def test_a_shapes_job_is_the_tenants_reference_job_at_its_size_and_placement() -> None:
    block = by_name(shapes.shapes(slot(nodes=16, topology=(BLOCK, LEAF, HOSTNAME), tenant_gpus=128,
                                       reach=128)))["tas-block"]
    job = journeys.manifest(block)
    template = job["spec"]["template"]
    assert (job["metadata"]["namespace"], job["spec"]["parallelism"], job["spec"]["completions"]) == ("t", 5, 5)
    assert template["metadata"]["annotations"] == {REQUIRED_TOPOLOGY: BLOCK, HOLD: "true"}  # a gang: held running
    single = journeys.manifest(by_name(shapes.shapes(slot()))["single"])
    assert HOLD not in single["spec"]["template"]["metadata"].get("annotations", {})
    assert template["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "default"}
    assert template["spec"]["nodeSelector"] == {"gpuplat.dev/pool": "p"}
    assert template["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert "tolerations" not in template["spec"]
