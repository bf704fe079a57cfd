"""The RBAC objects of every logical cluster, as the authorizer reads them: from the watch
cache (kube's RBAC authorizer reads informers the same way), with a generation per logical
cluster that moves whenever one of its Roles, ClusterRoles or bindings changes, so the
authorizer's indexes are rebuilt only then."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from ..storage import keys
from ..storage.watchcache import WatchCache, WatchEvent

GROUP = "rbac.authorization.k8s.io"
ROLES = keys.resource_prefix(GROUP, "roles")
CLUSTER_ROLES = keys.resource_prefix(GROUP, "clusterroles")
ROLE_BINDINGS = keys.resource_prefix(GROUP, "rolebindings")
CLUSTER_ROLE_BINDINGS = keys.resource_prefix(GROUP, "clusterrolebindings")
_PREFIXES = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)


class CachePolicySource:
    """``pipeline.authorization.rbac.PolicySource`` over the watch cache."""

    def __init__(self, cache: WatchCache) -> None:
        self.cache = cache
        self._generation: dict[str, int] = defaultdict(int)
        cache.add_listener(self._on_event)

    def _on_event(self, ev: WatchEvent) -> None:
        if ev.cur.key.startswith(_PREFIXES):
            self._generation[ev.cur.cluster] += 1

    def generation(self, cluster: str) -> int:
        return self._generation[cluster]

    def _objects(self, prefix: str, cluster: str, namespace: str | None) -> Iterable[dict[str, Any]]:
        return (o.obj for o in self.cache.resource(prefix).objects(cluster, namespace))

    def cluster_roles(self, cluster: str) -> Iterable[dict[str, Any]]:
        return self._objects(CLUSTER_ROLES, cluster, None)

    def cluster_role_bindings(self, cluster: str) -> Iterable[dict[str, Any]]:
        return self._objects(CLUSTER_ROLE_BINDINGS, cluster, None)

    def roles(self, cluster: str, namespace: str) -> Iterable[dict[str, Any]]:
        return self._objects(ROLES, cluster, namespace) if namespace else ()

    def role_bindings(self, cluster: str, namespace: str) -> Iterable[dict[str, Any]]:
        """The RoleBindings of one namespace (none for ""; :meth:`all_role_bindings` for every one)."""
        return self._objects(ROLE_BINDINGS, cluster, namespace) if namespace else ()

    def all_role_bindings(self, cluster: str) -> Iterable[dict[str, Any]]:
        """Every namespace's RoleBindings (who is a member of the logical cluster)."""
        return self._objects(ROLE_BINDINGS, cluster, None)

    def get_cluster_role(self, cluster: str, name: str) -> dict[str, Any] | None:
        o = self.cache.resource(CLUSTER_ROLES).get(keys.object_key(GROUP, "clusterroles", cluster, "", name))
        return o.obj if o is not None else None

    def get_role(self, cluster: str, namespace: str, name: str) -> dict[str, Any] | None:
        o = self.cache.resource(ROLES).get(keys.object_key(GROUP, "roles", cluster, namespace, name))
        return o.obj if o is not None else None
