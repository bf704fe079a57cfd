"""The Deployment Splitter and the ClusterDaemonSet controller (issue 5), generalized to DaemonSets
and StatefulSets (issue 12).

One :class:`Splitter` serves every logical cluster of a hub through the ``/clusters/*`` wildcard:
informers on Deployments, DaemonSets, StatefulSets, ClusterProfiles, Namespaces (ClusterSet
labels), CRDs (to notice when a type starts being served) and ClusterDaemonSets feed one work queue of parents
``(kind, logical cluster, namespace, name)``; a parent's ClusterProfiles are those of its own
logical cluster. Objects carry ``kcp.io/cluster`` naming their logical cluster; every write goes
to ``/clusters/<lc>/...``. Nothing polls: grace periods are timers.

For a **Deployment without** ``kcp.dev/cluster`` (a parent), a reconcile:

1. reads its policy (``placement.fleetplane.io/policy``), the fleet (ClusterProfiles, KEP-4322
   consumer role: ControlPlaneHealthy must be True) and its children (Deployments it controls,
   ``<name>--<cluster>``);
2. notes children whose replicas exist but stay unavailable for longer than ``unschedulable_grace``
   while the workload is available in some other cluster (or whose cluster reports them
   unschedulable in ``placement.fleetplane.io/unschedulable``): the cluster is then *limited* for
   this parent to what did become available (``Limit``), which moves the rest elsewhere if there
   is room (they stay if there is none); limits expire after ``limit_ttl`` (probing back);
3. decides the split (:func:`fleetplane.fleet.placement.decide`) and plans the next step
   make-before-break (:mod:`.rollout`);
4. creates, updates (template and replicas) and deletes children: labelled ``kcp.dev/cluster``
   and ``kcp.dev/owned-by``, ownerReference to the parent (controller, blockOwnerDeletion),
   annotated with the spec's hash and the parent generation they carry;
5. writes the parent's status through ``/status`` (:mod:`.status`), the decision summary as the
   annotation ``placement.fleetplane.io/decision`` (what ``fleetplane placement explain`` shows
   beside its own computation), and Events on changes.

A **ClusterDaemonSet** (``fleet.fleetplane.io/v1alpha1``) goes through the same steps with the
``Duplicate`` strategy: one child Deployment with ``replicasPerCluster`` replicas in every
available cluster its placement allows. So does a **DaemonSet** (one child DaemonSet per
cluster), and a **StatefulSet** as a Deployment does, except that its children get contiguous
ordinal ranges, moved one ordinal at a time (:mod:`.ordinals`). What differs per kind is one
:class:`.kinds.WorkloadKind`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...apimachinery.validation import is_label_value
from ...inventory import constants as ic
from ...kube.client import JSON_PATCH, MERGE_PATCH, ApiError, Client, api_path
from ...kube.controller import run_workers, stop_tasks
from ...kube.events import EventRecorder
from ...kube.informer import ClusterKey as Key
from ...kube.informer import Informer
from ...kube.informer import cluster_key as key_of
from ...kube.objects import as_int, meta
from ...kube.workqueue import WorkQueue
from ..cluster.crd import LABEL_CLUSTER as LABEL_SYNCED_CLUSTER
from ..hpas import ANNOTATION_HPA
from ..placement import (
    ANNOTATION_POLICY,
    ClusterInfo,
    Decision,
    Limit,
    Options,
    PolicyError,
    decide,
    requests_of,
)
from ..placement import overrides as ov
from ..placement.engine import Prepared
from ..placement.rollout import Named, RolloutPolicy
from ..syncer.constants import finalizer as syncer_finalizer
from . import history, ordinals, stages
from . import status as st
from .crd import CDS_GROUP, CDS_KIND, CDS_PLURAL, CDS_VERSION
from .eviction import Eviction, Partitions, PartitionState
from .eviction import step as partition_step
from .kinds import ANNOTATION_DOWNSTREAM_NAME, KINDS, WorkloadKind
from .options import SplitterOptions
from .rollout import ChildView, Plan, plan
from .stages import ANNOTATION_PREFIX as ROLLOUT_PREFIX
from .stages import ANNOTATION_STATE as ROLLOUT_STATE

__all__ = ["ANNOTATION_DECISION", "ANNOTATION_SPEC_HASH",
           "ANNOTATION_UNSCHEDULABLE", "LABEL_CLUSTER", "LABEL_OWNED_BY", "Splitter", "SplitterOptions",
           "child_name"]

log = logging.getLogger("fleetplane.fleet.splitter")

LABEL_CLUSTER = "kcp.dev/cluster"
LABEL_OWNED_BY = "kcp.dev/owned-by"
ANNOTATION_DECISION = "placement.fleetplane.io/decision"
ANNOTATION_SPEC_HASH = "placement.fleetplane.io/spec-hash"
#: optional, on a child, from whoever sees its pods: JSON {"replicas": N, "message": "..."}
ANNOTATION_UNSCHEDULABLE = "placement.fleetplane.io/unschedulable"
FIELD_MANAGER = "fleetplane-splitter"
COMPONENT = "fleetplane-splitter"
#: parent annotations never copied to children
_NOT_COPIED = ("kubectl.kubernetes.io/last-applied-configuration", "kcp.io/cluster", ANNOTATION_POLICY,
               ANNOTATION_DECISION, "deployment.kubernetes.io/revision", "fleetplane.io/sync-state", ANNOTATION_HPA)

#: on a cold start (the parent has never had an observedGeneration) its status waits until every
#: child's cluster has observed it (each child's status comes up once), at most STATUS_COLD_DELAY
#: seconds at a time, so it is written once rather than once per child (issue 16 item 5); a
#: placement problem (the Placement condition False) is written at once, and so is every status
#: after the first complete one
STATUS_COLD_DELAY = 6.0

#: the apps/v1 kinds that are parents on the hub and children of the splitter's parents
APPS_KINDS = ("Deployment", "DaemonSet", "StatefulSet")
ParentKey = tuple[str, str, str, str]  # kind, logical cluster, namespace, name


def child_name(parent: str, cluster: str) -> str:
    return f"{parent}--{cluster}"


def _path(lc: str, group: str, version: str, plural: str, ns: str = "", name: str = "", sub: str = "") -> str:
    return f"/clusters/{lc}" + api_path(f"{group}/{version}" if group else version, plural, ns, name, sub)



def _hash(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%SZ", time.gmtime(t))



@dataclass
class _Parent:
    uid: str
    short_since: dict[str, float] = field(default_factory=dict)
    limits: dict[str, Limit] = field(default_factory=dict)
    prepared: Prepared | None = None
    prepared_key: tuple = ()
    placement: tuple[str, str] = ("", "")
    split: dict[str, int] = field(default_factory=dict)
    waiting: frozenset = frozenset()
    partitions: PartitionState = field(default_factory=PartitionState)
    #: when a first status was first held back (_write_status)
    status_pending: float | None = None
    #: each cluster's child with its overrides, while nothing it depends on changes
    overrides: ov.Cache = field(default_factory=ov.Cache)
    #: the progressive rollout (:mod:`.stages`), loaded from the parent once, then kept here
    rollout: stages.RolloutState | None = None
    rollout_loaded: bool = False
    #: the revision number last recorded in the history objects (:mod:`.history`)
    history_number: int = 0


class _Fleet:
    """The ClusterProfiles of one logical cluster, as ClusterInfo objects that stay the same
    object while the profile's placement-relevant content does not change."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], ClusterInfo] = {}  # (namespace, name)
        self.infos: list[ClusterInfo] = []
        self.version = 0

    def rebuild(self) -> bool:
        chosen: dict[str, ClusterInfo] = {}
        for (_ns, name), ci in sorted(self.by_key.items(), key=lambda kv: (kv[1].created, kv[0][0])):
            chosen.setdefault(name, ci)  # same name in two namespaces: the older profile wins
        infos = sorted(chosen.values(), key=lambda c: c.name)
        if [id(c) for c in infos] == [id(c) for c in self.infos]:
            return False
        self.infos = infos
        self.version += 1
        return True

    def get(self, name: str) -> ClusterInfo | None:
        for ci in self.infos:
            if ci.name == name:
                return ci
        return None


class Splitter:
    """Run with :meth:`run` (until cancelled). See the module docstring."""

    def __init__(self, hub: Client, options: SplitterOptions | None = None) -> None:
        self.hub = hub
        self.opts = options or SplitterOptions()
        self.queue = WorkQueue("splitter", jitter=True)
        self.events = EventRecorder(hub, COMPONENT, instance=COMPONENT, max_pending=5000, per_logical_cluster=True)
        #: set when a type's CRD changes (its informer, waiting for the type, lists again)
        self.type_changed = {k: asyncio.Event() for k in (*APPS_KINDS, CDS_KIND)}

        def informer(path: str, on_change: Any, name: str, wake: asyncio.Event | None = None) -> Informer:
            # every logical cluster (/clusters/*); a 404 means no logical cluster serves the type yet
            return Informer(hub, path, on_change, name=name, key=key_of, missing_ok=True, wake=wake)

        #: apps/v1 Deployments, DaemonSets, StatefulSets: parents and children alike
        self.workloads = {k: informer(f"/clusters/*/apis/apps/v1/{KINDS[k].plural}", self._on_workload(k),
                                      KINDS[k].plural, self.type_changed[k]) for k in APPS_KINDS}
        self.deployments = self.workloads["Deployment"]
        self.profiles = informer(f"/clusters/*/apis/{ic.GROUP}/{ic.VERSION}/{ic.PLURAL}", self._on_profile,
                                 "clusterprofiles")
        self.namespaces = informer("/clusters/*/api/v1/namespaces", self._on_namespace, "namespaces")
        self.crds = informer("/clusters/*/apis/apiextensions.k8s.io/v1/customresourcedefinitions", self._on_crd, "crds")
        self.cds = informer(f"/clusters/*/apis/{CDS_GROUP}/{CDS_VERSION}/{CDS_PLURAL}", self._on_cds,
                            "clusterdaemonsets", self.type_changed[CDS_KIND])
        self.fleets: dict[str, _Fleet] = {}
        self.parents: dict[str, set[ParentKey]] = {}  # lc -> parents
        self.children: dict[ParentKey, dict[str, Key]] = {}  # parent -> cluster -> child key
        self._child_owner: dict[tuple[str, Key], ParentKey] = {}  # (child kind, child) -> parent
        self.state: dict[ParentKey, _Parent] = {}
        #: (logical cluster, cluster) -> parents whose replicas stay unschedulable there: the cluster is
        #: full, so no parent grows there (a soft limit at what it runs) while it lasts
        self.full: dict[tuple[str, str], dict[ParentKey, str]] = {}
        self.reconciles = 0
        self.writes = 0
        self.ready = asyncio.Event()

    # -- running ------------------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        out = [self.crds, self.namespaces, self.profiles, *self.workloads.values()]
        if self.opts.cluster_daemonsets:
            out.append(self.cds)
        return out

    async def run(self) -> None:
        tasks = [asyncio.create_task(i.run(), name=f"splitter-informer-{i.name}") for i in self.informers()]
        tasks.append(asyncio.create_task(self.events.run(), name="splitter-events"))
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers()))
            self.ready.set()
            log.info("splitter: informers synced (%d deployments, %d cluster profiles)",
                     len(self.deployments.cache), len(self.profiles.cache))
            # one parent's trouble never stops the others: a failed reconcile is retried with backoff
            tasks.append(asyncio.create_task(run_workers(self.queue, self.reconcile, self.opts.workers),
                                             name="splitter-workers"))
            await asyncio.gather(*tasks)
        finally:
            await stop_tasks(tasks)
            self.queue.close()

    # -- events from the informers ------------------------------------------------------------

    def _on_crd(self, key: Key, old: dict | None, new: dict | None) -> None:
        name = meta(new or old).get("name") or ""
        for k, wake in self.type_changed.items():
            if name != KINDS[k].crd_name:
                continue
            wake.set()
            if new is not None and old is None and k in APPS_KINDS:
                # children of this kind can be created in this logical cluster now
                for pk in self.parents.get(key[0], ()):
                    if KINDS[pk[0]].child_kind == k:
                        self.queue.add(pk)

    def _on_namespace(self, key: Key, old: dict | None, new: dict | None) -> None:
        if (meta(old).get("labels") or {}) == (meta(new).get("labels") or {}):
            return
        lc = key[0]
        ns = key[2]
        for (pk_lc, pns, pname), obj in list(self.profiles.cache.items()):
            if pk_lc == lc and pns == ns:
                self._on_profile((pk_lc, pns, pname), obj, obj)

    def _namespace_labels(self, lc: str, ns: str) -> dict[str, str]:
        obj = self.namespaces.cache.get((lc, "", ns))
        return meta(obj).get("labels") or {}

    def _on_profile(self, key: Key, old: dict | None, new: dict | None) -> None:
        lc, ns, name = key
        if self.opts.profile_namespace and ns != self.opts.profile_namespace:
            return
        fleet = self.fleets.setdefault(lc, _Fleet())
        prev = fleet.by_key.get((ns, name))
        if new is None:
            fleet.by_key.pop((ns, name), None)
        else:
            ci = ClusterInfo.from_profile(new, self._namespace_labels(lc, ns))
            if prev is not None and prev.fingerprint() == ci.fingerprint() and prev.created == ci.created:
                return  # nothing placement reads changed (e.g. lastObservedTime)
            fleet.by_key[(ns, name)] = ci
        if fleet.rebuild():
            for pk in self.parents.get(lc, ()):
                self.queue.add(pk)

    def _on_workload(self, kind: str) -> Any:
        """The event handler of one apps/v1 kind's informer: children are indexed (and their parent
        queued); objects without ``kcp.dev/cluster`` that no parent controls are parents."""
        wk = KINDS[kind]

        def on_change(key: Key, old: dict | None, new: dict | None) -> None:
            self._on_object(wk, key, old, new)
        return on_change

    def _on_object(self, wk: WorkloadKind, key: Key, old: dict | None, new: dict | None) -> None:
        obj = new or old or {}
        labels = meta(obj).get("labels") or {}
        lc, ns, name = key
        if LABEL_CLUSTER in labels or (old is not None and LABEL_CLUSTER in (meta(old).get("labels") or {})):
            before = self._child_owner.get((wk.kind, key))
            self._index_child(wk.kind, key, new)
            for owner in {before, self._child_owner.get((wk.kind, key))}:
                if owner is not None:
                    self.queue.add(owner)
            if LABEL_CLUSTER in labels:
                return
        pk: ParentKey = (wk.kind, lc, ns, name)
        controlled = any(r.get("controller") and wk.owns(r) for r in meta(obj).get("ownerReferences") or ())
        if new is None or LABEL_CLUSTER in labels or controlled:
            self.parents.get(lc, set()).discard(pk)
            self.forget(pk)
            return
        self.parents.setdefault(lc, set()).add(pk)
        if old is None or self._relevant(old) != self._relevant(new):
            self.queue.add(pk)

    def forget(self, pk: ParentKey) -> None:
        self.state.pop(pk, None)
        self.note_full(pk, {})

    def note_full(self, pk: ParentKey, limits: Mapping[str, Limit]) -> None:
        """Record where ``pk``'s replicas stay unschedulable (its limits)."""
        lc = pk[1]
        for key in [k for k, parents in self.full.items() if k[0] == lc and pk in parents]:
            if key[1] not in limits:
                del self.full[key][pk]
                if not self.full[key]:
                    del self.full[key]
        for c, lim in limits.items():
            self.full.setdefault((lc, c), {})[pk] = lim.message

    def full_limits(self, pk: ParentKey, current: Mapping[str, int], now: float) -> dict[str, Limit]:
        """Soft limits (at what runs there) on the clusters other parents found full."""
        out = {}
        for (lc, c), parents in self.full.items():
            if lc != pk[1]:
                continue
            others = [(k, m) for k, m in parents.items() if k != pk]
            if others:
                (_, _, ns, name), msg = others[0]
                out[c] = Limit(max(0, current.get(c, 0)), now,
                               f"full: {ns}/{name} has replicas that stay unschedulable there ({msg})")
        return out

    def _on_cds(self, key: Key, old: dict | None, new: dict | None) -> None:
        lc, ns, name = key
        pk: ParentKey = (CDS_KIND, lc, ns, name)
        if new is None:
            self.parents.get(lc, set()).discard(pk)
            self.forget(pk)
            return
        self.parents.setdefault(lc, set()).add(pk)
        if old is None or self._relevant(old) != self._relevant(new):
            self.queue.add(pk)

    @staticmethod
    def _relevant(obj: dict) -> Any:
        md = meta(obj)
        ann = {k: v for k, v in (md.get("annotations") or {}).items() if k not in (ANNOTATION_DECISION, ROLLOUT_STATE)}
        return (md.get("uid"), md.get("generation"), md.get("labels"), ann, md.get("deletionTimestamp"),
                obj.get("spec"))

    def remember_child(self, kind: str, obj: dict) -> None:
        """Put a child (of ``kind``) just written into the cache and index (its watch event follows)."""
        key = key_of(obj)
        cache = self.workloads[kind].cache
        cur = cache.get(key)
        if cur is not None and as_int(meta(cur).get("resourceVersion")) >= as_int(meta(obj).get("resourceVersion")):
            return
        cache[key] = obj
        self._index_child(kind, key, obj)

    def _index_child(self, kind: str, key: Key, obj: dict | None) -> None:
        prev = self._child_owner.pop((kind, key), None)
        if prev is not None:
            kids = self.children.get(prev)
            if kids is not None:
                for c, k in list(kids.items()):
                    if k == key:
                        del kids[c]
                if not kids:
                    self.children.pop(prev, None)
        if obj is None:
            return
        md = meta(obj)
        cluster = (md.get("labels") or {}).get(LABEL_CLUSTER)
        ref = next((r for r in md.get("ownerReferences") or () if r.get("controller")), None)
        if not cluster or ref is None or not KINDS[kind].owns(ref):
            return
        pk: ParentKey = (ref["kind"], key[0], key[1], ref.get("name") or "")
        self._child_owner[(kind, key)] = pk
        self.children.setdefault(pk, {})[cluster] = key

    def parent_cache(self, kind: str) -> dict[Key, dict]:
        return self.cds.cache if kind == CDS_KIND else self.workloads[kind].cache

    # -- reconcile ----------------------------------------------------------------------------

    async def reconcile(self, key: ParentKey) -> None:
        self.reconciles += 1
        kind, lc, ns, name = key
        parent = self.parent_cache(kind).get((lc, ns, name))
        md = meta(parent)
        if parent is None or md.get("deletionTimestamp") or (kind in APPS_KINDS and (
                LABEL_CLUSTER in (md.get("labels") or {})
                or any(r.get("controller") and KINDS[kind].owns(r) for r in md.get("ownerReferences") or ()))):
            self.forget(key)
            return
        s = self.state.get(key)
        if s is None or s.uid != md.get("uid"):
            s = self.state[key] = _Parent(uid=md.get("uid") or "")
            self._load_limits(s, parent)
        await _Reconcile(self, key, parent, s).run()

    def _load_limits(self, s: _Parent, parent: dict) -> None:
        """Limits survive a restart in the decision annotation."""
        raw = (meta(parent).get("annotations") or {}).get(ANNOTATION_DECISION)
        if not raw:
            return
        with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
            doc = json.loads(raw)
            for c, lim in (doc.get("limits") or {}).items():
                s.limits[c] = Limit(int(lim["max"]), float(lim["since"]), str(lim.get("message") or ""))
            s.split = {str(k): int(v) for k, v in (doc.get("shares") or {}).items()}
        with contextlib.suppress(ValueError, TypeError, AttributeError, KeyError):
            for c, ev in (doc.get("evicted") or {}).items():
                s.partitions.evictions[str(c)] = Eviction.from_dict(ev)

    def fleet(self, lc: str) -> _Fleet:
        return self.fleets.get(lc) or _Fleet()

    def children_of(self, key: ParentKey, parent: dict) -> tuple[dict[str, dict], list[str]]:
        """The children this parent controls (cluster -> object), and clusters whose child name is
        taken by an object it does not control."""
        uid = meta(parent).get("uid")
        lc, ns, name = key[1], key[2], key[3]
        cache = self.workloads[KINDS[key[0]].child_kind].cache
        out: dict[str, dict] = {}
        for cluster, ck in (self.children.get(key) or {}).items():
            obj = cache.get(ck)
            if obj is None:
                continue
            refs = meta(obj).get("ownerReferences") or ()
            if any(r.get("uid") == uid and r.get("controller") for r in refs):
                out[cluster] = obj
        conflicts = []
        for ci in self.fleet(lc).infos:
            if ci.name in out:
                continue
            other = cache.get((lc, ns, child_name(name, ci.name)))
            if other is not None:
                refs = meta(other).get("ownerReferences") or ()
                if not any(r.get("uid") == uid for r in refs):
                    conflicts.append(ci.name)
        return out, conflicts


class _Reconcile:
    """One reconcile of one parent (any of :data:`.kinds.KINDS`)."""

    def __init__(self, sp: Splitter, key: ParentKey, parent: dict, s: _Parent) -> None:
        self.sp, self.key, self.parent, self.s = sp, key, parent, s
        self.kind, self.lc, self.ns, self.name = key
        self.wk = KINDS[self.kind]
        self.md = meta(parent)
        self.spec = parent.get("spec") or {}
        self.generation = as_int(self.md.get("generation"), 1)
        self.now = time.time()
        self.opts = sp.opts
        self.requeue: list[float] = []
        self.problems: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self.full: dict[str, Limit] = {}
        self.partitions = Partitions()
        self.created: list[tuple[str, str, str]] = []  # (child, cluster, share) created in this pass: _events
        self._clusters: dict[str, ClusterInfo] | None = None  # by name, for the overrides
        #: the policy's rollout, and this reconcile's step of it (None: every child at once)
        self.ro: RolloutPolicy | None = None
        self.ro_source: Any = None  # the overrides as written: a rule change is a new revision
        self.ro_out: stages.Outcome | None = None

    # -- the steps ------------------------------------------------------------------------------

    async def run(self) -> None:
        sp, s, wk = self.sp, self.s, self.wk
        fleet = sp.fleet(self.lc)
        children, conflicts = sp.children_of(self.key, self.parent)
        live = {c: o for c, o in children.items() if not meta(o).get("deletionTimestamp")}
        current = {c: wk.child.units(o) for c, o in live.items()}
        template = self.spec.get("template")
        requested = wk.requested(self.spec)

        # partitions: an unreachable cluster's child stops counting, and past the grace period is
        # frozen and left out of the decision (its share goes elsewhere) until it is back and stable
        parts = self.partitions = partition_step(s.partitions, fleet.get, current, self.now,
                                                 self.opts.unhealthy_grace, self.opts.rejoin_grace)
        if wk.child.replicas:  # a DaemonSet's pods follow nodes: no replicas to move
            self._observe({c: o for c, o in live.items() if c not in parts.uncounted}, fleet)
        self.requeue.extend(parts.rechecks)
        for type_, reason, message in parts.events:
            sp.events.event(self.parent, type_, reason, message)
        counted = {c: n for c, n in current.items() if c not in parts.frozen}
        infos = [ci for ci in fleet.infos if ci.name not in parts.frozen] if parts.frozen else fleet.infos
        decision: Decision | None = None
        policy_text = None
        try:
            policy, policy_text = wk.policy(self.parent, requested)
        except PolicyError as err:
            self.problems.append(("InvalidPlacement", f"invalid placement policy: {err}"))
            target = dict(counted)
        else:
            self.ro, self.ro_source = policy.rollout, ov.revision_source(policy.overrides)
            requests = requests_of(template)
            pkey = (policy_text, tuple(sorted(requests.items())))
            if s.prepared is None or s.prepared_key != pkey:
                s.prepared, s.prepared_key = Prepared(policy, infos, requests), pkey
            else:
                s.prepared.refresh(infos)
            sp.note_full(self.key, s.limits)
            self.full = sp.full_limits(self.key, counted, self.now)
            limits = {**self.full, **s.limits}
            decision = decide(requested, policy, current=counted, limits=limits, now=self.now,
                              options=Options(self.opts.unhealthy_grace, self.opts.join_grace),
                              prepared=s.prepared, seed=f"{self.ns}/{self.name}")
            if decision.recheck_at is not None:
                self.requeue.append(decision.recheck_at)
            target = decision.assignment()
            if requested == 0 and wk.split:
                target = {c: 0 for c in counted if decision.by_name().get(c) and decision.by_name()[c].eligible}
            self._decision_problems(decision, requested)
        for c in sorted(parts.frozen):
            ev = s.partitions.evictions[c]
            self.notes.append(f"{c}: {ev.replicas} replicas evicted at {_clock(ev.since)} (unreachable), "
                              "kept there and not counted")
        if self.kind == "Deployment" and (self.md.get("annotations") or {}).get(ANNOTATION_HPA):
            # a hub HPA scales this parent (fleet/hpas): its children's replicas are the clusters' HPAs'
            target = {c: counted.get(c, n) for c, n in target.items()}
        for c in conflicts:
            target.pop(c, None)
            self.problems.append(("PlacementFailed", f"{c}: {child_name(self.name, c)} exists and is not "
                                                     f"controlled by {self.kind} {self.name}"))
        # a frozen child is not the plan's to change; an unreachable one's replicas are not available
        p: Plan
        if wk.ordinals:  # ranges relative to the parent's first ordinal
            base = wk.first_ordinal(self.spec)
            p = ordinals.plan(target, {c: ordinals.OrdinalView(
                wk.child_start(o) - base, wk.units(o),
                c not in parts.uncounted and wk.ready(o), bool(meta(o).get("deletionTimestamp")))
                for c, o in children.items() if c not in parts.frozen}, requested)
        else:
            views = {c: ChildView(wk.child.units(o), 0 if c in parts.uncounted else wk.child.available(o),
                                  bool(meta(o).get("deletionTimestamp")))
                     for c, o in children.items() if c not in parts.frozen}
            p = plan(target, views, requested if wk.split else 0)
        if self.ro is not None:
            self._rollout_step(children, target, fleet)
        children = await self._apply(children, p, template)
        if self.ro_out is not None:
            await self._record_history()
        live = {c: o for c, o in children.items() if not meta(o).get("deletionTimestamp") and c not in parts.frozen}
        await self._write_status(live, target, p, decision, requested)
        await self._write_decision(decision, p)
        self._schedule()

    def _observe(self, live: dict[str, dict], fleet: _Fleet) -> None:
        """Children short of available replicas for longer than the grace period limit their
        cluster for this parent (see the module docstring)."""
        s, now, grace = self.s, self.now, self.opts.unschedulable_grace
        lim: Limit | None
        for c in list(s.limits):
            lim = s.limits[c]
            if now - lim.since >= self.opts.limit_ttl or fleet.get(c) is None:
                del s.limits[c]
            else:
                self.requeue.append(lim.since + self.opts.limit_ttl)
        for c in list(s.short_since):
            if c not in live:
                del s.short_since[c]
        serving = {c for c, child in live.items() if as_int((child.get("status") or {}).get("availableReplicas")) > 0}
        rolling = self._rolling(live)
        for c, child in live.items():
            if c in rolling:  # a new revision that does not come up is the rollout's failure, not a full cluster
                s.short_since.pop(c, None)
                continue
            spec = max(0, as_int((child.get("spec") or {}).get("replicas")))
            stat = child.get("status") or {}
            available = as_int(stat.get("availableReplicas"))
            explicit = self._explicit_unschedulable(child)
            ci = fleet.get(c)
            # the cluster runs the child (its pods exist) but they do not come up, while the workload
            # does come up elsewhere (else it is the workload that fails, not this cluster's room)
            short = (spec > available and as_int(stat.get("replicas")) >= spec and bool(serving - {c})
                     and ci is not None and ci.healthy is True)
            if explicit is not None:  # what the cluster reports, within what the status says is missing
                explicit = (min(explicit[0], max(0, spec - available)), explicit[1])
                short = explicit[0] > 0
            if not short:
                s.short_since.pop(c, None)
                continue
            since = s.short_since.setdefault(c, now)
            if now - since < grace:
                self.requeue.append(since + grace)
                continue
            missing = explicit[0] if explicit is not None else spec - available
            ceiling = max(0, spec - missing)
            lim = s.limits.get(c)
            if lim is not None and lim.max <= ceiling:
                continue
            why = explicit[1] if explicit is not None and explicit[1] else self._short_reason(child, spec, available)
            msg = f"{missing} of {spec} replicas unavailable for {max(1, round(now - since))}s" + (f": {why}" if why else "")
            s.limits[c] = Limit(ceiling, now, msg)
            self.requeue.append(now + self.opts.limit_ttl)
            self.sp.events.event(self.parent, "Warning", "Unschedulable",
                                 f"{c}: {msg}; moving up to {missing} replicas to other clusters")

    @staticmethod
    def _explicit_unschedulable(child: dict) -> tuple[int, str] | None:
        raw = (meta(child).get("annotations") or {}).get(ANNOTATION_UNSCHEDULABLE)
        if not raw:
            return None
        try:
            doc = json.loads(raw)
            return max(0, int(doc.get("replicas") or 0)), str(doc.get("message") or "")
        except (ValueError, TypeError, AttributeError):
            return None

    @staticmethod
    def _short_reason(child: dict, spec: int, available: int) -> str:
        for t in ("ReplicaFailure", "Progressing", "Available"):
            c = st.condition(child, t)
            if c and ((t == "ReplicaFailure" and c.get("status") == "True") or (t != "ReplicaFailure" and c.get("status") == "False")):
                return f"{c.get('reason')}: {c.get('message')}" if c.get("message") else str(c.get("reason"))
        return ""

    def _decision_problems(self, d: Decision, requested: int) -> None:
        if d.unplaced:
            if not d.eligible:
                self.problems.append(("NoEligibleClusters",
                                      f"no cluster can take its {d.replicas} replicas: " + "; ".join(d.reasons)))
            else:
                self.problems.append(("PlacementFailed", d.message()))
        for c, lim in sorted(self.s.limits.items()):
            cd = d.by_name().get(c)
            if cd is not None and cd.replicas > lim.max:
                self.problems.append(("Unschedulable", f"{c}: {lim.message}; no other cluster has room"))
            else:
                self.notes.append(f"{c} limited to {lim.max} until {_clock(lim.since + self.opts.limit_ttl)} "
                                  f"({lim.message})")

    # -- progressive rollouts (:mod:`.stages`) ---------------------------------------------------

    def revision(self) -> str:
        """What a rollout rolls out: the children's shared spec and the policy's overrides."""
        return _hash({"spec": self.wk.spec_of_generation(self._source()), "overrides": self.ro_source})

    def _rollout_state(self) -> stages.RolloutState | None:
        s = self.s
        if not s.rollout_loaded:
            s.rollout, s.rollout_loaded = stages.load((self.md.get("annotations") or {}).get(ROLLOUT_STATE)), True
        return s.rollout

    def _rolling(self, live: Mapping[str, dict]) -> set[str]:
        """Clusters a rollout that is not complete is busy with: released and not done, or not at
        its revision (an undo's clusters still at the failed one)."""
        state = self._rollout_state()
        if state is None or state.phase == stages.COMPLETE:
            return set()
        return {c for c, o in live.items() if (c in state.released and c not in state.done)
                or (meta(o).get("annotations") or {}).get(ANNOTATION_SPEC_HASH) != state.spec_hash}

    def _rollout_step(self, children: dict[str, dict], target: Mapping[str, int], fleet: _Fleet) -> None:
        """One step of the stage machine: which clusters get the new revision now."""
        assert self.ro is not None
        s, ann = self.s, self.md.get("annotations") or {}
        self._rollout_state()
        spec_hash, revision = self.spec_hash(), self.revision()
        live = {c: o for c, o in children.items()
                if not meta(o).get("deletionTimestamp") and c not in self.partitions.frozen}
        views: dict[str, stages.ClusterView] = {}
        for c, o in live.items():
            at = (meta(o).get("annotations") or {}).get(ANNOTATION_SPEC_HASH) == spec_hash
            ok, why = stages.rolled_out(self.wk.child, o)
            if ok:
                ok, why = stages.health(self.ro.health_check, o)
            views[c] = stages.ClusterView(True, at, ok, c not in self.partitions.uncounted, why)
        previous_spec = None
        prev = s.rollout
        if prev is None or prev.revision != revision:
            for c in sorted(live):
                h = (meta(live[c]).get("annotations") or {}).get(ANNOTATION_SPEC_HASH)
                if h != spec_hash and (prev is None or h == prev.spec_hash):
                    previous_spec = live[c].get("spec") or {}
                    break
        clusters = [fleet.get(c) or Named(c) for c in sorted(set(target) | set(live))]
        held = bool(self.spec.get("paused")) or ann.get(stages.ANNOTATION_PAUSED) == "true"
        s.rollout, self.ro_out = stages.step(prev, self.ro, revision=revision, spec_hash=spec_hash, clusters=clusters,
                                             views=views, now=self.now, held=held,
                                             approval=str(ann.get(stages.ANNOTATION_APPROVE) or ""),
                                             abort=str(ann.get(stages.ANNOTATION_ABORT) or ""),
                                             previous_spec=previous_spec)
        self.requeue.extend(self.ro_out.requeue)
        for type_, reason, message in self.ro_out.events:
            self.sp.events.event(self.parent, type_, reason, message)

    async def _record_history(self) -> None:
        """ReplicaSets / ControllerRevisions for kubectl's history and undo (:mod:`.history`)."""
        state = self.s.rollout
        if state is None or self.kind not in APPS_KINDS or self.s.history_number == state.number:
            return
        try:
            await history.record(self.sp.hub, self.lc, self.kind, {**self.parent, "spec": self._source()},
                                 state.number)
        except ApiError as err:
            if err.status in (404, 403):  # the type is not served here: no history, the rollout goes on
                log.info("splitter: no revision history for %s %s/%s: %s", self.kind, self.ns, self.name, err.message)
                self.s.history_number = state.number
                return
            raise
        self.sp.writes += 1
        self.s.history_number = state.number

    def _spec_for(self, cluster: str, child: dict | None, spec_hash: str) -> tuple[str, Mapping[str, Any] | None]:
        """The spec hash and source a child gets now: the parent's (no rollout, or released), the
        previous revision's (aborted, or created before its stage), or its own (not released)."""
        out, state = self.ro_out, self.s.rollout
        if out is None or state is None or cluster in out.new:
            return spec_hash, None
        if cluster in out.old and state.previous_spec is not None:
            return state.previous_hash, state.previous_spec
        if child is not None:
            return str((meta(child).get("annotations") or {}).get(ANNOTATION_SPEC_HASH) or ""), child.get("spec") or {}
        return spec_hash, None

    def _rollout_status(self, status: dict, live: dict[str, dict]) -> dict:
        state, out = self.s.rollout, self.ro_out
        if state is None or out is None:
            return status
        spec_hash = self.spec_hash()
        at = {c for c, o in live.items() if (meta(o).get("annotations") or {}).get(ANNOTATION_SPEC_HASH) == spec_hash}
        held = bool(self.spec.get("paused")) or (self.md.get("annotations") or {}).get(stages.ANNOTATION_PAUSED) == "true"
        return st.with_rollout(self.kind, status, children=live, at_revision=at, uncounted=self.partitions.uncounted,
                               phase=state.phase, message=out.message, held=held,
                               prev=self.parent.get("status") or {})

    # -- children -------------------------------------------------------------------------------

    def spec_hash(self) -> str:
        return _hash(self.wk.spec_of_generation(self._source()))

    def _source(self) -> Mapping[str, Any]:
        """The spec children are made from: under a rollout without ``paused`` (the machine holds
        instead; pausing is no new revision) and without a null template creationTimestamp."""
        if self.ro is None:
            return self.spec
        out = {k: v for k, v in self.spec.items() if k != "paused"}
        tmd = (out.get("template") or {}).get("metadata")
        if isinstance(tmd, dict) and "creationTimestamp" in tmd and tmd["creationTimestamp"] is None:
            # kubectl's undo sends the template as Go serializes it (creationTimestamp: null), which a
            # typed kube server drops: the same revision
            out["template"] = {**out["template"], "metadata": {k: v for k, v in tmd.items() if k != "creationTimestamp"}}
        return out

    def _owner_ref(self) -> dict:
        return {"apiVersion": self.parent.get("apiVersion") or "apps/v1", "kind": self.kind, "name": self.name,
                "uid": self.md.get("uid"), "controller": True, "blockOwnerDeletion": True}

    def _child_meta(self, cluster: str, spec_hash: str) -> tuple[dict, dict]:
        labels = {k: v for k, v in (self.md.get("labels") or {}).items()}
        labels[LABEL_CLUSTER] = cluster
        labels[LABEL_OWNED_BY] = self.name if is_label_value(self.name) else _hash(self.name)
        ann = {k: v for k, v in (self.md.get("annotations") or {}).items()
               if k not in _NOT_COPIED and not k.startswith(ROLLOUT_PREFIX)}
        ann[ANNOTATION_SPEC_HASH] = spec_hash
        if self.wk.ordinals:  # the Pods are <parent>-<ordinal> in every cluster
            ann[ANNOTATION_DOWNSTREAM_NAME] = self.name
        return labels, ann

    async def _apply(self, children: dict[str, dict], p: Plan, template: Any) -> dict[str, dict]:
        """Deletes, creates and updates, one request per child, all at once (they are independent)."""
        spec_hash = self.spec_hash()
        out = dict(children)
        path = _path(self.lc, *self.wk.child.gvr, self.ns)
        ops = [self._delete(children[c], c, path, out) for c in sorted(p.delete)]
        base = self.wk.first_ordinal(self.spec)
        ops += [self._write(children.get(c), c, n, base + p.starts.get(c, 0), *self._spec_for(c, children.get(c), spec_hash),
                            path, out) for c, n in sorted(p.replicas.items())]
        results = await asyncio.gather(*ops, return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]
        return out

    async def _delete(self, child: dict, cluster: str, path: str, out: dict[str, dict]) -> None:
        cmd = meta(child)
        await self.sp.hub.delete(f"{path}/{cmd['name']}", uid=cmd.get("uid"))
        self.sp.writes += 1
        out.pop(cluster, None)
        self.sp.events.event(self.parent, "Normal", "SuccessfulDelete", f"Deleted {cmd['name']} from cluster {cluster}")

    async def _write(self, child: dict | None, cluster: str, replicas: int, start: int, spec_hash: str,
                     source: Mapping[str, Any] | None, path: str, out: dict[str, dict]) -> None:
        """Create or update one child; ``source``: the spec to make it from when not the parent's
        (a rollout keeps a cluster at its revision until it is released: :meth:`_spec_for`)."""
        hub, sp, ck = self.sp.hub, self.sp, self.wk.child
        labels, ann = self._child_meta(cluster, spec_hash)
        spec = self.wk.child_spec(self._source() if source is None else source, replicas, start)
        # -- overrides: the cluster's rules on its child (fleet/placement/overrides.py) --
        applied = self._overridden(cluster, spec, labels, ann)
        if applied is None:  # its rules break it (a problem on the parent): no new child, the old one kept
            if child is None:
                return
            keep = meta(child).get("annotations") or {}
            spec_hash = keep.get(ANNOTATION_SPEC_HASH) or spec_hash
            ann = {**ann, ANNOTATION_SPEC_HASH: spec_hash, **{k: keep[k] for k in ov.CHILD_ANNOTATIONS if k in keep}}
        else:
            spec, labels, ann = applied.spec, applied.labels, {**applied.annotations, **applied.child_annotations()}
        # -- overrides end --
        if child is None:
            body: dict[str, Any] = {"apiVersion": ck.api_version, "kind": ck.kind,
                                    "metadata": {"name": child_name(self.name, cluster), "namespace": self.ns,
                                                 "labels": labels, "annotations": ann,
                                                 "ownerReferences": [self._owner_ref()]},
                                    "spec": spec}
            ci = sp.fleet(self.lc).get(cluster)
            if ci is not None and ci.labels.get(LABEL_SYNCED_CLUSTER) == cluster:
                # a Cluster's profile: its Syncer will sync the child and keep this finalizer (it
                # would add it in a write of its own); only for the cluster the child is labelled for
                body["metadata"]["finalizers"] = [syncer_finalizer(cluster)]
            try:
                created = await hub.create(path, body, FIELD_MANAGER)
            except ApiError as err:
                if err.status == 409:  # a namesake appeared (or is still being deleted): next time
                    self.requeue.append(self.now + 1.0)
                    return
                if err.status == 404 and "namespace" not in err.message.lower():
                    self.problems.append(("PlacementFailed", f"{ck.kind}s are not served in logical cluster "
                                                             f"{self.lc} yet (no cluster has offered the type): "
                                                             f"{err.message}"))
                    return
                raise
            sp.writes += 1
            out[cluster] = created
            sp.remember_child(ck.kind, created)
            self.created.append((body["metadata"]["name"], cluster, self._share(replicas, start)))
            return
        cmd = meta(child)
        old_spec = child.get("spec") or {}
        old_replicas = as_int(old_spec.get("replicas")) if ck.replicas else replicas
        old_start = self.wk.child_start(child) if self.wk.ordinals else start
        cur_ann = cmd.get("annotations") or {}
        cur_labels = cmd.get("labels") or {}
        refs = cmd.get("ownerReferences") or []
        rules_changed = cur_ann.get(ov.ANNOTATION_OVERRIDES_HASH) != ann.get(ov.ANNOTATION_OVERRIDES_HASH)
        if (old_replicas == replicas and old_start == start and cur_ann.get(ANNOTATION_SPEC_HASH) == spec_hash
                and not rules_changed
                and all(cur_labels.get(k) == v for k, v in labels.items())
                and all(cur_ann.get(k) == v for k, v in ann.items())):
            return
        new = json.loads(json.dumps(child))
        nmd = new["metadata"]
        nmd["labels"] = {**cur_labels, **labels}
        nmd["annotations"] = {**cur_ann, **ann}
        if not any(r.get("uid") == self.md.get("uid") for r in refs):
            nmd["ownerReferences"] = [*refs, self._owner_ref()]
        if rules_changed:  # what rules set before and set no more goes (overrides)
            for part, gone in ov.stale_keys(cur_ann, labels, ann).items():
                for k in gone:
                    nmd[part].pop(k, None)
            sp.events.event(self.parent, "Normal", "OverridesApplied",
                            f"Updated {cmd['name']} in cluster {cluster}: overrides "
                            f"{ann.get(ov.ANNOTATION_OVERRIDES) or 'none'} apply")
        if cur_ann.get(ANNOTATION_SPEC_HASH) != spec_hash or rules_changed:
            new["spec"] = spec
        else:
            if ck.replicas:
                new.setdefault("spec", {})["replicas"] = replicas
            if self.wk.ordinals:
                new.setdefault("spec", {}).setdefault("ordinals", {})["start"] = start
        new.pop("status", None)
        updated = await hub.replace(f"{path}/{cmd['name']}", new, FIELD_MANAGER)
        sp.writes += 1
        out[cluster] = updated
        sp.remember_child(ck.kind, updated)
        if self.wk.ordinals and (old_replicas, old_start) != (replicas, start):
            sp.events.event(self.parent, "Normal", "SuccessfulUpdate",
                            f"Moved {cmd['name']} in cluster {cluster} from ordinals "
                            f"{ordinals.Range(old_start, old_replicas)} to {ordinals.Range(start, replicas)}")
        elif old_replicas != replicas:
            sp.events.event(self.parent, "Normal", "ScalingReplicaSet",
                            f"Scaled {cmd['name']} in cluster {cluster} from {old_replicas} to {replicas}")

    def _overridden(self, cluster: str, spec: dict, labels: dict, ann: dict) -> ov.Applied | None:
        """The child with the rules of the parent's policy (the last good one) that select its
        cluster; None, with an InvalidOverride problem naming the cluster, when they break it (or
        when no good policy was seen yet)."""
        if self.s.prepared is None:  # no good policy seen yet (InvalidPlacement): the children stay as they are
            return None
        policy = self.s.prepared.policy
        if not policy.overrides:
            return ov.apply(spec, labels, ann, ())
        if self._clusters is None:
            self._clusters = {ci.name: ci for ci in self.sp.fleet(self.lc).infos}
        ci = self._clusters.get(cluster)
        rules = ov.matching(policy.overrides, ci) if ci is not None else []
        try:
            return self.s.overrides.apply(cluster, spec, labels, ann, rules)
        except ov.OverrideError as err:
            self.problems.append(("InvalidOverride", f"cluster {cluster}: {err}"))
            return None

    def _share(self, replicas: int, start: int) -> str:
        if self.wk.ordinals:
            return f" with ordinals {ordinals.Range(start, replicas)}"
        return f" with {replicas} replicas" if self.wk.child.replicas else ""

    # -- status ---------------------------------------------------------------------------------

    def _observed(self, live: dict[str, dict], p: Any, spec_hash: str) -> bool:
        """Every child carries this generation's spec (by hash: replicas aside, which the plan
        sets) and has observed it; under a rollout, once the rollout of this revision started."""
        if p.blocked:
            return False
        if self.ro_out is not None:
            return True
        for child in live.values():
            cmd = meta(child)
            if (cmd.get("annotations") or {}).get(ANNOTATION_SPEC_HASH) != spec_hash:
                return False
            og = (child.get("status") or {}).get("observedGeneration")
            if og is None or as_int(og) < as_int(cmd.get("generation"), 1):
                return False
        return True

    def _placement_condition(self, d: Decision | None, p: Any) -> tuple[str, str, str]:
        first = {r: m for r, m in reversed(self.problems)}
        for reason in ("InvalidPlacement", "NoEligibleClusters", "PlacementFailed", "InvalidOverride"):
            if reason in first:
                return "False", reason, first[reason]
        if d is not None:
            stuck = [m for r, m in self.problems if r == "Unschedulable"]
            if stuck:
                return "False", "Unschedulable", "; ".join(stuck)
        note = self._progress_note(p)
        if note:
            return "True", "Rebalancing", note
        msg = d.message() if d is not None else "placed"
        return "True", "Placed", "; ".join([msg, *self.notes])

    def _progress_note(self, p: Any) -> str:
        parts = []
        if p.waiting and self.wk.ordinals:
            keep = ", ".join(f"{n} in {c}" for c, n in sorted(p.waiting.items()))
            parts.append(f"moving ordinals one at a time: keeping {keep} until its copy in its new cluster is ready")
        elif p.waiting:
            keep = ", ".join(f"{n} in {c}" for c, n in sorted(p.waiting.items()))
            parts.append(f"keeping {keep} until their replacements are available")
        if p.blocked:
            parts.append("waiting for the old child in " + ", ".join(sorted(p.blocked)) + " to be deleted")
        return "; ".join(parts)

    async def _write_status(self, live: dict[str, dict], target: dict[str, int], p: Any, d: Decision | None,
                            requested: int) -> None:
        fleet = self.sp.fleet(self.lc)
        stale = {c: "its cluster left the fleet" for c in live if fleet.get(c) is None}
        uncounted = {c: why for c, why in self.partitions.uncounted.items() if c in live}
        placement = self._placement_condition(d, p)
        prev = self.parent.get("status") or {}
        if self.kind == CDS_KIND:
            new = self._cds_status(live, target, p, d, placement, prev, {**stale, **uncounted})
        elif self.kind in ("DaemonSet", "StatefulSet"):
            aggregate = st.daemonset if self.kind == "DaemonSet" else st.statefulset
            new = aggregate(generation=self.generation, name=self.name, spec_hash=self.spec_hash(), children=live,
                            observed=self._observed(live, p, self.spec_hash()), prev=prev, placement=placement,
                            uncounted=uncounted, partitioned=self.partitions.condition)
        else:
            new = st.aggregate(generation=self.generation, requested=requested, children=live, target=target,
                               observed=self._observed(live, p, self.spec_hash()), prev=prev, problems=self.problems,
                               placement=placement, progress_note=self._progress_note(p), stale=stale,
                               uncounted=uncounted, partitioned=self.partitions.condition)
        new = self._rollout_status(new, live)
        self._events(placement, d, p)
        if new == prev:
            self.s.status_pending = None
            return
        if not self._status_due(prev, live, placement):
            return
        path = _path(self.lc, *self.wk.gvr, self.ns, self.name, "status")
        try:
            updated = await self.sp.hub.patch(path, [{"op": "add", "path": "/status", "value": new}], JSON_PATCH,
                                              FIELD_MANAGER)
        except ApiError as err:
            if err.status == 404:
                return
            raise
        self.sp.writes += 1
        cache = self.sp.parent_cache(self.kind)
        if (self.lc, self.ns, self.name) in cache and meta(updated).get("uid") == self.md.get("uid"):
            cache[(self.lc, self.ns, self.name)] = updated
        self.parent = updated

    def _status_due(self, prev: dict, live: dict[str, dict], placement: tuple[str, str, str]) -> bool:
        """True when the status is to be written now; on a cold start (see STATUS_COLD_DELAY) it is
        held back, with a reconcile scheduled, while a child's cluster has not observed it yet."""
        s = self.s
        if isinstance(prev.get("observedGeneration"), int) or placement[0] == "False" or all(
                as_int((c.get("status") or {}).get("observedGeneration"), -1) >= as_int(meta(c).get("generation"), 1)
                for c in live.values()):
            s.status_pending = None
            return True
        if s.status_pending is None:
            s.status_pending = self.now
        due = s.status_pending + STATUS_COLD_DELAY
        if self.now >= due:
            s.status_pending = None
            return True
        self.requeue.append(due)
        return False

    def _cds_status(self, live: dict[str, dict], target: dict[str, int], p: Any, d: Decision | None,
                    placement: tuple[str, str, str], prev: dict, stale: dict[str, str]) -> dict:
        now = st.now_rfc3339()
        clusters = []
        ready = 0
        totals = dict.fromkeys(st.COUNTERS, 0)
        for c in sorted(set(target) | set(live)):
            child = live.get(c)
            counted = child is not None and c not in self.partitions.uncounted
            counts = st.child_counts(child) if counted and child else dict.fromkeys(st.COUNTERS, 0)
            for k, v in counts.items():
                totals[k] += v
            avail = st.condition(child, "Available") if child else None
            ok = counted and bool(avail and avail.get("status") == "True") and counts["availableReplicas"] >= 1
            if c in target and ok:
                ready += 1
            entry = {"name": c, "replicas": as_int((child or {}).get("spec", {}).get("replicas")) if child else 0,
                     "readyReplicas": counts["readyReplicas"], "availableReplicas": counts["availableReplicas"],
                     "available": ok}
            if c in stale:
                entry["note"] = stale[c]
            clusters.append(entry)
        status: dict[str, Any] = {"desiredNumberClusters": len(target), "numberClustersAvailable": ready}
        og = prev.get("observedGeneration")
        if self._observed(live, p, self.spec_hash()):
            og = self.generation
        if og is not None:
            status["observedGeneration"] = og
        for k in ("replicas", "readyReplicas", "availableReplicas", "updatedReplicas"):
            status[k] = totals[k]
        status["clusters"] = clusters
        prev_conds = {c.get("type"): c for c in prev.get("conditions") or ()}
        missing = [e["name"] for e in clusters if e["name"] in target and not e["available"]]
        avail_cond: tuple[str, str, str]
        if not target:
            avail_cond = ("False", "NoClusters", "no cluster to run in: " + (self.problems[0][1] if self.problems else "none"))
        elif missing:
            avail_cond = ("False", "ClustersUnavailable", "not available in " + ", ".join(missing))
        else:
            avail_cond = ("True", "AllClustersAvailable", f"available in {ready} of {len(target)} clusters")
        for c in sorted(self.partitions.frozen):
            ev = self.s.partitions.evictions[c]
            clusters.append({"name": c, "replicas": ev.replicas, "readyReplicas": 0, "availableReplicas": 0,
                             "available": False, "note": self.partitions.uncounted.get(c, "evicted")})
        conds = [("Available", *avail_cond), ("Placement", *placement)]
        if self.partitions.condition is not None:
            conds.append((st.PARTITIONED, *self.partitions.condition))
        status["conditions"] = [st.merge_condition(prev_conds.get(t), t, s_, r, m, now) for t, s_, r, m in conds]
        return status

    def _events(self, placement: tuple[str, str, str], d: Decision | None, p: Any) -> None:
        """The parent's Events of this pass: the placement's changes, and one SuccessfulCreate
        naming every child created in it (as kube's Deployment controller reports one
        ScalingReplicaSet per ReplicaSet it scales), left out on a first placement that created
        every child: its Placed Event names each cluster and share already."""
        s = self.s
        status, reason, message = placement
        split = d.assignment() if d is not None else s.split
        waiting = frozenset(p.waiting) | frozenset(p.blocked)
        placed_all = False
        if (reason, message) != s.placement:
            changed_split = split != s.split
            if status == "False":
                self.sp.events.event(self.parent, "Warning", reason, message)
            elif reason == "Rebalancing" and (waiting != s.waiting or changed_split):
                self.sp.events.event(self.parent, "Normal", "Rebalancing", message)
            elif reason == "Placed" and (changed_split or s.placement[0] != "Placed"):
                self.sp.events.event(self.parent, "Normal", "Placed", message)
                placed_all = s.placement == ("", "") and {c for _, c, _ in self.created} == set(split)
            s.placement = (reason, message)
        s.split, s.waiting = dict(split), waiting
        if self.created and not placed_all:
            self.sp.events.event(self.parent, "Normal", "SuccessfulCreate", "Created " + ", ".join(
                f"{name}{share} in cluster {cluster}" for name, cluster, share in sorted(self.created, key=lambda t: t[1])))
        self.created = []

    async def _write_decision(self, d: Decision | None, p: Any) -> None:
        doc: dict[str, Any] = d.summary() if d is not None else {"error": self.problems[0][1] if self.problems else ""}
        if self.s.limits:
            doc["limits"] = {c: {"max": lim.max, "since": round(lim.since, 3), "message": lim.message}
                             for c, lim in sorted(self.s.limits.items())}
        full = {c: lim.message for c, lim in self.full.items() if c not in self.s.limits}
        if full:
            doc["full"] = full
        if not p.settled:
            doc["waiting"] = self._progress_note(p)
        if self.partitions.filtered:
            doc["filtered"] = dict(sorted({**(doc.get("filtered") or {}), **self.partitions.filtered}.items()))
        if self.s.partitions.evictions:
            doc["evicted"] = {c: ev.to_dict() for c, ev in sorted(self.s.partitions.evictions.items())}
        doc["options"] = {"unhealthyGrace": self.opts.unhealthy_grace, "joinGrace": self.opts.join_grace,
                          "rejoinGrace": self.opts.rejoin_grace}
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        annotations = {ANNOTATION_DECISION: text}
        if self.ro_out is not None and self.s.rollout is not None:  # the rollout's state, in the same write
            annotations[ROLLOUT_STATE] = self.s.rollout.to_json()
            if self.kind == "Deployment":
                annotations[history.ANNOTATION_REVISION] = str(self.s.rollout.number)
        cur = self.md.get("annotations") or {}
        if all(cur.get(k) == v for k, v in annotations.items()):
            return
        path = _path(self.lc, *self.wk.gvr, self.ns, self.name)
        patch = {"metadata": {"annotations": annotations,
                              "resourceVersion": meta(self.parent).get("resourceVersion")}}
        try:
            await self.sp.hub.patch(path, patch, MERGE_PATCH, FIELD_MANAGER)
        except ApiError as err:
            if err.status in (404, 409):
                if err.status == 409:
                    self.requeue.append(self.now + 0.05)
                return
            raise
        self.sp.writes += 1

    def _schedule(self) -> None:
        now = time.time()
        future = [t for t in self.requeue if t is not None]
        if future:
            when = min(future)
            self.sp.queue.add_after(self.key, max(0.0, when - now) + 0.05)
