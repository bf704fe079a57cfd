"""Leader election for fleetplane's controllers with coordination.k8s.io/v1 Leases, as
client-go's ``leaderelection`` does it, against the hub's API (any replica).

One Lease per controller (``kube-system/<name>`` in ``root`` by default). A candidate takes
the Lease when nobody holds it, when its holder released it, or when the holder has not
renewed it for ``leaseDurationSeconds`` as *this candidate observed it* (its own monotonic
clock from the moment it saw the record change, never the holder's timestamps, so clock skew
does not matter). Every write is guarded by the Lease's resourceVersion, so two candidates
racing for it cannot both win. The leader renews every ``retry_period``; if it cannot renew
for ``renew_deadline`` (shorter than the lease duration) it stops leading before anyone else
can start, so there is never more than one leader. A leader that stops cleanly releases the
Lease (holder cleared, duration 1 s) so that the next one takes over at once.

The Lease is read and written as JSON through :class:`fleetplane.kube.client.Client`, the
controllers' one client stack (a kubernetes_asyncio ``ApiClient`` is accepted and borrowed).

Use ``run``::

    elector = LeaderElector(client, LeaderElectionConfig("cluster-controller"))
    await elector.run(controller.run)     # returns when leadership ends

or the context manager, whose body is cancelled (and LeadershipLost raised) if leadership
is lost::

    async with elector.leading():
        await controller.run()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..apimachinery.metatime import micro_time
from .client import ApiError, Client
from .kubeconfig import ApiTarget

__all__ = ["IN_HUB_TIMING", "LeaderElectionConfig", "LeaderElector", "LeadershipLost", "default_identity",
           "run_as_leader"]

log = logging.getLogger(__name__)


def default_identity() -> str:
    """``<hostname>_<random>``, as kube components do: unique per process."""
    return f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"


class LeadershipLost(Exception):
    """Raised out of ``leading()`` when the Lease could not be renewed in time."""


@dataclass
class LeaderElectionConfig:
    #: the Lease's name: one per controller
    name: str
    namespace: str = "kube-system"
    identity: str = field(default_factory=default_identity)
    #: how long a Lease holds after its last renewal (kube: 15 s)
    lease_duration: float = 15.0
    #: how long the leader keeps trying to renew before it stops leading (kube: 10 s)
    renew_deadline: float = 10.0
    #: how often the leader renews and candidates retry (kube: 2 s)
    retry_period: float = 2.0
    #: give the Lease up when leadership ends cleanly, so the next candidate need not wait
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.lease_duration > self.renew_deadline > self.retry_period > 0:
            raise ValueError("want lease_duration > renew_deadline > retry_period > 0")


@dataclass
class _Observed:
    resource_version: str
    holder: str
    duration: float
    at: float  # loop time at which this record was first seen


class LeaderElector:
    """Elects one leader among the processes that use the same Lease name."""

    def __init__(self, client: Client | Any, config: LeaderElectionConfig) -> None:
        self.client = client if isinstance(client, Client) else Client.over(client)
        self.config = config
        self.is_leader = False
        self.observed: _Observed | None = None
        #: who holds the Lease, as last seen (None: nobody)
        self.leader: str | None = None

    @property
    def identity(self) -> str:
        return self.config.identity

    # -- one attempt ------------------------------------------------------------------------

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _path(self, name: str = "") -> str:
        path = f"/apis/coordination.k8s.io/v1/namespaces/{self.config.namespace}/leases"
        return f"{path}/{name}" if name else path

    def _observe(self, lease: dict[str, Any]) -> _Observed:
        spec = lease.get("spec") or {}
        rv = (lease.get("metadata") or {}).get("resourceVersion") or ""
        holder = spec.get("holderIdentity") or ""
        if self.observed is None or self.observed.resource_version != rv:
            self.observed = _Observed(rv, holder, float(spec.get("leaseDurationSeconds") or 0), self._now())
        self.leader = holder or None
        return self.observed

    def _body(self, acquire_time: str, transitions: int, holder: str, duration: float, rv: str | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": self.config.name, "namespace": self.config.namespace}
        if rv is not None:
            meta["resourceVersion"] = rv
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": {"holderIdentity": holder, "leaseDurationSeconds": max(1, int(round(duration))),
                         "acquireTime": acquire_time, "renewTime": micro_time(), "leaseTransitions": transitions}}

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the Lease; True if this candidate now holds it."""
        cfg = self.config
        lease = await self.client.get(self._path(cfg.name))
        if lease is None:
            try:
                created = await self.client.create(self._path(),
                                                   self._body(micro_time(), 0, cfg.identity, cfg.lease_duration))
            except ApiError as exc:
                if exc.status == 409:
                    return False
                raise
            self._observe(created)
            return True
        seen = self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        mine = holder == cfg.identity
        if holder and not mine and self._now() < seen.at + seen.duration:
            return False  # held by someone else, renewed within its duration as we saw it
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if mine else 1)
        acquired = spec["acquireTime"] if mine and spec.get("acquireTime") else micro_time()
        try:
            updated = await self.client.replace(
                self._path(cfg.name),
                self._body(acquired, transitions, cfg.identity, cfg.lease_duration, seen.resource_version))
        except ApiError as exc:
            if exc.status in (409, 404):
                return False  # someone else wrote it first
            raise
        if not mine:
            log.info("%s acquired lease %s/%s", cfg.identity, cfg.namespace, cfg.name)
        self._observe(updated)
        return True

    async def _attempt(self, timeout: float) -> bool:
        try:
            async with asyncio.timeout(timeout):
                return await self.try_acquire_or_renew()
        except ApiError as exc:
            # unreachable or 5xx: not this time; refused (401/403) is a misconfiguration that
            # loses the Lease every time: said out loud
            level = logging.WARNING if exc.status in (401, 403) else logging.DEBUG
            log.log(level, "lease %s: attempt failed: %s", self.config.name, exc)
            return False
        except Exception as exc:  # noqa: BLE001 - timeouts, connection errors: not this time
            log.debug("lease %s: attempt failed: %s", self.config.name, exc)
            return False

    # -- acquire, renew, release ------------------------------------------------------------

    async def acquire(self) -> None:
        """Return once this candidate holds the Lease."""
        cfg = self.config
        while True:
            # not bounded by retry_period (neither is client-go's): a hub answering slowly under
            # load must not keep a candidate from ever acquiring a free Lease
            if await self._attempt(cfg.renew_deadline):
                self.is_leader = True
                return
            wait = cfg.retry_period * (1 + 0.2 * random.random())
            obs = self.observed
            if obs is not None and obs.holder and obs.holder != cfg.identity:
                # wake up right when the holder's Lease runs out, not up to a period later
                wait = min(wait, max(obs.at + obs.duration - self._now(), 0) + 0.05)
            await asyncio.sleep(wait)

    async def _renew_until_lost(self) -> None:
        """Renew every retry_period; return when a renewal did not succeed in renew_deadline."""
        cfg = self.config
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(cfg.retry_period)
            while True:
                remaining = last + cfg.renew_deadline - loop.time()
                if remaining <= 0 and loop.time() - last < cfg.lease_duration \
                        and await self._attempt(last + cfg.lease_duration - loop.time()):
                    # the process itself was stalled past the deadline (controllers share the
                    # hub's event loop): a renewal still inside the lease is safe, since the
                    # write is guarded by the Lease's resourceVersion, so nobody took it meanwhile
                    last = loop.time()
                    break
                if remaining <= 0:
                    log.warning("%s lost lease %s/%s (not renewed for %.1fs)", cfg.identity, cfg.namespace,
                                cfg.name, cfg.renew_deadline)
                    self.is_leader = False
                    return
                # as client-go: an attempt may take what is left of the renew deadline (a hub
                # answering in 6 s under load still keeps the leader; 4 s attempts all timed out)
                if await self._attempt(remaining):
                    last = loop.time()
                    break
                obs = self.observed
                if obs is not None and obs.holder and obs.holder != cfg.identity:
                    log.warning("%s lost lease %s/%s to %s", cfg.identity, cfg.namespace, cfg.name, obs.holder)
                    self.is_leader = False
                    return
                await asyncio.sleep(min(cfg.retry_period / 4, max(remaining, 0)))

    async def release(self) -> None:
        """Give the Lease up if this candidate holds it (holder cleared, duration 1 s)."""
        cfg = self.config
        self.is_leader = False
        try:
            async with asyncio.timeout(cfg.retry_period):
                lease = await self.client.get(self._path(cfg.name))
                spec = (lease or {}).get("spec") or {}
                if lease is None or (spec.get("holderIdentity") or "") != cfg.identity:
                    return
                body = self._body(micro_time(), int(spec.get("leaseTransitions") or 0), "", 1,
                                  lease["metadata"].get("resourceVersion"))
                await self.client.replace(self._path(cfg.name), body)
                log.info("%s released lease %s/%s", cfg.identity, cfg.namespace, cfg.name)
        except Exception as exc:  # best effort: the Lease runs out by itself
            log.debug("lease %s: release failed: %s", cfg.name, exc)

    # -- the two ways to use it -------------------------------------------------------------

    async def run(self, on_started_leading: Callable[[], Awaitable[Any]],
                  on_stopped_leading: Callable[[], Any] | None = None) -> None:
        """Wait for leadership, run ``on_started_leading()`` while it lasts, and return when it
        ends: the work returned (the Lease is released), or the Lease was lost (the work is
        cancelled first), or this coroutine was cancelled (the work too; Lease released)."""
        await self.acquire()
        work: asyncio.Future[Any] = asyncio.ensure_future(on_started_leading())
        renew = asyncio.create_task(self._renew_until_lost(), name=f"lease:{self.config.name}")
        lost = False
        try:
            done, _ = await asyncio.wait({work, renew}, return_when=asyncio.FIRST_COMPLETED)
            lost = renew in done
            if work in done and not work.cancelled() and work.exception() is not None:
                raise work.exception()  # type: ignore[misc]
        finally:
            for t in (work, renew):
                t.cancel()
            for t in (work, renew):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            if not lost and self.config.release_on_cancel:
                await asyncio.shield(self.release())
            self.is_leader = False
            if on_stopped_leading is not None:
                result = on_stopped_leading()
                if asyncio.iscoroutine(result):
                    await result

    @contextlib.asynccontextmanager
    async def leading(self) -> AsyncIterator[LeaderElector]:
        """Hold leadership for the ``async with`` body; if the Lease is lost the body is
        cancelled and :class:`LeadershipLost` raised."""
        await self.acquire()
        task = asyncio.current_task()
        assert task is not None
        lost = asyncio.Event()

        async def renew() -> None:
            await self._renew_until_lost()
            lost.set()
            task.cancel()

        renewer = asyncio.create_task(renew(), name=f"lease:{self.config.name}")
        try:
            yield self
        except asyncio.CancelledError:
            if lost.is_set() and task.uncancel() == 0:
                raise LeadershipLost(f"lost lease {self.config.namespace}/{self.config.name}") from None
            raise
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await renewer
            if not lost.is_set() and self.config.release_on_cancel:
                await asyncio.shield(self.release())
            self.is_leader = False


#: Lease timing for controllers running inside the hub's process: they share its event loop, so
#: a hub busy with a burst of requests delays their renewals too; losing the Lease restarts a
#: controller (a full relist, more load). Twice kube's timing; failover between hub replicas
#: takes up to 30 s instead of 15.
IN_HUB_TIMING: dict[str, Any] = {"lease_duration": 30.0, "renew_deadline": 20.0, "retry_period": 4.0}


async def run_as_leader(name: str, kubeconfig_path: str | Path, work: Callable[[], Awaitable[Any]]) -> None:
    """Run ``work()`` while this process holds the Lease ``name`` in the kubeconfig's logical
    cluster, forever: when leadership is lost, the work is cancelled and candidacy starts again.
    This is how ``fleetplane start`` runs its controllers, so several hub replicas run one each."""
    client = Client(ApiTarget.from_kubeconfig(Path(kubeconfig_path)), f"fleetplane-leader-election/{name}", pool=4)
    try:
        elector = LeaderElector(client, LeaderElectionConfig(name, **IN_HUB_TIMING))
        while True:
            await elector.run(work)
    finally:
        await client.close()
