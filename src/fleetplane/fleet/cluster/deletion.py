"""Sub-reconciler **deletion**: a Cluster being deleted stops its Syncer; ``deletionPolicy:
Delete`` deletes the objects synced into the cluster (those labelled ``kcp.dev/cluster: <name>``;
in pull mode the syncer does it and acknowledges on its Lease) and keeps the finalizer until that
has worked (set the policy to ``Orphan`` to give up on an unreachable cluster); ``Orphan`` (the
default) leaves them running, unmanaged. Then the ClusterProfile, the Secret, the Lease and the
Syncer's identity are deleted and the finalizer removed. The objects on the hub (the desired
state, with their last synced status) stay in both cases (:mod:`.cleanup`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ...inventory.status import StatusWriter
from ...kube.client import ApiError, Client
from .. import identities
from . import profile as inv
from .cleanup import delete_synced_objects, release_hub_objects
from .connect import lease_age
from .crd import ANNOTATION_STOPPED, FINALIZER, MODE_PULL, MODE_PUSH, POLICY_DELETE, READY
from .finalizer import PatchFinalizers
from .options import ClusterControllerOptions
from .paths import core_path, lease_name, lease_path, profile_path
from .state import ClusterState, Event, Next, Pass, condition_list, refusals_ignored
from .status import PatchStatus

__all__ = ["Deletion"]

log = logging.getLogger("fleetplane.fleet.cluster")


class Deletion:
    """Everything a deletion needs is injected: the hub, ``writer(lc)``, ``event``,
    ``stop_syncer(state, reason, message)``, ``load_endpoint(state, spec, required)`` (the cluster's
    client, for deletionPolicy Delete), ``read_lease(state)``, ``patch_finalizers`` and
    ``patch_status``."""

    def __init__(self, options: ClusterControllerOptions, *, hub: Client, writer: Callable[[str], StatusWriter],
                 event: Event, stop_syncer: Callable[[ClusterState, str, str], Awaitable[None]],
                 load_endpoint: Callable[[ClusterState, Mapping[str, Any], bool], Awaitable[None]],
                 read_lease: Callable[[ClusterState], Awaitable[dict[str, Any] | None]],
                 patch_finalizers: PatchFinalizers, patch_status: PatchStatus) -> None:
        self.options = options
        self.hub = hub
        self.writer = writer
        self.event = event
        self.stop_syncer = stop_syncer
        self.load_endpoint = load_endpoint
        self.read_lease = read_lease
        self.patch_finalizers = patch_finalizers
        self.patch_status = patch_status

    async def reconcile(self, p: Pass) -> Next:
        md = p.obj["metadata"]
        if not md.get("deletionTimestamp"):
            return Next.CONTINUE
        if FINALIZER not in (md.get("finalizers") or []):
            await self.stop_syncer(p.state, "ClusterDeleted", "")
            return Next.DONE
        return Next.DONE if await self.finalize(p.state, p.obj) else Next.REQUEUE

    async def finalize(self, state: ClusterState, obj: dict[str, Any]) -> bool:
        """One step of the cleanup; True once it is complete (the finalizer removed)."""
        spec = obj.get("spec") or {}
        mode = spec.get("syncerMode") or MODE_PUSH
        policy = spec.get("deletionPolicy") or "Orphan"
        lc, ns, name = state.key
        if not state.cleanup_started:
            state.cleanup_started = True
            await self.event(state, "Normal", "CleanupStarted",
                             f"the Cluster is being deleted: stopping the Syncer (deletionPolicy {policy})")
        await self.stop_syncer(state, "ClusterDeleted", "the Cluster is being deleted")
        if mode == MODE_PULL:
            done, msg = await self.pull_stopped(state, obj, policy)
        elif policy == POLICY_DELETE:
            done, msg = await self.delete_downstream(state, obj)
        else:
            done, msg = True, "the synced objects are left in the cluster (deletionPolicy Orphan)"
        if not done:
            await self.write_cleanup_status(state, obj, msg)
            return False
        hub = self.hub
        released = await release_hub_objects(hub, lc, name, (obj.get("status") or {}).get("types") or [])
        if released:
            msg += f"; {released} hub objects released from the Syncer's finalizer"
        with refusals_ignored():
            prof = await hub.get(profile_path(lc, ns, name))
            if (((prof or {}).get("spec") or {}).get("clusterManager") or {}).get("name") == self.options.manager_name:
                await hub.delete(profile_path(lc, ns, name))
        with refusals_ignored():
            secret = await hub.get(core_path(lc, ns, "secrets", name))
            if secret is not None and inv.is_ours(secret):
                await hub.delete(core_path(lc, ns, "secrets", name))
        with refusals_ignored():
            await hub.delete(lease_path(lc, ns, lease_name(name)))
        with refusals_ignored():  # the Syncer's ServiceAccount, bindings and token: its access ends here
            await identities.revoke_syncer_identity(hub, lc, name, ns)
        self.writer(lc).forget(ns, name)
        await self.event(state, "Normal", "CleanedUp", msg + "; ClusterProfile and credentials removed")
        md = obj["metadata"]
        remaining = [f for f in (md.get("finalizers") or []) if f != FINALIZER]
        updated = await self.patch_finalizers(state, obj, remaining)
        if updated is None and state.obj is not None and state.obj["metadata"].get("uid") == md.get("uid"):
            return False  # conflict: retried with the newer object
        log.info("cluster %s: cleaned up (%s)", state.label, msg)
        return True

    async def write_cleanup_status(self, state: ClusterState, obj: dict[str, Any], msg: str) -> None:
        conds = condition_list(obj.get("status"))
        inv.set_condition(conds, READY, False, "CleanupPending", msg, obj["metadata"].get("generation"))
        status = {**(obj.get("status") or {}), "conditions": [c.to_dict() for c in conds]}
        if status != obj.get("status"):
            with refusals_ignored():
                updated = await self.patch_status(state, {"status": {"conditions": status["conditions"]}})
                state.set_object(updated)
            await self.event(state, "Warning", "CleanupPending", msg)

    async def delete_downstream(self, state: ClusterState, obj: Mapping[str, Any]) -> tuple[bool, str]:
        spec = obj.get("spec") or {}
        await self.load_endpoint(state, spec, True)
        conn = state.conn
        if conn.client is None:
            reason = conn.error[1] if conn.error else "no client"
            return False, (f"cannot delete the synced objects ({reason}); set spec.deletionPolicy to Orphan to "
                           "delete the Cluster without them")
        try:
            deleted = await delete_synced_objects(conn.client, state.name, state.lc,
                                                  (obj.get("status") or {}).get("types") or [])
        except ApiError as exc:
            return False, (f"cannot delete the synced objects: {exc}; retrying (set spec.deletionPolicy to Orphan "
                           "to delete the Cluster without them)")
        if deleted:
            await self.event(state, "Normal", "DeletedSyncedObjects", f"deleted {deleted} synced objects from the cluster")
        return True, f"deleted the {deleted} objects synced into the cluster (deletionPolicy Delete)"

    async def pull_stopped(self, state: ClusterState, obj: Mapping[str, Any], policy: str) -> tuple[bool, str]:
        lease = await self.read_lease(state)
        uid = obj["metadata"].get("uid")
        if lease is not None:
            ann = (lease.get("metadata") or {}).get("annotations") or {}
            if ann.get(ANNOTATION_STOPPED) == uid:
                what = "deleted the synced objects" if policy == POLICY_DELETE else "left the synced objects running"
                return True, f"the pull-mode syncer stopped and {what}"
            age, duration = lease_age(lease)
            if age <= duration:
                return False, "waiting for the pull-mode syncer to stop (it checks its Cluster every few seconds)"
        if policy == POLICY_DELETE:
            return False, ("no pull-mode syncer is running to delete the synced objects; start it, or set "
                           "spec.deletionPolicy to Orphan to delete the Cluster without them")
        return True, "no pull-mode syncer is running; the synced objects are left in the cluster"
