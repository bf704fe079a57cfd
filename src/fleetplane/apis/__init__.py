"""The built-in API groups, one module (or small package) per group, as kube's ``pkg/apis`` and
``pkg/registry/<group>``: each declares its kinds' ResourceTypes with their strategy, printer,
OpenAPI definition and protobuf message next to them, and exports ``resource_types()``.

The hub serves :func:`builtin_types` everywhere and :func:`logical_cluster_type` in ``root``;
``fleetplane cluster simulate`` adds :func:`workload_types`. Kinds served as CRDs
(ClusterProfiles, Clusters) are contributed by ``inventory/`` and ``fleet/``, not here.
"""

from __future__ import annotations

from functools import cache

from ..registry.types import ResourceType
from . import (
    admissionregistration,
    apiextensions,
    apps,
    autoscaling,
    coordination,
    core,
    events,
    flowcontrol,
    rbac,
)
from .tenancy import logical_cluster_type

__all__ = ["builtin_types", "known_type", "logical_cluster_type", "workload_types"]


def builtin_types(crds_in: apiextensions.CRDLister = apiextensions.no_crds) -> list[ResourceType]:
    """Fresh ResourceType objects for every built-in resource the hub serves; ``crds_in`` tells the
    CRD strategy which CRDs a logical cluster already has."""
    return [*core.resource_types(), *events.resource_types(), *coordination.resource_types(),
            *apiextensions.resource_types(crds_in), *rbac.resource_types(), *admissionregistration.resource_types(),
            *flowcontrol.resource_types()]


def workload_types() -> list[ResourceType]:
    """Fresh ResourceType objects for Deployments, ReplicaSets, HorizontalPodAutoscalers, Pods and Nodes (simulated clusters)."""
    return [*apps.resource_types(), *autoscaling.resource_types(), *core.workload_resource_types()]


@cache
def _known() -> dict[tuple[str, str], ResourceType]:
    types = [*builtin_types(), logical_cluster_type(), *workload_types()]
    return {(rt.group, rt.kind): rt for rt in types}


def known_type(group: str, kind: str) -> ResourceType | None:
    """A built-in kind's description (one shared copy, read-only), served here or not: a cluster's
    apps/v1 Deployment imported as a CRD prints like the built-in."""
    return _known().get((group, kind))
