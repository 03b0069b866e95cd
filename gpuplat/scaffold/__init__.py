"""`gpuplat init`: the files of a new platform project, rendered from a few choices.

The project uses the installed gpuplat (its `__main__.py` imports `components` and
`gpuplat.compile` from the package), so it holds only what a platform team owns: the spec,
the stacks, the policy settings and the CI workflows. The spec is compiled before anything is
written: a choice the catalog does not know (an instance type, a GPU model) fails with the
validator's own diagnostics and leaves the directory untouched.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from jinja2 import Environment, StrictUndefined
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from gpuplat.catalog.charts import CHARTS
from gpuplat.catalog.eks import EKS_CALENDAR_AS_OF, EKS_VERSIONS, support_phase
from gpuplat.editor_schema import DEFAULT as SCHEMA_COPY_PATH
from gpuplat.editor_schema import schema_text
from gpuplat.scaffold.source import Source
from gpuplat.vocabulary import DEFAULT_VPC_CIDR

STACKS = ("dev", "staging", "prod")
# `init --fleet`: the members of a fleet, each a stack (templates/fleet/); the manager first.
FLEET_STACKS = ("hub", "onprem", "cloud")
_FLEET_ROLES = {
    "hub": "the manager, an on-prem cluster holding the fleet queue",
    "onprem": "the first worker, the on-prem GPU cluster",
    "cloud": "the second worker, AWS capacity the fleet bursts to",
}
SCHEMA_COPY = SCHEMA_COPY_PATH.as_posix()
# Template -> file in the new project. Workflows are copied as they are: GitHub's own `${{ }}`
# expressions would read as Jinja's.
_RENDERED = {
    "Pulumi.yaml.j2": "Pulumi.yaml",
    "main.py.j2": "__main__.py",
    "requirements.txt.j2": "requirements.txt",
    "platform.yaml.j2": "platform/platform.yaml",
    "README.md.j2": "README.md",
    "gitignore.j2": ".gitignore",
    "policy-config.json.j2": "policy/config.json",
}
_COPIED = {
    "workflows/pull-request.yml": ".github/workflows/pull-request.yml",
    "workflows/deploy.yml": ".github/workflows/deploy.yml",
}
# GitHub's ${{ }} expressions are Jinja's too: each provider's workflow is a file of its own.
_KUBERNETES_COPIES = {"workflows/deploy.yml": "workflows/deploy-kubernetes.yml"}
# What the README of an on-prem project says gpuplat installs on the existing cluster (catalog keys).
_INSTALLED_CHARTS = (
    ("NVIDIA GPU Operator (driver, device plugin, MIG manager, DCGM exporter)", "gpu-operator"),
    ("Kueue", "kueue"),
    ("kube-prometheus-stack (Prometheus and its operator)", "kube-prometheus-stack"),
    ("KEDA", "keda"),
    ("HAMi, with a fractional pool", "hami"),
    ("NVIDIA Network Operator, with a RoCE or InfiniBand fabric", "network-operator"),
    ("SR-IOV Network Operator, with a fabric that has `sriov`", "sriov-network-operator"),
)


@dataclass(frozen=True)
class Choices:
    """What `gpuplat init` asks for; everything else is a default the validator accepts quietly."""

    name: str
    provider: str  # aws | kubernetes
    region: str  # aws only
    pool: str
    instance_type: str  # aws: the first pool's instance type
    gpu_model: str  # kubernetes: the first pool's GPUs
    gpus_per_node: int
    nodes_max: int
    team: str
    cost_center: str
    version: str
    source: Source  # what the project installs gpuplat from (gpuplat/scaffold/source.py)
    runner_cidrs: tuple[str, ...] = ()  # aws: who deploys staging and prod; () = the VPC's own CIDR
    fleet: bool = False  # a fleet project: members hub, onprem (kubernetes) and cloud (aws)
    manager_cidrs: tuple[str, ...] = ()  # fleet: where the manager reaches the cloud member's API from
    cloud_gpus: int = 0  # fleet: GPUs per node of the cloud member's instance type

    @property
    def stacks(self) -> tuple[str, ...]:
        return FLEET_STACKS if self.fleet else STACKS

    @property
    def runner_access(self) -> str:
        """gpu-platform:apiAccessCidrs of the private stacks: the runner's network, as given, or
        the VPC's (the spec's default vpcCidr), where the self-hosted runner of the deploy runs."""
        return ", ".join(self.runner_cidrs) if self.runner_cidrs else DEFAULT_VPC_CIDR

    @property
    def zones(self) -> list[str]:
        return [f"{self.region}a", f"{self.region}b"]


def kubernetes_version() -> str:
    """The newest minor in EKS standard support on the catalog's calendar date."""
    standard = [m for m in EKS_VERSIONS if support_phase(m) == "standard"]
    if not standard:  # a calendar past its last row: the newest listed, which check then flags
        return max(EKS_VERSIONS, key=lambda m: tuple(int(p) for p in m.split(".")))
    return max(standard, key=lambda m: tuple(int(p) for p in m.split(".")))


def _emitted(value: Any, style: str | None) -> str:
    yaml: Any = YAML(typ="safe", pure=True)
    yaml.default_flow_style = True
    yaml.default_style = style
    yaml.allow_unicode = False  # every character past ASCII (and NEL, LS, PS) as an escape
    yaml.width = 1 << 20  # one line, however long
    out = io.StringIO()
    yaml.dump([value], out)
    return out.getvalue().strip()[1:-1]  # the one item of the flow list


def _reads_back(text: str, value: Any) -> bool:
    """`text` means `value` in each place a template puts it: a flow mapping, a block value."""
    try:
        yaml: Any = YAML(typ="safe")
        loaded: Any = yaml.load(f"a: {text}\nb: {{k: {text}, j: 1}}\nc: [{text}, 1]\n")
    except YAMLError:
        return False
    return loaded == {"a": value, "b": {"k": value, "j": 1}, "c": [value, 1]}


def yaml_value(value: Any) -> str:
    """`value` as YAML flow text written by ruamel's emitter: plain where that reads back as the
    value in a flow mapping, a flow list and a block alike, else double-quoted with escapes. A choice
    such as `x", owner: "evil` stays one string, `0000` stays a string."""
    plain = _emitted(value, None)
    return plain if _reads_back(plain, value) else _emitted(value, '"')


def _comment(value: Any) -> str:
    """Text inside a `#` comment: a line break or a control character (which YAML refuses even in
    a comment) written as its escape."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in str(value))


def _environment() -> Environment:
    env = Environment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
    filters: dict[str, Any] = env.filters  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    filters.update(yaml=yaml_value, comment=_comment)
    return env


def _render_fleet(choices: Choices, context: dict[str, Any]) -> dict[str, str]:
    """The files that differ in a fleet project: the shared spec, a stack per member, the deploy."""
    templates = files("gpuplat.scaffold") / "templates"
    env = _environment()
    gpus = {
        "hub": choices.gpus_per_node,
        "onprem": choices.nodes_max * choices.gpus_per_node,
        "cloud": choices.nodes_max * choices.cloud_gpus,
    }
    context = {**context, "stacks": FLEET_STACKS, "roles": _FLEET_ROLES, "gpus": gpus}

    def one(template: str, **extra: Any) -> str:
        text = (templates / "fleet" / template).read_text(encoding="utf-8")
        return env.from_string(text).render({**context, **extra})

    out = {"platform/platform.yaml": one("platform.yaml.j2"), "README.md": one("README.md.j2")}
    for stack in FLEET_STACKS:
        out[f"stacks/{stack}.yaml"] = one("member.yaml.j2", stack=stack)
        out[f"stacks/Pulumi.{stack}.yaml"] = one("stack.yaml.j2", stack=stack)
    out[".github/workflows/deploy.yml"] = (templates / "workflows" / "deploy-fleet.yml").read_text(encoding="utf-8")
    return out


def render(choices: Choices) -> dict[str, str]:
    """Every file of the project: path relative to its root -> text."""
    templates = files("gpuplat.scaffold") / "templates"
    env = _environment()
    context = {
        "c": choices,
        "stacks": STACKS,
        "kubernetes_version": kubernetes_version(),
        "calendar_date": EKS_CALENDAR_AS_OF,
        "charts": [{"title": title, "chart": CHARTS[key]} for title, key in _INSTALLED_CHARTS],
    }
    out: dict[str, str] = {}
    for template, target in _RENDERED.items():
        out[target] = env.from_string((templates / template).read_text(encoding="utf-8")).render(context)
    for stack in STACKS:
        stack_context = {**context, "stack": stack}
        for template, target in (
            ("overlay.yaml.j2", f"stacks/{stack}.yaml"),
            ("stack.yaml.j2", f"stacks/Pulumi.{stack}.yaml"),
        ):
            text = (templates / template).read_text(encoding="utf-8")
            out[target] = env.from_string(text).render(stack_context)
    out[SCHEMA_COPY] = schema_text()  # what the spec's yaml-language-server line names, for editors
    for template, target in _COPIED.items():
        if choices.provider == "kubernetes":  # no AWS role: the stacks' kubeconfigs reach the cluster
            template = _KUBERNETES_COPIES.get(template, template)
        out[target] = (templates / template).read_text(encoding="utf-8")
    if choices.fleet:
        out = {p: t for p, t in out.items() if not p.startswith("stacks/")}
        out.update(_render_fleet(choices, context))
    return out


class UnsafeTarget(Exception):
    """A path init would write is not a plain new file inside its directory."""


def _is_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def existing(root: Path, paths: Iterable[str]) -> list[str]:
    """The files init would overwrite, or write through a link: it never does. A dangling link
    counts (`exists()` would follow it and say no)."""
    return sorted(path for path in paths if os.path.lexists(root / path))


def linked(root: Path, paths: Iterable[str]) -> list[str]:
    """The directories inside `root` on the way to a path that are links or files: writing
    there would leave the project (a `stacks` link to another folder) or fail."""
    found: set[str] = set()
    for path in paths:
        parts = Path(path).parts[:-1]
        for depth in range(1, len(parts) + 1):
            below = root.joinpath(*parts[:depth])
            if os.path.lexists(below) and not _is_dir(below):
                found.add(Path(*parts[:depth]).as_posix())
                break
    return sorted(found)


def _write_new(target: Path, data: bytes) -> None:
    """Creates `target`, never through a link and never over a file (O_EXCL | O_NOFOLLOW)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(target, flags, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def _make_dirs(root: Path, relative: Path) -> None:
    current = root
    for part in relative.parts:
        current = current / part
        if not os.path.lexists(current):
            current.mkdir()
        elif not _is_dir(current):
            raise UnsafeTarget(f"{current} is a link or a file; init writes only plain files inside its directory")


def write(root: Path, rendered: Mapping[str, str], binary: Mapping[str, bytes] | None = None) -> None:
    """Every file, created new inside `root`: UnsafeTarget (or FileExistsError) rather than
    following a link out of it or replacing what is there; OSError for the file system's own refusals."""
    files_ = {**{p: t.encode("utf-8") for p, t in rendered.items()}, **(binary or {})}
    root.mkdir(parents=True, exist_ok=True)
    for path, data in files_.items():
        _make_dirs(root, Path(path).parent)
        _write_new(root / path, data)
