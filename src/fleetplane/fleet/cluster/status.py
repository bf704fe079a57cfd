"""Sub-reconciler **status**: the Cluster's conditions ``Connected``, ``Healthy``, ``Synced``,
``ProfilePublished`` and ``Ready`` (the first three True), each with a reason and message;
``version``, ``types``, ``allocatable``, ``nodes``, ``clusterProfile``, ``observedGeneration``.
Written through ``/status`` only when it changed; an Event on the Cluster for every change of
state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from ...inventory.model import Condition
from ...kube.client import ApiError
from . import profile as inv
from .crd import CONNECTED, HEALTHY, PROFILE_PUBLISHED, READY, SYNCED
from .state import ClusterState, Cond, Event, Next, Observed, Pass, condition_list

__all__ = ["Status", "TRANSIENT_REASONS"]

#: Condition reasons of a normal start, not worth a Warning event.
TRANSIENT_REASONS = frozenset({"Starting", "SyncerStarting", "WaitingForSyncer", "Joining"})
#: the order conditions are listed in
ORDER = {t: i for i, t in enumerate((CONNECTED, HEALTHY, SYNCED, PROFILE_PUBLISHED, READY))}

#: merge-patches the Cluster's status: (state, {"status": ...}) -> the updated Cluster
PatchStatus = Callable[[ClusterState, dict[str, Any]], Awaitable[dict[str, Any]]]


class Status:
    def __init__(self, *, patch_status: PatchStatus, event: Event) -> None:
        self.patch_status = patch_status
        self.event = event

    async def reconcile(self, p: Pass) -> Next:
        assert p.observed is not None and p.published is not None
        await self.write(p.state, p.obj, p.observed, p.published)
        return Next.REQUEUE

    async def write(self, state: ClusterState, obj: dict[str, Any], observed: Observed, published: Cond) -> None:
        md = obj["metadata"]
        gen = md.get("generation")
        old = obj.get("status") or {}
        conds = condition_list(old)
        before = {c.type or "": (c.status, c.reason) for c in conds}
        for type_, cond in ((CONNECTED, observed.connected), (HEALTHY, observed.healthy),
                            (SYNCED, observed.synced), (PROFILE_PUBLISHED, published)):
            inv.set_condition(conds, type_, *cond, generation=gen)
        failing = next((c for c in (observed.connected, observed.healthy, observed.synced) if not c[0]), None)
        if failing is None:
            inv.set_condition(conds, READY, True, "Ready", "connected, healthy and synced", gen)
        else:
            inv.set_condition(conds, READY, False, failing[1], failing[2], gen)
        conds.sort(key=lambda c: ORDER.get(c.type or "", 99))
        status: dict[str, Any] = {"observedGeneration": gen, "conditions": [c.to_dict() for c in conds]}
        known = state.conn.known
        if known is not None and known.version:
            status["version"] = known.version
        if observed.types is not None:
            status["types"] = observed.types
        elif old.get("types") and observed.synced[1] not in ("DuplicateName",):
            status["types"] = old["types"]  # keep what was last known while the Syncer is away
        if known is not None and known.allocatable:
            status["allocatable"] = known.allocatable
        if known is not None and known.nodes is not None:
            status["nodes"] = known.nodes
        if published[0]:
            status["clusterProfile"] = state.name
        if status != old:
            patch = {**{k: None for k in old if k not in status}, **status}
            try:
                updated = await self.patch_status(state, {"status": patch})
            except ApiError as exc:
                if exc.status == 404:
                    return
                raise
            state.set_object(updated)
        await self.transition_events(state, before, conds)

    async def transition_events(self, state: ClusterState, before: Mapping[str, tuple[Any, Any]],
                                conds: Sequence[Condition]) -> None:
        for c in conds:
            if c.type not in (CONNECTED, HEALTHY, SYNCED):
                continue
            prev = before.get(c.type)
            if prev == (c.status, c.reason):
                continue
            was_true = prev is not None and prev[0] == "True"
            if c.status == "True":
                await self.event(state, "Normal", c.type, c.message or c.type)
            elif c.type == CONNECTED and was_true:
                await self.event(state, "Warning", "Disconnected", c.message or "")
            elif c.type == HEALTHY and c.status == "False":
                await self.event(state, "Warning", "Unhealthy", c.message or "")
            elif c.status == "False" and c.reason not in TRANSIENT_REASONS:
                await self.event(state, "Warning", c.reason or c.type or "", c.message or "")
