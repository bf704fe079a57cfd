"""The cluster provider: one engaged cluster for each ClusterProfile that passes the health gate.

multicluster-runtime's cluster-inventory-api provider, in fleetplane's pieces: an
:class:`~fleetplane.kube.informer.Informer` on the hub's ClusterProfiles feeds a
:class:`~fleetplane.kube.controller.Controller` keyed by profile; its reconcile decides, from the
profile alone, what the cluster should be:

- gone, or failing ``ready`` (``ControlPlaneHealthy=True`` by default): disengaged;
- ready: its access configuration is built with :class:`fleetplane.access.Config` (the exec plugin
  runs when a client is made); an unchanged :class:`~fleetplane.access.AccessConfig` (a hashable
  value) keeps the engaged cluster as it is, a changed one re-engages it with a new client;
- a profile whose access provider fails (no matching provider, the plugin failing, a bad profile)
  is reported (a log line, ``multicluster_engage_errors_total``, :attr:`failures`) and retried with
  its own exponential backoff, while every other profile goes on being handled.

Cluster names are ``<namespace>/<name>``, as upstream's. The provider never looks inside a member
cluster: reachability is the cluster manager's verdict, published in the profile's conditions.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from ..access import Config
from ..inventory import GROUP, PLURAL, VERSION, ClusterProfile, ProfileFormatError
from ..kube.client import Client
from ..kube.controller import Controller
from ..kube.informer import Informer, NamespacedKey
from . import metrics
from .cluster import Cluster

__all__ = ["ClusterProfileProvider", "Ready", "control_plane_healthy", "cluster_name", "profiles_path"]

log = logging.getLogger(__name__)

#: the health gate: is this ClusterProfile (a dict) worth engaging?
Ready = Callable[[Mapping[str, Any]], bool]


def control_plane_healthy(profile: Mapping[str, Any]) -> bool:
    """multicluster-runtime's default gate: the ``ControlPlaneHealthy`` condition is True."""
    try:
        return ClusterProfile.from_dict(profile).is_ready()
    except ProfileFormatError:
        return False


def cluster_name(namespace: str, name: str) -> str:
    """The engaged cluster's name: ``<namespace>/<name>`` (upstream's)."""
    return f"{namespace}/{name}" if namespace else name


def profiles_path(namespace: str | None = None) -> str:
    ns = f"/namespaces/{namespace}" if namespace else ""
    return f"/apis/{GROUP}/{VERSION}{ns}/{PLURAL}"


class Sink(Protocol):
    """Where engaged clusters go (the :class:`~.manager.Manager`)."""

    def get(self, name: str) -> Cluster | None: ...

    async def engage(self, cluster: Cluster) -> None: ...

    async def disengage(self, name: str, reason: str) -> None: ...


class ClusterProfileProvider:
    """See the module docstring. ``namespace`` limits it to one inventory (None: every
    namespace the hub client may list), ``label_selector`` to some profiles (a ClusterSet label,
    say). Access failures are retried from ``retry_base`` seconds doubling to ``retry_cap``."""

    def __init__(self, hub: Client, access: Config, sink: Sink, *, name: str = "multicluster",
                 namespace: str | None = None, label_selector: str | None = None,
                 ready: Ready = control_plane_healthy, workers: int = 4,
                 retry_base: float = 0.5, retry_cap: float = 60.0) -> None:
        self.name = name
        self.access = access
        self.sink = sink
        self.ready = ready
        #: cluster name -> why it could not be engaged (the last error), until it is
        self.failures: dict[str, str] = {}
        self._informer_args = (hub, profiles_path(namespace), label_selector)
        self.informer = self._new_informer()
        self.controller: Controller[NamespacedKey] = Controller(
            f"{name}/provider", self._reconcile, workers=workers, base=retry_base, cap=retry_cap, jitter=True,
            on_error=self._report)

    def _new_informer(self) -> Informer:
        hub, path, selector = self._informer_args
        return Informer(hub, path, self._changed, name=f"{self.name}/clusterprofiles", label_selector=selector)

    def _changed(self, key: Any, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        self.controller.enqueue(key)

    async def run(self) -> None:
        """Watch the profiles and keep the engaged clusters in line, until cancelled. Each run
        starts from an empty cache, so every profile is looked at again (after a lost Lease the
        manager has disengaged everything)."""
        self.informer = self._new_informer()
        await self.controller.run(self.informer.run())

    async def _reconcile(self, key: NamespacedKey) -> None:
        from ..access.clients.kubernetes_asyncio_client import new_kubernetes_asyncio_client

        name = cluster_name(*key)
        profile = self.informer.get(key)
        current = self.sink.get(name)
        if profile is None or not self.ready(profile):
            self.failures.pop(name, None)
            if current is not None:
                await self.sink.disengage(name, "Deleted" if profile is None else "NotReady")
            return
        seen = time.monotonic()
        access = self.access.build_access_config(profile)  # raises: reported, retried with backoff
        if current is not None and current.access == access:
            current.profile = profile  # same cluster, same credentials: nothing to restart
            self.failures.pop(name, None)
            return
        api = await new_kubernetes_asyncio_client(access)  # runs the plugin now: its failure is this profile's
        try:
            cluster = Cluster(name, profile, access, Client.over(api, name=name), api, ready_at=seen)
            if current is not None:
                await self.sink.disengage(name, "AccessChanged")
            await self.sink.engage(cluster)
        except BaseException:
            await api.close()
            raise
        self.failures.pop(name, None)

    def _report(self, controller: str, key: Any, err: Exception, delay: float) -> None:
        name = cluster_name(*key)
        self.failures[name] = str(err)
        metrics.ENGAGE_ERRORS.labels(self.name, type(err).__name__).inc()
        log.warning("%s: cannot engage cluster %s: %s; retrying in %.1fs", self.name, name, err, delay)
