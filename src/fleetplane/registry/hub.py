"""The registry as the HTTP layer sees it: types per logical cluster, the generic store,
logical clusters that come into being on first use, and the in-process lifecycle controllers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

from ..apimachinery import errors as e
from ..apimachinery.errors import StatusError
from ..apis.tenancy import cluster_name_error
from ..pipeline.admission.chain import Plugin
from ..pipeline.admission.plugins import KindAdmission, KindCheck, default_chain
from ..storage.interface import Store
from ..storage.watchcache import WatchCache, WatchEvent
from .catalog import CRD_PREFIX, ROOT, Catalog
from .conversion import Converter
from .crd import default_crd, types_from_crd
from .lifecycle import NAMESPACE_PREFIX, SYSTEM_MANAGER, Lifecycle
from .store import Context, GenericStore
from .types import ResourceType

log = logging.getLogger(__name__)

def system_types(crds: Iterable[dict[str, Any]],
                 converters: Mapping[tuple[str, str], Converter] | None = None) -> list[ResourceType]:
    """The ResourceTypes of CRD documents served everywhere without being stored; ``converters``
    (by group and kind) convert between their versions."""
    out: list[ResourceType] = []
    for doc in crds:
        crd = {**doc, "spec": dict(doc["spec"])}
        default_crd(crd)
        out.extend(types_from_crd(crd, converter_for=lambda group, kind: (converters or {}).get((group, kind))))
    return out


DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
CLUSTERS_PREFIX = "/tenancy.fleetplane.io/logicalclusters/root/"


class Registry:
    """``system_crds`` are CRD documents served in every logical cluster like built-ins (kcp
    would bind them through an APIExport); ``admission`` adds checks per (group, kind), and
    ``plugins`` whole admission plugins, after the hub's own (NamespaceLifecycle first)."""

    def __init__(self, storage: Store, system_crds: Iterable[dict[str, Any]] = (),
                 admission: Mapping[tuple[str, str], KindCheck] | None = None, history_retention: float = 300.0,
                 extra_types: Iterable[ResourceType] = (), plugins: Iterable[Plugin] = (),
                 converters: Mapping[tuple[str, str], Converter] | None = None) -> None:
        self.storage = storage
        self.history_retention = history_retention
        self._compactor: asyncio.Task[None] | None = None
        self.cache = WatchCache(storage)
        self.catalog = Catalog([*extra_types, *system_types(system_crds, converters)], crds_in=self.crds_in,
                               converters=converters)
        chain = default_chain(self.namespace_state, self.cache.sync)
        for (group, kind), check in (admission or {}).items():
            chain.add(KindAdmission(f"{kind}Admission", group, kind, check, self.namespace_labels))
        for plugin in plugins:
            chain.add(plugin)
        self.store = GenericStore(storage, self.cache, chain)
        for rt in self.catalog.builtins.values():
            rt.strategy.bind_stored(partial(self._stored, rt))
        self.lifecycle = Lifecycle(self)
        self._creating: dict[str, asyncio.Future[None]] = {}
        #: logical clusters found ready, so that a request's check is one set lookup; any change
        #: to a LogicalCluster or to one of its default namespaces forgets it (:meth:`_forget_ready`)
        self._ready: set[str] = set()

    async def start(self) -> None:
        await self.storage.start()
        await self.cache.start()
        crd_cache = self.cache.resource(CRD_PREFIX)
        for o in list(crd_cache.objects(None, None)):
            self.catalog.load_crd(o.cluster, o.obj)
        self.cache.add_listener(self.catalog.handle_event)
        self.cache.add_listener(self._forget_ready)
        self.cache.add_listener(self.lifecycle.handle_event)
        self.lifecycle.start()
        await self.ensure_cluster(ROOT)
        self._compactor = asyncio.create_task(self._compact_periodically(), name="compactor")

    async def close(self) -> None:
        if self._compactor:
            self._compactor.cancel()
        await self.lifecycle.close()
        await self.store.conversion.close()
        await self.cache.close()
        await self.storage.close()

    # -- lookups used by the store and controllers ---------------------------------------

    async def _compact_periodically(self) -> None:
        """Keep ``history_retention`` seconds of store history, as kube-apiserver compacts etcd."""
        loop = asyncio.get_running_loop()
        marks: list[tuple[float, int]] = []
        step = max(min(self.history_retention / 5, 60.0), 0.1)
        while True:
            await asyncio.sleep(step)
            now = loop.time()
            try:
                marks.append((now, await self.storage.current_revision()))
            except Exception as exc:  # the store is unreachable for now: try again next step
                log.warning("compaction: cannot read the store's revision: %s", exc)
                continue
            due = [rev for t, rev in marks if now - t >= self.history_retention]
            if due:
                try:
                    await self.storage.compact(due[-1])
                except Exception:
                    log.exception("compaction failed")
                marks = [(t, rev) for t, rev in marks if now - t < self.history_retention]

    async def healthy(self, timeout: float = 2.0) -> bool:
        """The store answers and the watch cache has caught up with it (``/readyz``)."""
        try:
            async with asyncio.timeout(timeout):
                await self.cache.sync(timeout)
            return True
        except Exception:
            return False

    def namespace_state(self, cluster: str, namespace: str) -> str | None:
        o = self.cache.resource(NAMESPACE_PREFIX).get(f"{NAMESPACE_PREFIX}{cluster}/{namespace}")
        if o is None:
            return None
        return "Terminating" if o.obj["metadata"].get("deletionTimestamp") else "Active"

    def namespace_labels(self, cluster: str, namespace: str) -> dict[str, str]:
        o = self.cache.resource(NAMESPACE_PREFIX).get(f"{NAMESPACE_PREFIX}{cluster}/{namespace}")
        return dict(o.obj["metadata"].get("labels") or {}) if o is not None else {}

    def _stored(self, rt: ResourceType, cluster: str) -> list[dict[str, Any]]:
        return [o.obj for o in self.cache.resource(self.store.prefix(rt)).objects(cluster, None)]

    def crds_in(self, cluster: str) -> list[dict[str, Any]]:
        return [o.obj for o in self.cache.resource(CRD_PREFIX).objects(cluster, None)]

    def type_for_storage(self, cluster: str, group: str, plural: str) -> ResourceType | None:
        """The type whose version is the storage version, for a stored key's group/resource."""
        for rt in self.catalog.types(cluster):
            if rt.group == group and rt.plural == plural and rt.version == rt.storage_version:
                return rt
        for rt in self.catalog.types(cluster):
            if rt.group == group and rt.plural == plural:
                return rt
        return None

    def cluster_exists(self, name: str) -> bool:
        return self.cache.resource(CLUSTERS_PREFIX).get(CLUSTERS_PREFIX + name) is not None

    def clusters(self) -> list[str]:
        return sorted(o.name for o in self.cache.resource(CLUSTERS_PREFIX).objects(ROOT, None))

    # -- logical clusters -----------------------------------------------------------------

    def _cluster_ready(self, name: str) -> bool:
        """The LogicalCluster exists, and so do its undeletable namespaces (another replica, or
        one that died, may have written the one and not yet the others)."""
        if name in self._ready:
            return True
        o = self.cache.resource(CLUSTERS_PREFIX).get(CLUSTERS_PREFIX + name)
        if o is None:
            return False
        if o.obj["metadata"].get("deletionTimestamp"):
            return True
        if all(self.namespace_state(name, ns) is not None for ns in DEFAULT_NAMESPACES[:3]):
            self._ready.add(name)
            return True
        return False

    def _forget_ready(self, ev: WatchEvent) -> None:
        o = ev.cur
        if o.key.startswith(CLUSTERS_PREFIX):
            self._ready.discard(o.name)
        elif o.key.startswith(NAMESPACE_PREFIX) and o.name in DEFAULT_NAMESPACES:
            self._ready.discard(o.cluster)

    async def ensure_cluster(self, name: str) -> None:
        """Create logical cluster ``name`` (with its default namespaces) if it does not exist."""
        if self._cluster_ready(name):
            return
        why = cluster_name_error(name)
        if why:
            raise e.bad_request(f'invalid cluster: "{name}" {why}')
        pending = self._creating.get(name)
        if pending is not None:
            await asyncio.shield(pending)
            return
        fut = self._creating[name] = asyncio.get_running_loop().create_future()
        try:
            await self.create_cluster(name)
            fut.set_result(None)
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved
            raise
        finally:
            del self._creating[name]

    async def create_cluster(self, name: str, obj: dict[str, Any] | None = None, ctx: Context | None = None) -> dict[str, Any]:
        """The LogicalCluster object in root, then the cluster's default namespaces."""
        ns_rt = self.catalog.lookup(ROOT, "", "v1", "namespaces")
        assert ns_rt is not None
        body = obj or {"metadata": {"name": name}}
        created: dict[str, Any] = {}
        try:
            created = await self.store.create(self.catalog.logical_cluster, ctx or Context(ROOT, manager=SYSTEM_MANAGER), body)
        except StatusError as exc:
            if exc.reason != "AlreadyExists" or obj is not None:
                raise
        if ctx is not None and ctx.dry_run:
            return created
        for ns in DEFAULT_NAMESPACES:
            try:
                await self.store.create(ns_rt, Context(name, manager=SYSTEM_MANAGER), {"metadata": {"name": ns}})
            except StatusError as exc:
                if exc.reason != "AlreadyExists":
                    raise
        return created

    async def finalize_namespace(self, cluster: str, namespace: str) -> None:
        ns_rt = self.catalog.lookup(ROOT, "", "v1", "namespaces")
        assert ns_rt is not None

        def mutate(obj: dict[str, Any]) -> dict[str, Any]:
            obj["spec"] = {"finalizers": []}
            return obj

        await self.store.guaranteed_update(ns_rt, Context(cluster, manager=SYSTEM_MANAGER), namespace, mutate, subresource="finalize")
