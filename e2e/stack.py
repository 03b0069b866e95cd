"""A stack as the platform compiles it: the recorded resources, the plan and verify's
predictions, all through the `gpuplat` command a user runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e.cluster import E2EError

ROOT = Path(__file__).resolve().parent.parent
# The console script installed beside the interpreter running the suite (.venv/bin/gpuplat).
GPUPLAT = [str(Path(sys.executable).parent / "gpuplat")]
# The clone's own package first: a .venv shared by several clones (worktrees) has an editable
# install of one of them, and the suite must compile with the code it is run from.
_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@dataclass(frozen=True)
class Target:
    """What to compile: a label for the report and the CLI's stack / spec arguments."""

    label: str
    stack: str = "dev"
    spec: Path | None = None
    overlay: Path | None = None
    # A project of a user's own (`gpuplat init`'s): the engine runs its program and settings.
    project: Path | None = None
    # A recording to run instead of compiling (`gpuplat preview --format json`'s output, perhaps
    # edited): its resources are applied; the plan and verify's journeys still come from the spec.
    recording: Path | None = None

    def args(self) -> list[str]:
        return ["--stack", self.stack, *(["--spec", str(self.spec)] if self.spec else []),
                *(["--overlay", str(self.overlay)] if self.overlay else [])]


@dataclass(frozen=True)
class Stack:
    target: Target
    resources: list[dict[str, Any]]
    plan: dict[str, Any]
    journeys: list[dict[str, Any]]

    @property
    def provider(self) -> str:
        return "aws" if self.of_type("aws:eks/cluster:Cluster") else "kubernetes"

    @property
    def kubernetes_minor(self) -> str:
        """The minor the stack targets: its EKS cluster's version on aws; on provider kubernetes
        the cluster exists already, at the version the spec says it runs."""
        for cluster in self.of_type("aws:eks/cluster:Cluster"):
            return str(cluster["version"])
        return str(self.plan["kubernetes"]["version"])

    def of_type(self, type_: str) -> list[dict[str, Any]]:
        return [r["inputs"] for r in self.resources if r["type"] == type_]

    def release(self, chart_key: str) -> dict[str, Any] | None:
        for inputs in self.of_type("kubernetes:helm.sh/v3:Release"):
            if inputs.get("name") == chart_key:
                return inputs
        return None


def run_gpuplat(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GPUPLAT, *args], cwd=ROOT, capture_output=True, text=True, env=_ENV)


def _gpuplat_json(*args: str) -> dict[str, Any]:
    result = run_gpuplat(*args, "--format", "json")
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError:
        raise E2EError(f"gpuplat {args[0]} exited {result.returncode}: {result.stderr.strip()[-1500:]}") from None


def load_recording(path: Path) -> list[dict[str, Any]]:
    """The resources of a recording file, or E2EError saying what is wrong with it."""
    try:
        document = json.loads(path.read_text())
    except OSError as err:
        raise E2EError(f"{path}: {err.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise E2EError(f"{path}: not JSON ({err})") from None
    resources = document.get("resources") if isinstance(document, dict) else None
    if not isinstance(resources, list) or not all(
            isinstance(r, dict) and isinstance(r.get("type"), str) and isinstance(r.get("inputs"), dict)
            for r in resources):
        raise E2EError(f"{path}: not a recording (`gpuplat preview --format json` writes "
                       '{"resources": [{"urn", "type", "inputs", ...}]})')
    return resources


def compile_target(target: Target) -> Stack:
    if target.recording is not None:
        preview = {"resources": load_recording(target.recording)}
    else:
        preview = _gpuplat_json("preview", *target.args())
    if "resources" not in preview:
        raise E2EError(f"gpuplat preview of {target.label} produced no resources: {preview}")
    plan = _gpuplat_json("plan", *target.args())
    # verify follows the journeys over the recording preview just made (recording is most of
    # the compile time), so its predictions are about exactly the objects the suite applies.
    return Stack(target, preview["resources"], plan, verify_recording(target, preview["resources"]))


def verify_recording(target: Target, resources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """verify's journeys over these recorded resources (`gpuplat verify --recording`)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="gpuplat-recording-") as recording:
        json.dump({"resources": resources}, recording)
        recording.flush()
        return list(_gpuplat_json("verify", *target.args(), "--recording", recording.name).get("journeys", []))
