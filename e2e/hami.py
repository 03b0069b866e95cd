"""The HAMi defect of issue 18, shown on the output as it was and as it is.

Until e1c3032 the NodeOverlay of a fractional (HAMi) pool also declared `nvidia.com/gpumem`
(the GPUs' memory in MiB) and `nvidia.com/gpucores` (100 per GPU), so Karpenter launched nodes for
pods asking for them. HAMi's device plugin registers only the vGPU count, and Karpenter counts a
node as initialized only once every resource its pods requested is in the node's allocatable
(`nodeclaim/lifecycle/initialization.go`, RequestedResourcesRegistered): such a node is never
initialized, so never consolidated or removed. Here the old overlay is applied over the emitted
one and a tenant job asking for vGPU memory and cores is submitted: Karpenter launches a node that
stays uninitialized, in Karpenter's words. The emitted overlay is then put back; the same pool's
nodes launched for the tenant's reference job (the output as it is now) are initialized, which
`nodeclaims-initialized` also reports.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from e2e import expect, jobs
from e2e.cluster import Cluster, E2EError, wait_for
from e2e.karpenter import initialized_condition
from e2e.nodes import DONE
from e2e.report import Report
from e2e.scenarios import tenant_identity
from e2e.stack import Stack
from gpuplat.catalog import gpu_model
from gpuplat.catalog.sharing import HAMI_CORES_RESOURCE, HAMI_GPU_RESOURCE, HAMI_MEMORY_RESOURCE

OVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
JOB = "hami-gpumem"
# How long Karpenter gets, after the node agents registered the node's devices, to give its
# verdict on it: long past the seconds it takes to initialize a node whose resources are registered.
WATCH = 45.0
NOT_REGISTERED = "ResourceNotRegistered"  # Karpenter's reason: a resource a pod asked for never appeared


def old_overlay(overlay: dict[str, Any], plan_pool: dict[str, Any]) -> dict[str, Any]:
    """The overlay as emitted before e1c3032: vGPUs plus the GPUs' memory (MiB) and cores."""
    old = copy.deepcopy(overlay)
    gpu = gpu_model(plan_pool["gpuModel"])
    memory_mib = int(gpu.memory_gib * 1024) if gpu is not None else 0
    gpus = int(plan_pool["gpusPerNode"])
    old["spec"]["capacity"] = {**old["spec"]["capacity"], HAMI_MEMORY_RESOURCE: str(memory_mib * gpus),
                               HAMI_CORES_RESOURCE: str(100 * gpus)}
    return old


def hami_job(tenant: str, pool: str) -> dict[str, Any]:
    """A vGPU job that also asks for memory and cores, as HAMi's own examples do."""
    job = jobs.reference_job(tenant, pool, HAMI_GPU_RESOURCE, name=JOB)
    container = job["spec"]["template"]["spec"]["containers"][0]
    for resource, amount in ((HAMI_MEMORY_RESOURCE, "1024"), (HAMI_CORES_RESOURCE, "25")):
        container["resources"]["requests"][resource] = container["resources"]["limits"][resource] = amount
    return job


def _target(stack: Stack) -> tuple[dict[str, Any], dict[str, Any], str] | None:
    """(emitted overlay, plan pool, tenant) of a fractional pool the spec lets some tenant use."""
    pools = {p["name"]: p for p in stack.plan["pools"]}
    for overlay in stack.of_type(OVERLAY):
        if HAMI_GPU_RESOURCE not in overlay["spec"].get("capacity", {}):
            continue
        pool = overlay["metadata"]["labels"]["gpuplat.dev/pool"]
        tenants = [s.tenant for s in expect.slots(expect.spec_model(stack.target)) if s.pool == pool]
        if tenants and pool in pools:
            return overlay, pools[pool], tenants[0]
    return None


def _claim_asking(cluster: Cluster, resource: str) -> dict[str, Any] | None:
    for claim in cluster.items("nodeclaims.karpenter.sh"):
        if resource in claim["spec"].get("resources", {}).get("requests", {}):
            return claim
    return None


def old_output_never_initializes(cluster: Cluster, stack: Stack, report: Report, timeout: float) -> None:
    found = _target(stack)
    if found is None:
        for name in ("hami-old-overlay-never-initializes", "hami-current-overlay-initializes"):
            report.skip(stack.target.label, name, "no fractional (HAMi) pool a tenant's journey reaches")
        return
    overlay, pool, tenant = found
    label = stack.target.label
    try:
        refused = cluster.apply([old_overlay(overlay, pool)])
        if refused:
            raise E2EError(f"the old overlay was refused: {refused[0][1]}")
        created = cluster.kubectl("create", "-f", "-", stdin=json.dumps(hami_job(tenant, pool["name"])),
                                  check=False, **tenant_identity(tenant))
        if created.returncode:
            raise E2EError(f"the job was refused: {created.stderr.strip()}")
        claim = wait_for(lambda: _claim_asking(cluster, HAMI_MEMORY_RESOURCE), timeout,
                         f"Karpenter launching a node for a job asking for {HAMI_MEMORY_RESOURCE}")
        name = claim["metadata"]["name"]
        node = wait_for(lambda: (cluster.get("nodeclaims.karpenter.sh", name) or {}).get("status", {}).get("nodeName"),
                        timeout, f"NodeClaim {name}'s node")
        wait_for(lambda: True if (cluster.get("node", node) or {}).get("metadata", {}).get("labels", {}).get(DONE)
                 else None, timeout, f"the node agents on {node}")
        # Karpenter's own verdict ends the watch: it names the first unregistered resource it
        # finds (a map's order), either one, and only a device plugin registering it could change
        # that; none registers them.
        def verdict() -> dict[str, Any] | None:
            found = initialized_condition(cluster.get("nodeclaims.karpenter.sh", name) or {})
            named = any(r in found.get("message", "") for r in (HAMI_MEMORY_RESOURCE, HAMI_CORES_RESOURCE))
            return found if found.get("status") == "True" or (found.get("reason") == NOT_REGISTERED and named) \
                else None
        started = time.monotonic()
        try:
            condition = wait_for(verdict, WATCH, f"Karpenter's verdict on NodeClaim {name}")
        except E2EError:
            condition = initialized_condition(cluster.get("nodeclaims.karpenter.sh", name) or {})
        waited = time.monotonic() - started
        named = any(r in condition.get("message", "") for r in (HAMI_MEMORY_RESOURCE, HAMI_CORES_RESOURCE))
        stuck = condition.get("status") != "True" and condition.get("reason") == NOT_REGISTERED and named
        report.scenario(label, "hami-old-overlay-never-initializes", stuck,
                        f"old overlay (+{HAMI_MEMORY_RESOURCE}, {HAMI_CORES_RESOURCE}): NodeClaim {name} on {node} "
                        f"{waited:.0f} s after its devices registered: Initialized={condition.get('status')} "
                        f"({condition.get('reason')}: {condition.get('message')})")
    except E2EError as err:
        report.scenario(label, "hami-old-overlay-never-initializes", False, str(err))
    finally:
        cluster.kubectl("delete", "job", JOB, "-n", tenant, "--wait=false", "--ignore-not-found", check=False)
        cluster.apply([overlay])
        claim = _claim_asking(cluster, HAMI_MEMORY_RESOURCE)
        if claim is not None:
            cluster.kubectl("delete", "nodeclaims.karpenter.sh", claim["metadata"]["name"], "--wait=false", check=False)
    current = [c for c in cluster.items("nodeclaims.karpenter.sh")
               if c["metadata"].get("labels", {}).get("gpuplat.dev/pool") == pool["name"]
               and HAMI_MEMORY_RESOURCE not in c["spec"].get("resources", {}).get("requests", {})]
    initialized = [c["metadata"]["name"] for c in current if initialized_condition(c).get("status") == "True"]
    report.scenario(label, "hami-current-overlay-initializes", bool(current) and len(initialized) == len(current),
                    f"emitted overlay ({', '.join(overlay['spec']['capacity'])}): {len(initialized)} of "
                    f"{len(current)} NodeClaim(s) of pool {pool['name']} initialized")
