"""What `check` accepts, `verify` passes, or `check` says why not: on the benchmark's generated
spec, every journey verify fails is a (tenant, pool) a GP354 warning names."""

from __future__ import annotations

import re
from pathlib import Path

from bench.generate import SIZES, check_spec, generate, write_spec
from bench.run import record
from gpuplat.verify import verify


def test_every_failed_journey_of_the_small_benchmark_spec_is_explained_by_check(tmp_path: Path) -> None:
    size = SIZES["small"]
    compiled = check_spec(write_spec(generate(size.pools, size.tenants, "aws"), tmp_path / "small.yaml"))
    assert compiled.model is not None and compiled.plan is not None
    named: set[tuple[str, str]] = set()
    for d in compiled.diagnostics:
        if d.code == "GP354":
            pool = re.search(r"pool (\S+) holds", d.message)
            assert pool is not None
            named |= {(t, pool[1]) for t in re.findall(r"tenant-\d+", d.message)}
    resources = [r.to_json() for r in record(compiled.model, compiled.plan)]
    failed = {(j.tenant, j.pool) for j in verify(compiled.model, compiled.plan, resources) if not j.ok}
    # Since the generator moved off p5e the small spec strands no tenant; then check must name none.
    # Named ones are shortened after five tenants per pool; the pools must match, and every
    # tenant shown must really fail.
    assert {p for _, p in failed} == {p for _, p in named} and named <= failed


def test_a_pool_a_hard_tenant_holds_whole_strands_a_soft_tenant_and_check_says_so(tmp_path: Path) -> None:
    # The kubernetes example before the e2e suite caught it: applied-research (soft) allowed on
    # train, all of which foundation-models (hard) holds with lendingLimit 0. Kueue kept its job
    # waiting; check must warn, and verify must fail exactly that journey.
    example = Path(__file__).resolve().parent / "fixtures" / "kubernetes_example.yaml"
    text = example.read_text(encoding="utf-8").replace(
        "isolation: soft, pools: [infer, lab]", "isolation: soft, pools: [train, infer, lab]"
    )
    assert "pools: [train, infer, lab]" in text
    compiled = check_spec(write_spec_text(text, tmp_path / "stranded.yaml"))
    assert compiled.model is not None and compiled.plan is not None
    warned = [d.message for d in compiled.diagnostics if d.code == "GP354"]
    assert len(warned) == 1 and "pool train" in warned[0] and "applied-research" in warned[0]
    resources = [r.to_json() for r in record(compiled.model, compiled.plan)]
    failed = {(j.tenant, j.pool) for j in verify(compiled.model, compiled.plan, resources) if not j.ok}
    assert failed == {("applied-research", "train")}


def write_spec_text(text: str, path: Path) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
