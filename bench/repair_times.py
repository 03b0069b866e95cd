"""The GPU-failure scenarios at the upstream times: how long a team waits from the fault to the
work running again when nothing is shortened for the suite.

    .venv/bin/python bench/repair_times.py [--only dev] [--scenario repair resume reboot]

The e2e suite shortens Karpenter's repair toleration to `karpenter.REPAIR_TOLERATION` (30 s) and
Kueue's `recoveryTimeout` for the single-pod scenario (20 s), so that a run fits CI. Here the
toleration is the AWS provider's for `AcceleratedHardwareReady` with the XIDs these scenarios
report (10 minutes; the suite's Karpenter applies one toleration to every agent condition, so
the 30-minute ones are 10 too, and no scenario here reports one) and Kueue runs as emitted
(10-minute `recoveryTimeout`). Same engines, same rows as the e2e report (each row's detail has
the seconds from the fault); they land in e2e/report-repair-times-<target>.json. A target takes
about 13 minutes per scenario. Not part of the test run; bench/results.md holds the numbers.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from e2e import gomod, karpenter, netns, nodes, reboot, releases, repair, resume  # noqa: E402
from e2e.cluster import Cluster  # noqa: E402
from e2e.report import Report  # noqa: E402
from e2e.stack import Stack  # noqa: E402
from e2e.suite import TARGETS, bring_up, device_model, on_fresh_cluster  # noqa: E402
from e2e.tools import build  # noqa: E402

UPSTREAM_TOLERATION = 600.0  # the AWS provider's, for AcceleratedHardwareReady with a known XID
SCENARIOS: dict[str, Callable[[Cluster, Stack, Report, float], None]] = {
    "repair": repair.node_failure,
    "resume": resume.multinode,
    "reboot": reboot.node_reboot,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", default="dev", choices=[t.label for t in TARGETS],
                        help="the aws target to run on (coverage: its pools reboot)")
    parser.add_argument("--scenario", nargs="+", choices=sorted(SCENARIOS), default=["repair", "resume"])
    parser.add_argument("--timeout", type=float, default=180, help="seconds to wait for each step")
    args = parser.parse_args(argv)
    target = next(t for t in TARGETS if t.label == args.only)
    toolbox = build.binaries()
    gomod.resolve_before_netns()
    netns.enter(argv, program=(str(Path(__file__).resolve()),))
    karpenter.REPAIR_TOLERATION = UPSTREAM_TOLERATION
    repair.RECOVERY = "10m"  # as emitted
    report = Report(tools=build.summary(), jobs=1)

    def steps(cluster: Cluster, stack: Stack) -> None:
        if stack.provider != "aws":  # Karpenter's toleration is what this bench stretches
            report.scenario(target.label, "repair-times", False, f"target {target.label} is provider {stack.provider}: "
                            f"no Karpenter repairs its nodes (the operator's drain is e2e/requeue.py's)")
            return
        installed = bring_up(cluster, stack, report)
        with nodes.NodeAgents(cluster, device_model(stack, cluster.tools)):
            releases.operands(cluster, stack, report, installed, args.timeout)
            for name in args.scenario:
                SCENARIOS[name](cluster, stack, report, args.timeout)

    workroot = Path(tempfile.mkdtemp(prefix="gpuplat-repair-times-"))
    netns.private_etc(workroot / "etc")
    try:
        on_fresh_cluster(target, toolbox, report, workroot, steps)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    written = ROOT / "e2e" / f"report-repair-times-{target.label}.json"
    report.write(written)
    print(f"repair-times: {report.summary()}; report in {written.relative_to(ROOT)}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
