"""The records of the procurement split: a pool as the split sees it, and the split found
(gpuplat/plan/split.py computes it; its helper modules read these records).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpuplat.model import Market


@dataclass(frozen=True)
class SplitPool:
    gpus_per_node: int
    max_nodes: int
    markets: tuple[Market, ...]

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.max_nodes


@dataclass(frozen=True)
class Split:
    nodes: tuple[Mapping[Market, int], ...]  # per pool, every allowed market; () when infeasible
    totals: Mapping[Market, int]  # GPUs per market; zeros when infeasible
    targets: Mapping[Market, float]
    tolerance: Mapping[Market, int]
    feasible: bool
    exact: bool  # the search was exhaustive, so `feasible=False` is a proof
