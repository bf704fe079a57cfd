"""The hub's HorizontalPodAutoscaler controller: HPAs across the fleet (issue 12).

One :class:`HPAController` serves every logical cluster through ``/clusters/*``: informers on
HorizontalPodAutoscalers (``autoscaling/v2``, the type the Syncers import from the clusters) and
Deployments feed one work queue of hub HPAs ``(logical cluster, namespace, name)``, each also
resynced every ``resync`` seconds. For an HPA **without** ``kcp.dev/cluster`` (a parent) whose
``scaleTargetRef`` is a Deployment the splitter has split, a reconcile:

1. marks the Deployment ``autoscaling.fleetplane.io/hpa: <hpa>``: the splitter then keeps the
   replicas its children have (the clusters' HPAs own them) and only places new clusters;
2. makes one child HPA ``<hpa>--<cluster>`` per cluster running a child ``<deploy>--<cluster>``:
   labelled ``kcp.dev/cluster`` (so the Syncer carries it down) and ``kcp.dev/owned-by``, an
   ownerReference to the parent HPA, the parent's spec with ``scaleTargetRef.name`` the child
   Deployment and min/max split like the replicas (:func:`.split.split_bounds`), recomputed only
   when the parent's bounds or the set of clusters change (the child's
   ``autoscaling.fleetplane.io/split`` annotation records what they were computed for); child HPAs
   of clusters that no longer run a child are deleted;
3. sets the parent Deployment's ``spec.replicas`` to the sum of its children's (which the Syncer
   carries up from the clusters as the HPAs scale them: its ``when: hpa`` retain rule), so the
   parent's spec and status both show the fleet's total;
4. writes the parent HPA's status: currentReplicas and desiredReplicas summed over the children's,
   currentMetrics the replica-weighted average of theirs, lastScaleTime the latest, and
   conditions AbleToScale / ScalingActive (False with ``TargetNotSplit``, ``FailedGetScale`` or
   ``UnsupportedTarget``, and a Warning Event, when the target cannot be autoscaled across the fleet).

A deleted parent HPA (or one whose target goes away) takes its children with it and unmarks the
Deployment. The controller talks to the hub only through its API, as ``system:fleetplane:hpa-controller``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from ...apimachinery.metatime import now_rfc3339
from ...kube.client import MERGE_PATCH, ApiError, Client
from ...kube.controller import Result, run_workers, stop_tasks
from ...kube.events import EventRecorder
from ...kube.informer import ClusterKey as Key
from ...kube.informer import Informer
from ...kube.informer import cluster_key as key_of
from ...kube.objects import as_int, hub_path, meta
from ...kube.workqueue import WorkQueue
from . import ANNOTATION_HPA
from .options import HPAControllerOptions
from .split import split_bounds

__all__ = ["ANNOTATION_HPA", "ANNOTATION_SPLIT", "HPAController", "child_hpa_name"]

log = logging.getLogger("fleetplane.fleet.hpas")

LABEL_CLUSTER = "kcp.dev/cluster"
LABEL_OWNED_BY = "kcp.dev/owned-by"
#: on a child HPA: the parent bounds and clusters its min/max were split for
ANNOTATION_SPLIT = "autoscaling.fleetplane.io/split"
FIELD_MANAGER = "fleetplane-hpa-controller"
COMPONENT = "fleetplane-hpa-controller"
HPA = ("autoscaling", "v2", "horizontalpodautoscalers")
API_VERSION = "autoscaling/v2"
KIND = "HorizontalPodAutoscaler"


def child_hpa_name(hpa: str, cluster: str) -> str:
    return f"{hpa}--{cluster}"





def _is_child(obj: Mapping[str, Any]) -> bool:
    return LABEL_CLUSTER in (meta(obj).get("labels") or {})


def set_condition(conditions: list[dict], ctype: str, status: str, reason: str, message: str) -> list[dict]:
    """kube's setCondition: lastTransitionTime moves only with the status."""
    old = next((c for c in conditions if c.get("type") == ctype), None)
    since = old.get("lastTransitionTime") if old and old.get("status") == status else None
    new = {"type": ctype, "status": status, "lastTransitionTime": since or now_rfc3339(), "reason": reason,
           "message": message}
    return sorted([c for c in conditions if c.get("type") != ctype] + [new], key=lambda c: str(c.get("type")))


def aggregate_metrics(children: list[dict]) -> list[dict]:
    """The children's currentMetrics, metric by metric (by position), averaged weighted by each
    child's currentReplicas: averageUtilization (rounded down, as kube's) and averageValue when all have one."""
    weighted = [(max(1, as_int((c.get("status") or {}).get("currentReplicas"))), (c.get("status") or {}).get("currentMetrics") or [])
                for c in children]
    weighted = [(w, ms) for w, ms in weighted if ms]
    if not weighted:
        return []
    out: list[dict] = []
    for i, first in enumerate(weighted[0][1]):
        mtype = first.get("type")
        field = {"Resource": "resource", "ContainerResource": "containerResource", "Pods": "pods",
                 "Object": "object", "External": "external"}.get(mtype or "")
        if field is None:
            continue
        same = [(w, ms[i][field]) for w, ms in weighted if i < len(ms) and isinstance(ms[i].get(field), dict)]
        total = sum(w for w, _ in same)
        current: dict[str, Any] = {}
        utils = [(w, u) for w, src in same if isinstance(u := (src.get("current") or {}).get("averageUtilization"), int)]
        if utils and len(utils) == len(same):
            current["averageUtilization"] = sum(w * u for w, u in utils) // total
        entry = {k: v for k, v in first[field].items() if k != "current"}
        entry["current"] = current
        out.append({"type": mtype, field: entry})
    return out


def _typed(hpa: dict) -> dict:
    return {**hpa, "apiVersion": API_VERSION, "kind": KIND}


class HPAController:
    """Run with :meth:`run` (until cancelled). See the module docstring."""

    def __init__(self, hub: Client, options: HPAControllerOptions | None = None) -> None:
        self.hub = hub
        self.opts = options or HPAControllerOptions()
        self.queue = WorkQueue("hpa-controller", jitter=True)
        self.events = EventRecorder(hub, COMPONENT, instance=COMPONENT, per_logical_cluster=True)

        def informer(path: str, on_change: Any, name: str) -> Informer:
            return Informer(hub, path, on_change, name=name, key=key_of, missing_ok=True)

        self.hpas = informer(f"/clusters/*/apis/{HPA[0]}/{HPA[1]}/{HPA[2]}", self._on_hpa, "horizontalpodautoscalers")
        self.deployments = informer("/clusters/*/apis/apps/v1/deployments", self._on_deployment, "deployments")
        #: (lc, ns, deployment) -> the parent HPAs targeting it
        self.targets: dict[Key, set[Key]] = {}
        self.ready = asyncio.Event()

    async def run(self) -> None:
        informers = [self.hpas, self.deployments]
        tasks = [asyncio.create_task(i.run(), name=f"hpa-informer-{i.name}") for i in informers]
        tasks.append(asyncio.create_task(self.events.run(), name="hpa-events"))
        try:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            self.ready.set()
            tasks.append(asyncio.create_task(run_workers(self.queue, self.reconcile, self.opts.workers), name="hpa-workers"))
            await asyncio.gather(*tasks)
        finally:
            await stop_tasks(tasks)
            self.queue.close()

    # -- events ---------------------------------------------------------------------------------

    def _on_hpa(self, key: Key, old: dict | None, new: dict | None) -> None:
        obj = new or old or {}
        if _is_child(obj):
            parent = next((r for r in meta(obj).get("ownerReferences") or () if r.get("kind") == KIND and r.get("controller")), None)
            if parent is not None:
                self.queue.add((key[0], key[1], parent.get("name") or ""))
            return
        def target(o: dict) -> Key:
            return key[0], key[1], ((o.get("spec") or {}).get("scaleTargetRef") or {}).get("name") or ""

        if old is not None:
            self.targets.get(target(old), set()).discard(key)
        if new is not None:
            self.targets.setdefault(target(new), set()).add(key)
        self.queue.add(key)

    def _on_deployment(self, key: Key, old: dict | None, new: dict | None) -> None:
        obj = new or old or {}
        if _is_child(obj):
            owner = next((r for r in meta(obj).get("ownerReferences") or () if r.get("controller")), None)
            if owner is None:
                return
            key = (key[0], key[1], owner.get("name") or "")
        for hk in self.targets.get(key, ()):
            self.queue.add(hk)

    # -- reconcile ------------------------------------------------------------------------------

    async def reconcile(self, key: Key) -> Result:
        try:
            await self._reconcile(key)
        except ApiError as err:
            if err.status == 409:
                return Result(requeue=True)
            raise
        return Result(requeue_after=self.opts.resync)

    def _children_hpas(self, key: Key, uid: str | None) -> dict[str, dict]:
        lc, ns, _ = key
        out = {}
        for (l2, n2, _), h in self.hpas.cache.items():
            if l2 == lc and n2 == ns and _is_child(h) and any(
                    r.get("uid") == uid and r.get("controller") for r in meta(h).get("ownerReferences") or ()):
                out[meta(h)["labels"][LABEL_CLUSTER]] = h
        return out

    async def _reconcile(self, key: Key) -> None:
        lc, ns, name = key
        hpa = self.hpas.cache.get(key)
        if hpa is None or _is_child(hpa) or meta(hpa).get("deletionTimestamp"):
            if hpa is None:
                await self._cleanup(key)
            return
        # (the hub defaults an imported HPA as kube does: minReplicas, the 80 % CPU metric)
        md, spec = meta(hpa), hpa.get("spec") or {}
        ref = spec.get("scaleTargetRef") or {}
        children_hpas = self._children_hpas(key, md.get("uid"))
        conditions = list((hpa.get("status") or {}).get("conditions") or [])
        if ref.get("kind") != "Deployment" or not str(ref.get("apiVersion") or "").startswith("apps/"):
            await self._fail(hpa, children_hpas, conditions, "UnsupportedTarget",
                             f"only apps Deployments are autoscaled across the fleet, not {ref.get('apiVersion')} {ref.get('kind')}")
            return
        target = self.deployments.cache.get((lc, ns, ref.get("name") or ""))
        if target is None:
            await self._fail(hpa, children_hpas, conditions, "FailedGetScale",
                             f'deployments.apps "{ref.get("name")}" not found', able=True)
            return
        tmd = meta(target)
        children = {meta(d)["labels"][LABEL_CLUSTER]: d for (l2, n2, _), d in self.deployments.cache.items()
                    if l2 == lc and n2 == ns and _is_child(d) and not meta(d).get("deletionTimestamp")
                    and any(r.get("uid") == tmd.get("uid") and r.get("controller") for r in meta(d).get("ownerReferences") or ())}
        if _is_child(target) or not children:
            why = (f"Deployment {ref.get('name')} runs in cluster {(tmd.get('labels') or {}).get(LABEL_CLUSTER)} only: it is "
                   "a child of a split Deployment" if _is_child(target) else
                   f"Deployment {ref.get('name')} is not split over any cluster (the splitter has placed no child of it)")
            await self._fail(hpa, children_hpas, conditions, "TargetNotSplit", why)
            return
        if (tmd.get("annotations") or {}).get(ANNOTATION_HPA) != name:
            await self.hub.patch(hub_path(lc, "apps/v1", "deployments", ns, tmd["name"]),
                                 {"metadata": {"annotations": {ANNOTATION_HPA: name}}}, MERGE_PATCH, FIELD_MANAGER)
        await self._sync_children(hpa, children, children_hpas)
        total = sum(max(0, as_int((d.get("spec") or {}).get("replicas"))) for d in children.values())
        if as_int((target.get("spec") or {}).get("replicas")) != total:
            await self.hub.patch(hub_path(lc, "apps/v1", "deployments", ns, tmd["name"]),
                                 {"spec": {"replicas": total}}, MERGE_PATCH, FIELD_MANAGER)
        await self._write_status(hpa, children, self._children_hpas(key, md.get("uid")), conditions)

    async def _sync_children(self, hpa: dict, children: dict[str, dict], existing: dict[str, dict]) -> None:
        """Create, update and delete the child HPAs (one request each, all at once)."""
        md, spec = meta(hpa), hpa.get("spec") or {}
        lc, ns, name = key_of(hpa)
        mn, mx = max(1, as_int(spec.get("minReplicas") or 1)), max(1, as_int(spec.get("maxReplicas")))
        split_for = json.dumps({"min": mn, "max": mx, "clusters": sorted(children)}, separators=(",", ":"))
        weights = {c: max(0, as_int((d.get("spec") or {}).get("replicas"))) for c, d in children.items()}
        bounds = split_bounds(mn, mx, weights)
        path = hub_path(lc, API_VERSION, HPA[2], ns)
        ops: list[Any] = []
        for c, d in sorted(children.items()):
            have = existing.get(c)
            cspec = {k: v for k, v in spec.items() if k not in ("minReplicas", "maxReplicas")}
            cspec["scaleTargetRef"] = {**(spec.get("scaleTargetRef") or {}), "name": meta(d)["name"]}
            hann = meta(have).get("annotations") or {}
            if have is not None and hann.get(ANNOTATION_SPLIT) == split_for:
                cspec["minReplicas"] = (have.get("spec") or {}).get("minReplicas")
                cspec["maxReplicas"] = (have.get("spec") or {}).get("maxReplicas")
            else:
                cspec["minReplicas"], cspec["maxReplicas"] = bounds[c]
            labels = {LABEL_CLUSTER: c, LABEL_OWNED_BY: name}
            owner = {"apiVersion": API_VERSION, "kind": KIND, "name": name, "uid": md.get("uid"), "controller": True,
                     "blockOwnerDeletion": True}
            body = {"apiVersion": API_VERSION, "kind": KIND,
                    "metadata": {"name": child_hpa_name(name, c), "namespace": ns, "labels": labels,
                                 "annotations": {ANNOTATION_SPLIT: split_for}, "ownerReferences": [owner]},
                    "spec": cspec}
            if have is None:
                ops.append(self._create(hpa, path, body, c))
            elif have.get("spec") != cspec or hann.get(ANNOTATION_SPLIT) != split_for:
                new = json.loads(json.dumps(_typed(have)))
                new["spec"] = cspec
                new["metadata"]["annotations"] = {**hann, ANNOTATION_SPLIT: split_for}
                new.pop("status", None)
                ops.append(self.hub.replace(f"{path}/{meta(have)['name']}", new, FIELD_MANAGER))
        for c, h in existing.items():
            if c not in children:
                ops.append(self._delete(hpa, path, h, c))
        results = await asyncio.gather(*ops, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    async def _create(self, hpa: dict, path: str, body: dict, cluster: str) -> None:
        try:
            await self.hub.create(path, body, FIELD_MANAGER)
        except ApiError as err:
            if err.status == 409:
                return
            raise
        s = body["spec"]
        self.events.event(_typed(hpa), "Normal", "SuccessfulCreate",
                          f"Created {body['metadata']['name']} in cluster {cluster} "
                          f"(minReplicas {s['minReplicas']}, maxReplicas {s['maxReplicas']})")

    async def _delete(self, hpa: dict | None, path: str, child: dict, cluster: str) -> None:
        try:
            await self.hub.delete(f"{path}/{meta(child)['name']}", uid=meta(child).get("uid"))
        except ApiError as err:
            if err.status not in (404, 409):
                raise
            return
        if hpa is not None:
            self.events.event(_typed(hpa), "Normal", "SuccessfulDelete", f"Deleted {meta(child)['name']} from cluster {cluster}")

    async def _cleanup(self, key: Key) -> None:
        """A parent HPA gone: its children go, and its target is no longer marked."""
        lc, ns, name = key
        path = hub_path(lc, API_VERSION, HPA[2], ns)
        for (l2, n2, _), h in list(self.hpas.cache.items()):
            if l2 == lc and n2 == ns and _is_child(h) and (meta(h).get("labels") or {}).get(LABEL_OWNED_BY) == name:
                await self._delete(None, path, h, meta(h)["labels"][LABEL_CLUSTER])
        for (l2, n2, dn), d in list(self.deployments.cache.items()):
            if l2 == lc and n2 == ns and not _is_child(d) and (meta(d).get("annotations") or {}).get(ANNOTATION_HPA) == name:
                try:
                    await self.hub.patch(hub_path(lc, "apps/v1", "deployments", ns, dn),
                                         {"metadata": {"annotations": {ANNOTATION_HPA: None}}}, MERGE_PATCH, FIELD_MANAGER)
                except ApiError as err:
                    if err.status != 404:
                        raise
        for targets in self.targets.values():
            targets.discard(key)

    async def _fail(self, hpa: dict, children_hpas: dict[str, dict], conditions: list[dict], reason: str, message: str,
                    *, able: bool = False) -> None:
        """The target cannot be autoscaled across the fleet: say why (condition and Event), no children."""
        lc, ns, _ = key_of(hpa)
        for c, h in children_hpas.items():
            await self._delete(hpa, hub_path(lc, API_VERSION, HPA[2], ns), h, c)
        old = next((c for c in conditions if c.get("type") == "ScalingActive"), {})
        if old.get("reason") != reason or old.get("status") != "False":
            self.events.event(_typed(hpa), "Warning", reason, message)
        if able:
            conditions = set_condition(conditions, "AbleToScale", "False", reason,
                                       f"the HPA controller was unable to get the target's current scale: {message}")
        conditions = set_condition(conditions, "ScalingActive", "False", reason, message)
        status = {k: v for k, v in (hpa.get("status") or {}).items() if k in ("currentReplicas", "desiredReplicas", "lastScaleTime")}
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
        await self._put_status(hpa, {**status, "conditions": conditions})

    async def _write_status(self, hpa: dict, children: dict[str, dict], hpas: dict[str, dict], conditions: list[dict]) -> None:
        kids = [hpas[c] for c in sorted(hpas) if c in children]
        status: dict[str, Any] = {
            "currentReplicas": sum(as_int((h.get("status") or {}).get("currentReplicas")) for h in kids),
            "desiredReplicas": sum(as_int((h.get("status") or {}).get("desiredReplicas")) for h in kids)}
        if meta(hpa).get("generation") is not None:
            status["observedGeneration"] = meta(hpa)["generation"]
        times = [t for h in kids if (t := (h.get("status") or {}).get("lastScaleTime"))]
        if times:
            status["lastScaleTime"] = max(times)
        metrics = aggregate_metrics(kids)
        if metrics:
            status["currentMetrics"] = metrics
        clusters = ", ".join(sorted(children))
        conditions = set_condition(conditions, "AbleToScale", "True", "SucceededGetScale",
                                   f"the HPA controller was able to get the target's current scale in clusters {clusters}")
        conditions = set_condition(conditions, "ScalingActive", "True", "ScalingInClusters",
                                   f"Deployment {(hpa.get('spec') or {}).get('scaleTargetRef', {}).get('name')} is autoscaled "
                                   f"by one HorizontalPodAutoscaler per cluster ({clusters})")
        status["conditions"] = conditions
        await self._put_status(hpa, status)

    async def _put_status(self, hpa: dict, status: dict) -> None:
        if (hpa.get("status") or {}) == status:
            return
        lc, ns, name = key_of(hpa)
        body = json.loads(json.dumps(_typed(hpa)))
        body["status"] = status
        await self.hub.replace(hub_path(lc, API_VERSION, HPA[2], ns, name, "status"), body, FIELD_MANAGER)
