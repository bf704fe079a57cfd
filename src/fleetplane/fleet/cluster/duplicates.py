"""Sub-reconciler **duplicates**: objects are assigned to clusters by name alone (label
``kcp.dev/cluster: <name>``), so of two Clusters with one name in one logical cluster only the
older (or, as old, the one in the earlier namespace) is connected; the other is reported
``DuplicateName`` and has no Syncer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from .crd import LABEL_SYNC
from .state import ClusterState, Cond, Key, Next, Observed, Pass

__all__ = ["Duplicates", "shadowing"]


def _rank(state: ClusterState) -> tuple[str, str]:
    return ((state.obj or {}).get("metadata", {}).get("creationTimestamp") or "", state.key[1])


def shadowing(state: ClusterState, others: Callable[[], list[ClusterState]]) -> Key | None:
    """Another Cluster of the same name in the same logical cluster that takes precedence."""
    mine = _rank(state)
    for other in others():
        if other.key != state.key and other.key[0] == state.key[0] and other.key[2] == state.key[2] \
                and other.obj is not None and _rank(other) < mine:
            return other.key
    return None


class Duplicates:
    """``clusters()`` lists the states of every Cluster known; ``stop_syncer`` and ``write_status``
    (:meth:`.status.Status.write`) are what a duplicate gets."""

    def __init__(self, *, clusters: Callable[[], list[ClusterState]],
                 stop_syncer: Callable[[ClusterState, str], Awaitable[None]],
                 write_status: Callable[[ClusterState, dict, Observed, Cond], Awaitable[None]]) -> None:
        self.clusters = clusters
        self.stop_syncer = stop_syncer
        self.write_status = write_status

    async def reconcile(self, p: Pass) -> Next:
        shadow = shadowing(p.state, self.clusters)
        if shadow is None:
            return Next.CONTINUE
        await self.stop_syncer(p.state, "DuplicateName")
        msg = (f"Cluster {shadow[1]}/{shadow[2]} in the same logical cluster has the same name and is older; "
               f"objects are assigned to clusters by name (label {LABEL_SYNC}), so names must be unique "
               "in a logical cluster")
        dup: Cond = (False, "DuplicateName", msg)
        await self.write_status(p.state, p.obj, Observed(dup, (None, "DuplicateName", msg), dup), dup)
        return Next.REQUEUE
