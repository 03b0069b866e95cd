"""Capacity Block windows: when a capacity-block pool's reserved nodes exist.

A pool with `reservation.kind: capacity-block` launches its reserved nodes into EC2 Capacity
Blocks an operator bought; the spec selects them (ids, tags) but does not say when they run,
so the replay takes the booked windows as an input (`--capacity-blocks FILE`), a CSV:

    pool,start,days,instances[,id]
    train,2017-10-02 11:30,14,8,cr-0123456789abcdef0

`start` in the trace's own clock (a date, UTC when naive, for dated traces; seconds for a
canonical trace's seconds), `days` and `instances` as AWS sells them (catalog
capacity_blocks.py). Each window holds its instances from `start` until EC2 terminates them
BLOCK_TERMINATION_LEAD_SECONDS before its end, and is billed in full over the replay (paid up
front, used or not). Without a schedule a capacity-block pool keeps the plan's assumption:
blocks bought back to back, its reserved nodes there around the clock.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from gpuplat.catalog.capacity_blocks import BLOCK_DAYS, BLOCK_INSTANCE_COUNTS, BLOCK_TERMINATION_LEAD_SECONDS
from gpuplat.input_files import MAX_SCHEDULE_BYTES, InputInvalid, text_lines
from gpuplat.model import Market, Platform, ReservationKind
from gpuplat.plan import Plan
from gpuplat.simulate.trace import MAX_ERRORS, TraceError, parse_time

COLUMNS = ("pool", "start", "days", "instances")


@dataclass(frozen=True, slots=True)
class Block:
    pool: str
    start: float  # seconds on the replay's clock (0: the trace's first submission)
    end: float  # start + days
    instances: int
    id: str = ""

    @property
    def usable_until(self) -> float:
        return self.end - BLOCK_TERMINATION_LEAD_SECONDS


def block_pools(model: Platform, plan: Plan) -> dict[str, int]:
    """Capacity-block pools with reserved nodes in the plan -> those nodes (the NodePool's limit)."""
    out: dict[str, int] = {}
    for pool in model.pools:
        if pool.reservation.kind is ReservationKind.CAPACITY_BLOCK:
            nodes = plan.pool(pool.name).share(Market.RESERVED).nodes
            if nodes > 0:
                out[pool.name] = nodes
    return out


def _row(row: dict[str, str], pools: dict[str, int], origin: float) -> Block:
    pool = (row.get("pool") or "").strip()
    if pool not in pools:
        names = ", ".join(sorted(pools)) or "none in this spec"
        raise ValueError(f"pool {pool!r} has no Capacity Block reserved nodes (capacity-block pools: {names})")
    try:
        days = int((row.get("days") or "").strip())
        instances = int((row.get("instances") or "").strip())
    except ValueError:
        raise ValueError("days and instances are whole numbers") from None
    if days not in BLOCK_DAYS:
        raise ValueError(f"{days} days is not a Capacity Block length (1-14 days, or 7-day steps up to 182)")
    if instances not in BLOCK_INSTANCE_COUNTS:
        raise ValueError(f"{instances} instances: a Capacity Block holds {', '.join(map(str, BLOCK_INSTANCE_COUNTS))}")
    start = parse_time((row.get("start") or "").strip(), "start") - origin
    return Block(pool, start, start + days * 86400.0, instances, (row.get("id") or "").strip())


def load_blocks(path: str | Path, model: Platform, plan: Plan, origin: float) -> tuple[Block, ...]:
    """The booked windows at `path`, on the clock of a trace whose first submission is `origin`;
    OSError when unreadable, TraceError (with lines) on bad content."""
    name = str(path)
    pools = block_pools(model, plan)
    problems: list[tuple[int, str]] = []
    blocks: list[Block] = []
    try:
        reader = csv.DictReader(text_lines(path, "Capacity Block schedule", MAX_SCHEDULE_BYTES, name))
        missing = [c for c in COLUMNS if c not in {h.strip() for h in reader.fieldnames or []}]
        if missing:
            raise TraceError(name, [(1, f"a Capacity Block schedule needs the columns {', '.join(COLUMNS)}")], "GP033")
        for row in reader:
            if not any((v or "").strip() for k, v in row.items() if isinstance(v, str) and k):
                continue
            try:
                blocks.append(_row({k.strip(): v or "" for k, v in row.items() if k}, pools, origin))
            except ValueError as err:
                problems.append((reader.line_num, str(err)))
                if len(problems) >= MAX_ERRORS:
                    break
    except InputInvalid as err:
        raise TraceError.of(err) from None
    except csv.Error as err:
        raise TraceError(name, [(1, f"not a CSV text file ({err})")], "GP033") from None
    if problems:
        raise TraceError(name, problems)
    return tuple(sorted(blocks, key=lambda b: (b.pool, b.start)))
