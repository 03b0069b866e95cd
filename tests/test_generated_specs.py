"""What `check` accepts, every later command processes: a property test over generated valid specs.

tests/valid_specs.py builds specs meant to be valid (both providers, every sharing mode, market
mixes, capacity blocks, tenants, storage tiers, workloads, acknowledgements, hostile text in the
free-form strings). Each runs through the real CLI in this process, as a user would type it:
`check` first; a spec it rejects must come back as positioned JSON diagnostics, a spec it accepts
must then `plan`, `graph`, `simulate`, `preview`, `verify` and `policy` without an internal error,
with numbers that add up, and with every journey reaching a GPU: what `verify` fails, `check`
refuses (a stranded tenant is GP354, an error). The suite draws a few derandomized examples (the
program commands record the whole Pulumi program, seconds each); `GPUPLAT_FUZZ_EXAMPLES=N` raises
the count with fresh random draws, and bench/fuzz.py runs the same generator over 10^5 inputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from gpuplat.cli import main
from tests.valid_specs import generate_spec

ROOT = Path(__file__).resolve().parent.parent
T = TypeVar("T")

EXAMPLES = int(os.environ.get("GPUPLAT_FUZZ_EXAMPLES", "25"))
SETTINGS = settings(
    derandomize="GPUPLAT_FUZZ_EXAMPLES" not in os.environ,
    deadline=None,
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
# preview, verify and policy record the Pulumi program (1 to 5 s a spec on the 2-core machine).
PROGRAM_SETTINGS = settings(SETTINGS, max_examples=max(EXAMPLES // 6, 2))
MARKETS = ("reserved", "spot", "onDemand")


class HypothesisDraw:
    """The generator's Draw over hypothesis' data, so a failure shrinks to a small spec."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def choice(self, options: list[T] | tuple[T, ...]) -> T:
        return self.data.draw(st.sampled_from(options))

    def text(self) -> str:
        return self.data.draw(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=24))


@contextlib.contextmanager
def _project() -> Iterator[Path]:
    """A temporary directory for the spec, the commands run from the project as a user would."""
    here = Path.cwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(ROOT)
        try:
            yield Path(tmp)
        finally:
            os.chdir(here)


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    stderr = err.getvalue()
    for crash in ("internal error", "Traceback", "the program failed"):
        assert crash not in stderr, f"gpuplat {' '.join(args)}: {stderr[-2000:]}"
    return code, out.getvalue(), stderr


def _accepted(tmp: Path, spec: dict[str, Any]) -> tuple[Path, list[dict[str, Any]]] | None:
    """The spec written to a file if `check` accepts it, with check's diagnostics; else None after
    checking that the rejection is positioned JSON with exit 1."""
    path = tmp / "platform.yaml"
    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    with path.open("w", encoding="utf-8") as out:
        yaml.dump(spec, out)
    code, out, _ = _cli("check", "--stack", "dev", "--spec", str(path), "--format", "json")
    document = json.loads(out)
    assert code == (0 if document["valid"] else 1)
    for d in document["diagnostics"]:
        assert d["line"] >= 1 and d["col"] >= 1 and d["file"] and d["path"].startswith("$"), d
    if not document["valid"]:
        assert any(d["level"] == "error" for d in document["diagnostics"])
        return None
    return path, document["diagnostics"]


def _plan_adds_up(plan: dict[str, Any], spec: dict[str, Any]) -> None:
    pools = {p["name"]: p for p in plan["pools"]}
    assert list(pools) == [p["name"] for p in spec["gpuNodePools"]]
    aws = spec["target"]["provider"] == "aws"
    fleet = 0
    for p in plan["pools"]:
        at_max = p["gpusPerNode"] * p["nodes"]["max"]
        fleet += at_max
        if aws:  # every node at max is bought in exactly one market, and only in an allowed one
            bought = p["markets"]
            assert sum(bought[m]["nodes"] for m in MARKETS) == p["nodes"]["max"], p
            assert all(bought[m]["gpus"] == bought[m]["nodes"] * p["gpusPerNode"] for m in MARKETS), p
            allowed = {m.replace("on-demand", "onDemand") for m in _pool(spec, p["name"]).get("markets", ["on-demand"])}
            assert all(bought[m]["nodes"] == 0 for m in MARKETS if m not in allowed), p
    assert plan["fleet"]["gpus"] == fleet
    if aws:
        split = plan["fleet"]["markets"]
        assert sum(split.values()) == fleet
        for m in MARKETS:
            assert split[m] == sum(p["markets"][m]["gpus"] for p in plan["pools"])
            assert abs(split[m] - plan["fleet"]["targetGpus"][m]) <= plan["fleet"]["toleranceGpus"][m] + 1e-9
        cost = plan["cost"]
        assert abs(cost["monthlyUsd"] - sum(sum(p["monthlyUsd"].values()) for p in cost["pools"])) < 0.05
        if cost["allOnDemandMonthlyUsd"]:
            saving = 100 * (1 - cost["monthlyUsd"] / cost["allOnDemandMonthlyUsd"])
            assert abs(saving - cost["savingsPercent"]) < 0.01, cost
    fabric = plan.get("fabric")
    if fabric:
        on_fabric = [p for p in spec["gpuNodePools"] if p.get("fabric")]
        assert fabric["hosts"] == sum(p["nodes"]["max"] * fabric["portsPerNode"][p["name"]] for p in on_fabric)
        assert fabric["hosts"] <= fabric["maxHosts"]
    quotas: dict[str, int] = {}
    for q in plan["capacity"]["quotas"]:
        quotas[q["tenant"]] = quotas.get(q["tenant"], 0) + q["gpus"]
    for tenant in spec.get("tenants", []):
        held = quotas.get(tenant["name"], 0)
        assert held <= tenant["gpus"], (tenant, held)
        if tenant["isolation"] == "hard":  # a guarantee is placed whole (else GP234 refuses the spec)
            assert held == tenant["gpus"], (tenant, held)


def _pool(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in spec["gpuNodePools"] if p["name"] == name)


def _trace(tmp: Path, spec: dict[str, Any]) -> Path:
    tenants = [t["name"] for t in spec.get("tenants", [])] or ["anyone"]
    rows = [f"{60 * i},{600 + 30 * i},{1 + i % 3},{tenants[i % len(tenants)]}" for i in range(12)]
    path = tmp / "trace.csv"
    path.write_text("submit,duration,gpus,tenant\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


@SETTINGS
@given(data=st.data())
def test_what_check_accepts_plans_graphs_and_simulates(data: st.DataObject) -> None:
    spec = generate_spec(HypothesisDraw(data))
    with _project() as tmp:
        accepted = _accepted(tmp, spec)
        assume(accepted is not None)
        assert accepted is not None
        path = str(accepted[0])
        code, out, _ = _cli("plan", "--stack", "dev", "--spec", path, "--format", "json")
        assert code == 0
        _plan_adds_up(json.loads(out), spec)
        code, out, _ = _cli("plan", "--stack", "dev", "--spec", path)
        assert code == 0 and not re.search(r"\b(inf|nan)\b", out), out
        for fmt in ("json", "mermaid"):
            assert _cli("graph", "--stack", "dev", "--spec", path, "--format", fmt)[0] == 0
        trace = str(_trace(tmp, spec))
        code, out, err = _cli("simulate", "--stack", "dev", "--spec", path, "--trace", trace, "--format", "json")
        if not spec.get("tenants"):  # no queue to submit to: refused in words
            assert code == 1 and "has no tenants" in err, err
            return
        assert code == 0, err
        result = json.loads(out)
        assert result["jobs"] == 12
        hours = result["gpuHours"]
        assert hours["provisioned"] >= hours["allocated"] - 1e-6, hours


@PROGRAM_SETTINGS
@given(data=st.data())
def test_what_check_accepts_previews_verifies_and_passes_policy(data: st.DataObject) -> None:
    spec = generate_spec(HypothesisDraw(data))
    with _project() as tmp:
        accepted = _accepted(tmp, spec)
        assume(accepted is not None)
        assert accepted is not None
        path = str(accepted[0])
        code, out, err = _cli("preview", "--stack", "dev", "--spec", path, "--format", "json")
        assert code == 0, err
        resources = json.loads(out)["resources"]
        urns = [r["urn"] for r in resources]
        assert len(set(urns)) == len(urns)
        assert all(r["parent"] in urns for r in resources if r["parent"]), "a parent that was never registered"
        recording = tmp / "recording.json"
        recording.write_text(out, encoding="utf-8")
        code, out, err = _cli(
            "verify", "--stack", "dev", "--spec", path, "--recording", str(recording), "--format", "json"
        )
        journeys = json.loads(out)["journeys"]
        failed = {(j["tenant"], j["pool"]) for j in journeys if not j["ok"]}
        assert not failed and code == 0, f"verify fails journeys of a spec check accepted: {failed} {err}"
        code, out, err = _cli("policy", "--stack", "dev", "--spec", path, "--format", "json")
        violations = json.loads(out)["violations"]
        assert code == 0, [v for v in violations if v["level"] == "mandatory"]
