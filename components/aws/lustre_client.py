"""Node user data that makes a fabric node a Lustre EFA client of an EFA-enabled hot tier.

An EFA-enabled FSx for Lustre file system serves EFA only to clients whose LNet runs on EFA;
every other client mounts it over TCP, and nothing on either side says so. The steps are the
ones AWS documents for EKS nodes ("Optimize Amazon FSx for Lustre performance on nodes (EFA)",
https://docs.aws.amazon.com/eks/latest/userguide/fsx-csi-tuning-efa.html): an EFA driver of at
least 2.12.1, a Lustre client with the EFA network driver (kefalnd), LNet configured with a TCP
network on the primary interface and an `efa` network on the EFA devices (on the 32-card p5 types
every fourth device, one per PCI bus; elsewhere the first and the last), discovery on, and a
UDSP rule that prefers EFA; the mount itself stays `<dns>@tcp:/<mount>` and LNet moves the
traffic. AWS's example installs the client on Ubuntu; the nodes here run the EKS AL2023 AMI,
whose accelerated variant carries the EFA driver and whose repositories carry `lustre-client`.

It runs as a shell part of the AL2023 user data (Karpenter merges its own NodeConfig into the
MIME archive), before nodeadm starts the kubelet, so the FSx CSI driver's first mount already
finds LNet on EFA. Any step that cannot be done (old driver, a client without kefalnd) logs why
under the `gpuplat-lustre-efa` tag and leaves LNet to the CSI driver's TCP default: a node that
mounts over TCP is slower, a node that fails to boot is lost.
"""

from __future__ import annotations

# The lowest EFA driver the EKS guide's script accepts for the EFA LNet driver.
MIN_EFA_DRIVER = "2.12.1"
# Network cards at which the guide selects every fourth EFA device (p5/p5e: 32 cards, 4 per bus).
EVERY_FOURTH_FROM_CARDS = 32
BOUNDARY = "gpuplat-lustre-efa"

_SCRIPT = """#!/bin/bash
# gpuplat: Lustre EFA client for the EFA-enabled hot tier (storage.hot.efa).
set -u
log() {{ logger -s -t gpuplat-lustre-efa "$*"; }}
tcp() {{ log "$1: Lustre stays on TCP"; exit 0; }}
min_efa="{min_efa}"
efa="$(modinfo -F version efa 2>/dev/null | sed 's/[^0-9.]//g')"
if [ -z "$efa" ] || [ "$(printf '%s\\n' "$min_efa" "$efa" | sort -V | head -n1)" != "$min_efa" ]; then
  tcp "EFA driver ${{efa:-missing}} is older than $min_efa"
fi
if ! modinfo lustre >/dev/null 2>&1; then
  dnf install -y lustre-client >/dev/null || tcp "lustre-client could not be installed"
fi
modinfo kefalnd >/dev/null 2>&1 || tcp "this Lustre client has no EFA network driver (kefalnd)"
eth="$(ip -4 route show default | awk '{{print $5; exit}}')"
[ -n "$eth" ] || tcp "no primary interface found"
modprobe lnet && modprobe kefalnd ipif_name="$eth" && modprobe ksocklnd || tcp "LNet modules did not load"
lnetctl lnet configure || tcp "LNet did not configure"
lnetctl net del --net tcp 2>/dev/null
lnetctl net add --net tcp --if "$eth" || tcp "no TCP network on $eth"
devices="$(ls -1 /sys/class/infiniband 2>/dev/null)"
[ -n "$devices" ] || tcp "no EFA device on this node"
if [ "{every_fourth}" = yes ]; then
  chosen="$(printf '%s\\n' "$devices" | awk 'NR % 4 == 1')"
else
  chosen="$(printf '%s\\n' "$devices" | sed -n '1p;$p' | sort -u)"
fi
for device in $chosen; do
  lnetctl net add --net efa --if "$device" --peer-credits 32 || log "EFA device $device not added"
done
lnetctl set discovery 1
lnetctl udsp add --src efa --priority 0
modprobe lustre
log "LNet on $(lnetctl net show | grep -c '@efa') EFA interface(s)"
"""


def lustre_efa_script(network_cards: int) -> str:
    """The shell part: `network_cards` (catalog) picks the guide's device selection."""
    every_fourth = "yes" if network_cards >= EVERY_FOURTH_FROM_CARDS else "no"
    return _SCRIPT.format(min_efa=MIN_EFA_DRIVER, every_fourth=every_fourth)


def lustre_efa_user_data(network_cards: int) -> str:
    """EC2NodeClass `userData`: a MIME multi-part archive with the script as its one shell part
    (the form Karpenter merges with its AL2023 NodeConfig)."""
    return shell_parts(lustre_efa_script(network_cards))


def shell_parts(*scripts: str) -> str:
    """Scripts as the shell parts of one MIME multi-part archive, run by cloud-init in order."""
    parts = "".join(
        f'--{BOUNDARY}\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n{script}'
        + ("" if script.endswith("\n") else "\n")
        for script in scripts
    )
    return f'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="{BOUNDARY}"\n\n{parts}--{BOUNDARY}--\n'
