"""`pulumi up` for real: a stack deployed by the Pulumi engine on the local control plane, and
measured against what gpuplat says offline.

- pulumi-preview-matches-recording: the real preview plans the URNs, types, parents and inputs
  `gpuplat preview` recorded (the provider may add defaults and drop a false flag; it may not
  drop or change any other value).
- pulumi-up / pulumi-up-again-empty: every resource created, then a second `up` with nothing to do.
- pulumi-gate-edits: for each edit the diff gate knows, the real engine's create / update /
  replace / delete of each URN is the one `gpuplat preview --base` predicts, and an edit the
  gate refuses is one the engine refuses (protected resources) too.
- pulumi-policy: the CrossGuard pack run by the engine reports what `gpuplat policy` reports.
- pulumi-destroy: destroy refuses protected resources; `--exclude-protected` removes the rest;
  what is protected or retained is still in the cluster afterwards.
- preflight-stops-before-create: an aws stack the preflight refuses, under `up --skip-preview`,
  leaves a stack with no resource at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e import kueue, scenarios
from e2e.cluster import Cluster, E2EError
from e2e.edits import gate_edits, other_context, tail
from e2e.engine import PROJECT, Engine, local_charts_setting, stack_settings, stand_in_charts
from e2e.objects import upstream_crds
from e2e.report import Report
from e2e.stack import GPUPLAT, ROOT, Stack, Target, run_gpuplat
from e2e.upstream import UpstreamMissing
from gpuplat.catalog.charts import chart_of_release


class NetworkOperatorReport:
    """Plays the one report of the NVIDIA network operator the deploy waits for: the program makes
    Pulumi wait (`pulumi.com/waitFor`) until the operator reports a state of nv-ipam on the
    NicClusterPolicy, after it has applied nv-ipam's objects. No operator runs here (its CRDs come
    from the stand-in chart), so the suite writes that status once the policy exists."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> NetworkOperatorReport:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def _run(self) -> None:
        status = {"status": {"state": "ready", "appliedStates": [{"name": "state-nv-ipam-cni", "state": "ready"}]}}
        while not self.stop.wait(1.0):
            try:
                policies = self.cluster.items("nicclusterpolicies.mellanox.com")
            except E2EError:
                continue  # the CRD is not there yet
            for policy in policies:
                if not policy.get("status"):
                    self.cluster.kubectl("patch", "nicclusterpolicies.mellanox.com", policy["metadata"]["name"],
                                         "--subresource=status", "--type=merge", "-p", json.dumps(status),
                                         check=False)


def kubeconfig_for(cluster: Cluster, context: str | None) -> str:
    """The cluster's kubeconfig with its context named as the spec's target.context, and a second
    context (`other_context`) on another cluster entry: the same API server with compression off,
    a different active cluster to pulumi-kubernetes, so the gate edit switching to it replaces
    every object (e2e/edits.py)."""
    yaml = YAML(typ="safe")
    config = yaml.load(cluster.kubeconfig.read_text())
    if context:
        config["contexts"][0]["name"] = context
        config["current-context"] = context
    first, entry = config["contexts"][0], config["clusters"][0]
    other = {"name": f"{entry['name']}-other", "cluster": {**entry["cluster"], "disable-compression": True}}
    config["clusters"].append(other)
    config["contexts"].append({"name": other_context(first["name"]),
                               "context": {**first["context"], "cluster": other["name"]}})
    return json.dumps(config)


def _release_chart(inputs: Mapping[str, Any]) -> Any:
    """A release's chart as the catalog names it, whether from its repository or a local copy."""
    chart = chart_of_release(inputs.get("chart"))
    return chart.release_chart if chart is not None else inputs.get("chart")


def _comparable(type_: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    found = dict(inputs)
    if type_ == "kubernetes:helm.sh/v3:Release":
        # The only difference local charts make: where the chart comes from.
        found["chart"] = _release_chart(found)
        found.pop("repositoryOpts", None)
        found.pop("compat", None)  # the SDK's marker for the provider, not a setting of the release
        if isinstance(found.get("version"), str):  # the provider's Check drops a semver's "v"
            found["version"] = found["version"].removeprefix("v")
    if type_.startswith("pulumi:providers:"):
        found.pop("kubeconfig", None)  # a secret the recording never had
        found.pop("version", None)
    return found


def input_differences(recorded: Any, real: Any, path: str = "") -> list[str]:
    """Where the real inputs lose or change a value the recording holds; additions are allowed
    (the provider's Check fills in defaults)."""
    if isinstance(recorded, Mapping) and isinstance(real, Mapping):
        found = []
        for key, value in recorded.items():
            if key not in real:
                # The provider's Check drops fields left at their zero value (`globalDefault:
                # false`); a number, even 0, must arrive.
                if not (value is False or value in (None, "", {}, [])):
                    found.append(f"{path}{key}: recorded {json.dumps(value)[:80]}, not in the real inputs")
                continue
            found += input_differences(value, real[key], f"{path}{key}.")
        return found
    if isinstance(recorded, list) and isinstance(real, list) and len(recorded) == len(real):
        return [d for i, (a, b) in enumerate(zip(recorded, real, strict=True))
                for d in input_differences(a, b, f"{path}{i}.")]
    if recorded != real and not (isinstance(real, str) and real == "[secret]"):
        return [f"{path.rstrip('.')}: recorded {json.dumps(recorded)[:80]}, real {json.dumps(real)[:80]}"]
    return []


def compare_preview(recorded: list[dict[str, Any]], steps: list[dict[str, Any]]) -> list[str]:
    real = {s["urn"]: s.get("newState") or {} for s in steps}
    problems = []
    recorded_urns = {r["urn"] for r in recorded}
    problems += [f"only the real engine plans {urn}" for urn in sorted(set(real) - recorded_urns)]
    problems += [f"only the recording has {urn}" for urn in sorted(recorded_urns - set(real))]
    for resource in recorded:
        state = real.get(resource["urn"])
        if state is None:
            continue
        name = resource["urn"].rsplit("::", 1)[-1]
        if state.get("type") != resource["type"]:
            problems.append(f"{name}: type {state.get('type')} (real) vs {resource['type']}")
        if (state.get("parent") or None) != resource.get("parent"):
            problems.append(f"{name}: parent {state.get('parent')} (real) vs {resource.get('parent')}")
        if resource.get("custom"):
            diffs = input_differences(_comparable(resource["type"], resource["inputs"]),
                                      _comparable(resource["type"], state.get("inputs") or {}))
            problems += [f"{name}: {d}" for d in diffs]
    return problems


def changed_paths(engine: Engine) -> str:
    """What a preview would change now, path by path, as the engine's detailed diff says."""
    preview = engine.json_of("preview", "--diff", check=False)
    changes = [f"{step['op']} {step['urn'].rsplit('::', 1)[-1]}: "
               + ", ".join(f"{path} ({d.get('kind')})" for path, d in sorted((step.get("detailedDiff") or {}).items()))
               for step in preview.get("steps", []) if step.get("op") != "same"]
    return "; ".join(changes) or "no change in a fresh preview"


def run_deploy(target: Target, stack: Stack, cluster: Cluster, tools: Mapping[str, Path], report: Report,
               workdir: Path, timeout: float, agents: Callable[[], Any]) -> None:
    label = target.label
    assert target.spec is not None
    if target.project is not None:  # its own program, spec and stack settings, as they are
        engine = Engine(workdir / "pulumi", tools, target.stack, {}, project=target.project)
        settings = {}
    else:
        engine = Engine(workdir / "pulumi", tools, target.stack, {"GPUPLAT_SPEC": str(target.spec)})
        settings = stack_settings(target.stack)
    try:
        charts = stand_in_charts(workdir / "charts")
    except UpstreamMissing as err:
        raise E2EError(f"stand-in charts: {err}") from None
    context = YAML(typ="safe").load(target.spec.read_text())["target"].get("context")
    engine.init({**settings, **local_charts_setting(charts)},
                {f"{PROJECT}:kubeconfig": kubeconfig_for(cluster, context)})

    # Kueue runs through the whole deploy, as on a real cluster, so its webhooks judge every
    # queue `up` creates. Its CRDs come first (the release's stand-in then finds them there, as
    # Helm does on an upgrade); the node agents register the pools' devices for the floor.
    refused = cluster.apply([c for c in upstream_crds() if c["spec"]["group"] == "kueue.x-k8s.io"])
    cluster.wait_established()
    if refused:
        raise E2EError(f"Kueue's CRDs refused: {refused[0][1]}")
    kueue.start(cluster, stack)
    with agents(), NetworkOperatorReport(cluster):
        if deploy_and_compare(engine, stack, report, label):
            scenarios.journeys(cluster, stack, report, timeout)
            policy(engine, target, report, label)
            if target.project is None:  # the gate's edits rewrite the spec the engine is given
                gate_edits(engine, target, report, label, cluster.server_version())
            destroy(engine, cluster, stack, report, label)


def newcomer_project(workdir: Path, label: str) -> Target:
    """A new team's platform as `gpuplat init --provider kubernetes` writes it, set up as its
    README says. Its `.venv` is the suite's own: `pip install -r requirements.txt` needs an
    index the namespace cannot reach, and would install the same gpuplat."""
    project = workdir / "acme"
    done = run_gpuplat("init", str(project), "--provider", "kubernetes", "--name", "acme")
    if done.returncode != 0:
        raise E2EError(f"gpuplat init exited {done.returncode}: {(done.stdout + done.stderr).strip()[-800:]}")
    (project / ".venv").symlink_to(Path(sys.executable).parent.parent)
    return Target(label, "dev", project / "platform" / "platform.yaml", project / "stacks" / "dev.yaml",
                  project=project)


def deploy_and_compare(engine: Engine, stack: Stack, report: Report, label: str) -> bool:
    """The real preview against the recording, then `up`, then `up` again; False when `up` failed."""
    started = time.monotonic()
    preview = engine.json_of("preview")
    report.timing(label, "pulumi preview", time.monotonic() - started)
    problems = compare_preview(stack.resources, preview.get("steps", []))
    report.scenario(label, "pulumi-preview-matches-recording", not problems,
                    "; ".join(problems) or f"{len(stack.resources)} resources: same URNs, types, parents "
                    "and recorded inputs")

    started = time.monotonic()
    up = engine.run("up", "--yes", "--skip-preview", check=False)
    report.timing(label, "pulumi up", time.monotonic() - started)
    state = {r["urn"] for r in engine.resources()} if up.returncode == 0 else set()
    missing = sorted({r["urn"] for r in stack.resources} - state)
    report.scenario(label, "pulumi-up", up.returncode == 0 and not missing,
                    (up.stdout + up.stderr).strip()[-1500:] if up.returncode else
                    f"missing from the state: {missing[:5]}" if missing else
                    f"{len(state)} resources created on the local control plane")
    if up.returncode != 0:
        return False
    pending = changed_paths(engine)  # before `up` applies them
    started = time.monotonic()
    again = engine.run("up", "--yes", "--expect-no-changes", check=False)
    report.timing(label, "pulumi up (no change)", time.monotonic() - started)
    report.scenario(label, "pulumi-up-again-empty", again.returncode == 0,
                    "the second `pulumi up` changed nothing" if again.returncode == 0
                    else f"{pending}; {tail(again, 800)}")
    return True


def policy(engine: Engine, target: Target, report: Report, label: str) -> None:
    offline = subprocess.run([*GPUPLAT, "policy", *target.args(), "--format", "json"], cwd=ROOT,
                             capture_output=True, text=True)
    try:
        expected = {(v["policy"], v["urn"]) for v in json.loads(offline.stdout)["violations"]}
    except (json.JSONDecodeError, KeyError, TypeError):
        report.scenario(label, "pulumi-policy", False, f"gpuplat policy printed no JSON: {offline.stderr[-800:]}")
        return
    # `preview --json` leaves policy events out; the engine's event log carries them.
    log = engine.workdir / "policy-events.jsonl"
    # (--event-log is among the CLI's debug commands, as the Automation API runs it.)
    engine.env["PULUMI_DEBUG_COMMANDS"] = "true"
    try:
        real = engine.run("preview", "--policy-pack", str(ROOT / "policy"), "--event-log", str(log), check=False)
    finally:
        engine.env.pop("PULUMI_DEBUG_COMMANDS")
    found, evaluated = policy_events(log)
    ok = bool(evaluated) and found == expected and (real.returncode == 0) == (not expected)
    detail = (f"the pack ran {len(evaluated)} rules in the engine; {len(found)} violations there, "
              f"{len(expected)} from gpuplat policy")
    if not ok:
        detail += (f": engine only {sorted(found - expected)[:4]}, gpuplat only {sorted(expected - found)[:4]}; "
                   f"{(real.stdout + real.stderr).strip()[-600:]}")
    report.scenario(label, "pulumi-policy", ok, detail)


def policy_events(log: Path) -> tuple[set[tuple[str, str]], set[str]]:
    """(policy, URN) of every violation in an engine event log, and the rules that ran."""
    violations: set[tuple[str, str]] = set()
    evaluated: set[str] = set()
    if not log.exists():
        return violations, evaluated
    for line in log.read_text().splitlines():
        event = json.loads(line) if line.strip() else {}
        if violation := event.get("policyEvent"):
            violations.add((violation["policyName"], violation.get("resourceUrn", "")))
        if summary := event.get("policyAnalyzeSummaryEvent"):
            evaluated.update(summary.get("passed") or [], summary.get("failed") or [])
    return violations, evaluated


def destroy(engine: Engine, cluster: Cluster, stack: Stack, report: Report, label: str) -> None:
    kept = [r for r in stack.resources if r.get("options", {}).get("protect")
            or r.get("options", {}).get("retainOnDelete")]
    refused = engine.run("destroy", "--yes", check=False)
    says_protected = refused.returncode != 0 and "protected" in (refused.stdout + refused.stderr)
    rest = engine.run("destroy", "--yes", "--exclude-protected", check=False)
    left = {r["urn"] for r in engine.resources() if r.get("custom")}
    present = [r for r in kept if r["type"].startswith("kubernetes:") and _exists(cluster, r["inputs"])]
    ok = says_protected and rest.returncode == 0 and len(present) == len(
        [r for r in kept if r["type"].startswith("kubernetes:")])
    report.scenario(label, "pulumi-destroy", ok,
                    f"destroy refused ({'names' if says_protected else 'does NOT name'} the protected resources); "
                    f"--exclude-protected {'removed' if rest.returncode == 0 else 'FAILED to remove'} the rest; "
                    f"{len(present)} protected/retained objects still in the cluster, {len(left)} left in the state")


def _exists(cluster: Cluster, inputs: Mapping[str, Any]) -> bool:
    meta = inputs.get("metadata", {})
    kind = inputs.get("kind", "")
    return cluster.get(kind.lower(), meta.get("name", ""), meta.get("namespace", "")) is not None


def preflight_stops(tools: Mapping[str, Path], report: Report, workdir: Path) -> None:
    """prod as CI deploys it (`up --yes --skip-preview`), with the one mistake preflight can tell
    without the account: a private endpoint and no way in declared for the deploying runner."""
    label = "preflight-pulumi"
    engine = Engine(workdir, tools, "prod", {"GPUPLAT_SPEC": str(ROOT / "platform" / "platform.yaml"),
                                              "GPUPLAT_OVERLAY": str(ROOT / "stacks" / "prod.yaml")})
    settings = {k: v for k, v in stack_settings("prod").items()
                if k not in (f"{PROJECT}:apiAccessCidrs", f"{PROJECT}:apiAccessSecurityGroupIds")}
    engine.init(settings, {})
    up = engine.run("up", "--yes", "--skip-preview", check=False)
    output = (up.stdout + up.stderr).strip()
    created = [r["urn"] for r in engine.resources() if r["type"] != "pulumi:pulumi:Stack"]
    ok = (up.returncode != 0 and "would stop at preflight" in output and "Traceback" not in output
          and not created)
    at = output.rfind("would stop at preflight")
    report.scenario(label, "preflight-stops-before-create", ok,
                    f"up --skip-preview exited {up.returncode}, {len(created)} resources in the state: "
                    + (output[at:at + 300] if at >= 0 else output[-400:]))
