"""The offline recording engine, on tiny programs built from plain provider resources."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from gpuplat.preview import (
    DuplicateUrnError,
    RecordedResource,
    UnsupportedFeatureError,
    record_main,
    record_program,
)

PROJECT = "proj"
STACK = "dev"
STACK_URN = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:pulumi:Stack::{PROJECT}-{STACK}"
# The engine's default provider of the installed pulumi-aws: what a resource without a provider uses.
AWS_DEFAULT = f"default_{aws._utilities.get_version().replace('.', '_')}"  # pyright: ignore[reportPrivateUsage]
AWS_DEFAULT_URN = f"urn:pulumi:{STACK}::{PROJECT}::pulumi:providers:aws::{AWS_DEFAULT}"


def record(program, **config: str) -> list[RecordedResource]:
    return record_program(program, project=PROJECT, stack=STACK, config=config or None)


def by_name(resources: list[RecordedResource]) -> dict[str, RecordedResource]:
    return {r.name: r for r in resources}


class Pair(pulumi.ComponentResource):
    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("test:index:Pair", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.first = aws.s3.Bucket(f"{name}-first", opts=child)
        self.second = aws.sqs.Queue(f"{name}-second", opts=child)
        self.register_outputs({"firstArn": self.first.arn})


def test_bucket_options_protect_and_retain() -> None:
    def program() -> None:
        aws.s3.Bucket(
            "data",
            force_destroy=False,
            tags={"team": "ml"},
            opts=pulumi.ResourceOptions(protect=True, retain_on_delete=True, ignore_changes=["tags"]),
        )

    resources = record(program)
    provider, stack, bucket = resources
    assert provider.urn == AWS_DEFAULT_URN and bucket.options["provider"] == AWS_DEFAULT_URN
    assert stack.type == "pulumi:pulumi:Stack" and stack.parent is None and stack.urn == STACK_URN
    assert bucket.urn == f"urn:pulumi:{STACK}::{PROJECT}::aws:s3/bucket:Bucket::data"
    assert bucket.type == "aws:s3/bucket:Bucket"
    assert bucket.custom is True and bucket.parent == STACK_URN
    assert bucket.inputs == {"forceDestroy": False, "tags": {"team": "ml"}}
    assert bucket.options["protect"] is True
    assert bucket.options["retainOnDelete"] is True
    assert bucket.options["ignoreChanges"] == ["tags"]
    assert set(bucket.to_json()) == {"urn", "type", "name", "parent", "custom", "inputs", "options"}


def test_defaults_are_omitted_from_options() -> None:
    resources = record(lambda: aws.sqs.Queue("q"))
    assert by_name(resources)["q"].options == {"provider": AWS_DEFAULT_URN}  # the one the engine picks


def test_component_parent_and_children_in_tree_order() -> None:
    def program() -> None:
        Pair("pair")
        aws.sqs.Queue("after")

    resources = record(program)
    pair = by_name(resources)["pair"]
    assert pair.custom is False and pair.type == "test:index:Pair" and pair.parent == STACK_URN
    assert pair.inputs == {} and pair.options == {}
    for child in ("pair-first", "pair-second"):
        assert by_name(resources)[child].parent == pair.urn
    first = by_name(resources)["pair-first"]
    assert first.urn == f"urn:pulumi:{STACK}::{PROJECT}::test:index:Pair$aws:s3/bucket:Bucket::pair-first"
    # Pre-order, siblings by URN ("...Stack$aws:sqs..." sorts before "...Stack$test:...").
    names = [r.name for r in resources]
    assert names == [AWS_DEFAULT, f"{PROJECT}-{STACK}", "after", "pair", "pair-first", "pair-second"]
    assert pair.outputs["firstArn"].startswith("arn:aws:s3:::pair-first-")


def test_kubernetes_configmap_with_explicit_provider() -> None:
    def program() -> None:
        provider = k8s.Provider("cluster", kubeconfig="{}", enable_server_side_apply=True)
        k8s.core.v1.ConfigMap(
            "settings",
            metadata={"name": "settings", "namespace": "kube-system"},
            data={"b": "2", "a": "1"},
            opts=pulumi.ResourceOptions(provider=provider),
        )

    resources = by_name(record(program))
    provider, config_map = resources["cluster"], resources["settings"]
    assert provider.type == "pulumi:providers:kubernetes" and provider.custom is True
    assert config_map.type == "kubernetes:core/v1:ConfigMap"
    assert config_map.options["provider"] == provider.urn
    assert config_map.inputs == {
        "apiVersion": "v1",
        "data": {"a": "1", "b": "2"},
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "kube-system"},
    }
    assert list(config_map.inputs["data"]) == ["a", "b"]


def test_depends_on_and_apply_on_outputs() -> None:
    def program() -> None:
        bucket = aws.s3.Bucket("logs")
        queue = aws.sqs.Queue("events")
        aws.s3.BucketPolicy(
            "logs-policy",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: f'{{"Resource": "{arn}/*"}}'),
            opts=pulumi.ResourceOptions(depends_on=[queue]),
        )

    resources = by_name(record(program))
    policy = resources["logs-policy"]
    assert policy.inputs["bucket"] == "logs-id"
    assert policy.inputs["policy"].startswith('{"Resource": "arn:aws:s3:::logs-')
    assert policy.options["dependsOn"] == sorted([resources["events"].urn, resources["logs"].urn])


def test_secrets_unknowns_invokes_and_config() -> None:
    def program() -> None:
        config = pulumi.Config()
        identity = aws.get_caller_identity()
        zones = aws.get_availability_zones()
        role = aws.iam.Role("site", assume_role_policy="{}")
        k8s.core.v1.ConfigMap(
            "values",
            data={
                "account": identity.account_id,
                "zone": zones.names[0],
                "flavour": config.require("flavour"),
                "token": pulumi.Output.secret("hunter2"),
                "created": role.create_date,  # not known to the mock -> unknown in preview
            },
        )

    data = by_name(record(program, **{"proj:flavour": "mint", "aws:region": "eu-west-1"}))["values"].inputs["data"]
    assert data == {
        "account": "123456789012",
        "created": "<computed>",
        "flavour": "mint",
        "token": "<secret>",
        "zone": "eu-west-1a",
    }


def test_invokes_and_resources_answer_for_the_region_of_their_aws_provider() -> None:
    def program() -> None:
        frankfurt = aws.Provider("frankfurt", region="eu-central-1")
        beijing = aws.Provider("beijing", region="cn-north-1")
        via = pulumi.InvokeOptions(provider=frankfurt)
        zones = aws.get_availability_zones(opts=via)
        default_zones = aws.get_availability_zones()  # no provider: the stack's aws:region
        queue = aws.sqs.Queue("events", opts=pulumi.ResourceOptions(provider=frankfurt))
        key = aws.kms.Key("key", opts=pulumi.ResourceOptions(provider=beijing))
        k8s.core.v1.ConfigMap(
            "values",
            data={
                "zones": ",".join(zones.names),
                "ids": ",".join(zones.zone_ids),
                "default": default_zones.names[0],
                "queue": queue.arn,
                "key": key.arn,
            },
        )

    data = by_name(record(program, **{"aws:region": "us-west-2"}))["values"].inputs["data"]
    # Every zone letter the Network component can place (a..g) is there, beyond d included.
    assert data["zones"].split(",") == [f"eu-central-1{letter}" for letter in "abcdefg"]
    assert data["ids"].split(",")[4] == "euc1-az5"
    assert data["default"] == "us-west-2a"
    assert data["queue"].startswith("arn:aws:sqs:eu-central-1:")
    assert data["key"].startswith("arn:aws-cn:kms:cn-north-1:")


def test_kubernetes_autoname_is_visible_to_dependants() -> None:
    def program() -> None:
        ns = k8s.core.v1.Namespace("team")
        k8s.core.v1.ConfigMap("cm", metadata={"namespace": ns.metadata.name})

    resources = by_name(record(program))
    namespace = resources["cm"].inputs["metadata"]["namespace"]
    assert namespace.startswith("team-") and len(namespace) == len("team-") + 8


def test_duplicate_urn_is_an_error() -> None:
    def program() -> None:
        aws.sqs.Queue("same")
        aws.sqs.Queue("same")

    with pytest.raises(DuplicateUrnError) as caught:
        record(program)
    assert caught.value.urn.endswith("aws:sqs/queue:Queue::same")
    assert "duplicate resource URN" in str(caught.value)


def test_same_name_different_type_is_fine() -> None:
    def program() -> None:
        aws.sqs.Queue("same")
        aws.s3.Bucket("same")

    assert len(record(program)) == 4  # the stack, the default provider and both


def test_exception_in_program_surfaces() -> None:
    class Boom(Exception):
        pass

    def program() -> None:
        aws.sqs.Queue("before")
        raise Boom("program failed")

    with pytest.raises(Boom, match="program failed"):
        record(program)


def test_exception_in_apply_callback_surfaces() -> None:
    def explode(arn: str) -> str:
        raise ValueError(f"bad arn {arn}")

    def used_as_input() -> None:
        queue = aws.sqs.Queue("q")
        aws.sqs.Queue("dlq", name=queue.arn.apply(explode))

    def unused() -> None:
        aws.sqs.Queue("q").arn.apply(explode)

    for program in (used_as_input, unused):
        with pytest.raises(ValueError, match="bad arn arn:aws:sqs"):
            record(program)


def test_transforms_are_refused_rather_than_ignored() -> None:
    def program() -> None:
        aws.sqs.Queue("q", opts=pulumi.ResourceOptions(transforms=[lambda args: None]))

    with pytest.raises(UnsupportedFeatureError, match="transforms"):
        record(program)


def test_two_recordings_are_identical_and_isolated() -> None:
    def program() -> None:
        Pair("a")
        Pair("b", opts=pulumi.ResourceOptions(protect=True))
        aws.sqs.Queue("q", name=pulumi.Config("proj").get("queue") or "unset")

    first = record(program, **{"proj:queue": "one"})
    second = record(program)
    third = record(program, **{"proj:queue": "one"})
    assert first == third
    assert [r.to_json() for r in first] == [r.to_json() for r in third]
    assert by_name(second)["q"].inputs["name"] == "unset"
    # protect is inherited by children, as the SDK does it.
    assert by_name(first)["b-first"].options["protect"] is True
    assert "protect" not in by_name(first)["a-first"].options


def test_failed_recording_does_not_poison_the_next() -> None:
    def bad() -> None:
        aws.sqs.Queue("x")
        aws.sqs.Queue("x")

    with pytest.raises(DuplicateUrnError):
        record(bad)
    assert [r.name for r in record(lambda: aws.sqs.Queue("x"))] == [AWS_DEFAULT, f"{PROJECT}-{STACK}", "x"]


def _write(directory: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))


def test_record_main_runs_like_pulumi_up_and_isolates_modules(tmp_path: Path) -> None:
    main = """
        import os
        import pulumi
        import pulumi_aws as aws
        import helper

        assert __name__ == "__main__"
        aws.sqs.Queue(helper.NAME, tags={"cwd": os.path.basename(os.getcwd()), "stack": pulumi.get_stack()})
    """
    for version in ("base", "head"):
        _write(tmp_path / version, {"__main__.py": main, "helper/__init__.py": f'NAME = "queue-{version}"\n'})

    base = record_main(tmp_path / "base" / "__main__.py", project=PROJECT, stack="prod")
    head = record_main(tmp_path / "head", project=PROJECT, stack="prod")
    assert [r.name for r in base][2:] == ["queue-base"]
    assert [r.name for r in head][2:] == ["queue-head"]
    assert head[2].inputs["tags"] == {"cwd": "head", "stack": "prod"}
    assert "helper" not in sys.modules


def test_record_main_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        record_main(tmp_path / "nope.py", project=PROJECT, stack=STACK)


def test_importing_the_package_does_not_import_pulumi() -> None:
    code = "import sys, gpuplat.preview; assert 'pulumi' not in sys.modules, 'pulumi imported'"
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)


def test_urns_carry_the_whole_parent_type_chain_like_the_engine() -> None:
    import pulumi

    class Outer(pulumi.ComponentResource):
        def __init__(self, name: str) -> None:
            super().__init__("test:index:Outer", name, None, None)
            Inner(f"{name}-inner", pulumi.ResourceOptions(parent=self))

    class Inner(pulumi.ComponentResource):
        def __init__(self, name: str, opts: pulumi.ResourceOptions) -> None:
            super().__init__("test:index:Inner", name, None, opts)
            pulumi.ComponentResource("test:index:Leaf", f"{name}-leaf", None, pulumi.ResourceOptions(parent=self))

    def program() -> None:
        Outer("o")

    urns = {r.name: r.urn for r in record_program(program, project=PROJECT, stack=STACK)}
    assert urns["o"] == f"urn:pulumi:{STACK}::{PROJECT}::test:index:Outer::o"
    assert urns["o-inner-leaf"] == (
        f"urn:pulumi:{STACK}::{PROJECT}::test:index:Outer$test:index:Inner$test:index:Leaf::o-inner-leaf"
    )


def test_outputs_are_waited_for_without_the_sdk_polling_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # A chain of applies finishes one link per event-loop turn. The SDK's wait_for_rpcs
    # waits for the first of all outstanding Outputs again after each (asyncio.wait, a
    # callback on every one of them each time): quadratic in Outputs. The recording settles
    # them first, linearly, so the SDK's loop finds nothing left to wait for.
    import asyncio

    calls: list[int] = []
    real_wait = asyncio.wait

    async def counting_wait(tasks, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(tasks))
        return await real_wait(tasks, *args, **kwargs)

    monkeypatch.setattr(asyncio, "wait", counting_wait)

    def program() -> None:
        value = pulumi.Output.from_input("x")
        for _ in range(200):
            value = value.apply(lambda v: v + "x")
        aws.sqs.Queue("q", name=value.apply(lambda v: v[:5]))

    resources = by_name(record(program))
    assert resources["q"].inputs["name"] == "xxxxx"
    assert sum(calls) < 50, f"asyncio.wait over {sum(calls)} tasks in {len(calls)} rounds"


def test_the_callers_cycle_collector_is_left_as_it_was() -> None:
    """The recording pauses the collector for speed; a caller must get back the setting it had,
    also when the program fails."""

    def failing() -> None:
        aws.sqs.Queue("same")
        aws.sqs.Queue("same")

    assert gc.isenabled()
    record(lambda: aws.sqs.Queue("q"))
    assert gc.isenabled()
    with pytest.raises(DuplicateUrnError):
        record(failing)
    assert gc.isenabled()
    gc.disable()
    try:
        record(lambda: aws.sqs.Queue("q"))
        assert not gc.isenabled()
    finally:
        gc.enable()
