"""GpuPlatform: the root component, wiring the AWS side and then the Kubernetes side.

On provider aws: an AWS provider for the spec's region -> Network -> Cluster -> TenantAccess
(when a tenant names principals) and a Kubernetes provider built from the cluster's
kubeconfig -> Karpenter, Fabric, Procurement, one GpuNodePool per pool, the CpuNodePool,
StorageTiers.
On provider kubernetes: only the Kubernetes provider, from stack config.

The spec's target.region decides where the platform lives, not the stack's `aws:region`:
every AWS component gets an explicit provider for that region (their children and invokes
inherit it), so zones, service names and ARNs the components derive from the spec always
match the region the resources are created in. The provider's default tags are the stack's
`aws:defaultTags` plus metadata.tags (the spec wins), so every taggable object carries them
even where a component forgot. An explicit provider reads no other `aws:*` stack setting:
credentials come from the environment (AWS_PROFILE, AWS_ACCESS_KEY_ID, ...).
Both then reach the same hook, where the Kubernetes-side components are built
(components/kubernetes/side.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from gpuplat.model import Platform, Provider
from gpuplat.plan import Plan
from gpuplat.preflight import PREFLIGHT_SETTING, REPORT

from .aws._common import cluster_name
from .aws.api_access import ApiAccess, ApiAccessError, api_access
from .aws.cluster import Cluster, ClusterArgs
from .aws.cpu_node_pool import CpuNodePool, CpuNodePoolArgs
from .aws.fabric import Fabric, FabricArgs, fabric_zone
from .aws.gpu_node_pool import GpuNodePool, GpuNodePoolArgs
from .aws.karpenter import Karpenter, KarpenterArgs
from .aws.network import Network, NetworkArgs
from .aws.preflight import preflight
from .aws.procurement import Procurement, ProcurementArgs
from .aws.storage import StorageTiers, StorageTiersArgs
from .aws.tenant_access import TenantAccess, TenantAccessArgs
from .kubernetes.side import KubernetesSide, build_kubernetes_side
from .kubernetes.storage_classes import AwsStorageRefs

CONFIG_NAMESPACE = "gpu-platform"  # the Pulumi project name: `gpu-platform:kubeconfig`


@dataclass(frozen=True)
class GpuPlatformArgs:
    model: Platform
    plan: Plan


@dataclass(frozen=True)
class AwsOutputs:
    """What the AWS side hands to the Kubernetes side (None on provider kubernetes)."""

    cluster_name: str
    region: str
    cluster: Cluster
    karpenter: Karpenter
    node_pools: dict[str, GpuNodePool]
    fabric: Fabric | None
    storage: StorageTiers | None
    tenant_access: TenantAccess | None = None


def _reporting() -> bool:
    """A preview that judges the stack instead of deploying it (gpuplat/preflight/__init__.py):
    what preflight would refuse does not stop it, and the caller reports it. Never in `pulumi up`."""
    namespace, key = PREFLIGHT_SETTING.split(":")
    return pulumi.runtime.is_dry_run() and pulumi.Config(namespace).get(key) == REPORT


def _stack_api_access() -> ApiAccess:
    config = pulumi.Config(CONFIG_NAMESPACE)
    try:
        return api_access(config.get("apiAccessCidrs"), config.get("apiAccessSecurityGroupIds"))
    except ApiAccessError:
        if not _reporting():
            raise
        return ApiAccess()  # the caller reports the setting (gpuplat check's GP242)


class GpuPlatform(pulumi.ComponentResource):
    provider: k8s.Provider
    aws: AwsOutputs | None
    kubernetes: KubernetesSide
    fleet_credentials: pulumi.Output[str | None] | None

    def __init__(self, name: str, args: GpuPlatformArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        model, plan = args.model, args.plan
        self._api_access = ApiAccess()
        if model.target.provider is Provider.AWS:
            # Before super().__init__: a stack the account would refuse registers nothing at all.
            self._api_access = _stack_api_access()
            preflight(model, plan, self._api_access, report=_reporting())
        super().__init__("gpuplat:index:GpuPlatform", name, None, opts)
        if model.target.provider is Provider.AWS:
            self.aws, self.provider = self._aws(name, model, plan)
        else:
            self.aws = None
            config = pulumi.Config(CONFIG_NAMESPACE)
            self.provider = k8s.Provider(
                f"{name}-k8s",
                context=model.target.context or None,
                kubeconfig=config.get_secret("kubeconfig"),
                opts=pulumi.ResourceOptions(parent=self),
            )

        self.kubernetes = self._kubernetes_side(name, model, plan, self.provider, self.aws)

        outputs: dict[str, object] = {"provider": model.target.provider.value}
        if self.aws is not None:
            outputs.update(clusterName=self.aws.cluster_name, kubeconfig=self.aws.cluster.kubeconfig)
        worker = self.kubernetes.fleet_worker
        # A fleet worker's credentials for its manager: the program exports them as a stack output.
        self.fleet_credentials = worker.kubeconfig if worker is not None else None
        self.register_outputs(outputs)

    def _aws_provider(self, name: str, model: Platform, region: str) -> tuple[aws.Provider, dict[str, str]]:
        config = pulumi.Config("aws")
        configured = config.get("region")
        if configured and configured != region:
            pulumi.log.warn(
                f"stack setting aws:region is {configured} but the spec's target.region is {region}; "
                f"the platform is deployed to {region}",
                resource=self,
            )
        stack_defaults = config.get_object("defaultTags") or {}
        stack_tags = stack_defaults.get("tags") if isinstance(stack_defaults, dict) else None
        merged = {**(stack_tags if isinstance(stack_tags, dict) else {}), **model.metadata.tags}
        default_tags = dict(sorted(merged.items()))
        provider = aws.Provider(
            f"{name}-aws",
            region=region,
            default_tags=aws.ProviderDefaultTagsArgs(tags=default_tags),
            opts=pulumi.ResourceOptions(parent=self),
        )
        return provider, default_tags

    def _aws(self, name: str, model: Platform, plan: Plan) -> tuple[AwsOutputs, k8s.Provider]:
        cluster = cluster_name(model)
        assert model.target.region is not None, "validation requires a region on provider aws"
        aws_provider, default_tags = self._aws_provider(name, model, model.target.region)
        mine = pulumi.ResourceOptions(parent=self, providers=[aws_provider])
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(provider=aws_provider)).account_id
        network = Network(f"{name}-network", NetworkArgs(model, cluster), mine)
        eks = self._cluster(name, model, cluster, network, mine)
        # IAM principals into the tenants' Kubernetes groups, which their RoleBindings name.
        access = (
            TenantAccess(f"{name}-tenant-access", TenantAccessArgs(model, cluster, eks.cluster_name), mine)
            if any(t.principals for t in model.tenants)
            else None
        )
        provider = k8s.Provider(f"{name}-k8s", kubeconfig=eks.kubeconfig, opts=pulumi.ResourceOptions(parent=self))
        on_k8s = pulumi.ResourceOptions(parent=self, providers=[provider, aws_provider])
        karpenter_args = KarpenterArgs(
            model,
            cluster,
            cluster_arn=eks.arn,
            cluster_endpoint=eks.endpoint,
            node_role_arn=eks.node_role_arn,
            account_id=account_id,
            pod_identity_agent=eks.pod_identity_agent,
            depends_on=eks.ready,
        )
        karpenter = Karpenter(f"{name}-karpenter", karpenter_args, on_k8s)
        fabric = (
            Fabric(f"{name}-fabric", FabricArgs(model, fabric_zone(plan), cluster, network.vpc_id, eks.ready), on_k8s)
            if model.fabric_pools
            else None
        )
        if plan.reservations:
            placement_arns = fabric.placement_group_arns if fabric is not None else {}
            Procurement(f"{name}-procurement", ProcurementArgs(model, plan.reservations, cluster, placement_arns), mine)
        node_pools = self._node_pools(name, model, plan, cluster, eks, karpenter, fabric, default_tags, on_k8s)
        # Tenants' CPU-only pods get nodes of their own, not the system nodes (cpu_node_pool.py).
        CpuNodePool(
            f"{name}-cpu-pool",
            CpuNodePoolArgs(model, cluster, eks.node_role_name, karpenter.releases, default_tags),
            on_k8s,
        )
        storage = self._storage(name, model, plan, cluster, network, eks, fabric, account_id, mine)
        outputs = AwsOutputs(cluster, model.target.region, eks, karpenter, node_pools, fabric, storage, access)
        return outputs, provider

    def _cluster(
        self, name: str, model: Platform, cluster: str, network: Network, opts: pulumi.ResourceOptions
    ) -> Cluster:
        """The EKS cluster, reachable from the runners the stack's settings name."""
        api = self._api_access  # a private endpoint without any was refused at preflight (or reported)
        subnets = [network.private_subnet_ids[z] for z in model.target.zones]
        return Cluster(f"{name}-cluster", ClusterArgs(model, cluster, subnets, api), opts)

    def _node_pools(
        self,
        name: str,
        model: Platform,
        plan: Plan,
        cluster: str,
        eks: Cluster,
        karpenter: Karpenter,
        fabric: Fabric | None,
        default_tags: dict[str, str],
        opts: pulumi.ResourceOptions,
    ) -> dict[str, GpuNodePool]:
        placement_names = fabric.placement_group_names if fabric is not None else {}
        return {
            pool.name: GpuNodePool(
                f"{name}-pool-{pool.name}",
                GpuNodePoolArgs(
                    model,
                    plan,
                    pool.name,
                    cluster,
                    node_role_name=eks.node_role_name,
                    placement_group_name=placement_names.get(pool.name),
                    depends_on=karpenter.releases,
                    # Karpenter's instances are not Pulumi's: the provider's default tags miss them.
                    default_tags=default_tags,
                ),
                opts,
            )
            for pool in model.pools
        }

    def _storage(
        self,
        name: str,
        model: Platform,
        plan: Plan,
        cluster: str,
        network: Network,
        eks: Cluster,
        fabric: Fabric | None,
        account_id: pulumi.Output[str],
        opts: pulumi.ResourceOptions,
    ) -> StorageTiers | None:
        spec = model.storage
        if not (spec.hot or spec.warm or spec.cold):
            return None
        config = pulumi.Config(CONFIG_NAMESPACE)
        args = StorageTiersArgs(
            model,
            plan.storage,
            fabric_zone(plan),
            cluster,
            network.vpc_id,
            network.private_subnet_ids,
            account_id,
            pod_identity_agent=eks.pod_identity_agent,
            warm_bucket_legacy_name=config.get_bool("warmBucketLegacyName") or False,
            efa_security_group_id=fabric.efa_security_group_id if fabric is not None else None,
        )
        return StorageTiers(f"{name}-storage", args, opts)

    def _kubernetes_side(
        self, name: str, model: Platform, plan: Plan, provider: k8s.Provider, aws_side: AwsOutputs | None
    ) -> KubernetesSide:
        # ---- HOOK: the Kubernetes-side components (components/kubernetes/side.py) ----
        # GpuSharing, FabricTopology, StorageClasses, Scheduling, Tenant per tenant, Autoscaling,
        # Observability (and PoolLabels on provider kubernetes), all under this component. On aws
        # they get the storage tiers' outputs and wait for the system nodes and core add-ons.
        storage: AwsStorageRefs | None = None
        ready: list[pulumi.Resource] = []
        if aws_side is not None:
            tiers = aws_side.storage
            storage = (
                AwsStorageRefs(
                    file_system_id=tiers.file_system_id,
                    dns_name=tiers.dns_name,
                    mount_name=tiers.mount_name,
                    standard_file_system_id=tiers.standard_file_system_id,
                    standard_dns_name=tiers.standard_dns_name,
                    standard_mount_name=tiers.standard_mount_name,
                    warm_bucket=tiers.warm_bucket,
                    cold_bucket=tiers.cold_bucket,
                )
                if tiers is not None
                else AwsStorageRefs()
            )
            ready = list(aws_side.cluster.ready)
        api_server = aws_side.cluster.endpoint if aws_side is not None else None
        return build_kubernetes_side(
            self, name, model, plan, provider, storage=storage, depends_on=ready, api_server=api_server
        )
