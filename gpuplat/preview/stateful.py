"""The resource types that hold data or carry every workload: one list for the diff and the policies.

The diff refuses to replace or delete them without --allow-replace; the policies require them
to be protected and retained on delete. Pure data, no pulumi import (CrossGuard shares it).
"""

from __future__ import annotations

STATEFUL_TYPES: frozenset[str] = frozenset(
    {
        "aws:eks/cluster:Cluster",
        "aws:fsx/lustreFileSystem:LustreFileSystem",
        "aws:fsx/openZfsFileSystem:OpenZfsFileSystem",
        "aws:fsx/ontapFileSystem:OntapFileSystem",
        "aws:fsx/windowsFileSystem:WindowsFileSystem",
        "aws:s3/bucket:Bucket",
        "aws:s3/bucketV2:BucketV2",
        "aws:s3/directoryBucket:DirectoryBucket",
        "aws:kms/key:Key",
    }
)
