"""The hub's Service controller (issue 12): a Service created on the hub goes to every cluster where
its selector's workloads run, or where a placement policy says.

One :class:`ServiceController` serves every logical cluster through the ``/clusters/*`` wildcard,
as the splitter does: informers on Services, the workload kinds (Deployments, StatefulSets,
DaemonSets: whatever the hub serves), ClusterProfiles, Namespaces and CRDs (to notice a type
appear) feed one work queue of parents ``(logical cluster, namespace, name)``.

A **parent** is a Service without ``kcp.dev/cluster``. Its clusters (:func:`wanted_clusters`):

- with the annotation ``placement.fleetplane.io/policy``: the clusters the policy selects (the
  splitter's engine with strategy Duplicate: its required terms, tolerations, health and join
  grace; shares mean nothing for a Service);
- else every cluster where a workload of its namespace runs whose pod template labels the
  selector matches: a child of the splitter (or any workload labelled ``kcp.dev/cluster``) with
  replicas (a DaemonSet always counts). No selector, no policy: no clusters.

Each cluster gets one child ``<name>--<cluster>``: labelled ``kcp.dev/cluster: <cluster>`` and
``kcp.dev/owned-by``, an ownerReference to the parent (so garbage collection removes children
with it), annotated ``fleetplane.io/downstream-name: <name>`` (the Syncer creates it as
``<name>`` in its cluster), with the parent's spec except what every cluster allocates itself:
``clusterIP``, ``clusterIPs``, ports' ``nodePort``, ``healthCheckNodePort``. Make-before-break:
children of clusters that no longer qualify are deleted only once every wanted child exists.
Events ``SuccessfulCreate``/``SuccessfulDelete`` on the parent.

The parent's status (``/status``): ``loadBalancer.ingress`` is the union of the children's (the
Syncer brings each cluster's status up to its child), and a condition ``Placed`` (True with the
clusters, False with why not). The annotation ``placement.fleetplane.io/decision`` records per
cluster why it was chosen and what ingress it got; ``fleetplane placement explain service/NAME``
shows it. EndpointSlices are never synced.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import json
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...apimachinery.labels import selector_matches
from ...apimachinery.metatime import now_rfc3339
from ...apimachinery.validation import is_label_value
from ...inventory import constants as ic
from ...kube.client import MERGE_PATCH, ApiError, Client, api_path
from ...kube.controller import run_workers, stop_tasks
from ...kube.events import EventRecorder
from ...kube.informer import ClusterKey as Key
from ...kube.informer import Informer
from ...kube.informer import cluster_key as key_of
from ...kube.objects import as_int, meta
from ...kube.workqueue import WorkQueue
from ..placement import ANNOTATION_POLICY, ClusterInfo, Options, PolicyError, decide, parse_policy
from .options import ServiceControllerOptions

__all__ = ["ANNOTATION_DECISION", "ANNOTATION_DOWNSTREAM_NAME", "LABEL_CLUSTER", "LABEL_OWNED_BY", "Placement",
           "ServiceController", "child_name", "child_spec", "wanted_clusters"]

log = logging.getLogger("fleetplane.fleet.services")

LABEL_CLUSTER = "kcp.dev/cluster"
LABEL_OWNED_BY = "kcp.dev/owned-by"
ANNOTATION_DECISION = "placement.fleetplane.io/decision"
#: on a child: the name the Syncer gives it in its cluster
ANNOTATION_DOWNSTREAM_NAME = "fleetplane.io/downstream-name"
FIELD_MANAGER = "fleetplane-service-controller"
COMPONENT = "fleetplane-service-controller"
CONDITION = "Placed"
#: what each cluster allocates itself: never copied down
ALLOCATED = ("clusterIP", "clusterIPs", "healthCheckNodePort")
#: parent annotations never copied to children
_NOT_COPIED = ("kubectl.kubernetes.io/last-applied-configuration", "kcp.io/cluster", ANNOTATION_POLICY,
               ANNOTATION_DECISION, "fleetplane.io/sync-state")
#: the workload kinds whose clusters a Service follows: (group, version, plural, kind)
WORKLOADS = (("apps", "v1", "deployments", "Deployment"), ("apps", "v1", "statefulsets", "StatefulSet"),
             ("apps", "v1", "daemonsets", "DaemonSet"))
SERVICES_CRD = "services.core"


def child_name(parent: str, cluster: str) -> str:
    return f"{parent}--{cluster}"




def child_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The parent's spec without what each cluster allocates (cluster IPs, node ports)."""
    out = copy.deepcopy(dict(spec))
    for f in ALLOCATED:
        out.pop(f, None)
    for p in out.get("ports") or []:
        if isinstance(p, dict):
            p.pop("nodePort", None)
    return out


@dataclass(frozen=True)
class Placement:
    """Where a Service goes: cluster -> why; ``problem`` (reason, message) when it cannot be
    decided (a malformed policy: the current children stay)."""

    clusters: dict[str, str] = field(default_factory=dict)
    by_policy: bool = False
    problem: tuple[str, str] | None = None


def _workload_reason(kind: str, obj: Mapping[str, Any]) -> str | None:
    """Why ``obj`` (a workload assigned to a cluster) makes its cluster run the Service's
    backends, or None when it runs nothing there."""
    md = meta(obj)
    if md.get("deletionTimestamp"):
        return None
    spec = obj.get("spec") or {}
    if kind == "DaemonSet":
        return f"DaemonSet {md.get('name')} runs there"
    replicas = as_int(spec.get("replicas")) if spec.get("replicas") is not None else 1
    if replicas <= 0:
        return None
    return f"{kind} {md.get('name')} runs {replicas} replica{'s' if replicas != 1 else ''} there"


def wanted_clusters(service: Mapping[str, Any], workloads: Iterable[tuple[str, Mapping[str, Any]]],
                    fleet: Iterable[ClusterInfo], current: Iterable[str] = (), *, now: float = 0.0,
                    join_grace: float = 10.0) -> Placement:
    """The clusters ``service`` goes to (see the module docstring). ``workloads``: (kind, object)
    of the workloads in its logical cluster and namespace; ``fleet``: its logical cluster's
    ClusterProfiles; ``current``: the clusters it has children in."""
    md = meta(service)
    text = (md.get("annotations") or {}).get(ANNOTATION_POLICY)
    if text:
        try:
            policy = parse_policy(text, strategy_default="Duplicate")
        except PolicyError as err:
            return Placement(by_policy=True, problem=("InvalidPlacement", f"invalid placement policy: {err}"))
        policy = dataclasses.replace(policy, strategy="Duplicate", per_cluster=1)
        d = decide(1, policy, list(fleet), {c: 1 for c in current}, now=now,
                   options=Options(join_grace=join_grace), seed=f"{md.get('namespace')}/{md.get('name')}")
        by_name = d.by_name()
        picked = {c: "selected by its placement policy" + (f" ({by_name[c].note})" if by_name[c].note else "")
                  for c in sorted(d.assignment())}
        if not picked:
            why = "; ".join(d.reasons or d.filtered_reasons()) or "no cluster is available"
            return Placement(by_policy=True, problem=("NoClusters", f"the placement policy selects no cluster: {why}"))
        return Placement(picked, by_policy=True)
    selector = (service.get("spec") or {}).get("selector")
    if not selector:
        return Placement(problem=("NoSelector", "the Service has no selector and no placement policy: "
                                                "it goes to no cluster"))
    chosen: dict[str, str] = {}
    for kind, obj in workloads:
        wmd = meta(obj)
        cluster = (wmd.get("labels") or {}).get(LABEL_CLUSTER)
        template_labels = meta((obj.get("spec") or {}).get("template")).get("labels") or {}
        if not cluster or not selector_matches({"matchLabels": selector}, template_labels):
            continue
        reason = _workload_reason(kind, obj)
        if reason is not None and cluster not in chosen:
            chosen[cluster] = reason
    if not chosen:
        return Placement(problem=("NoClusters", "no workload its selector matches runs in any cluster"))
    return Placement(dict(sorted(chosen.items())))


def _ingress(obj: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    lb = ((obj or {}).get("status") or {}).get("loadBalancer") or {}
    return [dict(i) for i in lb.get("ingress") or [] if isinstance(i, dict)]


def _ingress_key(i: Mapping[str, Any]) -> tuple[str, str]:
    return str(i.get("ip") or ""), str(i.get("hostname") or "")


def _condition(status: str, reason: str, message: str, prev: Mapping[str, Any] | None, generation: int) -> dict:
    """A metav1.Condition, its transition time kept while the status holds."""
    c = {"type": CONDITION, "status": status, "reason": reason, "message": message[:4000],
         "observedGeneration": generation, "lastTransitionTime": now_rfc3339()}
    if prev and prev.get("status") == status and prev.get("lastTransitionTime"):
        c["lastTransitionTime"] = prev["lastTransitionTime"]
    return c


class _Fleet:
    """The ClusterProfiles of one logical cluster."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], ClusterInfo] = {}

    def infos(self) -> list[ClusterInfo]:
        chosen: dict[str, ClusterInfo] = {}
        for (_ns, name), ci in sorted(self.by_key.items(), key=lambda kv: (kv[1].created, kv[0][0])):
            chosen.setdefault(name, ci)
        return sorted(chosen.values(), key=lambda c: c.name)


class ServiceController:
    """Run with :meth:`run` (until cancelled). See the module docstring."""

    def __init__(self, hub: Client, options: ServiceControllerOptions | None = None) -> None:
        self.hub = hub
        self.opts = options or ServiceControllerOptions()
        self.queue = WorkQueue("service-controller", jitter=True)
        self.events = EventRecorder(hub, COMPONENT, instance=COMPONENT, max_pending=5000, per_logical_cluster=True)
        self.type_changed = asyncio.Event()

        def informer(path: str, on_change: Any, name: str) -> Informer:
            return Informer(hub, path, on_change, name=name, key=key_of, missing_ok=True, wake=self.type_changed)

        self.services = informer("/clusters/*/api/v1/services", self._on_service, "services")
        self.workloads = {kind: informer(f"/clusters/*/apis/{g}/{v}/{plural}", self._workload_handler(kind), plural)
                          for g, v, plural, kind in WORKLOADS}
        self.profiles = informer(f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}", self._on_profile,
                                 "clusterprofiles")
        self.namespaces = informer("/clusters/*/api/v1/namespaces", self._on_namespace, "namespaces")
        self.crds = informer("/clusters/*/apis/apiextensions.k8s.io/v1/customresourcedefinitions", self._on_crd, "crds")
        self.fleets: dict[str, _Fleet] = {}
        #: parent -> cluster -> child key
        self.children: dict[Key, dict[str, Key]] = {}
        self._child_owner: dict[Key, Key] = {}
        self.reconciles = 0
        self.ready = asyncio.Event()

    def informers(self) -> list[Informer]:
        return [self.crds, self.namespaces, self.profiles, *self.workloads.values(), self.services]

    async def run(self) -> None:
        tasks = [asyncio.create_task(i.run(), name=f"service-controller-informer-{i.name}") for i in self.informers()]
        tasks.append(asyncio.create_task(self.events.run(), name="service-controller-events"))
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers()))
            self.ready.set()
            log.info("service controller: informers synced (%d services)", len(self.services.cache))
            tasks.append(asyncio.create_task(run_workers(self.queue, self.reconcile, self.opts.workers),
                                             name="service-controller-workers"))
            await asyncio.gather(*tasks)
        finally:
            await stop_tasks(tasks)
            self.queue.close()

    # -- events from the informers ------------------------------------------------------------

    def _parents_in(self, lc: str, ns: str | None = None) -> list[Key]:
        return [k for k, o in list(self.services.cache.items())
                if k[0] == lc and (ns is None or k[1] == ns) and LABEL_CLUSTER not in (meta(o).get("labels") or {})]

    def _on_crd(self, key: Key, old: dict | None, new: dict | None) -> None:
        name = meta(new or old).get("name") or ""
        if name == SERVICES_CRD or name in {f"{p}.{g}" for g, _, p, _ in WORKLOADS}:
            self.type_changed.set()
            if new is not None and old is None:
                for pk in self._parents_in(key[0]):
                    self.queue.add(pk)

    def _on_namespace(self, key: Key, old: dict | None, new: dict | None) -> None:
        if (meta(old).get("labels") or {}) != (meta(new).get("labels") or {}):
            for (plc, pns, pname), obj in list(self.profiles.cache.items()):
                if plc == key[0] and pns == key[2]:
                    self._on_profile((plc, pns, pname), obj, obj)

    def _on_profile(self, key: Key, old: dict | None, new: dict | None) -> None:
        lc, ns, name = key
        if self.opts.profile_namespace and ns != self.opts.profile_namespace:
            return
        fleet = self.fleets.setdefault(lc, _Fleet())
        if new is None:
            fleet.by_key.pop((ns, name), None)
        else:
            ns_labels = meta(self.namespaces.cache.get((lc, "", ns))).get("labels") or {}
            ci = ClusterInfo.from_profile(new, ns_labels)
            prev = fleet.by_key.get((ns, name))
            if prev is not None and prev.fingerprint() == ci.fingerprint() and prev.created == ci.created:
                return
            fleet.by_key[(ns, name)] = ci
        for pk in self._parents_in(lc):
            if (meta(self.services.cache.get(pk)).get("annotations") or {}).get(ANNOTATION_POLICY):
                self.queue.add(pk)

    def _workload_handler(self, kind: str) -> Any:
        def handle(key: Key, old: dict | None, new: dict | None) -> None:
            def where(o: dict | None) -> Any:
                return None if o is None else ((meta(o).get("labels") or {}).get(LABEL_CLUSTER),
                                               meta((o.get("spec") or {}).get("template")).get("labels"),
                                               _workload_reason(kind, o))
            if where(old) == where(new) or (LABEL_CLUSTER not in (meta(new or old).get("labels") or {})):
                return
            for pk in self._parents_in(key[0], key[1]):
                self.queue.add(pk)
        return handle

    def _on_service(self, key: Key, old: dict | None, new: dict | None) -> None:
        obj = new or old or {}
        if LABEL_CLUSTER in (meta(obj).get("labels") or {}) or (old is not None and LABEL_CLUSTER in (meta(old).get("labels") or {})):
            before = self._child_owner.get(key)
            self._index_child(key, new)
            for owner in {before, self._child_owner.get(key)}:
                if owner is not None:
                    self.queue.add(owner)
            return
        if new is None:
            self.children.pop(key, None)
            return
        if old is None or self._relevant(old) != self._relevant(new):
            self.queue.add(key)

    @staticmethod
    def _relevant(obj: dict) -> Any:
        md = meta(obj)
        ann = {k: v for k, v in (md.get("annotations") or {}).items() if k not in (ANNOTATION_DECISION, "fleetplane.io/sync-state")}
        return md.get("uid"), md.get("labels"), ann, md.get("deletionTimestamp"), obj.get("spec")

    def _index_child(self, key: Key, obj: dict | None) -> None:
        prev = self._child_owner.pop(key, None)
        if prev is not None:
            kids = self.children.get(prev) or {}
            for c, k in list(kids.items()):
                if k == key:
                    del kids[c]
        if obj is None:
            return
        md = meta(obj)
        cluster = (md.get("labels") or {}).get(LABEL_CLUSTER)
        ref = next((r for r in md.get("ownerReferences") or () if r.get("controller") and r.get("kind") == "Service"), None)
        if not cluster or ref is None:
            return
        pk: Key = (key[0], key[1], ref.get("name") or "")
        self._child_owner[key] = pk
        self.children.setdefault(pk, {})[cluster] = key

    def remember(self, obj: dict) -> None:
        """A child just written, into the cache and index (its watch event follows)."""
        key = key_of(obj)
        cur = self.services.cache.get(key)
        if cur is not None and as_int(meta(cur).get("resourceVersion")) >= as_int(meta(obj).get("resourceVersion")):
            return
        self.services.cache[key] = obj
        self._index_child(key, obj)

    # -- reconcile ----------------------------------------------------------------------------

    def workloads_in(self, lc: str, ns: str) -> list[tuple[str, dict]]:
        return [(kind, o) for kind, inf in self.workloads.items() for k, o in list(inf.cache.items())
                if k[0] == lc and k[1] == ns]

    def children_of(self, key: Key, parent: dict) -> dict[str, dict]:
        uid = meta(parent).get("uid")
        out = {}
        for cluster, ck in (self.children.get(key) or {}).items():
            obj = self.services.cache.get(ck)
            if obj is not None and any(r.get("uid") == uid and r.get("controller") for r in meta(obj).get("ownerReferences") or ()):
                out[cluster] = obj
        return out

    async def reconcile(self, key: Key) -> None:
        self.reconciles += 1
        parent = self.services.cache.get(key)
        md = meta(parent)
        if parent is None or md.get("deletionTimestamp") or LABEL_CLUSTER in (md.get("labels") or {}):
            return  # children go with the parent (garbage collection by ownerReference)
        await _Reconcile(self, key, parent).run()


class _Reconcile:
    def __init__(self, sc: ServiceController, key: Key, parent: dict) -> None:
        self.sc, self.key, self.parent = sc, key, parent
        self.lc, self.ns, self.name = key
        self.md = meta(parent)
        self.path = f"/clusters/{self.lc}" + api_path("v1", "services", self.ns)

    async def run(self) -> None:
        sc = self.sc
        children = sc.children_of(self.key, self.parent)
        fleet = (sc.fleets.get(self.lc) or _Fleet()).infos()
        placement = wanted_clusters(self.parent, sc.workloads_in(self.lc, self.ns), fleet, children,
                                    now=time.time(), join_grace=sc.opts.join_grace)
        wanted = dict(placement.clusters)
        if placement.problem is not None and placement.problem[0] == "InvalidPlacement":
            wanted = {c: "kept: " + placement.problem[1] for c in children}  # nothing decided: nothing moves
        conflicts = []
        for cluster in wanted:
            other = sc.services.cache.get((self.lc, self.ns, child_name(self.name, cluster)))
            if cluster not in children and other is not None:
                conflicts.append(cluster)
        for c in conflicts:
            wanted.pop(c)
        results = await asyncio.gather(*(self._write(children.get(c), c) for c in sorted(wanted)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        for c, r in zip(sorted(wanted), results, strict=True):
            if isinstance(r, dict):
                children[c] = r
        # make-before-break: stale children go only once every wanted one exists
        if not errors and all(c in children for c in wanted):
            for c in sorted(set(children) - set(wanted)):
                await self._delete(children.pop(c), c)
        await self._write_status(children, placement, wanted, conflicts)
        if errors:
            raise errors[0]

    def _desired(self, cluster: str) -> dict[str, Any]:
        labels = dict(self.md.get("labels") or {})
        labels[LABEL_CLUSTER] = cluster
        labels[LABEL_OWNED_BY] = self.name if is_label_value(self.name) else self.name[:63]
        ann = {k: v for k, v in (self.md.get("annotations") or {}).items() if k not in _NOT_COPIED}
        ann[ANNOTATION_DOWNSTREAM_NAME] = self.name
        ref = {"apiVersion": "v1", "kind": "Service", "name": self.name, "uid": self.md.get("uid"),
               "controller": True, "blockOwnerDeletion": True}
        return {"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": child_name(self.name, cluster), "namespace": self.ns, "labels": labels,
                             "annotations": ann, "ownerReferences": [ref]},
                "spec": child_spec(self.parent.get("spec") or {})}

    async def _write(self, child: dict | None, cluster: str) -> dict | None:
        want = self._desired(cluster)
        hub, sc = self.sc.hub, self.sc
        if child is None:
            try:
                created = await hub.create(self.path, want, FIELD_MANAGER)
            except ApiError as err:
                if err.status == 409:
                    return None  # a namesake (or one being deleted): the next event retries
                raise
            sc.remember(created)
            sc.events.event(self.parent, "Normal", "SuccessfulCreate",
                            f"Created service {want['metadata']['name']} in cluster {cluster}")
            return created
        cmd = meta(child)
        labels, ann = cmd.get("labels") or {}, cmd.get("annotations") or {}
        if (child_spec(child.get("spec") or {}) == want["spec"]
                and all(labels.get(k) == v for k, v in want["metadata"]["labels"].items())
                and all(ann.get(k) == v for k, v in want["metadata"]["annotations"].items())):
            return child
        new = copy.deepcopy(child)
        new["metadata"]["labels"] = {**labels, **want["metadata"]["labels"]}
        new["metadata"]["annotations"] = {**ann, **want["metadata"]["annotations"]}
        kept = {f: v for f, v in (child.get("spec") or {}).items() if f in ALLOCATED}
        new["spec"] = {**want["spec"], **kept}
        try:
            updated = await hub.replace(f"{self.path}/{cmd['name']}", new, FIELD_MANAGER)
        except ApiError as err:
            if err.status in (404, 409):
                return child  # changed meanwhile: its event brings us back
            raise
        sc.remember(updated)
        return updated

    async def _delete(self, child: dict, cluster: str) -> None:
        cmd = meta(child)
        with contextlib.suppress(ApiError):
            await self.sc.hub.delete(f"{self.path}/{cmd['name']}", uid=cmd.get("uid"))
            self.sc.events.event(self.parent, "Normal", "SuccessfulDelete",
                                 f"Deleted service {cmd['name']} from cluster {cluster}")

    async def _write_status(self, children: dict[str, dict], placement: Placement, wanted: dict[str, str],
                            conflicts: list[str]) -> None:
        ingress: dict[tuple[str, str], dict[str, Any]] = {}
        per_cluster: dict[str, Any] = {}
        for c in sorted(children):
            got = _ingress(children[c])
            for i in got:
                ingress.setdefault(_ingress_key(i), i)
            per_cluster[c] = {"child": meta(children[c]).get("name"), "reason": wanted.get(c, "leaving"),
                              "ingress": [i.get("ip") or i.get("hostname") for i in got]}
        prev = self.parent.get("status") or {}
        prev_cond = next((x for x in prev.get("conditions") or [] if x.get("type") == CONDITION), None)
        generation = as_int(self.md.get("generation"))
        if placement.problem is not None:
            cond = _condition("False", placement.problem[0], placement.problem[1], prev_cond, generation)
        elif conflicts:
            cond = _condition("False", "PlacementFailed", "; ".join(
                f"{c}: {child_name(self.name, c)} exists and is not controlled by Service {self.name}" for c in conflicts),
                prev_cond, generation)
        else:
            cond = _condition("True", "ClustersSelected", "in " + ", ".join(
                f"{c} ({why})" for c, why in wanted.items()), prev_cond, generation)
        status = copy.deepcopy(prev)
        lb = [ingress[k] for k in sorted(ingress)]
        status["loadBalancer"] = {"ingress": lb} if lb else {}
        status["conditions"] = [x for x in prev.get("conditions") or [] if x.get("type") != CONDITION] + [cond]
        same_cond = prev_cond is not None and {k: v for k, v in prev_cond.items() if k != "lastTransitionTime"} == {
            k: v for k, v in cond.items() if k != "lastTransitionTime"}
        if not (same_cond and (prev.get("loadBalancer") or {}) == status["loadBalancer"]):
            try:
                await self.sc.hub.patch(f"{self.path}/{self.name}/status",
                                        {"status": {"loadBalancer": {"ingress": lb or None}, "conditions": status["conditions"]}},
                                        MERGE_PATCH, FIELD_MANAGER)
            except ApiError as err:
                if err.status != 404:
                    raise
        text = json.dumps({"policy": placement.by_policy, "clusters": per_cluster}, sort_keys=True, separators=(",", ":"))
        if (self.md.get("annotations") or {}).get(ANNOTATION_DECISION) != text:
            with contextlib.suppress(ApiError):
                await self.sc.hub.patch(f"{self.path}/{self.name}", {"metadata": {"annotations": {ANNOTATION_DECISION: text}}},
                                        MERGE_PATCH, FIELD_MANAGER)
