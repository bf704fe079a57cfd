"""An engaged cluster, what the provider hands the manager (its own module: both use it)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..access import AccessConfig
from ..kube.client import Client
from ..kube.informer import Informer, NamespacedKey

__all__ = ["Cluster"]


@dataclass(eq=False)
class Cluster:
    """An engaged cluster: its profile, the access value it was built from, a JSON
    :class:`~fleetplane.kube.client.Client` on it, and its informers (by watched path)."""

    name: str
    profile: dict[str, Any]
    access: AccessConfig
    client: Client
    #: the kubernetes_asyncio ApiClient under ``client`` (closed on disengage)
    api: Any = field(repr=False, default=None)
    #: when the provider saw the profile ready (monotonic); ``synced_at`` when the informers were synced
    ready_at: float = 0.0
    synced_at: float | None = None
    informers: dict[str, Informer] = field(default_factory=dict, repr=False)
    synced: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list, repr=False)

    def informer(self, path: str) -> Informer:
        return self.informers[path]

    def get(self, path: str, key: NamespacedKey) -> dict[str, Any] | None:
        """The cached object of a watched path (no request)."""
        return self.informers[path].get(key)
