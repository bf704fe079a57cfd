"""Sub-reconcilers **connect** and **health**: what the cluster itself says.

Push mode: parse ``spec.kubeconfig`` (``InvalidKubeConfig``), build a client
(``ErrorCreatingClient``), probe ``/version``, ``/api``, ``/livez``, ``/readyz`` (``Unreachable``,
``TLSError``, ``Timeout``, ``Unauthorized``, ``Forbidden``, ``Unhealthy``) and, every
``details_interval``, Nodes and ClusterProperties (:mod:`.probe`); while the last probe found the
cluster connected and healthy, the probes between are ``/readyz`` alone. :class:`Health` then turns the
probe into ``Connected`` and ``Healthy``, holding a cluster that was healthy at its last good
state until probes have failed for ``failure_threshold`` seconds, and adds the Syncer's ``Synced``.

Pull mode: no Syncer here; a ``fleetplane syncer`` process next to the cluster renews the Lease
``syncer-<name>`` in the Cluster's namespace with its probe report and health as annotations;
:class:`Connect` reads the conditions from there, and a Lease not renewed within its duration is
``SyncerHeartbeatLost``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...apimachinery.metatime import parse_time
from ...kube.client import Client, ClientBuildError
from ...kube.kubeconfig import KubeconfigError, parse_kubeconfig
from .crd import ANNOTATION_REPORT, ANNOTATION_SYNCER_HEALTH
from .options import ClusterControllerOptions
from .paths import COMPONENT
from .probe import ClusterReport, probe_cluster
from .state import ClusterState, Cond, Event, Next, Observed, Pass
from .syncer import synced_condition, type_entries

__all__ = ["Connect", "Health", "lease_age"]

#: reads the pull-mode syncer's Lease of a Cluster (None: there is none)
ReadLease = Callable[[ClusterState], Awaitable["dict[str, Any] | None"]]
#: stops the Cluster's Syncer: (state, reason, message)
StopSyncer = Callable[[ClusterState, str, str], Awaitable[None]]
Probe = Callable[..., Awaitable[ClusterReport]]
MakeClient = Callable[..., Client]


def lease_age(lease: Mapping[str, Any]) -> tuple[float, float]:
    """(seconds since the Lease was renewed, its duration)."""
    spec = lease.get("spec") or {}
    renewed = parse_time(spec.get("renewTime")) or parse_time(spec.get("acquireTime")) or 0.0
    return time.time() - renewed, float(spec.get("leaseDurationSeconds") or 40)


class Connect:
    """Push mode: the endpoint and one probe (``state.conn``). Pull mode: the whole observation
    from the syncer's Lease (``p.observed``)."""

    def __init__(self, options: ClusterControllerOptions, *, read_lease: ReadLease, stop_syncer: StopSyncer,
                 probe: Probe = probe_cluster, make_client: MakeClient = Client) -> None:
        self.options = options
        self.read_lease = read_lease
        self.stop_syncer = stop_syncer
        self.probe = probe
        self.make_client = make_client

    async def reconcile(self, p: Pass) -> Next:
        if p.pull:
            await self.stop_syncer(p.state, "ModeChanged", "spec.syncerMode is Pull: the Syncer runs next to the cluster")
            await self.load_endpoint(p.state, p.spec, required=False)  # only for the access provider
            p.observed = await self.observe_pull(p.state)
            return Next.CONTINUE
        await self.load_endpoint(p.state, p.spec, required=True)
        if p.state.conn.error is None:
            await self._probe(p.state)
        return Next.CONTINUE

    async def load_endpoint(self, state: ClusterState, spec: Mapping[str, Any], required: bool) -> None:
        """The endpoint and client of ``spec.kubeconfig``, made again only when it changed."""
        conn = state.conn
        source = (spec.get("kubeconfig"), spec.get("context"))
        if source == conn.source:
            return
        conn.source = source
        conn.endpoint = conn.error = None
        conn.details_at = 0.0
        state.inventory.secret_verify_at = 0.0
        await conn.close_client()
        if not spec.get("kubeconfig"):
            if required:
                conn.error = ("InvalidKubeConfig", "spec.kubeconfig is empty (required in Push mode)")
            return
        try:
            conn.endpoint = parse_kubeconfig(spec["kubeconfig"], spec.get("context") or None)
        except KubeconfigError as exc:
            conn.error = ("InvalidKubeConfig", f"spec.kubeconfig: {exc}")
            return
        try:
            conn.client = self.make_client(conn.endpoint, COMPONENT, timeout=self.options.request_timeout, pool=32)
        except ClientBuildError as exc:
            conn.error = ("ErrorCreatingClient", f"cannot create a client for {conn.endpoint.server}: {exc}")
            conn.endpoint = None

    async def _probe(self, state: ClusterState) -> None:
        conn = state.conn
        assert conn.client is not None
        details = time.monotonic() >= conn.details_at
        last = conn.report
        quick = last is not None and last.connected and last.healthy is True
        report = await self.probe(conn.client, details=details, previous=conn.known, quick=quick)
        if report.connected:
            if report.details:
                conn.details_at = time.monotonic() + self.options.details_interval
            conn.connected_once = True
            conn.known = report
        conn.report = report

    async def observe_pull(self, state: ClusterState) -> Observed:
        conn = state.conn
        lease = await self.read_lease(state)
        if lease is None:
            msg = (f"no syncer has reported yet: run `fleetplane syncer --cluster {state.name}` next to the cluster "
                   f"(`fleetplane syncer manifests --cluster {state.name}` renders what it needs)")
            wait: Cond = (None, "WaitingForSyncer", msg)
            return Observed(wait, wait, (False, "WaitingForSyncer", msg))
        age, duration = lease_age(lease)
        ann = (lease.get("metadata") or {}).get("annotations") or {}
        holder = (lease.get("spec") or {}).get("holderIdentity") or "the syncer"
        if age > duration:
            msg = f"{holder} last reported {age:.0f}s ago (lease duration {duration:.0f}s)"
            conn.report = None
            return Observed((False, "SyncerHeartbeatLost", msg), (None, "SyncerHeartbeatLost", msg),
                            (False, "SyncerHeartbeatLost", msg))
        try:
            report = ClusterReport.from_dict(json.loads(ann.get(ANNOTATION_REPORT) or "{}"))
            health = json.loads(ann.get(ANNOTATION_SYNCER_HEALTH) or "{}")
        except (ValueError, TypeError) as exc:
            bad: Cond = (None, "InvalidSyncerReport", f"the Lease's report cannot be read: {exc}")
            return Observed(bad, bad, (False, "InvalidSyncerReport", bad[2]))
        conn.report = report
        if report.connected:
            if conn.known is not None and not report.details:
                report.allocatable, report.nodes = conn.known.allocatable, conn.known.nodes
                report.cluster_id, report.properties = conn.known.cluster_id, conn.known.properties
            conn.known = report
            conn.connected_once = True
        connected: Cond = (report.connected, report.reason, f"{report.message} (reported by {holder})")
        healthy: Cond = ((report.healthy if report.connected else None), report.health_reason, report.health_message)
        synced, types = (synced_condition(health), type_entries(health)) if health else (
            (False, "SyncerStarting", "the syncer has not reported its health yet"), None)
        return Observed(connected, healthy, synced, types)


class Health:
    """Push mode: ``Connected``, ``Healthy`` (within the failure threshold) and ``Synced``.
    ``synced`` reads the Syncer's state (:meth:`.syncer.SyncerStep.synced`)."""

    def __init__(self, options: ClusterControllerOptions, *, event: Event,
                 synced: Callable[[ClusterState, ClusterReport], tuple[Cond, list[dict[str, str]] | None]]) -> None:
        self.options = options
        self.event = event
        self.synced = synced

    async def reconcile(self, p: Pass) -> Next:
        if p.observed is not None:  # pull mode: observed from the Lease
            return Next.CONTINUE
        state, conn = p.state, p.state.conn
        if conn.error is not None:
            reason, msg = conn.error
            p.observed = Observed((False, reason, msg), (None, reason, "the cluster cannot be probed: " + msg),
                                  (False, reason, "no Syncer runs: " + msg))
            return Next.CONTINUE
        report = conn.report
        assert report is not None
        connected: Cond = (report.connected, report.reason, report.message)
        if conn.endpoint is not None and conn.endpoint.notes and report.connected:
            connected = (True, report.reason, report.message + " (kubeconfig: " + "; ".join(conn.endpoint.notes) + ")")
        healthy: Cond = ((report.healthy if report.connected else None), report.health_reason, report.health_message)
        if not report.connected:
            healthy = (None, report.reason, "the cluster cannot be probed: " + report.message)
        connected, healthy = await self.within_failure_threshold(state, connected, healthy)
        synced, types = self.synced(state, report)
        p.observed = Observed(connected, healthy, synced, types)
        return Next.CONTINUE

    async def within_failure_threshold(self, state: ClusterState, connected: Cond, healthy: Cond) -> tuple[Cond, Cond]:
        """A cluster that was healthy keeps its conditions until probes have failed for
        ``failure_threshold`` seconds without a break; the first failure is an Event."""
        conn, threshold = state.conn, self.options.failure_threshold
        if connected[0] and healthy[0] is True:
            conn.last_good, conn.failing_since = (connected, healthy), None
            return connected, healthy
        now = time.monotonic()
        if conn.failing_since is None:
            conn.failing_since = now
            if conn.last_good is not None and threshold > 0:
                await self.event(state, "Warning", "ProbeFailed",
                                 f"{(connected if not connected[0] else healthy)[2]}; reported after "
                                 f"{threshold:g}s of failures")
        if conn.last_good is not None and now - conn.failing_since < threshold:
            return conn.last_good
        conn.last_good = None
        return connected, healthy
