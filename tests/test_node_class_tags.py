"""Karpenter-launched instances carry the stack's default tags: Pulumi's provider default tags
reach only the objects Pulumi creates, so the EC2NodeClass lists them for Karpenter to apply."""

from __future__ import annotations

import json

from components.aws.gpu_node_pool import instance_tags
from components.conventions import TAG_POOL
from tests.support_aws import NODE_CLASS, compile_model, custom_resources, record, recorded


def test_node_classes_carry_the_stack_default_tags() -> None:
    model, plan = compile_model("dev")
    stack_tags = {"environment": "dev", "owner": "platform", "team": "from-stack"}
    config = {"aws:region": "us-east-1", "aws:defaultTags": json.dumps({"tags": stack_tags})}
    resources = tuple(record(model, plan, "dev", config=config))
    node_classes = custom_resources(resources, NODE_CLASS)
    assert node_classes
    for node_class in node_classes:
        tags = node_class["spec"]["tags"]
        # The spec's tags win over the stack's, as on the provider.
        assert tags == {**tags, "environment": "dev", "owner": "platform", **model.metadata.tags}
        assert TAG_POOL in tags


def test_without_stack_tags_the_node_class_keeps_its_tags() -> None:
    model, _, resources = recorded("prod")
    for node_class in custom_resources(resources, NODE_CLASS):
        assert set(node_class["spec"]["tags"]) == {*model.metadata.tags, TAG_POOL}


def test_keys_karpenter_owns_are_left_to_it() -> None:
    model, _ = compile_model("dev")
    pool = model.pools[0]
    defaults = {
        "karpenter.sh/nodepool": "x",
        "kubernetes.io/cluster/other": "owned",
        "eks:eks-cluster-name": "y",
        "a": "b",
    }
    tags = instance_tags(defaults, model, pool.name)
    assert tags == {"a": "b", **model.metadata.tags, TAG_POOL: pool.name}
