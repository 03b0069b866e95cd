"""What a replay assumes beyond the spec and the trace: every number here is printed with the result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuplat.scaling import DRIVING_SIGNALS
from gpuplat.simulate.blocks import Block
from gpuplat.simulate.outcomes import Outcomes
from gpuplat.simulate.utilization import PHILLY, Distribution

DEFAULT_BOOT_SECONDS = 300.0  # launch to Ready of a GPU node (AMI with drivers, no image pulls)
DEFAULT_CHECKPOINT_SECONDS = 1800.0  # a job loses the work since its last checkpoint when stopped
DEFAULT_LOOKAHEAD = 16  # BestEffortFIFO: queue heads tried per tenant and pass


@dataclass(frozen=True)
class Options:
    seed: int = 0
    autoscaling: bool = True  # False: every pool at nodes.max from the start, nothing removed
    boot_seconds: float = DEFAULT_BOOT_SECONDS
    utilization: Distribution = PHILLY  # a job's busy share where its trace row gives none
    checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS
    lookahead: int = DEFAULT_LOOKAHEAD  # 1: StrictFIFO
    spot: bool = True  # spot interruptions
    tenant_map: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    audit: bool = False  # check provisioned >= allocated >= busy after every change (slower)
    # Booked Capacity Block windows (blocks.py); a capacity-block pool without any keeps its
    # reserved nodes around the clock, as the plan prices it.
    capacity_blocks: tuple[Block, ...] = ()
    # The signals the floor's pressure reads: both, as the emitted rule; one alone is a what-if.
    signals: frozenset[str] = frozenset(DRIVING_SIGNALS)
    # How jobs ended where the trace does not say (outcomes.py); None: every job runs once to its end.
    outcomes: Outcomes | None = None
    # Place each pod on a node (best fit; a job wider than a node on whole nodes, all its pods at
    # once) instead of packing units perfectly within a flavor (engine.py); a fractional pool's
    # pods GPU by GPU (gpus.py).
    node_packing: bool = False
    # With node packing, a multi-node job on a fabric flavor Kueue places by its Topology runs within
    # one domain (a leaf's nodes; nodes.py); off: anywhere on the flavor's nodes (a what-if).
    topology: bool = True
    # With node packing, how a fractional pool's pods go on its GPUs (gpus.py): None the spec's
    # `scheduling.gpuScheduler.policy`; "spread" or "binpack" that policy instead; "whole" each
    # job on a GPU of its own, as without sharing (what-ifs).
    gpu_placement: str | None = None
    # How many times as fast a pool's GPUs run the trace's work as the GPUs it was recorded on
    # (their generations); pool name -> factor, "" for every other pool. Empty: as recorded. A
    # dict, not a MappingProxyType: the seeds' worker processes receive the options pickled.
    speedup: Mapping[str, float] = field(default_factory=dict[str, float])
    skip_quiet: bool = True  # skip the polls of pools where nothing changed (exact; off: for the test)

    def speed_of(self, pool: str) -> float:
        return self.speedup.get(pool, self.speedup.get("", 1.0))
