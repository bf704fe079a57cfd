"""The Cluster controller: informer and queue, and the ordered sub-reconcilers each pass runs.

It lists and watches Clusters (``cluster.example.dev/v1alpha1``) in every logical cluster through
the hub's ``/clusters/*`` wildcard into the controller runtime (:mod:`fleetplane.kube.controller`):
a change that matters (not our own status writes) enqueues the Cluster's key, so events for one
Cluster coalesce and one Cluster's trouble never holds up another's (``workers`` Clusters are
reconciled at once; Syncers run as tasks of their own). Each pass runs, in order, until one says
stop (as kcp's workspace reconcilers):

1. :mod:`.deletion` — a Cluster being deleted is cleaned up, and nothing else happens;
2. :mod:`.finalizer` — ``cluster.example.dev/cleanup`` first, so a deletion always passes step 1;
3. :mod:`.duplicates` — a second Cluster of the same name in a logical cluster is refused;
4. :mod:`.connect` — the endpoint and a probe (push mode), or the pull-mode syncer's Lease;
5. :mod:`.syncer` — the push-mode Syncer started, restarted or stopped;
6. :mod:`.connect` (``Health``) — ``Connected``, ``Healthy`` within the failure threshold, ``Synced``;
7. :mod:`.inventory` — the ClusterProfile and credentials Secret (KEP-4322);
8. :mod:`.status` — the Cluster's status and Events.

A pass that ends is looked at again after ``probe_interval`` (sooner when a Syncer is due to be
restarted or the failure threshold runs out); a failed one with backoff. What the controller
remembers per Cluster is one :class:`~.state.ClusterState`.

With ``options.shards`` above 1 (the controller-manager's shards) the controller reconciles only
the Clusters whose logical cluster and name hash to its ``options.shard``; every shard lists all
Clusters, and a Cluster's namesakes (:mod:`.duplicates`) fall in the same shard.

``ClusterController.run()`` runs until cancelled; cancelling it stops every Syncer it runs (which
is what a leader-election wrapper does on losing the lease).
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from prometheus_client import Gauge

from ...inventory import constants as ic
from ...inventory.status import StatusWriter, WriteError
from ...kube.client import ApiError, Client
from ...kube.controller import Controller, Result
from ...kube.events import EventRecorder
from ...kube.informer import Informer, cluster_key
from ...kube.kubeconfig import ApiTarget, hub_base, parse_kubeconfig
from .connect import Connect, Health
from .crd import GROUP, PLURAL, VERSION
from .deletion import Deletion
from .duplicates import Duplicates
from .finalizer import EnsureFinalizer, FinalizerPatcher
from .hubcrds import SharedHubCRDs
from .inventory import Inventory
from .options import ClusterControllerOptions
from .paths import COMPONENT, FIELD_MANAGER, cluster_path, lease_name, lease_path, profile_path
from .state import ClusterState, Key, Next, Pass, SubReconciler
from .status import Status
from .syncer import SyncerStep

__all__ = ["ClusterController"]

log = logging.getLogger("fleetplane.fleet.cluster")

#: on the controller-manager's /metrics: how the shards divide the Clusters
CLUSTERS = Gauge("fleetplane_cluster_controller_clusters", "Clusters this Cluster controller reconciles "
                 "(its shard's part of them), by shard.", ["shard"])


def _log_failure(name: str, key: Any, err: Exception, delay: float) -> None:
    lc, ns, cluster = key
    log.warning("cluster %s: reconcile failed: %s", f"{lc}|{ns}/{cluster}", err, exc_info=not isinstance(err, ApiError))


class ClusterController:
    """Watch Clusters in every logical cluster of the hub and connect each (see the module docstring).

    ``hub_kubeconfig`` is the hub's admin kubeconfig (a path, or a dict); the logical cluster in
    its server URL does not matter: the controller talks to ``/clusters/*`` and ``/clusters/<lc>``.
    """

    def __init__(self, hub_kubeconfig: str | Path | Mapping[str, Any], options: ClusterControllerOptions | None = None,
                 *, context: str | None = None) -> None:
        self.options = opts = options or ClusterControllerOptions()
        source = Path(hub_kubeconfig) if isinstance(hub_kubeconfig, (str, Path)) else hub_kubeconfig
        self.hub_endpoint: ApiTarget = parse_kubeconfig(source, context, allow_files=True)
        self.base = hub_base(self.hub_endpoint.server)
        self.hub = Client(self.hub_endpoint.with_server(self.base), COMPONENT, timeout=opts.hub_request_timeout, pool=32)
        #: Events on Clusters, one per state change: written at once, never aggregated
        self.recorder = EventRecorder(self.hub, COMPONENT, instance=os.uname().nodename, window=0.0,
                                      per_logical_cluster=True)
        self.clusters = Informer(self.hub, f"/clusters/*/apis/{GROUP}/{VERSION}/{PLURAL}", self._on_cluster,
                                 name="clusters", key=cluster_key)
        self.synced = self.clusters.synced
        self.runtime: Controller[Key] = Controller("clusters", self.reconcile, workers=opts.workers, base=0.5,
                                                   cap=30.0, on_error=_log_failure)
        self.states: dict[Key, ClusterState] = {}
        self._writers: dict[str, StatusWriter] = {}
        self._closed = False
        self.hub_crds = SharedHubCRDs(self.hub)
        self.syncers = SyncerStep(opts, hub=self.hub, hub_endpoint=self.hub_endpoint, event=self.event,
                                  hub_crds=self.hub_crds)
        patch_finalizers = FinalizerPatcher(self.hub)
        connect = Connect(opts, read_lease=self.read_lease, stop_syncer=self.syncers.stop)
        self.status = Status(patch_status=self.patch_status, event=self.event)
        #: the sub-reconcilers of a pass, in order
        self.steps: list[SubReconciler] = [
            Deletion(opts, hub=self.hub, writer=self.writer, event=self.event, stop_syncer=self.syncers.stop,
                     load_endpoint=connect.load_endpoint, read_lease=self.read_lease,
                     patch_finalizers=patch_finalizers, patch_status=self.patch_status),
            EnsureFinalizer(patch_finalizers=patch_finalizers),
            Duplicates(clusters=lambda: list(self.states.values()), stop_syncer=self.syncers.stop,
                       write_status=self.status.write),
            connect,
            self.syncers,
            Health(opts, event=self.event, synced=self.syncers.synced),
            Inventory(opts, hub=self.hub, writer=self.writer, event=self.event),
            self.status,
        ]

    # -- what the sub-reconcilers are given ---------------------------------------------------

    async def event(self, state: ClusterState, type_: str, reason: str, message: str) -> None:
        """An Event on the Cluster, written before the reconcile goes on (best effort)."""
        if state.obj is not None:
            ref = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Cluster", "metadata": state.obj["metadata"]}
            await self.recorder.record(ref, type_, reason, message)

    async def patch_status(self, state: ClusterState, body: dict[str, Any]) -> dict[str, Any]:
        return await self.hub.patch(cluster_path(state.lc, state.ns, state.name, "/status"), body)

    async def read_lease(self, state: ClusterState) -> dict[str, Any] | None:
        return await self.hub.get(lease_path(state.lc, state.ns, lease_name(state.name)))

    def writer(self, lc: str) -> StatusWriter:
        w = self._writers.get(lc)
        if w is None:
            opts = self.options
            budget: dict[str, Any] = {k: v for k, v in (("rate", opts.status_rate), ("burst", opts.status_burst))
                                      if v is not None}
            w = self._writers[lc] = StatusWriter(
                write=partial(self._apply_profile_status, lc), field_manager=FIELD_MANAGER,
                on_error=partial(self._profile_write_failed, lc), **budget)
        return w

    async def _apply_profile_status(self, lc: str, ns: str, name: str, status: dict[str, Any]) -> None:
        body = {"apiVersion": ic.API_VERSION, "kind": ic.KIND,
                "metadata": {"name": name, "namespace": ns}, "status": status}
        await self.hub.apply(profile_path(lc, ns, name, "/status"), body, FIELD_MANAGER)

    def _profile_write_failed(self, lc: str, err: WriteError) -> None:
        log.warning("cluster %s|%s/%s: %s", lc, err.key[0], err.key[1], err)
        state = self.states.get((lc, err.key[0], err.key[1]))
        if state is not None:
            state.inventory.profile_ok = False  # re-created (or the conflict reported) on the next reconcile
            state.wake()

    # -- informer -> queue ----------------------------------------------------------------------

    def _on_cluster(self, key: Key, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if not self.options.owns(key[0], key[2]):
            return  # another shard's (the informer still lists every Cluster: it cannot select by hash)
        state = self.states.get(key)
        if new is None:
            if state is not None:
                state.set_object(None)
            for k, other in self.states.items():  # a namesake may be the one to connect now
                if k != key and k[0] == key[0] and k[2] == key[2]:
                    other.wake()
            return
        if state is None:
            state = self.states[key] = ClusterState(key, wake=partial(self.runtime.enqueue, key))
            self._count()
        state.set_object(new)

    def _count(self) -> None:
        CLUSTERS.labels(shard=str(self.options.shard)).set(len(self.states))

    # -- running --------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch Clusters until cancelled; on the way out every Syncer is stopped."""
        try:
            await self.runtime.run(self.clusters.run())
        finally:
            await self.close()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for state in list(self.states.values()):
            await self._release(state)
        for w in self._writers.values():
            await w.close()
        await self.hub_crds.close()
        await self.hub.close()

    async def _release(self, state: ClusterState) -> None:
        """Stop what runs for a Cluster and forget it."""
        await self.syncers.stop(state, None)
        await state.conn.close_client()
        if self.states.get(state.key) is state:
            del self.states[state.key]
            self._count()

    async def reconcile(self, key: Key) -> Result | None:
        """One pass over one Cluster (see the module docstring)."""
        state = self.states.get(key)
        if state is None:
            return None
        obj = state.obj
        if obj is None:
            # Gone without our cleanup (its logical cluster was deleted, or the finalizer removed by hand).
            await self.syncers.stop(state, "ClusterGone")
            self.writer(state.lc).forget(state.ns, state.name)
            await self._release(state)
            return None
        uid = obj["metadata"].get("uid")
        if uid != state.uid:
            if state.uid is not None:  # deleted and created again under the same name
                await self.syncers.stop(state, "ClusterReplaced")
                await state.conn.close_client()
                state.forget()
            state.uid = uid
        p = Pass(state, obj)
        for step in self.steps:
            outcome = await step.reconcile(p)
            if outcome is Next.DONE:
                await self._release(state)
                return None
            if outcome is Next.REQUEUE:
                break
        return Result(requeue_after=self._next_look(state))

    def _next_look(self, state: ClusterState) -> float:
        """The probe interval (plus up to a tenth, as kube's ``wait.Jitter(period, 0.1)``: the
        probes of clusters attached together spread out instead of all falling in the same
        moment every period), or sooner: a Syncer due to restart, a failure threshold running out."""
        delay = self.options.probe_interval * (1 + 0.1 * random.random())
        retry_in = state.run.retry_at - time.monotonic()
        if state.run.task is None and 0 < retry_in < delay:  # restart the Syncer on time
            delay = retry_in
        conn = state.conn
        if conn.failing_since is not None and conn.last_good is not None:
            ends = conn.failing_since + self.options.failure_threshold
            delay = min(delay, max(0.0, ends - time.monotonic()))
        return delay

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Per Cluster (``lc|ns/name``): whether a Syncer runs, and the last probe (for debugging)."""
        return {state.label: {"syncer": state.run.running,
                              "report": state.conn.report.to_dict() if state.conn.report else None}
                for state in self.states.values()}
