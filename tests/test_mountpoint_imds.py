"""Mountpoint S3 CSI v2 mounts from a pod, which reaches IMDS only with a hop limit of 2. GPU nodes
keep IMDSv2 required with one hop (no pod reads the node role's credentials), so every S3 volume
tells Mountpoint the region and the throughput to target instead of letting it fall back to 10 Gbps."""

from __future__ import annotations

import pytest

from components.kubernetes._mountpoint import mountpoint_throughput_gbps
from gpuplat.catalog import instance_type
from tests.support_aws import NODE_CLASS, STACKS, custom_resources
from tests.support_aws import recorded as recorded_aws
from tests.support_k8s import by_kind, recorded


def _option(options: list[str], key: str) -> str | None:
    return next((o.split(" ", 1)[1] for o in options if o.startswith(f"{key} ")), None)


@pytest.mark.parametrize("stack", STACKS)
def test_every_s3_volume_names_its_region_and_throughput(stack: str) -> None:
    model, _, resources = recorded(stack)
    volumes = [v for v in by_kind(resources, "PersistentVolume") if v["spec"]["csi"]["driver"] == "s3.csi.aws.com"]
    assert len(volumes) == 2 * len(model.tenants)  # warm and cold per tenant
    for volume in volumes:
        options, tenant = volume["spec"]["mountOptions"], volume["spec"]["claimRef"]["namespace"]
        assert _option(options, "region") == model.target.region
        pools = next(t.pools for t in model.tenants if t.name == tenant)
        cards = []
        for name in pools:
            itype = instance_type(model.pools_by_name[name].instance_type or "")
            assert itype is not None
            cards.append(itype.network_gbps / itype.network_cards)
        assert _option(options, "maximum-throughput-gbps") == str(int(min(cards)))


def test_the_throughput_is_one_card_of_the_slowest_pool_the_tenant_may_use() -> None:
    model, _, _ = recorded("prod")
    # research: train and infer, p5.48xlarge: 3200 Gbps over 32 cards.
    assert mountpoint_throughput_gbps(model, "research") == 100
    # product may use every pool, notebooks among them: g6.12xlarge, 40 Gbps on its one card.
    assert "notebooks" in next(t.pools for t in model.tenants if t.name == "product")
    assert mountpoint_throughput_gbps(model, "product") == 40
    assert mountpoint_throughput_gbps(model, "nobody") is None


@pytest.mark.parametrize("stack", STACKS)
def test_gpu_nodes_keep_imdsv2_required_with_one_hop(stack: str) -> None:
    _, _, resources = recorded_aws(stack)
    for node_class in custom_resources(resources, NODE_CLASS):
        options = node_class["spec"]["metadataOptions"]
        assert options["httpTokens"] == "required" and options["httpPutResponseHopLimit"] == 1
