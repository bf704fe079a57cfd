"""The Cluster controller: connects the physical clusters that ``Cluster`` objects describe.

It lists and watches Clusters (``cluster.example.dev/v1alpha1``) in every logical cluster through
the hub's ``/clusters/*`` wildcard, and gives each Cluster its own worker (a work queue of one
key: events for the same Cluster coalesce, one Cluster's trouble never holds up another's). A
worker reconciles on every relevant change of its Cluster and every ``probe_interval`` seconds:

1. **Finalizer** ``cluster.example.dev/cleanup`` first, so a deletion always passes through step 6.
2. **Connect** (push mode): parse ``spec.kubeconfig`` (``InvalidKubeConfig``), build a client
   (``ErrorCreatingClient``), probe ``/version``, ``/api``, ``/livez``, ``/readyz``
   (``Unreachable``, ``TLSError``, ``Timeout``, ``Unauthorized``, ``Forbidden``, ``Unhealthy``)
   and, every ``details_interval``, Nodes and ClusterProperties (:mod:`.cluster_probe`).
3. **Syncer** (push mode): once the cluster has answered, a :class:`fleetplane.fleet.syncer.Syncer`
   runs as a task of this process for the Cluster; it keeps running while the cluster is away
   (it resumes when the cluster returns) and is restarted, with backoff, if it stops; a change of
   kubeconfig, context or resources restarts it. Its ``health()`` becomes the ``Synced``
   condition and ``status.types``. **Pull mode**: no Syncer here; a ``fleetplane syncer``
   process next to the cluster (``fleetplane syncer manifests``) renews the Lease
   ``syncer-<name>`` in the Cluster's namespace every few seconds with its probe report and
   health as annotations; the controller reads them from there, and a Lease not renewed within
   its duration is ``SyncerHeartbeatLost``.
4. **Status**: conditions ``Connected``, ``Healthy``, ``Synced``, ``ProfilePublished`` and
   ``Ready`` (the first three True), each with a reason and message; ``version``, ``types``,
   ``allocatable``, ``nodes``, ``clusterProfile``, ``observedGeneration``. Written through
   ``/status`` only when it changed. Events on the Cluster for every state change.
5. **Inventory** (KEP-4322, :mod:`.cluster_inventory`): the ClusterProfile and the credentials
   Secret, in the Cluster's logical cluster and namespace; profile status through
   :class:`fleetplane.inventory.StatusWriter` (server-side apply, the KEP's budget of one write per
   30 s per profile with bursts of 10).
6. **Deletion**: stop the Syncer; ``deletionPolicy: Delete`` deletes the objects synced into the
   cluster (those labelled ``kcp.dev/cluster: <name>``; in pull mode the syncer does it and
   acknowledges on its Lease) and keeps the finalizer until that has worked (set the policy to
   ``Orphan`` to give up on an unreachable cluster); ``Orphan`` (the default) leaves them running,
   unmanaged. Then the ClusterProfile, the Secret and the Lease are deleted and the finalizer removed.
   The objects on the hub (the desired state, with their last synced status) stay in both cases.

``ClusterController.run()`` runs until cancelled; cancelling it stops every Syncer it runs (which
is what a leader-election wrapper does on losing the lease). ``run_in_hub`` is the background
task ``fleetplane start`` runs (:mod:`fleetplane.fleet.plugin`); ``python -m fleetplane.fleet.cluster_controller --kubeconfig HUB``
runs the controller on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..inventory import constants as ic
from ..inventory.model import Condition
from ..inventory.status import StatusWriter, WriteError
from ..kube.client import ApiError, Client, ClientBuildError, Unreachable
from ..kube.events import EventRecorder
from ..kube.informer import Informer, cluster_key
from ..kube.kubeconfig import ApiTarget, KubeconfigError, hub_base, parse_kubeconfig
from ..kube.times import parse_time
from . import cluster_inventory as inv
from . import identities
from .cluster_cleanup import delete_synced_objects, release_hub_objects
from .cluster_crd import (
    CONNECTED,
    FINALIZER,
    GROUP,
    HEALTHY,
    LABEL_SYNC,
    MODE_PULL,
    MODE_PUSH,
    PLURAL,
    POLICY_DELETE,
    PROFILE_PUBLISHED,
    READY,
    SYNCED,
    VERSION,
)
from .cluster_probe import ClusterReport, probe_cluster

__all__ = ["ANNOTATION_REPORT", "ANNOTATION_STOPPED", "ANNOTATION_SYNCER_HEALTH", "ClusterController",
           "MANAGER_NAME", "hub_base", "lease_name", "main", "run_in_hub"]

log = logging.getLogger("fleetplane.fleet.cluster")

MANAGER_NAME = "fleetplane"
FIELD_MANAGER = "fleetplane-cluster-controller"
COMPONENT = "fleetplane-cluster-controller"
#: On the pull-mode syncer's Lease: its latest :class:`ClusterReport` and SyncerHealth (JSON), and
#: the uid of the Cluster whose deletion it has carried out.
ANNOTATION_REPORT = f"{GROUP}/report"
ANNOTATION_SYNCER_HEALTH = f"{GROUP}/syncer-health"
ANNOTATION_STOPPED = f"{GROUP}/stopped"

#: Condition reasons of a normal start, not worth a Warning event.
TRANSIENT_REASONS = frozenset({"Starting", "SyncerStarting", "WaitingForSyncer", "Joining"})

Key = tuple[str, str, str]  # (logical cluster, namespace, name)
Cond = tuple[bool | None, str, str]  # (status, reason, message)


def lease_name(cluster: str) -> str:
    """The Lease a pull-mode syncer renews for Cluster ``cluster`` (in the Cluster's namespace)."""
    return f"syncer-{cluster}"


def _rv(obj: Mapping[str, Any] | None) -> int:
    try:
        return int(((obj or {}).get("metadata") or {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _relevant(obj: Mapping[str, Any]) -> str:
    """What, when it changes, needs a reconcile (not our own status writes)."""
    md = obj.get("metadata") or {}
    return json.dumps([md.get("uid"), md.get("generation"), md.get("labels"), md.get("deletionTimestamp"),
                       md.get("finalizers"), obj.get("spec")], sort_keys=True, default=str)


def _condition_list(status: Mapping[str, Any] | None) -> list[Condition]:
    out = []
    for c in (status or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type"):
            out.append(Condition.from_dict(c))
    return out


def type_entries(h: Mapping[str, Any]) -> list[dict[str, str]]:
    """A SyncerHealth's types as ``status.types`` entries: the GVRs it syncs (``deployments.v1.apps``)
    with state ``Synced``, and those it could not import with state ``Failed`` and the reason."""
    out: dict[tuple[str, str], dict[str, str]] = {}
    for gvr in h.get("types") or ():
        parts = str(gvr).split(".", 2)
        entry = {"resource": parts[0], "version": parts[1] if len(parts) > 1 else ""}
        if len(parts) > 2:
            entry["group"] = parts[2]
        entry["state"] = "Synced"
        out[(entry.get("group", ""), entry["resource"])] = entry
    for key, message in (h.get("type_errors") or {}).items():
        resource, _, group = str(key).partition(".")
        entry = out.setdefault((group, resource), {"resource": resource, **({"group": group} if group else {})})
        entry["state"] = "Failed"
        entry["message"] = str(message)[:1024]
    return [out[k] for k in sorted(out)]


def synced_condition(h: Mapping[str, Any]) -> Cond:
    """The ``Synced`` condition a SyncerHealth amounts to: False until the Syncer is connected to
    both sides and has synced its types (``TypeImportFailed`` names the type and why); True with
    reason ``Synced`` (or ``ObjectsFailed``/``SchemaConflict``, which single objects or types
    report in detail). The object counters are left out of the message: they would change the
    Cluster's status with every object synced."""
    reason, message = h.get("reason") or "", h.get("message") or ""
    if not h.get("connected"):
        return False, reason or "SyncerDisconnected", message or h.get("last_error") or "the Syncer is not connected"
    if not h.get("types_synced"):
        return False, reason or "TypesNotSynced", message or "the Syncer has not synced its types yet"
    if reason in ("", "Synced"):
        n = len(h.get("types") or ())
        return True, "Synced", f"{n} type{'s' if n != 1 else ''} in sync"
    return True, reason, message


@contextlib.contextmanager
def _refusals_ignored() -> Any:
    """Suppress what the hub refuses (an HTTP error), not its absence: an Unreachable hub fails the
    reconcile, which is retried, rather than skipping a step of it."""
    try:
        yield
    except Unreachable:
        raise
    except ApiError:
        pass


def health_dict(h: Any) -> dict[str, Any]:
    """A SyncerHealth (a dataclass) as a plain dict."""
    return dict(h) if isinstance(h, Mapping) else dataclasses.asdict(h)


@dataclass
class _Observed:
    connected: Cond
    healthy: Cond
    synced: Cond
    types: list[dict[str, str]] | None = None


class ClusterController:
    """Watch Clusters in every logical cluster of the hub and connect each (see the module docstring).

    ``hub_kubeconfig`` is the hub's admin kubeconfig (a path, or a dict); the logical cluster in
    its server URL does not matter: the controller talks to ``/clusters/*`` and ``/clusters/<lc>``.
    """

    def __init__(self, hub_kubeconfig: str | Path | Mapping[str, Any], *, context: str | None = None,
                 manager_name: str = MANAGER_NAME, probe_interval: float = 10.0, details_interval: float = 60.0,
                 request_timeout: float = 5.0, resources: Sequence[str] | None = None,
                 syncer_poll_interval: float | None = None, access_provider_name: str = inv.ACCESS_PROVIDER,
                 status_rate: float = ic.STATUS_UPDATE_RATE, status_burst: int = ic.STATUS_UPDATE_BURST,
                 syncer_backoff: tuple[float, float] = (1.0, 30.0), cluster_profiles: bool = True,
                 failure_threshold: float = 30.0) -> None:
        source = Path(hub_kubeconfig) if isinstance(hub_kubeconfig, (str, Path)) else hub_kubeconfig
        self.hub_endpoint: ApiTarget = parse_kubeconfig(source, context, allow_files=True)
        self.base = hub_base(self.hub_endpoint.server)
        self.hub = Client(self.hub_endpoint.with_server(self.base), COMPONENT, timeout=request_timeout, pool=32)
        #: Events on Clusters, one per state change: written at once, never aggregated
        self.recorder = EventRecorder(self.hub, COMPONENT, instance=os.uname().nodename, window=0.0,
                                      per_logical_cluster=True)
        self.clusters = Informer(self.hub, f"/clusters/*/apis/{GROUP}/{VERSION}/{PLURAL}", self._on_cluster,
                                 name="clusters", key=cluster_key)
        self.manager_name = manager_name
        self.probe_interval = probe_interval
        #: how long probes must fail without a break before a cluster that was healthy is reported
        #: disconnected or unhealthy (Karmada's --cluster-failure-threshold): a slow answer under
        #: load does not flap its ClusterProfile
        self.failure_threshold = failure_threshold
        self.details_interval = details_interval
        self.request_timeout = request_timeout
        #: what a Cluster without ``spec.resources`` syncs (None: the Syncer's default)
        self.resources = tuple(resources) if resources else None
        self.syncer_poll_interval = syncer_poll_interval
        self.access_provider_name = access_provider_name
        self.status_rate, self.status_burst = status_rate, status_burst
        self.syncer_backoff = syncer_backoff
        #: keep ClusterProfiles (False when the hub does not serve them: `fleetplane start --no-cluster-profiles`)
        self.cluster_profiles = cluster_profiles
        self.workers: dict[Key, _Worker] = {}
        self.synced = self.clusters.synced
        self._writers: dict[str, StatusWriter] = {}
        self._closed = False

    # -- paths --------------------------------------------------------------------------------

    @staticmethod
    def cluster_path(lc: str, ns: str, name: str = "", sub: str = "") -> str:
        tail = f"/{name}{sub}" if name else ""
        return f"/clusters/{lc}/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}{tail}"

    @staticmethod
    def profile_path(lc: str, ns: str, name: str = "", sub: str = "") -> str:
        tail = f"/{name}{sub}" if name else ""
        return f"/clusters/{lc}/apis/{ic.GROUP}/{ic.VERSION}/namespaces/{ns}/{ic.PLURAL}{tail}"

    @staticmethod
    def core_path(lc: str, ns: str, plural: str, name: str = "") -> str:
        return f"/clusters/{lc}/api/v1/namespaces/{ns}/{plural}" + (f"/{name}" if name else "")

    @staticmethod
    def lease_path(lc: str, ns: str, name: str = "") -> str:
        return f"/clusters/{lc}/apis/coordination.k8s.io/v1/namespaces/{ns}/leases" + (f"/{name}" if name else "")

    # -- running ------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch Clusters until cancelled; on the way out every Syncer is stopped."""
        try:
            await self.clusters.run()
        finally:
            await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        tasks = [w.task for w in self.workers.values() if w.task is not None]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in self._writers.values():
            await w.close()
        await self.hub.close()

    def writer(self, lc: str) -> StatusWriter:
        w = self._writers.get(lc)
        if w is None:
            w = self._writers[lc] = StatusWriter(
                write=partial(self._apply_profile_status, lc), field_manager=FIELD_MANAGER, rate=self.status_rate,
                burst=self.status_burst, on_error=partial(self._profile_write_failed, lc))
        return w

    async def _apply_profile_status(self, lc: str, ns: str, name: str, status: dict[str, Any]) -> None:
        body = {"apiVersion": ic.API_VERSION, "kind": ic.KIND,
                "metadata": {"name": name, "namespace": ns}, "status": status}
        await self.hub.apply(self.profile_path(lc, ns, name, "/status"), body, FIELD_MANAGER)

    def _profile_write_failed(self, lc: str, err: WriteError) -> None:
        log.warning("cluster %s|%s/%s: %s", lc, err.key[0], err.key[1], err)
        w = self.workers.get((lc, err.key[0], err.key[1]))
        if w is not None:
            w.profile_ok = False  # re-created (or the conflict reported) on the next reconcile
            w.wake.set()

    def _on_cluster(self, key: Key, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        self._observe(key, new)

    def _observe(self, key: Key, obj: dict[str, Any] | None) -> None:
        w = self.workers.get(key)
        if obj is None:
            if w is not None:
                w.set_object(None)
            self._wake_namesakes(key)
            return
        if w is None or (w.task is not None and w.task.done()):
            w = self.workers[key] = _Worker(self, key)
            w.set_object(obj)
            w.task = asyncio.get_running_loop().create_task(w.run(), name=f"cluster-{key[0]}|{key[1]}/{key[2]}")
        else:
            w.set_object(obj)

    def _wake_namesakes(self, key: Key) -> None:
        for k, w in self.workers.items():
            if k != key and k[0] == key[0] and k[2] == key[2]:
                w.wake.set()

    def shadowed_by(self, worker: _Worker) -> Key | None:
        """Another Cluster of the same name in the same logical cluster that takes precedence
        (older, or as old and in an earlier namespace): objects are assigned by name alone."""

        def rank(w: _Worker) -> tuple[str, str]:
            return ((w.obj or {}).get("metadata", {}).get("creationTimestamp") or "", w.key[1])

        mine = rank(worker)
        for k, w in self.workers.items():
            if k != worker.key and k[0] == worker.key[0] and k[2] == worker.key[2] and w.obj is not None:
                if rank(w) < mine:
                    return k
        return None

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per Cluster (``lc|ns/name``): whether a Syncer runs, and the last probe (for debugging)."""
        return {f"{k[0]}|{k[1]}/{k[2]}": {"syncer": w.syncer_task is not None and not w.syncer_task.done(),
                                          "report": w.report.to_dict() if w.report else None}
                for k, w in self.workers.items()}


class _Worker:
    """The reconciler of one Cluster (its work queue has one key; ``wake`` is its enqueue)."""

    def __init__(self, ctrl: ClusterController, key: Key) -> None:
        self.ctrl = ctrl
        self.key = key
        self.lc, self.ns, self.name = key
        self.obj: dict[str, Any] | None = None
        self.uid: str | None = None
        self.fingerprint: str | None = None
        self.wake = asyncio.Event()
        self.task: asyncio.Task | None = None
        self._reset_state()

    def _reset_state(self) -> None:
        self.kc_source: tuple[Any, Any] | None = None
        self.endpoint: ApiTarget | None = None
        self.endpoint_error: tuple[str, str] | None = None
        self.client: Client | None = None
        self.report: ClusterReport | None = None
        self.known: ClusterReport | None = None
        self.details_at = 0.0
        self.connected_once = False
        self.syncer: Any = None
        self.syncer_task: asyncio.Task | None = None
        self.syncer_fp: str | None = None
        self.syncer_failures = 0
        self.syncer_retry_at = 0.0
        self.syncer_error: tuple[str, str] | None = None
        self.profile_ok = False
        self.profile_verify_at = 0.0
        self.profile_conditions: list[Condition] = []
        self.secret_fp: str | None = None
        self.secret_verify_at = 0.0
        self.secret_conflict = ""
        self.cleanup_started = False
        #: the last healthy probe's conditions, and since when probes have failed without a break
        self.last_good: tuple[Cond, Cond] | None = None
        self.failing_since: float | None = None

    # -- queue ----------------------------------------------------------------------------------

    def set_object(self, obj: dict[str, Any] | None) -> None:
        if obj is None:
            self.obj = None
            self.wake.set()
            return
        if self.obj is not None and _rv(obj) and _rv(obj) < _rv(self.obj):
            return  # older than what a write of ours already returned
        self.obj = obj
        fp = _relevant(obj)
        if fp != self.fingerprint:
            self.fingerprint = fp
            self.wake.set()

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.wake.wait(), max(seconds, 0.0))

    async def run(self) -> None:
        backoff = 0.5
        try:
            while True:
                self.wake.clear()
                try:
                    done = await self.reconcile()
                    backoff = 0.5
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - logged; retried with backoff
                    log.warning("cluster %s: reconcile failed: %s", self.label, exc, exc_info=not isinstance(exc, ApiError))
                    await self._sleep(backoff)
                    backoff = min(backoff * 2, 30.0)
                    continue
                if done:
                    return
                delay = self.ctrl.probe_interval
                retry_in = self.syncer_retry_at - time.monotonic()
                if self.syncer_task is None and 0 < retry_in < delay:  # restart the Syncer on time
                    delay = retry_in
                if self.failing_since is not None and self.last_good is not None:
                    # report on time when the failure threshold ends
                    ends = self.failing_since + self.ctrl.failure_threshold
                    delay = min(delay, max(0.0, ends - time.monotonic()))
                await self._sleep(delay)
        finally:
            await self._stop_syncer(None)
            await self._close_client()
            if self.ctrl.workers.get(self.key) is self:
                del self.ctrl.workers[self.key]

    @property
    def label(self) -> str:
        return f"{self.lc}|{self.ns}/{self.name}"

    # -- reconcile ------------------------------------------------------------------------------

    async def reconcile(self) -> bool:
        """One pass; True when the worker is done (the Cluster is gone)."""
        obj = self.obj
        if obj is None:
            # Gone without our cleanup (its logical cluster was deleted, or the finalizer removed by hand).
            await self._stop_syncer("ClusterGone")
            self.ctrl.writer(self.lc).forget(self.ns, self.name)
            return True
        md = obj["metadata"]
        if md.get("uid") != self.uid:
            if self.uid is not None:  # deleted and created again under the same name
                await self._stop_syncer("ClusterReplaced")
                await self._close_client()
                self._reset_state()
            self.uid = md.get("uid")
        if md.get("deletionTimestamp"):
            if FINALIZER not in (md.get("finalizers") or []):
                await self._stop_syncer("ClusterDeleted")
                return True
            return await self.finalize(obj)
        if FINALIZER not in (md.get("finalizers") or []):
            obj = await self._patch_finalizers(obj, [*(md.get("finalizers") or []), FINALIZER])
            if obj is None:
                return False
        spec = obj.get("spec") or {}
        shadow = self.ctrl.shadowed_by(self)
        if shadow is not None:
            await self._stop_syncer("DuplicateName")
            msg = (f"Cluster {shadow[1]}/{shadow[2]} in the same logical cluster has the same name and is older; "
                   f"objects are assigned to clusters by name (label {LABEL_SYNC}), so names must be unique "
                   "in a logical cluster")
            dup: Cond = (False, "DuplicateName", msg)
            await self._write_status(obj, _Observed(dup, (None, "DuplicateName", msg), dup), dup)
            return False
        if (spec.get("syncerMode") or MODE_PUSH) == MODE_PULL:
            observed = await self._observe_pull(obj, spec)
        else:
            observed = await self._observe_push(obj, spec)
        published = await self._publish(obj, observed)
        await self._write_status(obj, observed, published)
        return False

    # -- push mode ------------------------------------------------------------------------------

    async def _load_endpoint(self, spec: Mapping[str, Any], required: bool) -> None:
        source = (spec.get("kubeconfig"), spec.get("context"))
        if source == self.kc_source:
            return
        self.kc_source = source
        self.endpoint = self.endpoint_error = None
        self.details_at = 0.0
        self.secret_verify_at = 0.0
        await self._close_client()
        if not spec.get("kubeconfig"):
            if required:
                self.endpoint_error = ("InvalidKubeConfig", "spec.kubeconfig is empty (required in Push mode)")
            return
        try:
            self.endpoint = parse_kubeconfig(spec["kubeconfig"], spec.get("context") or None)
        except KubeconfigError as exc:
            self.endpoint_error = ("InvalidKubeConfig", f"spec.kubeconfig: {exc}")
            return
        try:
            self.client = Client(self.endpoint, COMPONENT, timeout=self.ctrl.request_timeout, pool=32)
        except ClientBuildError as exc:
            self.endpoint_error = ("ErrorCreatingClient", f"cannot create a client for {self.endpoint.server}: {exc}")
            self.endpoint = None

    async def _probe(self) -> ClusterReport:
        assert self.client is not None
        details = time.monotonic() >= self.details_at
        report = await probe_cluster(self.client, details=details, previous=self.known)
        if report.connected:
            if report.details:
                self.details_at = time.monotonic() + self.ctrl.details_interval
            if not self.connected_once:
                self.connected_once = True
            self.known = report
        self.report = report
        return report

    async def _observe_push(self, obj: dict[str, Any], spec: Mapping[str, Any]) -> _Observed:
        await self._load_endpoint(spec, required=True)
        if self.endpoint_error is not None:
            await self._stop_syncer(self.endpoint_error[0])
            reason, msg = self.endpoint_error
            return _Observed((False, reason, msg), (None, reason, "the cluster cannot be probed: " + msg),
                             (False, reason, "no Syncer runs: " + msg))
        report = await self._probe()
        if report.connected or self.syncer_task is not None:
            await self._ensure_syncer(obj, spec)
        connected: Cond = (report.connected, report.reason, report.message)
        if self.endpoint is not None and self.endpoint.notes and report.connected:
            connected = (True, report.reason, report.message + " (kubeconfig: " + "; ".join(self.endpoint.notes) + ")")
        healthy: Cond = ((report.healthy if report.connected else None), report.health_reason, report.health_message)
        if not report.connected:
            healthy = (None, report.reason, "the cluster cannot be probed: " + report.message)
        connected, healthy = await self._within_failure_threshold(connected, healthy)
        synced, types = self._syncer_state(report)
        return _Observed(connected, healthy, synced, types)

    async def _within_failure_threshold(self, connected: Cond, healthy: Cond) -> tuple[Cond, Cond]:
        """A cluster that was healthy keeps its conditions until probes have failed for
        ``failure_threshold`` seconds without a break; the first failure is an Event."""
        if connected[0] and healthy[0] is True:
            self.last_good, self.failing_since = (connected, healthy), None
            return connected, healthy
        now = time.monotonic()
        if self.failing_since is None:
            self.failing_since = now
            if self.last_good is not None and self.ctrl.failure_threshold > 0:
                await self._event("Warning", "ProbeFailed",
                                  f"{(connected if not connected[0] else healthy)[2]}; reported after "
                                  f"{self.ctrl.failure_threshold:g}s of failures")
        if self.last_good is not None and now - self.failing_since < self.ctrl.failure_threshold:
            return self.last_good
        self.last_good = None
        return connected, healthy

    def _syncer_fp(self, spec: Mapping[str, Any]) -> str:
        assert self.endpoint is not None
        return hashlib.sha256(json.dumps([self.endpoint.to_kubeconfig(), self._resources(spec)],
                                         sort_keys=True).encode()).hexdigest()

    def _resources(self, spec: Mapping[str, Any]) -> list[str] | None:
        res = spec.get("resources") or self.ctrl.resources
        return list(res) if res else None

    async def _ensure_syncer(self, obj: Mapping[str, Any], spec: Mapping[str, Any]) -> None:
        fp = self._syncer_fp(spec)
        if self.syncer_task is not None and self.syncer_fp != fp:
            await self._stop_syncer("SpecChanged", "the kubeconfig or resources changed; restarting the Syncer")
        if self.syncer_task is not None and self.syncer_task.done():
            task, self.syncer_task = self.syncer_task, None
            exc = task.exception() if not task.cancelled() else None
            msg = f"the Syncer stopped: {type(exc).__name__}: {exc}" if exc else "the Syncer stopped"
            self._syncer_failed("SyncerFailed", msg)
            await self._event("Warning", "SyncerFailed", msg)
        if self.syncer_task is not None or time.monotonic() < self.syncer_retry_at:
            return
        try:
            from .syncer import Syncer
        except ImportError as exc:
            self.syncer_error = ("SyncerUnavailable", f"the Syncer cannot be loaded: {exc}")
            self.syncer_retry_at = time.monotonic() + self.ctrl.syncer_backoff[1]
            return
        try:
            # The Syncer acts as its own ServiceAccount in this logical cluster, never as us.
            token = await identities.provision_syncer_identity(
                self.ctrl.hub, self.lc, self.name, self.ns, identities.default_types_only(self._resources(spec)),
                "fleetplane-cluster-controller")
            hub = dataclasses.replace(self.ctrl.hub_endpoint.with_server(f"{self.ctrl.base}/clusters/{self.lc}"),
                                      token=token, client_cert_data=None, client_key_data=None)
        except (ApiError, RuntimeError) as exc:
            self._syncer_failed("ErrorStartingSyncer", f"the Syncer's identity cannot be provisioned: {exc}")
            return
        try:
            down = self.endpoint
            kwargs: dict[str, Any] = {}
            if self.ctrl.syncer_poll_interval is not None:
                kwargs["poll_interval"] = self.ctrl.syncer_poll_interval
            if self._resources(spec) is not None:
                kwargs["resources"] = self._resources(spec)
            self.syncer = Syncer(cluster_name=self.name, hub=hub, downstream=down, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported on the Cluster
            self._syncer_failed("ErrorStartingSyncer", f"the Syncer cannot be created: {exc}")
            return
        self.syncer_fp = fp
        self.syncer_error = None
        self.syncer_task = asyncio.get_running_loop().create_task(self.syncer.run(), name=f"syncer-{self.label}")
        what = ", ".join(self.syncer.resources)
        log.info("cluster %s: Syncer started (%s)", self.label, what)
        await self._event("Normal", "SyncerStarted", f"syncing {what} with {self.endpoint.server if self.endpoint else '?'}")

    def _syncer_failed(self, reason: str, message: str) -> None:
        self.syncer_failures += 1
        lo, hi = self.ctrl.syncer_backoff
        self.syncer_retry_at = time.monotonic() + min(hi, lo * 2 ** (self.syncer_failures - 1))
        self.syncer_error = (reason, message)
        log.warning("cluster %s: %s", self.label, message)

    async def _stop_syncer(self, reason: str | None, message: str = "") -> None:
        task, self.syncer_task = self.syncer_task, None
        self.syncer = None
        self.syncer_fp = None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        if reason is not None:
            log.info("cluster %s: Syncer stopped (%s)", self.label, reason)
            await self._event("Normal", "SyncerStopped", message or f"the Syncer was stopped ({reason})")

    def _syncer_state(self, report: ClusterReport) -> tuple[Cond, list[dict[str, str]] | None]:
        if self.syncer_task is None or self.syncer is None:
            if self.syncer_error is not None:
                reason, msg = self.syncer_error
                return (False, reason, msg), None
            return (False, report.reason if not report.connected else "SyncerStarting",
                    "the Syncer starts once the cluster answers" if not report.connected else "starting the Syncer"), None
        try:
            h = health_dict(self.syncer.health())
        except Exception as exc:  # noqa: BLE001
            return (False, "SyncerHealthUnknown", f"the Syncer's health cannot be read: {exc}"), None
        cond = synced_condition(h)
        if cond[0]:
            self.syncer_failures = 0
        return cond, type_entries(h)

    # -- pull mode ------------------------------------------------------------------------------

    async def _read_lease(self) -> dict[str, Any] | None:
        return await self.ctrl.hub.get(self.ctrl.lease_path(self.lc, self.ns, lease_name(self.name)))

    @staticmethod
    def _lease_age(lease: Mapping[str, Any]) -> tuple[float, float]:
        spec = lease.get("spec") or {}
        renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime")) or 0.0
        return time.time() - renewed, float(spec.get("leaseDurationSeconds") or 40)

    async def _observe_pull(self, obj: dict[str, Any], spec: Mapping[str, Any]) -> _Observed:
        await self._stop_syncer("ModeChanged", "spec.syncerMode is Pull: the Syncer runs next to the cluster")
        await self._load_endpoint(spec, required=False)  # only for the access provider
        lease = await self._read_lease()
        if lease is None:
            msg = (f"no syncer has reported yet: run `fleetplane syncer --cluster {self.name}` next to the cluster "
                   f"(`fleetplane syncer manifests --cluster {self.name}` renders what it needs)")
            wait: Cond = (None, "WaitingForSyncer", msg)
            return _Observed(wait, wait, (False, "WaitingForSyncer", msg))
        age, duration = self._lease_age(lease)
        ann = (lease.get("metadata") or {}).get("annotations") or {}
        holder = (lease.get("spec") or {}).get("holderIdentity") or "the syncer"
        if age > duration:
            msg = f"{holder} last reported {age:.0f}s ago (lease duration {duration:.0f}s)"
            self.report = None
            return _Observed((False, "SyncerHeartbeatLost", msg), (None, "SyncerHeartbeatLost", msg),
                             (False, "SyncerHeartbeatLost", msg))
        try:
            report = ClusterReport.from_dict(json.loads(ann.get(ANNOTATION_REPORT) or "{}"))
            health = json.loads(ann.get(ANNOTATION_SYNCER_HEALTH) or "{}")
        except (ValueError, TypeError) as exc:
            bad: Cond = (None, "InvalidSyncerReport", f"the Lease's report cannot be read: {exc}")
            return _Observed(bad, bad, (False, "InvalidSyncerReport", bad[2]))
        self.report = report
        if report.connected:
            if self.known is not None and not report.details:
                report.allocatable, report.nodes = self.known.allocatable, self.known.nodes
                report.cluster_id, report.properties = self.known.cluster_id, self.known.properties
            self.known = report
            self.connected_once = True
        connected: Cond = (report.connected, report.reason, f"{report.message} (reported by {holder})")
        healthy: Cond = ((report.healthy if report.connected else None), report.health_reason, report.health_message)
        synced, types = (synced_condition(health), type_entries(health)) if health else (
            (False, "SyncerStarting", "the syncer has not reported its health yet"), None)
        return _Observed(connected, healthy, synced, types)

    # -- inventory --------------------------------------------------------------------------------

    async def _ensure_profile(self, obj: dict[str, Any]) -> Cond | None:
        """Create or adopt the ClusterProfile; a Cond when it cannot be published."""
        hub, path = self.ctrl.hub, self.ctrl.profile_path(self.lc, self.ns, self.name)
        now = time.monotonic()
        if self.profile_ok and now < self.profile_verify_at:
            return None
        try:
            existing = await hub.get(path)
        except Unreachable:
            raise
        except ApiError as exc:
            return False, "ErrorPublishingProfile", f"reading ClusterProfile {self.ns}/{self.name}: {exc.message}"
        if existing is None:
            try:
                existing = await hub.create(self.ctrl.profile_path(self.lc, self.ns),
                                            inv.new_profile(obj, self.ctrl.manager_name))
            except Unreachable:
                raise
            except ApiError as exc:
                return False, "ErrorPublishingProfile", f"creating ClusterProfile {self.ns}/{self.name}: {exc.message}"
            self.profile_conditions = []
            self.ctrl.writer(self.lc).forget(self.ns, self.name)
            await self._event("Normal", "ClusterProfileCreated", f"ClusterProfile {self.ns}/{self.name} created")
        else:
            manager = ((existing.get("spec") or {}).get("clusterManager") or {}).get("name")
            if manager != self.ctrl.manager_name:
                self.profile_ok = False
                return False, "ProfileConflict", (f"ClusterProfile {self.ns}/{self.name} exists and is managed by "
                                                  f"{manager!r}, not {self.ctrl.manager_name!r}; it is left alone")
            if not self.profile_ok:
                self.profile_conditions = _condition_list(existing.get("status"))
                if any(c.type == ic.CONDITION_JOINED and c.is_true() for c in self.profile_conditions):
                    self.connected_once = True
        self.profile_ok = True
        self.profile_verify_at = now + self.ctrl.details_interval
        return None

    async def _ensure_secret(self, obj: dict[str, Any]) -> tuple[bool, str]:
        """Keep the credentials Secret; (access provider publishable, why not)."""
        token = self.endpoint.token if self.endpoint is not None else None
        want = hashlib.sha256(token.encode()).hexdigest() if token else "absent"
        if want != self.secret_fp or time.monotonic() >= self.secret_verify_at:
            self.secret_conflict = await self._sync_secret(obj, token)
            self.secret_fp = want
            self.secret_verify_at = time.monotonic() + self.ctrl.details_interval
        if self.secret_conflict:
            return False, self.secret_conflict
        if token is not None:
            return True, ""
        if self.endpoint is None:
            return False, (f"no access provider: {self.endpoint_error[1]}" if self.endpoint_error else "")
        return False, ("the kubeconfig has no bearer token: the "
                       f"{self.ctrl.access_provider_name} access provider (tokens only) is not published")

    async def _sync_secret(self, obj: dict[str, Any], token: str | None) -> str:
        """Create, update or delete our Secret; a message if a Secret of that name is not ours."""
        hub, path = self.ctrl.hub, self.ctrl.core_path(self.lc, self.ns, "secrets", self.name)
        current = await hub.get(path)
        if current is not None and not inv.is_ours(current):
            return (f"Secret {self.ns}/{self.name} exists and is not managed by fleetplane: the "
                    f"{self.ctrl.access_provider_name} access provider is not published")
        if token is None:
            if current is not None:
                with _refusals_ignored():
                    await hub.delete(path)
            return ""
        desired = inv.credentials_secret(obj, token)
        if current is None:
            await hub.create(self.ctrl.core_path(self.lc, self.ns, "secrets"), desired)
        elif (current.get("data") or {}) != desired["data"]:
            await hub.patch(path, {"data": desired["data"]})
        return ""

    async def _publish(self, obj: dict[str, Any], observed: _Observed) -> Cond:
        if not self.ctrl.cluster_profiles:
            return False, "ClusterProfilesDisabled", "the hub does not serve ClusterProfiles; none is kept"
        problem = await self._ensure_profile(obj)
        if problem is not None:
            return problem
        try:
            publishable, note = await self._ensure_secret(obj)
        except Unreachable:
            raise
        except ApiError as exc:
            publishable, note = False, f"the credentials Secret cannot be written: {exc.message}"
        providers = []
        if publishable and self.endpoint is not None:
            providers.append(inv.access_provider(self.endpoint, self.name, self.ctrl.access_provider_name))
        c_status, c_reason, c_msg = observed.connected
        h_status, h_reason, h_msg = observed.healthy
        if c_status and h_status:
            cph: Cond = (True, "Healthy", h_msg)
        elif c_status:
            cph = (False if h_status is False else None, h_reason, h_msg)
        else:
            cph = (False if c_status is False else None, c_reason, c_msg)
        if self.connected_once:
            joined: Cond = (True, "Joined", f"managed by {self.ctrl.manager_name} through Cluster {self.ns}/{self.name}")
        else:
            joined = (False, c_reason if not c_status else "Joining", c_msg)
        status = inv.profile_status(self.profile_conditions, cluster=obj, report=self.known, healthy=cph,
                                    joined=joined, providers=providers)
        writer = self.ctrl.writer(self.lc)
        writer.submit(self.ns, self.name, status)
        refused = writer.errors.get((self.ns, self.name))
        if refused is not None and refused.code != 404:  # e.g. 422 from admission; retried within the budget
            return False, "ProfileStatusRejected", f"the hub refused the status of ClusterProfile {self.ns}/{self.name}: {refused.cause}"
        msg = f"ClusterProfile {self.ns}/{self.name}"
        if providers:
            msg += f" with access provider {self.ctrl.access_provider_name} (Secret {self.ns}/{self.name})"
        if note:
            msg += "; " + note
        return True, "Published", msg

    # -- status -----------------------------------------------------------------------------------

    async def _write_status(self, obj: dict[str, Any], observed: _Observed, published: Cond) -> None:
        md = obj["metadata"]
        gen = md.get("generation")
        old = obj.get("status") or {}
        conds = _condition_list(old)
        before = {c.type: (c.status, c.reason) for c in conds}
        for type_, cond in ((CONNECTED, observed.connected), (HEALTHY, observed.healthy),
                            (SYNCED, observed.synced), (PROFILE_PUBLISHED, published)):
            inv.set_condition(conds, type_, *cond, generation=gen)
        failing = next((c for c in (observed.connected, observed.healthy, observed.synced) if not c[0]), None)
        if failing is None:
            inv.set_condition(conds, READY, True, "Ready", "connected, healthy and synced", gen)
        else:
            inv.set_condition(conds, READY, False, failing[1], failing[2], gen)
        order = {t: i for i, t in enumerate((CONNECTED, HEALTHY, SYNCED, PROFILE_PUBLISHED, READY))}
        conds.sort(key=lambda c: order.get(c.type or "", 99))
        status: dict[str, Any] = {"observedGeneration": gen, "conditions": [c.to_dict() for c in conds]}
        known = self.known
        if known is not None and known.version:
            status["version"] = known.version
        if observed.types is not None:
            status["types"] = observed.types
        elif old.get("types") and observed.synced[1] not in ("DuplicateName",):
            status["types"] = old["types"]  # keep what was last known while the Syncer is away
        if known is not None and known.allocatable:
            status["allocatable"] = known.allocatable
        if known is not None and known.nodes is not None:
            status["nodes"] = known.nodes
        if published[0]:
            status["clusterProfile"] = self.name
        if status != old:
            patch = {**{k: None for k in old if k not in status}, **status}
            try:
                updated = await self.ctrl.hub.patch(self.ctrl.cluster_path(self.lc, self.ns, self.name, "/status"),
                                                    {"status": patch})
            except ApiError as exc:
                if exc.status == 404:
                    return
                raise
            self.set_object(updated)
        await self._transition_events(before, conds)

    async def _transition_events(self, before: Mapping[str, tuple[Any, Any]], conds: Sequence[Condition]) -> None:
        for c in conds:
            if c.type not in (CONNECTED, HEALTHY, SYNCED):
                continue
            prev = before.get(c.type)
            if prev == (c.status, c.reason):
                continue
            was_true = prev is not None and prev[0] == "True"
            if c.status == "True":
                await self._event("Normal", c.type, c.message or c.type)
            elif c.type == CONNECTED and was_true:
                await self._event("Warning", "Disconnected", c.message or "")
            elif c.type == HEALTHY and c.status == "False":
                await self._event("Warning", "Unhealthy", c.message or "")
            elif c.status == "False" and c.reason not in TRANSIENT_REASONS:
                await self._event("Warning", c.reason or c.type or "", c.message or "")

    async def _event(self, type_: str, reason: str, message: str) -> None:
        """An Event on the Cluster, written before the reconcile goes on (best effort)."""
        if self.obj is not None:
            ref = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Cluster", "metadata": self.obj["metadata"]}
            await self.ctrl.recorder.record(ref, type_, reason, message)

    async def _patch_finalizers(self, obj: dict[str, Any], finalizers: list[str]) -> dict[str, Any] | None:
        """Set the finalizers, guarded by resourceVersion; None on a conflict (the watch brings the news)."""
        md = obj["metadata"]
        body = {"metadata": {"finalizers": finalizers, "resourceVersion": md.get("resourceVersion")}}
        try:
            updated = await self.ctrl.hub.patch(self.ctrl.cluster_path(self.lc, self.ns, self.name), body)
        except ApiError as exc:
            if exc.status == 409:
                self.wake.set()
                return None
            if exc.status == 404:
                return None
            raise
        self.set_object(updated)
        return updated

    async def _close_client(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            await client.close()

    # -- deletion ----------------------------------------------------------------------------------

    async def finalize(self, obj: dict[str, Any]) -> bool:
        spec = obj.get("spec") or {}
        mode = spec.get("syncerMode") or MODE_PUSH
        policy = spec.get("deletionPolicy") or "Orphan"
        if not self.cleanup_started:
            self.cleanup_started = True
            await self._event("Normal", "CleanupStarted",
                              f"the Cluster is being deleted: stopping the Syncer (deletionPolicy {policy})")
        await self._stop_syncer("ClusterDeleted", "the Cluster is being deleted")
        if mode == MODE_PULL:
            done, msg = await self._pull_stopped(obj, policy)
        elif policy == POLICY_DELETE:
            done, msg = await self._delete_downstream(obj)
        else:
            done, msg = True, "the synced objects are left in the cluster (deletionPolicy Orphan)"
        if not done:
            await self._write_cleanup_status(obj, msg)
            return False
        hub = self.ctrl.hub
        released = await release_hub_objects(hub, self.lc, self.name, (obj.get("status") or {}).get("types") or [])
        if released:
            msg += f"; {released} hub objects released from the Syncer's finalizer"
        with _refusals_ignored():
            prof = await hub.get(self.ctrl.profile_path(self.lc, self.ns, self.name))
            if (((prof or {}).get("spec") or {}).get("clusterManager") or {}).get("name") == self.ctrl.manager_name:
                await hub.delete(self.ctrl.profile_path(self.lc, self.ns, self.name))
        with _refusals_ignored():
            secret = await hub.get(self.ctrl.core_path(self.lc, self.ns, "secrets", self.name))
            if secret is not None and inv.is_ours(secret):
                await hub.delete(self.ctrl.core_path(self.lc, self.ns, "secrets", self.name))
        with _refusals_ignored():
            await hub.delete(self.ctrl.lease_path(self.lc, self.ns, lease_name(self.name)))
        with _refusals_ignored():  # the Syncer's ServiceAccount, bindings and token: its access ends here
            await identities.revoke_syncer_identity(hub, self.lc, self.name, self.ns)
        self.ctrl.writer(self.lc).forget(self.ns, self.name)
        await self._event("Normal", "CleanedUp", msg + "; ClusterProfile and credentials removed")
        md = obj["metadata"]
        remaining = [f for f in (md.get("finalizers") or []) if f != FINALIZER]
        updated = await self._patch_finalizers(obj, remaining)
        if updated is None and self.obj is not None and self.obj["metadata"].get("uid") == md.get("uid"):
            return False  # conflict: retried with the newer object
        log.info("cluster %s: cleaned up (%s)", self.label, msg)
        return True

    async def _write_cleanup_status(self, obj: dict[str, Any], msg: str) -> None:
        conds = _condition_list(obj.get("status"))
        inv.set_condition(conds, READY, False, "CleanupPending", msg, obj["metadata"].get("generation"))
        status = {**(obj.get("status") or {}), "conditions": [c.to_dict() for c in conds]}
        if status != obj.get("status"):
            with _refusals_ignored():
                updated = await self.ctrl.hub.patch(self.ctrl.cluster_path(self.lc, self.ns, self.name, "/status"),
                                                    {"status": {"conditions": status["conditions"]}})
                self.set_object(updated)
            await self._event("Warning", "CleanupPending", msg)

    async def _delete_downstream(self, obj: Mapping[str, Any]) -> tuple[bool, str]:
        spec = obj.get("spec") or {}
        await self._load_endpoint(spec, required=True)
        if self.client is None:
            reason = self.endpoint_error[1] if self.endpoint_error else "no client"
            return False, (f"cannot delete the synced objects ({reason}); set spec.deletionPolicy to Orphan to "
                           "delete the Cluster without them")
        try:
            deleted = await delete_synced_objects(self.client, self.name, self.lc, (obj.get("status") or {}).get("types") or [])
        except ApiError as exc:
            return False, (f"cannot delete the synced objects: {exc}; retrying (set spec.deletionPolicy to Orphan "
                           "to delete the Cluster without them)")
        if deleted:
            await self._event("Normal", "DeletedSyncedObjects", f"deleted {deleted} synced objects from the cluster")
        return True, f"deleted the {deleted} objects synced into the cluster (deletionPolicy Delete)"

    async def _pull_stopped(self, obj: Mapping[str, Any], policy: str) -> tuple[bool, str]:
        lease = await self._read_lease()
        uid = obj["metadata"].get("uid")
        if lease is not None:
            ann = (lease.get("metadata") or {}).get("annotations") or {}
            if ann.get(ANNOTATION_STOPPED) == uid:
                what = "deleted the synced objects" if policy == POLICY_DELETE else "left the synced objects running"
                return True, f"the pull-mode syncer stopped and {what}"
            age, duration = self._lease_age(lease)
            if age <= duration:
                return False, "waiting for the pull-mode syncer to stop (it checks its Cluster every few seconds)"
        if policy == POLICY_DELETE:
            return False, ("no pull-mode syncer is running to delete the synced objects; start it, or set "
                           "spec.deletionPolicy to Orphan to delete the Cluster without them")
        return True, "no pull-mode syncer is running; the synced objects are left in the cluster"


# -- entry points -------------------------------------------------------------------------------------


async def run_in_hub(kubeconfig_path: Path, **options: Any) -> None:
    """Run the controller in the hub's process (``fleetplane start``, through the fleet plugin:
    :mod:`fleetplane.fleet.plugin`); ``options`` are :class:`ClusterController`'s."""
    try:
        import aiohttp  # noqa: F401 - the client the controller uses
    except ImportError:
        log.error("cluster controller not started: it needs aiohttp (pip install 'fleetplane[clients]')")
        return
    # With several hub replicas sharing one store exactly one runs this controller (two would run
    # two Syncers per cluster). run() is safe to cancel on losing the Lease: it stops every Syncer
    # it started, and each term starts from a fresh list (all state is in the hub).
    from .leader import run_as_leader

    await run_as_leader("fleetplane-cluster-controller", kubeconfig_path,
                        lambda: ClusterController(kubeconfig_path, **options).run())


def run_until_signalled(main: Callable[[], Awaitable[None]]) -> None:
    """``asyncio.run(main())``, cancelled (cleanly, so Syncers stop) on SIGTERM or SIGINT."""

    async def go() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, task.cancel)  # type: ignore[union-attr]
        with contextlib.suppress(asyncio.CancelledError):
            await main()

    asyncio.run(go())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fleetplane.fleet.cluster_controller",
                                description="Run the Cluster controller against a fleetplane hub.")
    p.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"), help="the hub's admin kubeconfig")
    p.add_argument("--context", help="kubeconfig context (default: current-context)")
    p.add_argument("--manager-name", default=MANAGER_NAME, help="the KEP-4322 cluster manager name")
    p.add_argument("--probe-interval", type=float, default=10.0, metavar="SECONDS",
                   help="how often each cluster is probed (default 10)")
    p.add_argument("--details-interval", type=float, default=60.0, metavar="SECONDS",
                   help="how often Nodes and ClusterProperties are read (default 60)")
    p.add_argument("--request-timeout", type=float, default=5.0, metavar="SECONDS")
    p.add_argument("--failure-threshold", type=float, default=30.0, metavar="SECONDS",
                   help="how long probes must fail before a healthy cluster is reported unreachable or unhealthy")
    p.add_argument("--resources", default=None,
                   help="resources a Cluster without spec.resources syncs (comma-separated; default: the Syncer's)")
    p.add_argument("--syncer-poll-interval", type=float, default=None, metavar="SECONDS",
                   help="the Syncer's type polling interval (default: the Syncer's)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default="json", choices=["json", "console"])
    return p


def main(argv: list[str] | None = None) -> int:
    from ..logs import configure_logging

    args = _parser().parse_args(argv)
    configure_logging(args.log_level, args.log_format)
    if not args.kubeconfig:
        print("cluster-controller: error: --kubeconfig (or $KUBECONFIG) is required", file=sys.stderr)
        return 2
    try:
        controller = ClusterController(
            args.kubeconfig, context=args.context, manager_name=args.manager_name, probe_interval=args.probe_interval,
            details_interval=args.details_interval, request_timeout=args.request_timeout,
            failure_threshold=args.failure_threshold,
            resources=[r.strip() for r in (args.resources or "").split(",") if r.strip()] or None,
            syncer_poll_interval=args.syncer_poll_interval)
    except KubeconfigError as exc:
        print(f"cluster-controller: error: hub kubeconfig: {exc}", file=sys.stderr)
        return 2
    run_until_signalled(controller.run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
