"""The core group (``v1``): Namespaces, ConfigMaps, Secrets, ServiceAccounts and Events, which the
hub serves; Pods, Nodes and PersistentVolumeClaims, which only a simulated physical cluster serves."""

from __future__ import annotations

from ...registry.types import ResourceType
from . import config, event, namespace, node, pod, pvc, serviceaccount


def resource_types() -> list[ResourceType]:
    """Fresh ResourceTypes of the core kinds the hub serves."""
    return [*namespace.resource_types(), *config.resource_types(), *serviceaccount.resource_types(),
            *event.resource_types()]


def workload_resource_types() -> list[ResourceType]:
    """Fresh ResourceTypes of the core kinds a simulated physical cluster adds: Pods, Nodes,
    PersistentVolumeClaims."""
    return [*pod.resource_types(), *node.resource_types(), *pvc.resource_types()]
