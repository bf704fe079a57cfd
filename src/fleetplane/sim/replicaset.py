"""The ReplicaSet controller (kube-controller-manager's ``pkg/controller/replicaset``).

A ReplicaSet owns the active pods that match its selector and carry its controller reference
(orphans that match are adopted, owned pods that stop matching are released). The controller
creates pods from the template (``generateName: <rs>-``, in slow-start batches 1, 2, 4, ...,
at most 500 per sync) or deletes the least valuable ones, and writes ``status``: replicas,
fullyLabeledReplicas, readyReplicas, availableReplicas (ready for minReadySeconds),
observedGeneration, and a ReplicaFailure condition when pods cannot be created or deleted.
Expectations keep it from acting twice on the same change before its informer has seen the
result of its own writes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..apimachinery.labels import selector_matches
from ..kube.client import MERGE_PATCH, ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EventHandler, Informer, object_key
from ..kube.workqueue import WorkQueue
from .util import (
    controller_ref,
    get_condition,
    meta,
    now,
    owner_ref,
    pod_is_active,
    pod_is_available,
    pod_is_ready,
)

log = logging.getLogger(__name__)

COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500
SLOW_START_INITIAL_BATCH = 1
EXPECTATIONS_TIMEOUT = 300.0
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def pod_indexers() -> dict[str, Any]:
    """Indexes the controllers need on the shared pod informer."""

    def by_controller(pod: dict) -> list[str]:
        ref = controller_ref(pod)
        return [ref["uid"]] if ref and ref.get("uid") else []

    def orphans(pod: dict) -> list[str]:
        return [] if controller_ref(pod) else [meta(pod).get("namespace") or ""]

    def by_node(pod: dict) -> list[str]:
        node = (pod.get("spec") or {}).get("nodeName")
        return [node] if node else []

    return {"controller": by_controller, "orphans": orphans, "node": by_node}


def rs_indexers() -> dict[str, Any]:
    def by_controller(rs: dict) -> list[str]:
        ref = controller_ref(rs)
        return [ref["uid"]] if ref and ref.get("uid") else []

    def orphans(rs: dict) -> list[str]:
        return [] if controller_ref(rs) else [meta(rs).get("namespace") or ""]

    return {"controller": by_controller, "orphans": orphans}


class Expectations:
    """UIDTrackingControllerExpectations: pending creations (a count) and deletions (pod keys)."""

    def __init__(self) -> None:
        self._adds: dict[str, int] = {}
        self._dels: dict[str, set[str]] = {}
        self._stamp: dict[str, float] = {}

    def satisfied(self, key: str) -> bool:
        if key not in self._stamp:
            return True
        if self._adds.get(key, 0) <= 0 and not self._dels.get(key):
            return True
        return time.monotonic() - self._stamp[key] > EXPECTATIONS_TIMEOUT

    def expect_creations(self, key: str, n: int) -> None:
        self._adds[key] = n
        self._dels[key] = set()
        self._stamp[key] = time.monotonic()

    def expect_deletions(self, key: str, pod_keys: list[str]) -> None:
        self._adds[key] = 0
        self._dels[key] = set(pod_keys)
        self._stamp[key] = time.monotonic()

    def creation_observed(self, key: str) -> None:
        if key in self._adds:
            self._adds[key] -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        dels = self._dels.get(key)
        if dels:
            dels.discard(pod_key)

    def delete(self, key: str) -> None:
        self._adds.pop(key, None)
        self._dels.pop(key, None)
        self._stamp.pop(key, None)


def pod_from_template(rs: dict) -> dict:
    """controller.GetPodFromTemplate."""
    template = (rs.get("spec") or {}).get("template") or {}
    tmeta = template.get("metadata") or {}
    m: dict[str, Any] = {"generateName": meta(rs)["name"] + "-", "namespace": meta(rs)["namespace"],
                         "ownerReferences": [owner_ref(rs)]}
    for f in ("labels", "annotations", "finalizers"):
        if tmeta.get(f):
            m[f] = tmeta[f]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": template.get("spec") or {}}


def _phase_rank(pod: dict) -> int:
    return {"Pending": 0, "Unknown": 1, "Running": 2}.get((pod.get("status") or {}).get("phase") or "", 0)


def _ready_since(pod: dict) -> str:
    c = get_condition(pod.get("status"), "Ready")
    return (c or {}).get("lastTransitionTime") or ""


def pods_to_delete(pods: list[dict], related: list[dict], n: int) -> list[dict]:
    """getPodsToDelete: the n least valuable pods (ActivePodsWithRanks ordering)."""
    if n >= len(pods):
        return list(pods)
    on_node: dict[str, int] = {}
    for p in related:
        node = (p.get("spec") or {}).get("nodeName") or ""
        if node and pod_is_active(p):
            on_node[node] = on_node.get(node, 0) + 1

    def cost(p: dict) -> int:
        try:
            return int((meta(p).get("annotations") or {}).get(DELETION_COST, 0))
        except ValueError:
            return 0

    def rank(p: dict) -> tuple:
        spec = p.get("spec") or {}
        node = spec.get("nodeName") or ""
        restarts = sum(int(c.get("restartCount") or 0) for c in (p.get("status") or {}).get("containerStatuses") or [])
        ready = pod_is_ready(p)
        return (
            1 if node else 0,  # unassigned first
            _phase_rank(p),  # pending < unknown < running
            1 if ready else 0,  # not ready first
            cost(p),  # lower deletion cost first
            -on_node.get(node, 0),  # doubled-up first
            _invert(_ready_since(p)) if ready else "",  # ready for less time first
            -restarts,  # more restarts first
            _invert(meta(p).get("creationTimestamp") or ""),  # newer first
        )

    return sorted(pods, key=rank)[:n]


def _invert(stamp: str) -> str:
    """A sort key under which later RFC 3339 timestamps come first."""
    return "".join(chr(0x10FFFF - ord(ch)) for ch in stamp)


class ReplicaSetController:
    def __init__(self, kube: Client, replicasets: Informer, pods: Informer, recorder: EventRecorder,
                 workers: int = 5) -> None:
        self.kube = kube
        self.rs = replicasets
        self.pods = pods
        self.recorder = recorder
        self.workers = workers
        self.queue = WorkQueue("replicaset", base=0.005, cap=60.0)
        self.expectations = Expectations()
        replicasets.add_handler(_RSHandler(self))
        pods.add_handler(_PodHandler(self))

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    # -- lookups --------------------------------------------------------------------------------

    def resolve(self, namespace: str, ref: dict) -> dict | None:
        if ref.get("kind") != "ReplicaSet" or not (ref.get("apiVersion") or "").startswith("apps/"):
            return None
        rs = self.rs.get(f"{namespace}/{ref.get('name')}")
        if rs is None or meta(rs).get("uid") != ref.get("uid"):
            return None
        return rs

    def rs_for_orphan(self, pod: dict) -> list[dict]:
        ns = meta(pod).get("namespace") or ""
        labels = meta(pod).get("labels") or {}
        out = []
        for rs in self.rs.list(ns):
            sel = (rs.get("spec") or {}).get("selector")
            if isinstance(sel, dict) and (sel.get("matchLabels") or sel.get("matchExpressions")) and selector_matches(sel, labels):
                out.append(rs)
        return out

    def enqueue(self, rs: dict) -> None:
        self.queue.add(object_key(rs))

    # -- sync -----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        rs = self.rs.get(key)
        if rs is None:
            self.expectations.delete(key)
            return
        needs_sync = self.expectations.satisfied(key)
        spec = rs.get("spec") or {}
        selector = spec.get("selector") or {}
        uid: Any = meta(rs).get("uid")
        ns = meta(rs)["namespace"]
        owned = [p for p in self.pods.by_index("controller", uid) if pod_is_active(p)]
        pods = await self._claim(rs, selector, owned, [p for p in self.pods.by_index("orphans", ns) if pod_is_active(p)])
        manage_error: ApiError | None = None
        if needs_sync and not meta(rs).get("deletionTimestamp"):
            manage_error = await self._manage(rs, pods)
        await self._update_status(rs, pods, manage_error)
        if manage_error is not None:
            raise manage_error

    async def _claim(self, rs: dict, selector: dict, owned: list[dict], orphans: list[dict]) -> list[dict]:
        """ControllerRefManager.ClaimPods: keep matching owned pods, release the others, adopt orphans."""
        out: list[dict] = []
        deleting = bool(meta(rs).get("deletionTimestamp"))
        for pod in owned:
            if selector_matches(selector, meta(pod).get("labels")):
                out.append(pod)
            elif not deleting:
                await self._release(rs, pod)
        if deleting or not (selector.get("matchLabels") or selector.get("matchExpressions")):
            return out
        for pod in orphans:
            if meta(pod).get("deletionTimestamp") or not selector_matches(selector, meta(pod).get("labels")):
                continue
            adopted = await self._adopt(rs, pod)
            if adopted is not None:
                out.append(adopted)
        return out

    async def _adopt(self, rs: dict, pod: dict) -> dict | None:
        refs = list(meta(pod).get("ownerReferences") or []) + [owner_ref(rs)]
        try:
            return await self.kube.patch(api_path("v1", "pods", meta(pod)["namespace"], meta(pod)["name"]),
                                         {"metadata": {"ownerReferences": refs, "resourceVersion": meta(pod)["resourceVersion"]}},
                                         MERGE_PATCH)
        except ApiError as err:
            if err.status in (404, 409, 422):
                return None
            raise

    async def _release(self, rs: dict, pod: dict) -> None:
        refs = [r for r in meta(pod).get("ownerReferences") or [] if r.get("uid") != meta(rs).get("uid")]
        try:
            await self.kube.patch(api_path("v1", "pods", meta(pod)["namespace"], meta(pod)["name"]),
                                  {"metadata": {"ownerReferences": refs or None, "resourceVersion": meta(pod)["resourceVersion"]}},
                                  MERGE_PATCH)
        except ApiError as err:
            if err.status not in (404, 409, 422):
                raise

    async def _manage(self, rs: dict, pods: list[dict]) -> ApiError | None:
        key = object_key(rs)
        want = int((rs.get("spec") or {}).get("replicas", 1) or 0)
        diff = len(pods) - want
        if diff < 0:
            count = min(-diff, BURST_REPLICAS)
            self.expectations.expect_creations(key, count)
            created, err = await self._slow_start(rs, count)
            for _ in range(count - created):
                self.expectations.creation_observed(key)
            return err
        if diff > 0:
            count = min(diff, BURST_REPLICAS)
            related = self._related_pods(rs)
            victims = pods_to_delete(pods, related, count)
            self.expectations.expect_deletions(key, [object_key(p) for p in victims])
            results = await asyncio.gather(*(self._delete_pod(rs, p) for p in victims))
            errors = [r for r in results if r is not None]
            return errors[0] if errors else None
        return None

    def _related_pods(self, rs: dict) -> list[dict]:
        """Pods of ReplicaSets with the same controller (the deployment's other ReplicaSets)."""
        ref = controller_ref(rs)
        if ref is None:
            return list(self.pods.by_index("controller", meta(rs)["uid"]))
        out: list[dict] = []
        for sibling in self.rs.by_index("controller", ref["uid"]):
            out.extend(self.pods.by_index("controller", meta(sibling)["uid"]))
        return out

    async def _slow_start(self, rs: dict, count: int) -> tuple[int, ApiError | None]:
        """slowStartBatch: batches of 1, 2, 4, ... concurrent creations; stop at the first failure."""
        done = 0
        batch = min(count, SLOW_START_INITIAL_BATCH)
        body = pod_from_template(rs)
        while batch > 0:
            results = await asyncio.gather(*(self._create_pod(rs, body) for _ in range(batch)))
            errors = [r for r in results if r is not None]
            done += batch - len(errors)
            if errors:
                return done, errors[0]
            remaining = count - done
            batch = min(2 * batch, remaining)
        return done, None

    async def _create_pod(self, rs: dict, body: dict) -> ApiError | None:
        ns = meta(rs)["namespace"]
        try:
            pod = await self.kube.create(api_path("v1", "pods", ns), body)
        except ApiError as err:
            if err.has_cause("NamespaceTerminating"):
                return None
            self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {err.message}", component=COMPONENT)
            return err
        self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {meta(pod).get('name')}", component=COMPONENT)
        return None

    async def _delete_pod(self, rs: dict, pod: dict) -> ApiError | None:
        name, ns = meta(pod)["name"], meta(pod)["namespace"]
        try:
            await self.kube.request("DELETE", api_path("v1", "pods", ns, name))
        except ApiError as err:
            self.expectations.deletion_observed(object_key(rs), object_key(pod))
            if err.status == 404:
                return None
            self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {err.message}", component=COMPONENT)
            return err
        self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}", component=COMPONENT)
        return None

    # -- status ---------------------------------------------------------------------------------

    def calculate_status(self, rs: dict, pods: list[dict], manage_error: ApiError | None) -> dict:
        spec = rs.get("spec") or {}
        status = dict(rs.get("status") or {})
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        at = time.time()
        fully = ready = available = 0
        for p in pods:
            labels = meta(p).get("labels") or {}
            if all(labels.get(k) == v for k, v in template_labels.items()):
                fully += 1
            if pod_is_ready(p):
                ready += 1
                if pod_is_available(p, min_ready, at):
                    available += 1
        conditions = [c for c in status.get("conditions") or []]
        failure = get_condition(status, "ReplicaFailure")
        if manage_error is not None and failure is None:
            diff = len(pods) - int(spec.get("replicas", 1) or 0)
            reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
            conditions.append({"type": "ReplicaFailure", "status": "True", "lastTransitionTime": now(),
                               "reason": reason, "message": manage_error.message})
        elif manage_error is None and failure is not None:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        if conditions:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)
        status["replicas"] = len(pods)
        status["fullyLabeledReplicas"] = fully
        status["readyReplicas"] = ready
        status["availableReplicas"] = available
        return status

    async def _update_status(self, rs: dict, pods: list[dict], manage_error: ApiError | None) -> None:
        status = self.calculate_status(rs, pods, manage_error)
        generation = meta(rs).get("generation") or 0
        old = rs.get("status") or {}
        spec = rs.get("spec") or {}
        key = object_key(rs)
        if _same_status(old, status) and (old.get("observedGeneration") or 0) >= generation:
            updated = rs
        else:
            status["observedGeneration"] = generation
            status = _omit_zero(status)
            body = dict(rs)
            body["status"] = status
            try:
                updated = await self.kube.replace(
                    api_path("apps/v1", "replicasets", meta(rs)["namespace"], meta(rs)["name"], "status"), body)
            except ApiError as err:
                if err.status == 404:
                    return
                if err.status != 409:
                    raise
                # a stale cache: the informer brings the newer object and another sync
                self.queue.add(key)
                return
        min_ready = int(spec.get("minReadySeconds") or 0)
        ust = updated.get("status") or {}
        want = int((updated.get("spec") or {}).get("replicas", 1) or 0)
        if manage_error is None and min_ready > 0 and (ust.get("readyReplicas") or 0) == want \
                and (ust.get("availableReplicas") or 0) != want:
            self.queue.add_after(key, float(min_ready))


def _omit_zero(status: dict) -> dict:
    """Go's omitempty: zero counters are left out (replicas stays, it has no omitempty)."""
    return {k: v for k, v in status.items() if k == "replicas" or v not in (0, None, [], {})}


def _same_status(old: dict, new: dict) -> bool:
    for f in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if int(old.get(f) or 0) != int(new.get(f) or 0):
            return False
    return (get_condition(old, "ReplicaFailure") is None) == (get_condition(new, "ReplicaFailure") is None)


class _RSHandler(EventHandler):
    def __init__(self, c: ReplicaSetController) -> None:
        self.c = c

    def on_add(self, obj: dict) -> None:
        self.c.enqueue(obj)

    def on_update(self, old: dict, new: dict) -> None:
        self.c.enqueue(new)

    def on_delete(self, obj: dict) -> None:
        key = object_key(obj)
        self.c.expectations.delete(key)
        self.c.queue.add(key)


class _PodHandler(EventHandler):
    def __init__(self, c: ReplicaSetController) -> None:
        self.c = c

    def on_add(self, pod: dict) -> None:
        if meta(pod).get("deletionTimestamp"):
            self.on_delete(pod)
            return
        ref = controller_ref(pod)
        if ref is not None:
            rs = self.c.resolve(meta(pod).get("namespace") or "", ref)
            if rs is not None:
                key = object_key(rs)
                self.c.expectations.creation_observed(key)
                self.c.queue.add(key)
            return
        for rs in self.c.rs_for_orphan(pod):
            self.c.enqueue(rs)

    def on_update(self, old: dict, new: dict) -> None:
        labels_changed = meta(old).get("labels") != meta(new).get("labels")
        if meta(new).get("deletionTimestamp"):
            self.on_delete(new)
            if labels_changed:
                self.on_delete(old)
            return
        ns = meta(new).get("namespace") or ""
        cur_ref, old_ref = controller_ref(new), controller_ref(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            rs = self.c.resolve(ns, old_ref)
            if rs is not None:
                self.c.enqueue(rs)
        if cur_ref is not None:
            rs = self.c.resolve(ns, cur_ref)
            if rs is None:
                return
            self.c.enqueue(rs)
            min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and not pod_is_ready(old) and pod_is_ready(new):
                self.c.queue.add_after(object_key(rs), min_ready + 1.0)
            return
        if labels_changed or ref_changed:
            for rs in self.c.rs_for_orphan(new):
                self.c.enqueue(rs)

    def on_delete(self, pod: dict) -> None:
        ref = controller_ref(pod)
        if ref is None:
            return
        rs = self.c.resolve(meta(pod).get("namespace") or "", ref)
        if rs is None:
            return
        key = object_key(rs)
        self.c.expectations.deletion_observed(key, object_key(pod))
        self.c.queue.add(key)
