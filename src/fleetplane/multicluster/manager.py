"""The manager: per-cluster informers, one work queue keyed by (cluster, object), reconcile
handlers, leader election and metrics (multicluster-runtime's ``mcmanager`` + ``mcreconcile``).

- :meth:`Manager.watch` names what to watch in *every* engaged cluster (a path, optionally
  label-selected). When a cluster is engaged, one :class:`~fleetplane.kube.informer.Informer`
  per watch starts on the cluster's own client; their changes enqueue ``(cluster, key)``.
- One :class:`~fleetplane.kube.controller.Controller` drains the queue into
  ``reconcile(cluster, key)``: one object of one cluster is never reconciled twice at once,
  events coalesce, failures back off per key, and a slow or broken cluster only holds its own
  keys. Keys of a cluster that was disengaged meanwhile are dropped.
- ``on_engage`` hooks run once the cluster's informers are synced (a reconcile then reads a
  complete cache): the place to enqueue what must exist in every cluster.
- With ``leader_election`` only the holder of a Lease on the hub runs the provider and the
  workers; losing it disengages everything and starts the candidacy again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..access import Config
from ..kube.client import Client
from ..kube.controller import Controller, Result, stop_tasks
from ..kube.informer import Informer, NamespacedKey, namespaced_key
from ..kube.leaderelection import LeaderElectionConfig, LeaderElector
from . import metrics
from .cluster import Cluster
from .provider import ClusterProfileProvider, Ready, control_plane_healthy

__all__ = ["Cluster", "Manager", "Reconciler", "Request", "Watch"]

log = logging.getLogger(__name__)

#: a queue key: (cluster name, (namespace, name))
Request = tuple[str, NamespacedKey]
#: ``reconcile(cluster, key)``: a Result (None: done); raising retries the key with backoff
Reconciler = Callable[["Cluster", NamespacedKey], Awaitable["Result | None"]]
Hook = Callable[["Cluster"], Any]


@dataclass(frozen=True)
class Watch:
    """What to watch in every cluster: ``path`` (``/api/v1/namespaces/x/configmaps``), an optional
    label selector, and ``keys``: the keys an object change enqueues (default: its own)."""

    path: str
    label_selector: str | None = None
    keys: Callable[[dict[str, Any]], Iterable[NamespacedKey]] | None = None


class Manager:
    """See the module docstring. ``hub`` reads ClusterProfiles (``namespace`` / ``label_selector``
    narrow them, ``ready`` is the health gate); ``access`` turns them into credentials."""

    def __init__(self, hub: Client, access: Config, reconcile: Reconciler | None = None, *,
                 name: str = "multicluster", namespace: str | None = None, label_selector: str | None = None,
                 ready: Ready = control_plane_healthy, workers: int = 4,
                 leader_election: LeaderElectionConfig | None = None,
                 retry_base: float = 0.5, retry_cap: float = 60.0) -> None:
        self.name = name
        self.hub = hub
        self.reconciler = reconcile
        self.leader_election = leader_election
        self.watches: list[Watch] = []
        self.engage_hooks: list[Hook] = []
        self.disengage_hooks: list[Hook] = []
        self._clusters: dict[str, Cluster] = {}
        self.provider = ClusterProfileProvider(hub, access, self, name=name, namespace=namespace,
                                               label_selector=label_selector, ready=ready,
                                               retry_base=retry_base, retry_cap=retry_cap)
        self.controller: Controller[Request] = Controller(name, self._reconcile, workers=workers)
        metrics.ENGAGED.labels(name).set(0)

    # -- configuration (before run) ---------------------------------------------------------------

    def watch(self, path: str, *, label_selector: str | None = None,
              keys: Callable[[dict[str, Any]], Iterable[NamespacedKey]] | None = None) -> None:
        self.watches.append(Watch(path, label_selector, keys))

    def reconcile(self, fn: Reconciler) -> Reconciler:
        """Set the reconciler (usable as a decorator)."""
        self.reconciler = fn
        return fn

    def on_engage(self, fn: Hook) -> Hook:
        self.engage_hooks.append(fn)
        return fn

    def on_disengage(self, fn: Hook) -> Hook:
        self.disengage_hooks.append(fn)
        return fn

    # -- state --------------------------------------------------------------------------------

    @property
    def clusters(self) -> Mapping[str, Cluster]:
        return self._clusters

    def get(self, name: str) -> Cluster | None:
        return self._clusters.get(name)

    @property
    def failures(self) -> Mapping[str, str]:
        """Profiles that could not be engaged, with the last error (retried with backoff)."""
        return self.provider.failures

    def enqueue(self, cluster: str, key: NamespacedKey) -> None:
        self.controller.enqueue((cluster, key))

    # -- engaging (called by the provider) -------------------------------------------------------

    async def engage(self, cluster: Cluster) -> None:
        for w in self.watches:
            inf = Informer(cluster.client, w.path, self._handler(cluster.name, w), name=f"{cluster.name}:{w.path}",
                           label_selector=w.label_selector, missing_ok=True)
            cluster.informers[w.path] = inf
            cluster.tasks.append(asyncio.create_task(inf.run(), name=f"{self.name}:{cluster.name}:{w.path}"))
        self._clusters[cluster.name] = cluster
        cluster.tasks.append(asyncio.create_task(self._synced(cluster), name=f"{self.name}:{cluster.name}:synced"))
        metrics.ENGAGED.labels(self.name).set(len(self._clusters))
        metrics.ENGAGEMENTS.labels(self.name).inc()
        log.info("%s: engaged cluster %s (%s)", self.name, cluster.name, cluster.access.server)

    async def _synced(self, cluster: Cluster) -> None:
        await asyncio.gather(*(i.synced.wait() for i in cluster.informers.values()))
        cluster.synced_at = time.monotonic()
        cluster.synced.set()
        metrics.ENGAGE_LATENCY.labels(self.name).observe(cluster.synced_at - cluster.ready_at)
        for hook in self.engage_hooks:
            await _call(hook, cluster, "engage")

    async def disengage(self, name: str, reason: str) -> None:
        cluster = self._clusters.pop(name, None)
        if cluster is None:
            return
        metrics.ENGAGED.labels(self.name).set(len(self._clusters))
        metrics.DISENGAGEMENTS.labels(self.name, reason).inc()
        await stop_tasks(cluster.tasks)
        with contextlib.suppress(Exception):
            await cluster.client.close()
        if cluster.api is not None:
            with contextlib.suppress(Exception):
                await cluster.api.close()
        log.info("%s: disengaged cluster %s (%s)", self.name, name, reason)
        for hook in self.disengage_hooks:
            await _call(hook, cluster, "disengage")

    def _handler(self, cluster: str, w: Watch) -> Callable[[Any, dict[str, Any] | None, dict[str, Any] | None], None]:
        def changed(key: Any, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
            obj = new if new is not None else old
            if obj is None:
                return
            for k in (w.keys(obj) if w.keys is not None else (namespaced_key(obj),)):
                self.controller.enqueue((cluster, k))
        return changed

    # -- reconciling -------------------------------------------------------------------------------

    async def _reconcile(self, request: Request) -> Result | None:
        name, key = request
        cluster = self._clusters.get(name)
        if cluster is None or self.reconciler is None:
            return None  # disengaged meanwhile: its keys go with it
        if not cluster.synced.is_set():
            return Result(requeue_after=0.5)  # enqueued by hand before the cache was complete
        started = time.monotonic()
        try:
            outcome = await self.reconciler(cluster, key)
        except Exception:
            metrics.RECONCILES.labels(self.name, "error").inc()
            metrics.RECONCILE_ERRORS.labels(self.name).inc()
            raise
        finally:
            metrics.RECONCILE_LATENCY.labels(self.name).observe(time.monotonic() - started)
        requeue = isinstance(outcome, Result) and (outcome.requeue or outcome.requeue_after is not None)
        metrics.RECONCILES.labels(self.name, "requeue" if requeue else "success").inc()
        return outcome

    # -- running -------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run until cancelled: as the Lease holder when ``leader_election`` is set (standing
        again after a lost Lease), else at once."""
        if self.leader_election is None:
            await self._run()
            return
        elector = LeaderElector(self.hub, self.leader_election)
        while True:
            await elector.run(self._run)
            log.info("%s: leadership ended; standing again", self.name)

    async def _run(self) -> None:
        try:
            await self.controller.run(self.provider.run())
        finally:
            for name in list(self._clusters):
                await asyncio.shield(self.disengage(name, "Stopped"))


async def _call(hook: Hook, cluster: Cluster, what: str) -> None:
    try:
        result = hook(cluster)
        if asyncio.iscoroutine(result):
            await result
    except Exception:  # a hook's bug must not stop the others
        log.exception("%s hook %s failed for %s", what, getattr(hook, "__qualname__", hook), cluster.name)

