"""What `check` accepts, `verify` passes: a tenant `verify` would fail at the quota step (GP354, a
pool where it holds no quota and nobody lends) is a `check` error, so no check-valid spec has a
failing journey."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.generate import SIZES, generate, write_spec
from components import GpuPlatform, GpuPlatformArgs
from gpuplat.compile import Sources, compile_sources
from gpuplat.preflight import PREFLIGHT_SETTING, REPORT
from gpuplat.preview.engine import record_program
from gpuplat.verify import verify

EXAMPLE = Path(__file__).resolve().parent / "fixtures" / "kubernetes_example.yaml"
VALID_CASES = Path(__file__).resolve().parent / "cases" / "valid"


def _failed(path: Path, overlay: Path | None = None) -> set[tuple[str, str]]:
    compiled = compile_sources(Sources(path, overlay))
    assert compiled.ok, [d for d in compiled.diagnostics if d.is_error]
    assert compiled.model is not None and compiled.plan is not None
    model, plan = compiled.model, compiled.plan

    def program() -> None:
        GpuPlatform(model.metadata.name, GpuPlatformArgs(model, plan))

    # Judged as `gpuplat verify` judges: what preflight would refuse (a private endpoint with no
    # stack here to declare the runner's access) does not stop the recording.
    config = {PREFLIGHT_SETTING: REPORT, "aws:region": model.target.region or ""}
    recorded = record_program(program, project="gpu-platform", stack="dev", config=config)
    resources = [r.to_json() for r in recorded]
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


@pytest.mark.parametrize("case", sorted(p.name for p in VALID_CASES.iterdir() if (p / "platform.yaml").is_file()))
def test_every_journey_of_a_golden_valid_case_reaches_a_gpu(case: str) -> None:
    # Found so: a spec of `queueing: none` (warn-topology-without-kueue) had every tenant's
    # ResourceQuota at 0 GPUs, refusing every GPU pod the tenant may run.
    overlay = VALID_CASES / case / "overlay.yaml"
    assert _failed(VALID_CASES / case / "platform.yaml", overlay if overlay.is_file() else None) == set()
