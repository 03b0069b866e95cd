"""Published GPU utilisation distributions: the simulator's default busy share of a job.

`PHILLY_GPU_UTIL`: quantiles of Philly's per-minute GPU utilisation (nvidia-smi, every GPU of
every job), at every 2.5 % of the samples, 0 to 100 %: InternLM/AcmeTrace commit 6d6ac9c,
`data/utilization/util_pkl/util_gpu_philly.pkl` (CC BY 4.0; Hu et al., "Characterization of
Large Language Model Development in the Datacenter", NSDI 2024, from the Philly traces of Jeon
et al., USENIX ATC 2019), rounded to 0.001. Median 48.6 %, 32 % of samples at 0 %, mean 47 %.
A per-sample distribution, not one value per job: a job's mean drawn from it keeps the trace's
mean busy share but spreads jobs wider than their means are.
"""

from __future__ import annotations

PHILLY_GPU_UTIL_SOURCE = "Philly per-minute GPU utilisation (AcmeTrace, NSDI 2024; CC BY 4.0)"
PHILLY_GPU_UTIL_STEP = 0.025  # of the samples between two quantiles
PHILLY_GPU_UTIL: tuple[float, ...] = (
    0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.007, 0.062, 0.139, 0.222,
    0.3, 0.372, 0.433, 0.486, 0.534, 0.586, 0.639, 0.694, 0.746, 0.795, 0.838, 0.874, 0.9, 0.92,
    0.943, 0.965, 0.977, 0.983, 0.99, 0.993, 0.999, 1.0, 1.0, 1.0,
)  # fmt: skip
