"""The model applies every `default` of the schema: the schema is where a default is written.

gpuplat/vocabulary.py reads each field `default` of schemas/platform.schema.json and the model
builders use those constants, so this test checks the wiring: every `default` is found by
walking the schema (a new one without a reader here fails), then compared with what build_model
produces for a spec that omits the field, so a constant read from the wrong field, or a builder
that ignores it, fails. The probe at the bottom proves a disagreement is caught. Changing a
default itself (tenant isolation `hard`, `scaleUpAbove` 0.95) fails tests/test_vocabulary.py (the
description still states the old one), tests/test_docs.py (docs/spec.md shows it) and the golden
cases whose outcome it changes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from gpuplat.compile import Sources, compile_sources
from gpuplat.model import Platform

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "schemas" / "platform.schema.json").read_text())

# A spec that omits every field with a default; each section that holds one is present.
SPEC: dict[str, Any] = {
    "apiVersion": "gpuplat/v1",
    "kind": "Platform",
    "metadata": {"name": "defaults"},
    "target": {
        "provider": "aws",
        "region": "us-east-1",
        "zones": ["us-east-1a", "us-east-1b"],
        "kubernetesVersion": "1.33",
    },
    "gpuNodePools": [{"name": "train", "instanceType": "p5.48xlarge", "nodes": {"min": 0, "max": 4}}],
    "network": {"fabric": {"tiers": 2, "switchRadix": 64, "linkGbps": 400, "transport": "efa"}},
    # Members of another project without `spec`: not read offline, so nothing but this spec compiles.
    "fleet": {
        "name": "defaults",
        "manager": "a",
        "members": [{"name": "a", "stack": "acme/p/a"}, {"name": "b", "stack": "acme/p/b"}],
    },
    "autoscaling": {},
    "scheduling": {"gpuScheduler": {}},
    "tenants": [{"name": "research", "gpus": 8}],
    "observability": {},
    # 12 TiB: at the default 250 MB/s/TiB and the default share 0.8, the standard tenants' file
    # system needs the critical one to carry at least 600 MB/s (GP257); 1.2 TiB did not plan.
    "storage": {"hot": {"capacityTiB": 12}},
    "workloads": [
        {
            "name": "pretrain",
            "kind": "training",
            "pool": "train",
            "gpus": 8,
            "parameters": 1.0e9,
            "precision": "amp",
            "layers": 16,
            "hidden": 2048,
            "heads": 16,
            "sequenceLength": 2048,
        }
    ],
}

# Schema location of each default ($defs/<def>/<field>) -> how the model exposes it.
READERS: dict[str, Callable[[Platform], Any]] = {
    "target/endpoint": lambda m: m.target.endpoint,
    "target/bootstrapClusterCreatorAdmin": lambda m: m.target.bootstrap_cluster_creator_admin,
    "hotTier/efa": lambda m: m.storage.hot and m.storage.hot.efa,
    "pool/sharing": lambda m: {"mode": m.pools[0].sharing.mode},
    "pool/fabric": lambda m: m.pools[0].fabric,
    "pool/markets": lambda m: list(m.pools[0].markets),
    "poolHealth/spareNodes": lambda m: m.pools[0].health.spare_nodes,
    "fabric/topology": lambda m: m.network.fabric and m.network.fabric.topology,
    "fabric/oversubscription": lambda m: m.network.fabric and m.network.fabric.oversubscription,
    "network/vpcCidr": lambda m: m.network.vpc_cidr,
    "autoscaling/window": lambda m: m.autoscaling.window,
    "autoscaling/scaleUpAbove": lambda m: m.autoscaling.scale_up_above,
    "autoscaling/scaleDownBelow": lambda m: m.autoscaling.scale_down_below,
    "autoscaling/cooldown": lambda m: m.autoscaling.cooldown,
    "gpuScheduler/policy": lambda m: m.scheduling.gpu_scheduler_policy,
    "scheduling/queueing": lambda m: m.scheduling.queueing,
    "scheduling/topologyAware": lambda m: m.scheduling.topology_aware,
    "tenant/priority": lambda m: m.tenants[0].priority,
    "tenant/isolation": lambda m: m.tenants[0].isolation,
    "observability/retention": lambda m: m.observability.retention,
    "referenceWorkload/optimizer": lambda m: m.workloads[0].optimizer,
    "referenceWorkload/gradientCheckpointing": lambda m: m.workloads[0].gradient_checkpointing,
    "referenceWorkload/flashAttention": lambda m: m.workloads[0].flash_attention,
    "referenceWorkload/sharding": lambda m: m.workloads[0].sharding,
    "referenceWorkload/microBatch": lambda m: m.workloads[0].micro_batch,
    "referenceWorkload/keepCheckpoints": lambda m: m.workloads[0].keep_checkpoints,
    "referenceWorkload/batch": lambda m: m.workloads[0].batch,
    "fleet/queue": lambda m: m.fleet and m.fleet.queue,
    "fleet/credentialGeneration": lambda m: m.fleet and m.fleet.credential_generation,
}


def schema_defaults(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for name, definition in schema["$defs"].items():
        for field, node in definition.get("properties", {}).items():
            if "default" in node:
                yield f"{name}/{field}", node["default"]
    for field, node in schema["properties"].items():
        assert "default" not in node, f"top-level default {field}: give it a reader"


def _model(tmp_path: Path) -> Platform:
    path = tmp_path / "platform.yaml"
    path.write_text(json.dumps(SPEC))  # JSON is YAML
    result = compile_sources(Sources(path, None), with_plan=False)
    assert result.model is not None, [str(d) for d in result.diagnostics]
    return result.model


def mismatches(schema: Mapping[str, Any], model: Platform) -> list[str]:
    out: list[str] = []
    for where, default in schema_defaults(schema):
        if where not in READERS:
            out.append(f"{where}: a schema default the test cannot read from the model (add a reader)")
        elif (got := READERS[where](model)) != default:
            out.append(f"{where}: schema default {default!r}, model {got!r}")
    return out


def test_every_schema_default_is_the_models(tmp_path: Path) -> None:
    assert mismatches(SCHEMA, _model(tmp_path)) == []


def test_every_reader_has_a_schema_default() -> None:
    assert set(READERS) == {where for where, _ in schema_defaults(SCHEMA)}


@pytest.mark.parametrize(
    ("definition", "field", "value"),
    [("tenant", "isolation", "hard"), ("autoscaling", "scaleUpAbove", 0.95), ("pool", "markets", ["spot"])],
)
def test_probe_a_changed_schema_default_is_caught(tmp_path: Path, definition: str, field: str, value: Any) -> None:
    changed = copy.deepcopy(SCHEMA)
    changed["$defs"][definition]["properties"][field]["default"] = value
    assert [m.split(":")[0] for m in mismatches(changed, _model(tmp_path))] == [f"{definition}/{field}"]
