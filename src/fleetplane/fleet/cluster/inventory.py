"""Sub-reconciler **inventory** (KEP-4322, the documents in :mod:`.profile`): the Cluster's
ClusterProfile and its credentials Secret, in the Cluster's logical cluster and namespace; the
profile's status goes through a :class:`fleetplane.inventory.StatusWriter` (server-side apply,
the KEP's budget of one write per 30 s per profile with bursts of 10). Its outcome is the
``ProfilePublished`` condition."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from typing import Any

from ...inventory import constants as ic
from ...inventory.status import StatusWriter
from ...kube.client import ApiError, Client, Unreachable
from . import profile as inv
from .options import ClusterControllerOptions
from .paths import core_path, profile_path
from .state import ClusterState, Cond, Event, Next, Observed, Pass, condition_list, refusals_ignored

__all__ = ["Inventory"]


class Inventory:
    """Keep the ClusterProfile and Secret of each Cluster; ``writer(lc)`` is the status writer of
    a logical cluster."""

    def __init__(self, options: ClusterControllerOptions, *, hub: Client, writer: Callable[[str], StatusWriter],
                 event: Event) -> None:
        self.options = options
        self.hub = hub
        self.writer = writer
        self.event = event

    async def reconcile(self, p: Pass) -> Next:
        assert p.observed is not None
        p.published = await self.publish(p.state, p.obj, p.observed)
        return Next.CONTINUE

    async def ensure_profile(self, state: ClusterState, obj: dict[str, Any]) -> Cond | None:
        """Create or adopt the ClusterProfile; a Cond when it cannot be published."""
        hub, path, pub = self.hub, profile_path(state.lc, state.ns, state.name), state.inventory
        manager_name = self.options.manager_name
        now = time.monotonic()
        if pub.profile_ok and now < pub.profile_verify_at:
            return None
        try:
            existing = await hub.get(path)
        except Unreachable:
            raise
        except ApiError as exc:
            return False, "ErrorPublishingProfile", f"reading ClusterProfile {state.ns}/{state.name}: {exc.message}"
        if existing is None:
            try:
                existing = await hub.create(profile_path(state.lc, state.ns), inv.new_profile(obj, manager_name))
            except Unreachable:
                raise
            except ApiError as exc:
                return False, "ErrorPublishingProfile", f"creating ClusterProfile {state.ns}/{state.name}: {exc.message}"
            pub.profile_conditions = []
            self.writer(state.lc).forget(state.ns, state.name)
            await self.event(state, "Normal", "ClusterProfileCreated", f"ClusterProfile {state.ns}/{state.name} created")
        else:
            manager = ((existing.get("spec") or {}).get("clusterManager") or {}).get("name")
            if manager != manager_name:
                pub.profile_ok = False
                return False, "ProfileConflict", (f"ClusterProfile {state.ns}/{state.name} exists and is managed by "
                                                  f"{manager!r}, not {manager_name!r}; it is left alone")
            if not pub.profile_ok:
                pub.profile_conditions = condition_list(existing.get("status"))
                if any(c.type == ic.CONDITION_JOINED and c.is_true() for c in pub.profile_conditions):
                    state.conn.connected_once = True
        pub.profile_ok = True
        pub.profile_verify_at = now + self.options.details_interval
        return None

    async def ensure_secret(self, state: ClusterState, obj: dict[str, Any]) -> tuple[bool, str]:
        """Keep the credentials Secret; (access provider publishable, why not)."""
        conn, pub = state.conn, state.inventory
        token = conn.endpoint.token if conn.endpoint is not None else None
        want = hashlib.sha256(token.encode()).hexdigest() if token else "absent"
        if want != pub.secret_fingerprint or time.monotonic() >= pub.secret_verify_at:
            pub.secret_conflict = await self.sync_secret(state, obj, token)
            pub.secret_fingerprint = want
            pub.secret_verify_at = time.monotonic() + self.options.details_interval
        if pub.secret_conflict:
            return False, pub.secret_conflict
        if token is not None:
            return True, ""
        if conn.endpoint is None:
            return False, (f"no access provider: {conn.error[1]}" if conn.error else "")
        return False, ("the kubeconfig has no bearer token: the "
                       f"{self.options.access_provider_name} access provider (tokens only) is not published")

    async def sync_secret(self, state: ClusterState, obj: dict[str, Any], token: str | None) -> str:
        """Create, update or delete our Secret; a message if a Secret of that name is not ours."""
        hub, path = self.hub, core_path(state.lc, state.ns, "secrets", state.name)
        current = await hub.get(path)
        if current is not None and not inv.is_ours(current):
            return (f"Secret {state.ns}/{state.name} exists and is not managed by fleetplane: the "
                    f"{self.options.access_provider_name} access provider is not published")
        if token is None:
            if current is not None:
                with refusals_ignored():
                    await hub.delete(path)
            return ""
        desired = inv.credentials_secret(obj, token)
        if current is None:
            await hub.create(core_path(state.lc, state.ns, "secrets"), desired)
        elif (current.get("data") or {}) != desired["data"]:
            await hub.patch(path, {"data": desired["data"]})
        return ""

    async def publish(self, state: ClusterState, obj: dict[str, Any], observed: Observed) -> Cond:
        opts, conn = self.options, state.conn
        if not opts.cluster_profiles:
            return False, "ClusterProfilesDisabled", "the hub does not serve ClusterProfiles; none is kept"
        problem = await self.ensure_profile(state, obj)
        if problem is not None:
            return problem
        try:
            publishable, note = await self.ensure_secret(state, obj)
        except Unreachable:
            raise
        except ApiError as exc:
            publishable, note = False, f"the credentials Secret cannot be written: {exc.message}"
        providers = []
        if publishable and conn.endpoint is not None:
            providers.append(inv.access_provider(conn.endpoint, state.name, opts.access_provider_name))
        c_status, c_reason, c_msg = observed.connected
        h_status, h_reason, h_msg = observed.healthy
        if c_status and h_status:
            cph: Cond = (True, "Healthy", h_msg)
        elif c_status:
            cph = (False if h_status is False else None, h_reason, h_msg)
        else:
            cph = (False if c_status is False else None, c_reason, c_msg)
        if conn.connected_once:
            joined: tuple[bool, str, str] = (True, "Joined", f"managed by {opts.manager_name} through Cluster {state.ns}/{state.name}")
        else:
            joined = (False, c_reason if not c_status else "Joining", c_msg)
        status = inv.profile_status(state.inventory.profile_conditions, cluster=obj, report=conn.known, healthy=cph,
                                    joined=joined, providers=providers)
        writer = self.writer(state.lc)
        writer.submit(state.ns, state.name, status)
        refused = writer.errors.get((state.ns, state.name))
        if refused is not None and refused.code != 404:  # e.g. 422 from admission; retried within the budget
            return False, "ProfileStatusRejected", (f"the hub refused the status of ClusterProfile "
                                                    f"{state.ns}/{state.name}: {refused.cause}")
        msg = f"ClusterProfile {state.ns}/{state.name}"
        if providers:
            msg += f" with access provider {opts.access_provider_name} (Secret {state.ns}/{state.name})"
        if note:
            msg += "; " + note
        return True, "Published", msg
