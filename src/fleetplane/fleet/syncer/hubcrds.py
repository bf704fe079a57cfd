"""Where a Syncer's type pass reads the hub's CRDs from (:data:`HubCRDs`).

By default each pass lists them (:func:`listed`), as a Syncer on its own must. The hub's CRDs of a
logical cluster are the same for every Syncer syncing to it, though, and a list is large (the
imported built-ins' schemas: 1.6 MB of JSON for the simulated cluster's eight), so the Cluster
controller, which runs many Syncers in one process, gives them all one informer's cache instead
(``fleet/cluster/hubcrds.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...kube.client import Client

__all__ = ["CRDS", "HubCRDs", "listed"]

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#: the hub's CRDs of the Syncer's logical cluster, by name; shared objects, never to be changed
HubCRDs = Callable[[], Awaitable[dict[str, dict[str, Any]]]]


def listed(hub: Client) -> HubCRDs:
    """One list per call, with ``hub`` (a client of the Syncer's logical cluster)."""

    async def crds() -> dict[str, dict[str, Any]]:
        items, _ = await hub.list_all(CRDS)
        return {o["metadata"]["name"]: o for o in items}

    return crds
