"""The report of a replay over several seeds, alone or against a base: text, one JSON document,
and the pull-request comment's markdown. The first seed's replay is shown in full; the headline
numbers (waste, waiting, cost, the share replayed) carry their interval over the seeds, and a
base's deltas the paired one (bands.py), marked where they are inside the noise."""

from __future__ import annotations

import json
from collections.abc import Sequence

from gpuplat.render.charts import replay_charts
from gpuplat.simulate.bands import Band, bands, paired
from gpuplat.simulate.render import (
    busy_share_lines,
    cost_json,
    coverage_lines,
    detail_lines,
    packing_line,
    result_json,
    target_lines,
)
from gpuplat.simulate.result import Result

Runs = Sequence[Result]  # one replay per seed, the first shown in full


def base_compiled(compiler: str) -> str:
    who = compiler or "this change's gpuplat"
    return (
        f"the base's spec is compiled by {who}, with its compiler and catalog: a change of gpuplat itself "
        "or of its prices shows no delta here"
    )


def headline(r: Result) -> dict[str, float]:
    """The numbers a change moves: the share replayed, waste, waiting, cost."""
    c = cost_json(r)
    jobs = sum(w.jobs for w in r.waits) or 1
    return {
        "GPU-h replayed %": 100 * r.coverage.share,
        "waste %": 100 * r.waste["total"],
        "unallocated %": 100 * r.waste["unallocated"],
        # The service level beside waste: per tenant with a targetWait and jobs, the share started within it.
        **{f"{t.tenant} within target %": 100 * t.share for t in r.targets if t.share is not None},
        "mean wait s": sum(w.mean_seconds * w.jobs for w in r.waits) / jobs,
        "worst p95 wait s": max((w.seconds[95] for w in r.waits), default=0.0),
        "cost USD / month": r.monthly_usd,
        "USD per busy GPU-h": c["perBusyGpuHour"] or 0.0,
    }


def _runs(runs: Result | Runs) -> list[Result]:
    return [runs] if isinstance(runs, Result) else list(runs)


def _seeds(runs: list[Result]) -> str:
    first, last = runs[0].seed, runs[-1].seed
    return f"seed {first}" if len(runs) == 1 else f"seeds {first}-{last}"


def _band_json(b: Band) -> dict[str, float]:
    return {"mean": b.mean, "low": b.low, "high": b.high}


def deltas(base: Result | Runs, head: Result | Runs) -> dict[str, tuple[Band, Band, Band]]:
    """Paired per seed over the numbers both sides have (a tenant's target share only where both set one)."""
    before, after = [headline(r) for r in _runs(base)], [headline(r) for r in _runs(head)]
    common = [k for k in after[0] if k in before[0]]
    return paired([{k: h[k] for k in common} for h in before], [{k: h[k] for k in common} for h in after])


def render_json(
    head: Result | Runs, base: Result | Runs | None = None, compiler: str = "", *, timeline: bool = False
) -> str:
    """`timeline`: also the series `--plot` draws (the first seed's), sampled over the replay."""
    runs = _runs(head)
    doc = result_json(runs[0]) | {
        "seeds": [r.seed for r in runs],
        "headline": {k: _band_json(b) for k, b in bands([headline(r) for r in runs]).items()},
    }
    if timeline and runs[0].timeline is not None:
        doc["timeline"] = runs[0].timeline.as_json()
    if base is not None:
        base_runs = _runs(base)
        delta = {
            k: {"base": b.mean, "head": h.mean, "delta": d.mean, "low": d.low, "high": d.high, "verdict": d.verdict}
            for k, (b, h, d) in deltas(base_runs, runs).items()
        }
        base_doc = result_json(base_runs[0]) | {"seeds": [r.seed for r in base_runs]}
        doc = {"head": doc, "base": base_doc, "delta": delta, "baseCompiledWith": base_compiled(compiler)}
    return json.dumps(doc, indent=2, sort_keys=False) + "\n"


def _num(x: float) -> str:
    return f"{x:,.2f}"


def _interval(b: Band, signed: bool = False) -> str:
    fmt = "{:+,.2f}" if signed else "{:,.2f}"
    return "no interval" if b.n < 2 else f"{fmt.format(b.low)} to {fmt.format(b.high)}"


def render_text(head: Result | Runs, base: Result | Runs | None = None, compiler: str = "") -> str:
    runs = _runs(head)
    lines = detail_lines(runs[0])
    if len(runs) > 1:
        lines += ["", f"over {len(runs)} {_seeds(runs)}: mean (95 % interval of the mean)"]
        lines += [
            f"  {k:<20} {_num(b.mean):>14} ({_interval(b)})" for k, b in bands([headline(r) for r in runs]).items()
        ]
    if base is not None:
        lines += ["", f"against the base, the same {_seeds(runs)}: base -> this change, delta (95 % interval)"]
        for k, (b, h, d) in deltas(base, runs).items():
            lines.append(
                f"  {k:<20} {_num(b.mean):>14} -> {_num(h.mean):>14} {d.mean:+,.2f} ({_interval(d, True)}): {d.verdict}"
            )
        lines.append(base_compiled(compiler))
    return "\n".join(lines) + "\n"


def render_markdown(head: Result | Runs, base: Result | Runs | None = None, compiler: str = "") -> str:
    """The pull-request comment: what this change does to waste, waiting and cost, with the noise."""
    runs = _runs(head)
    r = runs[0]
    title = (
        "### What this change does to waste, waiting and cost\n\n"
        f"Replay of `{r.trace}` ({r.jobs:,} jobs, {_seeds(runs)}): {100 * r.coverage.share:.1f} % of its "
        "GPU-hours replayed. "
        + (
            f"Each number is the mean over {len(runs)} seeds with its 95 % interval; a delta whose interval "
            "holds 0 is inside the noise.\n\n"
            if len(runs) > 1
            else "One seed: no interval, so no delta can be told from noise (`--seeds N`).\n\n"
        )
    )
    notes = [*coverage_lines(r), packing_line(r), *busy_share_lines(r), *target_lines(r)]
    if base is None:
        rows = "".join(
            f"| {k} | {_num(b.mean)} | {_interval(b)} |\n" for k, b in bands([headline(x) for x in runs]).items()
        )
        table = "| metric | mean | 95 % interval |\n|---|---:|---:|\n" + rows
    else:
        rows = "".join(
            f"| {k} | {_num(b.mean)} | {_num(h.mean)} | {d.mean:+,.2f} | {_interval(d, True)} | {d.verdict} |\n"
            for k, (b, h, d) in deltas(base, runs).items()
        )
        table = "| metric | base | this change | delta | 95 % interval | |\n|---|---:|---:|---:|---:|---|\n" + rows
        notes.append(base_compiled(compiler))
    text = title + table + "\n" + "".join(f"- {line.strip()}\n" for line in notes)
    before = _runs(base)[0].timeline if base is not None else None
    if before is None or r.timeline is None:
        return text
    # The first seed's replay over time, base beside this change.
    charts = replay_charts(before.as_json(), r.timeline.as_json())
    return text + "".join(f"\n{chart}\n" for chart in charts)
