"""The DaemonSet controller (kube-controller-manager's ``pkg/controller/daemon``), simplified.

One pod per Node that should run it: the template's ``nodeSelector`` and required node affinity
match the Node, and the template's tolerations (plus the ones kube adds to every daemon pod:
not-ready and unreachable NoExecute; disk-, memory-, pid-pressure and unschedulable NoSchedule)
tolerate its NoSchedule and NoExecute taints. As kube does since 1.12, pods are not bound by the
controller: each gets a required node affinity on ``metadata.name`` (``matchFields``) of its Node
and the scheduler binds it (so a Node without room leaves it Pending). A pod stays on a Node that
gained a NoSchedule taint; one whose Node no longer matches, or gained an untolerated NoExecute
taint, is deleted (counted misscheduled until then); extra pods on one Node are deleted, the
oldest kept.

Pods are named ``<daemonset>-<random>`` and labelled ``controller-revision-hash`` (a hash of the
template, as the Deployment controller's pod-template-hash) and ``pod-template-generation``.
``RollingUpdate`` replaces outdated pods: unavailable ones at once, then available ones while
fewer than ``maxUnavailable`` (of desiredNumberScheduled, percentages rounded up) are
unavailable; with ``maxSurge`` the new pod starts first and the old one goes once the new one is
available. ``OnDelete`` replaces a pod only when it is deleted. Status: desiredNumberScheduled,
currentNumberScheduled, numberReady, updatedNumberScheduled, numberAvailable (ready for
minReadySeconds), numberUnavailable, numberMisscheduled, observedGeneration. Events
``SuccessfulCreate`` / ``SuccessfulDelete`` / ``FailedCreate``. No ControllerRevision objects and
no adoption of orphaned pods.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import orjson

from ..apimachinery.intstr import scaled_value
from ..apis.apps import CONTROLLER_REVISION_HASH, TEMPLATE_GENERATION
from ..kube.client import ApiError, Client, api_path
from ..kube.controller import run_workers
from ..kube.events import EventRecorder
from ..kube.informer import EnqueueKey, Informer, object_key
from ..kube.workqueue import WorkQueue
from .deployment import compute_hash
from .owned import OwnedPods, PodWriter
from .replicaset import Expectations
from .scheduler import node_affinity_matches, tolerates
from .util import meta, owner_ref, pod_is_active, pod_is_available, pod_is_ready, pod_is_terminal

log = logging.getLogger(__name__)

COMPONENT = "daemonset-controller"
POD_TEMPLATE_GENERATION = "pod-template-generation"
#: util.AddOrUpdateDaemonPodTolerations (the network-unavailable one is for hostNetwork pods)
DAEMON_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
NETWORK_UNAVAILABLE = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}


def daemon_tolerations(template_spec: dict) -> list[dict]:
    """The template's tolerations with the daemon ones added (where no toleration has the key)."""
    out = [t for t in template_spec.get("tolerations") or [] if isinstance(t, dict)]
    extra = [*DAEMON_TOLERATIONS, *([NETWORK_UNAVAILABLE] if template_spec.get("hostNetwork") else [])]
    for t in extra:
        if not any(x.get("key") == t["key"] and x.get("effect") == t["effect"] for x in out):
            out.append(dict(t))
    return out


def should_run(ds: dict, node: dict) -> tuple[bool, bool]:
    """NodeShouldRunDaemonPod: (should run a new pod there, should keep a pod it has)."""
    tspec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    if not node_affinity_matches({"spec": tspec}, node):
        return False, False
    tolerations = daemon_tolerations(tspec)
    run = keep = True
    for taint in (node.get("spec") or {}).get("taints") or []:
        if tolerates(tolerations, taint):
            continue
        if taint.get("effect") == "NoExecute":
            return False, False
        if taint.get("effect") == "NoSchedule":
            run = False
    return run, keep


def target_node(pod: dict) -> str | None:
    """util.GetTargetNodeName: the node a pod is bound to, or its ``metadata.name`` affinity."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {})
              .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or [])
    for term in terms:
        for f in term.get("matchFields") or []:
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or []) == 1:
                return str(f["values"][0])
    return None


def template_generation(ds: dict) -> str:
    return str((meta(ds).get("annotations") or {}).get(TEMPLATE_GENERATION, "1"))


def revision_hash(ds: dict) -> str:
    return compute_hash(((ds.get("spec") or {}).get("template")) or {}, (ds.get("status") or {}).get("collisionCount"))


def is_updated(pod: dict, hash_: str, generation: str) -> bool:
    """util.IsPodUpdated: the pod's template generation or revision hash is the current one."""
    labels = meta(pod).get("labels") or {}
    return labels.get(POD_TEMPLATE_GENERATION) == generation or labels.get(CONTROLLER_REVISION_HASH) == hash_


def new_pod(ds: dict, node: str, hash_: str) -> dict:
    """The template's pod for ``node``: the node affinity replaced by its ``metadata.name``."""
    template = orjson.loads(orjson.dumps((ds.get("spec") or {}).get("template") or {}))
    tmeta = template.get("metadata") or {}
    labels = dict(tmeta.get("labels") or {})
    labels[CONTROLLER_REVISION_HASH] = hash_
    labels[POD_TEMPLATE_GENERATION] = template_generation(ds)
    m: dict[str, Any] = {"generateName": meta(ds)["name"] + "-", "namespace": meta(ds)["namespace"], "labels": labels,
                         "ownerReferences": [owner_ref(ds)]}
    for f in ("annotations", "finalizers"):
        if tmeta.get(f):
            m[f] = tmeta[f]
    spec = template.get("spec") or {}
    affinity: dict = spec["affinity"] if isinstance(spec.get("affinity"), dict) else {}
    node_affinity = dict(affinity.get("nodeAffinity") or {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
    spec["affinity"] = {**affinity, "nodeAffinity": node_affinity}
    spec["tolerations"] = daemon_tolerations(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": spec}


def _by_age(pods: list[dict]) -> list[dict]:
    return sorted(pods, key=lambda p: (meta(p).get("creationTimestamp") or "", meta(p).get("name") or ""))


class DaemonSetController:
    def __init__(self, kube: Client, daemonsets: Informer, pods: Informer, nodes: Informer, recorder: EventRecorder,
                 workers: int = 3) -> None:
        self.kube = kube
        self.daemonsets = daemonsets
        self.pods = pods
        self.nodes = nodes
        self.workers = workers
        self.queue = WorkQueue("daemonset", base=0.005, cap=60.0)
        self.expectations = Expectations()
        self.writer = PodWriter(kube, recorder, COMPONENT)
        daemonsets.add_handler(_Enqueue(self))
        pods.add_handler(OwnedPods("DaemonSet", daemonsets, self.queue.add, created=self.expectations.creation_observed,
                                   deleted=self.expectations.deletion_observed))
        nodes.add_handler(lambda key, old, new: self.enqueue_all())

    async def run(self) -> None:
        await run_workers(self.queue, self.sync, self.workers)

    def enqueue_all(self) -> None:
        for ds in self.daemonsets.list():
            self.queue.add(object_key(ds))

    # -- sync -----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        ds = self.daemonsets.get(key)
        if ds is None:
            self.expectations.delete(key)
            return
        hash_ = revision_hash(ds)
        by_node: dict[str, list[dict]] = {}
        for p in self.pods.by_index("controller", meta(ds)["uid"]):
            node = target_node(p)
            if node and not meta(p).get("deletionTimestamp"):
                by_node.setdefault(node, []).append(p)
        if not meta(ds).get("deletionTimestamp") and self.expectations.satisfied(key):
            changed = await self._manage(key, ds, by_node, hash_)
            if not changed and ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type") == "RollingUpdate":
                await self._rolling_update(key, ds, by_node, hash_)
        await self._update_status(key, ds, by_node, hash_)

    async def _manage(self, key: str, ds: dict, by_node: dict[str, list[dict]], hash_: str) -> bool:
        """manage: create the missing daemon pods, delete the ones that should not be there."""
        surge = self._max_surge(ds)
        create: list[str] = []
        delete: list[dict] = []
        nodes = {meta(n)["name"]: n for n in self.nodes.list()}
        for name, node in nodes.items():
            run, keep = should_run(ds, node)
            pods = _by_age(by_node.get(name, []))
            if not keep:
                delete += pods
                continue
            failed = [p for p in pods if pod_is_terminal(p)]
            delete += failed  # kube deletes failed daemon pods so they are created anew
            pods = [p for p in pods if not pod_is_terminal(p)]
            if not pods:
                if run:
                    create.append(name)
            elif len(pods) > 1:
                if surge:  # during a surge the old and the new pod share the node
                    updated = [p for p in pods if is_updated(p, hash_, template_generation(ds))]
                    keep_pods = {object_key(pods[0]), *(object_key(p) for p in updated[:1])}
                    delete += [p for p in pods if object_key(p) not in keep_pods]
                else:
                    delete += pods[1:]
        delete += [p for n, pods in by_node.items() if n not in nodes for p in pods if not (p.get("spec") or {}).get("nodeName")]
        await self._sync_nodes(key, ds, create, delete, hash_)
        return bool(create or delete)

    async def _sync_nodes(self, key: str, ds: dict, create: list[str], delete: list[dict], hash_: str) -> None:
        if create:
            self.expectations.expect_creations(key, len(create))
            results = await asyncio.gather(*(self.writer.create(ds, new_pod(ds, n, hash_)) for n in create))
            for r in results:
                if r is None:
                    self.expectations.creation_observed(key)
        if delete:
            self.expectations.expect_deletions(key, [object_key(p) for p in delete])
            outcomes = await asyncio.gather(*(self._delete(key, ds, p) for p in delete), return_exceptions=True)
            errors = [r for r in outcomes if isinstance(r, BaseException)]
            if errors:
                raise errors[0]

    async def _delete(self, key: str, ds: dict, pod: dict) -> None:
        try:
            if not await self.writer.delete(ds, pod):
                self.expectations.deletion_observed(key, object_key(pod))
        except ApiError:
            self.expectations.deletion_observed(key, object_key(pod))
            raise

    def _desired(self, ds: dict) -> int:
        return sum(1 for n in self.nodes.list() if should_run(ds, n)[0])

    def _max_surge(self, ds: dict) -> int:
        ru = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
        try:
            return scaled_value(ru.get("maxSurge", 0), self._desired(ds), True)
        except ValueError:
            return 0

    def _max_unavailable(self, ds: dict) -> int:
        ru = ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
        try:
            n = scaled_value(ru.get("maxUnavailable", 1), self._desired(ds), True)
        except ValueError:
            n = 1
        return 1 if n == 0 and self._max_surge(ds) == 0 else n

    async def _rolling_update(self, key: str, ds: dict, by_node: dict[str, list[dict]], hash_: str) -> None:
        """rollingUpdate: replace outdated pods within maxUnavailable (or maxSurge)."""
        generation = template_generation(ds)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        at = time.time()
        max_unavailable, max_surge = self._max_unavailable(ds), self._max_surge(ds)
        unavailable = 0
        delete_now: list[dict] = []
        candidates: list[dict] = []
        surge_nodes: list[str] = []
        surging = 0
        for node, pods in sorted(by_node.items()):
            active = [p for p in pods if pod_is_active(p)]
            new = next((p for p in active if is_updated(p, hash_, generation)), None)
            old = next((p for p in _by_age(active) if not is_updated(p, hash_, generation)), None)
            if max_surge == 0:
                if new is None and old is None or new is not None and old is not None:
                    unavailable += 1
                elif new is not None:
                    if not pod_is_available(new, min_ready, at):
                        unavailable += 1
                elif old is not None:
                    if not pod_is_available(old, min_ready, at):
                        delete_now.append(old)
                    elif unavailable < max_unavailable:
                        unavailable += 1
                        candidates.append(old)
            else:
                if old is None:
                    continue
                if new is None:
                    if not pod_is_available(old, min_ready, at):
                        delete_now.append(old)
                    elif surging < max_surge:
                        surging += 1
                        surge_nodes.append(node)
                else:
                    surging += 1
                    if pod_is_available(new, min_ready, at):
                        delete_now.append(old)
        if delete_now or candidates or surge_nodes:
            await self._sync_nodes(key, ds, surge_nodes, delete_now + candidates, hash_)

    # -- status ---------------------------------------------------------------------------------

    async def _update_status(self, key: str, ds: dict, by_node: dict[str, list[dict]], hash_: str) -> None:
        generation = template_generation(ds)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        at = time.time()
        desired = current = ready = available = updated = misscheduled = 0
        for node in self.nodes.list():
            run, _ = should_run(ds, node)
            pods = _by_age([p for p in by_node.get(meta(node)["name"], []) if not pod_is_terminal(p)])
            if run:
                desired += 1
                if not pods:
                    continue
                current += 1
                pod = pods[0]
                if pod_is_ready(pod):
                    ready += 1
                    if pod_is_available(pod, min_ready, at):
                        available += 1
                if is_updated(pod, hash_, generation):
                    updated += 1
            elif pods:
                misscheduled += 1
        old = ds.get("status") or {}
        status: dict[str, Any] = {"currentNumberScheduled": current, "numberMisscheduled": misscheduled,
                                  "desiredNumberScheduled": desired, "numberReady": ready}
        optional = {"observedGeneration": meta(ds).get("generation"), "updatedNumberScheduled": updated,
                    "numberAvailable": available, "numberUnavailable": desired - available,
                    "collisionCount": old.get("collisionCount"), "conditions": old.get("conditions")}
        status.update({k: v for k, v in optional.items() if v})
        if status != old:
            body = dict(ds)
            body["status"] = status
            try:
                await self.kube.replace(api_path("apps/v1", "daemonsets", meta(ds)["namespace"], meta(ds)["name"], "status"), body)
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
    """A DaemonSet's key on add and update; a deleted one only drops its expectations."""

    def __init__(self, c: DaemonSetController) -> None:
        super().__init__(c.queue)
        self.c = c

    def on_delete(self, obj: dict) -> None:
        self.c.expectations.delete(object_key(obj))
