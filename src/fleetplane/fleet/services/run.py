"""The Service controller's entry points: :func:`run` (against a hub, optionally under leader
election) and :func:`run_in_hub` (``fleetplane start``'s background task, through
:mod:`fleetplane.fleet.plugin`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...kube.client import Client
from ...kube.kubeconfig import ApiTarget
from .controller import ServiceController
from .options import ServiceControllerOptions

__all__ = ["LEASE_NAME", "run", "run_in_hub"]

log = logging.getLogger("fleetplane.fleet.services")

#: the Lease (kube-system, in the kubeconfig's logical cluster) the controller's replicas elect a leader with
LEASE_NAME = "fleetplane-service-controller"


async def run(kubeconfig: str | Path | dict, *, context: str | None = None, leader_elect: bool = False,
              options: ServiceControllerOptions | None = None,
              on_started: Callable[[ServiceController], Any] | None = None) -> None:
    """Run the Service controller against the hub until cancelled; with ``leader_elect`` (a
    kubeconfig path) only while this process holds the Lease ``fleetplane-service-controller``,
    as the splitter does."""

    async def work() -> None:
        target = ApiTarget.from_kubeconfig(kubeconfig, context)
        hub = Client(target.with_server(target.base), "fleetplane-service-controller")  # paths carry /clusters/<lc>
        try:
            controller = ServiceController(hub, options)
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


async def run_in_hub(kubeconfig_path: Path, options: ServiceControllerOptions | None = None) -> None:
    """The ``fleetplane start`` background task: the Service controller in the hub's process,
    under leader election."""
    try:
        await run(kubeconfig_path, leader_elect=True, options=options)
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("service controller stopped")
        raise
