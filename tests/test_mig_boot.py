"""MIG mode at first boot: which node classes carry the script, and what the script does on a host.

The script runs under bash against fakes of nvidia-smi and systemctl (on PATH), which keep the
GPUs' MIG mode and the host services in files, so each test checks the order of what happened.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from components.aws.cpu_node_pool import CPU_NODE_POOL
from components.aws.mig_boot import LOG, REBOOT_MARK, mig_boot_user_data
from gpuplat.model import GpuNodePool, SharingMode
from tests.support_aws import NODE_CLASS, STACKS, custom_resources, recorded

BASH = shutil.which("bash")

# Fakes: state/<gpu>.mode holds Disabled / Enabled; state/active/<svc> marks a running service;
# state/stuck makes `-mig 1` leave the mode pending (no reset in place); state/nodriver fails -L.
FAKE_SMI = """#!/bin/bash
S="$FAKE_STATE"
echo "nvidia-smi $*" >>"$S/calls"
[ -e "$S/nodriver" ] && exit 9
case "$*" in
  -L) for f in "$S"/gpu*.mode; do echo "GPU $(basename "$f" .mode)"; done ;;
  "--query-gpu=mig.mode.current --format=csv,noheader") cat "$S"/gpu*.mode ;;
  "-mig 1")
    [ -e "$S/stuck" ] && exit 0
    ls "$S/active" | grep -q . && { echo "In use by another client"; exit 0; }
    for f in "$S"/gpu*.mode; do echo Enabled >"$f"; done ;;
  *) exit 2 ;;
esac
"""
FAKE_SYSTEMCTL = """#!/bin/bash
S="$FAKE_STATE"
echo "systemctl $*" >>"$S/calls"
case "$1" in
  is-active) [ -e "$S/active/$3" ] ;;
  stop) rm -f "$S/active/$2" ;;
  start) touch "$S/active/$2" ;;
  poweroff|reboot) : ;;
esac
"""


def run_script(tmp_path: Path, modes: list[str], active: list[str], *flags: str) -> tuple[int, list[str], Path]:
    state, bin_dir = tmp_path / "state", tmp_path / "bin"
    (state / "active").mkdir(parents=True)
    bin_dir.mkdir()
    for i, mode in enumerate(modes):
        (state / f"gpu{i}.mode").write_text(mode + "\n")
    for svc in active:
        (state / "active" / svc).touch()
    for flag in flags:
        (state / flag).touch()
    for name, text in {"nvidia-smi": FAKE_SMI, "systemctl": FAKE_SYSTEMCTL, "sleep": "#!/bin/sh\n"}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    pool = _mig_pool()
    script = mig_boot_user_data(pool)
    assert script is not None
    mark = tmp_path / "mark" / "rebooted"
    if "rebooted" in flags:
        mark.parent.mkdir()
        mark.touch()
    script = script.replace(LOG, str(tmp_path / "boot.log")).replace(REBOOT_MARK, str(mark))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FAKE_STATE": str(state)}
    assert BASH is not None
    done = subprocess.run([BASH, "-c", script], env=env, check=False, timeout=30)
    calls = (state / "calls").read_text().splitlines()
    return done.returncode, calls, state


def _mig_pool() -> GpuNodePool:
    model, _, _ = recorded("dev")
    return next(p for p in model.pools if p.sharing.mode is SharingMode.MIG)


pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


def test_mig_mode_is_set_with_the_gpu_clients_stopped_then_they_run_again(tmp_path: Path) -> None:
    code, calls, state = run_script(tmp_path, ["Disabled", "Disabled"], ["nvidia-persistenced", "nvidia-fabricmanager"])
    assert code == 0
    assert {p.read_text().strip() for p in state.glob("gpu*.mode")} == {"Enabled"}
    mig = calls.index("nvidia-smi -mig 1")
    assert calls.index("systemctl stop nvidia-persistenced") < mig
    assert calls.index("systemctl stop nvidia-fabricmanager") < mig
    assert calls.index("systemctl start nvidia-fabricmanager") > mig
    assert sorted(p.name for p in (state / "active").iterdir()) == ["nvidia-fabricmanager", "nvidia-persistenced"]
    # Services that were not running are not started.
    assert "systemctl start nvidia-dcgm" not in calls
    assert not any(c.startswith(("systemctl reboot", "systemctl poweroff")) for c in calls)


def test_a_node_already_in_mig_mode_is_left_alone(tmp_path: Path) -> None:
    code, calls, _ = run_script(tmp_path, ["Enabled"] * 8, ["nvidia-fabricmanager"])
    assert code == 0
    assert not any(c.startswith(("systemctl stop", "systemctl reboot", "nvidia-smi -mig")) for c in calls)


def test_a_mode_still_pending_reboots_once_then_the_node_halts(tmp_path: Path) -> None:
    code, calls, _ = run_script(tmp_path / "first", ["Disabled"], [], "stuck")
    assert code == 0 and calls[-1] == "systemctl reboot"
    assert (tmp_path / "first" / "mark" / "rebooted").exists()
    code, calls, _ = run_script(tmp_path / "again", ["Disabled"], [], "stuck", "rebooted")
    assert code == 1 and "systemctl poweroff" in calls and "systemctl reboot" not in calls


def test_a_node_without_a_driver_never_joins(tmp_path: Path) -> None:
    code, calls, _ = run_script(tmp_path, ["Disabled"], [], "nodriver")
    assert code == 1
    assert calls[-1] == "systemctl poweroff"
    assert "nvidia-smi -mig 1" not in calls


@pytest.mark.parametrize("stack", STACKS)
def test_exactly_the_mig_pools_node_classes_turn_mig_on_at_boot(stack: str) -> None:
    model, _, resources = recorded(stack)
    classes = custom_resources(resources, NODE_CLASS)
    assert classes
    for obj in classes:
        if obj["metadata"]["name"] == CPU_NODE_POOL:
            assert "userData" not in obj["spec"]
            continue
        pool = model.pools_by_name[obj["metadata"]["name"].removesuffix("-blocks")]
        expected = mig_boot_user_data(pool)
        assert obj["spec"].get("userData") == expected, pool.name
        if pool.sharing.mode is SharingMode.MIG:
            assert expected is not None and "nvidia-smi -mig 1" in expected


def test_the_script_is_valid_bash() -> None:
    assert BASH is not None
    script = mig_boot_user_data(_mig_pool())
    assert script is not None and script.startswith("#!/bin/bash\n")
    subprocess.run([BASH, "-n", "-c", script], check=True)
