"""The resources that hold data or carry every workload: one definition for the diff and the policies.

The diff refuses to replace or delete them without --allow-replace; the policies require them
to be protected, and those holding data also retained on delete. Pure data, no pulumi import
(CrossGuard shares it).

Two kinds:
- by type: the cluster, the file systems, the buckets and their KMS keys (STATEFUL_TYPES);
- a tenant's Namespace and its PersistentVolumeClaims, found by the tenant label on the object
  (other namespaces and claims, e.g. kube-system's, are the platform's and carry no data of a
  tenant). Deleting a namespace deletes everything in it: the tenant's running jobs, its
  Secrets and ConfigMaps, and the claims it made itself, whose dynamically provisioned volumes
  (the default StorageClass deletes its volumes) go with them. A claim holds no data itself,
  since its volume is static and Retain on FSx or S3, but replacing it cuts the tenant off:
  Kubernetes deletes a claim only once no pod uses it, and the Released volume stays bound to
  the old claim's uid, so the new claim never binds. Claims are therefore protected but not
  retained: a retained claim would keep its replacement (same name) from being created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from gpuplat.catalog.labels import TENANT_LABEL

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
NAMESPACE = "kubernetes:core/v1:Namespace"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
# Stateful when labelled as a tenant's (see above).
TENANT_TYPES: frozenset[str] = frozenset({NAMESPACE, CLAIM})


def tenant_object(type_: str, inputs: Mapping[str, Any] | None) -> bool:
    """A tenant's Namespace or claim: the tenant label on its metadata."""
    if type_ not in TENANT_TYPES or not isinstance(inputs, Mapping):
        return False
    metadata = inputs.get("metadata")
    labels = cast("Mapping[str, Any]", metadata).get("labels") if isinstance(metadata, Mapping) else None
    return isinstance(labels, Mapping) and TENANT_LABEL in labels


def is_stateful(type_: str, inputs: Mapping[str, Any] | None = None) -> bool:
    return type_ in STATEFUL_TYPES or tenant_object(type_, inputs)


def must_retain(type_: str, inputs: Mapping[str, Any] | None = None) -> bool:
    """Stateful and holding data: left in place when the program drops it (retainOnDelete)."""
    return is_stateful(type_, inputs) and type_ != CLAIM
