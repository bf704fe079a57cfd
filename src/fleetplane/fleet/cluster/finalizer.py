"""Sub-reconciler **finalizer**: ``cluster.example.dev/cleanup`` on every Cluster before anything
else happens, so that a deletion always passes through :mod:`.deletion`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ...kube.client import ApiError, Client
from .crd import FINALIZER
from .paths import cluster_path
from .state import ClusterState, Next, Pass

__all__ = ["EnsureFinalizer", "FinalizerPatcher", "PatchFinalizers"]

#: sets a Cluster's finalizers: (state, the Cluster, finalizers) -> the updated Cluster, None on a conflict
PatchFinalizers = Callable[[ClusterState, dict[str, Any], list[str]], Awaitable["dict[str, Any] | None"]]


class FinalizerPatcher:
    """Set the finalizers, guarded by resourceVersion; None on a conflict (the Cluster is looked
    at again at once, with the newer object the watch brings) or when it is gone."""

    def __init__(self, hub: Client) -> None:
        self.hub = hub

    async def __call__(self, state: ClusterState, obj: dict[str, Any], finalizers: list[str]) -> dict[str, Any] | None:
        md = obj["metadata"]
        body = {"metadata": {"finalizers": finalizers, "resourceVersion": md.get("resourceVersion")}}
        try:
            updated = await self.hub.patch(cluster_path(state.lc, state.ns, state.name), body)
        except ApiError as exc:
            if exc.status == 409:
                state.wake()
                return None
            if exc.status == 404:
                return None
            raise
        state.set_object(updated)
        return updated


class EnsureFinalizer:
    def __init__(self, *, patch_finalizers: PatchFinalizers) -> None:
        self.patch_finalizers = patch_finalizers

    async def reconcile(self, p: Pass) -> Next:
        finalizers = p.obj["metadata"].get("finalizers") or []
        if FINALIZER in finalizers:
            return Next.CONTINUE
        updated = await self.patch_finalizers(p.state, p.obj, [*finalizers, FINALIZER])
        if updated is None:
            return Next.REQUEUE
        p.obj = updated
        return Next.CONTINUE
