"""Reference workloads: the papers' formulas, the memory per unit of a pool, the three user
stories, the findings GP236-GP238 and the JSON / text / pull-request renderings."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuplat.cli import main
from gpuplat.compile import Compiled, Sources, compile_sources
from gpuplat.model import GpuNodePool, NodeRange, Sharing, SharingMode
from gpuplat.model.workloads import ReferenceWorkload
from gpuplat.plan.workloads import (
    GIB,
    fits,
    kv_cache_bytes_per_token,
    layer_activation_bytes,
    memory,
    model_state_bytes,
    pool_unit,
)
from gpuplat.render.comment_workloads import workloads_section
from gpuplat.render.plan_workloads import workloads_json

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "tests" / "fixtures" / "workloads_example.yaml"
GB = 1e9  # the papers count decimal gigabytes


# ---- ZeRO (Rajbhandari et al. 2020) ---------------------------------------------------------


def _zero_gb(parameters: float, stage: int, dp: int) -> float:
    return sum(model_state_bytes(parameters, "amp", "adam", stage, dp)) / GB


def test_zero_figure_1_seven_and_a_half_billion_parameters_on_64_gpus() -> None:
    # Figure 1: 7.5B parameters, K = 12, Nd = 64: 120 GB, 31.4 GB, 16.6 GB, 1.9 GB per GPU.
    assert [round(_zero_gb(7.5e9, stage, 64), 1) for stage in range(4)] == [120.0, 31.4, 16.6, 1.9]
    assert _zero_gb(7.5e9, 3, 64) == pytest.approx(1.875)


def test_zero_table_1_on_1024_gpus() -> None:
    # Table 1, 7.5B parameters, Nd = 1024: 30.1, 15.1 and 0.12 GB per GPU for stages 1 to 3.
    per_stage = [_zero_gb(7.5e9, stage, 1024) for stage in (1, 2, 3)]
    assert [round(per_stage[0], 1), round(per_stage[1], 1), round(per_stage[2], 2)] == [30.1, 15.1, 0.12]


def test_zero_mixed_precision_adam_is_16_bytes_per_parameter() -> None:
    # Section 3.1: a 1.5B-parameter GPT-2 needs at least 24 GB for its model states.
    assert _zero_gb(1.5e9, 0, 1) == pytest.approx(24.0)
    weights, gradients, states = model_state_bytes(1.0, "amp", "adam", 0, 1)
    assert (weights, gradients, states) == (2, 2, 12)


def test_zero_stages_shard_states_then_gradients_then_weights() -> None:
    # By hand, 8 GPUs, 1 parameter: stage 1 divides the 12 state bytes, 2 also the 2 gradient
    # bytes, 3 also the 2 weight bytes.
    assert model_state_bytes(1.0, "amp", "adam", 1, 8) == (2, 2, 1.5)
    assert model_state_bytes(1.0, "amp", "adam", 2, 8) == (2, 0.25, 1.5)
    assert model_state_bytes(1.0, "amp", "adam", 3, 8) == (0.25, 0.25, 1.5)


def test_other_precisions_and_sgd() -> None:
    assert model_state_bytes(1.0, "fp32", "adam", 0, 1) == (4, 4, 8)
    assert model_state_bytes(1.0, "bf16", "adam", 0, 1) == (2, 2, 4)
    assert model_state_bytes(1.0, "fp8", "adam", 0, 1) == (2, 2, 12)  # fp8 trains with amp's states
    assert model_state_bytes(1.0, "amp", "sgd", 0, 1) == (2, 2, 8)  # fp32 master + momentum


# ---- activations (Korthikanti et al. 2022) ---------------------------------------------------

GPT3 = {"s": 2048, "h": 12288, "a": 96, "L": 96}  # table 1: 175B
MTNLG = {"s": 2048, "h": 20480, "a": 128, "L": 105}  # table 1: 530B
CONFIGS = [{"s": 2048, "h": 6144, "a": 64}, GPT3, MTNLG, {"s": 2048, "h": 25600, "a": 160}]  # 22B ... 1T


def test_activations_per_layer_is_sbh_34_plus_5as_over_h() -> None:
    s, h, a = GPT3["s"], GPT3["h"], GPT3["a"]
    assert 5 * a * s / h == 80  # the attention term of GPT-3 (section 4.3)
    assert layer_activation_bytes(s, 1, h, a) == s * h * (34 + 80)
    # By hand: 2048 x 12288 x 114 bytes per layer, x 96 layers = 275.4 GB for one sequence.
    assert layer_activation_bytes(s, 1, h, a) * GPT3["L"] / GB == pytest.approx(275.4, abs=0.05)


def test_selective_recomputation_saves_70_and_65_percent() -> None:
    # Section 4.3: dropping the 5as/h attention terms saves 70 % of GPT-3's activation memory and
    # 65 % of MT-NLG's.
    for config, percent in ((GPT3, 70), (MTNLG, 65)):
        full = layer_activation_bytes(config["s"], 1, config["h"], config["a"])
        selective = config["s"] * config["h"] * 34
        assert round(100 * (1 - selective / full)) == percent


def test_sequence_parallel_and_selective_recompute_cut_memory_about_5x() -> None:
    # Abstract and figure 7: with t = 8, sequence parallelism and selective recomputation need
    # about a fifth of tensor parallelism's activations, sbh(10 + 24/t + 5as/ht) vs 34sbh/t.
    for c in CONFIGS:
        baseline = layer_activation_bytes(c["s"], 1, c["h"], c["a"], t=8)
        both = c["s"] * c["h"] * 34 / 8
        assert 4.9 < baseline / both < 6.3
        assert layer_activation_bytes(c["s"], 1, c["h"], c["a"], t=8, sequence_parallel=True) == pytest.approx(
            layer_activation_bytes(c["s"], 1, c["h"], c["a"]) / 8
        )


def _workload(**overrides: Any) -> ReferenceWorkload:
    fields: dict[str, Any] = {
        "name": "w",
        "kind": "training",
        "pool": "p",
        "gpus": 1,
        "parameters": 6.74e9,
        "precision": "amp",
        "layers": 32,
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 32,
        "sequence_length": 4096,
    }
    return ReferenceWorkload(**(fields | overrides))


def test_full_recomputation_keeps_2sbh_per_layer_plus_one_layer() -> None:
    w = _workload(gradient_checkpointing=True)
    s, h = 4096, 4096
    one_layer = s * h * (34 + 5 * 32 * s / h)
    assert memory(w).activations * GIB == 2 * s * h * 32 + one_layer
    assert memory(_workload()).activations * GIB == one_layer * 32
    # fp32 stores 32-bit activations: twice the bytes.
    assert memory(_workload(precision="fp32")).activations == 2 * memory(_workload()).activations


def test_flash_attention_drops_the_attention_term() -> None:
    # FlashAttention stores no s x s scores: Korthikanti's 34 sbh per layer remain (section 4.3's
    # selective recomputation count), with or without full recomputation.
    s, h = 4096, 4096
    assert memory(_workload(flash_attention=True)).activations * GIB == 32 * s * h * 34
    both = _workload(flash_attention=True, gradient_checkpointing=True)
    assert memory(both).activations * GIB == 2 * s * h * 32 + s * h * 34


def test_a_workload_fits_in_90_percent_of_the_unit() -> None:
    unit = pool_unit(_pool(SharingMode.EXCLUSIVE))
    assert unit.usable_gib == pytest.approx(72)
    serve = _workload(kind="inference", precision="fp8", gpus=1, context_length=1)
    for gib, fit in ((71.9, True), (72.1, False)):
        w = serve.but(parameters=gib * GIB - kv_cache_bytes_per_token(32, 4096, 32, 32, 1))
        assert fits(memory(w), unit) is fit


# ---- inference -------------------------------------------------------------------------------


def test_kv_cache_opt_13b_is_800_kb_per_token() -> None:
    # Kwon et al. 2023 (vLLM), section 3: OPT-13B, 2 x 5120 x 40 layers x 2 bytes = 800 KB a token,
    # 1.6 GB for a 2048-token request.
    per_token = kv_cache_bytes_per_token(40, 5120, 40, 40, 2)
    assert per_token == 819_200 == 800 * 1024
    assert round(per_token * 2048 / GIB, 1) == 1.6


def test_grouped_query_attention_shrinks_the_kv_cache() -> None:
    # Llama 2 70B: 80 layers, h 8192, 64 heads sharing 8 KV heads: 320 KiB a token in 16 bits.
    assert kv_cache_bytes_per_token(80, 8192, 64, 8, 2) == 320 * 1024


def test_inference_weights_and_cache_split_over_the_replica() -> None:
    w = _workload(kind="inference", precision="fp8", gpus=2, batch=4, context_length=1000, kv_heads=8)
    m = memory(w)
    assert m.weights * GIB == pytest.approx(6.74e9 * 1 / 2)
    assert m.kv_cache * GIB == pytest.approx(2 * 32 * 4096 * 8 / 32 * 1 * 4 * 1000 / 2)
    assert m.gradients == m.optimizer == m.activations == 0


# ---- memory per unit of a pool ---------------------------------------------------------------


def _pool(mode: SharingMode, **sharing: Any) -> GpuNodePool:
    return GpuNodePool(
        "p", "p5.48xlarge", "H100-SXM-80GB", 8, {}, None, NodeRange(0, 2), Sharing(mode, **sharing), False, (), {}, ()
    )


def test_units_whole_gpu_mig_instance_and_shares() -> None:
    assert pool_unit(_pool(SharingMode.EXCLUSIVE)).memory_gib == 80
    mig = pool_unit(_pool(SharingMode.MIG, profile="all-1g.10gb"))
    assert (mig.memory_gib, mig.per_node, mig.profile) == (10, 56, "1g.10gb")
    # A custom layout: a job gets the largest instance the layout carries.
    layout = pool_unit(_pool(SharingMode.MIG, layout={"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}))
    assert (layout.memory_gib, layout.per_node) == (40, 8)
    assert pool_unit(_pool(SharingMode.MIG, profile="all-disabled")).memory_gib == 80
    assert pool_unit(_pool(SharingMode.FRACTIONAL, replicas=4)).memory_gib == 20
    assert pool_unit(_pool(SharingMode.TIME_SLICING, replicas=8)).memory_gib == 10


# ---- the user stories, through the whole pipeline --------------------------------------------


def _compile(tmp_path: Path, workloads: str, storage: str | None = None) -> Compiled:
    text = EXAMPLE.read_text(encoding="utf-8")
    text = text[: text.index("workloads:")] + "workloads:\n" + workloads
    if storage is not None:
        text = text.replace("  hot:  {capacityTiB: 48, throughputPerTiB: 1000}", storage)
    spec = tmp_path / "platform.yaml"
    spec.write_text(text, encoding="utf-8")
    return compile_sources(Sources(spec, None))


def _errors(compiled: Compiled) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in compiled.diagnostics if d.is_error]


FINETUNE_7B = """\
  - {name: llama-7b-finetune, kind: training, pool: infer, gpus: 1, parameters: 6.74e9, precision: amp,
     layers: 32, hidden: 4096, heads: 32, sequenceLength: 4096}
"""


def test_story_7b_finetune_on_a_mig_slice_names_what_would_fit(tmp_path: Path) -> None:
    [(code, message)] = _errors(_compile(tmp_path, FINETUNE_7B))
    assert code == "GP236"
    # 6.74e9 x 16 bytes of model states and 32 layers of sbh(34 + 5as/h) activations.
    assert "needs 197.4 GiB per 1g.10gb MIG instance" in message
    assert "activations 97.0" in message and "one holds 10 GiB, 9.0 usable (90 %), on pool infer" in message
    # On the pool: only the whole-GPU profile with pure bf16 states, and FlashAttention or
    # checkpointing for the activations.
    assert (
        "it would fit with flashAttention: true, precision: bf16, pool infer sharing.profile: all-7g.80gb "
        "(67.2 of 72.0 usable GiB); or with gradientCheckpointing: true, precision: bf16, pool infer "
        "sharing.profile: all-7g.80gb (54.2 of 72.0 usable GiB)"
    ) in message
    # Elsewhere: ZeRO over three whole H100s of the train pool, mixed precision kept.
    assert message.endswith(
        "or with pool: train, flashAttention: true, sharding: zero1, gpus: 3 (67.2 of 72.0 usable GiB)"
    )


def test_story_70b_pretrain_on_256_h100s_fits_with_zero3_and_checkpointing(tmp_path: Path) -> None:
    compiled = compile_sources(Sources(EXAMPLE, None))
    assert compiled.plan is not None and not _errors(compiled)
    pretrain = compiled.plan.workloads[0]
    assert pretrain.fits and pretrain.unit.memory_gib == 80
    # 70.6e9 x 16 B / 256 GPUs of model states; 2sbhL + one layer of activations.
    assert pretrain.memory.states == pytest.approx(70.6e9 * 16 / 256 / GIB)
    s, h = 4096, 8192
    assert pretrain.memory.activations * GIB == 2 * s * h * 80 + s * h * (34 + 5 * 64 * s / h)
    assert pretrain.without_checkpointing is not None and not pretrain.without_checkpointing.fits
    assert pretrain.without_checkpointing.max_micro_batch == 0 and pretrain.max_micro_batch == 6
    assert pretrain.without_amp.memory.total > pretrain.memory.total  # AMP saves memory ...
    assert pretrain.without_amp.max_micro_batch == 3  # ... and doubles the batch that fits
    # Checkpoint: 14 bytes a parameter (16-bit weights + fp32 master and moments) at 48,000 MB/s.
    assert pretrain.checkpoint_gib == pytest.approx(70.6e9 * 14 / GIB)
    assert pretrain.checkpoint_write_seconds == pytest.approx(70.6e9 * 14 / 48_000e6)
    # The hot tier's times now come from the workloads, not from storage.workload.
    hot = compiled.plan.storage.hot
    assert hot is not None and hot.checkpoint_write_seconds == pretrain.checkpoint_write_seconds


def test_story_70b_pretrain_without_sharding_names_zero_and_checkpointing(tmp_path: Path) -> None:
    text = """\
  - {name: pretrain, kind: training, pool: train, gpus: 256, parameters: 70.6e9, precision: amp,
     layers: 80, hidden: 8192, heads: 64, sequenceLength: 4096}
"""
    [(code, message)] = _errors(_compile(tmp_path, text))
    assert code == "GP236"
    assert "it would fit with gradientCheckpointing: true, sharding: zero3" in message


def test_story_70b_fp8_inference_service(tmp_path: Path) -> None:
    compiled = compile_sources(Sources(EXAMPLE, None))
    assert compiled.plan is not None
    serve = compiled.plan.workloads[1]
    assert serve.fits and serve.without_checkpointing is None and serve.checkpoint_gib is None
    assert serve.memory.weights * GIB == pytest.approx(70.6e9 / 2)  # 1 byte, 2 GPUs
    assert serve.memory.kv_cache * GIB == pytest.approx(2 * 80 * 1024 * 16 * 8192 / 2)
    assert not serve.without_amp.fits  # fp32 weights would not fit two GPUs
    # Model load: both GPUs on one node, the whole model through one of 32 cards of 3200 Gbps.
    assert serve.model_load_seconds == pytest.approx(70.6e9 / (100e9 / 8))
    one_gpu = """\
  - {name: serve, kind: inference, pool: serve, gpus: 1, parameters: 70.6e9, precision: fp8,
     layers: 80, hidden: 8192, heads: 64, kvHeads: 8, batch: 16, contextLength: 8192}
"""
    [(code, message)] = _errors(_compile(tmp_path, one_gpu))
    assert code == "GP236" and message.endswith("it would fit with gpus: 2 (42.9 of 72.0 usable GiB)")


def test_another_pool_is_offered_only_where_the_precision_runs(tmp_path: Path) -> None:
    # An fp8 service too big for a MIG slice, where every other pool has A100s (no FP8): moving
    # there is never offered, though 80 GB would hold it; a larger MIG profile is.
    text = EXAMPLE.read_text(encoding="utf-8").replace("instanceType: p5.48xlarge", "instanceType: p4de.24xlarge")
    text = text.replace(
        "  - name: infer\n    instanceType: p4de.24xlarge", "  - name: infer\n    instanceType: p5.48xlarge"
    )
    spec = tmp_path / "platform.yaml"
    workload = """\
  - {name: big, kind: inference, pool: infer, gpus: 1, parameters: 70.6e9, precision: fp8,
     layers: 80, hidden: 8192, heads: 64, kvHeads: 8, contextLength: 8192}
"""
    spec.write_text(text[: text.index("workloads:")] + "workloads:\n" + workload, encoding="utf-8")
    [(code, message)] = _errors(compile_sources(Sources(spec, None)))
    assert code == "GP236" and "pool: " not in message
    assert message.endswith("it would fit with pool infer sharing.profile: all-7g.80gb (67.0 of 72.0 usable GiB)")


# ---- the hot tier and the pool's size ---------------------------------------------------------

PRETRAIN = """\
  - {name: pretrain, kind: training, pool: train, gpus: 256, parameters: 70.6e9, precision: amp,
     sharding: zero3, gradientCheckpointing: true, layers: 80, hidden: 8192, heads: 64, sequenceLength: 4096}
"""


def test_a_hot_tier_too_small_for_the_kept_checkpoints(tmp_path: Path) -> None:
    compiled = _compile(tmp_path, PRETRAIN, storage="  hot:  {capacityTiB: 2.4, throughputPerTiB: 1000}")
    [(code, message)] = _errors(compiled)
    assert code == "GP237"
    # 3 x 920.5 GiB = 2761.6 GiB; the next FSx size is 4800 GiB.
    assert "pretrain 3 x 920.5 GiB" in message and "needs 2761.6 GiB" in message
    assert "holds 2400 GiB; raise storage.hot.capacityTiB to 4.8" in message
    one = PRETRAIN.replace("sequenceLength: 4096}", "sequenceLength: 4096, keepCheckpoints: 2}")
    assert not _errors(_compile(tmp_path, one, storage="  hot:  {capacityTiB: 2.4, throughputPerTiB: 1000}"))


def test_more_gpus_than_the_pool_has(tmp_path: Path) -> None:
    [(code, message)] = _errors(_compile(tmp_path, PRETRAIN.replace("gpus: 256", "gpus: 512")))
    assert code == "GP238" and "pool train has 256" in message


# ---- renderings --------------------------------------------------------------------------------

VARIANT_KEYS = {"perGpuGiB", "fits", "maxMicroBatch"}
MEMORY_KEYS = {"weights", "gradients", "optimizer", "activations", "kvCache", "total"}


def test_json_shape(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["plan", "--spec", str(EXAMPLE), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    pretrain, serve = doc["workloads"]
    for w in (pretrain, serve):
        assert {
            "name",
            "perGpuGiB",
            "gpuMemoryGiB",
            "fits",
            "checkpointGiB",
            "checkpointWriteSeconds",
            "modelLoadSeconds",
            "withoutAmp",
            "withoutCheckpointing",
        } <= set(w)
        assert set(w["perGpuGiB"]) == MEMORY_KEYS
        assert set(w["withoutAmp"]) == VARIANT_KEYS and set(w["withoutAmp"]["perGpuGiB"]) == MEMORY_KEYS
    assert set(pretrain["withoutCheckpointing"]) == VARIANT_KEYS
    assert pretrain["withAmp"] is None and pretrain["withCheckpointing"] is None  # it has both
    assert serve["withoutCheckpointing"] is None and serve["checkpointGiB"] is None
    assert pretrain["perGpuGiB"]["total"] == 15.17 and pretrain["fits"] is True
    assert doc["storage"]["hot"]["checkpointWriteSeconds"] == pretrain["checkpointWriteSeconds"]


def test_no_workloads_no_key(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["plan", "--overlay", "", "--format", "json"]) == 0
    assert "workloads" not in json.loads(capsys.readouterr().out)


def test_text_shows_what_amp_and_checkpointing_buy() -> None:
    from gpuplat.render.plan import plan_text

    compiled = compile_sources(Sources(EXAMPLE, None))
    assert compiled.model is not None and compiled.plan is not None
    text = plan_text(compiled.model, compiled.plan)
    assert "Workloads: GiB per GPU" in text
    assert "llama-70b-pretrain: amp 15.2 GiB per GPU, fp32 26.2 GiB: saves 11.1 GiB (42 %)" in text
    assert "checkpointing 15.2 GiB per GPU, without 489.1 GiB (does not fit)" in text
    assert "max micro-batch 6, without 0" in text


def test_what_an_fp32_run_without_checkpointing_would_gain(tmp_path: Path) -> None:
    from gpuplat.render.plan import plan_text

    small = """\
  - {name: small, kind: training, pool: train, gpus: 8, parameters: 1.3e9, precision: fp32,
     layers: 24, hidden: 2048, heads: 16, sequenceLength: 2048, microBatch: 2, sharding: zero2}
"""
    compiled = _compile(tmp_path, small)
    assert compiled.model is not None and compiled.plan is not None
    [w] = compiled.plan.workloads
    assert w.with_amp is not None and w.with_checkpointing is not None
    # By hand, fp32 activations of 24 layers: 2 x 2048 x 2 x 2048 x (34 + 5 x 16 x 2048 / 2048) x 24 bytes.
    assert w.memory.activations * GIB == 2 * 2048 * 2 * 2048 * (34 + 80) * 24
    assert w.with_amp.memory.activations == w.memory.activations / 2
    text = plan_text(compiled.model, compiled.plan)
    assert "small: amp would need 25.9 GiB per GPU, fp32 now 49.4 GiB: saves 23.5 GiB (48 %)" in text
    assert "checkpointing would need 9.2 GiB per GPU, now 49.4 GiB: saves 40.2 GiB (81 %); max micro-batch 51" in text


def _doc(total: float, fits: bool, pool: str = "train") -> dict[str, Any]:
    return {
        "workloads": [
            {
                "name": "pretrain",
                "pool": pool,
                "gpus": 256,
                "perGpuGiB": {"total": total},
                "gpuMemoryGiB": 80,
                "usableGiB": 72,
                "unit": "H100-SXM-80GB GPU",
                "fits": fits,
            }
        ]
    }


def test_pull_request_table_shows_base_to_head() -> None:
    section = workloads_section(_doc(15.17, True, "infer"), _doc(15.17, True))
    assert "| pretrain | train ×256 → infer ×256 | 15.17 GiB | 72 of 80 GiB (H100-SXM-80GB GPU) | yes |" in section
    assert workloads_section({"pools": []}, {"pools": []}) == ""
    alone = workloads_section(_doc(90.0, False), None)
    assert "| pretrain | train ×256 | 90 GiB | 72 of 80 GiB (H100-SXM-80GB GPU) | **no** |" in alone


def test_the_spec_guide_example_is_the_fixture_and_valid(tmp_path: Path) -> None:
    readme = (ROOT / "docs" / "spec-guide.md").read_text(encoding="utf-8")
    start = readme.index("```yaml\nworkloads:\n") + len("```yaml\n")
    example = readme[start : readme.index("```", start)]
    base = EXAMPLE.read_text(encoding="utf-8")
    spec = tmp_path / "platform.yaml"
    spec.write_text(base[: base.index("workloads:")] + example, encoding="utf-8")
    compiled = compile_sources(Sources(spec, None))
    assert compiled.plan is not None and not _errors(compiled)
    fixture = compile_sources(Sources(EXAMPLE, None))
    assert fixture.plan is not None and compiled.plan.workloads == fixture.plan.workloads


K8S = ROOT / "tests" / "fixtures" / "kubernetes_example.yaml"


def _k8s(tmp_path: Path, workloads: str) -> Compiled:
    spec = tmp_path / "platform.yaml"
    spec.write_text(K8S.read_text(encoding="utf-8") + "workloads:\n" + workloads, encoding="utf-8")
    return compile_sources(Sources(spec, None))


def test_kubernetes_knows_no_throughput_so_no_times(tmp_path: Path) -> None:
    compiled = _k8s(tmp_path, PRETRAIN.replace("gpus: 256", "gpus: 64"))
    assert compiled.plan is not None, _errors(compiled)
    [w] = compiled.plan.workloads
    assert w.fits and w.checkpoint_gib is not None
    assert w.checkpoint_write_seconds is None and w.model_load_seconds is None


def test_a_share_of_a_gpu_offers_no_more_gpus(tmp_path: Path) -> None:
    # lab: fractional L40S (44.7 GiB) in 10 shares of 4.47 GiB; 8B bf16 weights need 15 GiB. Shares
    # of one GPU add no memory, so no GPU count helps there; a whole H100 of train does.
    lab = """\
  - {name: chat, kind: inference, pool: lab, gpus: 1, parameters: 8e9, precision: bf16,
     layers: 32, hidden: 4096, heads: 32, kvHeads: 8, contextLength: 8192}
"""
    [(code, message)] = _errors(_k8s(tmp_path, lab))
    assert code == "GP236" and "per 1/10 share of L40S-48GB" in message and "one holds 4.47 GiB, 4.0 usable" in message
    assert "gpus:" not in message.split("pool: ")[0]
    assert "nothing on this pool makes it fit (tried lower precisions)" in message
    assert message.endswith("it would fit with pool: train (15.9 of 72.0 usable GiB)")


FIELDS = [
    "name", "kind", "pool", "gpus", "parameters", "precision", "optimizer", "gradientCheckpointing", "sharding",
    "layers", "hidden", "heads", "kvHeads", "sequenceLength", "microBatch", "keepCheckpoints", "batch",
    "contextLength",
]  # fmt: skip
_values = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["training", "inference", "fp8", "int8", "zero3", "adam", "train", "serve", "infer", "", [1]])
)


@settings(derandomize=True, deadline=None, max_examples=300)
@given(index=st.integers(0, 1), changes=st.dictionaries(st.sampled_from(FIELDS), _values, min_size=1, max_size=4))
def test_any_workload_values_yield_a_plan_or_diagnostics(index: int, changes: dict[str, Any]) -> None:
    data = YAML(typ="safe").load(EXAMPLE.read_text(encoding="utf-8"))
    data["workloads"][index].update(changes)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "platform.yaml"
        spec.write_text(json.dumps(data), encoding="utf-8")
        compiled = compile_sources(Sources(spec, None))
    errors = [d for d in compiled.diagnostics if d.is_error]
    assert (compiled.plan is not None) != bool(errors)
    if compiled.model is not None and compiled.plan is not None:
        json.dumps(workloads_json(compiled.plan.workloads), allow_nan=False)


@pytest.mark.parametrize(
    ("field", "value"),
    [("parameters", 1.7e308), ("sequenceLength", 10**200), ("heads", 10**400), ("layers", 10**300)],
)
def test_absurd_sizes_are_schema_errors_not_crashes(tmp_path: Path, field: str, value: float) -> None:
    # 1.7e308 parameters x 16 bytes is infinity: the planner would crash on it; the schema bounds
    # every size so the arithmetic stays finite.
    data = YAML(typ="safe").load(EXAMPLE.read_text(encoding="utf-8"))
    data["workloads"][0][field] = value
    spec = tmp_path / "platform.yaml"
    spec.write_text(json.dumps(data), encoding="utf-8")
    compiled = compile_sources(Sources(spec, None))
    assert ("GP104", f"$.workloads[0].{field}") in [(d.code, d.path) for d in compiled.diagnostics if d.is_error]


def test_the_comment_has_the_workload_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    assert main(["preview", "--spec", str(EXAMPLE), "--format", "markdown"]) == 0
    comment = capsys.readouterr().out
    assert (
        comment.index("### Monthly cost") < comment.index("### Capacity and markets") < comment.index("### Workloads")
    )  # cost and capacity lead; the workloads open the details
    assert "| llama-70b-serve | serve ×2 | 42.88 GiB | 72 of 80 GiB (H100-SXM-80GB GPU) | yes |" in comment
