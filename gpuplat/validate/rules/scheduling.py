"""Rules on `scheduling`: what needs Kueue."""

from __future__ import annotations

from collections.abc import Iterator

from gpuplat.diagnostics import Level
from gpuplat.validate.registry import Finding, rule
from gpuplat.validate.rules._common import Data, section


@rule(
    "GP370",
    "topology-aware-needs-kueue",
    Level.WARNING,
    "Topology-aware placement is Kueue's Topology Aware Scheduling; without Kueue nothing reads the topology.",
    source="https://kueue.sigs.k8s.io/docs/concepts/topology_aware_scheduling/",
    fix="Set `scheduling.queueing: kueue`, or turn `scheduling.topologyAware` off.",
)
def topology_aware_needs_kueue(data: Data) -> Iterator[Finding]:
    scheduling = section(data, "scheduling")
    if scheduling is not None and scheduling.get("queueing") == "none" and scheduling.get("topologyAware") is True:
        yield Finding(
            ("scheduling", "topologyAware"),
            "topologyAware: true has no effect with queueing: none, because topology-aware placement is done by "
            "Kueue; use queueing: kueue or set topologyAware: false",
        )
