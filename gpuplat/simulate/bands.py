"""Noise bands: a headline number over several seeds, and a change's delta paired seed by seed.

Base and head replay the same seeds (common random numbers: each job draws the same busy share
in both, and spot interruptions come from the same stream), so the delta is taken per seed and its
interval is the paired one: mean +- t(0.975, n-1) x sd / sqrt(n). A delta whose interval holds 0
is inside the noise; one that is 0 on every seed is no change at all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_SEEDS = 5
# Student's t at 97.5 % (a two-sided 95 % interval) by degrees of freedom; beyond 30, 2.0 errs wide.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131)
_T975_30 = 2.042


def t975(df: int) -> float:
    if df <= len(_T975):
        return _T975[df - 1]
    return _T975_30 if df <= 30 else 2.0


@dataclass(frozen=True)
class Band:
    mean: float
    low: float  # the 95 % interval of the mean; low == high with one seed or no spread
    high: float
    n: int

    @property
    def half(self) -> float:
        return (self.high - self.low) / 2

    @property
    def verdict(self) -> str:
        """For a delta: how to read it."""
        if self.n < 2:
            return "one seed: no interval"
        if self.low == self.high == 0:
            return "no change"
        return "inside the noise" if self.low <= 0 <= self.high else "outside the noise"


def band(values: Sequence[float]) -> Band:
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return Band(mean, mean, mean, n)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t975(n - 1) * sd / math.sqrt(n)
    return Band(mean, mean - half, mean + half, n)


def bands(runs: Sequence[dict[str, float]]) -> dict[str, Band]:
    return {k: band([r[k] for r in runs]) for k in runs[0]}


def paired(base: Sequence[dict[str, float]], head: Sequence[dict[str, float]]) -> dict[str, tuple[Band, Band, Band]]:
    """metric -> (base, head, head - base paired by seed)."""
    assert len(base) == len(head), "base and head replay the same seeds"
    return {
        k: (
            band([b[k] for b in base]),
            band([h[k] for h in head]),
            band([h[k] - b[k] for b, h in zip(base, head, strict=True)]),
        )
        for k in head[0]
    }
