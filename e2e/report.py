"""e2e/report.json: what the suite ran and what the engines said."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Scenario:
    stack: str
    scenario: str
    ok: bool
    detail: str


@dataclass
class Journey:
    stack: str
    tenant: str
    pool: str
    resource: str
    predicted: str
    actual: str
    reason: str


@dataclass
class Report:
    tools: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    scenarios: list[Scenario] = field(default_factory=list)
    journeys: list[Journey] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)  # the real engine's commands, in seconds
    # Each component the suite plays a part of: {"status": run | stand-in | not run, "detail"}.
    components: dict[str, dict[str, str]] = field(default_factory=dict)

    def component(self, name: str, status: str, detail: str) -> None:
        self.components[name] = {"status": status, "detail": detail}

    def scenario(self, stack: str, name: str, ok: bool, detail: str) -> None:
        self.scenarios.append(Scenario(stack, name, ok, detail))
        print(f"  {'ok  ' if ok else 'FAIL'} {stack}: {name}: {detail[:400]}", flush=True)

    def timing(self, stack: str, command: str, seconds: float) -> None:
        self.timings.append({"stack": stack, "command": command, "seconds": round(seconds, 1)})

    def journey(self, journey: Journey) -> None:
        self.journeys.append(journey)
        agree = "ok  " if journey.predicted == journey.actual else "FAIL"
        print(f"  {agree} {journey.stack}: {journey.tenant} -> {journey.pool} ({journey.resource}): "
              f"verify {journey.predicted}, real {journey.actual}: {journey.reason[:300]}", flush=True)

    @property
    def failures(self) -> int:
        # A journey fails when verify's prediction is not what the engines did; one both call
        # blocked is reported, with the controller's reason, as their agreement.
        return sum(not s.ok for s in self.scenarios) + sum(j.predicted != j.actual for j in self.journeys)

    def write(self, path: Path) -> None:
        document = {"tools": self.tools, "seconds": round(self.seconds, 1),
                    "scenarios": [asdict(s) for s in self.scenarios],
                    "journeys": [asdict(j) for j in self.journeys], "timings": self.timings,
                    "components": self.components}
        path.write_text(json.dumps(document, indent=2) + "\n")
