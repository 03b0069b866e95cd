"""Fabric nodes become Lustre EFA clients when the hot tier is EFA-enabled: their EC2NodeClass
carries the user data, other nodes and other specs carry none, and the script is valid bash
that takes the documented steps and falls back to TCP instead of failing the boot."""

from __future__ import annotations

import email
import shutil
import subprocess
from email.message import Message
from pathlib import Path
from typing import Any, cast

import pytest

from components.aws.lustre_client import lustre_efa_script, lustre_efa_user_data
from tests.support_aws import NODE_CLASS, compile_model, crd_errors, custom_resources, overlay_with, record


def _node_classes(tmp_path: Path, efa: bool) -> dict[str, dict[str, Any]]:
    overlay = overlay_with(tmp_path, "prod", storage={"hot": {"efa": efa}})
    model, plan = compile_model("prod", overlay)
    assert model.storage.hot is not None and model.storage.hot.efa is efa
    resources = tuple(record(model, plan, "prod"))
    return {obj["metadata"]["name"]: obj for obj in custom_resources(resources, NODE_CLASS)}


def test_fabric_node_classes_get_the_client_setup_only_with_efa(tmp_path: Path) -> None:
    with_efa = _node_classes(tmp_path, efa=True)
    fabric = {n: o for n, o in with_efa.items() if "networkInterfaces" in o["spec"]}
    others = {n: o for n, o in with_efa.items() if "networkInterfaces" not in o["spec"]}
    assert fabric and others
    for obj in fabric.values():
        assert "kefalnd" in obj["spec"]["userData"]
        assert not list(crd_errors(NODE_CLASS, obj))  # userData is a field the CRD has
    # No EFA device, nothing to set up (a MIG pool's class carries only its MIG boot script).
    assert all("kefalnd" not in o["spec"].get("userData", "") for o in others.values())
    (tmp_path / "off").mkdir()
    without = _node_classes(tmp_path / "off", efa=False)
    assert all("kefalnd" not in o["spec"].get("userData", "") for o in without.values())


def test_user_data_is_one_shell_part_karpenter_can_merge() -> None:
    message = email.message_from_string(lustre_efa_user_data(32))
    assert message.is_multipart()
    (part,) = cast("list[Message]", message.get_payload())
    assert part.get_content_type() == "text/x-shellscript"
    # The line break before a boundary belongs to the boundary (RFC 2046): the script ends without it.
    assert part.get_payload() == lustre_efa_script(32).rstrip("\n")


@pytest.mark.parametrize(("cards", "every_fourth"), [(32, "yes"), (4, "no"), (1, "no")])
def test_the_documented_steps_and_device_choice(cards: int, every_fourth: str) -> None:
    script = lustre_efa_script(cards)
    steps = [
        "modprobe kefalnd ipif_name=",
        "lnetctl lnet configure",
        "lnetctl net add --net tcp --if",
        "lnetctl net add --net efa --if",
        "lnetctl set discovery 1",
        "lnetctl udsp add --src efa --priority 0",
        "modprobe lustre",
    ]
    positions = [script.index(step) for step in steps]
    assert positions == sorted(positions)  # in the order the guide takes them
    assert f'if [ "{every_fourth}" = yes ]' in script
    assert 'min_efa="2.12.1"' in script


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_script_is_valid_bash_and_falls_back_to_tcp(tmp_path: Path) -> None:
    script = tmp_path / "efa.sh"
    script.write_text(lustre_efa_script(32), encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True).returncode == 0
    # On a machine without an EFA driver (this one) it logs why and exits 0: the node still boots.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("modinfo", "logger"):
        stub = bin_dir / tool
        stub.write_text('#!/bin/sh\n[ "$(basename "$0")" = logger ] && echo "$@" >&2\nexit 1\n', encoding="utf-8")
        stub.chmod(0o755)
    run = subprocess.run(
        ["bash", str(script)], capture_output=True, text=True, env={"PATH": f"{bin_dir}:/usr/bin:/bin"}
    )
    assert run.returncode == 0
    assert "EFA driver missing is older than 2.12.1: Lustre stays on TCP" in run.stderr


def test_a_mig_fabric_pool_runs_its_mig_boot_script_before_the_lustre_client_setup() -> None:
    from components.aws.lustre_client import BOUNDARY, lustre_efa_script, shell_parts

    archive = shell_parts("#!/bin/bash\necho mig\n", lustre_efa_script(32))
    parts = archive.split(f"--{BOUNDARY}")
    assert archive.startswith("MIME-Version: 1.0\n") and archive.endswith(f"--{BOUNDARY}--\n")
    assert ["echo mig" in parts[1], "kefalnd" in parts[2]] == [True, True]
    assert all('Content-Type: text/x-shellscript' in part for part in parts[1:3])
