"""The order pools and tenants are written in changes no emitted object, except where Kueue reads it.

Reordering a list that carries no meaning must preview as no change at all: the same URNs
with the same inputs and options. The one order with a meaning is kept: Kueue tries the
flavors of one resource group in the order the ClusterQueue lists them, so pools sharing a
resource (dev and notebooks both offer nvidia.com/gpu.shared) are listed as the spec lists them.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from gpuplat.preview.diff import diff_resources
from gpuplat.preview.engine import RecordedResource
from gpuplat.preview.stack import record_stack

ROOT = Path(__file__).resolve().parent.parent
SPECS = {
    "aws": ROOT / "platform" / "platform.yaml",
    "kubernetes": ROOT / "tests" / "fixtures" / "kubernetes_example.yaml",
}
CLUSTER_QUEUE = "kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue"


def _record(data: Any, path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, RecordedResource]:
    out = io.StringIO()
    YAML().dump(data, out)
    path.write_text(out.getvalue(), encoding="utf-8")
    monkeypatch.chdir(ROOT)
    return {r.urn: r for r in record_stack("dev", str(path), "")}


def _within_group_flavors(resource: RecordedResource) -> list[list[str]]:
    groups: list[dict[str, Any]] = resource.inputs["spec"]["resourceGroups"]
    return [[f["name"] for f in g["flavors"]] for g in groups]


def _sorted_groups(resource: RecordedResource) -> RecordedResource:
    spec = dict(resource.inputs["spec"])
    spec["resourceGroups"] = [
        {**g, "flavors": sorted(g["flavors"], key=lambda f: f["name"])} for g in spec["resourceGroups"]
    ]
    return RecordedResource(
        resource.urn, resource.type, resource.name, resource.parent, resource.custom,
        {**resource.inputs, "spec": spec}, resource.options,
    )  # fmt: skip


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_reordering_pools_and_tenants_changes_nothing(
    spec: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = YAML().load(SPECS[spec].read_text(encoding="utf-8"))
    if spec == "aws":  # recorded as dev, whose config declares no runner access for a private endpoint
        data["target"]["endpoint"] = "public"
    base = _record(data, tmp_path / "base.yaml", monkeypatch)
    data["gpuNodePools"] = list(reversed(data["gpuNodePools"]))
    data["tenants"] = list(reversed(data["tenants"]))
    head = _record(data, tmp_path / "head.yaml", monkeypatch)
    assert set(base) == set(head)
    changes = diff_resources(list(base.values()), list(head.values()))
    # Only what Kueue reads in order may differ: flavors inside one resource group.
    assert {(c.type, tuple(f.path for f in c.fields)) for c in changes} <= {(CLUSTER_QUEUE, ("spec.resourceGroups",))}
    for change in changes:
        assert _sorted_groups(base[change.urn]) == _sorted_groups(head[change.urn]), change.name
        before, after = _within_group_flavors(base[change.urn]), _within_group_flavors(head[change.urn])
        assert [sorted(g) for g in before] == [sorted(g) for g in after]
    if spec == "aws":
        # dev is written before notebooks and both offer nvidia.com/gpu.shared: Kueue tries dev first.
        (product,) = [c for c in changes if c.name == "atlas-scheduling-cq-product"]
        shared = next(g for g in _within_group_flavors(base[product.urn]) if "atlas-notebooks-on-demand" in g)
        assert shared.index("atlas-dev-spot") < shared.index("atlas-notebooks-on-demand")
        reordered = next(g for g in _within_group_flavors(head[product.urn]) if "atlas-notebooks-on-demand" in g)
        assert reordered.index("atlas-dev-spot") > reordered.index("atlas-notebooks-on-demand")
