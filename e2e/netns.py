"""Run the suite inside a network namespace of its own, with loopback as its only interface.

Everything the suite starts listens on 127.0.0.1; the API server's dials to Service addresses
(webhooks, aggregated APIs) then fail inside the namespace instead of leaving the machine.
The suite gets a mount namespace too, where /etc is an overlay whose writes land in a
directory of the run: Kueue reads its metrics certificate from a fixed path under /etc, and
nothing the suite writes there may touch the machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

_MARK = "GPUPLAT_E2E_NETNS"


def interfaces() -> list[str]:
    # From netlink, not /sys/class/net: sysfs keeps showing the namespace it was mounted in.
    listing = subprocess.run(["ip", "-o", "link", "show"], check=True, capture_output=True, text=True).stdout
    return sorted(line.split(":")[1].strip().split("@")[0] for line in listing.splitlines() if line.strip())


def enter(argv: list[str], program: tuple[str, ...] = ("-m", "e2e")) -> None:
    """Re-run this process (`python <program> <argv>`) in a new network namespace, unless it
    already runs in one."""
    if os.environ.get(_MARK) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        if interfaces() != ["lo"]:
            sys.exit(f"e2e: the network namespace has interfaces besides lo: {interfaces()}")
        return
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        sys.exit("e2e: needs unshare (util-linux) and ip (iproute2) to make its network namespace")
    env = {**os.environ, _MARK: "1"}
    # --map-root-user lets a non-root user make the namespace; root keeps its own identity.
    userns = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    command = ["unshare", "--net", "--mount", *userns, "--", sys.executable, *program, *argv]
    inner = subprocess.Popen(command, env=env, start_new_session=True)

    def forward(signum: int, _frame: object) -> None:
        # A stop (CI's timeout, Ctrl-C) reaches the suite inside, which tears every target down.
        inner.send_signal(signum)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    sys.exit(inner.wait())


def private_etc(workdir: Path) -> None:
    """Overlay /etc inside this mount namespace; writes go to `workdir`, never to the machine."""
    upper, work = workdir / "etc-upper", workdir / "etc-work"
    upper.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir=/etc,upperdir={upper},workdir={work}", "/etc"], check=True)
