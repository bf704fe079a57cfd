"""The Syncer: one physical cluster <-> one hub logical cluster (issue 4, items 5 and 6).

Type sync imports the cluster's types into the logical cluster as CRDs and pushes hub-defined
CRDs down (polled); object sync moves objects labelled ``kcp.dev/cluster: <cluster>`` down,
their status up, and deletions both ways (informers and a work queue). See docs/syncer.md.

The Cluster controller runs one per Cluster::

    syncer = Syncer(cluster_name="us-west1", hub=ApiTarget.from_kubeconfig(hub_kubeconfig),
                    downstream=ApiTarget.from_kubeconfig(cluster_kubeconfig))
    task = asyncio.create_task(syncer.run())
    ...
    syncer.health()   # -> SyncerHealth, for the Cluster's conditions
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from ...kube.client import ApiError, Client
from ...kube.events import EventRecorder
from ...kube.informer import Informer
from ...kube.kubeconfig import ApiTarget
from ...kube.workqueue import Backoff
from . import constants
from .discovery import ApiResource, Discoverer, Discovery, parse_resource
from .host import DEFAULT_RETAIN, RetainRule
from .hubcrds import HubCRDs, listed
from .objectsync import ObjectSync, SyncedType
from .typesync import EXCLUDED, TypeReport, TypeSync

__all__ = ["DEFAULT_RESOURCES", "DEFAULT_RETAIN", "ApiTarget", "RetainRule", "Syncer", "SyncerHealth", "constants"]

log = logging.getLogger(__name__)

#: synced when the Cluster does not say otherwise (see :data:`constants.DEFAULT_RESOURCES`)
DEFAULT_RESOURCES = constants.DEFAULT_RESOURCES


@dataclass
class SyncerHealth:
    """What the Cluster controller turns into the Cluster's conditions.

    ``reason`` is one of Starting, ClusterUnreachable, HubUnreachable, TypeImportFailed,
    SchemaConflict, ObjectsFailed, Synced; ``message`` says exactly what is wrong.
    ``types`` are the GVRs the cluster offers and the syncer syncs (``deployments.v1.apps``).
    """

    connected: bool
    types_synced: bool
    reason: str
    message: str
    types: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    objects_synced: int = 0
    objects_failed: int = 0
    last_error: str = ""
    #: beyond the contract: the hub side, per-type problems, failed objects, notes
    hub_connected: bool = True
    type_errors: dict[str, str] = field(default_factory=dict)
    failed_objects: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)


class Syncer:
    def __init__(self, *, cluster_name: str, hub: ApiTarget, downstream: ApiTarget,
                 resources: Sequence[str] = DEFAULT_RESOURCES, poll_interval: float = 30.0,
                 manager: str = "fleetplane-syncer", retain: Sequence[RetainRule] = DEFAULT_RETAIN,
                 workers: int = 16, hub_crds: HubCRDs | None = None) -> None:
        lc = hub.logical_cluster
        if not lc or lc == "*":
            raise ValueError(f"the hub URL must end with /clusters/<logical-cluster>, got {hub.server}")
        if not cluster_name:
            raise ValueError("cluster_name is required")
        self.cluster_name = cluster_name
        self.hub_target = hub
        self.down_target = downstream
        self.resources = (resources,) if isinstance(resources, str) else tuple(resources)
        self.poll_interval = poll_interval
        self.manager = manager
        self.retain = tuple(retain)
        self.workers = workers
        #: where each type pass reads the hub's CRDs (default: a list per pass; see .hubcrds)
        self._hub_crds = hub_crds
        self.hub_crds: HubCRDs
        self.logical_cluster = lc
        self.label_value = constants.label_value(lc)
        self._errors: dict[str, tuple[str, str]] = {}  # source -> (side, message)
        self._last_error = ""
        self._report: TypeReport | None = None
        self._started = False
        self.hub: Client
        self.down: Client
        self.events: EventRecorder
        self.objects: ObjectSync | None = None
        self.types: TypeSync

    # -- running --------------------------------------------------------------------------

    async def run(self) -> None:
        """Sync until cancelled; outages of either side are retried with backoff."""
        ua = f"{self.manager}/{self.cluster_name}"
        self.hub = Client(self.hub_target, ua, name="hub", pool=256)
        self.down = Client(self.down_target, ua, name="cluster", pool=256)
        self.hub_discovery, self.down_discovery = Discoverer(self.hub), Discoverer(self.down)
        self.hub_crds = self._hub_crds or listed(self.hub)
        self.events = EventRecorder(self.hub, self.manager, host=self.cluster_name)
        self.objects = ObjectSync(self, self.workers)
        self.types = TypeSync(self)
        self._started = True
        self.objects.start()
        tasks = [asyncio.create_task(self.events.run(), name="syncer-events"),
                 asyncio.create_task(self._pass_loop(), name="syncer-passes")]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.gather(*tasks, return_exceptions=True)
            await self.objects.stop()
            await self.hub.close()
            await self.down.close()

    def _period(self) -> float:
        """The poll interval plus up to a tenth (kube's ``wait.Jitter(period, 0.1)``), so the
        passes of many Syncers started together spread out over the period."""
        return self.poll_interval * (1 + 0.1 * random.random())

    async def _pass_loop(self) -> None:
        """Every period: both sides' discovery, read once for the object sync (first: it never
        waits for the type sync) and the type pass; about a second after a pass that changed
        something (another Syncer may be racing; a type just imported is synced at once)."""
        backoff = Backoff(0.5, max(self.poll_interval, 1.0))
        while True:
            delay = self._period()
            try:
                down_disc = await self.down_discovery.discover()
                self.mark_ok("discovery:cluster")
                hub_disc = await self.hub_discovery.discover()
                self.mark_ok("discovery:hub")
                assert self.objects is not None
                await self.objects.ensure_types(self._wanted(hub_disc, down_disc),
                                                down_disc.preferred("autoscaling", "horizontalpodautoscalers"))
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                self._fail(f"discovery:{err.side or 'cluster'}", err)
                await asyncio.sleep(backoff.next())
                continue
            except Exception as exc:
                log.exception("object sync setup failed")
                self._last_error = f"object sync: {type(exc).__name__}: {exc}"
                await asyncio.sleep(backoff.next())
                continue
            try:
                report = await self.types.poll(down_disc, hub_disc)
                self._report = report
                self.mark_ok("types:cluster", "types:hub")
                backoff.reset()
                if report.changed:
                    delay = min(self.poll_interval, 1.0)
            except asyncio.CancelledError:
                raise
            except ApiError as err:
                self._fail(f"types:{err.side or 'cluster'}", err)
                delay = backoff.next()
            except Exception as exc:
                log.exception("type sync failed")
                self._last_error = f"type sync: {type(exc).__name__}: {exc}"
                delay = backoff.next()
            await asyncio.sleep(delay)

    def _wanted(self, hub: Discovery, down: Discovery) -> list[SyncedType]:
        """The types to sync objects of: what the hub serves, whether or not the type import
        worked (the object sync never waits for the type sync)."""
        pairs: dict[str, SyncedType] = {}

        def pair(hub_versions: list[ApiResource]) -> None:
            h = hub_versions[0]
            dv = down.get(h.group, h.resource)
            common = [r for r in dv if any(x.version == r.version for x in hub_versions)]
            if common:
                d = common[0]
                h = next(x for x in hub_versions if x.version == d.version)
            else:
                d = h  # the cluster does not serve it (yet): objects report TypeNotServed
            if h.namespaced or (h.group, h.resource) == ("", "namespaces"):
                pairs.setdefault(h.group_resource, SyncedType(h, d))

        specs = list(self.resources)
        if "*" in specs:
            for (g, res), versions in hub.resources.items():
                r = versions[0] if versions else None
                if r and r.namespaced and r.watchable and r.group_resource not in EXCLUDED and down.get(g, res):
                    pair(versions)
        for spec in specs:
            if spec == "*":
                continue
            resource, group = parse_resource(spec)
            if group is None:
                found = sorted((k for k in hub.resources if k[1] == resource), key=lambda k: k[0] != "")
                versions = hub.get(*found[0]) if found else []
            else:
                versions = hub.get(group, resource)
            if versions and versions[0].watchable:
                pair(versions)
        ns = hub.get("", "namespaces")
        if ns:
            pair(ns)
        return list(pairs.values())

    # -- health ---------------------------------------------------------------------------

    def mark_ok(self, *sources: str) -> None:
        for s in sources:
            self._errors.pop(s, None)

    def _fail(self, source: str, err: ApiError) -> None:
        side = "hub" if err.side == "hub" else "cluster"
        self._errors[source] = (side, str(err))
        self._last_error = f"{side}: {err}"

    def note_error(self, err: ApiError) -> None:
        self._last_error = f"{'hub' if err.side == 'hub' else 'cluster'}: {err}"

    def informer_status(self, inf: Informer, error: str | None, *, hub: bool) -> None:
        source = f"informer:{inf.name}"
        status = inf.error_status
        if error is not None and (status in (None, 0) or status >= 500):
            self._errors[source] = ("hub" if hub else "cluster", error)
            self._last_error = f"{'hub' if hub else 'cluster'}: {error}"
        else:
            self._errors.pop(source, None)

    def health(self) -> SyncerHealth:
        report = self._report
        down_errs = sorted({m for s, m in self._errors.values() if s == "cluster"})
        hub_errs = sorted({m for s, m in self._errors.values() if s == "hub"})
        connected = self._started and not down_errs and (report is not None or "discovery:cluster" not in self._errors)
        synced, failed = self.objects.counts() if self.objects is not None else (0, 0)
        failed_list = self.objects.failed() if self.objects is not None else []
        types = sorted(r.gvr for r in report.offered) if report else []
        type_errors = dict(report.errors) if report else {}
        conflicts = [f"{k}: {v}" for k, v in sorted(report.conflicts.items())] if report else []
        types_synced = report is not None and not type_errors and not down_errs and not hub_errs
        if not self._started or (report is None and not down_errs and not hub_errs):
            reason, message = "Starting", "the syncer has not finished its first pass"
            connected = connected and report is not None
        elif down_errs:
            reason, message = "ClusterUnreachable", f"cannot reach cluster {self.cluster_name}: {down_errs[0]}"
        elif hub_errs:
            reason, message = "HubUnreachable", f"cannot reach the hub (logical cluster {self.logical_cluster}): {hub_errs[0]}"
        elif type_errors:
            reason = "TypeImportFailed"
            message = "; ".join(f"{k}: {v}" for k, v in sorted(type_errors.items()))
        elif conflicts:
            reason, message = "SchemaConflict", "; ".join(conflicts)
        elif failed:
            reason = "ObjectsFailed"
            message = f"{failed} object(s) failed to sync: " + "; ".join(failed_list[:3])
        else:
            reason, message = "Synced", f"{len(types)} type(s) and {synced} object(s) in sync"
        return SyncerHealth(connected=connected, types_synced=types_synced, reason=reason, message=message,
                            types=types, conflicts=conflicts, objects_synced=synced, objects_failed=failed,
                            last_error=self._last_error, hub_connected=not hub_errs, type_errors=type_errors,
                            failed_objects=failed_list, notes=dict(report.notes) if report else {})
