"""Trace replay against the plan and the scaling policy as emitted (stdlib only, seeded).

docs/simulate.md states the model: inputs, policy, seed, invariants and what it leaves out.
"""

from __future__ import annotations

from gpuplat.simulate.options import Options
from gpuplat.simulate.result import Result
from gpuplat.simulate.run import NoTenantsError, UnknownTenantError, simulate, simulate_seeds
from gpuplat.simulate.trace import Trace, TraceError, load_trace
from gpuplat.simulate.utilization import Distribution, load_distribution

__all__ = [
    "Distribution",
    "NoTenantsError",
    "Options",
    "Result",
    "Trace",
    "TraceError",
    "UnknownTenantError",
    "load_distribution",
    "load_trace",
    "simulate",
    "simulate_seeds",
]
