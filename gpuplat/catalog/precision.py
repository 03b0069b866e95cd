# pyright: strict
"""Numeric precisions of reference workloads: bytes per parameter and per activation, and the
GPUs that compute in FP8. The planning assumptions behind these numbers are stated once here.

Training, bytes per parameter (weights / gradients / optimizer states with Adam | SGD):

- fp32: 4 / 4 / 8 | 4. The weights are the master copy; Adam adds momentum and variance
  (4 + 4), SGD its momentum (4).
- amp: automatic mixed precision as in Micikevicius et al. 2018 and the ZeRO paper
  (Rajbhandari et al. 2020, section 3.1): 16-bit (fp16 or bf16) weights and gradients, 2 + 2,
  plus an fp32 master copy of the weights and fp32 optimizer states, Adam 4 + 4 + 4 = 12
  ("K = 12", 16 bytes per parameter in all), SGD 4 + 4 = 8.
- bf16: pure bf16 training: weights, gradients and optimizer states all in bf16, no fp32
  master copy: 2 / 2 / 4 | 2 (8 bytes per parameter with Adam). Frameworks do this to halve
  model states, at a cost in numerical precision (e.g. Kahan-summed or stochastic-rounding
  optimizers); mixed precision with bf16 compute is `amp`.
- fp8: FP8 training as Transformer Engine / Megatron run it: FP8 is the GEMMs' compute format;
  weights are kept in 16 bits (the FP8 copy is made per GEMM), gradients in 16 bits, and the
  master weights and Adam states in fp32, so model states cost what `amp` costs. FP8 optimizer
  states (FP8-LM, Peng et al. 2023) are not assumed: mainstream frameworks keep them in fp32.
- int8: inference only (no training framework trains in int8); validation rejects it.

Activations: Korthikanti et al. 2022 count 16-bit activations (2 bytes per element, 1 byte
per dropout mask); fp32 training stores 32-bit activations, twice as many bytes. amp, bf16 and
fp8 keep 16-bit activations (Transformer Engine stores some GEMM inputs in FP8, but the
conservative count keeps all of them at 16 bits).

Inference, bytes per weight and per KV-cache element: fp32 4, amp / bf16 2, fp8 1, int8 1
(an int8 or FP8 KV cache goes with int8 or FP8 weights, as TensorRT-LLM and vLLM offer).

FP8 tensor cores: Hopper (H100, H200, GH200), Ada (L4, L40S) and Blackwell (B200, GB200);
Ampere (A100, A10G) has none (NVIDIA architecture whitepapers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

PRECISIONS: tuple[str, ...] = ("fp32", "amp", "bf16", "fp8", "int8")
TRAINING_PRECISIONS: tuple[str, ...] = ("fp32", "amp", "bf16", "fp8")
OPTIMIZERS: tuple[str, ...] = ("adam", "sgd")


@dataclass(frozen=True)
class TrainingBytes:
    weights: int
    gradients: int
    optimizer: Mapping[str, int]  # optimizer name -> bytes of its states per parameter
    activation_factor: float  # multiple of Korthikanti's 16-bit activation bytes


def _optimizer(adam: int, sgd: int) -> Mapping[str, int]:
    return MappingProxyType({"adam": adam, "sgd": sgd})


TRAINING: Mapping[str, TrainingBytes] = MappingProxyType(
    {
        "fp32": TrainingBytes(4, 4, _optimizer(8, 4), 2.0),
        "amp": TrainingBytes(2, 2, _optimizer(12, 8), 1.0),
        "bf16": TrainingBytes(2, 2, _optimizer(4, 2), 1.0),
        "fp8": TrainingBytes(2, 2, _optimizer(12, 8), 1.0),
    }
)

INFERENCE_BYTES: Mapping[str, int] = MappingProxyType({"fp32": 4, "amp": 2, "bf16": 2, "fp8": 1, "int8": 1})

FP8_GPUS: frozenset[str] = frozenset(
    {
        "H100-SXM-80GB",
        "H100-PCIe-80GB",
        "H100-NVL-94GB",
        "H100-96GB",
        "H200-SXM-141GB",
        "GH200-144GB",
        "B200-SXM-180GB",
        "GB200-186GB",
        "L4-24GB",
        "L40S-48GB",
    }
)
