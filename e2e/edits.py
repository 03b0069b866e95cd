"""The diff gate against the real engine: each edit the gate knows, applied to a deployed stack.

For each edit (a tenant renamed, hot storage doubled, a pool added, the pools reordered, the
Kubernetes version bumped, the provider switched to another cluster), the create / update /
replace / delete of every URN in `pulumi preview --json` must be the one the diff of `gpuplat
preview --base` gives (recorded here from two specs in a subprocess, as the CLI does), and an
edit the gate refuses must be one the engine refuses too (it would lose a protected resource):
every protected resource the engine names, it names for the operation the gate refuses, and
the engine's plan, which a preview still shows when it fails on protected resources, is the
gate's. The others are applied with `pulumi up` and the stack is brought back, except a
Kubernetes version the cluster does not run yet: the spec follows a cluster upgrade, so `pulumi up`
of it against the older API server would create objects of the newer version that server does not
serve; such an edit is judged on the preview only.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e.cluster import E2EError
from e2e.engine import Engine
from e2e.report import Report
from e2e.stack import GPUPLAT, ROOT, Target

# Preview ops as the engine prints them, folded into the four gpuplat predicts.
_OPS = {"create": "create", "update": "update", "delete": "delete", "replace": "replace",
        "create-replacement": "replace", "delete-replaced": "replace", "discard": "delete"}


def predicted_changes(target: Target, base_spec: Path, head_spec: Path) -> dict[str, str]:
    """URN -> op that `gpuplat preview --base` would print for this edit (the same diff, from two
    recordings of the program made in a subprocess, as the CLI does)."""
    script = (
        "import json, sys\n"
        "from gpuplat.preview.stack import record_stack\n"
        "from gpuplat.preview.diff import diff_resources\n"
        "base = record_stack(sys.argv[1], spec=sys.argv[2])\n"
        "head = record_stack(sys.argv[1], spec=sys.argv[3])\n"
        "print(json.dumps([[c.urn, c.op, c.refused] for c in diff_resources(base, head)]))\n"
    )
    python = str(Path(GPUPLAT[0]).parent / "python")
    done = subprocess.run([python, "-c", script, target.stack, str(base_spec), str(head_spec)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise E2EError(f"recording the edit failed: {done.stderr.strip()[-1500:]}")
    return {urn: ("refused:" if refused else "") + op for urn, op, refused in json.loads(done.stdout)}


def real_changes(steps: list[dict[str, Any]]) -> dict[str, str]:
    found: dict[str, str] = {}
    for step in steps:
        op = _OPS.get(step.get("op", ""))
        if op is not None:
            found[step["urn"]] = op
    return found


EDITS: dict[str, Callable[[dict[str, Any]], None]] = {}


def _edit(name: str) -> Callable[[Callable[[dict[str, Any]], None]], Callable[[dict[str, Any]], None]]:
    def register(fn: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
        EDITS[name] = fn
        return fn
    return register


@_edit("tenant renamed")
def _rename_tenant(spec: dict[str, Any]) -> None:
    spec["tenants"][0]["name"] = spec["tenants"][0]["name"] + "-renamed"


@_edit("storage grown")
def _grow_storage(spec: dict[str, Any]) -> None:
    spec["storage"]["hot"]["capacityTiB"] = int(spec["storage"]["hot"]["capacityTiB"]) * 2


@_edit("pool added")
def _add_pool(spec: dict[str, Any]) -> None:
    pool = copy.deepcopy(spec["gpuNodePools"][-1])
    pool["name"] = "extra"
    pool.pop("fabric", None)
    pool["nodeSelector"] = {**pool.get("nodeSelector", {}), "gpuplat.dev/pool": "extra"}
    spec["gpuNodePools"].append(pool)


@_edit("pools reordered")
def _reorder_pools(spec: dict[str, Any]) -> None:
    spec["gpuNodePools"].reverse()


def other_context(context: str) -> str:
    """The kubeconfig's second context (e2e/deploy.py kubeconfig_for): another cluster entry."""
    return f"{context}-other"


@_edit("cluster switched")
def _switch_cluster(spec: dict[str, Any]) -> None:
    # The provider's `context` selects another cluster entry of the kubeconfig: pulumi-kubernetes'
    # DiffConfig replaces the provider, and with it every object (gpuplat/preview/providers.py).
    spec["target"]["context"] = other_context(spec["target"]["context"])


@_edit("version bumped")
def _bump_version(spec: dict[str, Any]) -> None:
    major, minor = str(spec["target"]["kubernetesVersion"]).split(".")
    spec["target"]["kubernetesVersion"] = f"{major}.{int(minor) + 1}"


def tail(done: subprocess.CompletedProcess[str], chars: int = 400) -> str:
    return (done.stdout + done.stderr).strip()[-chars:]


# The engine refusing a protected resource: "unable to replace resource \"URN\"" (step_generator.go),
# or, for a delete, "resource \"URN\" cannot be deleted because it is protected" (step.go).
_PROTECTED = re.compile(r'unable to (replace|delete) resource \\?"(urn:pulumi:[^"\\]+)')
_DELETE_PROTECTED = re.compile(r'resource \\?"(urn:pulumi:[^"\\]+)\\?" cannot be deleted')


def engine_refusals(output: str) -> dict[str, str]:
    """URN -> the operation the engine refuses on it because it is protected."""
    found = {urn: "delete" for urn in _DELETE_PROTECTED.findall(output)}
    return found | {urn: op for op, urn in _PROTECTED.findall(output)}


def _compare(name: str, predicted: dict[str, str], steps: list[dict[str, Any]]) -> list[str]:
    plain = {urn: op.removeprefix("refused:") for urn, op in predicted.items()}
    real = real_changes(steps)
    differ = sorted(urn for urn in set(plain) | set(real) if plain.get(urn) != real.get(urn))
    return [f"{name}: {urn.rsplit('::', 1)[-1]}: predicted {plain.get(urn, 'no change')}, "
            f"engine {real.get(urn, 'no change')}" for urn in differ[:4]]


def _judge_refused(name: str, predicted: dict[str, str], preview: subprocess.CompletedProcess[str],
                   steps: list[dict[str, Any]]) -> list[str]:
    """Both refuse: the engine's protected resources are refused by the gate for the same
    operation, and the plan the failed preview still shows is the gate's."""
    named = engine_refusals(preview.stdout + preview.stderr)
    refused = {urn: op.removeprefix("refused:") for urn, op in predicted.items() if op.startswith("refused:")}
    found = [f"{name}: the engine refuses to {op} {urn.rsplit('::', 1)[-1]}, the gate "
             f"{'does not refuse it' if urn not in refused else 'refuses a ' + refused[urn]}"
             for urn, op in sorted(named.items()) if refused.get(urn) != op]
    if not named:
        found.append(f"{name}: the engine's refusal names no protected resource: {tail(preview)}")
    # A refusal stops the engine's plan: what it never reached (no step of any kind, the deletes it
    # would have planned last) cannot be compared; everything it did plan is.
    reached = {step.get("urn") for step in steps}
    rest = {urn: op for urn, op in predicted.items() if urn in reached}
    return found + (_compare(name, rest, steps) if steps else [])


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def _judge_edit(engine: Engine, name: str, predicted: dict[str, str], apply: bool) -> tuple[list[str], bool]:
    """Mismatches between the gate and the engine for one edit, and whether it was applied."""
    # --show-sames: every resource the engine reached has a step, so what it never reached is known.
    preview = engine.run("preview", "--json", "--show-sames", check=False)
    steps = json.loads(preview.stdout).get("steps", []) if preview.stdout.strip().startswith("{") else []
    output = preview.stdout + preview.stderr
    refused_by_engine = preview.returncode != 0 and ("protected" in output or "marked for protection" in output)
    refused_by_gate = any(op.startswith("refused:") for op in predicted.values())
    if refused_by_gate or refused_by_engine:
        if refused_by_gate == refused_by_engine:
            return _judge_refused(name, predicted, preview, steps), False
        return [f"{name}: gate refuses={refused_by_gate}, engine refuses={refused_by_engine}: {tail(preview)}"], False
    if preview.returncode != 0:
        return [f"{name}: pulumi preview failed: {tail(preview)}"], False
    found = _compare(name, predicted, steps)
    if not apply:
        return found, False
    up = engine.run("up", "--yes", "--skip-preview", check=False)
    if up.returncode != 0:
        found.append(f"{name}: pulumi up failed: {tail(up)}")
    return found, True


def gate_edits(engine: Engine, target: Target, report: Report, label: str, server_version: str) -> None:
    assert target.spec is not None
    yaml = YAML(typ="safe")
    base = yaml.load(target.spec.read_text())
    mismatches, applied, previewed = [], 0, []
    for name, edit in EDITS.items():
        edited = copy.deepcopy(base)
        edit(edited)
        head = engine.workdir / f"edit-{name.replace(' ', '-')}.yaml"
        with head.open("w") as out:
            yaml.dump(edited, out)
        predicted = predicted_changes(target, target.spec, head)
        engine.env["GPUPLAT_SPEC"] = str(head)
        try:
            runs = _minor(str(edited["target"]["kubernetesVersion"])) <= _minor(server_version)
            if not runs:
                previewed.append(name)
            mismatch, ran_up = _judge_edit(engine, name, predicted, apply=runs)
        finally:
            engine.env["GPUPLAT_SPEC"] = str(target.spec)
        mismatches += mismatch
        if ran_up:
            applied += 1
            back = engine.run("up", "--yes", "--skip-preview", check=False)
            if back.returncode != 0:
                mismatches.append(f"{name}: pulumi up back to the base failed: {tail(back)}")
    only = f", {', '.join(previewed)} previewed only: the cluster runs {server_version}" if previewed else ""
    report.scenario(label, "pulumi-gate-edits", not mismatches,
                    "; ".join(mismatches[:6]) or f"{len(EDITS)} edits: the engine did what the gate predicted "
                    f"({applied} applied with pulumi up{only}, the rest refused by both)")
