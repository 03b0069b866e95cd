"""What `check` accepts, `verify` passes: a tenant `verify` would fail at the quota step (GP354, a
pool where it holds no quota and nobody lends) is a `check` error, so no check-valid spec has a
failing journey."""

from __future__ import annotations

from pathlib import Path

from bench.generate import SIZES, check_spec, generate, write_spec
from bench.run import record
from gpuplat.compile import Sources, compile_sources
from gpuplat.verify import verify

EXAMPLE = Path(__file__).resolve().parent / "fixtures" / "kubernetes_example.yaml"


def _failed(path: Path) -> set[tuple[str, str]]:
    compiled = check_spec(path)  # raises on any error
    assert compiled.model is not None and compiled.plan is not None
    resources = [r.to_json() for r in record(compiled.model, compiled.plan)]
    return {(j.tenant, j.pool) for j in verify(compiled.model, compiled.plan, resources) if not j.ok}


def test_every_journey_of_the_small_benchmark_spec_reaches_a_gpu(tmp_path: Path) -> None:
    size = SIZES["small"]
    assert _failed(write_spec(generate(size.pools, size.tenants, "aws"), tmp_path / "small.yaml")) == set()


def test_a_pool_a_hard_tenant_holds_whole_strands_a_soft_tenant_and_check_refuses_it(tmp_path: Path) -> None:
    # The kubernetes example before the e2e suite caught it: applied-research (soft) allowed on
    # train, all of which foundation-models (hard) holds with lendingLimit 0. The real Kueue kept
    # its job waiting and verify failed that journey, so check refuses the spec, at train.
    text = EXAMPLE.read_text(encoding="utf-8").replace(
        "isolation: soft, pools: [infer, lab]", "isolation: soft, pools: [train, infer, lab]"
    )
    assert "pools: [train, infer, lab]" in text
    stranded = tmp_path / "stranded.yaml"
    stranded.write_text(text, encoding="utf-8")
    compiled = compile_sources(Sources(stranded, None))
    errors = [d for d in compiled.diagnostics if d.is_error]
    assert [(d.code, d.line) for d in errors] == [("GP354", 15)] and compiled.model is None
    assert "pool train" in errors[0].message and "applied-research" in errors[0].message
    # The fix the message names (train left out of the tenant's pools) is the example as shipped:
    # check passes it and verify follows every journey to a GPU.
    assert _failed(EXAMPLE) == set()
