"""The decision publisher (issue 14): one PlacementDecision set per split workload, kept current.

One :class:`DecisionPublisher` serves every logical cluster through ``/clusters/*``: informers on
the parents' kinds and their children's (:data:`.publish.KINDS`: Deployments, ClusterDaemonSets),
ClusterProfiles (which profile a cluster name is: namespace and name) and the PlacementDecisions
it manages (labelled ``app.kubernetes.io/managed-by: fleetplane-placement-decisions``) feed one
work queue of parents ``(kind, logical cluster, namespace, name)``. A reconcile computes the
parent's slices (:func:`.publish.desired`) from what the splitter already wrote on it (the
decision summary) and its children, then creates, updates and deletes PlacementDecisions until
they are those: nothing is written when nothing changed, and a parent deleted or no longer split
loses its slices (the garbage collector would take them with the parent too: they carry its
controller ownerReference). It never writes the parents or the children, and talks to the hub
only through its API, as ``system:fleetplane:placement-decisions``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ...inventory import constants as ic
from ...kube.client import ApiError, Client, api_path
from ...kube.controller import Result, run_workers, stop_tasks
from ...kube.informer import ClusterKey as Key
from ...kube.informer import Informer
from ...kube.informer import cluster_key as key_of
from ...kube.objects import as_int, hub_path, meta
from ...kube.workqueue import WorkQueue
from . import LABEL_MANAGED_BY, MANAGED_BY
from .crd import GROUP, PLURAL, VERSION
from .options import DecisionPublisherOptions
from .publish import KINDS, LABEL_CLUSTER, ProfileRef, SplitKind, controller_ref, desired, is_parent, kind_of

__all__ = ["FIELD_MANAGER", "DecisionPublisher"]

log = logging.getLogger("fleetplane.fleet.decisions")

FIELD_MANAGER = "fleetplane-placement-decisions"
ParentKey = tuple[str, str, str, str]  # kind, logical cluster, namespace, name
GVR = tuple[str, str]  # apiVersion, plural





def _relevant(obj: Mapping[str, Any] | None) -> Any:
    """What a parent's or child's PlacementDecisions depend on (not its status)."""
    md = meta(obj)
    return (md.get("uid"), md.get("labels"), md.get("annotations"), md.get("deletionTimestamp"),
            md.get("ownerReferences"), (obj or {}).get("spec", {}).get("replicas") if obj else None,
            (obj or {}).get("spec", {}).get("placement") if obj else None)


class DecisionPublisher:
    """Run with :meth:`run` (until cancelled). See the module docstring."""

    def __init__(self, hub: Client, options: DecisionPublisherOptions | None = None) -> None:
        self.hub = hub
        self.opts = options or DecisionPublisherOptions()
        self.queue = WorkQueue("placement-decisions", jitter=True)

        def informer(path: str, on_change: Any, name: str, selector: str | None = None) -> Informer:
            # every logical cluster; a 404 means no logical cluster serves the type yet
            return Informer(hub, path, on_change, name=name, key=key_of, missing_ok=True, label_selector=selector)

        #: one informer per resource the parents and their children are (children may share a parent's)
        self.workloads: dict[GVR, Informer] = {}
        for k in KINDS:
            for gvr in ((k.api_version, k.plural), (k.child_api_version, k.child_plural)):
                if gvr not in self.workloads:
                    self.workloads[gvr] = informer(f"/clusters/*{api_path(*gvr)}", self._workload_handler(gvr),
                                                   gvr[1])
        self.profiles = informer(f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}", self._on_profile,
                                 "clusterprofiles")
        self.decisions = informer(f"/clusters/*/apis/{GROUP}/{VERSION}/{PLURAL}", self._on_decision,
                                  "placementdecisions", f"{LABEL_MANAGED_BY}={MANAGED_BY}")
        #: logical cluster -> cluster name -> the ClusterProfile it is (the splitter's rule: of
        #: profiles of one name in several namespaces, the oldest)
        self.refs: dict[str, dict[str, ProfileRef]] = {}
        #: parent -> cluster -> its child's key
        self.children: dict[ParentKey, dict[str, Key]] = {}
        self._child_owner: dict[Key, tuple[ParentKey, str]] = {}
        #: parent -> the keys of the PlacementDecisions it controls
        self.owned: dict[ParentKey, set[Key]] = {}
        self._decision_owner: dict[Key, ParentKey] = {}
        self.writes = 0
        self.ready = asyncio.Event()

    def informers(self) -> list[Informer]:
        return [self.profiles, self.decisions, *self.workloads.values()]

    async def run(self) -> None:
        tasks = [asyncio.create_task(i.run(), name=f"decisions-informer-{i.name}") for i in self.informers()]
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers()))
            self.ready.set()
            log.info("placement decisions: informers synced (%d placement decisions)", len(self.decisions.cache))
            tasks.append(asyncio.create_task(run_workers(self.queue, self.reconcile, self.opts.workers),
                                             name="decisions-workers"))
            await asyncio.gather(*tasks)
        finally:
            await stop_tasks(tasks)
            self.queue.close()

    # -- events ---------------------------------------------------------------------------------

    def _workload_handler(self, gvr: GVR) -> Any:
        parent_kinds = [k for k in KINDS if (k.api_version, k.plural) == gvr]
        child_of = {k.kind for k in KINDS if (k.child_api_version, k.child_plural) == gvr}

        def on_change(key: Key, old: dict | None, new: dict | None) -> None:
            if _relevant(old) == _relevant(new):
                return
            if child_of:
                self._index_child(key, new if new is not None else None, child_of)
            obj = new or old or {}
            for k in parent_kinds:
                if LABEL_CLUSTER not in (meta(obj).get("labels") or {}) or (
                        old is not None and LABEL_CLUSTER not in (meta(old).get("labels") or {})):
                    self.queue.add((k.kind, *key))
        return on_change

    def _index_child(self, key: Key, obj: dict | None, kinds: set[str]) -> None:
        prev = self._child_owner.pop(key, None)
        if prev is not None:
            kids = self.children.get(prev[0]) or {}
            if kids.get(prev[1]) == key:
                del kids[prev[1]]
            if not kids:
                self.children.pop(prev[0], None)
            self.queue.add(prev[0])
        if obj is None:
            return
        cluster = (meta(obj).get("labels") or {}).get(LABEL_CLUSTER)
        ref = controller_ref(obj)
        if not cluster or ref is None or ref.get("kind") not in kinds:
            return
        pk: ParentKey = (str(ref["kind"]), key[0], key[1], str(ref.get("name") or ""))
        self._child_owner[key] = (pk, cluster)
        self.children.setdefault(pk, {})[cluster] = key
        self.queue.add(pk)

    def _on_profile(self, key: Key, old: dict | None, new: dict | None) -> None:
        if old is not None and new is not None and \
                meta(old).get("creationTimestamp") == meta(new).get("creationTimestamp"):
            return  # a status or label change: which profile a name is stays the same
        lc = key[0]
        before = dict(self.refs.get(lc) or {})
        candidates: dict[str, list[tuple[str, str, str]]] = {}
        for (l2, ns, name), obj in self.profiles.cache.items():
            if l2 == lc:
                candidates.setdefault(name, []).append((str(meta(obj).get("creationTimestamp") or ""), ns, name))
        after = {c: min(v)[1:] for c, v in candidates.items()}
        if after == before:
            return
        self.refs[lc] = after
        changed = {c for c in set(before) | set(after) if before.get(c) != after.get(c)}
        if changed:
            for gvr, inf in self.workloads.items():
                for k in KINDS:
                    if (k.api_version, k.plural) != gvr:
                        continue
                    for (l2, ns, name) in list(inf.cache):
                        if l2 == lc:
                            self.queue.add((k.kind, l2, ns, name))

    def _on_decision(self, key: Key, old: dict | None, new: dict | None) -> None:
        """A slice changed (someone else's edit, or ours coming back): its parent looks again."""
        owners = {self._index_decision(key, new)}
        ref = controller_ref(old) if old is not None else None
        if ref is not None and kind_of(str(ref.get("kind"))) is not None:
            owners.add((str(ref["kind"]), key[0], key[1], str(ref.get("name") or "")))
        for pk in owners - {None}:
            self.queue.add(pk)

    def _index_decision(self, key: Key, obj: dict | None) -> ParentKey | None:
        """Index a PlacementDecision by the parent controlling it; its (new) owner."""
        prev = self._decision_owner.pop(key, None)
        if prev is not None:
            self.owned.get(prev, set()).discard(key)
            if not self.owned.get(prev):
                self.owned.pop(prev, None)
        ref = controller_ref(obj) if obj is not None else None
        if ref is None or kind_of(str(ref.get("kind"))) is None:
            return prev if obj is None else None
        pk: ParentKey = (str(ref["kind"]), key[0], key[1], str(ref.get("name") or ""))
        self._decision_owner[key] = pk
        self.owned.setdefault(pk, set()).add(key)
        return pk

    # -- reconcile ------------------------------------------------------------------------------

    def _parent(self, kind: SplitKind, lc: str, ns: str, name: str) -> dict | None:
        return self.workloads[(kind.api_version, kind.plural)].cache.get((lc, ns, name))

    def _children(self, kind: SplitKind, pk: ParentKey, parent: dict) -> dict[str, dict]:
        cache = self.workloads[(kind.child_api_version, kind.child_plural)].cache
        uid = meta(parent).get("uid")
        out = {}
        for cluster, ck in (self.children.get(pk) or {}).items():
            child = cache.get(ck)
            if child is not None and (controller_ref(child) or {}).get("uid") == uid:
                out[cluster] = child
        return out

    async def reconcile(self, pk: ParentKey) -> Result | None:
        kind_name, lc, ns, name = pk
        kind = kind_of(kind_name)
        if kind is None:
            return None
        parent = self._parent(kind, lc, ns, name)
        live = parent if parent is not None and is_parent(kind, parent) else None
        want = desired(kind, live, self._children(kind, pk, live) if live else {}, self.refs.get(lc) or {})
        have = {}
        for dk in sorted(self.owned.get(pk, ())):
            obj = self.decisions.cache.get(dk)
            if obj is not None:
                have[dk[2]] = obj
        try:
            await asyncio.gather(*(self._write(lc, ns, body, have.get(body["metadata"]["name"])) for body in want))
            names = {b["metadata"]["name"] for b in want}
            # (a slice of an earlier parent of the same name that is still wanted was replaced by _write)
            await asyncio.gather(*(self._delete(lc, ns, obj) for n, obj in sorted(have.items()) if n not in names))
        except ApiError as err:
            if err.status == 409:  # our cache was behind (or a namesake exists): again, with backoff
                log.debug("placement decisions of %s: %s", pk, err)
                return Result(requeue=True)
            raise
        return None

    async def _write(self, lc: str, ns: str, body: dict, cur: dict | None) -> None:
        path = hub_path(lc, f"{GROUP}/{VERSION}", PLURAL, ns)
        if cur is None or (controller_ref(cur) or {}).get("uid") != body["metadata"]["ownerReferences"][0]["uid"]:
            if cur is not None:  # a slice of an earlier parent of this name: replaced
                await self._delete(lc, ns, cur)
            try:
                created = await self.hub.create(path, body, FIELD_MANAGER)
            except ApiError as err:
                if err.status == 409 and err.reason == "AlreadyExists" and cur is None:
                    log.warning("placement decisions: %s/%s in logical cluster %s exists and is not fleetplane's "
                                "(no label %s=%s and controller reference): not overwritten", ns,
                                body["metadata"]["name"], lc, LABEL_MANAGED_BY, MANAGED_BY)
                raise
            self.writes += 1
            self._remember(created)
            return
        cmd = meta(cur)
        labels, ann = cmd.get("labels") or {}, cmd.get("annotations") or {}
        bmd = body["metadata"]
        if (cur.get("decisions") == body["decisions"] and cur.get("schedulerName") == body["schedulerName"]
                and all(labels.get(k) == v for k, v in bmd["labels"].items())
                and all(ann.get(k) == v for k, v in bmd["annotations"].items())
                and cmd.get("ownerReferences") == bmd["ownerReferences"]):
            return
        new = {**cur, "decisions": body["decisions"], "schedulerName": body["schedulerName"],
               "metadata": {**cmd, "labels": {**labels, **bmd["labels"]}, "annotations": {**ann, **bmd["annotations"]},
                            "ownerReferences": bmd["ownerReferences"]}}
        updated = await self.hub.replace(f"{path}/{cmd['name']}", new, FIELD_MANAGER)
        self.writes += 1
        self._remember(updated)

    async def _delete(self, lc: str, ns: str, obj: dict) -> None:
        md = meta(obj)
        await self.hub.delete(hub_path(lc, f"{GROUP}/{VERSION}", PLURAL, ns, md.get("name") or ""), uid=md.get("uid"))
        self.writes += 1

    def _remember(self, obj: dict) -> None:
        """Put a PlacementDecision just written into the cache (its watch event follows), so a
        reconcile before that event does not write it again."""
        key = key_of(obj)
        cur = self.decisions.cache.get(key)
        if cur is not None and as_int(meta(cur).get("resourceVersion")) >= as_int(meta(obj).get("resourceVersion")):
            return
        self.decisions.cache[key] = obj
        self._index_decision(key, obj)
