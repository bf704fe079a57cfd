"""The fleet-wide CronJob controller's entry points: :func:`run` (against a hub, optionally under leader election) and
:func:`run_in_hub` (``fleetplane start``'s background task, through :mod:`fleetplane.fleet.plugin`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...kube.client import Client
from ...kube.kubeconfig import ApiTarget
from .controller import CronJobController
from .options import CronJobOptions

__all__ = ["LEASE_NAME", "run", "run_in_hub"]

log = logging.getLogger("fleetplane.fleet.cronjobs")

#: the Lease (kube-system, in the kubeconfig's logical cluster) the CronJob controller's replicas elect a leader with
LEASE_NAME = "fleetplane-cronjob-controller"


async def run(kubeconfig: str | Path | dict, *, context: str | None = None, leader_elect: bool = False,
              options: CronJobOptions | None = None, on_started: Callable[[CronJobController], Any] | None = None) -> None:
    """Run the CronJob controller against the hub until cancelled. With ``leader_elect`` (a kubeconfig path),
    only while this process holds the Lease ``fleetplane-cronjob-controller`` in the kubeconfig's logical
    cluster (``fleetplane.kube.leaderelection.run_as_leader``, as the Cluster controller): with several
    hub replicas exactly one schedules; losing the Lease cancels the work, which is safe (all state
    is in the hub, the next leader starts from a fresh list)."""

    async def work() -> None:
        target = ApiTarget.from_kubeconfig(kubeconfig, context)
        hub = Client(target.with_server(target.base), "fleetplane-cronjob-controller")  # paths carry /clusters/<lc>
        try:
            controller = CronJobController(hub, options)
            if on_started is not None:
                on_started(controller)
            await controller.run()
        finally:
            await hub.close()

    if not leader_elect:
        await work()
        return
    if isinstance(kubeconfig, dict) or context is not None:
        raise ValueError("leader election needs a kubeconfig file whose current context is the Lease's cluster")
    from ...kube.leaderelection import run_as_leader

    await run_as_leader(LEASE_NAME, kubeconfig, work)


async def run_in_hub(kubeconfig_path: Path, options: CronJobOptions | None = None) -> None:
    """The ``fleetplane start`` background task (:mod:`fleetplane.fleet.plugin`): the CronJob controller in
    the hub's process, under leader election (one among several hub replicas)."""
    try:
        await run(kubeconfig_path, leader_elect=True, options=options)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("CronJob controller stopped")
        raise
