"""kube's clusterrole-aggregation controller, in the hub: a stored ClusterRole with an
``aggregationRule`` gets, as its ``rules``, the union of the rules of the ClusterRoles its
selectors match (stored ones and the shared bootstrap ones of its logical cluster), so
``kubectl get clusterrole`` shows what it grants. The authorizer does not wait for it (it
computes the union itself); this keeps the stored objects truthful, as kube's controller does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ...apimachinery.errors import StatusError
from . import bootstrap
from .rbac import aggregate_rules

if TYPE_CHECKING:
    from ...registry.hub import Registry
    from ...storage.watchcache import WatchEvent

log = logging.getLogger(__name__)
MANAGER = "clusterrole-aggregation-controller"


class ClusterRoleAggregation:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.prefix = "/rbac.authorization.k8s.io/clusterroles/"
        self._pending: set[str] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None
        registry.cache.add_listener(self._on_event)

    def _on_event(self, ev: WatchEvent) -> None:
        if ev.cur.key.startswith(self.prefix):
            self._pending.add(ev.cur.cluster)
            self._wake.set()

    async def start(self) -> None:
        """Catch up every logical cluster that has an aggregated ClusterRole, then follow events."""
        for o in self.registry.cache.resource(self.prefix).objects(None, None):
            if o.obj.get("aggregationRule"):
                self._pending.add(o.cluster)
        self._wake.set()
        self._task = asyncio.create_task(self._run(), name="clusterrole-aggregation")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            pending, self._pending = self._pending, set()
            for cluster in sorted(pending):
                try:
                    await self._sync(cluster)
                except Exception:  # keep going for the other logical clusters; the next event retries
                    log.exception("clusterrole aggregation failed in logical cluster %s", cluster)

    async def _sync(self, cluster: str) -> None:
        from ...registry.store import Context

        stored = {o.name: o.obj for o in self.registry.cache.resource(self.prefix).objects(cluster, None)}
        roles = {**bootstrap.CLUSTER_ROLES, **stored}
        rt = self.registry.catalog.lookup(cluster, bootstrap.RBAC_GROUP, "v1", "clusterroles")
        if rt is None:
            return
        for name, role in stored.items():
            if not role.get("aggregationRule"):
                continue
            want = aggregate_rules(role, roles.values())
            if want == (role.get("rules") or []):
                continue

            def mutate(obj: dict, want: list[dict] = want) -> dict:
                obj["rules"] = want
                return obj

            try:
                await self.registry.store.guaranteed_update(rt, Context(cluster, manager=MANAGER), name, mutate)
            except StatusError as exc:
                if exc.code != 404:
                    raise
