"""The replay over time: the fleet's state sampled at a fixed step, for `simulate --plot` and its JSON.

The state only changes at events, so the value at a sample time is the state before the first
event after it: `until(t)` fills every sample time up to (not including) the event at `t` from
the state as it stands, then the event is handled. Sampled: GPUs provisioned (ready nodes),
allocated (running pods) and busy (their busy share), jobs waiting (in a tenant's queue or
admitted and waiting for a node) and the GPUs they ask for, and nodes (ready or booting) by market.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter
from typing import Any

from gpuplat.simulate.engine import Engine

MAX_POINTS = 600  # enough to draw a day per pixel column of a wide chart, few enough for the JSON
MIN_STEP_SECONDS = 60.0
_JOB = itemgetter(2)  # a queue entry's job: (-rank, submit, job)


def sample_step(span_seconds: float) -> float:
    """Whole minutes, at most MAX_POINTS samples over the trace's span (a replay whose queue
    outlasts the trace runs on, and so has more)."""
    minutes = max(1, -(-int(span_seconds) // int(MIN_STEP_SECONDS * MAX_POINTS)))
    return minutes * MIN_STEP_SECONDS


@dataclass
class Timeline:
    step: float
    times: list[float] = field(default_factory=lambda: [])
    provisioned: list[float] = field(default_factory=lambda: [])
    allocated: list[float] = field(default_factory=lambda: [])
    busy: list[float] = field(default_factory=lambda: [])
    waiting_jobs: list[int] = field(default_factory=lambda: [])
    waiting_gpus: list[float] = field(default_factory=lambda: [])
    nodes: dict[str, list[int]] = field(default_factory=lambda: {})  # market -> nodes per sample
    asks: list[float] = field(default_factory=lambda: [])  # per job, the GPUs it asks for

    def until(self, engine: Engine, t: float, *, inclusive: bool = False) -> None:
        next_time = len(self.times) * self.step
        if next_time > t or (next_time == t and not inclusive):
            return
        if len(self.asks) != len(engine.jobs):
            self.asks = [j.gpus * j.fraction for j in engine.jobs]
        state = _state(engine, self.asks)
        while next_time < t or (inclusive and next_time == t):
            self._append(next_time, state)
            next_time = len(self.times) * self.step

    def _append(self, t: float, state: dict[str, Any]) -> None:
        self.times.append(t)
        for name in ("provisioned", "allocated", "busy", "waiting_jobs", "waiting_gpus"):
            getattr(self, name).append(state[name])
        for market in state["nodes"].keys() | self.nodes.keys():
            self.nodes.setdefault(market, [0] * (len(self.times) - 1)).append(state["nodes"].get(market, 0))

    def as_json(self) -> dict[str, Any]:
        return {
            "stepSeconds": self.step,
            "seconds": self.times,
            "gpus": {"provisioned": self.provisioned, "allocated": self.allocated, "busy": self.busy},
            "waiting": {"jobs": self.waiting_jobs, "gpus": self.waiting_gpus},
            "nodesByMarket": dict(sorted(self.nodes.items())),
        }


def _state(engine: Engine, asks: list[float]) -> dict[str, Any]:
    provisioned = allocated = busy = 0.0
    nodes: dict[str, int] = {}
    for f in engine.flavors:
        provisioned += f.ready * f.gpus_per_node
        allocated += f.alloc / f.per_gpu
        busy += f.busy
        market = f.market.value if f.market is not None else "existing"
        nodes[market] = nodes.get(market, 0) + f.ready + f.booting
    # A sample may see thousands of waiting jobs: the walk and the sum run in C.
    queued = list(chain.from_iterable(map(_JOB, queue) for queue in engine.queues))
    queued += chain.from_iterable(f.waiting for f in engine.flavors)
    gpus = sum(map(asks.__getitem__, queued))
    return {
        "provisioned": round(provisioned, 6),
        "allocated": round(allocated, 6),
        "busy": round(busy, 6),
        "waiting_jobs": len(queued),
        "waiting_gpus": round(gpus, 6),
        "nodes": nodes,
    }
