"""A tenant container running as any user reaches its S3 volumes.

The mount Mountpoint CSI v2 makes is played from the driver's own rules
(mountpoint-s3-csi-driver `pkg/driver/node/node.go`, NodePublishVolume): the volume's mount
options, then, if the pod has an fsGroup, `gid`, `allow-other`, `dir-mode 0770` and
`file-mode 0660` where the volume sets none, then `allow-root` when there is no
`allow-other`. Mountpoint itself runs as a non-root user, so it owns the files unless `uid`
says otherwise, and the kernel checks the modes (FUSE `default_permissions`).
"""

from __future__ import annotations

import pytest

from tests.support_k8s import by_kind, recorded

MOUNTPOINT_UID = 1000  # not root, not the tenant's user


def driver_args(options: list[str], fs_group: int | None) -> dict[str, str]:
    args: dict[str, str] = {}
    for option in options:
        key, _, value = option.partition(" ")
        args[key.removeprefix("--")] = value
    if fs_group is not None:
        for key, value in (("gid", str(fs_group)), ("allow-other", ""), ("dir-mode", "0770"), ("file-mode", "0660")):
            args.setdefault(key, value)
    if "allow-other" not in args:
        args.setdefault("allow-root", "")
    return args


def may(args: dict[str, str], uid: int, gids: set[int], what: str, want: int) -> bool:
    """Whether `uid` (in groups `gids`) may `want` (4 read, 2 write) a directory or file."""
    if "allow-other" not in args and not ("allow-root" in args and uid == 0):
        return False  # FUSE refuses every other user before any mode is checked
    if uid == 0:
        return True
    mode = int(args.get(f"{what}-mode", "0755" if what == "dir" else "0644"), 8)
    owner, group = int(args.get("uid", MOUNTPOINT_UID)), int(args.get("gid", MOUNTPOINT_UID))
    bits = mode >> 6 if uid == owner else (mode >> 3 if group in gids else mode)
    return bits & want == want


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_a_container_of_any_user_reads_and_writes_its_s3_volumes(stack: str) -> None:
    _, _, resources = recorded(stack)
    volumes = [v for v in by_kind(resources, "PersistentVolume") if v["spec"]["csi"]["driver"] == "s3.csi.aws.com"]
    assert volumes
    for volume in volumes:
        options = volume["spec"]["mountOptions"]
        warm = "allow-overwrite" in options
        for uid, fs_group in ((0, None), (1234, None), (1234, 5678)):
            args = driver_args(options, fs_group)
            gids = {fs_group} if fs_group is not None else set()
            name = f"{volume['metadata']['name']} uid {uid} fsGroup {fs_group}"
            assert may(args, uid, gids, "dir", 4 | 1), f"{name}: cannot list"
            assert may(args, uid, gids, "file", 4), f"{name}: cannot read"
            assert may(args, uid, gids, "dir", 2 | 1), f"{name}: cannot add an object"
            if warm:
                assert may(args, uid, gids, "file", 2), f"{name}: cannot overwrite on warm"
