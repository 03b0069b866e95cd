"""How each job ended (completed, failed, killed), for traces without a status column.

A trace's duration is the time the job ran, its attempts together, so an outcome never adds or
removes GPU time: a *failed* job stops at a drawn point of its run, gives its GPUs and quota back
and is queued again behind its tenant's waiting jobs (Philly retried failed jobs in the same
queue), then runs the rest; a *killed* job ends where the trace ends it, as a completed one does.

The draw keeps both published shares, by job count and by GPU time: jobs are split in two at the
GPU time (duration x GPUs) above which half the trace's GPU time lies, and each half draws with
its own shares, the two solved so that the trace as a whole has both (in expectation). On Philly
the long half (405 jobs) mostly fails or is killed, the short one mostly completes. The draw is
seeded apart from the spot and busy-share draws: two numbers per job, in trace order.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from gpuplat.simulate.job import Job

COMPLETED, FAILED, KILLED = "completed", "failed", "killed"
KINDS = (COMPLETED, FAILED, KILLED)


@dataclass(frozen=True)
class Outcomes:
    """Published shares of each outcome (completed, failed, killed), and where they come from."""

    source: str
    by_count: tuple[float, float, float]
    by_gpu_time: tuple[float, float, float] | None = None  # None: every job draws by count

    def shares(self, jobs: tuple[Job, ...] | list[Job]) -> tuple[float, list[list[float]]]:
        """The GPU time splitting the trace in two halves and each half's shares (short, long)."""
        count = _normal(self.by_count)
        if self.by_gpu_time is None or not jobs:
            return float("inf"), [count, count]
        gpu_time = _normal(self.by_gpu_time)
        sizes = sorted(j.duration * j.gpus for j in jobs)
        total, acc, split = sum(sizes), 0.0, sizes[-1]
        for size in sizes:
            acc += size
            if acc >= total / 2:
                split = size
                break
        n_long = sum(1 for s in sizes if s >= split)
        g_long = sum(s for s in sizes if s >= split)
        n_short, g_short, n = len(sizes) - n_long, total - g_long, len(sizes)
        det = n_short * g_long - n_long * g_short
        if det <= 0:
            return float("inf"), [count, count]
        short = [(n * c * g_long - n_long * total * g) / det for c, g in zip(count, gpu_time, strict=True)]
        long = [(n_short * total * g - g_short * n * c) / det for c, g in zip(count, gpu_time, strict=True)]
        return split, [_normal(tuple(max(p, 0.0) for p in short)), _normal(tuple(max(p, 0.0) for p in long))]

    def draws(self, seed: int, jobs: tuple[Job, ...] | list[Job]) -> tuple[list[str], list[float]]:
        """Each job's outcome and, for a failed one, the share of its run before the failure (else 1)."""
        split, (short, long) = self.shares(jobs)
        rng = random.Random(f"outcomes:{seed}")
        outcome: list[str] = []
        fail_at: list[float] = []
        for job in jobs:
            u, at = rng.random(), rng.random()  # two draws for every job: one job never shifts another's
            p = long if job.duration * job.gpus >= split else short
            kind = COMPLETED if u < p[0] else FAILED if u < p[0] + p[1] else KILLED
            outcome.append(kind)
            fail_at.append(at if kind == FAILED else 1.0)
        return outcome, fail_at


def _normal(shares: tuple[float, ...]) -> list[float]:
    total = sum(shares)
    return [s / total for s in shares]


# AcmeTrace `data/cluster_summary.csv` (Hu et al., NSDI 2024): Philly's GPU jobs, by count and by GPU time.
PHILLY_OUTCOMES = Outcomes(
    "Philly's GPU jobs (AcmeTrace cluster_summary.csv): by count 60.4 % completed, 30.5 % failed, 9.0 % killed; "
    "by GPU time 32.1 / 38.6 / 29.4 %",
    (0.604, 0.305, 0.090),
    (0.321, 0.386, 0.294),
)
