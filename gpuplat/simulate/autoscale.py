"""The 30-second poll: the scaling signal (gpuplat/scaling.py, as the rules record it), the HPA
with its stabilisation windows moving the capacity floor, Karpenter's empty-node removal and
its nodes for the floor's placeholders.

Window averages per pool: busy GPU-seconds / GPU-seconds of Ready nodes over the window (the
exporter runs only on Ready nodes), and memory used likewise, where an allocated GPU's memory
counts as used: deep-learning frameworks take a GPU's memory for the job's whole run
(TensorFlow's default, PyTorch's caching allocator). A pool without Ready GPU-seconds in the
window has no series: no decision, as KEDA with `ignoreNullValues: false`.
"""

from __future__ import annotations

import math

from gpuplat import scaling
from gpuplat.model import Autoscaling
from gpuplat.simulate.engine import Engine
from gpuplat.simulate.fleet import SimPool


def _window(pool: SimPool, t: float, window: float) -> tuple[float, float] | None:
    busy = alloc = ready = 0.0
    for f in pool.flavors:
        f.advance(t)
        busy, alloc, ready = busy + f.busy_gpu_s, alloc + f.alloc_gpu_s, ready + f.ready_gpu_s
    pool.samples.append((t, busy, alloc, ready))
    while pool.samples[0][0] < t - window:
        pool.samples.popleft()
    t0, busy0, alloc0, ready0 = pool.samples[0]
    span = ready - ready0
    if t0 >= t or span <= 0:
        return None
    return (busy - busy0) / span, (alloc - alloc0) / span


def _hpa(pool: SimPool, signal: float, auto: Autoscaling, t: float, stabilize: float) -> None:
    """The HPA's step: the raw recommendation, then the lowest of the window to grow, the highest to shrink."""
    assert pool.bounds is not None
    low, high = pool.bounds
    ready = min(pool.floor, sum(f.ready for f in pool.steady))
    raw = scaling.hpa_desired(ready, signal, auto.scale_up_above) if ready > 0 else pool.floor
    window = pool.recommendations
    window.add(t, raw)
    window.expire(t - stabilize)
    up, down = window.lowest, window.highest
    current = pool.floor
    wanted = up if current < up else down if current > down else current
    pool.floor = max(low, min(high, wanted))
    if pool.floor != current:
        # The next raw recommendation reads the new floor even when no node moves: a change.
        pool.last_change = t


def hold_floor(pool: SimPool, engine: Engine, t: float) -> None:
    """Placeholders stand on reserved nodes first, then on-demand; Karpenter launches the missing nodes.
    Reserved nodes of a Capacity Block pool exist only while a window is open (`limit`)."""
    left = pool.floor
    for f in pool.steady:
        f.held = min(left, f.limit)
        left -= f.held
        if f.held > f.ready + f.booting:
            engine.launch(f, f.held - f.ready - f.booting, t)


def consolidate(pool: SimPool, engine: Engine, t: float, after: float) -> None:
    """WhenEmpty: nodes with neither work nor a placeholder go once empty for `consolidateAfter`
    (with node packing, the nodes running no pod; else as few as the allocated units fill)."""
    for f in pool.flavors:
        nodes = f.nodes
        working = f.ready - nodes.empty_count() if nodes is not None else math.ceil(f.alloc / f.per_node)
        kept = max(working, f.held)
        excess = f.ready - kept
        if excess <= 0:
            f.empty_since = None
        elif f.empty_since is None:
            f.empty_since = t
        elif t - f.empty_since >= after:
            engine.remove_nodes(f, excess, t)
            f.empty_since = None


def _settled(pool: SimPool, t: float) -> bool:
    """Nothing changed for longer than every window the poll reads, and nothing is pending: every
    recommendation in the window is the one the quiet rates give, and the floor is already where
    the bounds put it (an idle pool held at its minimum asks for fewer nodes at every poll)."""
    if t - pool.last_change <= pool.span + pool.poll or any(f.empty_since is not None for f in pool.flavors):
        return False
    window = pool.recommendations
    if not window.low:
        return True
    assert pool.bounds is not None
    low, high = pool.bounds
    return window.lowest == window.highest and max(low, min(high, window.lowest)) == pool.floor


def tick(engine: Engine, auto: Autoscaling, t: float, stabilize: float) -> None:
    for pool in engine.pools:
        if pool.quiet_since is not None:
            continue
        averages = _window(pool, t, auto.window_seconds)
        if pool.bounds is not None and averages is not None:
            pressure = scaling.pressure(*averages, driving=engine.options.signals)
            signal = scaling.signal_value(pressure, auto.scale_up_above, auto.scale_down_below)
            _hpa(pool, signal, auto, t, stabilize)
            hold_floor(pool, engine, t)
        consolidate(pool, engine, t, auto.cooldown_seconds)
        if engine.options.skip_quiet and _settled(pool, t):
            pool.quiet_since = t
