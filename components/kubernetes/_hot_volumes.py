"""The hot tier's volumes on aws: one directory of an FSx for Lustre file system per tenant.

Isolation: a tenant's volume mounts only its own directory `/<tenant>` of the file system.
The FSx CSI driver (chart 1.17.0) mounts `<dnsname>@tcp:/<mountname>` and nothing else, so
the volume's `mountname` attribute carries the directory, `<mountname>/<tenant>`: a Lustre
subdirectory (fileset) mount, as FSx documents for mounting part of a file system. The
tenant's pods cannot see the root or another tenant's directory; their namespace has only
the claim bound to that volume, and PersistentVolumes are cluster-scoped objects tenants
cannot create (the driver offers no inline volumes); a claim of theirs naming another
volume stays Pending, since every volume here is pre-bound (claimRef) to its own claim. The
boundary is Kubernetes', not Lustre's: FSx exposes no server-side filesets (nodemaps), so
root on a node could still mount the whole file system; Pod Security `baseline` keeps
tenant pods unprivileged.

volumeHandle: the driver never parses it for static volumes (it keys its in-flight mount
operations on it), but Kubernetes treats two volumes with one handle as one volume, and
pods of the second stay in ContainerCreating. So every volume has its own:
`<file system id>::<tenant>`, and `<file system id>::/` for the root volume below (no tenant
name holds a slash, and the bare id was every volume's handle before, during an upgrade).

The directory must exist before the first mount (Lustre refuses to mount a missing
fileset, and the driver creates nothing on the file system). A Job per tenant creates it:
it mounts the root of the file system through a root volume and claim in kube-system (next
to the driver; only cluster administrators reach that namespace), makes `/<tenant>` if it
is missing and opens it to every user id (0777), since tenant images run as arbitrary users
and the driver applies no fsGroup to a shared volume; only that tenant ever mounts it. An
existing directory is left as it is. The Job runs as uid 0 because the file system's root
directory is root's, with every capability dropped: creating and chmod-ing entries in a
directory one owns needs none. The tenant's volume waits for its Job (Pulumi awaits a Job's
completion), so a first pod finds its directory.

A tenant whose priority moves it to the other file system gets a new volume and directory
there; its files stay on the old file system (and in the cold bucket's export of it). Such a
move, like the first upgrade from volumes on the file system's root, replaces volume and
claim: Kubernetes deletes a claim only once no pod uses it, so the tenant's pods that mount
`hot` must stop for the update to finish. The claim is protected, so the preview refuses the
move unless `--allow-replace`, and Pulumi until an operator unprotects the claim.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

# The FSx driver's namespace; the root claims and the directory Jobs live there.
ADMIN_NAMESPACE = "kube-system"
# Docker's official busybox, from ECR Public (no Docker Hub pull limits on nodes).
BUSYBOX_IMAGE = "public.ecr.aws/docker/library/busybox:1.37.0"
FSX_DRIVER = "fsx.csi.aws.com"
_ROOT_MOUNT = "/fsx"
_JOB_NAME_MAX = 63  # the Job controller labels pods with the Job's name: a label value
# "$@" are tenant names: validation makes them DNS labels, so no path tricks.
_MAKE_DIRS = (
    'set -eu; for t in "$@"; do d="' + _ROOT_MOUNT + '/$t"; '
    'if [ ! -d "$d" ]; then mkdir "$d"; chmod 0777 "$d"; echo "created $d"; else echo "kept $d"; fi; done'
)


@dataclass(frozen=True)
class FsxRef:
    """One FSx for Lustre file system as the CSI driver reaches it."""

    file_system_id: pulumi.Input[str]
    dns_name: pulumi.Input[str]
    mount_name: pulumi.Input[str]


def tenant_csi(fs: FsxRef, tenant: str) -> k8s.core.v1.CSIPersistentVolumeSourceArgsDict:
    """The tenant's directory of `fs`, under a volumeHandle no other volume has."""
    return {
        "driver": FSX_DRIVER,
        "volume_handle": pulumi.Output.concat(fs.file_system_id, "::", tenant),
        "volume_attributes": {
            "dnsname": fs.dns_name,
            "mountname": pulumi.Output.concat(fs.mount_name, "/", tenant),
        },
    }


def root_csi(fs: FsxRef) -> k8s.core.v1.CSIPersistentVolumeSourceArgsDict:
    """The whole file system: only the directory Jobs mount it."""
    return {
        "driver": FSX_DRIVER,
        "volume_handle": pulumi.Output.concat(fs.file_system_id, "::/"),
        "volume_attributes": {"dnsname": fs.dns_name, "mountname": fs.mount_name},
    }


def directory_job_name(platform: str, tenant: str) -> str:
    name = f"{platform}-hot-dir-{tenant}"
    if len(name) <= _JOB_NAME_MAX:
        return name
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:8]
    return f"{name[: _JOB_NAME_MAX - 9].rstrip('-')}-{digest}"


def directory_job_spec(claim: str, tenants: list[str]) -> k8s.batch.v1.JobSpecArgsDict:
    return {
        "backoff_limit": 6,  # the file system may still be coming up on a first deploy
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/name": "hot-tier-directories"}},
            "spec": {
                "restart_policy": "OnFailure",
                "security_context": {"run_as_user": 0, "seccomp_profile": {"type": "RuntimeDefault"}},
                "containers": [
                    {
                        "name": "mkdir",
                        "image": BUSYBOX_IMAGE,
                        "command": ["sh", "-c", _MAKE_DIRS, "sh", *tenants],
                        "security_context": {
                            "allow_privilege_escalation": False,
                            "read_only_root_filesystem": True,
                            "capabilities": {"drop": ["ALL"]},
                        },
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
                        "volume_mounts": [{"name": "root", "mount_path": _ROOT_MOUNT}],
                    }
                ],
                "volumes": [{"name": "root", "persistent_volume_claim": {"claim_name": claim}}],
            },
        },
    }
