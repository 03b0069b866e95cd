"""How every component, on either side, creates its children: one options helper for both.

A component receives `opts` from its parent and its dependencies in its Args as `depends_on`;
each child it creates gets `child_opts(self, provider, depends_on)`. `provider` is the
Kubernetes side's provider, which a Kubernetes component receives in its Args; an AWS
component's children leave it None and use the providers the root put on the component's
`opts` (GpuPlatform sets them on every AWS component). See components/conventions.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi


def child_opts(
    parent: pulumi.Resource,
    provider: pulumi.ProviderResource | None = None,
    depends_on: Sequence[pulumi.Resource] | None = None,
) -> pulumi.ResourceOptions:
    """Options of a child: its component as parent, the given provider (None: the component's), its dependencies."""
    return pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on or []))


def stateful(parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource] | None = None) -> pulumi.ResourceOptions:
    """Data or identity that must outlive a bad diff: Pulumi refuses to delete it, and a
    `pulumi destroy` or removal from the program leaves it in the account."""
    return pulumi.ResourceOptions(parent=parent, protect=True, retain_on_delete=True, depends_on=list(depends_on or []))
