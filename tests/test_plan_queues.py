"""GP233: a tenant cannot need more Kueue flavors for one resource than a ClusterQueue group holds."""

from __future__ import annotations

from pathlib import Path

from gpuplat.compile import Sources, compile_sources


def _spec(pools: int, allow: int | None) -> str:
    lines = [
        "apiVersion: gpuplat/v1",
        "kind: Platform",
        "metadata: {name: wide}",
        "target: {provider: aws, region: eu-west-1, zones: [eu-west-1a, eu-west-1b], kubernetesVersion: '1.35'}",
        "gpuNodePools:",
    ]
    lines += [f"  - {{name: p{i}, instanceType: g5.xlarge, nodes: {{min: 0, max: 1}}}}" for i in range(pools)]
    allow_list = f", pools: [{', '.join(f'p{i}' for i in range(allow))}]" if allow is not None else ""
    # One GPU of quota per pool it may use: a pool without any would strand it there (GP354).
    lines += ["tenants:", f"  - {{name: team, gpus: {pools if allow is None else allow}{allow_list}}}"]
    return "\n".join(lines) + "\n"


def _codes(tmp_path: Path, pools: int, allow: int | None = None) -> list[tuple[str, int]]:
    spec = tmp_path / "platform.yaml"
    spec.write_text(_spec(pools, allow), encoding="utf-8")
    compiled = compile_sources(Sources(spec, None))
    return [(d.code, d.line) for d in compiled.diagnostics if d.is_error]


def test_64_flavors_fit_and_65_do_not(tmp_path: Path) -> None:
    # One on-demand flavor per pool: 64 pools fill a resource group exactly, 65 overflow it.
    assert _codes(tmp_path, 64) == []
    assert _codes(tmp_path, 65) == [("GP233", 72)]  # the tenant's line


def test_an_allow_list_keeps_the_tenant_within_the_limit(tmp_path: Path) -> None:
    assert _codes(tmp_path, 65, allow=10) == []


def _plan_of(tmp_path: Path, tenants: list[str]) -> tuple[list[tuple[str, str, int]], list[tuple[str, int]]]:
    spec = tmp_path / "platform.yaml"
    lines = [*_spec(2, None).splitlines()[:-2], "tenants:", *tenants]
    lines = [line.replace("max: 1", "max: 4") for line in lines]
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    compiled = compile_sources(Sources(spec, None))
    quotas = [(q.tenant, q.flavor, q.gpus) for q in compiled.plan.quotas] if compiled.plan else []
    return quotas, [(d.code, d.line) for d in compiled.diagnostics]


def test_quotas_move_to_where_they_fit(tmp_path: Path) -> None:
    # a may use both pools, b and c only p0: the proportional split puts half of a on p0, where b
    # and c need all four GPUs, so a's share moves to p1 and every guarantee holds. a may still
    # borrow on p0 what c, soft, lends.
    quotas, diagnostics = _plan_of(
        tmp_path,
        [
            "  - {name: a, gpus: 4, isolation: hard, pools: [p0, p1]}",
            "  - {name: b, gpus: 2, isolation: hard, pools: [p0]}",
            "  - {name: c, gpus: 2, pools: [p0]}",
        ],
    )
    assert diagnostics == []
    assert sorted(quotas) == [("a", "p1-on-demand", 4), ("b", "p0-on-demand", 2), ("c", "p0-on-demand", 2)]


def test_a_tenant_stranded_where_nobody_lends_is_an_error(tmp_path: Path) -> None:
    # As above without c: a holds nothing on p0 and b, hard, lends nothing there. Kueue never
    # admits a's jobs on p0 and verify fails that journey, so check refuses the spec, at p0.
    _, diagnostics = _plan_of(
        tmp_path,
        [
            "  - {name: a, gpus: 4, isolation: hard, pools: [p0, p1]}",
            "  - {name: b, gpus: 4, isolation: hard, pools: [p0]}",
        ],
    )
    assert diagnostics == [("GP354", 6)]
    compiled = compile_sources(Sources(tmp_path / "platform.yaml", None))
    assert [d.level.value for d in compiled.diagnostics] == ["error"] and compiled.model is None


def test_hard_guarantees_beyond_a_pool_are_an_error_soft_ones_a_warning(tmp_path: Path) -> None:
    hard = [
        "  - {name: a, gpus: 4, isolation: hard, pools: [p0]}",
        "  - {name: b, gpus: 2, isolation: hard, pools: [p0]}",
    ]
    assert _plan_of(tmp_path, hard)[1] == [("GP234", 10)]
    soft = ["  - {name: a, gpus: 4, isolation: hard, pools: [p0]}", "  - {name: b, gpus: 2, pools: [p0]}"]
    quotas, diagnostics = _plan_of(tmp_path, soft)
    assert diagnostics == [("GP351", 10)]
    # The soft tenant's promise stands (oversubscribed); the hard one is whole.
    assert sorted(quotas) == [("a", "p0-on-demand", 4), ("b", "p0-on-demand", 2)]


def test_a_pool_only_hard_tenants_hold_strands_the_soft_tenants_allowed_on_it(tmp_path: Path) -> None:
    # The hard owner's quota has lendingLimit 0: it is there, and nobody else can use it.
    _, diagnostics = _plan_of(
        tmp_path,
        ["  - {name: a, gpus: 4, isolation: hard, pools: [p0]}", "  - {name: b, gpus: 4, pools: [p0, p1]}"],
    )
    assert ("GP354", 6) in diagnostics


def test_a_hard_tenant_borrows_what_a_soft_one_lends(tmp_path: Path) -> None:
    # a holds nothing on p0 but b, soft, lends its p0 quota: a may borrow it (borrowingLimit > 0).
    quotas, diagnostics = _plan_of(
        tmp_path,
        ["  - {name: a, gpus: 4, isolation: hard, pools: [p0, p1]}", "  - {name: b, gpus: 4, pools: [p0]}"],
    )
    held_on_p0 = {t for t, f, g in quotas if f == "p0-on-demand" and g}
    assert "a" not in held_on_p0 and "b" in held_on_p0
    assert "GP354" not in [code for code, _ in diagnostics]


def test_a_tenant_of_no_gpus_is_told_it_is_admitted_nowhere(tmp_path: Path) -> None:
    # Found by the generated-spec property test: b's ClusterQueue borrows at most its gpus (0)
    # and its ResourceQuota allows 0, so verify fails its journey although a lends on p0.
    _, diagnostics = _plan_of(tmp_path, ["  - {name: a, gpus: 1, pools: [p0]}", "  - {name: b, gpus: 0, pools: [p0]}"])
    assert diagnostics == [("GP354", 6)]


def _stranded_messages(tmp_path: Path, tenants: list[str]) -> list[str]:
    _plan_of(tmp_path, tenants)
    compiled = compile_sources(Sources(tmp_path / "platform.yaml", None))
    return [d.message for d in compiled.diagnostics if d.code == "GP354"]


def test_each_stranded_tenant_is_told_its_own_cause(tmp_path: Path) -> None:
    hard_owner = "  - {name: a, gpus: 4, isolation: hard, pools: [p0]}"
    (unlent,) = _stranded_messages(tmp_path, [hard_owner, "  - {name: b, gpus: 4, pools: [p0, p1]}"])
    assert "for tenant(s) b, which may use it: the quota flow placed their GPUs" in unlent
    assert "gpus: 0" not in unlent
    (no_gpus,) = _stranded_messages(
        tmp_path, ["  - {name: a, gpus: 1, pools: [p0]}", "  - {name: c, gpus: 0, pools: [p0]}"]
    )
    assert "for tenant(s) c, which may use it: they have gpus: 0 and may borrow none" in no_gpus
    assert "lends" not in no_gpus
    (both,) = _stranded_messages(
        tmp_path, [hard_owner, "  - {name: b, gpus: 4, pools: [p0, p1]}", "  - {name: c, gpus: 0, pools: [p0]}"]
    )
    assert "for tenant(s) b, c, which may use it: tenant(s) b: the quota flow placed their GPUs" in both
    assert "; tenant(s) c have gpus: 0 and may borrow none, so Kueue admits none of their jobs on p0" in both


def test_a_small_pool_keeps_one_gpu_of_each_tenant_allowed_on_it(tmp_path: Path) -> None:
    # The proportional split alone gives p1 (1 GPU beside p0's 16) none of a's 4: Kueue would never
    # admit a's jobs on p1, nobody lending there. Every allowed pool gets one GPU first.
    spec = tmp_path / "platform.yaml"
    text = _spec(2, None).replace(
        "p0, instanceType: g5.xlarge, nodes: {min: 0, max: 1}", "p0, instanceType: g5.xlarge, nodes: {min: 0, max: 16}"
    )
    spec.write_text(text.replace("gpus: 2", "gpus: 4"), encoding="utf-8")
    compiled = compile_sources(Sources(spec, None))
    assert [d.code for d in compiled.diagnostics] == [] and compiled.plan is not None
    assert sorted((q.flavor, q.gpus) for q in compiled.plan.quotas) == [("p0-on-demand", 3), ("p1-on-demand", 1)]
