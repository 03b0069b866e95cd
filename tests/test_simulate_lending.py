"""Kueue's lending in `gpuplat simulate`, as the ClusterQueues are emitted: a hard tenant lends
none of its quota (`lendingLimit: 0`), so its idle GPUs wait for it; a soft tenant lends them and
takes them back by preemption."""

from __future__ import annotations

import json
from pathlib import Path

from components.kubernetes._quota import resource_groups
from gpuplat.model import Platform
from gpuplat.plan import Plan
from gpuplat.simulate import Options, load_trace, simulate
from gpuplat.simulate.fleet import build_flavors, build_tenants
from gpuplat.simulate.report import render_json, render_text
from gpuplat.simulate.run import replay
from tests.support_simulate import lab_cluster

# Two pools of one 8-GPU node; each tenant's 8 GPUs are split over both (4 + 4). Guests run four
# 4-GPU jobs from 0 for an hour, twice what their own quota holds; research asks 4 GPUs at 1,000 s.
TRACE = """submit,duration,gpus,tenant
0,3600,4,guests
0,3600,4,guests
0,3600,4,guests
0,3600,4,guests
1000,600,4,research
"""


def _cluster(tmp: Path, isolation: str) -> tuple[Platform, Plan]:
    research = f"{{name: research, gpus: 8, isolation: {isolation}}}"
    return lab_cluster(tmp, ("a", "b"), (research, "{name: guests, gpus: 8}"))


def _starts(tmp: Path, isolation: str) -> tuple[list[float], int]:
    model, plan = _cluster(tmp, isolation)
    (tmp / "jobs.csv").write_text(TRACE)
    options = Options(lookahead=1, tenant_map={"guests": "guests", "research": "research"})
    engine = replay(model, plan, load_trace(tmp / "jobs.csv"), options).engine
    return engine.started, engine.preempted


def _lending_limits(model: Platform, plan: Plan, tenant: str) -> set[str | None]:
    """The lendingLimit of each of the tenant's flavors in its emitted ClusterQueue."""
    (group,) = resource_groups(model, next(t for t in model.tenants if t.name == tenant), plan)
    return {quota.get("lendingLimit") for flavor in group["flavors"] for quota in flavor["resources"]}


def test_a_hard_tenants_idle_quota_is_lent_to_no_one(tmp_path: Path) -> None:
    model, plan = _cluster(tmp_path, "hard")
    assert _lending_limits(model, plan, "research") == {"0"}  # what the replay reads
    started, preempted = _starts(tmp_path, "hard")
    # Guests' last two jobs wait for their first two: research's 8 GPUs stay idle for research,
    # which then starts at once, without preempting anyone.
    assert started == [0.0, 0.0, 3600.0, 3600.0, 1000.0] and preempted == 0


def test_a_soft_tenant_lends_its_idle_quota_and_takes_it_back_by_preemption(tmp_path: Path) -> None:
    model, plan = _cluster(tmp_path, "soft")
    assert _lending_limits(model, plan, "research") == {None}
    started, preempted = _starts(tmp_path, "soft")
    # Guests borrow research's idle 8 GPUs; research's job preempts one of them to start.
    assert started == [0.0, 0.0, 0.0, 0.0, 1000.0] and preempted == 1


def test_no_tenant_is_offered_more_than_the_hard_tenants_leave(tmp_path: Path) -> None:
    """The most a tenant can ever hold on a flavor (what the mapping and the unplaceable report read)."""
    for isolation, guests_most in (("hard", 4), ("soft", 8)):
        model, plan = _cluster(tmp_path, isolation)
        flavors = build_flavors(model, plan)
        tenants = {t.name: t for t in build_tenants(model, plan, flavors)}
        assert tenants["guests"].limit == {"a": guests_most, "b": guests_most}
        assert tenants["research"].limit == {"a": 8, "b": 8}


def test_the_output_names_the_tenants_that_lend_nothing(tmp_path: Path) -> None:
    """Why another tenant waits beside idle GPUs is in the text and the JSON."""
    (tmp_path / "jobs.csv").write_text(TRACE)
    options = Options(lookahead=1, tenant_map={"guests": "guests", "research": "research"})
    for isolation, named in (("hard", ["research"]), ("soft", [])):
        model, plan = _cluster(tmp_path, isolation)
        result = simulate(model, plan, load_trace(tmp_path / "jobs.csv"), options)
        assert json.loads(render_json(result))["assumptions"]["tenantsLendingNothing"] == named
        line = "hard tenants, whose idle quota runs no other tenant's jobs (lendingLimit 0): research"
        assert (line in render_text(result)) == bool(named)
