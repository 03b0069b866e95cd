"""Trace replay against the plan and the scaling policy as emitted (stdlib only, seeded).

docs/simulate.md states the model: inputs, policy, seed, invariants and what it leaves out.
"""

from __future__ import annotations

from gpuplat.simulate.options import Options
from gpuplat.simulate.result import Result
from gpuplat.simulate.run import NoTenantsError, TenantMapError, simulate
from gpuplat.simulate.trace import Trace, TraceError, load_trace

__all__ = ["NoTenantsError", "Options", "Result", "TenantMapError", "Trace", "TraceError", "load_trace", "simulate"]
