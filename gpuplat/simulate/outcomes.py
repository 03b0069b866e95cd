"""How each job ended (completed, failed, killed), for traces without a status column.

A trace's duration is the time the job ran, its attempts together, so an outcome never adds or
removes GPU time: a *failed* job stops at a drawn point of its run, gives its GPUs and quota back
and is queued again behind its tenant's waiting jobs (Philly retried failed jobs in the same
queue), then runs the rest; a *killed* job ends where the trace ends it, as a completed one does.
The draw is seeded apart from the spot and busy-share draws: one draw per job, in trace order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from gpuplat.simulate.job import Job

COMPLETED, FAILED, KILLED = "completed", "failed", "killed"


@dataclass(frozen=True)
class Outcomes:
    """Shares by job count of each outcome, and where they come from (printed with the result)."""

    source: str
    completed: float
    failed: float
    killed: float

    def draws(self, seed: int, jobs: tuple[Job, ...] | list[Job]) -> tuple[list[str], list[float]]:
        """Each job's outcome and, for a failed one, the share of its run before the failure (else 1)."""
        rng = random.Random(f"outcomes:{seed}")
        total = self.completed + self.failed + self.killed
        outcome: list[str] = []
        fail_at: list[float] = []
        for _ in jobs:
            u, at = rng.random() * total, rng.random()  # two draws for every job: one job never shifts another's
            kind = COMPLETED if u < self.completed else FAILED if u < self.completed + self.failed else KILLED
            outcome.append(kind)
            fail_at.append(at if kind == FAILED else 1.0)
        return outcome, fail_at


# AcmeTrace `data/cluster_summary.csv` (Hu et al., NSDI 2024), Philly's GPU jobs by count.
PHILLY_OUTCOMES = Outcomes("Philly's GPU jobs by count (AcmeTrace cluster_summary.csv)", 0.604, 0.305, 0.090)
# The same, by GPU time: what a replay's GPU-hours by drawn outcome are compared with.
PHILLY_GPU_TIME_SHARES = {COMPLETED: 0.321, FAILED: 0.386, KILLED: 0.294}
