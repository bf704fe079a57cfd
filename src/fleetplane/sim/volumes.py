"""A toy volume provisioner: every PersistentVolumeClaim is bound at once.

What kube's persistentvolume-controller and a dynamic provisioner do together, without
PersistentVolume objects (a simulated cluster serves none): the claim gets ``spec.volumeName:
pvc-<claim uid>`` and kube's bind annotations (``pv.kubernetes.io/bind-completed``,
``pv.kubernetes.io/bound-by-controller``), then ``status``: ``phase: Bound``, the claim's access
modes, ``capacity.storage`` = the requested storage (a larger request later is an instant
expansion). Every claim is provisioned, whatever its ``storageClassName`` (there are no
StorageClass objects either). Event ``ProvisioningSucceeded`` ("Successfully provisioned volume
pvc-...") from ``persistentvolume-controller``.

It also plays kube's pvc-protection controller: a deleted claim keeps its
``kubernetes.io/pvc-protection`` finalizer (and shows ``Terminating``) while a pod that has not
finished still mounts it, and loses it, so it goes, once none does.
"""

from __future__ import annotations

import logging

import orjson

from ..apis.core.pvc import PVC_PROTECTION, requested_storage
from ..kube.client import ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import meta, pod_is_terminal

log = logging.getLogger(__name__)

COMPONENT = "persistentvolume-controller"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"


def volume_name(claim: dict) -> str:
    return f"pvc-{meta(claim)['uid']}"


def bound_status(claim: dict) -> dict:
    spec = claim.get("spec") or {}
    status: dict = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or [])}
    storage = requested_storage(claim)
    if storage:
        status["capacity"] = {"storage": storage}
    return status


def claims_of(pod: dict) -> list[str]:
    """The claims a pod mounts, as ``namespace/name`` keys."""
    ns = meta(pod).get("namespace") or ""
    return [f"{ns}/{v['persistentVolumeClaim']['claimName']}" for v in (pod.get("spec") or {}).get("volumes") or []
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
            and v["persistentVolumeClaim"].get("claimName")]


class VolumeProvisioner:
    def __init__(self, kube: Client, claims: Informer, pods: Informer, recorder: EventRecorder, workers: int = 2) -> None:
        self.kube = kube
        self.claims = claims
        self.pods = pods
        self.recorder = recorder
        self.workers = workers
        self.queue = WorkQueue("volumes", base=0.005, cap=30.0)
        claims.add_handler(lambda key, old, new: self.queue.add(object_key(new)) if new is not None else None)
        pods.add_handler(self._pod_changed)

    def _pod_changed(self, key: object, old: dict | None, new: dict | None) -> None:
        """A pod that goes (or finishes) may release a deleted claim."""
        if new is None or pod_is_terminal(new):
            for claim in claims_of(new or old or {}):
                if claim in self.claims.cache:
                    self.queue.add(claim)

    def in_use(self, claim: dict) -> bool:
        key = object_key(claim)
        return any(not pod_is_terminal(p) and key in claims_of(p) for p in self.pods.list(meta(claim).get("namespace") or ""))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    async def sync(self, key: str) -> None:
        cached = self.claims.get(key)
        if cached is None:
            return
        claim = orjson.loads(orjson.dumps(cached))
        ns, name = meta(claim)["namespace"], meta(claim)["name"]
        try:
            if meta(claim).get("deletionTimestamp"):
                finalizers = meta(claim).get("finalizers") or []
                if PVC_PROTECTION in finalizers and not self.in_use(claim):
                    claim["metadata"]["finalizers"] = [f for f in finalizers if f != PVC_PROTECTION]
                    await self.kube.replace(api_path("v1", "persistentvolumeclaims", ns, name), claim)
                return
            if not (claim.get("spec") or {}).get("volumeName"):
                claim["spec"]["volumeName"] = volume_name(claim)
                annotations = claim["metadata"].setdefault("annotations", {})
                annotations[BIND_COMPLETED] = "yes"
                annotations[BOUND_BY_CONTROLLER] = "yes"
                claim = await self.kube.replace(api_path("v1", "persistentvolumeclaims", ns, name), claim)
                self.recorder.event(claim, "Normal", "ProvisioningSucceeded",
                                    f"Successfully provisioned volume {claim['spec']['volumeName']}", component=COMPONENT)
            want = bound_status(claim)
            if (claim.get("status") or {}) != want:
                claim["status"] = want
                await self.kube.replace(api_path("v1", "persistentvolumeclaims", ns, name, "status"), claim)
        except ApiError as err:
            if err.status in (404, 409):  # gone, or a stale cache: the informer brings the newer claim
                return
            raise
