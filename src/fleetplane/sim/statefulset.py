"""The StatefulSet controller (kube-controller-manager's ``pkg/controller/statefulset``), simplified.

A StatefulSet of ``replicas`` N owns pods named ``<set>-<ordinal>`` for the ordinals
``spec.ordinals.start`` .. start+N-1, each labelled ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash`` (``<set>-<hash of the
template>``), with ``hostname`` its name and ``subdomain`` the ``serviceName``. For every
``volumeClaimTemplates`` entry a pod gets a PersistentVolumeClaim ``<template>-<set>-<ordinal>``
(labels of the template and the selector's matchLabels), created before the pod and mounted in
place of the template's volume of that name; the simulated provisioner (``volumes.py``) binds it.

As kube's ``updateStatefulSet``, one sync walks: the pods in range in ascending order (create the
missing, recreate the failed), then the pods out of range from the highest ordinal (delete),
then, for ``RollingUpdate``, the outdated pods from the highest ordinal down to the partition
(delete one; it is recreated at the update revision). ``OrderedReady`` stops at the first action
and at the first pod that is not Running and available (Ready for ``minReadySeconds``) or is
terminating, so pods come up one at a time in order and go (scale down, update) one at a time from the highest; ``Parallel`` creates
and deletes without waiting (updates still go one at a time). Claims are kept when a pod goes
(``persistentVolumeClaimRetentionPolicy`` Retain); ``whenScaled: Delete`` hands a scaled-down
pod's claims to the pod (owner reference) and ``whenDeleted: Delete`` to the StatefulSet, so the
hub's garbage collector deletes them with their owner.

Status: replicas, readyReplicas, currentReplicas, updatedReplicas, availableReplicas (ready for
minReadySeconds), currentRevision / updateRevision (current becomes update once every pod is
updated and ready), collisionCount, observedGeneration. Events as kube's: "create Pod web-0 in
StatefulSet web successful", "delete Pod ...", "create Claim www-web-0 Pod web-0 in StatefulSet
web success". Simplified: no ControllerRevision objects (a pod below the partition that is
recreated gets the update revision, as there is no stored old template), no adoption of
orphaned pods, no ``maxUnavailable``.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import orjson

from ..apis.apps import CONTROLLER_REVISION_HASH
from ..kube.client import MERGE_PATCH, ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EnqueueKey, Informer
from ..kube.workqueue import WorkQueue
from .deployment import compute_hash
from .owned import OwnedPods, PodWriter
from .util import meta, owner_ref, pod_is_available, pod_is_ready, pod_is_terminal

log = logging.getLogger(__name__)

COMPONENT = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


def ordinal_of(pod: dict, set_name: str) -> int | None:
    """getParentNameAndOrdinal: the ordinal of ``<set>-<n>``, or None for another name."""
    m = _ORDINAL.match(meta(pod).get("name") or "")
    if m is None or m.group(1) != set_name:
        return None
    return int(m.group(2))


def claim_name(template: str, set_name: str, ordinal: int) -> str:
    return f"{template}-{set_name}-{ordinal}"


def update_revision(sts: dict) -> str:
    """The revision's name, ``<set>-<hash>``: the template hashed with the collision count (0 if unset, as kube)."""
    collisions = int((sts.get("status") or {}).get("collisionCount") or 0)
    return f"{meta(sts)['name']}-{compute_hash((sts.get('spec') or {}).get('template') or {}, collisions)}"


def revision_of(pod: dict) -> str:
    return str((meta(pod).get("labels") or {}).get(CONTROLLER_REVISION_HASH) or "")


def terminating(pod: dict) -> bool:
    return bool(meta(pod).get("deletionTimestamp"))


def running_and_ready(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running" and pod_is_ready(pod)


def running_and_available(pod: dict, min_ready: int) -> bool:
    """isRunningAndAvailable: what an OrderedReady set waits for before the next pod."""
    return running_and_ready(pod) and pod_is_available(pod, min_ready, time.time())


def new_pod(sts: dict, ordinal: int, revision: str) -> dict:
    """newVersionedStatefulSetPod: the template's pod with its identity and its claims' volumes."""
    spec = sts.get("spec") or {}
    name = f"{meta(sts)['name']}-{ordinal}"
    template = orjson.loads(orjson.dumps(spec.get("template") or {}))
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    labels.update({CONTROLLER_REVISION_HASH: revision, POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal)})
    m: dict[str, Any] = {"name": name, "namespace": meta(sts)["namespace"], "labels": labels, "ownerReferences": [owner_ref(sts)]}
    for f in ("annotations", "finalizers"):
        if tmeta.get(f):
            m[f] = tmeta[f]
    pspec = template.get("spec") or {}
    pspec["hostname"] = name
    if spec.get("serviceName"):
        pspec["subdomain"] = spec["serviceName"]
    claims = [c for c in spec.get("volumeClaimTemplates") or [] if isinstance(c, dict)]
    if claims:
        names = {(c.get("metadata") or {}).get("name") for c in claims}
        volumes = [v for v in pspec.get("volumes") or [] if v.get("name") not in names]
        for c in claims:
            tname = str((c.get("metadata") or {}).get("name") or "")
            volumes.append({"name": tname, "persistentVolumeClaim": {"claimName": claim_name(tname, meta(sts)["name"], ordinal)}})
        pspec["volumes"] = volumes
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": pspec}


def new_claim(sts: dict, template: dict, ordinal: int) -> dict:
    """getPersistentVolumeClaims: one claim of a pod, owned by the set when whenDeleted is Delete."""
    spec = sts.get("spec") or {}
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    labels.update(((spec.get("selector") or {}).get("matchLabels")) or {})
    m: dict[str, Any] = {"name": claim_name(tmeta.get("name") or "", meta(sts)["name"], ordinal), "namespace": meta(sts)["namespace"]}
    if labels:
        m["labels"] = labels
    if tmeta.get("annotations"):
        m["annotations"] = tmeta["annotations"]
    if ((spec.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenDeleted")) == "Delete":
        m["ownerReferences"] = [_ref(sts)]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": m, "spec": dict(template.get("spec") or {})}


def _ref(owner: dict) -> dict:
    m = meta(owner)
    return {"apiVersion": owner.get("apiVersion") or "v1", "kind": owner.get("kind") or "", "name": m["name"], "uid": m["uid"]}


class StatefulSetController:
    def __init__(self, kube: Client, statefulsets: Informer, pods: Informer, claims: Informer, recorder: EventRecorder,
                 workers: int = 3) -> None:
        self.kube = kube
        self.statefulsets = statefulsets
        self.pods = pods
        self.claims = claims
        self.recorder = recorder
        self.workers = workers
        self.queue = WorkQueue("statefulset", base=0.005, cap=60.0)
        self.writer = PodWriter(kube, recorder, COMPONENT, created="create Pod {pod} in StatefulSet {owner} successful",
                                deleted="delete Pod {pod} in StatefulSet {owner} successful",
                                failed="create Pod {pod} in StatefulSet {owner} failed error: {error}")
        statefulsets.add_handler(_Enqueue(self.queue))
        pods.add_handler(OwnedPods("StatefulSet", statefulsets, self.queue.add))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    async def sync(self, key: str) -> None:
        sts = self.statefulsets.get(key)
        if sts is None or meta(sts).get("deletionTimestamp"):
            return
        name = meta(sts)["name"]
        pods: dict[int, dict] = {}
        for p in self.pods.by_index("controller", meta(sts)["uid"]):
            o = ordinal_of(p, name)
            if o is not None:
                pods[o] = p
        revision = update_revision(sts)
        await self._sync_pods(sts, pods, revision)
        await self._update_status(key, sts, list(pods.values()), revision)

    async def _sync_pods(self, sts: dict, pods: dict[int, dict], revision: str) -> None:
        """One pass of updateStatefulSet; returns at the first action (or wait) when monotonic."""
        spec = sts.get("spec") or {}
        monotonic = spec.get("podManagementPolicy") != "Parallel"
        min_ready = int(spec.get("minReadySeconds") or 0)
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        ordinals = range(start, start + int(spec.get("replicas", 1) or 0))
        for o in ordinals:
            pod = pods.get(o)
            if pod is not None and pod_is_terminal(pod) and not terminating(pod):
                await self.writer.delete(sts, pod)  # a failed pod is recreated
                if monotonic:
                    return
                continue
            if pod is None:
                await self._ensure_claims(sts, o)
                await self.writer.create(sts, new_pod(sts, o, revision))
                if monotonic:
                    return
                continue
            await self._ensure_claims(sts, o)
            if monotonic and (terminating(pod) or not running_and_available(pod, min_ready)):
                return
        for o in sorted((o for o in pods if o not in ordinals), reverse=True):
            pod = pods[o]
            if terminating(pod):
                if monotonic:
                    return
                continue
            if ((spec.get("persistentVolumeClaimRetentionPolicy") or {}).get("whenScaled")) == "Delete":
                await self._hand_claims_to(sts, pod, o)
            await self.writer.delete(sts, pod)
            if monotonic:
                return
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type") != "RollingUpdate":
            return
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        for o in reversed(ordinals):
            if o - start < partition:
                return
            pod = pods.get(o)
            if pod is None:
                return
            if revision_of(pod) != revision and not terminating(pod):
                await self.writer.delete(sts, pod)
                return
            if not running_and_ready(pod):
                return

    async def _ensure_claims(self, sts: dict, ordinal: int) -> None:
        """createPersistentVolumeClaims: the pod's claims that do not exist yet."""
        ns, name = meta(sts)["namespace"], meta(sts)["name"]
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            cname = claim_name((template.get("metadata") or {}).get("name") or "", name, ordinal)
            if self.claims.get(f"{ns}/{cname}") is not None:
                continue
            try:
                await self.kube.create(api_path("v1", "persistentvolumeclaims", ns), new_claim(sts, template, ordinal))
            except ApiError as err:
                if err.status == 409:
                    continue
                self.recorder.event(sts, "Warning", "FailedCreate",
                                    f"create Claim {cname} for Pod {name}-{ordinal} in StatefulSet {name} failed error: {err.message}",
                                    component=COMPONENT)
                raise
            self.recorder.event(sts, "Normal", "SuccessfulCreate",
                                f"create Claim {cname} Pod {name}-{ordinal} in StatefulSet {name} success", component=COMPONENT)

    async def _hand_claims_to(self, sts: dict, pod: dict, ordinal: int) -> None:
        """whenScaled Delete: the condemned pod owns its claims, so they go with it."""
        ns, name = meta(sts)["namespace"], meta(sts)["name"]
        for template in (sts.get("spec") or {}).get("volumeClaimTemplates") or []:
            cname = claim_name((template.get("metadata") or {}).get("name") or "", name, ordinal)
            claim = self.claims.get(f"{ns}/{cname}")
            if claim is None:
                continue
            refs = [r for r in meta(claim).get("ownerReferences") or [] if r.get("uid") != meta(pod)["uid"]]
            try:
                await self.kube.patch(api_path("v1", "persistentvolumeclaims", ns, cname),
                                      {"metadata": {"ownerReferences": [*refs, _ref(pod)]}}, MERGE_PATCH)
            except ApiError as err:
                if err.status != 404:
                    raise

    async def _update_status(self, key: str, sts: dict, pods: list[dict], revision: str) -> None:
        spec = sts.get("spec") or {}
        old = sts.get("status") or {}
        current_revision = old.get("currentRevision") or revision
        min_ready = int(spec.get("minReadySeconds") or 0)
        at = time.time()
        replicas = ready = available = current = updated = 0
        for p in pods:
            if not (p.get("status") or {}).get("phase"):
                continue
            replicas += 1
            if running_and_ready(p):
                ready += 1
                if pod_is_available(p, min_ready, at):
                    available += 1
            if not terminating(p):
                current += revision_of(p) == current_revision
                updated += revision_of(p) == revision
        if (spec.get("updateStrategy") or {}).get("type") == "RollingUpdate" and updated == replicas and ready == replicas:
            current, current_revision = updated, revision
        status: dict[str, Any] = {"observedGeneration": meta(sts).get("generation"), "replicas": replicas, "readyReplicas": ready,
                                  "currentReplicas": current, "updatedReplicas": updated, "currentRevision": current_revision,
                                  "updateRevision": revision, "collisionCount": int(old.get("collisionCount") or 0),
                                  "availableReplicas": available, "conditions": old.get("conditions")}
        status = {k: v for k, v in status.items() if v or k in ("replicas", "availableReplicas", "collisionCount")}
        if status != old:
            body = dict(sts)
            body["status"] = status
            try:
                await self.kube.replace(api_path("apps/v1", "statefulsets", meta(sts)["namespace"], meta(sts)["name"], "status"), body)
            except ApiError as err:
                if err.status == 404:
                    return
                if err.status != 409:
                    raise
                self.queue.add(key)  # a stale cache: the informer brings the newer object
                return
        if min_ready and ready != available:
            self.queue.add_after(key, float(min_ready))


class _Enqueue(EnqueueKey):
    """A StatefulSet's key on add and update; nothing to do for a deleted one."""

    def on_delete(self, obj: dict) -> None:
        pass
