"""Files of the upstream modules the tools were built from (their own manifests and CRDs),
read in place from the Go module cache."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from e2e import upstream
from e2e.errors import E2EError
from e2e.tools.build import go_env

TOOLS = Path(__file__).resolve().parent / "tools"


# The modules whose files the suite reads, by the tool set that pins them.
MODULES = {"kueue": "sigs.k8s.io/kueue", "karpenter": "sigs.k8s.io/karpenter",
           "prometheus-operator": "github.com/prometheus-operator/prometheus-operator",
           "keda": "github.com/kedacore/keda/v2", "kwok": "sigs.k8s.io/kwok"}


def _env_name(tool_set: str) -> str:
    return f"GPUPLAT_E2E_{tool_set.upper()}_MODULE"


def resolve_before_netns() -> None:
    """Find (downloading if needed) every module directory while the proxy is reachable, the
    modules of upstream CRDs too (inside, `go mod download` finds them in the module cache)."""
    for tool_set, module in MODULES.items():
        os.environ[_env_name(tool_set)] = str(module_dir(tool_set, module))
    upstream.prefetch()


def module_dir(tool_set: str, module: str) -> Path:
    if os.environ.get(_env_name(tool_set)):
        return Path(os.environ[_env_name(tool_set)])
    result = subprocess.run(["go", "mod", "download", "-json", module], cwd=TOOLS / tool_set,
                            capture_output=True, text=True, env=go_env(TOOLS / tool_set))
    try:
        found = Path(json.loads(result.stdout)["Dir"])
    except (json.JSONDecodeError, KeyError):
        raise E2EError(f"go mod download {module}: {result.stderr.strip() or result.stdout}") from None
    return found
