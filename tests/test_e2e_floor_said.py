"""A capacity floor not placed in time says why: its nodes' readiness and taints, and Karpenter's
last errors about its NodePools (the run's logs go with its clusters)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class _Nodes:
    """A cluster of two train nodes, one still tainted by Karpenter, and Karpenter's log."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    def items(self, resource: str, namespace: str = "") -> list[dict[str, Any]]:
        ready = {"conditions": [{"type": "Ready", "status": "True"}]}
        return [{"metadata": {"labels": {"gpuplat.dev/pool": "train"}}, "spec": {}, "status": ready},
                {"metadata": {"labels": {"gpuplat.dev/pool": "train"}}, "status": {},
                 "spec": {"taints": [{"key": "karpenter.sh/unregistered", "effect": "NoExecute"}]}},
                {"metadata": {"labels": {"gpuplat.dev/pool": "infer"}}, "spec": {}, "status": ready}]


def test_a_floor_not_placed_in_time_says_what_its_nodes_and_karpenter_said(tmp_path: Path) -> None:
    from e2e import scenarios

    (tmp_path / "karpenter.log").write_text("\n".join([
        '{"level":"ERROR","message":"ignoring nodepool, not ready","NodePool":{"name":"train-reserved"}}',
        '{"level":"ERROR","message":"ignoring nodepool, not ready","NodePool":{"name":"infer-reserved"}}',
        'not json',
        '{"level":"ERROR","message":"could not schedule pod","error":"exceed limits","NodePool":{"name":"train-od"}}',
        '{"level":"ERROR","message":"ignoring nodepool, not ready","NodePool":{"name":"train-reserved"}}']))
    cluster: Any = _Nodes(tmp_path)
    said = scenarios._pool_nodes_said(cluster, "train")  # pyright: ignore[reportPrivateUsage]
    assert said == "pool train has 2 node(s), 1 Ready; taints: karpenter.sh/unregistered:NoExecute x1"
    errors = scenarios._karpenter_errors(cluster, "train")  # pyright: ignore[reportPrivateUsage]
    assert errors == ("; Karpenter's last errors for it: could not schedule pod: exceed limits | "
                      "ignoring nodepool, not ready: ")
    absent: Any = _Nodes(tmp_path / "none")
    assert scenarios._karpenter_errors(absent, "train") == ""  # pyright: ignore[reportPrivateUsage]
