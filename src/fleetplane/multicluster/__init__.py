"""fleetplane.multicluster: a small multi-cluster controller runtime over the ClusterProfile API.

In the spirit of sigs.k8s.io/multicluster-runtime with its cluster-inventory-api provider: a
:class:`Manager` engages one cluster per ClusterProfile that passes a health gate
(``ControlPlaneHealthy=True`` by default), with credentials from :mod:`fleetplane.access`; it runs
per-cluster informers, one work queue keyed by ``(cluster, object)`` and ``reconcile(cluster, key)``
handlers, optionally under leader election, with Prometheus metrics::

    mgr = Manager(hub_client, access.Config.from_file(path), namespace="fleet")
    mgr.watch("/api/v1/namespaces/default/configmaps")

    @mgr.reconcile
    async def reconcile(cluster: Cluster, key: tuple[str, str]) -> None:
        obj = cluster.get("/api/v1/namespaces/default/configmaps", key)
        ...                                    # cluster.client talks to the member cluster

    await mgr.run()

See docs/multicluster.md and examples/configmap_everywhere.py.
"""

from __future__ import annotations

from ..kube.controller import Result
from .manager import Cluster, Manager, Reconciler, Request, Watch
from .provider import ClusterProfileProvider, Ready, cluster_name, control_plane_healthy, profiles_path

__all__ = ["Cluster", "ClusterProfileProvider", "Manager", "Ready", "Reconciler", "Request", "Result", "Watch",
           "cluster_name", "control_plane_healthy", "profiles_path"]
