"""The hub's CRDs for every push-mode Syncer of the controller's process, from one informer.

A Syncer's type pass reads the hub's CRDs of its logical cluster (``fleet/syncer/hubcrds.py``). On
its own it lists them every pass; they are the same for every Syncer of a logical cluster, and a
list is large (the imported built-ins' schemas: 1.6 MB of JSON for the simulated cluster's eight
types), which, every 30 s for every attached cluster, was half of the controller's CPU at rest
with 60 clusters and superlinear in them. :class:`SharedHubCRDs` is one informer over every logical
cluster's CRDs, read from memory by every pass; the Syncers still write as themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ...kube.client import ApiError, Client
from ...kube.informer import Informer, logical_cluster_of
from .paths import crds_path

__all__ = ["SharedHubCRDs"]


def _by_logical_cluster(obj: dict[str, Any]) -> list[str]:
    return [logical_cluster_of(obj)]


def _name(obj: dict[str, Any]) -> tuple[str, str]:
    return logical_cluster_of(obj), (obj.get("metadata") or {}).get("name") or ""


class SharedHubCRDs:
    """One informer on ``/clusters/*`` CRDs (``hub``: a client of the hub's base URL whose
    identity may list and watch them there), started by the first Syncer that reads; ``of(lc)``
    is what a Syncer of logical cluster ``lc`` is given. A read waits (up to ``timeout``) for the
    first list, and fails as a hub error would while the informer cannot list or watch."""

    def __init__(self, hub: Client, *, timeout: float = 30.0) -> None:
        self.hub = hub
        self.timeout = timeout
        self.informer = Informer(hub, crds_path("*"), name="hub CRDs", key=_name,
                                 indexers={"lc": _by_logical_cluster})
        self._task: asyncio.Task[None] | None = None

    def of(self, lc: str) -> Callable[[], Awaitable[dict[str, dict[str, Any]]]]:
        """The ``hub_crds`` of a Syncer of logical cluster ``lc`` (fleet/syncer/hubcrds.HubCRDs)."""

        async def crds() -> dict[str, dict[str, Any]]:
            return await self.current(lc)

        return crds

    async def current(self, lc: str) -> dict[str, dict[str, Any]]:
        inf = self.informer
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(inf.run(), name="hub-crds")
        if not inf.synced.is_set():
            try:
                await asyncio.wait_for(inf.synced.wait(), self.timeout)
            except TimeoutError:
                raise self._error(inf.error or f"the hub's CRDs were not listed within {self.timeout:g}s") from None
        if inf.error is not None:
            raise self._error(inf.error)
        return {o["metadata"]["name"]: o for o in inf.by_index("lc", lc)}

    def _error(self, message: str) -> ApiError:
        err = ApiError(self.informer.error_status or 0, "HubCRDsUnavailable", f"listing the hub's CRDs: {message}")
        err.side = "hub"
        return err

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
