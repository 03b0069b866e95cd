"""The numbers of bench/claims.sh's runs, one line each: `python bench/claims_table.py [OUT]`.

Means over the run's seeds with their 95 % interval (the JSON's headline), the rest seed 0's."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _band(b: dict[str, float], fmt: str = "{:,.1f}") -> str:
    spread = "" if b["low"] == b["high"] else f" ({fmt.format(b['low'])}-{fmt.format(b['high'])})"
    return fmt.format(b["mean"]) + spread


def main(out: Path) -> None:
    for path in sorted(out.glob("*.json")):
        text = path.read_text()
        if not text:
            continue  # a run still writing
        doc = json.loads(text)
        head, cost, waste = doc["headline"], doc["cost"], doc["waste"]
        seeds = doc["seeds"]
        targets = ", ".join(
            f"{k.removesuffix(' within target %')} {_band(v, '{:.1f}')} %"
            for k, v in head.items()
            if k.endswith("within target %")
        )
        jobs = {t["tenant"]: f"{t['within']:,}/{t['jobs']:,}" for t in doc["targetWait"]}
        print(
            f"{path.stem} (seeds {seeds[0]}-{seeds[-1]}): replayed {_band(head['GPU-h replayed %'], '{:.2f}')} % of "
            f"GPU-h; provisioned {doc['gpuHours']['provisioned']:,.0f} GPU-h; waste {_band(head['waste %'])} % "
            f"(seed {seeds[0]}: unallocated {100 * waste['unallocated']:.1f} + idle {100 * waste['idle']:.1f}); "
            f"within 1h: {targets} (seed {seeds[0]} jobs within/replayed {jobs}); "
            f"USD/month {_band(head['cost USD / month'], '{:,.0f}')}; USD per busy GPU-h "
            f"{_band(head['USD per busy GPU-h'], '{:.2f}')}; saving vs all on-demand node-hours "
            f"{cost['savingVsAllOnDemandPercent']:.1f} %, vs static {cost['savingVsStaticPercent']:.1f} %; "
            f"USD over the replay {cost['usd']:,.0f} in {doc['hours'] / 24:,.1f} d; "
            f"mean wait {head['mean wait s']['mean'] / 86400:.1f} d; preempted {doc['preempted']:,}, "
            f"interrupted {doc['interrupted']:,}, GPU-h lost {doc['lostGpuHours']:,.0f}"
        )


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/gpuplat-claims"))
