"""The Pulumi engine as a user runs it: the CLI built from its module, a file backend, the
project's own program and policy pack, and the Kubernetes provider found on PATH.

Nothing reaches beyond the machine: no update checks, no plugin downloads, and every Helm
release installs from a chart directory the suite writes (`gpuplat:localCharts`). The project
directory is a scratch one whose Pulumi.yaml points `main` at the clone and the virtualenv at the
suite's own, so stack settings and the passphrase salt never land in the clone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from e2e import upstream
from e2e.cluster import E2EError
from e2e.objects import crd_documents
from e2e.stack import ROOT
from gpuplat.catalog.charts import CHARTS, LOCAL_CHARTS_SETTING

PROJECT = "gpu-platform"
PASSPHRASE = "gpuplat-e2e"  # the file backend's secrets only ever hold a loopback kubeconfig
# Which upstream CRD directories each chart's crds/ holds (the charts install them, Helm
# never upgrades or deletes them); charts not named install no CRDs.
CHART_CRDS = {
    "gpu-operator": ("gpu-operator",),
    "kueue": ("kueue",),
    "karpenter-crd": ("karpenter",),
    "keda": ("keda",),
    "kube-prometheus-stack": ("prometheus-operator",),
    "network-operator": ("network-operator", "nv-ipam"),
    "sriov-network-operator": ("sriov-network-operator",),
}


def stand_in_charts(directory: Path) -> Path:
    """One chart per catalog key, at the catalog's version, holding only the upstream CRDs the
    real chart installs: enough for a release to install as the real one does its CRDs, while
    the controllers that matter run as the suite's binaries."""
    yaml = YAML()
    for key, chart in CHARTS.items():
        root = directory / key
        (root / "templates").mkdir(parents=True, exist_ok=True)
        with (root / "Chart.yaml").open("w") as out:
            yaml.dump({"apiVersion": "v2", "name": chart.chart, "version": chart.version.removeprefix("v"),
                       "appVersion": chart.app_version or chart.version,
                       "description": f"gpuplat e2e stand-in for {chart.chart}: its CRDs only"}, out)
        crds = crd_documents(path for sub in CHART_CRDS.get(key, ()) for path in upstream.crd_files(directory=sub))
        if crds:
            (root / "crds").mkdir(exist_ok=True)
            with (root / "crds" / "crds.yaml").open("w") as out:
                yaml.dump_all(crds, out)
    return directory


class Engine:
    """`pulumi` in a scratch project whose program is the clone's `__main__.py`, or in `project`,
    a project of a user's own (`gpuplat init`'s), as it is."""

    def __init__(self, workdir: Path, tools: Mapping[str, Path], stack: str, env: Mapping[str, str],
                 project: Path | None = None) -> None:
        self.workdir = workdir
        self.project = project or workdir / "project"
        self.stack = stack
        self.project.mkdir(parents=True, exist_ok=True)
        (workdir / "state").mkdir(parents=True, exist_ok=True)
        if project is None:
            venv = Path(sys.executable).parent.parent
            with (self.project / "Pulumi.yaml").open("w") as out:
                YAML().dump({
                    "name": PROJECT,
                    "runtime": {"name": "python", "options": {"toolchain": "pip", "virtualenv": str(venv)}},
                    "main": os.path.relpath(ROOT, self.project),
                }, out)
        settings = YAML(typ="safe").load((self.project / "Pulumi.yaml").read_text())
        self.config_dir = self.project / settings.get("stackConfigDir", ".")
        path = os.pathsep.join([str(tools["pulumi"].parent), str(tools["pulumi-resource-kubernetes"].parent),
                                os.environ.get("PATH", "")])
        self.env = {
            **os.environ, **env,
            "PATH": path,
            "PULUMI_HOME": str(workdir / "home"),
            "PULUMI_BACKEND_URL": f"file://{workdir / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_SKIP_CONFIRMATIONS": "true",
            # The provider's Helm keeps its caches and repository list in the run's directory.
            **{f"HELM_{kind}_HOME": str(workdir / "helm" / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")},
        }

    def run(self, *args: str, check: bool = True, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        argv = ["pulumi", *args, "--non-interactive", "--color", "never"]
        try:
            result = subprocess.run(argv, cwd=self.project, env=self.env, capture_output=True, text=True,
                                    timeout=timeout)
        except subprocess.TimeoutExpired as err:
            raise E2EError(f"{' '.join(argv[:3])} timed out after {timeout:.0f} s") from err
        if check and result.returncode != 0:
            raise E2EError(f"{' '.join(argv[:3])} exited {result.returncode}: "
                           f"{(result.stdout + result.stderr).strip()[-3000:]}")
        return result

    def init(self, config: Mapping[str, Any], secrets: Mapping[str, str]) -> None:
        """A new stack with these settings, as a user's Pulumi.<stack>.yaml would hold them."""
        self.run("stack", "init", self.stack, "--secrets-provider", "passphrase")
        path = self.config_dir / f"Pulumi.{self.stack}.yaml"
        yaml = YAML(typ="safe")
        document = (yaml.load(path.read_text()) if path.exists() else None) or {}
        document.setdefault("config", {}).update(config)
        with path.open("w") as out:
            yaml.dump(document, out)
        for key, value in secrets.items():
            self.run("config", "set", "--secret", key, value)

    def json_of(self, *args: str, check: bool = True) -> dict[str, Any]:
        result = self.run(*args, "--json", check=check)
        try:
            return json.loads(result.stdout)
        except json.JSONDecodeError:
            raise E2EError(f"pulumi {args[0]} --json printed no JSON: {(result.stdout + result.stderr)[-2000:]}") \
                from None

    def resources(self) -> list[dict[str, Any]]:
        """The stack's state as the backend holds it."""
        exported = self.json_of_plain("stack", "export")
        return list(exported.get("deployment", {}).get("resources") or [])

    def json_of_plain(self, *args: str) -> dict[str, Any]:
        result = self.run(*args)
        return json.loads(result.stdout)


def stack_settings(stack: str) -> dict[str, Any]:
    """The clone's settings of a stack, as `gpuplat preview` reads them (plain values only)."""
    path = ROOT / "stacks" / f"Pulumi.{stack}.yaml"
    loaded = YAML(typ="safe").load(path.read_text()) if path.exists() else None
    return {key: value for key, value in ((loaded or {}).get("config") or {}).items()
            if not (isinstance(value, dict) and "secure" in value)}


def local_charts_setting(directory: Path) -> dict[str, str]:
    return {LOCAL_CHARTS_SETTING: str(directory)}
