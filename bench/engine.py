"""The real Pulumi engine per resource on a generated kubernetes-provider spec, beside `gpuplat preview`.

The engine, the Kubernetes provider and the control plane are the e2e suite's, from its tool
cache (`make e2e-tools`): the program runs under `pulumi preview` and `pulumi up` against a
fresh local control plane (inside a network namespace of its own, as the suite runs), with the
pools' nodes made and their devices registered so the capacity floors' Deployments become ready.
`pulumi preview` runs twice, with the program as shipped (the cycle collector paused, as in
`gpuplat preview`'s recording) and with that one line taken out, to weigh the pause.

    .venv/bin/python bench/engine.py                    # the large kubernetes spec: preview, up
    .venv/bin/python bench/engine.py --size medium --no-up

Prints one JSON document: per command, wall seconds, the CPU seconds of its processes, and
milliseconds per resource.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere: this checkout's e2e and gpuplat
    sys.path.insert(0, str(ROOT))

from bench.generate import SIZES, generate, write_spec  # noqa: E402
from e2e import netns, nodes  # noqa: E402
from e2e.cluster import Cluster  # noqa: E402
from e2e.deploy import NetworkOperatorReport, kubeconfig_for  # noqa: E402
from e2e.engine import PROJECT, Engine, local_charts_setting, stand_in_charts  # noqa: E402
from e2e.stack import Stack, Target, run_gpuplat  # noqa: E402
from e2e.suite import device_model, existing_gpu_nodes  # noqa: E402
from e2e.tools import build  # noqa: E402

PAUSE = "gc.disable()\n"


def timed(run: Callable[[], Any]) -> tuple[Any, float, float]:
    """(result, wall seconds, CPU seconds of the child processes that ended meanwhile)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = run()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def row(command: str, wall: float, cpu: float, count: int) -> dict[str, Any]:
    return {"command": command, "resources": count, "wallSeconds": round(wall, 1), "cpuSeconds": round(cpu, 1),
            "wallMsPerResource": round(1000 * wall / count, 2), "cpuMsPerResource": round(1000 * cpu / count, 2)}


def collector_running_main(directory: Path) -> Path:
    """The shipped program with the cycle collector's pause taken out."""
    directory.mkdir(parents=True)
    text = (ROOT / "__main__.py").read_text()
    if PAUSE not in text:
        raise SystemExit("__main__.py has no gc.disable(): nothing to compare")
    (directory / "__main__.py").write_text(text.replace(PAUSE, ""))
    return directory


def engine_for(workdir: Path, toolbox: dict[str, Path], spec: Path, cluster: Cluster, charts: Path,
               main: Path | None = None) -> Engine:
    env = {"GPUPLAT_SPEC": str(spec), "PYTHONPATH": str(ROOT)}
    engine = Engine(workdir, toolbox, "dev", env)
    if main is not None:  # the same project, another program directory
        settings = engine.project / "Pulumi.yaml"
        text = settings.read_text().replace(f"main: {os.path.relpath(ROOT, engine.project)}",
                                            f"main: {main}")
        settings.write_text(text)
    engine.init(local_charts_setting(charts), {f"{PROJECT}:kubeconfig": kubeconfig_for(cluster, "bench-admin@bench")})
    return engine


def run(size: str, up: bool) -> dict[str, Any]:
    pools, tenants = SIZES[size].pools, SIZES[size].tenants
    toolbox = build.binaries()
    minor = max(toolbox, key=lambda m: tuple(int(p) for p in m.split(".")))
    work = Path(tempfile.mkdtemp(prefix="gpuplat-bench-engine-"))
    spec_doc = generate(pools, tenants, "kubernetes")
    spec_doc["target"]["kubernetesVersion"] = minor  # a control plane the tool cache has
    spec = write_spec(spec_doc, work / "spec.yaml")
    target = Target("bench", "dev", spec)
    rows = []

    recorded, wall, cpu = timed(lambda: run_gpuplat("preview", *target.args(), "--format", "json"))
    resources = json.loads(recorded.stdout)["resources"]
    count = len(resources)
    rows.append(row("gpuplat preview (recording, whole process)", wall, cpu, count))
    plan = json.loads(run_gpuplat("plan", *target.args(), "--format", "json").stdout)
    stack = Stack(target, resources, plan, [])

    cluster = Cluster("gpuplat-bench", work / "cluster", toolbox[minor])
    try:
        cluster.create()
        nodes.create(cluster, existing_gpu_nodes(stack))
        charts = stand_in_charts(work / "charts")
        shipped = engine_for(work / "pulumi", toolbox[minor], spec, cluster, charts)
        running = engine_for(work / "pulumi-gc", toolbox[minor], spec, cluster, charts,
                             collector_running_main(work / "main-gc"))
        for engine, name in ((shipped, "pulumi preview (collector paused, as shipped)"),
                             (running, "pulumi preview (collector running)")):
            _, wall, cpu = timed(lambda e=engine: e.run("preview", timeout=7200))
            rows.append(row(name, wall, cpu, count))
        if up:
            with nodes.NodeAgents(cluster, device_model(stack, cluster.tools)), NetworkOperatorReport(cluster):
                _, wall, cpu = timed(lambda: shipped.run("up", "--yes", "--skip-preview", timeout=7200))
                rows.append(row("pulumi up (collector paused, as shipped)", wall, cpu, count))
    finally:
        cluster.delete()
    return {"size": size, "pools": pools, "tenants": tenants, "kubernetes": minor, "resources": count,
            "nodes": len(existing_gpu_nodes(stack)), "loadAverage": os.getloadavg(), "rows": rows}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="large")
    parser.add_argument("--no-up", action="store_true", help="preview only")
    args = parser.parse_args(argv)
    netns.enter(argv, program=(str(Path(__file__).resolve()),))
    print(json.dumps(run(args.size, not args.no_up), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
