"""Directory bucket names are global per zone across all accounts: new stacks carry the account
id in the warm bucket's name; existing stacks pin their old name, and the stateful gate refuses
the rename (a new, empty bucket) when they do not."""

from __future__ import annotations

import pytest

from gpuplat.preview import RecordedResource
from gpuplat.preview._mockdata import ACCOUNT_ID
from gpuplat.preview.diff import diff_resources, summarize
from gpuplat.preview.stack import stack_config
from tests.support_aws import ROOT, compile_model, of_type, record

DIRECTORY_BUCKET = "aws:s3/directoryBucket:DirectoryBucket"


def _bucket(stack: str, config: dict[str, str]) -> tuple[str, list[RecordedResource]]:
    model, plan = compile_model(stack)
    access = {k: v for k, v in stack_config(stack, ROOT).items() if k.startswith("gpu-platform:apiAccess")}
    resources = record(model, plan, stack, config={"aws:region": "us-east-1", **access, **config})
    (bucket,) = of_type(resources, DIRECTORY_BUCKET)
    return bucket.inputs["bucket"], resources


def test_a_new_stack_names_its_warm_bucket_after_the_account() -> None:
    name, _ = _bucket("dev", {})
    assert name == f"atlas-dev-warm-{ACCOUNT_ID}--use1-az4--x-s3"


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_example_stacks_pin_the_name_they_were_created_with(stack: str) -> None:
    config = stack_config(stack, ROOT)
    assert config["gpu-platform:warmBucketLegacyName"] == "true"
    name, _ = _bucket(stack, config)
    assert name == f"atlas-{stack}-warm--use1-az4--x-s3"


def test_the_stateful_gate_refuses_the_rename_of_an_existing_bucket() -> None:
    _, legacy = _bucket("dev", {"gpu-platform:warmBucketLegacyName": "true"})
    _, renamed = _bucket("dev", {})
    changes = diff_resources(legacy, renamed)
    refused = summarize(changes, len(renamed)).refused
    # the bucket, and every tenant claim whose volume names it
    assert {(c.type, c.op) for c in refused} == {(DIRECTORY_BUCKET, "replace"),
                                                   ("kubernetes:core/v1:PersistentVolumeClaim", "replace")}
