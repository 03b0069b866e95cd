"""MIG mode at first boot: the user data of a MIG pool's EC2NodeClass.

Why: on EKS's AL2023 NVIDIA AMI the driver is on the host, so the GPU Operator runs
mig-manager with host GPU clients shut down around a change (gpu-operator
`controllers/object_controls.go` `TransformMIGManager` sets WITH_SHUTDOWN_HOST_GPU_CLIENTS
when `driver.enabled` is false), and when the change includes the
MIG *mode* it adds the kubelet to the services it stops and restarts (mig-parted
`deployments/container/reconfigure-mig.sh`: `assert --mode-only` fails ->
`HOST_GPU_CLIENT_SERVICES+=(${HOST_KUBELET_SERVICE})`). On AL2023's cgroup v2 that restart,
early in a node's life, leaves containerd unable to reattach and the node NotReady for good
(NVIDIA/gpu-operator#2415, NVIDIA/mig-parted#368). Every new MIG node, and every replacement
(expiry, drift, spot), would hit it.

What: the pool's nodes turn MIG mode on before the kubelet ever starts. On AL2023 nodeadm
starts the kubelet after cloud-init's final stage, which runs this script (Karpenter wraps a
plain script as a MIME part ahead of its own NodeConfig: karpenter-provider-aws
`pkg/providers/amifamily/bootstrap/nodeadm.go` `parseUserData`). mig-manager then finds the
mode already applied and only creates the instances of the node's `nvidia.com/mig.config`:
a config-only change, for which it does not stop the kubelet (mig-parted#19, maintainers'
answer; the same script). The layout stays with mig-manager, so the named profiles and custom
layouts keep one source (the GPU Operator's config or gpuplat's mig-parted ConfigMap) and no
binary is downloaded at boot.

The sequence mirrors mig-manager's: stop the host's GPU clients, set the mode, start them again.
If the GPU cannot be reset in place the mode stays pending; the script then reboots once: a
pending mode takes effect at boot, and cloud-init runs user data once per instance, so the
second boot goes straight to the kubelet with MIG on. A node with no working driver powers off
instead of joining: it never registers, and Karpenter replaces the NodeClaim when its
registration timeout passes. (If a mode were still pending after that reboot the kubelet would
start anyway, the script not running again, and mig-manager would make the mode change itself:
the case this script exists to avoid, left to the reboot NVML prescribes for it.)

Only MIG pools carry it: on other pools mig-manager's default (`all-disabled`) matches the
GPUs' boot state and changes nothing. Editing the script is drift for Karpenter, which
replaces the pool's nodes gracefully, within the pool's disruption budgets.
"""

from __future__ import annotations

from gpuplat.model import GpuNodePool, SharingMode

# Host services mig-manager stops around a MIG change on a host-driver node (the GPU
# Operator's default HOST_GPU_CLIENT_SERVICES); any of them holds the GPU open and blocks the reset.
HOST_GPU_CLIENTS = ("nvidia-persistenced", "nvidia-fabricmanager", "nvidia-dcgm", "dcgm", "nvsm")
LOG = "/var/log/gpuplat-mig-boot.log"
REBOOT_MARK = "/var/lib/gpuplat/mig-boot-rebooted"

_SCRIPT = """#!/bin/bash
# gpuplat: MIG mode on before the kubelet starts (pool {pool}). Why: components/aws/mig_boot.py.
set -uo pipefail
exec >>{log} 2>&1
echo "gpuplat-mig-boot: $(date -u +%FT%TZ) pool {pool}"

halt_node() {{
  echo "gpuplat-mig-boot: $1; powering off so this node never registers"
  systemctl poweroff
  exit 1
}}

modes() {{ nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader; }}
all_enabled() {{
  local m
  m=$(modes) || return 1
  [ -n "$m" ] && ! grep -qv '^Enabled$' <<<"$m"
}}

for _ in $(seq 1 60); do
  nvidia-smi -L >/dev/null 2>&1 && break
  sleep 2
done
nvidia-smi -L >/dev/null 2>&1 || halt_node "no NVIDIA driver answered in 120 s"

if ! all_enabled; then
  stopped=()
  for s in {clients}; do
    if systemctl is-active --quiet "$s"; then
      systemctl stop "$s" && stopped+=("$s")
    fi
  done
  nvidia-smi -mig 1
  for s in "${{stopped[@]}}"; do
    systemctl start "$s"
  done
fi

if ! all_enabled; then
  if [ -e {mark} ]; then
    halt_node "MIG mode still not enabled after a reboot: $(modes | tr '\\n' ' ')"
  fi
  echo "gpuplat-mig-boot: MIG mode pending ($(modes | tr '\\n' ' ')); rebooting once to apply it"
  mkdir -p "$(dirname {mark})" && touch {mark}
  systemctl reboot
  exit 0
fi
echo "gpuplat-mig-boot: MIG mode enabled on every GPU"
"""


def mig_boot_user_data(pool: GpuNodePool) -> str | None:
    """The pool's EC2NodeClass userData, or None when the pool is not a MIG pool."""
    if pool.sharing.mode is not SharingMode.MIG:
        return None
    return _SCRIPT.format(pool=pool.name, log=LOG, mark=REBOOT_MARK, clients=" ".join(HOST_GPU_CLIENTS))
