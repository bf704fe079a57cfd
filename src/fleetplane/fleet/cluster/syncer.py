"""Sub-reconciler **syncer** (push mode): keep a :class:`fleetplane.fleet.syncer.Syncer` running
for the Cluster as a task of this process, and turn its health into the ``Synced`` condition.

Once the cluster has answered a Syncer starts, acting as its own ServiceAccount in the Cluster's
logical cluster (never as the controller; only the hub's CRDs, which every Syncer of the logical
cluster may list, it reads from the controller's one informer, :mod:`.hubcrds`); it keeps running
while the cluster is away (it resumes when the cluster returns) and is restarted, with backoff, if it stops; a change of kubeconfig,
context or resources restarts it. Its ``health()`` becomes ``Synced`` and ``status.types``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...kube.client import ApiError, Client
from ...kube.kubeconfig import ApiTarget
from .. import identities
from .hubcrds import SharedHubCRDs
from .options import ClusterControllerOptions
from .paths import COMPONENT
from .probe import ClusterReport
from .state import ClusterState, Cond, Event, Next, Pass

__all__ = ["SyncerStep", "health_dict", "synced_condition", "type_entries"]

log = logging.getLogger("fleetplane.fleet.cluster")

#: provisions the Syncer's identity: (logical cluster, cluster name, namespace, resources) -> its token
ProvisionIdentity = Callable[[str, str, str, Any], Awaitable[str]]
#: makes a Syncer: (cluster name, hub target, downstream target, keyword options) -> a Syncer
MakeSyncer = Callable[..., Any]


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


def health_dict(h: Any) -> dict[str, Any]:
    """A SyncerHealth (a dataclass) as a plain dict."""
    return dict(h) if isinstance(h, Mapping) else dataclasses.asdict(h)


def _load_syncer_class() -> MakeSyncer:
    from ..syncer import Syncer

    return Syncer


class SyncerStep:
    """Start, restart and stop the Cluster's Syncer. ``provision`` gives the Syncer its own
    identity; ``make_syncer`` builds it (default: :class:`fleetplane.fleet.syncer.Syncer`, loaded
    when first needed); ``hub_endpoint`` is the hub (the Syncer's target is its logical cluster)."""

    def __init__(self, options: ClusterControllerOptions, *, hub: Client, hub_endpoint: ApiTarget, event: Event,
                 provision: ProvisionIdentity | None = None,
                 make_syncer: Callable[[], MakeSyncer] = _load_syncer_class,
                 hub_crds: SharedHubCRDs | None = None) -> None:
        self.options = options
        self.hub = hub
        self.hub_endpoint = hub_endpoint
        self.provision = provision or self._provision
        self.event = event
        self.make_syncer = make_syncer
        #: what every Syncer's type pass reads the hub's CRDs from (None: each lists its own)
        self.hub_crds = hub_crds

    async def _provision(self, lc: str, name: str, ns: str, types: Any) -> str:
        return await identities.provision_syncer_identity(self.hub, lc, name, ns, types, COMPONENT)

    def resources(self, spec: Mapping[str, Any]) -> list[str] | None:
        res = spec.get("resources") or self.options.resources
        return list(res) if res else None

    async def reconcile(self, p: Pass) -> Next:
        state = p.state
        conn = state.conn
        if p.pull:
            return Next.CONTINUE  # stopped by Connect: the syncer runs next to the cluster
        if conn.error is not None:
            await self.stop(state, conn.error[0])
        elif (conn.report is not None and conn.report.connected) or state.run.task is not None:
            await self.ensure(state, p.spec)
        return Next.CONTINUE

    def _fingerprint(self, state: ClusterState, spec: Mapping[str, Any]) -> str:
        assert state.conn.endpoint is not None
        return hashlib.sha256(json.dumps([state.conn.endpoint.to_kubeconfig(), self.resources(spec)],
                                         sort_keys=True).encode()).hexdigest()

    async def ensure(self, state: ClusterState, spec: Mapping[str, Any]) -> None:
        run, endpoint = state.run, state.conn.endpoint
        fp = self._fingerprint(state, spec)
        if run.task is not None and run.fingerprint != fp:
            await self.stop(state, "SpecChanged", "the kubeconfig or resources changed; restarting the Syncer")
        if run.task is not None and run.task.done():
            task, run.task = run.task, None
            exc = task.exception() if not task.cancelled() else None
            msg = f"the Syncer stopped: {type(exc).__name__}: {exc}" if exc else "the Syncer stopped"
            self.failed(state, "SyncerFailed", msg)
            await self.event(state, "Warning", "SyncerFailed", msg)
        if run.task is not None or time.monotonic() < run.retry_at:
            return
        try:
            syncer_class = self.make_syncer()
        except ImportError as exc:
            run.error = ("SyncerUnavailable", f"the Syncer cannot be loaded: {exc}")
            run.retry_at = time.monotonic() + self.options.syncer_backoff[1]
            return
        try:
            # The Syncer acts as its own ServiceAccount in this logical cluster, never as us.
            token = await self.provision(state.lc, state.name, state.ns,
                                         identities.default_types_only(self.resources(spec)))
            hub = dataclasses.replace(self.hub_endpoint.for_logical_cluster(state.lc),
                                      token=token, client_cert_data=None, client_key_data=None)
        except (ApiError, RuntimeError) as exc:
            self.failed(state, "ErrorStartingSyncer", f"the Syncer's identity cannot be provisioned: {exc}")
            return
        try:
            kwargs: dict[str, Any] = {}
            if self.options.syncer_poll_interval is not None:
                kwargs["poll_interval"] = self.options.syncer_poll_interval
            if self.resources(spec) is not None:
                kwargs["resources"] = self.resources(spec)
            if self.hub_crds is not None:
                kwargs["hub_crds"] = self.hub_crds.of(state.lc)
            run.syncer = syncer_class(cluster_name=state.name, hub=hub, downstream=endpoint, **kwargs)
        except Exception as exc:  # noqa: BLE001 - reported on the Cluster
            self.failed(state, "ErrorStartingSyncer", f"the Syncer cannot be created: {exc}")
            return
        run.fingerprint = fp
        run.error = None
        run.task = asyncio.get_running_loop().create_task(run.syncer.run(), name=f"syncer-{state.label}")
        what = ", ".join(run.syncer.resources)
        log.info("cluster %s: Syncer started (%s)", state.label, what)
        await self.event(state, "Normal", "SyncerStarted", f"syncing {what} with {endpoint.server if endpoint else '?'}")

    def failed(self, state: ClusterState, reason: str, message: str) -> None:
        run = state.run
        run.failures += 1
        lo, hi = self.options.syncer_backoff
        run.retry_at = time.monotonic() + min(hi, lo * 2 ** (run.failures - 1))
        run.error = (reason, message)
        log.warning("cluster %s: %s", state.label, message)

    async def stop(self, state: ClusterState, reason: str | None, message: str = "") -> None:
        """Stop the Syncer if one runs; ``reason`` None: quietly (the controller is shutting down)."""
        run = state.run
        task, run.task = run.task, None
        run.syncer = None
        run.fingerprint = None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        if reason is not None:
            log.info("cluster %s: Syncer stopped (%s)", state.label, reason)
            await self.event(state, "Normal", "SyncerStopped", message or f"the Syncer was stopped ({reason})")

    @staticmethod
    def synced(state: ClusterState, report: ClusterReport) -> tuple[Cond, list[dict[str, str]] | None]:
        """The ``Synced`` condition and ``status.types`` from the running Syncer's health."""
        run = state.run
        if run.task is None or run.syncer is None:
            if run.error is not None:
                reason, msg = run.error
                return (False, reason, msg), None
            return (False, report.reason if not report.connected else "SyncerStarting",
                    "the Syncer starts once the cluster answers" if not report.connected else "starting the Syncer"), None
        try:
            h = health_dict(run.syncer.health())
        except Exception as exc:  # noqa: BLE001
            return (False, "SyncerHealthUnknown", f"the Syncer's health cannot be read: {exc}"), None
        cond = synced_condition(h)
        if cond[0]:
            run.failures = 0
        return cond, type_entries(h)
