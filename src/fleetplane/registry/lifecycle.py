"""The hub's own API-machinery controllers (none of them touches workloads).

kube-controller-manager and apiextensions-apiserver run these beside kube-apiserver; the hub
runs them in-process, fed by the watch cache:

* namespace lifecycle: a Terminating namespace's contents are deleted, then the namespace;
* CRD cleanup: a deleted CRD's custom resources are deleted, then the CRD;
* logical cluster teardown: everything stored under a deleted logical cluster goes;
* garbage collection by ownerReferences, with Background, Foreground and Orphan semantics.

They run on the controllers' one runtime (:class:`fleetplane.kube.controller.Controller`): the
source is the watch cache (:meth:`Lifecycle.handle_event`, a cache listener, turns each event into
work items, much as an informer's callbacks would), the queue holds ``(kind, argument)`` items
(``("namespace", "lc|ns")``, ``("finalize", key)``, ``("owner-gone", "lc|uid")``,
``("dangling", key)``), and one worker runs them in order. A conflict is retried after 0.2 s.
A resync every 5 s looks again at every namespace, CRD and logical cluster being deleted (a set
kept from the events, so at rest it reads nothing), as kube's controllers resync: a trigger lost
to a crash or a race costs seconds, not a namespace stuck Terminating.

The hub hands itself over as a :class:`LifecycleHost` (its watch cache, its generic store and
two lookups), so this module does not import the registry that runs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from typing import Any, Protocol

from ..apimachinery.errors import StatusError
from ..apis.tenancy import LOGICAL_CLUSTER_FINALIZER
from ..kube.controller import Controller, Result, every
from ..storage.keys import split_key
from ..storage.watchcache import CachedObject, WatchCache, WatchEvent
from .crd import CLEANUP_FINALIZER
from .store import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Context, GenericStore
from .types import ResourceType

__all__ = ["Lifecycle", "LifecycleHost", "SYSTEM_MANAGER"]

log = logging.getLogger(__name__)

Item = tuple[str, str]  # (kind of work, its argument)

NAMESPACE_PREFIX = "/core/namespaces/"
CRD_PREFIX = "/apiextensions.k8s.io/customresourcedefinitions/"
CLUSTER_PREFIX = "/tenancy.fleetplane.io/logicalclusters/"
SYSTEM_MANAGER = "fleetplane-controller-manager"
#: what the resync looks at again while it is being deleted
RESYNCED = (NAMESPACE_PREFIX, CRD_PREFIX, CLUSTER_PREFIX)
#: how often everything being deleted is looked at again (see the module docstring)
RESYNC_PERIOD = 5.0
#: how soon a conflicting write is retried
RETRY_DELAY = 0.2


class LifecycleHost(Protocol):
    """What the lifecycle controllers need of the registry that runs them."""

    cache: WatchCache
    store: GenericStore

    def type_for_storage(self, cluster: str, group: str, plural: str) -> ResourceType | None: ...

    async def finalize_namespace(self, cluster: str, namespace: str) -> None: ...


def _log_failure(name: str, item: Any, err: Exception, delay: float) -> None:
    log.error("lifecycle %s %s failed", *item, exc_info=err)


class Lifecycle:
    def __init__(self, registry: LifecycleHost) -> None:
        self.registry = registry
        self.runtime: Controller[Item] = Controller("lifecycle", self.reconcile, base=RETRY_DELAY, cap=RETRY_DELAY,
                                                    on_error=_log_failure)
        #: (cluster, owner uid) -> keys of dependents
        self.dependents: dict[tuple[str, str], set[str]] = defaultdict(set)
        #: (cluster, uid) -> key, to tell whether an owner exists
        self.uids: dict[tuple[str, str], str] = {}
        #: the namespaces, CRDs and logical clusters being deleted: all the resync looks at (at
        #: rest it reads nothing, however many there are)
        self.deleting: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Index what the cache holds, queue what waits on us, and start the worker and the resync."""
        for rc in list(self.registry.cache.resources.values()):
            for o in list(rc.objects(None, None)):
                self._index(o, None)
                self._check(o)
        self._task = asyncio.create_task(self._run(), name="lifecycle")

    async def _run(self) -> None:
        # the resync source is made here, inside the task, so a task cancelled before it ran leaves no stray coroutine
        await self.runtime.run(every(RESYNC_PERIOD, self._resync))

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _resync(self) -> None:
        for key in list(self.deleting):
            o = self._cached(key)
            if o is None:
                self.deleting.discard(key)
            else:
                self._check(o)

    # -- feeding --------------------------------------------------------------------------

    def handle_event(self, ev: WatchEvent) -> None:
        o = ev.cur
        if ev.type == "DELETED":
            self.deleting.discard(o.key)
            self.uids.pop((o.cluster, o.obj["metadata"].get("uid", "")), None)
            self._unindex(o)
            uid = o.obj["metadata"].get("uid", "")
            if self.dependents.get((o.cluster, uid)):
                self._enqueue("owner-gone", f"{o.cluster}|{uid}")
            # a dependent went: owners waiting in foreground may be done
            for ref in o.obj["metadata"].get("ownerReferences") or []:
                owner_key = self.uids.get((o.cluster, ref.get("uid", "")))
                if owner_key:
                    self._enqueue("finalize", owner_key)
            if o.namespace:
                self._enqueue("namespace", f"{o.cluster}|{o.namespace}")
            return
        self._index(o, ev.prev)
        self._check(o)

    def _index(self, o: CachedObject, prev: CachedObject | None) -> None:
        meta = o.obj["metadata"]
        self.uids[(o.cluster, meta.get("uid", ""))] = o.key
        if prev is not None:
            self._unindex(prev)
        refs = meta.get("ownerReferences") or []
        for ref in refs:
            self.dependents[(o.cluster, ref.get("uid", ""))].add(o.key)
        if refs and not any((o.cluster, r.get("uid", "")) in self.uids for r in refs):
            self._enqueue("dangling", o.key)

    def _unindex(self, o: CachedObject) -> None:
        for ref in o.obj["metadata"].get("ownerReferences") or []:
            deps = self.dependents.get((o.cluster, ref.get("uid", "")))
            if deps is not None:
                deps.discard(o.key)
                if not deps:
                    del self.dependents[(o.cluster, ref.get("uid", ""))]

    def _check(self, o: CachedObject) -> None:
        meta = o.obj["metadata"]
        if not meta.get("deletionTimestamp"):
            return
        if o.key.startswith(RESYNCED):
            self.deleting.add(o.key)
        if o.key.startswith(NAMESPACE_PREFIX):
            self._enqueue("namespace", f"{o.cluster}|{o.name}")
        fins = meta.get("finalizers") or []
        if any(f in fins for f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER, CLEANUP_FINALIZER, LOGICAL_CLUSTER_FINALIZER)):
            self._enqueue("finalize", o.key)

    def _enqueue(self, kind: str, arg: str) -> None:
        self.runtime.enqueue((kind, arg))

    async def reconcile(self, item: Item) -> Result | None:
        """One work item. A refusal is logged (a 404 or 409 quietly) and dropped, but a conflict,
        which is retried; anything else fails the item (retried by the runtime)."""
        kind, arg = item
        try:
            await getattr(self, "_do_" + kind.replace("-", "_"))(arg)
        except StatusError as exc:
            if exc.code not in (404, 409):
                log.warning("lifecycle %s %s: %s", kind, arg, exc)
            if exc.code == 409:
                return Result(requeue=True)
        return None

    # -- helpers --------------------------------------------------------------------------

    def _cached(self, key: str) -> CachedObject | None:
        return self.registry.cache.resource(key).get(key)

    def _type_for(self, key: str) -> ResourceType | None:
        group, plural, cluster, _, _ = split_key(key)
        return self.registry.type_for_storage(cluster, group, plural)

    async def _delete(self, key: str, policy: str = "Background") -> None:
        rt = self._type_for(key)
        if rt is None:
            await self.registry.store.system_delete(key)
            return
        _, _, cluster, namespace, name = split_key(key)
        try:
            await self.registry.store.delete(rt, Context(cluster, namespace, SYSTEM_MANAGER), name, {"propagationPolicy": policy})
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def _remove_finalizer(self, key: str, finalizer: str) -> None:
        rt = self._type_for(key)
        if rt is None:
            return
        _, _, cluster, namespace, name = split_key(key)

        def mutate(obj: dict[str, Any]) -> dict[str, Any]:
            obj["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or [] if f != finalizer]
            return obj

        await self.registry.store.guaranteed_update(rt, Context(cluster, namespace, SYSTEM_MANAGER), name, mutate)

    # -- work -----------------------------------------------------------------------------

    async def _do_namespace(self, arg: str) -> None:
        cluster, ns = arg.split("|", 1)
        key = f"{NAMESPACE_PREFIX}{cluster}/{ns}"
        o = self._cached(key)
        if o is None or not o.obj["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for rc in list(self.registry.cache.resources.values()):
            for c in list(rc.objects(cluster, ns)):
                remaining += 1
                if not c.obj["metadata"].get("deletionTimestamp"):
                    await self._delete(c.key)
        if remaining:
            return  # each deletion's event brings us back here
        await self.registry.finalize_namespace(cluster, ns)

    async def _do_finalize(self, key: str) -> None:
        o = self._cached(key)
        if o is None or not o.obj["metadata"].get("deletionTimestamp"):
            return
        fins = o.obj["metadata"].get("finalizers") or []
        uid = o.obj["metadata"].get("uid", "")
        deps = sorted(self.dependents.get((o.cluster, uid), ()))
        if ORPHAN_FINALIZER in fins:
            for dkey in deps:
                await self._strip_owner(dkey, uid)
            await self._remove_finalizer(key, ORPHAN_FINALIZER)
            return
        if FOREGROUND_FINALIZER in fins:
            blocking = 0
            for dkey in deps:
                d = self._cached(dkey)
                if d is None:
                    continue
                refs = [r for r in d.obj["metadata"].get("ownerReferences") or [] if r.get("uid") == uid]
                if any(r.get("blockOwnerDeletion") for r in refs):
                    blocking += 1
                if not d.obj["metadata"].get("deletionTimestamp"):
                    await self._delete(dkey, "Foreground")
            if not blocking:
                await self._remove_finalizer(key, FOREGROUND_FINALIZER)
            return
        if CLEANUP_FINALIZER in fins and key.startswith(CRD_PREFIX):
            await self._cleanup_crd(o)
            return
        if LOGICAL_CLUSTER_FINALIZER in fins and key.startswith(CLUSTER_PREFIX):
            await self._teardown_cluster(o)

    async def _strip_owner(self, dkey: str, uid: str) -> None:
        rt = self._type_for(dkey)
        if rt is None:
            return
        _, _, cluster, namespace, name = split_key(dkey)

        def mutate(obj: dict[str, Any]) -> dict[str, Any]:
            refs = [r for r in obj["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
            if refs:
                obj["metadata"]["ownerReferences"] = refs
            else:
                obj["metadata"].pop("ownerReferences", None)
            return obj

        try:
            await self.registry.store.guaranteed_update(rt, Context(cluster, namespace, SYSTEM_MANAGER), name, mutate)
        except StatusError as exc:
            if exc.code != 404:
                raise

    async def _do_owner_gone(self, arg: str) -> None:
        cluster, uid = arg.split("|", 1)
        if (cluster, uid) in self.uids:
            return
        for dkey in sorted(self.dependents.get((cluster, uid), ())):
            await self._collect_if_orphaned(dkey)

    async def _do_dangling(self, key: str) -> None:
        await self._collect_if_orphaned(key)

    async def _collect_if_orphaned(self, dkey: str) -> None:
        """Delete a dependent once none of its owners exists (kube's GC rule)."""
        d = self._cached(dkey)
        if d is None or d.obj["metadata"].get("deletionTimestamp"):
            return
        refs = d.obj["metadata"].get("ownerReferences") or []
        if refs and all((d.cluster, r.get("uid", "")) not in self.uids for r in refs):
            await self._delete(dkey)

    async def _cleanup_crd(self, o: CachedObject) -> None:
        spec = o.obj.get("spec") or {}
        prefix = f"/{spec.get('group')}/{(spec.get('names') or {}).get('plural')}/"
        rc = self.registry.cache.resources.get(prefix)
        left = list(rc.objects(o.cluster, None)) if rc else []
        for c in left:
            await self.registry.store.system_delete(c.key)
        await self._remove_finalizer(o.key, CLEANUP_FINALIZER)

    async def _teardown_cluster(self, o: CachedObject) -> None:
        name = o.name
        for rc in list(self.registry.cache.resources.values()):
            for c in list(rc.objects(name, None)):
                await self.registry.store.system_delete(c.key)
        await self._remove_finalizer(o.key, LOGICAL_CLUSTER_FINALIZER)
